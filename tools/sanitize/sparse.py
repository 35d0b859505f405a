"""The sparse lab's kernels under compute-sanitizer: every CUDA variant of spmv and spmm (B of 1, 4,
5 and 33 columns) with every block size it takes, on the awkward matrices of
tests/references/sparse.py (S3's 4 x 4 example, 0 x 0, all empty, empty rows, one huge row, tall,
wide, duplicates, long rows: every SELL window partial or whole, merge-path shares cut inside rows
and at their ends), int32 and int64 indices, float32 and float64, from NumPy and from device inputs.
Every result checked against scipy's float64 product within tests/references/sparse.py's bound. The
generic ops.py cannot reach the index dtypes and the matrices: this driver does. See _common.py.

    python3 tools/sanitize/sparse.py [--inputs both|device] [--only spmv:id,spmm:id,...]
"""

import sys

from _common import done, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import sparse as ref  # noqa: E402


SPMM_KS = (1, 4, 5, 33)


def runs(args, fn, host_args, device_args, v, block):
    """(where, NumPy result) of fn on device arguments and, with --inputs both, on NumPy ones."""
    out = [("device", fn(*device_args, variant=v.id, block=block))]
    settle()
    out[0] = ("device", out[0][1].get())
    if args.inputs == "both":
        out.append(("numpy", fn(*host_args, variant=v.id, block=block)))
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
            for label, raw, A in ref.typed_cases(rng):
                cols, dtype = A.shape[1], A.dtype
                operands = ([rng.standard_normal(cols).astype(dtype)] if op == "spmv" else
                            [rng.standard_normal((cols, k)).astype(dtype) for k in SPMM_KS])
                for x in operands:
                    for block in blocks:
                        for where, got in runs(args, fn, (A, x), (A.to_device(), gl.to_device(x)),
                                               v, block):
                            try:
                                check(got, *raw, x, dtype)
                            except AssertionError as e:
                                sys.exit(f"mismatch: {op} {v.name} {where} {label} "
                                         f"block={block}: {e}")
                            calls += 1
    done("sanitize/sparse", calls)


if __name__ == "__main__":
    main()
