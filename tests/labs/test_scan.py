"""The scan lab against NumPy: every variant of scan, compact and nonzero (from the registry) at
the awkward sizes (0, 1, a warp +-1, one block +-1, one tile +-1, many tiles +-1, odd), each dtype
and op, inclusive and exclusive, NumPy and device operands; float sums within their documented
bound (tests/references/scan.py), and exact where the data make every order exact; NaN and Inf;
S4's quicksort partition done with scan and compact; the refusals; one scan over 2^31 elements."""

import subprocess
import sys

import numpy as np
import pytest

import gpulab as gl
from conftest import CudaView, block_params, emulator, probe_module, rng_for, variant_params
from references import scan as ref

# 0, 1, a warp +-1, a block of 256 / 512 / 1024 threads +-1, a chunk of 2 x 1024, a tile of the
# vectorized variants (4096 4-byte or 2048 8-byte elements) +-1, 3072 +-1 (three quarters of a
# 4-byte tile), decoupled_lookback's tiles of int32 summed into int64 (256 x 6 x 4 = 6144) and
# of 4 bytes (256 x 9 x 4 = 9216) +-1, many tiles +-1, 2^20 + 1, odd
SIZES = (0, 1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 2047, 2048, 2049, 3071, 3072,
         3073, 4095, 4096, 4097, 6143, 6144, 6145, 9215, 9216, 9217, 37 * 3072 - 1, 37 * 3072 + 1,
         37 * 4096 - 1, 37 * 4096 + 1, (1 << 20) + 1, 100_003)
DTYPES = (np.float32, np.float64, np.int32, np.int64)
OPS = ("sum", "max", "min")
WHERES = ("numpy", "device")


def where_params(op):
    """(variant, where): NumPy for every variant, device arrays too for the CUDA ones."""
    params = []
    for p in variant_params(op):
        v = p.values[0]
        for where in (WHERES if v.backend == "cuda" else WHERES[:1]):
            params.append(pytest.param(v, where, id=f"{p.id}-{where}", marks=p.marks))
    return params


def run(fn, where, *arrays, **kw):
    """fn on NumPy arrays, or on device copies with the result brought back."""
    if where == "numpy":
        got = fn(*arrays, **kw)
        assert isinstance(got, np.ndarray)
        return got
    got = fn(*[a if a is None else gl.to_device(a) for a in arrays], **kw)
    assert isinstance(got, gl.DeviceArray)
    return got.get()


def small_integers(rng, n, dtype, low=-8, high=9):
    """Integer values, exact in every dtype, whose every prefix sum stays below 2^24 for n up to
    2^21: every summation order gives the same float32 result, so any variant must be exact."""
    return rng.integers(low, high, n).astype(dtype)


# ---------------------------------------------------------------- scan


@pytest.mark.parametrize("inclusive", (True, False), ids=("inclusive", "exclusive"))
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("v,where", where_params("scan"))
def test_scan_is_exact_where_every_order_is(v, where, dtype, op, inclusive):
    for n in SIZES:
        x = small_integers(rng_for(v.id, where, n, op), n, dtype)
        got = run(gl.scan, where, x, op=op, inclusive=inclusive, variant=v.id)
        ref_values, out_dtype = ref.reference(x, op, inclusive)
        assert got.dtype == out_dtype and got.shape == (n,), (n, got.dtype, got.shape)
        np.testing.assert_array_equal(got, ref_values.astype(out_dtype), err_msg=f"n={n}")


@pytest.mark.parametrize("inclusive", (True, False), ids=("inclusive", "exclusive"))
@pytest.mark.parametrize("dtype", (np.float32, np.float64), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("v,where", where_params("scan"))
def test_float_sum_within_its_bound(v, where, dtype, inclusive):
    # 5_000_003: past 500 tiles (542 of decoupled_lookback's 9216 4-byte ones), where the
    # look-back sleeps before and between its reads
    for n in (1, 33, 1025, 4097, 100_003, 1_000_003, 5_000_003):
        x = rng_for(v.id, n).standard_normal(n).astype(dtype) + dtype(0.25)  # drifts
        got = run(gl.scan, where, x, inclusive=inclusive, variant=v.id)
        ref.assert_scan_close(got, x, "sum", inclusive, depth=ref.scan_depth(n, v))


@pytest.mark.parametrize("v,block", block_params("scan"))
def test_every_block_size(v, block):
    for n in (1, 2 * block - 1, 2 * block + 1, 16 * block + 3, 40_001):
        for dtype, op in ((np.float32, "sum"), (np.int32, "sum"), (np.float64, "max")):
            x = small_integers(rng_for(v.id, block, n), n, dtype)
            got = gl.scan(gl.to_device(x), op, variant=v.id, block=block).get()
            want, out_dtype = ref.reference(x, op)
            np.testing.assert_array_equal(got, want.astype(out_dtype), err_msg=f"n={n} {op}")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("v,where", where_params("scan"))
def test_nan_and_inf_follow_numpy(v, where, op):
    for n in (33, 5000, 100_003):
        x = small_integers(rng_for(v.id, op, n), n, np.float32)
        y = x.copy()
        y[n // 3] = np.inf
        y[n // 2] = -np.inf  # sum: inf + -inf = NaN from here on
        got = run(gl.scan, where, y, op=op, variant=v.id)
        ref.assert_scan_close(got, y, op)
        y = x.copy()
        y[n - 7] = np.nan
        got = run(gl.scan, where, y, op=op, variant=v.id)
        ref.assert_scan_close(got, y, op)
        assert np.isnan(got[n - 7:]).all() and not np.isnan(got[:n - 7]).any()


@pytest.mark.parametrize("v,where", where_params("scan"))
def test_int32_sums_are_int64_and_do_not_wrap(v, where):
    n = 4099
    x = np.full(n, 2**31 - 1, dtype=np.int32)
    got = run(gl.scan, where, x, variant=v.id)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.cumsum(x))  # NumPy's cumsum of int32 is int64


def test_nd_input_is_flattened_like_cumsum():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    np.testing.assert_array_equal(gl.scan(x), np.cumsum(x))


def test_exclusive_starts_at_the_identity():
    for dtype in DTYPES:
        x = np.array([5, 3, 7], dtype=dtype)
        for op in OPS:
            got = gl.scan(x, op, inclusive=False)
            assert got[0] == ref.identity(op, got.dtype), (dtype, op, got)


@pytest.mark.parametrize("v", [pytest.param(p.values[0], id=p.id) for p in variant_params("scan")
                               if p.values[0].name in ("hillis_steele", "blelloch")])
def test_one_block_variants_refuse_past_their_limit(v):
    """Refused before anything runs (no gpu mark): no GPU needed to see it."""
    x = np.zeros((1 << 24) + 1, dtype=np.float32)
    with pytest.raises(ValueError, match=r"x: variant \d \(\w+\) scans in one block, up to "
                                         r"16777216 elements"):
        gl.scan(x, variant=v.id)


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("scan", backend="cuda"))
def test_scan_on_a_user_stream(v):
    x = small_integers(rng_for(v.id), 50_001, np.int64)
    s = gl.Stream()
    got = gl.scan(gl.to_device(x), "min", variant=v.id, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(got.get(), np.minimum.accumulate(x))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", (np.float32, np.int64), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("v", variant_params("scan", backend="cuda"))
def test_scan_of_a_view_off_the_16_byte_grain(v, dtype):
    """x one element past a 16-byte boundary: the vectorized variants take their scalar path
    for every tile, full ones too."""
    n = 3 * 4096 + 5
    full = small_integers(rng_for(v.id, "view"), n + 1, dtype)
    base = gl.to_device(full)
    view = CudaView(base, (n,), offset=np.dtype(dtype).itemsize, readonly=True)
    for inclusive in (True, False):
        got = gl.scan(view, variant=v.id, inclusive=inclusive).get()
        want, out_dtype = ref.reference(full[1:], "sum", inclusive)
        np.testing.assert_array_equal(got, want.astype(out_dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("op,dtype", (("scan", np.int64), ("scan", np.int32), ("scan", np.float32),
                                      ("compact", np.int64)),
                         ids=("scan-int64", "scan-int32", "scan-float32", "compact-int64"))
def test_single_pass_is_exact_run_after_run(op, dtype):
    """The look-back's races, if any, show as a wrong prefix in some runs: 20 runs over 2^23 + 3
    elements (4097 tiles of 2048 int64 a run; 911 of decoupled_lookback's 9216 4-byte ones) must
    all be exact. The float32 small integers' prefixes stay near 10^4 in magnitude (a random walk
    of 2^23 steps of at most 8), far below 2^24: every order of summation is exact."""
    n = (1 << 23) + 3
    rng = rng_for(op, "repeat", np.dtype(dtype).name)
    x = small_integers(rng, n, dtype)
    mask = rng.random(n) < 0.5
    dx, dmask = gl.to_device(x), gl.to_device(mask)
    best = next(v for v in gl.variants(op) if v.backend == "cuda" and v.best)
    want = np.cumsum(x) if op == "scan" else x[mask]
    for run_index in range(20):
        got = (gl.scan(dx, variant=best.id) if op == "scan"
               else gl.compact(dx, dmask, variant=best.id)).get()
        np.testing.assert_array_equal(got, want, err_msg=f"run {run_index}")


@pytest.mark.gpu
def test_default_scan_over_2_31_elements():
    """int32 ones: y[i] = i + 1 exceeds int32 (int64 accumulation) and i exceeds 2^31 (64-bit
    indexing). 2^31 + 4097 elements: 8.6 GB in, 17.2 GB out."""
    n = (1 << 31) + 4097
    if gl.device_info().get("total_memory", 0) < 40 << 30:
        pytest.skip("needs 40 GB of device memory (26 GB of arrays and the pool's room)")
    d = gl.to_device(np.ones(n, dtype=np.int32))
    got = gl.scan(d)
    del d
    host = got.get()
    del got
    assert host.dtype == np.int64 and host.shape == (n,)
    step = 1 << 27
    for begin in range(0, n, step):
        end = min(begin + step, n)
        assert np.array_equal(host[begin:end], np.arange(begin + 1, end + 1)), begin


# ---------------------------------------------------------------- compact and nonzero


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("v,where", where_params("compact"))
def test_compact_matches_boolean_indexing(v, where, dtype):
    for n in SIZES:
        rng = rng_for(v.id, where, n)
        x = small_integers(rng, n, dtype)
        for keep in (0.0, 0.5, 0.97, 1.0):
            mask = rng.random(n) < keep
            got = run(gl.compact, where, x, mask, variant=v.id)
            ref.assert_compact_equal(got, x, mask)
        got = run(gl.compact, where, x, variant=v.id)  # no mask: x != 0
        ref.assert_compact_equal(got, x)


@pytest.mark.parametrize("v,where", where_params("compact"))
def test_compact_without_mask_keeps_nan_and_drops_negative_zero(v, where):
    x = np.array([0.0, -0.0, np.nan, 1.5, 0.0, -np.inf] * 700, dtype=np.float32)
    got = run(gl.compact, where, x, variant=v.id)
    want = x[x != 0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("v,where", where_params("nonzero"))
def test_nonzero_matches_flatnonzero(v, where, dtype):
    for n in SIZES:
        x = small_integers(rng_for(v.id, where, n), n, dtype, low=-1, high=2)  # 1/3 zeros
        got = run(gl.nonzero, where, x, variant=v.id)
        ref.assert_nonzero_equal(got, x)


def test_compact_of_an_nd_array_flattens_like_boolean_indexing():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(gl.compact(x, x % 3 == 0), x[x % 3 == 0])
    np.testing.assert_array_equal(gl.nonzero(x), np.flatnonzero(x))


COMPACT_EMULATOR, needs_toolchain = emulator("compact.py")


# The emulations run as parts (their suites dealt out by index), so that the suite's shards can
# spread a run that took 210-340 s as one test.
EMULATION_PARTS = [f"{k}/4" for k in range(4)]


@needs_toolchain
@pytest.mark.parametrize("part", EMULATION_PARTS)
def test_staged_compaction_kernel_emulated_on_the_cpu(part):
    """compact_staged's and counted_staged's own source (variants 3 and 4 of compact and nonzero;
    variant 4's tile counts scanned on the host), run on the CPU by
    tools/emulate/compact.py (a std::thread per CUDA thread, warps' collectives and the block's
    barrier as std::barriers, blocks three at a time, the first of each stalled, so that the
    look-back meets unfinished predecessors): every dtype, with a mask, without (NaN kept, -0.0 dropped) and nonzero; 1 to
    3 tiles + 1 elements; nothing, everything, one element or a random share kept; x, the mask
    and the result on and off 16-byte boundaries; the result exact and nothing past it written."""
    done = subprocess.run([sys.executable, COMPACT_EMULATOR, "--quick", "--part", part],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and "all ok" in done.stdout, done.stdout[-2000:] + done.stderr
    assert done.stdout.count(": ok") == 2, done.stdout  # two of the eight suites a part


SCAN_EMULATOR, _ = emulator("scan.py")


@needs_toolchain
@pytest.mark.parametrize("part", EMULATION_PARTS)
def test_lookback_kernel_emulated_on_the_cpu(part):
    """Scan variant 5's own source (decoupled_lookback on its shape: 256 x 9 where input and
    accumulator are 4 bytes, 256 x 6 for int32 sums into int64, 256 x 4 otherwise), run on the CPU by tools/emulate/scan.py, with the
    tile copied in bulk by thread 0 (sm_90) and by each thread (sm_80): 3 blocks at once, some
    claims of a tile id stalled; float32/float64/int32/int64, int32 sums into int64, sum/max/min,
    inclusive and exclusive, 1 element to 50 tiles, x and y on and off 16-byte boundaries; exact,
    or within the float bound for sums of random floats, and nothing past y written."""
    done = subprocess.run([sys.executable, SCAN_EMULATOR, "--quick", "--part", part],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and "all ok" in done.stdout, done.stdout[-2000:] + done.stderr
    assert done.stdout.count(" ok (tile") == 6, done.stdout  # 3 of 12 suites, both copies


def test_the_scan_side_by_side_probe_refuses_what_it_cannot_build(capsys):
    """tools/probe/scan_ab.py names a source that is not a file, or a size it cannot allocate,
    before building anything."""
    scan_ab = probe_module("scan_ab")
    with pytest.raises(SystemExit) as stop:
        scan_ab.main(["--log2n", "10", "candidate=/no/such/shuffle.cu"])
    assert stop.value.code == 2
    assert "candidate=/no/such/shuffle.cu: not a name and a file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        scan_ab.main(["--log2n", "31"])
    assert stop.value.code == 2
    assert "log2n 31" in capsys.readouterr().err
    args = scan_ab.parse(["--log2n", "12", "--int32-log2n", "0", "a=" + scan_ab.__file__])
    assert scan_ab.cases(args) == [(12, "f32")] and args.sources == [["a", scan_ab.__file__]]
    assert scan_ab.cases(scan_ab.parse([])) == [(26, "f32"), (28, "f32"), (28, "i32")]


# ---------------------------------------------------------------- S4's quicksort partition


def partition_with_compact(x, pivot, **kw):
    """Elements below the pivot, then the others, each in order (S4 8's partition step)."""
    below = x < pivot
    return np.concatenate([gl.compact(x, below, **kw), gl.compact(x, ~below, **kw)])


def partition_with_scan(x, pivot, **kw):
    """The same with explicit addresses: an exclusive scan of the flags gives each element below
    the pivot its slot; the others go after them, at their own exclusive scan."""
    below = (x < pivot).astype(np.int32)
    low_slot = gl.scan(below, inclusive=False, **kw)
    high_slot = gl.scan(1 - below, inclusive=False, **kw) + below.sum()
    out = np.empty_like(x)
    out[np.where(below == 1, low_slot, high_slot)] = x
    return out


@pytest.mark.parametrize("v", variant_params("scan"))
def test_quicksort_partition_with_scan(v):
    x = np.array([9, 3, 5, 12, 4], dtype=np.int32)
    np.testing.assert_array_equal(partition_with_scan(x, 5, variant=v.id), [3, 4, 9, 5, 12])


@pytest.mark.parametrize("v", variant_params("compact"))
def test_quicksort_partition_with_compact(v):
    x = np.array([9, 3, 5, 12, 4], dtype=np.int32)
    np.testing.assert_array_equal(partition_with_compact(x, 5, variant=v.id), [3, 4, 9, 5, 12])


# ---------------------------------------------------------------- refusals


def test_bad_arguments_name_themselves():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match="op"):
        gl.scan(x, "prod")
    with pytest.raises(TypeError, match="x"):
        gl.scan(x.astype(np.uint8))
    with pytest.raises(TypeError, match="x"):
        gl.scan([1.0, 2.0])
    with pytest.raises(ValueError, match="x must be C-contiguous"):
        gl.scan(x[::2])
    with pytest.raises(TypeError, match="inclusive"):
        gl.scan(x, inclusive=1)
    with pytest.raises(ValueError, match="block"):
        gl.scan(x, variant="blelloch", block=48)
    with pytest.raises(ValueError, match="stream"):
        gl.scan(x, variant="serial", stream=gl.Stream() if gl.cuda_available() else 0)
    with pytest.raises(ValueError, match="variant"):
        gl.scan(x, variant="no_such_variant")
    with pytest.raises(TypeError, match="mask must be a bool array"):
        gl.compact(x, x)
    with pytest.raises(ValueError, match="mask"):
        gl.compact(x, np.ones(9, dtype=bool))
    with pytest.raises(TypeError, match="x"):
        gl.nonzero(np.ones(3, dtype=np.complex64))


@pytest.mark.gpu
def test_mixed_placement_is_refused():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match="mask"):
        gl.compact(gl.to_device(x), x > 3)
    with pytest.raises(TypeError, match="CPU"):
        gl.scan(gl.to_device(x), variant="serial")


def test_ladder_order_and_ids():
    """cuda/scan/scan.h's numbering, which the notebook and docs/labs/scan.md cite."""
    assert [(v.id, v.name) for v in gl.variants("scan")] == [
        (0, "hillis_steele"), (1, "blelloch"), (2, "scan_then_propagate"),
        (3, "reduce_then_scan"), (4, "warp_shuffle"), (5, "decoupled_lookback"), (6, "cub"),
        (100, "serial"), (101, "openmp_two_pass")]
    for op in ("compact", "nonzero"):
        assert [(v.id, v.name) for v in gl.variants(op)] == [
            (0, "three_pass"), (1, "single_pass"), (3, "staged"), (4, "counted_staged"), (2, "cub"),
            (100, "serial")]
