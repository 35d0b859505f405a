"""The sparse lab's kernels under compute-sanitizer: every CUDA variant of spmv and spmm (B of 1, 4,
5 and 33 columns) with every block size it takes (csr_subwarp also with every lanes value, at its
default block), on the awkward matrices of
tests/references/sparse.py (S3's 4 x 4 example, 0 x 0, all empty, empty rows, one huge row, tall,
wide, duplicates, long rows: every SELL window partial or whole, merge-path shares cut inside rows
and at their ends), int32 and int64 indices, float32 and float64, from NumPy and from device inputs.
Every result checked against scipy's float64 product within tests/references/sparse.py's bound. The
generic ops.py cannot reach the index dtypes and the matrices: this driver does. See _common.py.

cg: every CUDA variant on small SPD matrices (0 x 0, 1 x 1, the shifted 2D Laplacian, rows of 39
entries that merge-path shares cut in three or more parts), float32 and float64, int32 and int64
indices: 3 iterations from zero without M, and solved to rtol from an x0 with Jacobi (that one
also with every block size on the Laplacian), each x checked against tests/references/sparse.py's
float64 CG.

analysis (--only analysis): the device row statistics and diagonal count of every awkward matrix,
against NumPy's; rmat (--only rmat): gl.sparse.rmat at scales 1-9, even and odd, float32 and
float64, against its NumPy path entry for entry.

    python3 tools/sanitize/sparse.py [--inputs both|device] [--only spmv:id,spmm:id,cg:id,
                                      analysis,rmat,...]
"""

import sys

import numpy as np

from _common import done, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import sparse as ref  # noqa: E402

# tools/gpu-check.sh runs 4 processes a tool (--shard k/4): in one,
# memcheck's and initcheck's ran past 520 s on the H200, beside the other drivers.
SANITIZE_SHARDS = 4
# ops.py leaves these ops here: this driver runs each CUDA variant with every tunable that ops.py
# would, from NumPy and device inputs, at shapes chosen for its kernels
OPS_COVERED = ("spmv", "spmm", "cg")


SPMM_KS = (1, 4, 5, 33)


def runs(args, fn, host_args, device_args, v, tunables):
    """(where, NumPy result) of fn on device arguments and, with --inputs both, on NumPy ones."""
    out = [("device", fn(*device_args, variant=v.id, **tunables))]
    settle()
    out[0] = ("device", out[0][1].get())
    if args.inputs == "both":
        out.append(("numpy", fn(*host_args, variant=v.id, **tunables)))
        settle()
    return out


def main():
    args, rng = start(__doc__)
    calls = 0
    for op in ("spmv", "spmm"):
        fn = getattr(gl, op)
        check = ref.check_spmv_arrays if op == "spmv" else ref.check_spmm_arrays
        for v in gl.variants(op):
            if v.backend != "cuda" or not wanted(args, f"{op}:{v.id}"):
                continue
            blocks = v.tunables.get("block", {}).get("values", [None])
            settings = [{"block": block} for block in blocks] + [
                {"lanes": lanes} for lanes in v.tunables.get("lanes", {}).get("values", [])]
            for label, raw, A in ref.typed_cases(rng):
                cols, dtype = A.shape[1], A.dtype
                operands = ([rng.standard_normal(cols).astype(dtype)] if op == "spmv" else
                            [rng.standard_normal((cols, k)).astype(dtype) for k in SPMM_KS])
                for x in operands:
                    for tunables in settings:
                        for where, got in runs(args, fn, (A, x), (A.to_device(), gl.to_device(x)),
                                               v, tunables):
                            try:
                                check(got, *raw, x, dtype)
                            except AssertionError as e:
                                sys.exit(f"wrong result: {op} {v.name} {where} {label} "
                                         f"{tunables}: {e}")
                            calls += 1
    calls += cg_calls(args, rng)
    calls += analysis_calls(args, rng) + rmat_calls(args)
    done("sanitize/sparse", calls)


def analysis_calls(args, rng):
    """The device statistics (cuda/sparse/stats.cu) and diagonal count of each awkward matrix."""
    if not wanted(args, "analysis"):
        return 0
    calls = 0
    for label, raw, A in ref.typed_cases(rng):
        D = A.to_device()
        got, want = D.row_stats(), gl.sparse.host_row_stats(A.indptr)
        settle()
        if tuple(got) != tuple(want):
            sys.exit(f"wrong result: row statistics {label}: {got} against {want}")
        if A.nnz and D.diagonals() != min(len(gl.sparse.dia_offsets(A)), 33):
            sys.exit(f"wrong result: diagonals {label}: {D.diagonals()}")
        settle()
        calls += 2
    return calls


def rmat_calls(args):
    """gl.sparse.rmat on the device (cuda/sparse/rmat.cu) against its NumPy path."""
    if not wanted(args, "rmat"):
        return 0
    calls = 0
    for scale in range(1, 10):
        for dtype in (np.float32, np.float64):
            got = gl.sparse.rmat(scale, 4, seed=scale, dtype=dtype)
            settle()
            want = gl.sparse.rmat(scale, 4, seed=scale, dtype=dtype, device=False)
            for name in ("indptr", "indices", "data"):
                if not np.array_equal(getattr(got, name).get(), getattr(want, name)):
                    sys.exit(f"wrong result: rmat scale {scale} {np.dtype(dtype)}: {name}")
            calls += 1
    return calls


def cg_matrices(dtype, index, dia=False):
    """Small SPD matrices for cg: 0 x 0, 1 x 1, the shifted 2D Laplacian of 5 x 5 and one with
    rows of up to 39 entries (which dia_fused refuses); with dia, the shifted 3D Laplacian of 3^3
    and a band of 31 diagonals too (dia_fused's kernels for up to 8 and 32 diagonals)."""
    import scipy.sparse as sp
    n = 77
    band = sp.diags([np.full(n - k, -0.1) for k in range(1, 20)], list(range(1, 20)))
    wide = (band + band.T + sp.diags(np.linspace(4.0, 8.0, n))).tocsr()
    out = [gl.CSR(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), shape=(0, 0)),
           gl.CSR(np.array([0, 1]), np.array([0]), np.array([3.0]), shape=(1, 1)),
           gl.sparse.poisson2d(5, shift=1.0), gl.CSR(wide)]
    if dia:
        narrow = sp.diags([np.full(n - k, -0.1) for k in range(1, 16)], list(range(1, 16)))
        out += [gl.sparse.poisson3d(3, shift=1.0),
                gl.CSR((narrow + narrow.T + sp.diags(np.linspace(4.0, 8.0, n))).tocsr())]
    return [gl.CSR(A.indptr.astype(index), A.indices.astype(index), A.data.astype(dtype),
                   shape=A.shape) for A in out]


def cg_calls(args, rng):
    calls = 0
    for v in gl.variants("cg"):
        if v.backend != "cuda" or not wanted(args, f"cg:{v.id}"):
            continue
        blocks = v.tunables.get("block", {}).get("values", [None])
        for dtype in (np.float32, np.float64):
            for index in (np.int32, np.int64):
                for A in cg_matrices(dtype, index, v.name == "dia_fused"):
                    if v.name == "dia_fused" and ref.dia_refusal(A):
                        try:  # the refusal, before any kernel of the solve
                            gl.cg(A.to_device(), gl.to_device(np.ones(A.shape[0], dtype)),
                                  variant=v.id)
                        except ValueError:
                            continue
                        sys.exit(f"dia_fused took {A}, which it should refuse")
                    n = A.shape[0]
                    b = rng.standard_normal(n).astype(dtype)
                    x0 = rng.standard_normal(n).astype(dtype)
                    # two solves a matrix: 3 iterations from zero without M, and solved to rtol
                    # from x0 with Jacobi; every block size on the 5 x 5 Laplacian's second solve
                    # only (the whole product of the options ran past 8 minutes under memcheck)
                    sweep = dtype == np.float64 and index == np.int32 and n == 25
                    for M, first, rtol, maxiter in ((None, None, 0.0, 3),
                                                    ("jacobi", x0, 1e-4, None)):
                        for block in blocks if sweep and M else [None]:
                            kw = dict(x0=first, rtol=rtol, maxiter=maxiter, M=M, variant=v.id,
                                      block=block)
                            calls += cg_check(args, A, b, kw)
    return calls


def cg_check(args, A, b, kw):
    """One solve from device inputs (and one from NumPy with --inputs both), each checked against
    the float64 reference CG; the number of solves checked."""
    first = kw["x0"]
    dev = gl.cg(A.to_device(), gl.to_device(b),
                **{**kw, "x0": None if first is None else gl.to_device(first)})
    settle()
    runs = [("device", dev._replace(x=dev.x.get()))]
    if args.inputs == "both":
        runs.append(("numpy", gl.cg(A, b, **kw)))
        settle()
    for where, got in runs:
        try:
            ref.check_cg(got, A, b, first, kw["rtol"], 0.0, kw["maxiter"], kw["M"])
        except AssertionError as e:
            sys.exit(f"wrong result: cg {kw['variant']} {where} {A} {kw}: {e}")
    return len(runs)

if __name__ == "__main__":
    main()
