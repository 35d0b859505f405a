"""Per-call overhead at 1 K elements, host wall time: a device op issued asynchronously, and
NumPy in -> GPU -> NumPy out; with CuPy and PyTorch doing the same in the same run. saxpy for
the elementwise path; reduce for the scalar path (issued async, with the scalar back on the
host via .item(), and NumPy in -> NumPy scalar out).

    python benchmarks/call_overhead.py [--calls 20000]
"""

import argparse
import statistics
import time

import numpy as np

import gpulab as gl
from common import require_gpu, save

N = 1024


def per_call_us(run, calls, sync, rounds=5):
    """Median over rounds of (wall time of `calls` calls, then one sync) / calls."""
    samples = []
    for r in range(rounds + 1):
        t0 = time.perf_counter()
        for _ in range(calls):
            run()
        sync()
        if r:
            samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples)


def reduce_overhead(x, calls, few):
    """The scalar path: issued async, with .item(), and NumPy in -> NumPy scalar out."""
    dx = gl.to_device(x)
    r = {"reduce_gpulab_issue_us": per_call_us(lambda: gl.reduce(dx), calls, gl.synchronize),
         "reduce_gpulab_item_us": per_call_us(lambda: gl.reduce(dx).item(), few, lambda: None),
         "reduce_gpulab_numpy_us": per_call_us(lambda: gl.reduce(x), few, lambda: None)}
    assert abs(gl.reduce(dx).item() - x.astype(np.float64).sum()) < 1e-3
    try:
        import torch
        tx = torch.from_numpy(x).cuda()
        r["reduce_torch_issue_us"] = per_call_us(lambda: torch.sum(tx), calls,
                                                 torch.cuda.synchronize)
        r["reduce_torch_item_us"] = per_call_us(lambda: torch.sum(tx).item(), few, lambda: None)
        r["reduce_torch_numpy_us"] = per_call_us(
            lambda: torch.sum(torch.from_numpy(x).cuda()).item(), few, lambda: None)
    except ImportError:
        pass
    try:
        import cupy
        cx = cupy.asarray(x)
        sync = cupy.cuda.Device().synchronize
        r["reduce_cupy_issue_us"] = per_call_us(lambda: cupy.sum(cx), calls, sync)
        r["reduce_cupy_item_us"] = per_call_us(lambda: cupy.sum(cx).item(), few, lambda: None)
        r["reduce_cupy_numpy_us"] = per_call_us(lambda: cupy.sum(cupy.asarray(x)).item(), few,
                                                lambda: None)
    except ImportError:
        pass
    return r


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    require_gpu()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N, dtype=np.float32)
    y = rng.standard_normal(N, dtype=np.float32)
    dx, dy, dout = gl.to_device(x), gl.to_device(y), gl.to_device(y)
    calls, few = args.calls, max(1, args.calls // 4)
    r = {}
    r["gpulab_async_us"] = per_call_us(lambda: gl.saxpy(2.0, dx, dy), calls, gl.synchronize)
    r["gpulab_async_out_us"] = per_call_us(lambda: gl.saxpy(2.0, dx, dy, out=dout), calls,
                                           gl.synchronize)
    r["gpulab_numpy_us"] = per_call_us(lambda: gl.saxpy(2.0, x, y), few, lambda: None)
    # the small NumPy path: kernels on mapped pinned memory (zero-copy) or one DMA each way
    for m in (1024, 4096, 16384, 65536):
        xm, ym = x[:1].repeat(m), y[:1].repeat(m)
        for path, limit in (("dma", 0), ("zero_copy", 1 << 20)):
            default = gl._core._set_zero_copy_limit(limit)
            r[f"numpy_{path}_{m}_us"] = per_call_us(lambda: gl.saxpy(2.0, xm, ym), few,
                                                    lambda: None)
            gl._core._set_zero_copy_limit(default)
    # where the async time goes: the bare C entry point, one CUDA call, one pool alloc + free
    core = gl._core
    r["parts_core_saxpy_us"] = per_call_us(lambda: core.saxpy(2.0, dx, dy, None, dout, None, None),
                                           calls, gl.synchronize)
    r["parts_cuda_memset_us"] = per_call_us(lambda: core._memset(dout, 0), calls, gl.synchronize)
    r["parts_alloc_free_us"] = per_call_us(lambda: gl.empty(N), calls, gl.synchronize)
    sink = gl.empty(32, np.float32)
    r["parts_tiny_kernel_us"] = per_call_us(lambda: core._fma_loop(1, 32, 1, sink), calls,
                                            gl.synchronize)
    expect = 2.0 * x.astype(np.float64) + y
    assert np.allclose(gl.saxpy(2.0, x, y), expect, rtol=1e-6, atol=1e-6)
    try:
        import torch
        tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
        r["torch_async_us"] = per_call_us(lambda: torch.add(ty, tx, alpha=2.0), calls,
                                          torch.cuda.synchronize)
        r["torch_numpy_us"] = per_call_us(
            lambda: torch.add(torch.from_numpy(y).cuda(), torch.from_numpy(x).cuda(),
                              alpha=2.0).cpu().numpy(), few, lambda: None)
    except ImportError:
        pass
    try:
        import cupy
        cx, cy = cupy.asarray(x), cupy.asarray(y)
        kernel = cupy.ElementwiseKernel("T a, T x, T y", "T z", "z = a * x + y", "peer_saxpy")
        a32 = np.float32(2.0)
        sync = cupy.cuda.Device().synchronize
        r["cupy_async_us"] = per_call_us(lambda: kernel(a32, cx, cy), calls, sync)
        r["cupy_numpy_us"] = per_call_us(
            lambda: kernel(a32, cupy.asarray(x), cupy.asarray(y)).get(), few, lambda: None)
    except ImportError:
        pass
    r.update(reduce_overhead(x, calls, few))
    peers_async = [v for k, v in r.items() if k.endswith("_async_us") and "gpulab" not in k]
    peers_numpy = [v for k, v in r.items() if k.endswith("_numpy_us") and "gpulab" not in k]
    summary = dict(r)
    if peers_async:
        summary["best_peer_async_over_gpulab"] = min(peers_async) / r["gpulab_async_us"]
    if peers_numpy:
        summary["best_peer_numpy_over_gpulab"] = min(peers_numpy) / r["gpulab_numpy_us"]
    for kind in ("issue", "item", "numpy"):
        peers = [v for k, v in r.items() if k.startswith("reduce_") and k.endswith(f"_{kind}_us")
                 and "gpulab" not in k]
        if peers:
            summary[f"reduce_best_peer_{kind}_over_gpulab"] = (
                min(peers) / r[f"reduce_gpulab_{kind}_us"])
    for k, v in summary.items():
        print(f"{k:40s} {v:8.2f}")
    save("call_overhead", {"n": N, "dtype": "float32", "calls": calls,
                           "timer": "perf_counter over a loop of calls, one sync at the end"},
         summary)


if __name__ == "__main__":
    main()
