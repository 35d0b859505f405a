"""The image lab's ladders on the GPU, in one run, against the peers on the same arrays:

  * gaussian, sigma 2 (17 x 17 taps, truncate 4), 8192 x 8192 float32, mode "reflect": every CUDA
    variant; cupyx.scipy.ndimage.gaussian_filter and torch (two grouped conv2d passes with 1-D
    kernels over reflect-padded tensors: torch's 'reflect' is scipy's 'mirror', the same work);
  * box, size 9, and filter2d with a 3 x 3 kernel that is not separable, 8192 x 8192 float32,
    briefly: every variant that takes them; cupyx.scipy.ndimage.uniform_filter / correlate;
  * mandelbrot at 4096 x 4096, max 256, x in [-2, 0.5], y in [-1.25, 1.25] (the whole set),
    and at 8192 x 8192, max 4096, the same view: per pixel, Mariani-Silver with dynamic
    parallelism and with the host queue, and the CuPy ElementwiseKernel doing the same float64
    iteration (gpulab.labs.image.cupy_mandelbrot).

Filter rates count one read and one write of the image; Mandelbrot's are Gpixels/s. GPU times are
CUDA events on device arrays (gl.bench), L2 flushed before each repetition. The texture variant's
time includes its cudaArray's allocation, copy and free (it waits for its stream). The targets: the
best Gaussian >= 8x cupyx gaussian_filter; per-pixel Mandelbrot >= 1.0x the CuPy kernel;
Mariani-Silver faster than per pixel at 8192, max 4096.

    python benchmarks/image_lab.py [--repeat 10] [--quick]
"""

import numpy as np

import gpulab as gl
from common import ladder_args, save

VIEW = ((-2.0, 0.5), (-1.25, 1.25))
NOT_SEPARABLE = [[0.0, -1.0, 0.5], [-1.0, 4.0, -1.0], [0.25, -1.0, 0.0]]


def cuda_variants(op):
    return [v for v in gl.variants(op) if v.backend == "cuda"]


def row(r, **extra):
    peers = {name: p["median_ms"] for name, p in (r.peers or {}).items()}
    return {**extra, "variant": r.variant_name, "id": r.variant, "median_ms": r.median_ms,
            "min_ms": r.min_ms, "max_ms": r.max_ms, "gbps": r.gbps, "peers_ms": peers,
            "peers_gbps": {name: p["gbps"] for name, p in (r.peers or {}).items()},
            **{f"over_{name}": ms / r.median_ms for name, ms in peers.items()}}


def filter_image(side):
    return gl.to_device(np.random.default_rng(5).random((side, side), dtype=np.float32))


def gaussian_ladder(img, repeat):
    """Every CUDA rung of gaussian, sigma 2, on the square device image img; the peers beside
    the best rung."""
    rows = []
    for v in cuda_variants("gaussian"):
        r = gl.bench(gl.gaussian, img, 2.0, variant=v.id, repeat=repeat, peers=v.best)
        rows.append(row(r, op="gaussian", side=img.shape[0], sigma=2.0))
    return rows


def filters(side, repeat):
    img = filter_image(side)
    rows = gaussian_ladder(img, repeat)
    for v in cuda_variants("box"):
        r = gl.bench(gl.box, img, 9, variant=v.id, repeat=repeat, peers=v.best)
        rows.append(row(r, op="box", side=side, size=9))
    for v in cuda_variants("filter2d"):
        if v.name in ("shared_separable", "fused_separable"):
            continue  # they take separable kernels only
        r = gl.bench(gl.filter2d, img, NOT_SEPARABLE, variant=v.id, repeat=repeat,
                     peers=v.name == "global")
        rows.append(row(r, op="filter2d", side=side, kernel="3x3, rank 3"))
    return rows


def mandelbrot(side, max_iter, repeat):
    xlim, ylim = (gl.to_device(np.array(lim, np.float64)) for lim in VIEW)
    rows = []
    for v in cuda_variants("mandelbrot"):
        r = gl.bench(gl.mandelbrot, side, side, xlim, ylim, max_iter, variant=v.id,
                     repeat=repeat, peers=v.name == "per_pixel")
        rows.append(row(r, op="mandelbrot", side=side, max_iter=max_iter,
                        gpixels_per_s=side * side / r.median_ms / 1e6))
    # every variant's map is the per-pixel one on this view (or says how many dwells differ)
    ref = gl.mandelbrot(side, side, xlim, ylim, max_iter, variant="per_pixel").get()
    for rw in rows:
        got = gl.mandelbrot(side, side, xlim, ylim, max_iter, variant=rw["id"]).get()
        rw["dwells_differing_from_per_pixel"] = int(np.count_nonzero(got != ref))
    return rows


def pick(rows, **match):
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())), {})


def summarize(filter_rows, mandel_rows, big):
    fused = pick(filter_rows, op="gaussian", variant="fused_separable")
    pixel = pick(mandel_rows, side=big, variant="per_pixel")
    ms = [pick(mandel_rows, side=big, variant=n) for n in ("mariani_silver_dynamic",
                                                            "mariani_silver_queue")]
    best_ms = min((r["median_ms"] for r in ms if r), default=float("inf"))
    return {
        "gaussian_gbps": {r["variant"]: r["gbps"] for r in filter_rows if r["op"] == "gaussian"},
        "gaussian_peers_gbps": fused.get("peers_gbps"),
        "gaussian_best_over_cupy": fused.get("over_cupy"),
        "gaussian_best_over_torch": fused.get("over_torch"),
        "mandelbrot_gpixels": {f"{r['side']}/{r['max_iter']} {r['variant']}": r["gpixels_per_s"]
                               for r in mandel_rows},
        "per_pixel_over_cupy": {r["side"]: r.get("over_cupy") for r in mandel_rows
                                if r["variant"] == "per_pixel"},
        "targets": {
            "gaussian >= 8x cupyx": (fused.get("over_cupy") or 0) >= 8,
            "per pixel >= 1.0x CuPy": all((r.get("over_cupy") or 0) >= 1.0 for r in mandel_rows
                                          if r["variant"] == "per_pixel"),
            "Mariani-Silver beats per pixel at the big size": bool(pixel) and
            best_ms < pixel["median_ms"],
        },
    }


def main():
    args = ladder_args()
    side = 1024 if args.quick else 8192
    views = [(512, 256), (1024, 1024)] if args.quick else [(4096, 256), (8192, 4096)]
    settings = {"repeat": args.repeat, "quick": args.quick, "filter_side": side,
                "mandelbrot": views, "view": VIEW}
    print(gl.device_info()["name"], settings)
    filter_rows = filters(side, args.repeat)
    print(gl.Table(filter_rows))
    mandel_rows = []
    for s, max_iter in views:
        mandel_rows += mandelbrot(s, max_iter, args.repeat)
    print(gl.Table(mandel_rows))
    summary = summarize(filter_rows, mandel_rows, views[-1][0])
    print(summary)
    save("image_lab", settings,
         {"summary": summary, "filters": filter_rows, "mandelbrot": mandel_rows})


if __name__ == "__main__":
    main()
