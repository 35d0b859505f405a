"""The stencil lab's ladders on the GPU, in one run, against the copy ceiling and the peers:

  * 2D 5-point Jacobi at 4096^2 and 16384^2 float32: every CUDA variant of gl.jacobi (temporal
    at every depth), 200 sweeps checked every 50, against CuPy at its fastest (one ElementwiseKernel
    launch per sweep over the interior, the same 200 sweeps); one application of the 5-point
    Laplacian by every stencil variant against cupyx.scipy.ndimage.correlate and torch conv2d;
  * 3D 7-point at 512^3 float32: laplace7 by every stencil variant against cupyx.scipy.ndimage
    and torch conv3d, and every 3D-capable Jacobi variant (20 sweeps) against the same CuPy kernel;
  * 1D radius 3 at 2^28 float32: random 7-point weights by every stencil variant against
    cupyx.scipy.ndimage.correlate1d, a CuPy ElementwiseKernel and torch conv1d.

Byte models (docs/labs/stencil.md): a stencil application reads u once and writes out once (2 x 4
bytes a cell); a Jacobi sweep reads u and f and writes u_new (3 x 4 bytes a cell), every sweep
counted, temporal blocking's too (it does depth sweeps per pass and is credited with depth sweeps'
bytes: its "gbps" is effective, above the copy ceiling when the blocking pays). frac_copy is that
rate over the device-to-device copy measured in this process (gl.ceilings()); grid_frac_copy counts
the targets' model instead (one read and one write of the grid, 8 bytes a cell: f's read left out).
GPU times are CUDA events on device arrays (gl.bench), L2 flushed before each repetition. The
targets: the best 2D Jacobi sweep >= 0.9x copy at 4096^2, the best 3D 7-point stencil >= 0.85x copy
at 512^3.

    python benchmarks/stencil_lab.py [--repeat 10] [--quick]
"""

import numpy as np

import gpulab as gl
from common import ladder_args, save

SWEEPS_2D, SWEEPS_3D, CHECK_EVERY = 200, 20, 50


def cuda_variants(op):
    return [v for v in gl.variants(op) if v.backend == "cuda"]


def row(r, **extra):
    peers = {name: p["median_ms"] for name, p in (r.peers or {}).items()}
    return {**extra, "variant": r.variant_name, "id": r.variant, "n": r.size,
            "median_ms": r.median_ms, "min_ms": r.min_ms, "max_ms": r.max_ms, "gbps": r.gbps,
            "frac_copy": r.frac_copy, "peers_ms": peers,
            **{f"over_{name}": ms / r.median_ms for name, ms in peers.items()}}


def jacobi_ladder(shape, sweeps, repeat, copy_gbps, names=None):
    """Every CUDA rung of jacobi (only those named in `names`, if given) on a random float32
    grid of `shape`, `sweeps` sweeps a call; CuPy's ElementwiseKernel sweeps beside fused."""
    rng = np.random.default_rng(1)
    f = gl.to_device(rng.standard_normal(shape).astype(np.float32))
    u0 = gl.to_device(rng.standard_normal(shape).astype(np.float32))
    cells = int(np.prod(shape))
    rows = []
    for v in cuda_variants("jacobi"):
        if v.name == "temporal" and len(shape) == 3:
            continue
        if names is not None and v.name not in names:
            continue
        for depth in v.tunables.get("depth", {}).get("values", [None]):
            r = gl.bench(gl.jacobi, f, u0, h=1.0, iters=sweeps, check_every=CHECK_EVERY,
                         variant=v.id, depth=depth, repeat=repeat, peers=v.name == "fused")
            ms_per_sweep = r.median_ms / sweeps
            grid_gbps = 8 * cells / (ms_per_sweep * 1e6)
            rows.append(row(r, op="jacobi", shape=list(shape), sweeps=sweeps, depth=depth,
                            ms_per_sweep=ms_per_sweep, grid_frac_copy=grid_gbps / copy_gbps))
    return rows


def stencil_ladder(shape, weights, repeat, extra_peers=None):
    rng = np.random.default_rng(2)
    u = gl.to_device(rng.standard_normal(shape).astype(np.float32))
    rows = []
    for v in cuda_variants("stencil"):
        r = gl.bench(gl.stencil, u, weights, boundary="zero", variant=v.id, repeat=repeat,
                     peers=v.best)
        out = row(r, op="stencil", shape=list(shape),
                  weights=weights if isinstance(weights, str) else f"radius {len(weights) // 2}")
        if v.best and extra_peers:
            for name, ms in extra_peers(u, weights, repeat).items():
                out["peers_ms"][name] = ms
                out[f"over_{name}"] = ms / r.median_ms
        rows.append(out)
    return rows


def cupy_elementwise_1d(u, weights, repeat):
    """The 1D radius-3 stencil as a CuPy ElementwiseKernel (a peer), zero boundary."""
    import cupy
    cu = cupy.from_dlpack(u)
    out = cupy.empty_like(cu)
    w = [float(x) for x in weights]
    body = "float s = 0.f;\n" + "".join(
        f"if (i + {k - 3} >= 0 && i + {k - 3} < n) s += {w[k]!r}f * u[i + {k - 3}];\n"
        for k in range(7)) + "y = s;"
    kernel = cupy.ElementwiseKernel("raw float32 u, int64 n", "float32 y", body,
                                    "gpulab_radius3")
    kernel(cu, cu.size, out)  # compile
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(repeat):
        start.record()
        kernel(cu, cu.size, out)
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return {"cupy_elementwise": float(np.median(times))}


def peers_1d(u, weights, repeat):
    try:
        return cupy_elementwise_1d(u, weights, repeat)
    except Exception as e:  # no CuPy: the ladder stands without it
        print("CuPy ElementwiseKernel peer skipped:", e)
        return {}


def best(rows, **match):
    """The row of rows matching `match` with the highest frac_copy, or None."""
    found = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    return max(found, key=lambda r: r["frac_copy"]) if found else None


def summarize(jacobi_rows, stencil_rows, copy_gbps):

    j4096 = best(jacobi_rows, shape=[4096, 4096])
    single = [r for r in jacobi_rows if r["shape"] == [4096, 4096] and r["variant"] != "temporal"]
    j_single = max(single, key=lambda r: r["frac_copy"]) if single else None
    s3d = best(stencil_rows, shape=[512, 512, 512])
    j3d = best(jacobi_rows, shape=[512, 512, 512])
    out = {"copy_gbps": copy_gbps}
    if j4096:
        out["jacobi_4096_best"] = {k: j4096[k] for k in ("variant", "depth", "frac_copy",
                                                         "grid_frac_copy", "ms_per_sweep")}
        out["jacobi_4096_best_one_sweep_per_pass"] = {
            k: j_single[k] for k in ("variant", "frac_copy", "grid_frac_copy")}
        out["targets"] = {"2D Jacobi >= 0.9x copy at 4096^2 (12 B/cell, one sweep per pass)":
                          j_single["frac_copy"] >= 0.9,
                          "2D Jacobi >= 0.9x copy at 4096^2 (temporal blocking, counted "
                          "per sweep)": j4096["frac_copy"] >= 0.9}
    if s3d:
        out["stencil_512cubed_best"] = {k: s3d[k] for k in ("variant", "frac_copy")}
        out.setdefault("targets", {})["3D 7-point >= 0.85x copy at 512^3"] = \
            s3d["frac_copy"] >= 0.85 or (j3d is not None and j3d["frac_copy"] >= 0.85)
    if j3d:
        out["jacobi_512cubed_best"] = {k: j3d[k] for k in ("variant", "frac_copy")}
    return out


def main():
    args = ladder_args()
    quick = args.quick
    repeat = 2 if quick else args.repeat
    sizes_2d = [(512, 512)] if quick else [(4096, 4096), (16384, 16384)]
    size_3d = (64, 64, 64) if quick else (512, 512, 512)
    n_1d = (1 << 20) if quick else (1 << 28)
    settings = {"repeat": repeat, "quick": quick, "sizes_2d": sizes_2d, "size_3d": size_3d,
                "n_1d": n_1d, "sweeps_2d": SWEEPS_2D, "sweeps_3d": SWEEPS_3D,
                "check_every": CHECK_EVERY}
    copy_gbps = gl.ceilings()["copy_gbps"]
    print(gl.device_info()["name"], settings, "copy", copy_gbps, "GB/s")
    jacobi_rows, stencil_rows = [], []
    for shape in sizes_2d:
        jacobi_rows += jacobi_ladder(shape, SWEEPS_2D, repeat, copy_gbps)
        stencil_rows += stencil_ladder(shape, "laplace5", repeat)
    stencil_rows += stencil_ladder(size_3d, "laplace7", repeat)
    jacobi_rows += jacobi_ladder(size_3d, SWEEPS_3D, repeat, copy_gbps)
    w1d = np.random.default_rng(3).uniform(-1, 1, 7)
    stencil_rows += stencil_ladder((n_1d,), w1d, repeat, extra_peers=peers_1d)
    print(gl.Table(jacobi_rows))
    print(gl.Table(stencil_rows))
    summary = summarize(jacobi_rows, stencil_rows, copy_gbps)
    print(summary)
    save("stencil_lab", settings,
         {"copy_gbps": copy_gbps, "summary": summary, "jacobi": jacobi_rows,
          "stencil": stencil_rows})


if __name__ == "__main__":
    main()
