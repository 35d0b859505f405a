"""The two clocks of gpulab: CUDA events on a stream for device work, perf_counter for host
work. Both warm up first and return the timed samples in milliseconds.

Either runs a fixed number of repetitions, or, given a time budget, as many as fit in it (up to
`repeat`): bench() of a plain callable, whose duration nobody knows in advance, does the latter."""

import time

from . import _core

# The share of a time budget spent warming up when no warm-up count is given: enough calls to
# fill caches, JIT-compile (CuPy, PyTorch) and wake the clocks, while most of it is timed.
WARMUP_SHARE = 0.1


def event_samples(run, stream, repeat, warmup, before=None, *, budget_s=None, min_repeat=1):
    """Samples of run() timed with CUDA events on stream; before() runs untimed ahead of each
    repetition (an L2 flush, say). budget_s and min_repeat: see sampled()."""
    start, end = _core.Event(), _core.Event()

    def time_one():
        if before is not None:
            before()
        start.record(stream)
        run()
        end.record(stream)
        end.synchronize()
        return _core.elapsed_ms(start, end)

    return sampled(time_one, repeat, warmup, budget_s, min_repeat)


def host_samples(run, repeat, warmup, *, after=None, budget_s=None, min_repeat=1):
    """Samples of run() timed with perf_counter; after() runs inside the timed span (a device
    synchronize, so that the time covers the work run() queued). budget_s and min_repeat: see
    sampled()."""

    def time_one():
        t0 = time.perf_counter()
        run()
        if after is not None:
            after()
        return (time.perf_counter() - t0) * 1e3

    return sampled(time_one, repeat, warmup, budget_s, min_repeat)


def sampled(time_one, repeat, warmup, budget_s=None, min_repeat=1):
    """The timed samples of time_one() (which returns one sample in ms), after its warm-up.

    Without budget_s: warmup untimed calls, then exactly repeat timed ones. With budget_s
    (seconds of wall clock, warm-up included): warmup calls (None: calls for WARMUP_SHARE of
    the budget, at least one), then timed calls until repeat of them are done or the next
    would end past the budget (judged by the last call's duration), but never fewer than
    min(min_repeat, repeat): a call longer than the budget still gets its minimum samples."""
    start = time.perf_counter()
    if warmup is None:
        if budget_s is None:
            raise ValueError("warmup=None needs a time budget (budget_s)")
        warm_until = start + WARMUP_SHARE * budget_s
        time_one()
        while time.perf_counter() < warm_until:
            time_one()
    else:
        for _ in range(warmup):
            time_one()
    deadline = None if budget_s is None else start + budget_s
    floor = min(min_repeat, repeat)
    samples = []
    while len(samples) < repeat:
        t0 = time.perf_counter()
        samples.append(time_one())
        if deadline is not None and len(samples) >= floor:
            now = time.perf_counter()
            if now + (now - t0) > deadline:
                break
    return samples
