"""The device's own ceilings, measured once per process: copy bandwidth and FP32 FMA rate.
Every BenchResult is reported as a fraction of these."""

import statistics
import numpy as np

from . import _core
from .timing import event_samples, host_samples

_cache = {}

GPU_COPY_BYTES = 512 << 20
CPU_COPY_BYTES = 128 << 20


def ceilings(where=None, refresh=False):
    """{'where', 'device', 'copy_gbps', 'fma_gflops', ...} for 'gpu' or 'cpu' (default: the GPU
    when there is one). GB/s counts bytes read plus bytes written."""
    if where is None:
        where = "gpu" if _core.cuda_available() else "cpu"
    if where not in ("gpu", "cpu"):
        raise ValueError(f"where must be 'gpu' or 'cpu', got {where!r}")
    if refresh or where not in _cache:
        _cache[where] = _measure_gpu() if where == "gpu" else _measure_cpu()
    return dict(_cache[where])


def _measure_gpu():
    info = _core.device_info(0)
    nbytes = GPU_COPY_BYTES
    src = _core.empty(nbytes, dtype=np.uint8)
    dst = _core.empty(nbytes, dtype=np.uint8)
    _core._memset(src, 0x5A)
    copy_ms = statistics.median(
        event_samples(lambda: _core._copy(dst, src), None, repeat=10, warmup=2))
    blocks, threads, iterations = info["multiprocessors"] * 8, 256, 4096
    sink = _core.empty(blocks * threads, dtype=np.float32)
    flops = []
    fma_ms = statistics.median(event_samples(
        lambda: flops.append(_core._fma_loop(blocks, threads, iterations, sink)), None, repeat=5,
        warmup=2))
    return {
        "where": "gpu",
        "device": info["name"],
        "copy_gbps": 2 * nbytes / copy_ms / 1e6,
        "copy_bytes": nbytes,
        "fma_gflops": flops[-1] / fma_ms / 1e6,
        "peak_bandwidth_gbps": info["peak_bandwidth_gbps"],
        "peak_fp32_gflops": info["peak_fp32_gflops"],
        "method": "median of event-timed cudaMemcpyAsync D2D (read+write bytes) and an FP32 FMA "
                  "loop kernel",
    }


def _measure_cpu():
    n = CPU_COPY_BYTES // 4
    src = np.full(n, 1.5, dtype=np.float32)
    dst = np.full(n, 2.5, dtype=np.float32)
    copy_ms = statistics.median(
        host_samples(lambda: _core._cpu_copy(dst, src), repeat=5, warmup=1))
    iterations = 1 << 20
    flops = _core._cpu_fma_loop(iterations)
    fma_ms = statistics.median(
        host_samples(lambda: _core._cpu_fma_loop(iterations), repeat=3, warmup=1))
    return {
        "where": "cpu",
        "device": _cpu_name(),
        "copy_gbps": 2 * src.nbytes / copy_ms / 1e6,
        "copy_bytes": src.nbytes,
        "fma_gflops": flops / fma_ms / 1e6,
        "threads": _core.build_info()["openmp_threads"],
        "method": "median of perf_counter-timed OpenMP memcpy (read+write bytes) and FP32 FMA "
                  "chains on every thread, as built (no -march)",
    }


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()
