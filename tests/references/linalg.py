"""The linalg lab's references: float64 products from NumPy, and the rounding bounds the
variants are held to.

The bound. A dot product of K terms computed in floating point with unit roundoff u, in any
order of summation (serial, pairwise, split over lanes, warps or k-tiles), with or without
fused multiply-adds, satisfies (Higham, Accuracy and Stability of Numerical Algorithms, 3.1)

    |s_hat - s| <= gamma_K * sum_i |a_i b_i|,    gamma_K = K u / (1 - K u).

So each element of C = A B (K = A's columns) and of y = A x (K = A's columns) is checked as

    |C - C64|_ij <= (gamma_K(u) + gamma_K(u64)) * (|A| |B|)_ij + tiny,

with C64 the float64 product of the same inputs (NumPy's, itself within gamma_K(u64) of the
exact one: the second term, which matters for float64 inputs), u = eps / 2 of the inputs'
dtype, and tiny the dtype's smallest normal (for entries whose terms all underflow). K = 0 must give
exact zeros. The TF32 rungs (their names say tf32) first round A and B to TF32's 10-bit
mantissa, a relative error of up to 2^-11 each when rounded to nearest and 2^-10 when
truncated; their products are then off by up to 2 * 2^-10 relatively, and their bound is
(2^-9 + gamma_K(u32)) * (|A| |B|)_ij. A transpose moves bits: it must be exact.

float16 and bfloat16 products (the tensor-core rungs, and blocked_openmp on the CPU) are
checked against the float64 product of the same, already half-rounded, inputs by
half_bound (its derivation beside it; docs/labs/linalg.md has it too).
"""

import numpy as np


def gamma(k, dtype):
    u = np.finfo(dtype).eps / 2
    return k * u / (1 - k * u)


def relative_bound(k, dtype):
    """The variant's rounding and the float64 reference's."""
    return gamma(k, dtype) + gamma(k, np.float64)


def assert_within(got, want, bound, what):
    assert isinstance(got, np.ndarray), type(got)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    err = np.abs(got.astype(np.float64) - want)
    bad = np.flatnonzero(~(err <= bound))  # NaN fails too
    assert bad.size == 0, (f"{what}: {bad.size} of {want.size} outside the bound; first at flat "
                           f"index {bad[0]}: got {got.flat[bad[0]]!r}, want {want.flat[bad[0]]!r}, "
                           f"bound {bound.flat[bad[0]]:.3g}")


def matvec_reference(A, x):
    return np.asarray(A, np.float64) @ np.asarray(x, np.float64)


def check_matvec(got, A, x):
    A, x = np.asarray(A), np.asarray(x)
    assert got.dtype == A.dtype, (got.dtype, A.dtype)
    k = A.shape[1]
    want = matvec_reference(A, x)
    scale = np.abs(A.astype(np.float64)) @ np.abs(x.astype(np.float64))
    bound = relative_bound(k, A.dtype) * scale + np.finfo(A.dtype).tiny
    assert_within(got, want, bound, f"matvec {A.shape} {A.dtype}")


def is_tf32(variant):
    return variant is not None and "tf32" in variant.name


HALF_UNIT = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}  # u of each, rounded to nearest
# half of the smallest subnormal of each: the absolute rounding error where a result underflows
HALF_SUBNORMAL = {"float16": 2.0 ** -25, "bfloat16": 2.0 ** -134}


def is_half(dtype):
    return np.dtype(dtype).name in HALF_UNIT


def half_bound(A, B, out_dtype):
    """The bound on |C - C64| for float16/bfloat16 A and B summed in FP32 and rounded to
    out_dtype. A product of two halves is exact in FP32 (11 x 11 or 8 x 8 significant bits), so
    only the K - 1 FP32 additions round: |s - c| <= c(K) u_acc sum_k |a_ik b_kj| with
    u_acc = 2^-24 and c(K) = 4K: gamma_K's K, doubled because the tensor cores add truncating,
    not rounding, and doubled again because they align an MMA's 16 products and its
    accumulator to the largest before adding (Fasi et al. 2021); plus K FP32 underflows of
    2^-126 at most (bfloat16's range is FP32's). The
    output's rounding then adds u_out |c| (u_out = 2^-11 float16, 2^-8 bfloat16; nothing for
    float32), or half its smallest subnormal where C underflows."""
    k = A.shape[1]
    scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    want = A.astype(np.float64) @ B.astype(np.float64)
    u_acc = 2.0 ** -24
    sums = 4 * k * u_acc * scale + k * 2.0 ** -126
    out = np.dtype(out_dtype).name
    if out == "float32":
        return want, sums
    return want, sums * (1 + HALF_UNIT[out]) + HALF_UNIT[out] * np.abs(want) + HALF_SUBNORMAL[out]


def check_matmul(got, A, B, variant=None):
    A, B = np.asarray(A), np.asarray(B)
    if is_half(A.dtype):
        assert got.dtype in (A.dtype, np.dtype(np.float32)), (got.dtype, A.dtype)
        want, bound = half_bound(A, B, got.dtype)
        if A.shape[1] == 0:
            bound = np.zeros_like(want)  # an empty sum is exactly zero
        assert_within(got, want, bound, f"matmul {A.shape} x {B.shape} {A.dtype} -> {got.dtype}")
        return
    assert got.dtype == A.dtype, (got.dtype, A.dtype)
    k = A.shape[1]
    want = np.asarray(A, np.float64) @ np.asarray(B, np.float64)
    scale = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    relative = relative_bound(k, A.dtype) + (2.0 ** -9 if is_tf32(variant) else 0.0)
    bound = relative * scale + np.finfo(A.dtype).tiny
    if k == 0:
        bound = np.zeros_like(want)  # an empty sum is exactly zero
    assert_within(got, want, bound, f"matmul {A.shape} x {B.shape} {A.dtype}")


check_matmul.per_variant = True  # the TF32 rungs have their own bound (references.check_variant)


def check_transpose(got, A):
    A = np.asarray(A)
    want = np.ascontiguousarray(A.T)
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == A.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    assert got.flags.c_contiguous
    # compared as bits: a transpose never looks at values (NaN payloads and -0.0 included)
    bits = f"u{A.itemsize}"
    bad = np.flatnonzero(got.reshape(-1).view(bits) != want.reshape(-1).view(bits))
    assert bad.size == 0, (f"transpose {A.shape}: {bad.size} elements differ; first at flat "
                           f"index {bad[0]}")


CHECKS = {"matvec": check_matvec, "matmul": check_matmul, "transpose": check_transpose}
