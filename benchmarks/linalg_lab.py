"""The linalg lab's ladders on the GPU, in one run, against the ceilings, cuBLAS and the peers:

  * matvec: every CUDA variant at 16384^2 float32 and float64 (cuBLAS SGEMV/DGEMV is variant 4;
    torch.mv and cupy.dot on the same arrays); S2's scaling table, 10, 100, 1000 and 10000
    square and the 10 x 10000 wide case, for the best variant, cuBLAS and the CPU ladder;
  * matmul: every CUDA variant at 1024^3, 4096^3 and 8192^3 float32 in GFLOP/s, as a fraction of
    cuBLAS SGEMM (TF32 off) in the same run and of the FP32 FMA ceiling (the TF32 rungs, tf32_wmma
    and tf32, against cuBLAS with TF32 on); S0's skewed sweep m = 1024 i, n = 1024 / i, k = 1024 for
    i = 1, 2, 4, ..., 1024; the tile sweep of every tunable variant at 4096^3 (the notebook's
    heatmap), one tunable at a time; and the FULL grid of the top rung's configurations (multistage:
    warps x bk x stages x bm, every combination it compiles: 12 of 128-row tiles, 6 of 256-row tiles
    at 8 warps) at every matmul size, repeat 5, with the best configuration per size against cuBLAS
    in the summary (`sgemm_top_rung_best`);
  * transpose: every CUDA variant at 16384^2 float32, against the device-to-device copy of
    gl.ceilings() (frac_copy) and CuPy's .T.copy() (968 GB/s on the H100, docs/labs/linalg.md);
  * the tensor-core ladder: every float16 and bfloat16 rung at 4096^3 and 8192^3, in TFLOP/s,
    as a fraction of cuBLASLt in the same run (frac_cublas) and of the measured tensor-core
    ceiling of its dtype (frac_tensor, gl.ceilings()' tensor_*_gflops); with --half, also
    issue 34's odd shapes (m x n x k) 4097 x 4095 x 4093, 1 x 8192 x 8192 and 8192 x 8192 x 64:
    every half rung, cuBLASLt and its peers, each rung's C first checked against a float64
    product (sampled rows) and the kernels it launched noted (k % 8 != 0 sends the wgmma rungs
    to mma_sync's kernel), then timed with the L2 flushed.

GPU times are CUDA events on device arrays (gl.bench), L2 flushed before each repetition. The
targets: the best hand-written SGEMM >= 0.9x cuBLAS at 4096^3 and 8192^3; the best transpose >= 0.9x
the D2D copy; the best hand-written matvec >= 1.0x cuBLAS SGEMV at 16384^2.

    python benchmarks/linalg_lab.py [--repeat 10] [--quick]
    python benchmarks/linalg_lab.py --sgemm-grid   # only cuBLAS, double_buffered and the top
                                                   # rung's grid at 4096^3 and 8192^3 (seconds),
                                                   # saved as linalg_sgemm_grid.json
    python benchmarks/linalg_lab.py --tf32         # only the TF32 rows and tf32's grid at
                                                   # 4096^3 and 8192^3, as linalg_tf32.json
    python benchmarks/linalg_lab.py --half         # only the tensor-core ladder and the odd
                                                   # shapes (about a minute on an H200), saved
                                                   # as linalg_half.json
    python benchmarks/linalg_lab.py --layouts      # transposed views (A.T, B.T) at 4096^3:
                                                   # the user's call on torch tensors against
                                                   # torch.matmul on the same views, saved as
                                                   # linalg_layouts.json
"""

import argparse
import sys
import time

import numpy as np

import gpulab as gl
from gpulab import _core
from gpulab.inspection import base_name
from gpulab.labs.linalg import matmul_configurations
from common import require_gpu, save

HAND_WRITTEN_SGEMM = ("naive", "coalesced", "shared_tiles", "padded_tiles", "register_1d",
                      "register_2d", "vectorized", "warp_tiling", "double_buffered", "multistage")
# The ladder's top FP32 rung, whose whole grid of configurations is measured (grid_sweep)
TOP_RUNG = "multistage"
GRID_REPEAT = 5


# Issue 34's odd shapes, (m, n, k): no dimension a multiple of a tile (and k % 8 != 0, which
# the TMA cannot describe: the wgmma rungs run mma_sync's kernel), a single row (a matvec on
# the tensor cores: B read once, memory-bound), and a shallow k (C written once, memory-bound).
ODD_SHAPES = ((4097, 4095, 4093), (1, 8192, 8192), (8192, 8192, 64))
# Rows of C checked against float64 a shape (all of them when C has fewer)
CHECKED_ROWS = 64
# cudaErrorNotSupported: a wgmma rung off an sm_90a device
NOT_SUPPORTED = 801
# ceilings() key of each half dtype's tensor-core ceiling
TENSOR_CEILING = {"float16": "tensor_f16_gflops", "bfloat16": "tensor_bf16_gflops"}


def cuda_variants(op, dtype="float32"):
    """op's CUDA variants that take dtype (matmul's tensor-core rungs take only the halves)."""
    return [v for v in gl.variants(op) if v.backend == "cuda" and dtype in v.dtypes]


def frac_tensor(gflops, dtype, ceilings):
    """gflops over the measured tensor-core ceiling of dtype; None where it was not measured."""
    ceiling = ceilings.get(TENSOR_CEILING[dtype])
    return gflops / ceiling if ceiling else None


def half_matrix(rng, s, dtype):
    """An s x s device matrix of float16 (NumPy's) or bfloat16 (made by PyTorch, or NumPy with
    ml_dtypes); None where nothing here makes bfloat16."""
    x = rng.standard_normal((s, s)).astype(np.float32)
    if dtype == "float16":
        return gl.to_device(x.astype(np.float16))
    try:
        import torch
        return gl.from_dlpack(torch.from_numpy(x).cuda().to(torch.bfloat16))
    except ImportError:
        pass
    try:
        import ml_dtypes
        return gl.to_device(x.astype(ml_dtypes.bfloat16))
    except ImportError:
        return None


# Rounds of the whole half ladder, each rung's figure the round with the median time, each round
# in another order: the H200's clock drifts over a run of 8192^3 products (cuBLASLt moved
# 606-783 TFLOP/s between runs; its power cap lowers the clock under sustained products), and
# changing the order makes the drift hit every rung, cuBLASLt included, alike.
HALF_ROUNDS = 3
# Seconds of rest before each rung's timing. Back to back, the 8192^3 products fell into a
# power-capped clock state or not by what ran before: at float16, rung 20 ran 1.45 or 1.69 ms,
# cuBLASLt 1.48 or 1.72, in one run. After a rest every rung starts from the same idle state.
HALF_REST_S = 1.0


def half_ladder(sizes, repeat, ceilings):
    """The tensor-core ladder (float16 and bfloat16 in, the same out) at s^3, HALF_ROUNDS rounds
    over the rungs, with cuBLASLt's row timing PyTorch's and CuPy's matmul on the same arrays;
    frac_cublas against cublaslt, frac_tensor against the measured tensor-core ceiling of the
    dtype; rounds_ms: each round's median."""
    rows = []
    rng = np.random.default_rng(6)
    for dtype in ("float16", "bfloat16"):
        for s in sizes:
            A, B = half_matrix(rng, s, dtype), half_matrix(rng, s, dtype)
            if A is None:
                print(f"{dtype}: skipped (neither PyTorch nor ml_dtypes is installed)")
                break
            rounds = {}
            ladder = [v for v in cuda_variants("matmul", dtype)
                      if not (v.name == "wmma" and s > 4096)]  # wmma's place is set at 4096^3
            for k in range(HALF_ROUNDS):
                # forward, backward, forward from the middle, ...: no rung always follows the
                # same one (a rotation alone would keep every rung's neighbours)
                start = k * len(ladder) // HALF_ROUNDS
                turn = ladder[start:] + ladder[:start]
                for v in (turn[::-1] if k % 2 else turn):
                    time.sleep(HALF_REST_S)
                    r = gl.bench(gl.matmul, A, B, variant=v.id, repeat=repeat, flush_l2=False,
                                 peers=v.name == "cublaslt")
                    rounds.setdefault(v.name, []).append(row(r, dtype=dtype, m=s, n=s, k=s))
            results = {}
            for name, runs in rounds.items():
                runs.sort(key=lambda r: r["median_ms"])
                results[name] = dict(runs[len(runs) // 2],
                                     rounds_ms=[r["median_ms"] for r in runs])
            for name, r in results.items():
                ref = results.get("cublaslt")
                r["frac_cublas"] = ref["median_ms"] / r["median_ms"] if ref else None
                r["tflops"] = 2 * s ** 3 / r["median_ms"] / 1e9
                r["frac_tensor"] = frac_tensor(r["gflops"], dtype, ceilings)
                rows.append(r)
    return rows


def half_operand(x, dtype):
    """(a device matrix of x rounded to dtype, the rounded values as float64 on the host):
    float16 by NumPy, bfloat16 by PyTorch (or ml_dtypes); (None, None) where nothing here
    makes bfloat16."""
    if dtype == "float16":
        h = x.astype(np.float16)
        return gl.to_device(h), h.astype(np.float64)
    try:
        import torch
        t = torch.from_numpy(x).cuda().to(torch.bfloat16)
        return gl.from_dlpack(t), t.double().cpu().numpy()
    except ImportError:
        pass
    try:
        import ml_dtypes
        h = x.astype(ml_dtypes.bfloat16)
        return gl.to_device(h), h.astype(np.float64)
    except ImportError:
        return None, None


def rows_as_float64(C, rows):
    """Rows `rows` of the device matrix C (float16 or bfloat16) as float64 on the host."""
    gl.synchronize()
    try:
        import torch
        index = torch.as_tensor(rows, device="cuda")
        return torch.from_dlpack(C)[index].double().cpu().numpy()
    except ImportError:
        return np.asarray(C.get()[rows], dtype=np.float64)


def half_reference(A64, B64, rows, dtype):
    """(C64, bound) for rows `rows` of C = A B: the float64 product of the half-rounded inputs
    and tests/references/linalg.py's half_bound for C stored as dtype: 4 k 2^-24 (|A||B|)_ij
    (FP32 sums, truncating and aligned adds) (1 + u) + u |C64_ij| + k 2^-126 + half the dtype's
    smallest subnormal, u = 2^-11 (float16) or 2^-8 (bfloat16)."""
    k = A64.shape[1]
    a = A64[rows]
    want = a @ B64
    sums = 4 * k * 2.0 ** -24 * (np.abs(a) @ np.abs(B64)) + k * 2.0 ** -126
    u, tiny = (2.0 ** -11, 2.0 ** -25) if dtype == "float16" else (2.0 ** -8, 2.0 ** -134)
    return want, sums * (1 + u) + u * np.abs(want) + tiny


def checked_rows(m, rng):
    """The rows of an m-row C to check: all of them up to CHECKED_ROWS, else the first and last
    two, those around the 128-row tiles' last edge, and random ones."""
    if m <= CHECKED_ROWS:
        return np.arange(m)
    edge = m // 128 * 128
    fixed = {0, 1, m - 2, m - 1, edge - 1, min(edge, m - 1), m // 2}
    rest = rng.choice(m, CHECKED_ROWS - len(fixed), replace=False)
    return np.array(sorted(fixed | set(rest.tolist())))


def kernels_launched(call):
    """The names of gpulab's kernels that one call launched (gl.inspect's launch notes; a
    library's own kernels, cuBLASLt's, are not noted)."""
    gl.synchronize()
    _core._launch_notes_begin()
    try:
        call()
        gl.synchronize()
    finally:
        _, notes = _core._launch_notes_end()
    return sorted({base_name(_core._kernel_attributes(n["kernel"])["demangled"]) for n in notes})


def documented_kernel(v, n, k):
    """The kernel the wgmma rungs' table row says a shape runs: mma_sync's where the TMA cannot
    describe the rows (k or n not a multiple of 8), else their own; None for the other rungs."""
    if v.name not in ("wgmma", "wgmma_ws"):
        return None
    return "hgemm_mma_kernel" if k % 8 or n % 8 else f"hgemm_{v.name}_kernel"


def half_odd_shapes(repeat, ceilings, shapes=ODD_SHAPES):
    """Every half rung, cuBLASLt (timing PyTorch's and CuPy's matmul on the same arrays) at each
    odd shape, float16 and bfloat16: each rung's C first checked against float64 on sampled
    rows (a rung that fails is not timed), the kernels it launched noted, then timed with the
    L2 flushed. Returns (rows, failures)."""
    rows, failures = [], []
    rng = np.random.default_rng(34)
    for m, n, k in shapes:
        x = rng.standard_normal((m, k)).astype(np.float32)
        y = rng.standard_normal((k, n)).astype(np.float32)
        sample = checked_rows(m, rng)
        for dtype in ("float16", "bfloat16"):
            (A, A64), (B, B64) = half_operand(x, dtype), half_operand(y, dtype)
            if A is None:
                print(f"{dtype}: skipped (neither PyTorch nor ml_dtypes is installed)")
                continue
            want, bound = half_reference(A64, B64, sample, dtype)
            results = {}
            for v in cuda_variants("matmul", dtype):
                where = f"matmul[{v.id} {v.name}] {dtype} {m} x {n} x {k}"
                try:
                    out = {}
                    ran = kernels_launched(
                        lambda: out.setdefault("C", gl.matmul(A, B, variant=v.id)))
                except gl.CudaError as e:
                    if e.code != NOT_SUPPORTED:
                        raise
                    print(f"{where}: not run ({e})")
                    continue
                err = np.abs(rows_as_float64(out["C"], sample) - want)
                worst = float(np.nanmax(np.where(bound > 0, err / bound, err)))
                expected = documented_kernel(v, n, k)
                info = {"dtype": dtype, "m": m, "n": n, "k": k, "kernels": ran,
                        "library": v.library, "documented_kernel": expected,
                        "checked_rows": len(sample),
                        "max_error_over_bound": worst}
                if not np.all(err <= bound):  # NaN fails too
                    failures.append(where)
                    print(f"WRONG: {where}: {int(np.sum(~(err <= bound)))} of {err.size} "
                          f"checked elements outside the bound (worst {worst:.3g}x); not timed")
                    continue
                if expected and ran != [expected]:
                    print(f"note: {where} launched {ran}, its table row says {expected}")
                r = gl.bench(gl.matmul, A, B, variant=v.id, repeat=repeat,
                             peers=v.name == "cublaslt")
                results[v.name] = row(r, **info)
            ref = results.get("cublaslt")
            for r in results.values():
                r["frac_cublas"] = ref["median_ms"] / r["median_ms"] if ref else None
                r["tflops"] = 2 * m * n * k / r["median_ms"] / 1e9
                r["frac_tensor"] = frac_tensor(r["gflops"], dtype, ceilings)
                rows.append(r)
    return rows, failures


def half_table(rows):
    """The half-precision rows as the printed table: TFLOP/s, of cuBLASLt, of the ceiling."""
    return gl.Table([{"dtype": r["dtype"], "m x n x k": f"{r['m']} x {r['n']} x {r['k']}",
                      "variant": r["variant"], "kernels": " ".join(r.get("kernels", [])),
                      "median_ms": r["median_ms"], "tflops": r["tflops"],
                      "frac_cublas": r["frac_cublas"], "frac_tensor": r["frac_tensor"],
                      "frac_copy": r["frac_copy"],
                      **{k: v for k, v in r.items() if k.startswith("over_")}} for r in rows])


def half_only(repeat, quick):
    """--half: the square ladder and the odd shapes, saved as linalg_half.json; exits 1 when a
    rung's result was wrong at an odd shape."""
    ceilings = gl.ceilings()
    tensor = {key: ceilings.get(key) for key in ("tensor_f16_gflops", "tensor_bf16_gflops",
                                                 "tensor_tf32_gflops")}
    print(gl.device_info()["name"], "tensor-core ceilings (GFLOP/s):", tensor)
    sizes = [512] if quick else [4096, 8192]
    half = half_ladder(sizes, repeat, ceilings)
    print(half_table(half))
    shapes = ((129, 127, 125), (1, 512, 512), (512, 512, 64)) if quick else ODD_SHAPES
    odd, failures = half_odd_shapes(repeat, ceilings, shapes)
    print(half_table(odd))
    settings = {"repeat": repeat, "rounds": HALF_ROUNDS, "rest_s": HALF_REST_S, "sizes": sizes,
                "odd_shapes": [list(s) for s in shapes], "checked_rows": CHECKED_ROWS,
                "flush_l2": {"square": False, "odd_shapes": True}}
    save("linalg_half", settings, {"ceilings": {**tensor, "fma_gflops": ceilings["fma_gflops"],
                                                "copy_gbps": ceilings["copy_gbps"],
                                                "method": ceilings["method"]},
                                   "half": half, "half_odd": odd, "wrong": failures})
    if failures:
        sys.exit(f"wrong results at odd shapes: {', '.join(failures)}")


def row(r, **extra):
    peers = {name: p["median_ms"] for name, p in (r.peers or {}).items()}
    return {**extra, "variant": r.variant_name, "id": r.variant, "median_ms": r.median_ms,
            "min_ms": r.min_ms, "max_ms": r.max_ms, "gbps": r.gbps, "gflops": r.gflops,
            "frac_copy": r.frac_copy, "frac_fma": r.frac_fma, "peers_ms": peers,
            **{f"over_{name}": ms / r.median_ms for name, ms in peers.items()}}


def matvec_ladder(n, repeat, dtypes=(np.float32, np.float64)):
    rows = []
    rng = np.random.default_rng(1)
    for dtype in dtypes:
        A = gl.to_device(rng.standard_normal((n, n)).astype(dtype))
        x = gl.to_device(rng.standard_normal(n).astype(dtype))
        for v in cuda_variants("matvec"):
            r = gl.bench(gl.matvec, A, x, variant=v.id, repeat=repeat, peers=v.name == "cublas")
            rows.append(row(r, dtype=np.dtype(dtype).name, m=n, n=n))
    return rows


def matvec_scaling(repeat):
    """S2's table: square 10 ... 10000 and 10 x 10000, GPU (best, cuBLAS) and every CPU rung."""
    rows = []
    rng = np.random.default_rng(2)
    best = next(v for v in cuda_variants("matvec") if v.best)
    for m, n in ((10, 10), (100, 100), (1000, 1000), (10000, 10000), (10, 10000)):
        A = rng.standard_normal((m, n))
        x = rng.standard_normal(n)
        dA, dx = gl.to_device(A), gl.to_device(x)
        for v in gl.variants("matvec"):
            if v.backend == "cuda" and v.id not in (best.id, 4):
                continue
            args = (dA, dx) if v.backend == "cuda" else (A, x)
            r = gl.bench(gl.matvec, *args, variant=v.id,
                         repeat=repeat if v.backend == "cuda" or m * n <= 10 ** 6 else 3)
            rows.append(row(r, dtype="float64", m=m, n=n, backend=v.backend))
    return rows


def matmul_ladder(sizes, repeat, only=None, rest_s=0.0):
    """Every CUDA matmul variant (or those named in `only`) at s^3 float32 for s in sizes, after
    rest_s seconds of rest each; frac_cublas against cublas, or cublas_tf32 for the TF32 rungs."""
    rows = []
    rng = np.random.default_rng(3)
    for s in sizes:
        A = gl.to_device(rng.standard_normal((s, s)).astype(np.float32))
        B = gl.to_device(rng.standard_normal((s, s)).astype(np.float32))
        results = {}
        for v in cuda_variants("matmul"):
            if only and v.name not in only:
                continue
            if v.name in ("naive", "coalesced") and s > 4096:
                continue  # minutes per call at 8192^3, and their place in the ladder is set
            time.sleep(rest_s)
            r = gl.bench(gl.matmul, A, B, variant=v.id, repeat=repeat if s < 8192 else 3,
                         peers=v.name == "cublas")
            results[v.name] = row(r, m=s, n=s, k=s)
        for name, r in results.items():
            ref = results.get("cublas_tf32" if "tf32" in name else "cublas")
            r["frac_cublas"] = ref["median_ms"] / r["median_ms"] if ref else None
            rows.append(r)
    return rows


def matmul_skewed(repeat):
    """S0's sweep: m = 1024 i, n = 1024 / i, k = 1024, the same flops at every i."""
    rows = []
    rng = np.random.default_rng(4)
    best = [v for v in cuda_variants("matmul") if v.best or v.name == "cublas"]
    i = 1
    while i <= 1024:
        m, n, k = 1024 * i, 1024 // i, 1024
        A = gl.to_device(rng.standard_normal((m, k)).astype(np.float32))
        B = gl.to_device(rng.standard_normal((k, n)).astype(np.float32))
        for v in best:
            r = gl.bench(gl.matmul, A, B, variant=v.id, repeat=repeat)
            rows.append(row(r, i=i, m=m, n=n, k=k))
        i *= 2
    return rows


def matmul_tunables(s, repeat):
    """Every value of every tunable of each CUDA variant at s^3 (one at a time)."""
    rows = []
    rng = np.random.default_rng(5)
    A = gl.to_device(rng.standard_normal((s, s)).astype(np.float32))
    B = gl.to_device(rng.standard_normal((s, s)).astype(np.float32))
    for v in cuda_variants("matmul"):
        if v.name in ("naive", "coalesced", TOP_RUNG):
            continue  # the top rung's combinations are grid_sweep's
        defaults = {name: t["default"] for name, t in v.tunables.items()}
        accepted = matmul_configurations(v)
        for name, t in v.tunables.items():
            for value in t["values"]:
                if {**defaults, name: value} not in accepted:
                    continue  # refused beside the others' defaults (tf32's stages=5 at bn=256)
                r = gl.bench(gl.matmul, A, B, variant=v.id, repeat=repeat, **{name: value})
                rows.append(row(r, m=s, n=s, k=s, tunable=name, value=value))
    return rows


def configurations(v):
    """Every combination of v's tunables that matmul accepts (each a compiled instance):
    multistage's 128-row tiles at 4 and 8 warps and its 256-row tiles at 8."""
    return matmul_configurations(v)


def label(config):
    return " ".join(f"{k}={x}" for k, x in config.items())


def grid_sweep(sizes, matmul):
    """The top rung at every configuration of its grid at each size (not one tunable at a time:
    the combinations are what the default must be chosen from), GRID_REPEAT repetitions each,
    as a fraction of the ladder's cuBLAS at that size (measured in the same run)."""
    rows = []
    rng = np.random.default_rng(7)
    v = next(v for v in cuda_variants("matmul") if v.name == TOP_RUNG)
    for s in sizes:
        A = gl.to_device(rng.standard_normal((s, s)).astype(np.float32))
        B = gl.to_device(rng.standard_normal((s, s)).astype(np.float32))
        cublas = next((r for r in matmul if r["m"] == s and r["variant"] == "cublas"), None)
        for kw in configurations(v):
            r = gl.bench(gl.matmul, A, B, variant=v.id, repeat=GRID_REPEAT, **kw)
            out = row(r, m=s, n=s, k=s, config=kw,
                      default=all(v.tunables[k]["default"] == x for k, x in kw.items()))
            out["frac_cublas"] = cublas["median_ms"] / r.median_ms if cublas else None
            rows.append(out)
        print(gl.Table([{"m": r["m"], "config": label(r["config"]), "median_ms": r["median_ms"],
                         "gflops": r["gflops"], "frac_cublas": r["frac_cublas"]}
                        for r in rows if r["m"] == s]))
    return rows


def grid_best(grid):
    """The fastest configuration of the top rung at each size, and where its default stands."""
    out = {}
    for s in sorted({r["m"] for r in grid}):
        at = [r for r in grid if r["m"] == s]
        best = min(at, key=lambda r: r["median_ms"])
        default = next((r for r in at if r["default"]), None)
        out[str(s)] = {"config": best["config"], "median_ms": best["median_ms"],
                       "gflops": best["gflops"], "frac_cublas": best["frac_cublas"],
                       "frac_fma": best["frac_fma"],
                       "default_frac_of_best": (best["median_ms"] / default["median_ms"]
                                             if default else None)}
    return out


def transpose_ladder(n, repeat):
    rng = np.random.default_rng(6)
    A = gl.to_device(rng.standard_normal((n, n)).astype(np.float32))
    rows = []
    for v in cuda_variants("transpose"):
        for tile in v.tunables.get("tile", {}).get("values", [None]):
            kw = {} if tile is None else {"tile": tile}
            r = gl.bench(gl.transpose, A, variant=v.id, repeat=repeat, peers=v.best, **kw)
            rows.append(row(r, rows=n, cols=n, **kw))
    return rows


def best_sgemm(matmul, grid, s):
    """The hand-written SGEMM row closest to cuBLAS at s^3: the ladder at its defaults and every
    configuration of the top rung's grid; None when none was measured."""
    hand = [r for r in matmul + grid if r["m"] == s and r["variant"] in HAND_WRITTEN_SGEMM]
    return max(hand, key=lambda r: r["frac_cublas"] or 0) if hand else None


def best_transpose(transpose):
    return max(transpose, key=lambda r: r["frac_copy"])


def best_matvec(matvec):
    """(the float32 cuBLAS row, the fastest hand-written float32 row)."""
    f32 = [r for r in matvec if r.get("dtype") == "float32"]
    cublas = next(r for r in f32 if r["variant"] == "cublas")
    return cublas, min((r for r in f32 if r["variant"] != "cublas"), key=lambda r: r["median_ms"])


def summarize(matvec, matmul, transpose, grid):
    out = {"targets": {}, "sgemm_top_rung_best": grid_best(grid)}
    for s in (4096, 8192):
        best = best_sgemm(matmul, grid, s)
        if best:
            out[f"sgemm_best_{s}"] = {"variant": best["variant"], "config": best.get("config"),
                                      "frac_cublas": best["frac_cublas"],
                                      "frac_fma": best["frac_fma"]}
            out["targets"][f"sgemm >= 0.9x cuBLAS at {s}^3"] = (best["frac_cublas"] or 0) >= 0.9
    best_t = best_transpose(transpose)
    out["transpose_best"] = {"variant": best_t["variant"], "frac_copy": best_t["frac_copy"],
                             "over_cupy": best_t.get("over_cupy")}
    out["targets"]["transpose >= 0.9x copy"] = best_t["frac_copy"] >= 0.9
    cublas, best_m = best_matvec(matvec)
    out["matvec_best"] = {"variant": best_m["variant"],
                          "over_cublas": cublas["median_ms"] / best_m["median_ms"]}
    out["targets"]["matvec >= 1.0x cuBLAS SGEMV"] = cublas["median_ms"] >= best_m["median_ms"]
    return out


def sgemm_grid_only(repeat, sizes):
    """The decision the top rung's default waits on, alone: the ladder's cuBLAS and
    double_buffered (the current default) and the top rung at its defaults, then its grid."""
    settings = {"repeat": repeat, "grid_repeat": GRID_REPEAT, "top_rung": TOP_RUNG,
                "matmul_sizes": sizes}
    matmul = matmul_ladder(sizes, repeat, only=("cublas", "double_buffered", TOP_RUNG))
    print(gl.Table(matmul))
    grid = grid_sweep(sizes, matmul)
    summary = {"sgemm_top_rung_best": grid_best(grid)}
    for s in sizes:
        best = best_sgemm(matmul, grid, s)
        summary[f"sgemm_best_{s}"] = {"variant": best["variant"], "config": best.get("config"),
                                      "frac_cublas": best["frac_cublas"],
                                      "frac_fma": best["frac_fma"]}
    print(summary)
    save("linalg_sgemm_grid", settings, {"fma_gflops": gl.ceilings()["fma_gflops"],
                                         "summary": summary, "matmul": matmul,
                                         "matmul_grid": grid})


# The TF32 rows of the FP32 ladder: its two TF32 rungs beside cuBLAS with TF32 on (their
# reference) and off.
TF32_ROWS = ("cublas", "tf32_wmma", "tf32", "tf32_cluster", "cublas_tf32")


def tf32_only(repeat, sizes):
    """The TF32 rungs alone at 4096^3 and 8192^3 (the FP32 ladder's rows, frac_cublas against
    cublas_tf32), then tf32's and tf32_cluster's every (bn, stages) at each size, each after
    HALF_REST_S of rest, saved as linalg_tf32.json."""
    matmul = matmul_ladder(sizes, repeat, only=TF32_ROWS, rest_s=HALF_REST_S)
    print(gl.Table([{"m": r["m"], "variant": r["variant"], "median_ms": r["median_ms"],
                     "tflops": r["gflops"] / 1e3, "frac_cublas": r["frac_cublas"]}
                    for r in matmul]))
    rng = np.random.default_rng(8)
    grid = []
    for s in sizes:
        A = gl.to_device(rng.standard_normal((s, s)).astype(np.float32))
        B = gl.to_device(rng.standard_normal((s, s)).astype(np.float32))
        ref = next(r for r in matmul if r["m"] == s and r["variant"] == "cublas_tf32")
        for v in cuda_variants("matmul"):
            if v.name not in ("tf32", "tf32_cluster"):
                continue
            for kw in configurations(v):
                time.sleep(HALF_REST_S)
                r = gl.bench(gl.matmul, A, B, variant=v.id, repeat=GRID_REPEAT, **kw)
                out = row(r, m=s, n=s, k=s, config=kw)
                out["frac_cublas"] = ref["median_ms"] / r.median_ms
                grid.append(out)
    print(gl.Table([{"m": r["m"], "variant": r["variant"], "config": label(r["config"]),
                     "median_ms": r["median_ms"],
                     "tflops": r["gflops"] / 1e3, "frac_cublas": r["frac_cublas"]}
                    for r in grid]))
    save("linalg_tf32", {"repeat": repeat, "grid_repeat": GRID_REPEAT, "sizes": sizes,
                         "rest_s": HALF_REST_S},
         {"matmul": matmul, "tf32_grid": grid})


# The four ways A and B can lie: each C-contiguous, or a transposed view (x.T of a C-contiguous
# (cols, rows) tensor), as users pass them.
LAYOUTS = {"A B": (False, False), "A.T B": (True, False), "A B.T": (False, True),
           "A.T B.T": (True, True)}
# What --layouts times on each dtype: the default call (variant None), the tensor-core rungs
# that read transposed operands in place, and cuBLAS(Lt) given the transposes as its op flags.
LAYOUT_VARIANTS = {"float16": (None, "wgmma_cluster", "wgmma_ws", "cublaslt"),
                   "float32": ("tf32", "tf32_cluster", "cublas_tf32")}


def layout_view(torch, rng, rows, cols, transposed, dtype):
    """A rows x cols torch matrix on the GPU: C-contiguous, or the .T view of a (cols, rows) one."""
    shape = (cols, rows) if transposed else (rows, cols)
    t = torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).cuda().to(dtype)
    return t.T if transposed else t


def layouts_only(repeat, s):
    """--layouts: gl.matmul on transposed views at s^3 for each layout: each rung on DeviceArray
    views of torch tensors (gl.from_dlpack, the strides kept: gpulab's own container), the
    default call also on the torch tensors themselves (the user's call, each call importing
    them), against torch.matmul on the same views (float32 with TF32 allowed, against the TF32
    rungs); each C first checked against a float64 product. Saved as linalg_layouts.json."""
    import torch
    rng = np.random.default_rng(9)
    rows = []
    names = {v.name for v in cuda_variants("matmul", "float16")} | {
        v.name for v in cuda_variants("matmul")}
    for dtype_name, variants in LAYOUT_VARIANTS.items():
        dtype = getattr(torch, dtype_name)
        for layout, (a_t, b_t) in LAYOUTS.items():
            A = layout_view(torch, rng, s, s, a_t, dtype)
            B = layout_view(torch, rng, s, s, b_t, dtype)
            dA, dB = gl.from_dlpack(A), gl.from_dlpack(B)
            C64 = torch.matmul(A.double(), B.double())
            scale = C64.abs().max().item()
            torch.backends.cuda.matmul.allow_tf32 = dtype_name == "float32"
            time.sleep(HALF_REST_S)
            peer = gl.bench(lambda: torch.matmul(A, B), repeat=repeat, budget_s=float("inf"),
                            flush_l2=False)
            for name in variants:
                if name is not None and name not in names:
                    continue
                C = gl.matmul(dA, dB, variant=name)
                error = (torch.from_dlpack(C).double() - C64).abs().max().item() / scale
                time.sleep(HALF_REST_S)
                r = gl.bench(gl.matmul, dA, dB, variant=name, repeat=repeat, flush_l2=False)
                out = {"dtype": dtype_name, "layout": layout, "m": s, "n": s, "k": s,
                       "variant": name or f"default ({r.variant_name})",
                       "median_ms": r.median_ms, "tflops": 2 * s ** 3 / r.median_ms / 1e9,
                       "torch_ms": peer.median_ms, "over_torch": peer.median_ms / r.median_ms,
                       "max_error_over_max_c": error,
                       "kernels": kernels_launched(lambda: gl.matmul(dA, dB, variant=name))}
                if name is None:  # the user's call on the torch tensors as they are
                    time.sleep(HALF_REST_S)
                    user = gl.bench(gl.matmul, A, B, repeat=repeat, flush_l2=False)
                    out["torch_in_ms"] = user.median_ms
                    out["torch_in_over_torch"] = peer.median_ms / user.median_ms
                rows.append(out)
    print(gl.Table([{k: v for k, v in r.items() if k not in ("m", "n", "k")} for r in rows]))
    bad = [f"{r['dtype']} {r['layout']} {r['variant']}" for r in rows
           if not r["max_error_over_max_c"] < 1e-2]
    save("linalg_layouts", {"repeat": repeat, "size": s, "rest_s": HALF_REST_S,
                            "flush_l2": False, "layouts": list(LAYOUTS),
                            "operands": "DeviceArray views of torch tensors (gl.from_dlpack); "
                                        "torch_in_ms: the default call on the tensors",
                            "peer": "torch.matmul on the same views (allow_tf32 on for float32)",
                            "error": "max |C - C64| / max |C64| against torch's float64 product"},
         {"layouts": rows, "wrong": bad})
    if bad:
        sys.exit(f"wrong results: {', '.join(bad)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes only (a check of the script, not a measurement)")
    parser.add_argument("--half", action="store_true",
                        help="only the tensor-core ladder (float16, bfloat16) at 4096^3 and "
                             "8192^3 and the odd shapes, against cuBLASLt and the measured "
                             "tensor-core ceilings, saved as linalg_half.json")
    parser.add_argument("--tf32", action="store_true",
                        help="only the TF32 rows (cublas, tf32_wmma, tf32, tf32_cluster, "
                             "cublas_tf32) and tf32's and tf32_cluster's (bn, stages) grids at "
                             "4096^3 and 8192^3, saved as linalg_tf32.json")
    parser.add_argument("--layouts", action="store_true",
                        help="only transposed views (A.T, B.T) of torch tensors at 4096^3: the "
                             "default call, the tensor-core rungs that read them in place and "
                             "cuBLAS, against torch.matmul, saved as linalg_layouts.json")
    parser.add_argument("--sgemm-grid", action="store_true",
                        help="only cuBLAS, double_buffered and the top rung's full grid at 4096^3 "
                             "and 8192^3, saved as linalg_sgemm_grid.json")
    args = parser.parse_args()
    require_gpu()
    if args.sgemm_grid:
        return sgemm_grid_only(args.repeat, [512] if args.quick else [4096, 8192])
    if args.tf32:
        return tf32_only(args.repeat, [512] if args.quick else [4096, 8192])
    if args.half:
        return half_only(args.repeat, args.quick)
    if args.layouts:
        return layouts_only(args.repeat, 512 if args.quick else 4096)
    quick = args.quick
    settings = {"repeat": args.repeat, "grid_repeat": GRID_REPEAT, "top_rung": TOP_RUNG,
                "matvec_n": 2048 if quick else 16384,
                "matmul_sizes": [256, 512] if quick else [1024, 4096, 8192],
                "tunable_size": 512 if quick else 4096,
                "transpose_n": 2048 if quick else 16384}
    ceilings = gl.ceilings()
    print(gl.device_info()["name"], settings, "copy", ceilings["copy_gbps"], "GB/s, FMA",
          ceilings["fma_gflops"], "GFLOP/s")
    matvec = matvec_ladder(settings["matvec_n"], args.repeat)
    print(gl.Table(matvec))
    scaling = [] if quick else matvec_scaling(args.repeat)
    matmul = matmul_ladder(settings["matmul_sizes"], args.repeat)
    print(gl.Table(matmul))
    skewed = [] if quick else matmul_skewed(args.repeat)
    tunables = matmul_tunables(settings["tunable_size"], args.repeat)
    grid = grid_sweep(settings["matmul_sizes"], matmul)
    half = half_ladder([512] if quick else [4096, 8192], args.repeat, ceilings)
    print(half_table(half))
    transpose = transpose_ladder(settings["transpose_n"], args.repeat)
    print(gl.Table(transpose))
    summary = summarize(matvec, matmul, transpose, grid)
    print(summary)
    save("linalg_lab", settings, {"copy_gbps": ceilings["copy_gbps"],
                                  "fma_gflops": ceilings["fma_gflops"], "summary": summary,
                                  "matvec": matvec, "matvec_scaling": scaling, "matmul": matmul,
                                  "matmul_skewed": skewed, "matmul_tunables": tunables,
                                  "matmul_grid": grid, "half": half,
                                  "transpose": transpose})


if __name__ == "__main__":
    main()
