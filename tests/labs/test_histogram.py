"""The histogram lab: every variant against np.histogram / np.bincount, exactly (counts are
integers), at the sizes that end tiles and vectors, on values exactly on the edges, on skewed
data, and with NaN and Inf; the edges against NumPy's; the errors; histogram_rgb."""

import numpy as np
import pytest

import gpulab as gl
from conftest import CudaView, block_params, variant_params, variant_where_params
from references.histogram import assert_counts_equal, numpy_histogram

HIST_VW = variant_where_params("histogram")
# the variants that take float data (CUB's is integer-only)
FLOAT_VW = [p for p in HIST_VW if "float32" in p.values[0].dtypes]
RGB_VW = variant_where_params("histogram_rgb")
# ends of tiles and vectors: 16-byte vectors of uint8 (16) and float32 (4), a warp, a block of
# 256 and 512, many blocks of them
SIZES = [0, 1, 2, 15, 16, 17, 31, 32, 33, 255, 256, 257, 511, 512, 513, 4095, 4096, 4097,
         1_000_003]


def put(where, a):
    return gl.to_device(a) if where == "device" else a


def get(a):
    return a.get() if isinstance(a, gl.DeviceArray) else a


def run(v, where, x, bins, range=None, **kw):
    counts, edges = gl.histogram(put(where, x), bins, range=range, variant=v.id, **kw)
    if where == "device":
        assert isinstance(counts, gl.DeviceArray) and isinstance(edges, gl.DeviceArray)
    return get(counts), get(edges)


def check(v, where, x, bins, range=None):
    counts, edges = run(v, where, x, bins, range)
    want_counts, want_edges = numpy_histogram(x, bins, range)
    assert_counts_equal(counts, want_counts)
    assert edges.dtype == want_edges.dtype
    assert edges.tobytes() == want_edges.tobytes()


# ---------------------------------------------------------------- float data


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("v, where", FLOAT_VW)
def test_float_sizes(v, where, dtype, rng):
    for n in SIZES:
        x = rng.uniform(-1.5, 2.5, n).astype(dtype)
        check(v, where, x, 256, (-1.0, 2.0))  # some values outside the range on each side
        check(v, where, x, 37, None)  # the data's own range


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("v, where", FLOAT_VW)
def test_values_on_edges_land_where_numpy_puts_them(v, where, dtype, rng):
    """Every edge, and its float neighbours, for ranges whose steps are not exact in binary:
    NumPy's estimate is off by one at some of them and its comparisons correct it."""
    for lo, hi, bins in [(0.1, 0.7, 6), (-3.3, 7.9, 97), (1e-3, 1.0, 1000), (0, 1, 10),
                         (-1, 1, 65536), (0.2, 0.30000001, 3)]:
        edges = np.linspace(lo, hi, bins + 1).astype(dtype)
        x = np.concatenate([edges, np.nextafter(edges, dtype(-np.inf)),
                            np.nextafter(edges, dtype(np.inf))]).astype(dtype)
        rng.shuffle(x)
        check(v, where, x, bins, (lo, hi))
        check(v, where, x, bins, None)


@pytest.mark.parametrize("v, where", FLOAT_VW)
def test_range_types_follow_numpy_dtype_rules(v, where, rng):
    """float32 data with float64, float32 and integer ends: NumPy bins in different dtypes."""
    x = rng.uniform(0, 1, 10_007).astype(np.float32)
    x[:50] = np.linspace(0, 1, 50, dtype=np.float32)
    for r in [(0.1, 0.9), (np.float64(0.1), np.float64(0.9)), (np.float32(0.1), np.float32(0.9)),
              (0, 1), (np.int64(0), np.int64(1))]:
        check(v, where, x, 33, r)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("v, where", FLOAT_VW)
def test_nan_and_inf_are_not_counted_within_a_range(v, where, dtype, rng):
    x = rng.uniform(0, 1, 4099).astype(dtype)
    x[::7] = np.nan
    x[1::11] = np.inf
    x[2::13] = -np.inf
    check(v, where, x, 64, (0.0, 1.0))


@pytest.mark.parametrize("v, where", FLOAT_VW)
def test_data_range_like_numpy(v, where):
    for x in [np.full(100, 3.5, np.float32), np.array([2.0]), np.zeros(0, np.float32),
              np.array([-1e30, 1e30], np.float32)]:
        check(v, where, x, 10, None)
    for bad in [np.array([1.0, np.nan]), np.array([1.0, np.inf], np.float32)]:
        with pytest.raises(ValueError, match="not finite"):
            run(v, where, bad, 10)


@pytest.mark.parametrize("v, where", FLOAT_VW)
def test_skewed_float_data(v, where, rng):
    x = np.full(300_007, 0.5, np.float32)
    check(v, where, x, 256, (0.0, 1.0))
    x[rng.random(x.size) < 0.1] = rng.uniform(0, 1, 1).astype(np.float32)[0]
    check(v, where, x, 256, (0.0, 1.0))


@pytest.mark.parametrize("v, where", FLOAT_VW)
def test_more_bins_than_a_shared_tile(v, where, rng):
    x = rng.uniform(0, 1, 200_003)
    check(v, where, x, 20_000, (0.0, 1.0))
    check(v, where, x.astype(np.float32), 65536, (0.0, 1.0))


# ---------------------------------------------------------------- integer data


@pytest.mark.parametrize("v, where", HIST_VW)
def test_uint8_is_bincount(v, where, rng):
    for n in SIZES:
        x = rng.integers(0, 256, n, dtype=np.uint8)
        counts, edges = run(v, where, x, 256)
        assert_counts_equal(counts, np.bincount(x, minlength=256))
        assert edges.dtype == np.float64 and np.array_equal(edges, np.arange(257.0))


@pytest.mark.parametrize("dtype, lo, bins", [(np.int8, -128, 256), (np.int8, -10, 20),
                                             (np.uint16, 0, 65536), (np.uint16, 1000, 300),
                                             (np.int16, -300, 600), (np.int32, -5000, 12345),
                                             (np.int32, 2**31 - 100, 50), (np.uint8, 250, 5)])
@pytest.mark.parametrize("v, where", HIST_VW)
def test_integer_ranges_match_numpy(v, where, dtype, lo, bins, rng):
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, lo - 40), min(info.max, lo + bins + 40) + 1, 100_003,
                     dtype=np.int64).astype(dtype)
    x[:3] = [lo, min(lo + bins, info.max), max(lo - 1, info.min)]  # first, closed last, outside
    check(v, where, x, bins, (lo, lo + bins))


@pytest.mark.parametrize("v, where", HIST_VW)
def test_integer_range_outside_the_type_counts_nothing(v, where, rng):
    x = rng.integers(0, 256, 1000, dtype=np.uint8)
    check(v, where, x, 256, (1000, 1256))
    check(v, where, x, 16, (-100, -84))


@pytest.mark.parametrize("v, where", HIST_VW)
def test_skewed_uint8(v, where, rng):
    """All in one bin, and 90% in one bin: contention never loses a count."""
    x = np.full(1_000_003, 7, np.uint8)
    assert_counts_equal(run(v, where, x, 256)[0], np.bincount(x, minlength=256))
    x = rng.integers(0, 256, 1_000_003, dtype=np.uint8)
    x[rng.random(x.size) < 0.9] = 200
    assert_counts_equal(run(v, where, x, 256)[0], np.bincount(x, minlength=256))


@pytest.mark.parametrize("v, b", block_params("histogram"))
def test_every_block(v, b, rng):
    x = rng.integers(0, 256, 100_003, dtype=np.uint8)
    counts, _ = gl.histogram(x, 256, variant=v.id, block=b)
    assert_counts_equal(counts, np.bincount(x, minlength=256))
    f = rng.uniform(0, 1, 10_007).astype(np.float32)
    counts, _ = gl.histogram(f, 100, (0.0, 1.0), variant=v.id, block=b)
    assert_counts_equal(counts, np.histogram(f, 100, (0.0, 1.0))[0])


@pytest.mark.parametrize("v", variant_params("histogram"))
def test_multidimensional_input_is_flattened(v, rng):
    x = rng.integers(0, 256, (37, 41), dtype=np.uint8)
    assert_counts_equal(gl.histogram_counts(x, 256, variant=v.id), np.bincount(x.ravel(),
                                                                                minlength=256))


# ---------------------------------------------------------------- device layouts (GPU)


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("histogram", backend="cuda"))
def test_misaligned_views_read_head_and_tail(v, rng):
    """Views that start anywhere in a 16-byte vector and end anywhere in one: the head and tail
    of the 16-byte loads."""
    base_host = rng.integers(0, 256, 4096 + 64, dtype=np.uint8)
    base = gl.to_device(base_host)
    for offset in range(17):
        for n in (0, 1, 5, 16, 17, 33, 1000, 4096 - 1):
            view = CudaView(base, (n,), offset=offset)
            counts = gl.histogram_counts(view, 256, variant=v.id).get()
            want = np.bincount(base_host[offset:offset + n], minlength=256)
            assert_counts_equal(counts, want)
    if "float32" not in v.dtypes:
        return
    f_host = rng.uniform(0, 1, 1024).astype(np.float32)
    f = gl.to_device(f_host)
    for k in range(5):
        view = CudaView(f, (1000 - k,), offset=4 * k)
        counts = gl.histogram_counts(view, 50, (0.0, 1.0), variant=v.id).get()
        assert_counts_equal(counts, np.histogram(f_host[k:1000], 50, (0.0, 1.0))[0])


@pytest.mark.gpu
def test_misaligned_element_pointer_is_refused():
    base = gl.to_device(np.zeros(64, np.float32))
    with pytest.raises(ValueError, match="x starts at 0x[0-9a-f]+, which is not aligned to its "
                                         "4-byte elements"):
        gl.histogram_counts(CudaView(base, (8,), offset=2), 4, (0.0, 1.0), variant=3)


@pytest.mark.gpu
def test_stream_and_peers_inputs(rng):
    x = rng.integers(0, 256, 100_000, dtype=np.uint8)
    s = gl.Stream()
    counts, edges = gl.histogram(gl.to_device(x, s), 256, stream=s)
    s.synchronize()
    assert_counts_equal(counts.get(), np.bincount(x, minlength=256))
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(x).cuda()
    assert_counts_equal(gl.histogram_counts(t, 256).get(), np.bincount(x, minlength=256))


@pytest.mark.gpu
def test_over_two_to_the_31_elements():
    """2^31 + 17 bytes through the default variant: 64-bit indices and counts, and per-block
    32-bit counts that cannot overflow; then all of them in one bin."""
    n = 2**31 + 17
    total = gl.device_info()["total_memory"]
    if total < 2 * n:
        pytest.skip(f"needs {2 * n} bytes of device memory, the device has {total}")
    x = gl.to_device(np.resize(np.arange(256, dtype=np.uint8), n))  # 0, 1, ..., 255, 0, ...
    counts = gl.histogram_counts(x, 256).get()
    want = np.full(256, n // 256, np.int64)
    want[: n % 256] += 1
    assert_counts_equal(counts, want)
    del x
    gl.synchronize()
    one_bin = gl.to_device(np.full(n, 9, np.uint8))
    counts = gl.histogram_counts(one_bin, 256).get()
    assert counts[9] == n and counts.sum() == n


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("v, where", HIST_VW)
def test_argument_errors_name_the_argument(v, where):
    x = put(where, np.zeros(10, np.float32))
    u = put(where, np.zeros(10, np.uint8))
    cases = [
        (TypeError, "bins", lambda: gl.histogram(x, 2.5, variant=v.id)),
        (ValueError, "bins", lambda: gl.histogram(x, 0, variant=v.id)),
        (ValueError, "bins", lambda: gl.histogram(x, 65537, variant=v.id)),
        (ValueError, "range", lambda: gl.histogram(x, 4, (1.0, 0.0), variant=v.id)),
        (ValueError, "range", lambda: gl.histogram(x, 4, (0.0, np.inf), variant=v.id)),
        (TypeError, "range", lambda: gl.histogram(x, 4, (0.0,), variant=v.id)),
        (TypeError, "range", lambda: gl.histogram(x, 4, ("a", 1), variant=v.id)),
        (ValueError, "range", lambda: gl.histogram(u, 4, (0, 5), variant=v.id)),
        (ValueError, "range", lambda: gl.histogram(u, 4, (0.5, 4.5), variant=v.id)),
        (TypeError, "x", lambda: gl.histogram(put(where, np.zeros(4, np.complex64)), 4,
                                              variant=v.id)),
        (TypeError, "x", lambda: gl.histogram(put(where, np.zeros(4, np.int64)), 4,
                                              variant=v.id)),
    ]
    if where == "numpy":
        cases += [
            (TypeError, "x", lambda: gl.histogram([1.0, 2.0], 4, variant=v.id)),
            (ValueError, "x", lambda: gl.histogram(np.zeros((4, 4))[:, 1], 4, variant=v.id)),
        ]
    for error, name, call in cases:
        with pytest.raises(error) as e:
            call()
        assert name in str(e.value), (name, str(e.value))


@pytest.mark.parametrize("v, where", [p for p in HIST_VW if p not in FLOAT_VW])
def test_integer_only_variants_refuse_float_data(v, where):
    for r in [(0.0, 1.0), None]:
        with pytest.raises(TypeError, match="x has dtype float32; expected one of: ") as e:
            gl.histogram(put(where, np.zeros(10, np.float32)), 4, r, variant=v.id)
        accepted = str(e.value).split("expected one of: ")[1]
        assert "uint8" in accepted and "float" not in accepted, accepted


@pytest.mark.parametrize("v", variant_params("histogram", backend="cpu"))
def test_cpu_variant_refuses_a_stream(v):
    with pytest.raises(ValueError, match="stream"):
        gl.histogram(np.zeros(4, np.uint8), 256, variant=v.id, stream=0)


@pytest.mark.parametrize("v", variant_params("histogram", backend="cpu"))
def test_too_many_bins_for_the_range(v):
    with pytest.raises(ValueError, match="bins"):
        gl.histogram(np.ones(4, np.float32), 1000, (1.0, 1.0001), variant=v.id)


def test_ladder_numbering():
    """The histogram ladder, by name and id."""
    assert [(v.id, v.name) for v in gl.variants("histogram")] == [
        (0, "global_atomics"), (1, "shared_privatized"), (2, "warp_aggregated"),
        (3, "lane_columns_vec16"), (4, "cub"), (100, "serial"), (101, "openmp_private")]
    assert [(v.id, v.name) for v in gl.variants("histogram_rgb")] == [
        (0, "global_atomics"), (1, "privatized_vec16"), (100, "serial")]


def test_edges_are_prepared_once_per_value(monkeypatch, rng):
    """NumPy's bin edges (~25 us a call) are computed once for the same dtype, bins and ends
    (their types and values: -0.0 is not 0.0), never for histogram_counts of integer data, and
    each call hands out its own writable copy."""
    from gpulab.labs import histogram as lab
    calls = []
    edges_of = np.histogram_bin_edges

    def counted(*a, **kw):
        calls.append(kw.get("range"))
        return edges_of(*a, **kw)

    monkeypatch.setattr(np, "histogram_bin_edges", counted)
    monkeypatch.setattr(lab, "_PREPARED", type(lab._PREPARED)())
    x = rng.integers(0, 256, 1000, dtype=np.uint8)
    for _ in range(3):
        gl.histogram_counts(x, 256)
    assert calls == []
    first = gl.histogram(x, 256)[1]
    first[:] = -1  # the caller's own copy
    again = gl.histogram(x, 256)[1]
    assert len(calls) == 1 and np.array_equal(again, np.arange(257))
    f = rng.standard_normal(1000)
    for r in [(-1.0, 1.0), (-1.0, 1.0), (np.float32(-1.0), np.float32(1.0)), (-0.0, 1.0),
              (0.0, 1.0), (0.0, 1.0)]:
        counts, edges = gl.histogram(f, 20, r)
        want_counts, want_edges = np.histogram(f, 20, r)
        assert_counts_equal(counts, want_counts)
        assert edges.dtype == want_edges.dtype and edges.tobytes() == want_edges.tobytes()
    assert len(calls) == 1 + 4  # the integer edges, then one a distinct pair of float ends


def test_histogram_is_benchable_like_its_op():
    r = gl.bench(gl.histogram, np.zeros(1000, np.uint8), 256, repeat=1, warmup=0)
    assert r.op == "histogram"


# ---------------------------------------------------------------- histogram_rgb


@pytest.mark.parametrize("v, where", RGB_VW)
def test_rgb_uint8(v, where, rng):
    for shape in [(0, 0, 3), (1, 1, 3), (1, 5, 3), (3, 7, 3), (16, 16, 3), (101, 37, 3),
                  (512, 513, 3)]:
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        got = get(gl.histogram_rgb(put(where, img), variant=v.id))
        assert_counts_equal(got, gl.labs.histogram.reference_rgb(img))
        for c in range(3):
            assert_counts_equal(got[c], np.bincount(img[..., c].ravel(), minlength=256))


@pytest.mark.parametrize("v, where", RGB_VW)
def test_rgb_skewed_and_float(v, where, rng):
    img = np.zeros((300, 301, 3), np.uint8)
    img[..., 1] = 255
    img[::3, ::5, 2] = rng.integers(0, 256, (100, 61), dtype=np.uint8)
    assert_counts_equal(get(gl.histogram_rgb(put(where, img), variant=v.id)),
                        gl.labs.histogram.reference_rgb(img))
    f = rng.random((97, 89, 3), dtype=np.float32)
    f.flat[:6] = [1.0, -0.25, np.nan, np.inf, -np.inf, 0.99999994]
    got = get(gl.histogram_rgb(put(where, f), variant=v.id))
    assert_counts_equal(got, gl.labs.histogram.reference_rgb(f))
    assert got.sum() == f.size - 1  # the NaN


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("histogram_rgb", backend="cuda"))
def test_rgb_misaligned_views(v, rng):
    base_host = rng.integers(0, 256, 3 * 700 + 64, dtype=np.uint8)
    base = gl.to_device(base_host)
    for offset in range(17):
        for pixels in (1, 5, 6, 11, 700):
            view = CudaView(base, (1, pixels, 3), offset=offset)
            img = base_host[offset:offset + 3 * pixels].reshape(1, pixels, 3)
            assert_counts_equal(gl.histogram_rgb(view, variant=v.id).get(),
                                gl.labs.histogram.reference_rgb(img))


@pytest.mark.parametrize("v, where", RGB_VW)
def test_rgb_errors(v, where):
    for bad, error in [(np.zeros((4, 4, 4), np.uint8), ValueError),
                       (np.zeros((4, 12), np.uint8), ValueError),
                       (np.zeros((4, 4, 3), np.float64), TypeError)]:
        with pytest.raises(error, match="img"):
            gl.histogram_rgb(put(where, bad), variant=v.id)
