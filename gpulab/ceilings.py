"""The device's own ceilings, measured once per process: the copy bandwidth of main memory and
of L2, the FP32 and FP64 FMA rates and, on Hopper, the dense tensor-core rates. Every
BenchResult is reported as a fraction of these, and they are the roofs of gl.roofline()."""

import statistics
import numpy as np

from . import _core
from .timing import event_samples, host_samples

_cache = {}

GPU_COPY_BYTES = 512 << 20
CPU_COPY_BYTES = 128 << 20
# Bytes the L2 copy moves (read + written) per timed launch: about 1 ms at the H100's L2 rate,
# long enough that the launch and the events are noise, whatever the buffer size.
L2_COPY_TRAFFIC = 8 << 30
# Threads per block of the L2 copy; full occupancy is max_threads_per_sm / L2_COPY_THREADS
# blocks per SM.
L2_COPY_THREADS = 256
# ceilings() key -> the operand type _core._tensor_peak measures for it
TENSOR_KEYS = (("tensor_f16_gflops", "float16"), ("tensor_bf16_gflops", "bfloat16"),
               ("tensor_tf32_gflops", "tf32"))
TENSOR_METHOD = ("dense tensor-core rates (tensor_*_gflops): one launch a whole wave of blocks, "
                 "each warpgroup (three an SM) issuing wgmma.mma_async m64n256k16 (f16, bf16) or "
                 "m64n256k8 (tf32) back to back on zeroed operands in shared memory, FP32 "
                 "accumulators, 2 m n k flops a wgmma, median of 5 event-timed launches")
# cudaErrorNotSupported: no wgmma on this device, or no sm_90a image in this build
CUDA_ERROR_NOT_SUPPORTED = 801


def ceilings(where=None, refresh=False):
    """The ceilings of 'gpu' or 'cpu' (default: the GPU when there is one), as a dict:

    - where, device: 'gpu' or 'cpu', and the device's name;
    - copy_gbps: main memory's copy rate (HBM on the GPU, DRAM on the CPU), a copy of
      copy_bytes much larger than any cache;
    - fma_gflops: the FP32 FMA rate (2 flops per FMA);
    - fma64_gflops: the FP64 FMA rate;
    - l2_copy_gbps (GPU only): the copy rate between two buffers that stay resident in L2,
      l2_copy_bytes each (at most an eighth of the L2: see _l2_copy_plan), copied
      l2_copy_passes times in one kernel that loads and stores through L2 alone;
    - tensor_f16_gflops, tensor_bf16_gflops, tensor_tf32_gflops (GPU only): the dense
      tensor-core rates for float16, bfloat16 and TF32 operands with FP32 accumulation, the
      roofs of the tensor-core matmul rungs: warpgroups issuing wgmma.mma_async back to back
      (m64n256k16, or m64n256k8 for tf32) on zeroed operands in shared memory, three
      warpgroups an SM, 2 * m * n * k flops a wgmma (TENSOR_METHOD). None where wgmma does not
      run (a device other than compute capability 9.0, or a build without its sm_90a image):
      the roofline then holds those results to the FP32 FMA roof, and method says why;
    - peak_bandwidth_gbps, peak_fp32_gflops (GPU): the datasheet's theory, for comparison;
    - threads (CPU): the OpenMP threads of the copy and the FMA loops;
    - method: how each figure was measured.

    Every GB/s counts bytes read plus bytes written; each figure is the median of its timed
    repetitions (CUDA events on the GPU, perf_counter on the CPU)."""
    if where is None:
        where = "gpu" if _core.cuda_available() else "cpu"
    if where not in ("gpu", "cpu"):
        raise ValueError(f"where must be 'gpu' or 'cpu', got {where!r}")
    if refresh or where not in _cache:
        _cache[where] = _measure_gpu() if where == "gpu" else _measure_cpu()
    return dict(_cache[where])


def _l2_copy_plan(info):
    """(bytes per buffer, blocks) of the L2 copy on the device described by info.

    Each buffer is an eighth of L2, so source and destination together take a quarter of it:
    on the H100 (50 MiB) that is within half of one of its two L2 partitions, which (the A100
    and H100 whitepapers say) each cache the lines their own GPCs read, so a line both halves
    of the chip read may be held twice; a quarter leaves room for that and for the set
    conflicts of a working set near capacity, and still holds several MiB a buffer, far more
    than the SMs' L1s and a thousand times the latency-bandwidth product of one SM. The size
    is then rounded down to whole waves of the grid (one 16-byte vector per thread per wave),
    so every thread copies the same number of vectors per pass; a device whose eighth of L2 is
    less than a wave gets fewer blocks, a whole number per SM where it can."""
    blocks = info["multiprocessors"] * max(1, info["max_threads_per_sm"] // L2_COPY_THREADS)
    target = info["l2_cache_bytes"] // 8
    wave = blocks * L2_COPY_THREADS * 16
    if target >= wave:
        return target // wave * wave, blocks
    per_block = L2_COPY_THREADS * 16
    blocks = max(1, target // per_block)
    if blocks >= info["multiprocessors"]:
        blocks -= blocks % info["multiprocessors"]
    return blocks * per_block, blocks


def _measure_gpu():
    info = _core.device_info(0)
    nbytes = GPU_COPY_BYTES
    src = _core.empty(nbytes, dtype=np.uint8)
    dst = _core.empty(nbytes, dtype=np.uint8)
    _core._memset(src, 0x5A)
    copy_ms = statistics.median(
        event_samples(lambda: _core._copy(dst, src), None, repeat=10, warmup=2))
    l2_bytes, l2_blocks = _l2_copy_plan(info)
    l2_passes = max(1, L2_COPY_TRAFFIC // (2 * l2_bytes))
    l2_src = _core.empty(l2_bytes, dtype=np.uint8)
    l2_dst = _core.empty(l2_bytes, dtype=np.uint8)
    _core._memset(l2_src, 0x5A)  # also brings the source into L2 before the warm-up
    l2_ms = statistics.median(event_samples(
        lambda: _core._l2_copy(l2_dst, l2_src, l2_passes, l2_blocks, L2_COPY_THREADS), None,
        repeat=10, warmup=2))
    blocks, threads, iterations = info["multiprocessors"] * 8, 256, 4096
    fma_gflops = _gpu_fma_gflops(_core._fma_loop, np.float32, blocks, threads, iterations)
    fma64_gflops = _gpu_fma_gflops(_core._fma64_loop, np.float64, blocks, threads, iterations)
    tensor, tensor_method = _gpu_tensor_gflops()
    return {
        "where": "gpu",
        "device": info["name"],
        "copy_gbps": 2 * nbytes / copy_ms / 1e6,
        "copy_bytes": nbytes,
        "l2_copy_gbps": 2 * l2_bytes * l2_passes / l2_ms / 1e6,
        "l2_copy_bytes": l2_bytes,
        "l2_copy_passes": l2_passes,
        "fma_gflops": fma_gflops,
        "fma64_gflops": fma64_gflops,
        **tensor,
        "peak_bandwidth_gbps": info["peak_bandwidth_gbps"],
        "peak_fp32_gflops": info["peak_fp32_gflops"],
        "method": "medians of event-timed runs: cudaMemcpyAsync D2D (read+write bytes); an "
                  "L2-resident copy kernel (ld/st.global.cg, l2_copy_passes passes of "
                  "l2_copy_bytes, read+write bytes); FP32 and FP64 FMA loop kernels; "
                  + tensor_method,
    }


def _gpu_tensor_gflops():
    """({key: GFLOP/s or None} for TENSOR_KEYS, the method's text): the dense tensor-core
    rates, or None for all three where the device or the build has no wgmma."""
    out = {}
    for key, operand in TENSOR_KEYS:
        try:
            out[key] = _core._tensor_peak(operand)[0]
        except _core.CudaError as e:
            if getattr(e, "code", None) != CUDA_ERROR_NOT_SUPPORTED:
                raise
            return dict.fromkeys(k for k, _ in TENSOR_KEYS), (
                f"tensor-core rates not measured ({e}): wgmma.mma_async needs a device of "
                "compute capability 9.0 and gpulab's sm_90a image, so the roofline holds "
                "float16, bfloat16 and TF32 results to the FP32 FMA roof")
    return out, TENSOR_METHOD


def _gpu_fma_gflops(loop, dtype, blocks, threads, iterations):
    """The median GFLOP/s of loop (_core._fma_loop or _fma64_loop) over event-timed runs."""
    sink = _core.empty(blocks * threads, dtype=dtype)
    flops = []
    ms = statistics.median(event_samples(
        lambda: flops.append(loop(blocks, threads, iterations, sink)), None, repeat=5,
        warmup=2))
    return flops[-1] / ms / 1e6


def _measure_cpu():
    n = CPU_COPY_BYTES // 4
    src = np.full(n, 1.5, dtype=np.float32)
    dst = np.full(n, 2.5, dtype=np.float32)
    copy_ms = statistics.median(
        host_samples(lambda: _core._cpu_copy(dst, src), repeat=5, warmup=1))
    return {
        "where": "cpu",
        "device": _cpu_name(),
        "copy_gbps": 2 * src.nbytes / copy_ms / 1e6,
        "copy_bytes": src.nbytes,
        "fma_gflops": _cpu_fma_gflops(_core._cpu_fma_loop),
        "fma64_gflops": _cpu_fma_gflops(_core._cpu_fma64_loop),
        "threads": _core.build_info()["openmp_threads"],
        "method": "medians of perf_counter-timed runs: OpenMP memcpy (read+write bytes); FP32 "
                  "and FP64 FMA chains on every thread, as built (no -march)",
    }


def _cpu_fma_gflops(loop):
    """The median GFLOP/s of loop (_core._cpu_fma_loop or _cpu_fma64_loop) on every thread."""
    iterations = 1 << 20
    flops = loop(iterations)
    ms = statistics.median(host_samples(lambda: loop(iterations), repeat=3, warmup=1))
    return flops / ms / 1e6


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
