"""DeviceArray, streams and events, pinned memory, and leaks (all need a GPU)."""

import gc
import sys

import numpy as np
import pytest

import gpulab as gl
from conftest import variant_params
from references.saxpy import assert_saxpy_close, saxpy_inputs

pytestmark = pytest.mark.gpu

ROUND_TRIP_DTYPES = [np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32, np.float64,
                     np.complex64, np.complex128, np.bool_]


def random_array(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True,
                            dtype=dtype)
    values = rng.standard_normal(shape) + 2.0
    if dtype.kind == "c":
        values = values + 1j * (rng.standard_normal(shape) - 2.0)
    return values.astype(dtype)


# ---------------------------------------------------------------- DeviceArray


@pytest.mark.parametrize("make", ["empty", "zeros"])
def test_empty_and_zeros_attributes(make):
    for shape, dtype in [((5,), np.float32), ((3, 4), np.float64), ((2, 3, 4), np.int16),
                         ((0,), np.float32), ((4, 0, 2), np.complex64)]:
        d = getattr(gl, make)(shape, dtype=dtype)
        assert isinstance(d, gl.DeviceArray)
        want = np.empty(shape, dtype)
        assert d.shape == want.shape and d.dtype == want.dtype
        assert d.size == want.size and d.ndim == want.ndim and d.nbytes == want.nbytes
        assert d.itemsize == want.itemsize
        if want.size:
            assert d.strides == want.strides
        assert d.device == 0 and d.readonly is False
        assert len(d) == shape[0]
        assert isinstance(d.ptr, int)
        if make == "zeros":
            np.testing.assert_array_equal(d.get(), np.zeros(shape, dtype))
    assert gl.empty(7).shape == (7,) and gl.empty(7).dtype == np.float32  # int shape, default


def test_zeros_really_zero_after_reuse():
    """zeros() from a pool that just held non-zero data still reads back all zeros."""
    for _ in range(3):
        junk = gl.to_device(np.full(1 << 16, 7.0, np.float64))
        del junk
        z = gl.zeros(1 << 16, dtype=np.float64)
        assert not z.get().any()


def test_empty_refuses_bad_shapes_and_dtypes():
    with pytest.raises(ValueError):
        gl.empty((-1, 3))
    with pytest.raises(TypeError):
        gl.empty(3.5)
    with pytest.raises((TypeError, ValueError)):
        gl.empty(["a", "b"])
    with pytest.raises(TypeError):
        gl.empty(3, dtype=object)
    with pytest.raises(TypeError):
        gl.DeviceArray()


@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip(dtype):
    for shape in [(0,), (1,), (1023,), (7, 9), (3, 5, 7), (2, 0, 3), ()]:
        host = random_array(shape, dtype)
        d = gl.to_device(host)
        assert d.shape == host.shape and d.dtype == host.dtype and d.nbytes == host.nbytes
        back = d.get()
        assert isinstance(back, np.ndarray) and back.flags.c_contiguous
        assert back.dtype == host.dtype and back.shape == host.shape
        np.testing.assert_array_equal(back, host)


def test_round_trip_large():
    """Several chunks of the staging ring, and not a whole number of them."""
    host = random_array((3 * (1 << 20) + 5,), np.float64)
    np.testing.assert_array_equal(gl.to_device(host).get(), host)


def test_to_device_converts_layouts():
    """Non-contiguous, Fortran-ordered and non-native byte order inputs arrive as C-ordered
    native arrays with the same values."""
    base = random_array((64, 48), np.float64)
    for host in (base[::2, ::3], base.T, base.astype(base.dtype.newbyteorder())):
        d = gl.to_device(host)
        assert d.dtype.isnative and d.dtype == np.float64
        back = d.get()
        assert back.dtype.isnative
        np.testing.assert_array_equal(back, host)
    np.testing.assert_array_equal(gl.to_device([1.5, 2.5]).get(), [1.5, 2.5])
    with pytest.raises(TypeError):
        gl.to_device(np.array(["a", "b"]))


def test_get_into_out():
    host = random_array((1000, 3), np.float32)
    d = gl.to_device(host)
    out = np.full(host.shape, np.nan, np.float32)
    assert d.get(out=out) is out
    np.testing.assert_array_equal(out, host)
    with pytest.raises(ValueError):
        d.get(out=np.empty((3, 1000), np.float32))
    with pytest.raises(TypeError):
        d.get(out=np.empty(host.shape, np.float64))
    ro = np.empty(host.shape, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        d.get(out=ro)


def test_get_into_pinned():
    for n in (10, 1 << 20):  # small ones go through staging, large ones directly
        host = random_array((n,), np.float32)
        pinned = gl.pinned_empty(n, np.float32)
        pinned[:] = np.nan
        assert gl.to_device(host).get(out=pinned) is pinned
        np.testing.assert_array_equal(pinned, host)
        np.testing.assert_array_equal(gl.to_device(pinned).get(), host)


def test_repr():
    r = repr(gl.empty((2, 3), dtype=np.float64))
    assert "DeviceArray" in r and "(2, 3)" in r and "float64" in r


# ---------------------------------------------------------------- streams and events


def test_stream_properties_and_validation():
    s = gl.Stream()
    assert s.non_blocking and s.priority == 0
    assert isinstance(s.handle, int) and s.handle != 0 and s.cuda_stream == s.handle
    b = gl.Stream(non_blocking=False, priority=0)
    assert not b.non_blocking
    for bad in (10**6, -10**6):
        with pytest.raises(ValueError, match="priority"):
            gl.Stream(priority=bad)
    with pytest.raises(TypeError):
        gl.Stream(priority="high")


def test_stream_priorities_in_range():
    """Every priority the device allows (lower is more urgent) makes a stream; the error for an
    out-of-range one gives the range."""
    with pytest.raises(ValueError) as e:
        gl.Stream(priority=10**6)
    lo, hi = (int(t) for t in str(e.value).split("[", 1)[1].split("]", 1)[0].split(","))
    assert lo <= 0 <= hi
    for p in range(lo, hi + 1):
        assert gl.Stream(priority=p).priority == p
    with pytest.raises(ValueError):
        gl.Stream(priority=lo - 1)
    with pytest.raises(ValueError):
        gl.Stream(priority=hi + 1)


def test_stream_synchronize_and_query():
    s = gl.Stream()
    a, x, y = saxpy_inputs(1 << 20, np.float32)
    d = gl.saxpy(a, gl.to_device(x, stream=s), gl.to_device(y, stream=s), stream=s)
    assert s.synchronize() is None
    assert s.query() is True
    assert_saxpy_close(d.get(), a, x, y)


def test_event_timing():
    s = gl.Stream()
    start, end = gl.Event(), gl.Event()
    a, x, y = saxpy_inputs(1 << 20, np.float32)
    dx, dy = gl.to_device(x, stream=s), gl.to_device(y, stream=s)
    assert start.record(s) is start
    for _ in range(10):
        gl.saxpy(a, dx, dy, stream=s)
    assert end.record(s) is end
    assert end.synchronize() is None
    assert end.query() is True and start.query() is True
    ms = gl.elapsed_ms(start, end)
    assert isinstance(ms, float) and ms >= 0.0
    assert isinstance(start.handle, int)
    # events on the library stream (record() without a stream)
    e1, e2 = gl.Event().record(), gl.Event().record()
    e2.synchronize()
    assert gl.elapsed_ms(e1, e2) >= 0.0


def test_event_without_timing():
    plain, timed = gl.Event(timing=False), gl.Event()
    plain.record()
    timed.record()
    timed.synchronize()
    plain.synchronize()
    with pytest.raises(ValueError, match="timing"):
        gl.elapsed_ms(plain, timed)
    with pytest.raises(ValueError, match="timing"):
        gl.elapsed_ms(timed, plain)
    with pytest.raises(TypeError):
        gl.elapsed_ms(timed, 3)


def test_stream_wait_event_orders_work():
    """Work on stream b that waits on an event recorded on stream a sees a's results."""
    a_stream, b_stream = gl.Stream(), gl.Stream()
    a, x, y = saxpy_inputs(1 << 22, np.float32)
    dx, dy = gl.to_device(x), gl.to_device(y)
    gl.synchronize()
    mid = gl.saxpy(a, dx, dy, stream=a_stream)
    done = gl.Event(timing=False).record(a_stream)
    b_stream.wait_event(done)
    final = gl.saxpy(1.0, mid, dy, stream=b_stream)  # (a*x + y) + y
    b_stream.synchronize()
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    err = np.abs(final.get() - (a * x64 + 2 * y64))
    assert (err <= 4 * np.finfo(np.float32).eps * (np.abs(a * x64) + 2 * np.abs(y64))).all()


# ---------------------------------------------------------------- pinned memory


@pytest.mark.parametrize("consumer", ["stream", "legacy default stream"])
def test_arrays_handed_to_another_stream_are_ordered_after_their_last_use(consumer):
    """An op on stream b that takes arrays last used on stream a (here: still being copied in on
    a non-blocking stream) waits for a's work, with no synchronisation by the user. Big enough
    that the copy is still in flight when the op launches: without the hand-over this fails."""
    copy_stream = gl.Stream()
    op_stream = gl.Stream() if consumer == "stream" else 0
    a, x, y = saxpy_inputs(1 << 25, np.float32)
    dx, dy = gl.to_device(x, stream=copy_stream), gl.to_device(y, stream=copy_stream)
    got = gl.saxpy(a, dx, dy, stream=op_stream)
    gl.synchronize(op_stream)
    assert_saxpy_close(got.get(), a, x, y)
    del dx, dy, got
    gl.synchronize(op_stream)
    gl.release_memory()  # 384 MiB of chunks that no later test should find half used


def test_pinned_empty():
    before = gl.pinned_usage()["user"]
    p = gl.pinned_empty((3, 4), np.float64)
    assert isinstance(p, np.ndarray)
    assert p.shape == (3, 4) and p.dtype == np.float64
    assert p.flags.writeable and p.flags.c_contiguous
    p[:] = np.arange(12.0).reshape(3, 4)
    assert p.sum() == 66.0
    assert gl.pinned_usage()["user"] >= before + p.nbytes
    view = p[1]
    del p
    gc.collect()
    assert gl.pinned_usage()["user"] > before, "a view keeps the pinned block alive"
    assert view.sum() == 4 + 5 + 6 + 7
    del view
    gc.collect()
    assert gl.pinned_usage()["user"] == before
    empty = gl.pinned_empty(0, np.float32)
    assert empty.shape == (0,)
    del empty
    gc.collect()
    assert gl.pinned_usage()["user"] == before


# ---------------------------------------------------------------- leaks


def _settle():
    gc.collect()
    gl.synchronize()


@pytest.mark.parametrize("v", variant_params("saxpy", backend="cuda"))
def test_no_leaks(v):
    """Thousands of calls leave device and pinned memory, and Python references, where they
    began."""
    a, x, y = saxpy_inputs(1024, np.float32)
    dx, dy = gl.to_device(x), gl.to_device(y)
    dout = gl.empty(1024, np.float32)
    stream = gl.Stream()
    # warm up: the staging ring, the pool, the stream's first use
    for _ in range(3):
        gl.saxpy(a, x, y, variant=v.id)
        gl.saxpy(a, dx, dy, variant=v.id)
        gl.saxpy(a, dx, dy, variant=v.id, out=dout, stream=stream)
    stream.synchronize()
    _settle()
    pool0, pinned0 = gl.pool_usage()["used"], gl.pinned_usage()
    refs0 = [sys.getrefcount(o) for o in (dx, dy, dout, stream, x, y)]
    for _ in range(10_000):
        gl.saxpy(a, dx, dy, variant=v.id)
    for _ in range(1_000):
        gl.saxpy(a, dx, dy, variant=v.id, out=dout, stream=stream)
    stream.synchronize()
    for _ in range(2_000):
        gl.saxpy(a, x, y, variant=v.id)
    _settle()
    assert gl.pool_usage()["used"] == pool0
    assert gl.pinned_usage() == pinned0
    assert [sys.getrefcount(o) for o in (dx, dy, dout, stream, x, y)] == refs0


def test_no_leaks_on_errors():
    """Rejected calls free what they took."""
    x = gl.to_device(np.ones(1024, np.float32))
    y64 = gl.to_device(np.ones(1024, np.float64))
    _settle()
    pool0 = gl.pool_usage()["used"]
    refs0 = [sys.getrefcount(x), sys.getrefcount(y64)]
    for _ in range(1000):
        with pytest.raises(TypeError):
            gl.saxpy(2.0, x, y64)
        with pytest.raises(ValueError):
            gl.saxpy(2.0, x, x, out=gl.empty(1023, np.float32))
    _settle()
    assert gl.pool_usage()["used"] == pool0
    assert [sys.getrefcount(x), sys.getrefcount(y64)] == refs0


def test_arrays_outlive_their_stream():
    """A DeviceArray made on a user stream stays valid after the last reference to the
    Stream object is dropped."""
    s = gl.Stream()
    host = random_array((1 << 16,), np.float32)
    d = gl.to_device(host, stream=s)
    out = gl.saxpy(2.0, d, d, stream=s)
    del s
    gc.collect()
    np.testing.assert_array_equal(out.get(), 3.0 * host.astype(np.float32))


@pytest.mark.gpu
def test_small_blocks_are_reused_on_the_library_stream_only():
    gl.synchronize()
    gl._core._trim_block_cache()
    assert gl.pool_usage()["cached"] == 0
    used0 = gl.pool_usage()["used"]
    a = gl.empty(1000, np.float32)
    ptr = a.ptr
    del a
    assert gl.pool_usage()["cached"] >= 4000
    assert gl.pool_usage()["used"] == used0
    b = gl.empty(1001, np.float32)  # the same 512-byte size class: the same block, no CUDA call
    assert b.ptr == ptr and gl.pool_usage()["cached"] == 0
    del b
    stream = gl.Stream()
    c = gl.empty(1000, np.float32, stream=stream)
    gl._core._trim_block_cache()
    del c  # a user stream's block goes back to CUDA's pool, not to the cache
    assert gl.pool_usage()["cached"] == 0
    stream.synchronize()


@pytest.mark.gpu
def test_release_memory_hands_the_pool_back():
    # What the pool holds before: chunks that earlier tests' live arrays still occupy stay.
    gl.release_memory()
    before = gl.pool_usage()["reserved"]
    big = gl.empty(64 << 20, np.float32)  # 256 MiB
    del big
    gl.synchronize()
    assert gl.pool_usage()["reserved"] >= 256 << 20  # kept for reuse
    gl.release_memory()
    usage = gl.pool_usage()
    assert usage["cached"] == 0
    assert usage["reserved"] <= before


def test_a_fresh_result_past_the_fault_in_size_comes_back_whole():
    """get() faults a fresh result of 64 MiB or more in on every core before the staged copy:
    just past that size, an odd byte count, every byte in place."""
    n = (64 << 20) + 4099
    host = np.resize(np.random.default_rng(32).integers(0, 256, 65_537, dtype=np.uint8), n)
    np.testing.assert_array_equal(gl.to_device(host).get(), host)


def test_an_ops_fresh_numpy_result_past_the_fault_in_size_comes_back_whole():
    """A CUDA op on NumPy arrays faults the result it makes in the same way (gl_d2h_result),
    while its kernel runs; one given as out= is copied into as it is."""
    a, x, y = saxpy_inputs((16 << 20) + 1027, np.float32)  # 64 MiB and a little more
    assert_saxpy_close(gl.saxpy(a, x, y), a, x, y)
    out = np.full_like(x, np.nan)
    assert gl.saxpy(a, x, y, out=out) is out
    assert_saxpy_close(out, a, x, y)


@pytest.mark.gpu
def test_round_trip_of_more_than_2_to_the_31_bytes():
    """The staging ring's offsets past 2 GiB, both ways, into a fresh and into a given array."""
    n = (1 << 31) + 4099
    # a random period of a prime length, so that a chunk copied to the wrong offset shows
    period = np.random.default_rng(31).integers(0, 256, 1_000_003, dtype=np.uint8)
    host = np.resize(period, n)
    dev = gl.to_device(host)
    back = np.full(n, 7, dtype=np.uint8)
    dev.get(out=back)
    assert np.array_equal(back, host)
    assert np.array_equal(dev.get(), host)
