"""The sparse lab's kernels under compute-sanitizer: every CUDA variant of spmv with every block
size it takes, on the awkward matrices of tests/references/sparse.py (S3's 4 x 4 example, 0 x 0,
all empty, empty rows, one huge row, tall, wide, duplicates, long rows: every SELL window
partial or whole, merge-path shares cut inside rows and at their ends), int32 and int64 indices,
float32 and float64, from NumPy and from device inputs. Every result checked against scipy's
float64 product within tests/references/sparse.py's bound. The generic ops.py cannot reach the
index dtypes and the matrices: this driver does. See _common.py.

    python3 tools/sanitize/sparse.py [--inputs both|device] [--only spmv:id,...]
"""

import sys

import numpy as np

from _common import done, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import sparse as ref  # noqa: E402


def main():
    args, rng = start(__doc__)
    calls = 0
    for v in gl.variants("spmv"):
        if v.backend != "cuda" or not wanted(args, f"spmv:{v.id}"):
            continue
        blocks = v.tunables.get("block", {}).get("values", [None])
        for name, indptr, indices, data, shape in ref.cases(rng):
            for index in (np.int32, np.int64):
                for dtype in (np.float32, np.float64):
                    A = gl.CSR(indptr.astype(index), indices.astype(index), data.astype(dtype),
                               shape=shape)
                    x = rng.standard_normal(shape[1]).astype(dtype)
                    dA, dx = A.to_device(), gl.to_device(x)
                    for block in blocks:
                        runs = [("device", gl.spmv(dA, dx, variant=v.id, block=block))]
                        settle()
                        runs[0] = ("device", runs[0][1].get())
                        if args.inputs == "both":
                            runs.append(("numpy", gl.spmv(A, x, variant=v.id, block=block)))
                            settle()
                        for where, got in runs:
                            try:
                                ref.check_spmv_arrays(got, indptr, indices, data.astype(dtype),
                                                      shape, x, dtype)
                            except AssertionError as e:
                                sys.exit(f"mismatch: spmv {v.name} {where} {name} "
                                         f"{np.dtype(index)} {np.dtype(dtype)} block={block}: "
                                         f"{e}")
                            calls += 1
    done("sanitize/sparse", calls)


if __name__ == "__main__":
    main()
