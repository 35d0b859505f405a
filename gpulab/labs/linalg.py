"""The dense linear algebra lab: matrix-vector and matrix-matrix products and the transpose, each as
a ladder from S2's first loops to cuBLAS.

    gl.matvec(A, x)              # A @ x, A (M, N) float32 or float64, x (N,)
    gl.matmul(A, B)              # A @ B, float32 (float64 on the CPU ladder and cuBLAS;
                                 # float16, bfloat16 on the tensor cores, FP32 accumulation)
    gl.matmul(A, B, variant="shared_tiles", tile=16)
    gl.transpose(A)              # np.ascontiguousarray(A.T), 4- and 8-byte dtypes

NumPy in, NumPy out; device arrays in, DeviceArray out, asynchronously on `stream`. Operands are
C-contiguous (matmul's may also be transposed views, F-contiguous); shapes that do not fit raise
ValueError before anything runs, and messages name the argument. FP32 means FP32: no variant
rounds to TF32 unless its name says so (matmul's tf32_wmma, tf32, tf32_cluster and cublas_tf32).
"""

import itertools
import math
import os

import numpy as np

from .. import _core
from .. import peers as _peers
from .._op import Cost, nbytes, numel, op

EXPORTS = ("matvec", "matmul", "transpose")


def _itemsize(a):
    return nbytes(a) // max(numel(a), 1)


def _shape(a):
    return tuple(int(s) for s in a.shape)


def _square_ish(n):
    """(rows, cols) of an awkward matrix of about n elements: not square, not a power of two."""
    rows = max(1, math.isqrt(max(n, 1)))
    return rows, max(1, n // rows) + 1


# ---------------------------------------------------------------- matvec


def _matvec_cost(A, x, **_):
    # A, x read once, y written once (4 (MN + M + N) bytes for float32); 2 flops an element of A
    m, n = _shape(A)
    return Cost(bytes=_itemsize(A) * (m * n + m + n), flops=2 * m * n)


def _matvec_example(n, rng):
    m, cols = _square_ish(n)
    return (rng.standard_normal((m, cols)).astype(np.float32),
            rng.standard_normal(cols).astype(np.float32))


def _torch_matvec(A, x, **_):
    import torch
    ta, tx = _peers.as_peer("torch", A), _peers.as_peer("torch", x)
    return lambda: torch.mv(ta, tx)


def _cupy_matvec(A, x, **_):
    import cupy
    ca, cx = _peers.as_peer("cupy", A), _peers.as_peer("cupy", x)
    return lambda: cupy.dot(ca, cx)


@op("matvec", cost=_matvec_cost, size=lambda A, *a, **_: numel(A), example=_matvec_example,
    demo_size={"gpu": 16384 * 16384, "cpu": 4096 * 4096},
    peers={"cupy": _cupy_matvec, "torch": _torch_matvec})
def matvec(A, x, variant=None, block=None, stream=None):
    """y = A @ x for a C-contiguous (M, N) matrix A and a vector x of N elements, both float32 or
    both float64; y has M elements of their dtype. N == 0 gives zeros.

    `variant`: None (the best where it runs), an id or a name from ``gl.variants("matvec")``.
    `block`: threads per block of the CUDA variants 0-3 (powers of two, 32..1024).
    Sums are reassociated by the parallel variants: each y[i] lies within the bound of
    tests/references/linalg.py of the float64 product. The CPU variants O0..O3 run the same
    loop at four optimization levels and give the same sums."""
    return _core.matvec(A, x, variant, stream, block)


# ---------------------------------------------------------------- matmul


def _matmul_cost(A, B, out_dtype=None, **_):
    # 2 M N K flops; each operand read once and C written once (the least traffic); C of
    # float16/bfloat16 operands is 4-byte with out_dtype=float32
    m, k = _shape(A)
    n = _shape(B)[1]
    out = _itemsize(A) if out_dtype is None else np.dtype(out_dtype).itemsize
    return Cost(bytes=_itemsize(A) * (m * k + k * n) + out * m * n, flops=2 * m * n * k)


def _matmul_example(n, rng):
    s = max(1, math.isqrt(max(n, 1)))
    m, k, cols = s, s + 1, s + 2  # odd, and no two alike
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, cols)).astype(np.float32))


def _torch_matmul(A, B, **_):
    import torch
    # FP32 against FP32: PyTorch may use TF32 for float32 matmuls when this flag is on
    torch.backends.cuda.matmul.allow_tf32 = False
    ta, tb = _peers.as_peer("torch", A), _peers.as_peer("torch", B)
    return lambda: torch.matmul(ta, tb)


def _cupy_matmul(A, B, **_):
    import cupy
    # CuPy computes float32 matmuls in FP32 unless CUPY_TF32=1 (off by default)
    if os.environ.get("CUPY_TF32", "0") != "0":
        raise RuntimeError("CUPY_TF32 is set: CuPy's float32 matmul would round its inputs to "
                           "TF32; unset it to compare FP32 with FP32")
    ca, cb = _peers.as_peer("cupy", A), _peers.as_peer("cupy", B)
    return lambda: cupy.matmul(ca, cb)


@op("matmul", cost=_matmul_cost, size=lambda A, *a, **_: numel(A), example=_matmul_example,
    demo_size={"gpu": 4096 * 4096, "cpu": 512 * 512},
    peers={"cupy": _cupy_matmul, "torch": _torch_matmul})
def matmul(A, B, variant=None, stream=None, out_dtype=None, **tunables):
    """C = A @ B for (M, K) and (K, N) matrices of one dtype: float32 on every variant, float64
    on the CPU ladder and cuBLAS (variant 9), float16 and bfloat16 on the tensor-core rungs
    (wmma, wmma_multistage, mma_sync, cublaslt, wgmma, wgmma_ws, wgmma_cluster) and the CPU's
    blocked_openmp. Any M, N, K >= 0, not only multiples of a tile; K == 0 gives zeros.

    A and B are each C-contiguous or F-contiguous: a transposed view (``x.T``,
    ``cupy.asfortranarray(x)``, ``t.t()``) is taken as it lies, with no copy, by the wgmma rungs
    (where the TMA can read it: its rows a multiple of 8 elements), tf32 and tf32_cluster (B.T;
    A.T they copy) and the cuBLAS rungs (their op flags); the other rungs copy it to row-major
    first, on the device (the CPU ladder on the host). Other strided views are refused.

    float16 and bfloat16 (NumPy's bfloat16 is ml_dtypes'; PyTorch's bfloat16 tensors are taken as they are) are
    summed in FP32 and C is rounded once to their dtype, or kept in float32 with
    ``out_dtype=np.float32``; for float32 and float64, out_dtype is None or their own dtype. A and
    B of different dtypes are a TypeError. variant=None on half-precision inputs runs the
    tensor-core rung flagged ``best_for_dtypes`` (on the CPU, blocked_openmp).

    `variant`: None (the best where it runs), an id or a name from ``gl.variants("matmul")``.
    `tunables`: the variant's own, as its record lists them (``v.tunables``): ``tile`` (8, 16,
    32) for variants 0-3; ``tm`` for 4; ``bm``, ``bn``, ``bk`` for 5-8; ``warps`` (4, 8), ``bk``
    (8, 16), ``stages`` (2, 3, 4) and ``bm`` (128, 256; 256 with 8 warps only) for 12,
    multistage (``matmul_configurations`` lists the combinations). Every variant computes
    in FP32 except tf32_wmma, tf32, tf32_cluster and cublas_tf32, whose names say that they round
    A and B to TF32 (a 10-bit mantissa): their bound in tests/references/linalg.py is TF32's. tf32
    and tf32_cluster (Hopper's wgmma, on wgmma_ws's and wgmma_cluster's kernels; ``bn`` 128, 256
    and ``stages`` 3, 4, 5, not 5 at bn=256) transpose B into a workspace first (B.T they read in
    place) and, where k % 4 != 0 or A is not 16-byte aligned, run tf32_wmma's kernel.
    The tensor-core rungs: wmma and wmma_multistage take ``bm``, ``bn`` (64, 128), ``bk`` (16,
    32), and wmma_multistage ``stages`` (2, 3, 4); mma_sync ``bm`` (64, 128), ``warps`` (4, 8)
    and ``stages`` (2, 3, 4); wgmma, wgmma_ws and wgmma_cluster ``bn`` (128, 256) and ``stages``
    (3, 4, 5; not 5 at bn=256). Their bound is the half-precision one of
    tests/references/linalg.py."""
    return _core.matmul(A, B, variant, stream, tunables, out_dtype)


# The tunable combinations that matmul refuses although each value is in its variant's table
# row: the table lists values one tunable at a time, and multistage's 256-row tile takes 8 warps
# only (4 would hold 32 x 8 results a thread, past 255 registers); the wgmma kernel's 48 KiB
# stages at bn=256 fit 4 times in an SM's shared memory, not 5 (float32's too: a stage is 32
# floats of k, the same 128-byte rows).
_REFUSED = {"multistage": lambda kw: kw.get("bm") == 256 and kw.get("warps") != 8,
            "wgmma": lambda kw: kw.get("bn") == 256 and kw.get("stages") == 5,
            "wgmma_ws": lambda kw: kw.get("bn") == 256 and kw.get("stages") == 5,
            "tf32": lambda kw: kw.get("bn") == 256 and kw.get("stages") == 5,
            "tf32_cluster": lambda kw: kw.get("bn") == 256 and kw.get("stages") == 5,
            "wgmma_cluster": lambda kw: kw.get("bn") == 256 and kw.get("stages") == 5}


def matmul_configurations(v):
    """Every combination of matmul variant v's tunable values that it accepts, each its own
    compiled instantiation (the SGEMM rungs' bm x bn x bk, multistage's warps x bk x stages x
    bm less 256-row tiles at 4 warps); [{}] for a variant without tunables."""
    names = list(v.tunables)
    refused = _REFUSED.get(v.name, lambda kw: False)
    grid = [dict(zip(names, values))
            for values in itertools.product(*(v.tunables[name]["values"] for name in names))]
    return [kw for kw in grid if not refused(kw)]


# ---------------------------------------------------------------- transpose


def _transpose_cost(A, **_):
    # every element read once and written once
    return Cost(bytes=2 * nbytes(A), flops=0)


def _transpose_example(n, rng):
    rows, cols = _square_ish(n)
    return (rng.standard_normal((rows, cols)).astype(np.float32),)


def _torch_transpose(A, **_):
    ta = _peers.as_peer("torch", A)
    return lambda: ta.T.contiguous()


def _cupy_transpose(A, **_):
    ca = _peers.as_peer("cupy", A)
    return lambda: ca.T.copy()


@op("transpose", cost=_transpose_cost, size=lambda A, **_: numel(A), example=_transpose_example,
    demo_size={"gpu": 16384 * 16384, "cpu": 4096 * 4096},
    peers={"cupy": _cupy_transpose, "torch": _torch_transpose})
def transpose(A, variant=None, stream=None, tile=None):
    """A C-contiguous copy of A.T for a C-contiguous 2-D A of float32, float64, int32 or int64:
    np.ascontiguousarray(A.T), exactly.

    `variant`: None (the best where it runs), an id or a name from ``gl.variants("transpose")``.
    Every variant transposes; the ladder is measured against the device-to-device copy of the
    same bytes (``gl.ceilings()["copy_gbps"]``, a BenchResult's ``frac_copy``). `tile`: the
    shared tile of variants 2-3 (16 or 32)."""
    return _core.transpose(A, variant, stream, tile)
