"""The linalg lab's kernels under compute-sanitizer: every CUDA variant of matvec, matmul and
transpose with every value of each of its tunables (block, tile, tm, bm, bn, bk, stages), and the
top SGEMM rung (multistage) with every combination of its warps, bk and stages, at shapes that
are empty, one, odd, exactly a tile and one past it (8, 16, 32, 64 and the 128-wide block tiles),
tall and skinny and short and wide (for the TF32 rungs also shapes with k % 4 == 0, which their
wgmma kernels take), in float32 and float64 where the variant takes them (float16 and bfloat16
on the tensor-core rungs, into C of their dtype and of float32), from
NumPy and from device inputs; from device views one element past a 16-byte boundary (the
vectorized matvec, matmul and transpose paths fall back to scalar accesses there); and matmul's
operands given transposed (x.T views), read in place or copied to row-major first. Every result
checked against tests/references/linalg.py's bounds (transpose exactly; the copy variant as a
copy). See _common.py.

    python3 tools/sanitize/linalg.py [--inputs both|device] [--only op:id,...]
"""

import sys

import numpy as np

from _common import TOOL, done, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import linalg as ref  # noqa: E402

from gpulab.labs.linalg import matmul_configurations  # noqa: E402

# tools/gpu-check.sh runs 3 processes a tool (--shard k/3): in one,
# racecheck's took 489 s on the H200, beside the other drivers.
SANITIZE_SHARDS = 3
# ops.py leaves these ops here: this driver runs each CUDA variant with every tunable that ops.py
# would, from NumPy and device inputs, at shapes chosen for its kernels
OPS_COVERED = ("matvec", "matmul", "transpose")

MATVEC_SHAPES = [(0, 5), (5, 0), (1, 1), (7, 3), (33, 33), (3, 257), (1000, 3), (3, 4099),
                 (257, 129)]
MATMUL_SHAPES = [(0, 3, 4), (3, 0, 4), (1, 1, 1), (7, 5, 3), (32, 32, 32), (33, 33, 33),
                 (64, 16, 64), (129, 65, 131), (128, 8, 128), (257, 9, 2), (2, 17, 257),
                 (130, 70, 132)]
# The TF32 rung runs its wgmma kernel only where k % 4 == 0 (elsewhere tf32_wmma's): shapes of
# its own beside MATMUL_SHAPES, with partial row and column tiles, k of one slice plus a 16-byte
# row and of several slices, and n odd.
TF32_SHAPES = [(1, 4, 1), (130, 36, 133), (257, 132, 300), (129, 68, 2)]
TF32_RUNGS = ("tf32", "tf32_cluster")
# Operands given transposed (x.T, F-contiguous): shapes where the wgmma rungs' TMA reads every
# layout in place (every row a multiple of 8), B.T only (m % 8 != 0), none (odd), and k % 4 ==
# 0 for the TF32 rungs' wgmma kernels; the last two with A.T in both warpgroups' boxes, two
# column tiles, and a cluster's second block.
TRANSPOSED_SHAPES = [(1, 5, 3), (7, 5, 3), (64, 48, 72), (129, 40, 136), (130, 36, 133),
                     (136, 72, 264), (264, 40, 136)]
TRANSPOSE_SHAPES = [(0, 7), (1, 1), (9, 1), (31, 33), (32, 32), (33, 65), (64, 64), (65, 64),
                    (64, 68), (1000, 3), (3, 1000), (129, 257)]


class Runner:
    def __init__(self, args, rng):
        self.args, self.rng, self.calls = args, rng, 0

    def variants(self, op):
        out = [v for v in gl.variants(op)
               if v.backend == "cuda" and wanted(self.args, f"{op}:{v.id}")]
        if TOOL == "initcheck":
            for v in out:
                if v.name in INITCHECK_BLIND:
                    print(f"{op}[{v.id}] {v.name}: left to memcheck, racecheck and synccheck "
                          f"(initcheck {INITCHECK_BLIND[v.name]})")
            out = [v for v in out if v.name not in INITCHECK_BLIND]
        return out

    def check(self, check, what, *args):
        try:
            check(*args)
        except AssertionError as e:
            sys.exit(f"wrong result: {what}: {e}")
        self.calls += 1

    def run(self, fn, check, v, host, kw, what):
        """fn on device copies of host (and on host itself with --inputs both), each result
        checked by check(got, *host)."""
        got = fn(*[gl.to_device(a) for a in host], variant=v.id, **kw)
        settle()
        self.check(check, f"{fn.__name__} {v.name} device {what} {kw}", got.get(), *host)
        if self.args.inputs == "both":
            got = fn(*host, variant=v.id, **kw)
            settle()
            self.check(check, f"{fn.__name__} {v.name} numpy {what} {kw}", got, *host)


# Variants whose every combination of tunables is driven (each combination is its own compiled
# instantiation); the others' tunables one at a time, which keeps racecheck's run short.
FULL_GRID = ("multistage", "wgmma", "wgmma_ws", "tf32", "wgmma_cluster", "tf32_cluster")
# The rungs whose writes of C initcheck does not see, and why: it then reports every C they
# write as never written, although every result is checked right.
_TMA_STORES = ("does not see their TMA stores of C, cp.async.bulk.tensor, and reports every C "
               "they write as never written")
INITCHECK_BLIND = {
    "wgmma_cluster": _TMA_STORES,
    "tf32_cluster": _TMA_STORES,
    # on the H200 (CUDA 13): 62403 reports in its 160 calls, every one a read of C by the copy
    # to the host, with every result right and memcheck, racecheck and synccheck clean: the
    # pattern of our own TMA-store rungs, in NVIDIA's kernels, which we cannot change
    "cublaslt": "reports every C that cuBLASLt's Hopper kernels write as never written",
}
# The rungs that read transposed operands in place, each layout its own instantiations: every
# configuration of theirs runs on the transposed layouts too.
LAYOUT_GRID = ("wgmma", "wgmma_ws", "tf32", "wgmma_cluster", "tf32_cluster")


def settings(v):
    """The tunables to run v with: every combination for FULL_GRID's variants, else each value
    of each tunable one at a time, the others at their defaults; [{}] without tunables."""
    if v.name in FULL_GRID:
        return matmul_configurations(v)
    out = [{}]
    for name, t in v.tunables.items():
        out += [{name: value} for value in t["values"] if value != t["default"]]
    if v.op != "matmul":
        return out
    # a value beside the others' defaults that matmul refuses by name (none today) is left out
    defaults = {name: t["default"] for name, t in v.tunables.items()}
    accepted = matmul_configurations(v)
    return [kw for kw in out if {**defaults, **kw} in accepted]


def dtypes(v):
    """v's float dtypes, float16's (the tensor-core rungs) included; bfloat16 where ml_dtypes
    gives NumPy one."""
    out = [np.dtype(d) for d in v.dtypes if d in ("float32", "float64", "float16")]
    if "bfloat16" in v.dtypes:
        try:
            import ml_dtypes
            out.append(np.dtype(ml_dtypes.bfloat16))
        except ImportError:
            pass
    return out


def out_dtypes(dtype):
    """The output dtypes a matmul of dtype takes: its own, and float32 for the half types."""
    return [None, np.float32] if dtype.itemsize == 2 else [None]


def matvec(r):
    for v in r.variants("matvec"):
        for kw in settings(v):
            for dtype in dtypes(v):
                for m, n in MATVEC_SHAPES:
                    A = r.rng.standard_normal((m, n)).astype(dtype)
                    x = r.rng.standard_normal(n).astype(dtype)
                    r.run(gl.matvec, ref.check_matvec, v, (A, x), kw, f"{dtype} {m}x{n}")
        # A and x one element past a 16-byte boundary
        m, n = 37, 64
        A = r.rng.standard_normal(m * n + 1).astype(np.float32)
        x = r.rng.standard_normal(n + 1).astype(np.float32)
        got = gl.matvec(View(gl.to_device(A), (m, n), 4), View(gl.to_device(x), (n,), 4),
                        variant=v.id)
        settle()
        r.check(ref.check_matvec, f"matvec {v.name} view", got.get(), A[1:].reshape(m, n), x[1:])


def matmul(r):
    for v in r.variants("matmul"):
        for kw in settings(v):
            for dtype in dtypes(v):
                for out in out_dtypes(dtype):
                    shapes = MATMUL_SHAPES + (TF32_SHAPES if v.name in TF32_RUNGS else [])
                    for m, k, n in shapes:
                        A = r.rng.standard_normal((m, k)).astype(dtype)
                        B = r.rng.standard_normal((k, n)).astype(dtype)

                        def check(got, A, B, v=v):
                            ref.check_matmul(got, A, B, variant=v)

                        r.run(gl.matmul, check, v, (A, B), dict(kw, out_dtype=out),
                              f"{dtype} -> {out} {m}x{k}x{n}")
            # A and B one element past a 16-byte boundary, n % 4 == 0 (n % 8 == 0); for tf32,
            # tf32_wmma's kernel (the TMA cannot take A there)
            m, k, n = 131, 40, 136
            dtype = dtypes(v)[0]
            A = r.rng.standard_normal(m * k + 1).astype(dtype)
            B = r.rng.standard_normal(k * n + 1).astype(dtype)
            size = dtype.itemsize
            got = gl.matmul(View(gl.to_device(A), (m, k), size),
                            View(gl.to_device(B), (k, n), size), variant=v.id, **kw)
            settle()
            r.check(lambda got, A, B, v=v: ref.check_matmul(got, A, B, variant=v),
                    f"matmul {v.name} view {kw}", got.get(), A[1:].reshape(m, k),
                    B[1:].reshape(k, n))
        transposed(r, v)


def laid_out(r, shape, dtype, transposed):
    """A random matrix of shape, C-contiguous or the view x.T of a C-contiguous x."""
    if not transposed:
        return r.rng.standard_normal(shape).astype(dtype)
    return r.rng.standard_normal(shape[::-1]).astype(dtype).T


def on_device(a):
    """a on the device lying as it lies: a transposed view as a view with F strides."""
    if a.flags.c_contiguous:
        return gl.to_device(a)
    return View(gl.to_device(a.T), a.shape, 0, strides=(a.itemsize, a.shape[0] * a.itemsize))


def transposed(r, v):
    """matmul variant v on A.T, B.T and both (at its defaults, or LAYOUT_GRID's at every
    configuration), from device views (bfloat16, which has no CUDA Array Interface to view, from
    NumPy) and from NumPy with --inputs both."""
    for kw, dtype in [(kw, dtype) for kw in (settings(v) if v.name in LAYOUT_GRID else [{}])
                      for dtype in dtypes(v)]:
        for m, k, n in TRANSPOSED_SHAPES:
            for a_t, b_t in ((True, False), (False, True), (True, True)):
                A, B = laid_out(r, (m, k), dtype, a_t), laid_out(r, (k, n), dtype, b_t)
                what = f"matmul {v.name} {kw} {dtype} {m}x{k}x{n} A.T={a_t} B.T={b_t}"

                def check(got, A=np.ascontiguousarray(A), B=np.ascontiguousarray(B), v=v):
                    ref.check_matmul(got, A, B, variant=v)

                if dtype.name != "bfloat16":
                    got = gl.matmul(on_device(A), on_device(B), variant=v.id, **kw)
                    settle()
                    r.check(check, what + " device", got.get())
                if r.args.inputs == "both" or dtype.name == "bfloat16":
                    got = gl.matmul(A, B, variant=v.id, **kw)
                    settle()
                    r.check(check, what + " numpy", got)


def transpose(r):
    for v in r.variants("transpose"):
        for kw in settings(v):
            for dtype in (np.float32, np.float64, np.int32, np.int64):
                for rows, cols in TRANSPOSE_SHAPES:
                    A = np.arange(rows * cols).reshape(rows, cols).astype(dtype)
                    r.run(gl.transpose, ref.check_transpose, v, (A,), kw,
                          f"{np.dtype(dtype)} {rows}x{cols}")
        rows, cols = 128, 64
        A = np.arange(rows * cols + 1, dtype=np.float32)
        got = gl.transpose(View(gl.to_device(A), (rows, cols), 4), variant=v.id)
        settle()
        r.check(ref.check_transpose, f"transpose {v.name} view", got.get(),
                A[1:].reshape(rows, cols))


class View:
    """A device array over part of another's memory (CUDA Array Interface), offset bytes in,
    C-contiguous or of the strides given."""

    def __init__(self, base, shape, offset, strides=None):
        self.base = base
        cai = dict(base.__cuda_array_interface__)
        cai.update(shape=tuple(shape), strides=strides, data=(base.ptr + offset, False))
        self.__cuda_array_interface__ = cai


def main():
    args, rng = start(__doc__)
    r = Runner(args, rng)
    matvec(r)
    matmul(r)
    transpose(r)
    done("sanitize/linalg", r.calls)


if __name__ == "__main__":
    main()
