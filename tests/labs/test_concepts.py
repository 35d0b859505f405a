"""The concepts lab against NumPy: every variant of divergence, warp_reduce, counter, sin and lookup
at awkward sizes, every block size, NumPy and device operands, user streams, the refusals; the
deliberate races within their bounds. (tests/labs/test_concepts_tools.py: the SASS and the
sanitizers.)"""

import math

import numpy as np
import pytest

import gpulab as gl
from conftest import block_params, rng_for, variant_params
from references import concepts as ref

C = gl.concepts
SIZES = (0, 1, 31, 32, 33, 255, 256, 257, 1023, 1025, 1_000_003)
WHERES = ("numpy", "device")


def where_params(op):
    """(variant, where): NumPy for every variant, device arrays too for the CUDA ones."""
    params = []
    for p in variant_params(op):
        v = p.values[0]
        for where in (WHERES if v.backend == "cuda" else WHERES[:1]):
            params.append(pytest.param(v, where, id=f"{p.id}-{where}", marks=p.marks))
    return params


def call(fn, where, *arrays, **kw):
    """fn on NumPy arrays, or on device copies with the result brought back; checks the type."""
    if where == "numpy":
        got = fn(*arrays, **kw)
        assert isinstance(got, (np.ndarray, np.generic))
        return got
    got = fn(*[gl.to_device(a) for a in arrays], **kw)
    assert isinstance(got, gl.DeviceArray)
    return got.get()


# ---------------------------------------------------------------- lane_pattern


def test_lane_pattern_runs_and_warps():
    keys = C.lane_pattern(100, 16, 4)
    assert keys.dtype == np.int32 and keys.shape == (100,)
    np.testing.assert_array_equal(keys[:40], np.repeat([0, 1, 2], 16)[:40])
    for lanes, distinct in ((1, 4), (16, 2), (32, 1)):
        warps = C.lane_pattern(32 * 64, lanes, 4).reshape(-1, 32)
        assert {len(set(w)) for w in warps} == {distinct}, lanes
    shuffled = C.lane_pattern(4096, 32, 1000, shuffle=True, seed=3)
    np.testing.assert_array_equal(shuffled, C.lane_pattern(4096, 32, 1000, shuffle=True, seed=3))
    assert all(len(set(w)) == 1 for w in shuffled.reshape(-1, 32))
    assert len(set(shuffled)) > 50 and shuffled.min() >= 0 and shuffled.max() < 1000
    assert C.lane_pattern(0, 1, 4).shape == (0,)
    with pytest.raises(ValueError, match="lanes"):
        C.lane_pattern(10, 0, 4)
    with pytest.raises(TypeError, match="values"):
        C.lane_pattern(10, 1, 4.0)


# ---------------------------------------------------------------- divergence


def divergence_inputs(n, lanes=1, seed=0):
    rng = rng_for("divergence", n, lanes, seed)
    x = rng.standard_normal(n).astype(np.float32)
    return x, C.lane_pattern(n, lanes, 8) - 2  # keys below 0 and above 3: key & 3 picks


def test_divergence_reference_is_the_iteration():
    """The closed form and its bound agree with the float64 loop, and the bound is tight enough
    to catch a wrong path: far below the gap between any two paths' results."""
    x, key = divergence_inputs(1000)
    for iterations in (0, 1, 7, 300):
        want, bound = C.divergence_reference(x, key, iterations)
        loop = x.astype(np.float64)
        for _ in range(iterations):
            s, t = np.array(C.PATHS)[np.bitwise_and(key, 3)].T
            loop = loop * s + t
        np.testing.assert_allclose(want, loop, rtol=1e-12, atol=1e-12)
        assert (bound < 1e-2 * (np.abs(want) + 1)).all()
    wrong = C.divergence_reference(x, key + 1, 300)[0]
    want, bound = C.divergence_reference(x, key, 300)
    assert (np.abs(wrong - want) > 100 * bound).all()


@pytest.mark.parametrize("v,where", where_params("divergence"))
def test_divergence_matches_numpy(v, where):
    for n in SIZES:
        for lanes in (1, 16, 32):
            x, key = divergence_inputs(n, lanes)
            for iterations in (0, 3, 128):
                got = call(C.divergence, where, x, key, iterations=iterations, variant=v.id)
                ref.assert_divergence_close(got, x, key, iterations)
                # every variant computes the same fmaf chain: the same bits as the CPU's
                cpu = C.divergence(x, key, iterations, variant="openmp")
                assert got.tobytes() == cpu.tobytes(), f"n={n} lanes={lanes} R={iterations}"


@pytest.mark.parametrize("v,where", where_params("divergence"))
def test_divergence_special_values_and_shapes(v, where):
    x = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e-40, 3.0]).reshape(2, 4)
    key = np.arange(8, dtype=np.int32).reshape(2, 4)
    got = call(C.divergence, where, x, key, iterations=10, variant=v.id)
    assert got.shape == (2, 4)
    ref.assert_divergence_close(got, x, key, 10)


@pytest.mark.parametrize("v,block", block_params("divergence"))
def test_divergence_every_block(v, block):
    for n in (1, 33, block - 1, block + 1, 100_003):
        x, key = divergence_inputs(n, 16, seed=block)
        got = C.divergence(gl.to_device(x), gl.to_device(key), 20, variant=v.id, block=block)
        assert got.get().tobytes() == C.divergence(x, key, 20, variant="openmp").tobytes()


def test_divergence_argument_errors():
    x, key = divergence_inputs(10)
    with pytest.raises(TypeError, match="x has dtype float64"):
        C.divergence(x.astype(np.float64), key)
    with pytest.raises(TypeError, match="key has dtype float32"):
        C.divergence(x, key.astype(np.float32))
    with pytest.raises(ValueError, match="x and key must have the same shape"):
        C.divergence(x, key[:9])
    with pytest.raises(ValueError, match="iterations"):
        C.divergence(x, key, iterations=-1)
    with pytest.raises(ValueError, match="iterations"):
        C.divergence(x, key, iterations=C.MAX_ITERATIONS + 1)
    with pytest.raises(TypeError, match="iterations"):
        C.divergence(x, key, iterations=2.0)
    with pytest.raises(ValueError, match="block"):
        C.divergence(x, key, variant="openmp", block=256)
    with pytest.raises(ValueError, match="stream"):
        C.divergence(x, key, variant="openmp", stream=0)
    with pytest.raises(TypeError, match="key must be a NumPy array"):
        C.divergence(x, list(key))


# ---------------------------------------------------------------- warp_reduce


def warp_reduce_input(n, seed=0, big=False):
    rng = rng_for("warp_reduce", n, seed, big)
    if big:  # sums that wrap around 2**32, as NumPy's int32 sums do
        return rng.integers(2**30, 2**31 - 1, size=n, dtype=np.int32)
    return rng.integers(-1000, 1000, size=n, dtype=np.int32)


@pytest.mark.parametrize("v,where", where_params("warp_reduce"))
def test_warp_reduce_matches_numpy(v, where):
    """The correct variants give the exact sums and no wrong trial; the racy ones are checked
    for consistency only (a wrong last sum was counted wrong), and their count is shown."""
    wrong_seen = 0
    for n in SIZES:
        for big in (False, True):
            x = warp_reduce_input(n, big=big)
            got = call(C.warp_reduce, where, x, trials=3, variant=v.id)
            blocks = -(-n // (C.CPU_BLOCK if v.backend == "cpu" else 256))
            assert got.shape == (2, blocks) and got.dtype == np.int32
            if v.racy:
                ref.assert_warp_reduce_consistent(got, x, 3)
                wrong_seen += int(got[1].sum())
            else:
                ref.assert_warp_reduce_exact(got, x, 3)
    if v.racy:
        print(f"{v.name}: {wrong_seen} wrong block sums")


@pytest.mark.parametrize("v,block", block_params("warp_reduce"))
def test_warp_reduce_every_block(v, block):
    for n in (1, 63, 64, 65, block - 1, block + 1, 100_003):
        x = warp_reduce_input(n, seed=block)
        got = C.warp_reduce(gl.to_device(x), trials=2, variant=v.id, block=block).get()
        assert got.shape == (2, -(-n // block))
        check = ref.assert_warp_reduce_consistent if v.racy else ref.assert_warp_reduce_exact
        check(got, x, 2)


def test_warp_reduce_reference_and_block_of():
    x = np.arange(1000, dtype=np.int32)
    np.testing.assert_array_equal(C.warp_reduce_reference(x, 256),
                                  [x[:256].sum(), x[256:512].sum(), x[512:768].sum(),
                                   x[768:].sum()])
    assert C.block_of(1000, 4) == 256 and C.block_of(1000, 16) == 64 and C.block_of(5, 1) == 1024
    with pytest.raises(ValueError):
        C.block_of(1000, 3)
    sums, wrong = C.warp_reduce(x, variant="block_sums")
    np.testing.assert_array_equal(sums, C.warp_reduce_reference(x, 256))
    assert not wrong.any()
    assert C.warp_reduce(np.zeros((0, 3), np.int32)).shape == (2, 0)
    assert C.warp_reduce(x.reshape(10, 100))[0].sum() == x.sum()  # N-d input is flattened


def test_warp_reduce_consistency_check_can_fail():
    """The racy variants' only check: it must catch a wrong sum that no trial counted."""
    x = warp_reduce_input(1000)
    got = C.warp_reduce(x, variant="block_sums")
    got[0, 1] += 1
    with pytest.raises(AssertionError, match="no trial counted wrong"):
        ref.assert_warp_reduce_consistent(got, x, 1)
    got[1, 1] = 1
    ref.assert_warp_reduce_consistent(got, x, 1)
    got[1, 2] = 5
    with pytest.raises(AssertionError, match="outside"):
        ref.assert_warp_reduce_consistent(got, x, 1)


def test_warp_reduce_argument_errors():
    x = warp_reduce_input(100)
    with pytest.raises(TypeError, match="x has dtype float32"):
        C.warp_reduce(x.astype(np.float32))
    for trials in (0, C.MAX_TRIALS + 1):
        with pytest.raises(ValueError, match="trials"):
            C.warp_reduce(x, trials=trials)
    with pytest.raises(TypeError, match="trials"):
        C.warp_reduce(x, trials=None)
    with pytest.raises(ValueError, match="block=32 is out of range"):
        C.warp_reduce(x, variant="syncwarp", block=32)


# ---------------------------------------------------------------- counter


def counter_input(n, seed=0):
    return rng_for("counter", n, seed).integers(0, 4, size=n, dtype=np.int32)


@pytest.mark.parametrize("v,where", where_params("counter"))
def test_counter_counts(v, where):
    """Exact variants give np.count_nonzero; racy ones a count in [1, expected]."""
    lost = 0
    for n in SIZES + (1 << 22,):
        for x in (counter_input(n), np.ones(n, np.int32), np.zeros(n, np.int32)):
            got = call(C.counter, where, x, variant=v.id)
            assert np.asarray(got).shape == () and np.asarray(got).dtype == np.int64
            if v.racy:
                ref.assert_counter_bounded(got, x)
                lost += int(np.count_nonzero(x)) - int(got)
            else:
                ref.assert_counter_exact(got, x)
    if v.racy:
        print(f"{v.name}: {lost} increments lost")


@pytest.mark.parametrize("v,block", block_params("counter"))
def test_counter_every_block(v, block):
    for n in (1, 31, 32, 33, block - 1, block + 1, 1_000_003):
        x = counter_input(n, seed=block)
        got = C.counter(gl.to_device(x), variant=v.id, block=block).item()
        if v.racy:
            ref.assert_counter_bounded(np.int64(got), x)
        else:
            assert got == np.count_nonzero(x)


def test_counter_argument_errors():
    with pytest.raises(TypeError, match="x has dtype float32"):
        C.counter(np.ones(4, np.float32))
    with pytest.raises(ValueError, match="has no variant"):
        C.counter(np.ones(4, np.int32), variant=99)
    assert C.counter(np.ones((3, 4), np.int32), variant="serial") == 12


# ---------------------------------------------------------------- sin


def sin_input(n, lo=-10.0, hi=10.0, seed=0):
    x = rng_for("sin", n, lo, hi, seed).uniform(lo, hi, size=n).astype(np.float32)
    specials = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, np.pi, -np.pi, 1e-40])
    x[:min(n, specials.size)] = specials[:n]
    return x


@pytest.mark.parametrize("v,where", where_params("sin"))
def test_sin_matches_numpy(v, where):
    intrinsic = v.name == "intrinsic_sinf"
    for n in SIZES:
        for lo, hi in ((-math.pi, math.pi), (-100.0, 100.0), (-1e6, 1e6)):
            x = sin_input(n, lo, hi)
            got = call(C.sin, where, x, variant=v.id)
            ref.assert_sin_close(got, x, intrinsic)
            if not intrinsic:  # sinf: 2 ulp (CUDA) of the rounded result; glibc: under 1
                finite = np.isfinite(x)
                ref.assert_sin_ulp(got[finite], x[finite], 2.5 if v.backend == "cuda" else 1)


@pytest.mark.gpu
def test_intrinsic_sinf_keeps_its_bound_on_minus_pi_pi_and_loses_it_outside():
    """__sinf: within 2^-21.41 on [-pi, pi] (the Programming Guide), and measurably worse
    outside, where its float32 range reduction errs by about |x| * 2^-23."""
    inside = C.sin_error(-math.pi, math.pi, 1 << 20, variants=["intrinsic_sinf"])[0]
    assert inside["max_abs_error"] <= 2 ** -21.41
    outside = C.sin_error(1e4, 2e4, 1 << 20, variants=["intrinsic_sinf"])[0]
    assert outside["max_abs_error"] > 10 * inside["max_abs_error"]
    accurate = C.sin_error(1e4, 2e4, 1 << 20, variants=["sinf"])[0]
    assert accurate["max_abs_error"] < 2 * np.finfo(np.float32).eps


def test_sin_error_table():
    t = C.sin_error(-100, 100, 10_001, variants=["libm_sinf"])
    assert len(t) == 1 and t[0]["name"] == "libm_sinf" and t[0]["samples"] == 10_001
    assert t[0]["max_ulp"] <= 1 and 0 < t[0]["max_abs_error"] < 1e-7
    assert -100 <= t[0]["at_x"] <= 100
    if not gl.cuda_available():
        assert [r["name"] for r in C.sin_error(0, 1, 10)] == ["libm_sinf"]
    with pytest.raises(ValueError, match="lo <= hi"):
        C.sin_error(1, 0)
    with pytest.raises(ValueError, match="lo <= hi"):
        C.sin_error(0, math.inf)
    with pytest.raises(ValueError, match="has no variant"):
        C.sin_error(0, 1, 10, variants=["fast"])


def test_sin_out_and_errors():
    x = sin_input(1000)
    out = np.full_like(x, np.nan)
    assert C.sin(x, variant="libm_sinf", out=out) is out
    ref.assert_sin_close(out, x, intrinsic=False)
    with pytest.raises(TypeError, match="x has dtype float64"):
        C.sin(x.astype(np.float64))
    with pytest.raises(ValueError, match="out and the inputs must have the same shape"):
        C.sin(x, out=out[:10])


# ---------------------------------------------------------------- lookup


def lookup_inputs(n, size, lanes=1, seed=0):
    rng = rng_for("lookup", n, size, lanes, seed)
    table = rng.standard_normal(size).astype(np.float32)
    idx = C.lane_pattern(n, lanes, size + 16, shuffle=True, seed=n + seed) - 8
    return table, idx


@pytest.mark.parametrize("v,where", where_params("lookup"))
def test_lookup_matches_numpy(v, where):
    for size in (1, 2, 255, 256, C.MAX_TABLE):
        for n in SIZES:
            for lanes in (1, 32):
                table, idx = lookup_inputs(n, size, lanes)
                got = call(C.lookup, where, table, idx, variant=v.id)
                ref.assert_lookup_exact(got, table, idx)
    table, idx = lookup_inputs(600, 100)
    got = call(C.lookup, where, table, idx.reshape(20, 30), variant=v.id)
    ref.assert_lookup_exact(got, table, idx.reshape(20, 30))


@pytest.mark.parametrize("v,block", block_params("lookup"))
def test_lookup_every_block(v, block):
    for n in (1, 33, block - 1, block + 1, 1_000_003):
        table, idx = lookup_inputs(n, 1000, lanes=32, seed=block)
        got = C.lookup(gl.to_device(table), gl.to_device(idx), variant=v.id, block=block)
        ref.assert_lookup_exact(got.get(), table, idx)


def test_lookup_edges_and_errors():
    table = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(C.lookup(table, np.int32([-3, 0, 2, 4, 9])), [0, 0, 2, 4, 4])
    assert C.lookup(table[:0], np.int32([])).shape == (0,)  # as np.take: nothing from nothing
    with pytest.raises(ValueError, match="table is empty"):
        C.lookup(table[:0], np.int32([0]))
    with pytest.raises(ValueError, match="at most 8192"):
        C.lookup(np.zeros(C.MAX_TABLE + 1, np.float32), np.int32([0]))
    with pytest.raises(ValueError, match="table must be 1-D"):
        C.lookup(table.reshape(5, 1), np.int32([0]))
    with pytest.raises(TypeError, match="idx has dtype int64"):
        C.lookup(table, np.int64([0]))


# ---------------------------------------------------------------- streams and placement


@pytest.mark.gpu
def test_every_op_on_a_user_stream():
    stream = gl.Stream()
    x, key = divergence_inputs(100_003, 16)
    got = C.divergence(gl.to_device(x, stream=stream), gl.to_device(key, stream=stream), 10,
                       variant=0, stream=stream)
    assert got.__cuda_array_interface__["stream"] == stream.handle
    stream.synchronize()
    ref.assert_divergence_close(got.get(), x, key, 10)
    w = warp_reduce_input(100_003)
    ref.assert_warp_reduce_exact(
        C.warp_reduce(gl.to_device(w, stream=stream), 2, variant=2, stream=stream).get(), w, 2)
    c = counter_input(100_003)
    assert C.counter(gl.to_device(c, stream=stream), variant=4, stream=stream).item() == \
        np.count_nonzero(c)
    s = sin_input(100_003)
    ref.assert_sin_close(C.sin(gl.to_device(s, stream=stream), variant=0, stream=stream).get(),
                         s, intrinsic=False)
    table, idx = lookup_inputs(100_003, 300)
    for v in range(3):
        got = C.lookup(gl.to_device(table, stream=stream), gl.to_device(idx, stream=stream),
                       variant=v, stream=stream)
        ref.assert_lookup_exact(got.get(), table, idx)


@pytest.mark.gpu
def test_constant_lookups_on_two_streams_keep_their_tables():
    """One __constant__ table per device: calls on different streams take turns, so each reads
    its own table even when they are queued back to back."""
    streams = [gl.Stream(), gl.Stream()]
    rng = rng_for("two streams")
    tables = [rng.standard_normal(4096).astype(np.float32) for _ in streams]
    idx = rng.integers(0, 4096, size=1 << 22, dtype=np.int32)
    runs = []
    for _ in range(8):
        for t, s in zip(tables, streams):
            runs.append((t, C.lookup(gl.to_device(t, stream=s), gl.to_device(idx, stream=s),
                                     variant="constant", stream=s)))
    for s in streams:
        s.synchronize()
    for t, got in runs:
        np.testing.assert_array_equal(got.get(), t[idx])


@pytest.mark.gpu
def test_device_results_and_refusals():
    x = counter_input(1000)
    got = C.counter(gl.to_device(x))
    assert isinstance(got, gl.DeviceArray) and got.shape == () and got.dtype == np.int64
    table, idx = lookup_inputs(10, 20)
    with pytest.raises(ValueError, match="mixed devices"):
        C.lookup(gl.to_device(table), idx)
    with pytest.raises(TypeError, match="runs on the CPU"):
        C.lookup(gl.to_device(table), gl.to_device(idx), variant="openmp")
    w = gl.to_device(warp_reduce_input(1000))
    assert C.warp_reduce(w, variant="shuffle", block=1024).shape == (2, 1)


# ---------------------------------------------------------------- the registry


def test_racy_variants_are_exactly_the_deliberate_races():
    racy = {(v.op, v.name) for v in gl.variants() if v.racy}
    assert racy == {("warp_reduce", "lockstep_plain"), ("warp_reduce", "lockstep_volatile"),
                    ("counter", "racy_increment"), ("counter", "openmp_racy")}
    for v in gl.variants():
        if v.racy:
            assert not v.deterministic and not v.best, v
            assert "race" in v.summary, v


def test_ids_follow_the_abi_header():
    """The names and ids of cuda/concepts/concepts.h, which the dispatch uses."""
    ids = {op: {v.name: v.id for v in gl.variants(op)}
           for op in ("divergence", "warp_reduce", "counter", "sin", "lookup")}
    assert ids == {
        "divergence": {"branch_per_key": 0, "branch_free": 1, "all_paths_select": 2,
                       "openmp": 100},
        "warp_reduce": {"lockstep_plain": 0, "lockstep_volatile": 1, "syncwarp": 2,
                        "shuffle": 3, "block_sums": 100},
        "counter": {"racy_increment": 0, "atomic_add": 1, "atomic_per_thread": 2,
                    "warp_aggregated": 3, "block_aggregated": 4, "serial": 100,
                    "openmp_racy": 101, "openmp_atomic": 102},
        "sin": {"sinf": 0, "intrinsic_sinf": 1, "libm_sinf": 100},
        "lookup": {"constant": 0, "global_ldg": 1, "shared": 2, "openmp": 100},
    }
    assert all(v.lab == "concepts" for op in ids for v in gl.variants(op))


def test_the_lab_is_a_namespace():
    import gpulab.labs.concepts as module
    assert gl.concepts is module and module.EXPORTS == ()
    assert not hasattr(gl, "divergence") and not hasattr(gl, "lookup")
