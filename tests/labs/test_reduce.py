"""The reduce lab: every variant x op x dtype x size against NumPy, every block size, the
refusals, empty input, NaN, placement, determinism, and dot and norm2."""

import numpy as np
import pytest

import gpulab as gl
from conftest import CudaView, block_params, nonzero_normal, rng_for, variant_params
from references.reduce import assert_dot_close, assert_norm2_close, assert_reduce_close

OPS = ("sum", "min", "max")
DTYPES = (np.float32, np.float64, np.int32)
SIZES = (1, 2, 31, 32, 33, 1023, 1025, (1 << 20) + 7)


def reduce_input(n, dtype, seed=0):
    """Random data, never zero: normals for floats, values in [-1000, 1000] for int32."""
    rng = rng_for("reduce", n, np.dtype(dtype).name, seed)
    if np.dtype(dtype).kind == "i":
        x = rng.integers(-1000, 1001, n, dtype=np.int32)
        x[x == 0] = 7
        return x
    return nonzero_normal(rng, n, dtype)


def integer_valued(n, dtype, seed=0):
    """Small integers: every partial sum is exact in float32 (below 2**24), so every variant's
    sum must equal NumPy's exactly, whatever its order; a lost or doubled element shows."""
    x = rng_for("integers", n, seed).integers(-3, 4, n).astype(dtype)
    x[x == 0] = 1
    return x


def run(v, x, op, where, **kw):
    if where == "device":
        got = gl.reduce(gl.to_device(x), op, variant=v.id, **kw)
        assert isinstance(got, gl.DeviceArray) and got.shape == ()
        return got.get()
    return gl.reduce(x, op, variant=v.id, **kw)


def where_params():
    params = []
    for p in variant_params("reduce"):
        v = p.values[0]
        for where in (["numpy", "device"] if v.backend == "cuda" else ["numpy"]):
            params.append(pytest.param(v, where, id=f"{p.id}-{where}", marks=p.marks))
    return params


@pytest.mark.parametrize("v,where", where_params())
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_op_and_size_matches_numpy(v, where, dtype):
    for op in OPS:
        for n in SIZES:
            x = reduce_input(n, dtype)
            if not v.supports(op, dtype):
                with pytest.raises(ValueError, match="it supports"):
                    run(v, x, op, where)
                continue
            assert_reduce_close(run(v, x, op, where), x, op)


@pytest.mark.parametrize("v,block", block_params("reduce"))
def test_every_block_size(v, block):
    for n in (1, 33, 1025, 65_537, (1 << 20) + 7):
        x = reduce_input(n, np.float32, seed=block)
        assert_reduce_close(gl.reduce(x, variant=v.id, block=block), x)
        exact = integer_valued(n, np.float32, seed=block)
        assert gl.reduce(exact, variant=v.id, block=block) == exact.sum(dtype=np.int64)
        ints = reduce_input(n, np.int32, seed=block)
        for op in ("min", "max"):
            assert_reduce_close(gl.reduce(ints, op, variant=v.id, block=block), ints, op)


@pytest.mark.parametrize("v", variant_params("reduce"))
def test_integer_valued_float_sums_are_exact(v):
    for dtype in (np.float32, np.float64):
        if not v.supports("sum", dtype):
            continue
        for n in SIZES:
            x = integer_valued(n, dtype)
            got = gl.reduce(x, variant=v.id)
            assert got == x.sum(dtype=np.int64), f"n={n}: got {got}"


@pytest.mark.parametrize("v", variant_params("reduce"))
def test_empty_input(v):
    for dtype in DTYPES:
        x = np.empty(0, dtype)
        if v.supports("sum", dtype):
            got = gl.reduce(x, "sum", variant=v.id)
            assert got == 0 and got.dtype == (np.int64 if dtype == np.int32 else dtype)
        for op in ("min", "max"):
            if v.supports(op, dtype):
                with pytest.raises(ValueError, match="zero-size array"):
                    gl.reduce(x, op, variant=v.id)


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("reduce", backend="cuda"))
def test_empty_device_input(v):
    d = gl.to_device(np.empty(0, np.float32))
    got = gl.reduce(d, variant=v.id)
    assert isinstance(got, gl.DeviceArray) and got.item() == 0.0
    if v.supports("min", np.float32):
        with pytest.raises(ValueError, match="zero-size array"):
            gl.reduce(d, "min", variant=v.id)


@pytest.mark.parametrize("v", variant_params("reduce"))
def test_nan_propagates(v):
    n = 5000
    for dtype in (np.float32, np.float64):
        for at in (0, n // 2, n - 1):
            x = reduce_input(n, dtype, seed=at)
            x[at] = np.nan
            for op in OPS:
                if v.supports(op, dtype):
                    assert np.isnan(gl.reduce(x, op, variant=v.id)), f"{op} with NaN at {at}"


@pytest.mark.parametrize("v", variant_params("reduce"))
def test_result_types_follow_numpy(v):
    for dtype in DTYPES:
        x = reduce_input(100, dtype)
        for op in OPS:
            if v.supports(op, dtype):
                got = gl.reduce(x, op, variant=v.id)
                assert isinstance(got, np.generic)
                assert got.dtype == getattr(np, op)(x).dtype


@pytest.mark.parametrize("v", [p for p in variant_params("reduce") if p.values[0].deterministic])
def test_deterministic_variants_are_bit_identical(v):
    for dtype in (np.float32, np.float64):
        x = reduce_input((1 << 20) + 7, dtype, seed=3)
        if v.backend == "cuda":
            d = gl.to_device(x)
            runs = [gl.reduce(d, variant=v.id).get() for _ in range(3)]
        else:
            runs = [gl.reduce(x, variant=v.id) for _ in range(3)]
        assert len({r.tobytes() for r in runs}) == 1, runs


def test_registry_flags():
    by_id = {v.id: v for v in gl.variants("reduce")}
    assert sorted(by_id) == list(range(14)) + [100, 101, 102, 103]
    assert [v.id for v in gl.variants("reduce") if v.best] == [12, 103]
    for k in (7, 8, 9, 10):  # S1's kernels end in atomics: float order varies
        assert not by_id[k].deterministic
        assert by_id[k].support["min"] == ("int32",) and by_id[k].support["max"] == ("int32",)
    for k in range(13):
        assert by_id[k].tunables["block"]["values"] == [32, 64, 128, 256, 512, 1024]
    assert "block" not in by_id[13].tunables
    assert by_id[102].support == {"sum": ("float32", "float64"), "min": (), "max": ()}
    assert "__syncwarp" in by_id[4].summary and "lockstep" in by_id[4].summary


def test_unsupported_combination_names_what_is_supported():
    x = reduce_input(10, np.float32)
    with pytest.raises(ValueError) as e:
        gl.reduce(x, "min", variant="kahan")
    assert "sum of float32, float64" in str(e.value)


def test_argument_errors():
    x = reduce_input(10, np.float32)
    with pytest.raises(ValueError, match="'sum', 'min', 'max'"):
        gl.reduce(x, "mean")
    with pytest.raises(TypeError, match="op must be a str"):
        gl.reduce(x, 3)
    with pytest.raises(TypeError, match="expected one of"):
        gl.reduce(x.astype(np.int16))
    with pytest.raises(TypeError, match="NumPy array or a device array"):
        gl.reduce([1.0, 2.0])
    with pytest.raises(ValueError, match="C-contiguous"):
        gl.reduce(x[::2])
    with pytest.raises(ValueError, match="block"):
        gl.reduce(x, variant=5, block=48)
    with pytest.raises(ValueError, match="no 'block' tunable"):
        gl.reduce(x, variant=101, block=256)
    with pytest.raises(ValueError, match="stream"):
        gl.reduce(x, variant=101, stream=0)
    with pytest.raises(ValueError, match="has no variant"):
        gl.reduce(x, variant=99)


def test_contiguous_nd_arrays_are_flattened():
    x = reduce_input(6 * 7 * 5, np.float64).reshape(6, 7, 5)
    assert_reduce_close(gl.reduce(x, variant=101), x.ravel())
    assert gl.reduce(x, "max", variant=103) == x.max()


def test_dot_and_norm2_on_cpu():
    for dtype in (np.float32, np.float64):
        for n in (0, 1, 33, 1025, (1 << 20) + 7):
            x, y = reduce_input(n, dtype, 1), reduce_input(n, dtype, 2)
            assert_dot_close(gl.dot(x, y, variant=100), x, y)
            assert_norm2_close(gl.norm2(x, variant=100), x)


def _dot_params():
    return variant_params("dot") + variant_params("norm2")


@pytest.mark.parametrize("v", _dot_params())
def test_float32_squares_do_not_overflow(v):
    x = np.full(4, 1e30, np.float32)  # x*x overflows float32; the float64 accumulator holds it
    assert gl.norm2(x, variant=v.id) == pytest.approx(2e30, rel=1e-6)
    assert gl.dot(x, x, variant=v.id) == np.float32(np.inf)  # 4e60 itself is not a float32


def test_dot_argument_errors():
    x = reduce_input(10, np.float32)
    with pytest.raises(ValueError, match="same length"):
        gl.dot(x, x[:5])
    with pytest.raises(TypeError, match="expected"):
        gl.dot(x, x.astype(np.float64))
    with pytest.raises(TypeError, match="expected one of"):
        gl.norm2(x.astype(np.int32))


# ---------------------------------------------------------------- on the GPU


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("dot", backend="cuda"))
def test_dot_and_norm2_on_device(v):
    for dtype in (np.float32, np.float64):
        for n in (1, 3, 33, 1025, (1 << 20) + 7):
            x, y = reduce_input(n, dtype, 1), reduce_input(n, dtype, 2)
            assert_dot_close(gl.dot(x, y), x, y)
            assert_norm2_close(gl.norm2(x), x)
            dx, dy = gl.to_device(x), gl.to_device(y)
            assert_dot_close(gl.dot(dx, dy).get(), x, y)
            assert_norm2_close(gl.norm2(dx).get(), x)


@pytest.mark.gpu
def test_dot_of_differently_aligned_vectors():
    """x and y 4 bytes apart cannot share 16-byte loads: the kernel takes its scalar path."""
    n = 4099
    base = gl.to_device(reduce_input(n + 4, np.float32, 5))
    host = base.get()
    for a, b in ((0, 1), (1, 0), (1, 3), (2, 2)):
        x = CudaView(base, (n,), offset=4 * a)
        y = CudaView(base, (n,), offset=4 * b)
        assert_dot_close(gl.dot(x, y).get(), host[a:a + n], host[b:b + n])
        assert_norm2_close(gl.norm2(x).get(), host[a:a + n])


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("reduce", backend="cuda"))
def test_misaligned_device_input(v):
    base = gl.to_device(reduce_input(5000, np.float32, 9))
    host = base.get()
    for offset in (1, 2, 3):
        x = CudaView(base, (4000,), offset=4 * offset)
        assert_reduce_close(gl.reduce(x, variant=v.id).get(), host[offset:offset + 4000])


@pytest.mark.gpu
def test_device_result_is_ordered_on_the_stream():
    s = gl.Stream()
    x = reduce_input((1 << 22) + 1, np.float32)
    d = gl.to_device(x, stream=s)
    r = gl.reduce(d, stream=s)
    assert r.shape == () and r.dtype == np.float32
    assert_reduce_close(np.float32(r.item()), x)
    assert isinstance(r.item(), float) and float(r) == r.item()
    assert int(gl.reduce(gl.to_device(np.arange(10, dtype=np.int32)))) == 45


@pytest.mark.gpu
def test_peer_arrays_go_in_zero_copy():
    torch = pytest.importorskip("torch")
    x = reduce_input(100_003, np.float32)
    t = torch.from_numpy(x).cuda()
    assert_reduce_close(gl.reduce(t).get(), x)
    assert_reduce_close(gl.reduce(t, "max").get(), x, "max")


@pytest.mark.gpu
def test_more_than_2_31_elements():
    """Every CUDA variant over 2**31 + 5 elements: indices past int32 must not wrap. The values
    are small integers, so every order of summation is exact (partial sums stay below 2**24 in
    float32) and min and max are planted near the end."""
    n = (1 << 31) + 5
    small = np.random.default_rng(31).integers(-3, 4, n, dtype=np.int8)
    small[n - 3], small[n - 2] = 9, -9
    x32 = gl.to_device(small.astype(np.float32))
    want_sum = int(small.sum(dtype=np.int64))
    i32 = gl.to_device(small.astype(np.int32))
    del small
    for v in gl.variants("reduce"):
        if v.backend != "cuda":
            continue
        assert int(gl.reduce(i32, variant=v.id).item()) == want_sum, v
        assert gl.reduce(x32, variant=v.id).item() == want_sum, v
        for op, want in (("max", 9), ("min", -9)):
            if v.supports(op, np.float32):
                assert gl.reduce(x32, op, variant=v.id).item() == want, (v, op)
            if v.supports(op, np.int32):
                assert gl.reduce(i32, op, variant=v.id).item() == want, (v, op)
    del x32, i32
    gl.release_memory()


# ---------------------------------------------------------------- item() from the host mirror


def mirror_reads():
    return gl._core._mirror_stats()["read"]


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_item_reads_the_default_variants_mirror(op, dtype):
    """The default variant's kernel writes its value into host memory too, and item() takes it
    from there (the read counter moves) once the kernel is done; sizes that take one block and
    many. While the kernel runs, item() waits 50 us at most for the mirror: where other
    processes share the GPU, their time slices outlast that and item() rightly reads the device
    instead, so that call is held to its value only."""
    for n in (1, 7, 1024, (1 << 20) + 3):
        x = reduce_input(n, dtype, n)
        d = gl.to_device(x)
        before = mirror_reads()
        r = gl.reduce(d, op)
        value = r.item()  # in flight: the mirror or the device
        assert mirror_reads() in (before, before + 1)
        assert_reduce_close(np.asarray(value, dtype=r.dtype), x, op)
        assert r.item() == value and r.get() == value
        r = gl.reduce(d, op)
        gl.synchronize()  # done: its mirror is there
        before = mirror_reads()
        assert r.item() == value
        assert mirror_reads() == before + 1


@pytest.mark.gpu
def test_item_after_the_result_is_written_elsewhere():
    """Once the 0-d result's memory is handed to anything that could write it (an export, an op,
    its address), item() reads the device again, never a stale mirror."""
    x = np.arange(1, 101, dtype=np.float32)
    torch = pytest.importorskip("torch")
    r = gl.reduce(gl.to_device(x))
    torch.from_dlpack(r).fill_(7.0)
    torch.cuda.synchronize()
    assert r.item() == 7.0
    cupy = pytest.importorskip("cupy")
    r = gl.reduce(gl.to_device(x))
    cupy.asarray(r).fill(11.0)
    cupy.cuda.runtime.deviceSynchronize()
    assert r.item() == 11.0
    r2 = gl.reduce(gl.to_device(x))
    total = gl.reduce(r2)  # r2 as an operand: its own mirror is dropped
    gl.synchronize()
    before = mirror_reads()
    assert total.item() == 5050.0
    assert r2.item() == 5050.0 and mirror_reads() == before + 1


@pytest.mark.gpu
def test_item_when_every_mirror_slot_is_taken():
    """More live results than mirror slots: the rest are copied, all values right; slots come
    back when their arrays die."""
    xs = [np.full(64, i, dtype=np.float32) for i in range(600)]
    results = [gl.reduce(gl.to_device(x)) for x in xs]
    assert [r.item() for r in results] == [64.0 * i for i in range(600)]
    del results
    r = gl.reduce(gl.to_device(xs[3]))
    gl.synchronize()
    before = mirror_reads()
    assert r.item() == 192.0
    assert mirror_reads() == before + 1


@pytest.mark.gpu
def test_item_behind_queued_work_waits_for_it():
    """A result behind a long kernel on its stream: the mirror is not there within the short wait,
    and item() falls back to the copy after the work; the value is right either way."""
    s = gl.Stream()
    big = gl.to_device(np.ones(1 << 26, dtype=np.float32), stream=s)
    for _ in range(20):
        gl.reduce(big, stream=s)
    r = gl.reduce(gl.to_device(np.full(10, 2.0, dtype=np.float32), stream=s), stream=s)
    assert r.item() == 20.0
