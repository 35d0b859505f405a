"""The multi lab's own code under the sanitizers: its allocations on each GPU, its copies, and
the reduce lab's best kernel (variant 12) that it runs on each GPU's part, at the awkward sizes,
from NumPy parts (which the lab allocates and copies itself, at their exact sizes) and from
DeviceArray parts made by gl.multi.to_device; each result checked against NumPy.

The partitioned reduce runs on GPU 0 alone (one part: no NCCL), so that no NCCL kernel is put
before the sanitizer; with --nccl and two GPUs it also runs over every GPU through NCCL.
gl.multi.jacobi (the stencil lab's row/plane-range sweeps on slabs with ghost rows: fused, and
in 2D the temporal passes with halos as deep) runs on GPU 0 alone and, with two GPUs, over both
with p2p halo copies (no NCCL kernel; --nccl adds the nccl exchange), at awkward shapes, each
bitwise against gl.jacobi's same variant.
See _common.py.

    python3 tools/sanitize/multi.py [--nccl] [--inputs both|device]
"""

import numpy as np

from _common import KERNEL_SIZES, SIZES, gl, require, start

# tools/gpu-check.sh spreads the other drivers' runs over the GPUs, one each; this one needs them
# all (the two-GPU jacobi and reduce).
SANITIZE_ALL_GPUS = True


def add_arguments(parser):
    parser.add_argument("--nccl", action="store_true",
                        help="also reduce over every GPU through NCCL (needs two GPUs)")


def check(got, x, op):
    if op == "sum" and x.dtype.kind == "f":
        ref = x.astype(np.float64).sum()
        bound = np.finfo(x.dtype).eps * (np.log2(x.size + 2) + 2) * np.abs(x).astype(np.float64).sum()
        return abs(float(got) - ref) <= bound
    if op == "sum":
        return got == x.astype(np.int64).sum()
    return got == (x.min() if op == "min" else x.max())


def main():
    args, rng = start(__doc__, add_arguments)
    sizes = SIZES if args.inputs == "both" else KERNEL_SIZES
    gpus = gl._core._multi_device_count()
    for dtype in (np.float32, np.float64, np.int32):
        for n in sizes:
            x = (rng.standard_normal(n) if dtype != np.int32 else
                 rng.integers(-1000, 1000, n)).astype(dtype)
            for op in ("sum", "min", "max"):
                if n == 0 and op != "sum":
                    continue
                if args.inputs == "both":
                    require(check(gl.multi.reduce(x, op, gpus=[0]), x, op),
                            f"reduce {op} {np.dtype(dtype)} n={n} (NumPy)")
                require(check(gl.multi.reduce(gl.multi.to_device(x, 0), op), x, op),
                        f"reduce {op} {np.dtype(dtype)} n={n} (device)")
                if args.nccl and gpus >= 2:
                    require(check(gl.multi.reduce(x, op), x, op),
                            f"reduce {op} {np.dtype(dtype)} n={n} over {gpus} GPUs")
            require(np.array_equal(gl.multi.to_host(gl.multi.to_device(x, gpus - 1)), x),
                    f"to_device/to_host n={n} on GPU {gpus - 1}")
    for shape in [(5, 7), (37, 68), (3, 5, 6), (19, 10, 13)]:
        for dtype in (np.float32, np.float64):
            f = rng.standard_normal(shape).astype(dtype)
            u0 = rng.standard_normal(shape).astype(dtype)
            runs = [([0], "p2p")]
            if gpus >= 2:
                runs.append(([0, 1], "p2p"))
                if args.nccl:
                    runs.append(([0, 1], "nccl"))
            cases = [("fused", 7, 3)]
            if len(shape) == 2:  # temporal: passes with and without a check (one launch a slab)
                cases += [("temporal", 7, 3), ("temporal", 13, 10)]
            for variant, iters, every in cases:
                ref = gl.jacobi(gl.to_device(f), gl.to_device(u0), iters=iters, check_every=every,
                                variant=variant).get()
                for on, exchange in runs:
                    for overlap in (True, False):
                        got = gl.multi.jacobi(f, u0, iters=iters, check_every=every, gpus=on,
                                              exchange=exchange, overlap=overlap, variant=variant)
                        require(got.u.tobytes() == ref.u.tobytes() and
                                got.residuals.tobytes() == ref.residuals.tobytes(),
                                f"jacobi {variant} {shape} {np.dtype(dtype)} iters={iters} "
                                f"gpus={on} {exchange} overlap={overlap}")
    print("sanitize/multi: the multi lab's copies, local reduces and Jacobi ran and checked out")


if __name__ == "__main__":
    main()
