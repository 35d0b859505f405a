"""What gpulab's tests share: the GPU skip, registry-driven parametrization, inputs and tolerances.

Tests that need a CUDA device carry ``@pytest.mark.gpu``. Where no device is usable they are
skipped, and the skip says why in gpulab's own words (the NoDeviceError that
``gpulab._core._gpu_status()`` returns: no driver, no GPU, or built without CUDA).

Variants are never listed by hand: ``variant_params(op)`` reads them from ``gl.variants(op)``, so a
new variant is tested without anyone editing a test. CUDA variants get the ``gpu`` mark.
"""

import zlib

import numpy as np
import pytest

import gpulab as gl

GPU = gl.cuda_available()


def gpu_skip_reason():
    status = gl._core._gpu_status()
    if status is None:  # pragma: no cover - only asked for when there is no GPU
        return "needs a CUDA GPU"
    return f"needs a CUDA GPU; {status} [reason: {getattr(status, 'reason', '?')}]"


def pytest_collection_modifyitems(config, items):
    if GPU:
        return
    skip = pytest.mark.skip(reason=gpu_skip_reason())
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


# ---------------------------------------------------------------- registry-driven parameters


def _marks(v):
    return [pytest.mark.gpu] if v.backend == "cuda" else []


def variant_params(op, backend=None, where=None):
    """pytest.params of every variant of op from the registry (optionally of one backend), CUDA
    ones marked gpu. The parameter is the gl.Variant record."""
    return [pytest.param(v, id=f"{v.id}-{v.name}", marks=_marks(v))
            for v in gl.variants(op) if backend in (None, v.backend)]


def all_variant_params(backend=None):
    """Every variant of every op."""
    return [pytest.param(v, id=f"{v.op}-{v.id}-{v.name}", marks=_marks(v))
            for v in gl.variants() if backend in (None, v.backend)]


def variant_where_params(op):
    """(variant, where) pairs: where is 'numpy' (NumPy in and out) for every variant, plus
    'device' (device arrays in and out) for CUDA variants."""
    params = []
    for v in gl.variants(op):
        wheres = ["numpy", "device"] if v.backend == "cuda" else ["numpy"]
        for where in wheres:
            params.append(pytest.param(v, where, id=f"{v.id}-{v.name}-{where}", marks=_marks(v)))
    return params


def block_params(op):
    """(variant, block) for every CUDA variant of op with a 'block' tunable and every value its
    record allows."""
    return [pytest.param(v, b, id=f"{v.id}-{v.name}-block{b}", marks=_marks(v))
            for v in gl.variants(op) if "block" in v.tunables
            for b in v.tunables["block"]["values"]]


# ---------------------------------------------------------------- inputs


SIZES = [0, 1, 2, 31, 32, 33, 255, 256, 257, 1023, 1025, 1_000_003]
DTYPES = [np.float32, np.float64]


def rng_for(*key):
    """A generator seeded from the test's parameters, so every failure reproduces."""
    return np.random.default_rng([zlib.crc32(repr(k).encode()) for k in key])


def nonzero_normal(rng, shape, dtype):
    """Standard normal values, never zero (DESIGN: random data, never zeros)."""
    a = rng.standard_normal(shape).astype(dtype)
    a[a == 0] = dtype(0.5)
    return a


def saxpy_inputs(n, dtype, seed=0):
    rng = rng_for("saxpy", n, np.dtype(dtype).name, seed)
    a = float(rng.uniform(0.5, 4.0) * rng.choice([-1.0, 1.0]))
    return a, nonzero_normal(rng, n, dtype), nonzero_normal(rng, n, dtype)


def matadd_inputs(shape, dtype, seed=0):
    rng = rng_for("matadd", shape, np.dtype(dtype).name, seed)
    return nonzero_normal(rng, shape, dtype), nonzero_normal(rng, shape, dtype)


def poisoned(shape, dtype):
    return np.full(shape, np.nan, dtype=dtype)


# ---------------------------------------------------------------- references and tolerances


def assert_saxpy_close(got, a, x, y, c=2.0):
    """|got - ref| <= c*eps*(|a*x| + |y|) elementwise, with ref in float64.

    c = 2: a is rounded to the dtype (eps/2 of |a*x|), a*x is rounded (eps/2) and so is the sum
    (eps/2 of |a*x| + |y|); FMA contraction only removes one rounding."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == x.dtype and got.shape == x.shape
    assert not np.isnan(got).any(), "some output elements were never written (NaN poison left)"
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    ref = a * x64 + y64
    eps = np.finfo(x.dtype).eps
    bound = c * eps * (np.abs(a * x64) + np.abs(y64))
    err = np.abs(got.astype(np.float64) - ref)
    bad = np.flatnonzero(err > bound)
    assert bad.size == 0, (f"{bad.size} of {x.size} elements off; first at {bad[0]}: got "
                           f"{got[bad[0]]!r}, want {ref[bad[0]]!r} (bound {bound[bad[0]]:.3g})")


def assert_matadd_close(got, A, B, c=1.0):
    """|got - ref| <= c*eps*(|A| + |B|) elementwise (one rounding), ref in float64."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == A.dtype and got.shape == A.shape
    assert not np.isnan(got).any(), "some output elements were never written (NaN poison left)"
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = A64 + B64
    eps = np.finfo(A.dtype).eps
    bound = c * eps * (np.abs(A64) + np.abs(B64))
    bad = np.argwhere(np.abs(got.astype(np.float64) - ref) > bound)
    assert len(bad) == 0, (f"{len(bad)} of {A.size} elements off; first at {tuple(bad[0])}: got "
                           f"{got[tuple(bad[0])]!r}, want {ref[tuple(bad[0])]!r}")


def reduce_bound(x, weights=None, dtype=None, sequential=False):
    """The rounding bound of a float reduction: c * eps * sum|x|, c = log2(n) + 2 (a tree of sums
    rounds each term at most log2(n) times; sequential sums of signed random data cancel their
    errors as well). sequential: terms of one sign summed in a loop, whose errors add up like a
    random walk of n steps: c gains sqrt(n). weights: the products x*y of a dot."""
    x64 = np.abs(np.asarray(x, dtype=np.float64)).ravel()
    if weights is not None:
        x64 = x64 * np.abs(np.asarray(weights, dtype=np.float64)).ravel()
    n = max(x64.size, 1)
    eps = np.finfo(dtype or np.asarray(x).dtype).eps
    return (np.log2(n) + 2 + (np.sqrt(n) if sequential else 0)) * eps * x64.sum()


def assert_reduce_close(got, x, op="sum"):
    """got is reduce(x, op): its dtype follows NumPy's rules; min/max are exact (NaN if any);
    float sums lie within reduce_bound of the float64 sum; int32 sums are exact int64."""
    x = np.asarray(x)
    got = np.asarray(got)
    assert got.shape == ()
    want_dtype = np.int64 if (x.dtype == np.int32 and op == "sum") else x.dtype
    assert got.dtype == want_dtype, f"dtype {got.dtype}, expected {np.dtype(want_dtype)}"
    if op in ("min", "max"):
        ref = getattr(np, op)(x)
        if np.isnan(ref):
            assert np.isnan(got), f"{op} of data with NaN gave {got}, expected NaN"
        else:
            assert got == ref, f"{op}: got {got!r}, want {ref!r}"
        return
    if x.dtype.kind == "i":
        ref = x.sum(dtype=np.int64)
        assert int(got) == int(ref), f"sum: got {got}, want {ref}"
        return
    ref = x.astype(np.float64).sum()
    bound = reduce_bound(x)
    assert abs(float(got) - ref) <= bound, f"sum: got {got!r}, want {ref!r} (bound {bound:.3g})"


def assert_dot_close(got, x, y):
    got = np.asarray(got)
    assert got.shape == () and got.dtype == x.dtype
    ref = np.dot(x.astype(np.float64), y.astype(np.float64))
    # float64 accumulation: the float32 result is off by its own rounding, plus float64's
    bound = np.finfo(x.dtype).eps * abs(ref) + reduce_bound(x, y, np.float64, sequential=True)
    assert abs(float(got) - ref) <= bound, f"dot: got {got!r}, want {ref!r} (bound {bound:.3g})"


def assert_norm2_close(got, x):
    got = np.asarray(got)
    assert got.shape == () and got.dtype == x.dtype
    ref = np.sqrt(np.sum(x.astype(np.float64) ** 2))
    bound = np.finfo(x.dtype).eps * ref + reduce_bound(x, x, np.float64, sequential=True) / max(
        ref, 1e-300)
    assert abs(float(got) - ref) <= bound, f"norm2: got {got!r}, want {ref!r} (bound {bound:.3g})"


# ---------------------------------------------------------------- n-body


def nbody_reference(pos, mass, eps, G=1.0):
    """Softened all-pairs accelerations in float64 (chunked over i to bound memory)."""
    p, m = pos.astype(np.float64), mass.astype(np.float64)
    out = np.empty_like(p)
    step = max(1, (1 << 22) // max(len(p), 1))
    for i0 in range(0, len(p), step):
        d = p[None, :, :] - p[i0:i0 + step, None, :]
        r2 = (d * d).sum(-1) + float(eps) ** 2
        out[i0:i0 + step] = G * ((m[None, :] * r2 ** -1.5)[:, :, None] * d).sum(1)
    return out


def assert_nbody_close(got, pos, mass, eps, G=1.0, rtol=1e-5):
    """Relative L2 error of the (N, 3) float32 result against the float64 reference < rtol."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.float32 and got.shape == pos.shape
    assert np.isfinite(got).all(), "non-finite accelerations (NaN poison left?)"
    ref = nbody_reference(pos, mass, eps, G)
    norm = np.linalg.norm(ref)
    err = np.linalg.norm(got.astype(np.float64) - ref)
    assert err <= rtol * norm or (norm == 0 and err == 0), (
        f"relative L2 error {err / norm if norm else err:.3g} > {rtol:g} at N={len(pos)}")


# Every op of the registry needs a reference here (test_all_ops checks that): how to check its
# result against NumPy, given the NumPy arguments that produced it.
CHECKS = {
    "saxpy": lambda got, a, x, y: assert_saxpy_close(got, a, x, y),
    "matadd": lambda got, A, B: assert_matadd_close(got, A, B),
    "reduce": lambda got, x: assert_reduce_close(got, x),
    "dot": lambda got, x, y: assert_dot_close(got, x, y),
    "norm2": lambda got, x: assert_norm2_close(got, x),
    "nbody_accel": lambda got, pos, mass, eps: assert_nbody_close(got, pos, mass, eps),
}


class CudaView:
    """A foreign device array (CUDA Array Interface v3) over part of a DeviceArray's memory, for
    layouts gpulab never makes itself: offset (misaligned), strided, read-only."""

    def __init__(self, base, shape, strides=None, offset=0, readonly=False):
        self.base = base  # keeps the memory alive
        cai = dict(base.__cuda_array_interface__)
        cai.update(shape=tuple(shape), strides=strides, data=(base.ptr + offset, readonly))
        self.__cuda_array_interface__ = cai


def to_device_args(args):
    return [gl.to_device(a) if isinstance(a, np.ndarray) else a for a in args]


@pytest.fixture
def rng(request):
    return rng_for(request.node.nodeid)


# ---------------------------------------------------------------- memory and streams labs


def assert_no_leaks(run_all, rounds=3):
    """run_all() once to warm gpulab's caches (staging ring, pool), then `rounds` more times:
    device pool and pinned memory must end where they stood after the warm-up."""
    import gc
    run_all()
    gc.collect()
    gl.synchronize()
    pool0, pinned0 = gl.pool_usage()["used"], gl.pinned_usage()
    for _ in range(rounds):
        run_all()
    gc.collect()
    gl.synchronize()
    assert gl.pool_usage()["used"] == pool0
    assert gl.pinned_usage() == pinned0
