"""The two clocks of gpulab: CUDA events on a stream for device work, perf_counter for host
work. Both warm up first and return the timed samples in milliseconds."""

import time

from . import _core


def event_samples(run, stream, repeat, warmup, before=None):
    """Samples of run() timed with CUDA events on stream; before() runs untimed ahead of each
    repetition (an L2 flush, say)."""
    start, end = _core.Event(), _core.Event()
    samples = []
    for i in range(warmup + repeat):
        if before is not None:
            before()
        start.record(stream)
        run()
        end.record(stream)
        end.synchronize()
        if i >= warmup:
            samples.append(_core.elapsed_ms(start, end))
    return samples


def host_samples(run, repeat, warmup):
    samples = []
    for i in range(warmup + repeat):
        t0 = time.perf_counter()
        run()
        if i >= warmup:
            samples.append((time.perf_counter() - t0) * 1e3)
    return samples
