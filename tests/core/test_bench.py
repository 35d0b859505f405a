"""bench() and sweep(): what they measure, how they say it, and what they refuse."""

import dataclasses
import importlib
import math

import numpy as np
import pytest

import gpulab as gl
from references.saxpy import saxpy_inputs
from gpulab import peers as gl_peers
from gpulab._op import Cost
from gpulab.bench import bound_of
from gpulab.report import results_table

# gl.bench is the function; the module holds the ceilings() that bench() reads
bench_module = importlib.import_module("gpulab.bench")

N = 100_003


def check_consistent(r, n, itemsize, repeat):
    assert isinstance(r, gl.BenchResult)
    assert r.op == "saxpy" and r.size == n
    assert len(r.samples) == repeat and all(s > 0 for s in r.samples)
    assert r.min_ms == min(r.samples) and r.max_ms == max(r.samples)
    assert r.min_ms <= r.median_ms <= r.max_ms
    assert r.bytes == 3 * n * itemsize  # read x and y, write out
    assert r.flops == 2 * n
    assert r.gbps > 0 and r.gflops > 0 and r.frac_copy > 0 and r.frac_fma > 0
    assert math.isclose(r.gbps, r.bytes / r.median_ms / 1e6, rel_tol=1e-9)
    assert math.isclose(r.gflops, r.flops / r.median_ms / 1e6, rel_tol=1e-9)
    name = next(v.name for v in gl.variants("saxpy") if v.id == r.variant)
    assert r.variant_name == name
    d = r.to_dict()
    assert d["median_ms"] == r.median_ms and d["samples"] == r.samples
    assert r.op in str(r) and r.variant_name in str(r)
    # 1 flop per 6 bytes (float32) is under any device's balance
    assert r.bound == "memory" and r.unit is None and r.unit_rate is None
    assert (d["bound"], d["unit"], d["unit_rate"]) == ("memory", None, None)
    assert "GB/s" in str(r) and "of copy" in str(r)
    assert "GFLOP/s" not in str(r) and "of FMA" not in str(r)


def table_rows(text):
    """results_table's text as {column: cell} per row; a blank cell reads as ''. Column edges
    come from the dashed line under the header."""
    lines = text.splitlines()
    spans, start = [], 0
    for dashes in lines[1].split("  "):
        spans.append((start, start + len(dashes)))
        start += len(dashes) + 2
    cut = lambda line: [line[a:b].strip() for a, b in spans]
    header = cut(lines[0])
    return header, [dict(zip(header, cut(line))) for line in lines[2:]]


def test_bench_cpu_variant():
    a, x, y = saxpy_inputs(N, np.float32)
    v = next(w for w in gl.variants("saxpy") if w.backend == "cpu")
    r = gl.bench(gl.saxpy, a, x, y, variant=v.id, repeat=3, warmup=1)
    check_consistent(r, N, 4, 3)
    assert r.bytes == 12 * N
    assert (r.variant, r.backend, r.timer) == (v.id, "cpu", "perf_counter")
    assert r.transfers_included is False and r.l2_flushed is False
    assert r.dtype == "float32" and r.peers == {}
    assert r.device == gl.ceilings("cpu")["device"]


def test_bench_by_name_and_float64():
    a, x, y = saxpy_inputs(N, np.float64)
    v = next(w for w in gl.variants("saxpy") if w.backend == "cpu")
    r = gl.bench(gl.saxpy, a, x, y, variant=v.name, repeat=2, warmup=0)
    check_consistent(r, N, 8, 2)
    assert r.variant == v.id and r.dtype == "float64"


def test_bench_refuses():
    a, x, y = saxpy_inputs(16, np.float32)
    with pytest.raises(TypeError, match="bench\\(\\) times a callable.*got int"):
        gl.bench(42, x)
    with pytest.raises(ValueError):
        gl.bench(gl.saxpy, a, x, y, variant=100, repeat=0)
    with pytest.raises(ValueError):
        gl.bench(gl.saxpy, a, x, y, variant=100, warmup=-1)
    with pytest.raises(ValueError):
        gl.bench(gl.saxpy, a, x, y, variant="nope")
    with pytest.raises(TypeError):  # the op's own checks run before anything is timed
        gl.bench(gl.saxpy, a, x, y.astype(np.float64), variant=100)


def test_ceilings_cpu():
    c = gl.ceilings("cpu")
    assert c["where"] == "cpu" and c["copy_gbps"] > 0 and c["fma_gflops"] > 0
    assert c["threads"] == gl.build_info()["openmp_threads"]
    with pytest.raises(ValueError):
        gl.ceilings("tpu")


# ---------------------------------------------------------------- the bound and its columns


def test_bound_compares_intensity_with_balance():
    balanced = {"copy_gbps": 100.0, "fma_gflops": 1000.0}  # balance 10 flop/B
    assert bound_of(Cost(bytes=100, flops=999), balanced) == "memory"
    assert bound_of(Cost(bytes=100, flops=1000), balanced) == "memory"  # on the ridge: not over
    assert bound_of(Cost(bytes=100, flops=1001), balanced) == "compute"
    # the same op moves to the other side on a device with another balance
    cost = Cost(bytes=28 * 1000, flops=20 * 1000 ** 2)  # nbody_accel, 1000 bodies: 714 flop/B
    assert bound_of(cost, balanced) == "compute"
    assert bound_of(cost, {"copy_gbps": 1.0, "fma_gflops": 1e6}) == "memory"
    assert bound_of(Cost(bytes=0, flops=1), balanced) == "compute"
    assert bound_of(Cost(bytes=0, flops=0), balanced) == "memory"


@pytest.mark.parametrize("copy_gbps, fma_gflops, bound", [(1000.0, 1.0, "compute"),
                                                           (1.0, 1000.0, "memory")])
def test_bench_takes_the_bound_from_the_ceilings_where_it_runs(monkeypatch, copy_gbps,
                                                               fma_gflops, bound):
    asked = []

    def synthetic(where=None, refresh=False):
        asked.append(where)
        return {"where": where, "device": "synthetic", "copy_gbps": copy_gbps,
                "fma_gflops": fma_gflops}

    monkeypatch.setattr(bench_module, "ceilings", synthetic)
    a, x, y = saxpy_inputs(1000, np.float32)  # 1/6 flop/B: over a balance of 0.001
    v = next(w for w in gl.variants("saxpy") if w.backend == "cpu")
    r = gl.bench(gl.saxpy, a, x, y, variant=v.id, repeat=1, warmup=0)
    assert asked == ["cpu"] and r.device == "synthetic"
    assert r.bound == bound and r.to_dict()["bound"] == bound


def nbody_cpu_results(bodies=512):
    # 512 bodies: 366 flop/B, over the balance of any CPU
    pos, _, mass = gl.plummer(bodies, seed=3)
    return [gl.bench(gl.nbody_accel, pos, mass, 0.05, variant=v.id, repeat=2, warmup=1)
            for v in gl.variants("nbody_accel") if v.backend == "cpu"]


def test_nbody_is_compute_bound_in_its_own_unit():
    results = nbody_cpu_results()
    assert results
    for r in results:
        assert r.bound == "compute"
        assert r.unit == "G interactions/s"
        assert math.isclose(r.unit_rate, 512 ** 2 / r.median_ms / 1e6, rel_tol=1e-9)
        assert math.isclose(r.gflops, 20 * r.unit_rate, rel_tol=1e-9)
        d = r.to_dict()
        assert (d["bound"], d["unit"], d["unit_rate"]) == ("compute", r.unit, r.unit_rate)
        text = str(r)
        assert "GFLOP/s" in text and "G interactions/s" in text and "of FMA" in text
        assert "GB/s" not in text and "of copy" not in text
    header, rows = table_rows(results_table(results))
    assert header == ["id", "variant", "backend", "ms", "GFLOP/s", "G interactions/s", "of FMA"]
    for r, row in zip(results, rows):
        assert float(row["GFLOP/s"]) > 0 and float(row["G interactions/s"]) > 0
        assert float(row["of FMA"]) > 0
        assert math.isclose(float(row["G interactions/s"]), r.unit_rate, rel_tol=0.06)


def test_saxpy_table_shows_bandwidth():
    a, x, y = saxpy_inputs(N, np.float32)
    results = [gl.bench(gl.saxpy, a, x, y, variant=v.id, repeat=2, warmup=0)
               for v in gl.variants("saxpy") if v.backend == "cpu"]
    header, rows = table_rows(results_table(results))
    assert header == ["id", "variant", "backend", "ms", "GB/s", "of copy"]
    for r, row in zip(results, rows):
        assert float(row["GB/s"]) > 0 and float(row["of copy"]) > 0
        assert math.isclose(float(row["GB/s"]), r.gbps, rel_tol=0.06)


def test_a_table_of_mixed_bounds_has_both_column_sets_with_blanks():
    a, x, y = saxpy_inputs(N, np.float32)
    v = next(w for w in gl.variants("saxpy") if w.backend == "cpu")
    saxpy = gl.bench(gl.saxpy, a, x, y, variant=v.id, repeat=1, warmup=0)
    # a row whose flops bound it and whose bytes are negligible: its GB/s must not show
    compute = dataclasses.replace(nbody_cpu_results()[0], gbps=1e-6, frac_copy=1e-9)
    header, rows = table_rows(results_table([saxpy, compute]))
    assert header == ["id", "variant", "backend", "ms", "GB/s", "of copy", "GFLOP/s",
                      "G interactions/s", "of FMA"]
    memory_row, compute_row = rows
    assert memory_row["GB/s"] and memory_row["of copy"]
    assert memory_row["GFLOP/s"] == memory_row["G interactions/s"] == memory_row["of FMA"] == ""
    assert compute_row["GB/s"] == compute_row["of copy"] == ""
    assert compute_row["GFLOP/s"] and compute_row["G interactions/s"] and compute_row["of FMA"]


def test_slow_rates_keep_their_digits():
    r = dataclasses.replace(nbody_cpu_results()[0], gflops=0.0123, unit_rate=0.000615,
                            frac_fma=0.00042)
    _, (row,) = table_rows(results_table([r]))
    assert (row["GFLOP/s"], row["G interactions/s"], row["of FMA"]) == ("0.0123", "0.000615",
                                                                        "0.00042")


def test_sweep_over_variants():
    pd = pytest.importorskip("pandas")
    a, x, y = saxpy_inputs(N, np.float32)
    cpu_ids = [v.id for v in gl.variants("saxpy") if v.backend == "cpu"]
    res = gl.sweep(gl.saxpy, a, x, y, variant=cpu_ids, repeat=2, warmup=0, progress=False)
    assert isinstance(res, gl.SweepResults) and isinstance(res, list)
    assert [r.variant for r in res] == cpu_ids and res.skipped == []
    for r in res:
        check_consistent(r, N, 4, 2)
    df = res.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == len(cpu_ids)
    assert list(df["variant"]) == cpu_ids
    assert {"median_ms", "gbps", "backend"} <= set(df.columns)


def test_sweep_skips_what_the_op_refuses():
    a, x, y = saxpy_inputs(1000, np.float32)
    cpu = [v.id for v in gl.variants("saxpy") if v.backend == "cpu"]
    with pytest.warns(UserWarning, match="skipped"):
        res = gl.sweep(gl.saxpy, a, x, y, variant=cpu, block=[64], repeat=1, warmup=0,
                       progress=False)
    assert len(res) == 0
    assert [combo for combo, _ in res.skipped] == [{"variant": i, "block": 64} for i in cpu]
    assert all("block" in why for _, why in res.skipped)


def test_sweep_progress_goes_to_stderr(capsys):
    a, x, y = saxpy_inputs(1000, np.float32)
    cpu = [v.id for v in gl.variants("saxpy") if v.backend == "cpu"]
    gl.sweep(gl.saxpy, a, x, y, variant=cpu, repeat=1, warmup=0, progress=True)
    assert capsys.readouterr().out == ""


# ---------------------------------------------------------------- any callable


def test_bench_times_a_plain_callable():
    a = np.random.default_rng(1).random(20_000)
    r = gl.bench(lambda: np.sort(a), budget_s=0.2)
    assert isinstance(r, gl.BenchResult)
    assert (r.op, r.variant, r.variant_name, r.backend, r.bound) == ("<lambda>", None, "",
                                                                     "cpu", "")
    assert r.timer == "perf_counter" and r.l2_flushed is False and r.peers == {}
    assert len(r.samples) >= bench_module.MIN_REPEAT and all(s > 0 for s in r.samples)
    assert r.min_ms == min(r.samples) <= r.median_ms <= r.max_ms == max(r.samples)
    assert r.median_ms == float(np.median(r.samples))
    # no cost model: no rates, rather than made-up ones
    assert (r.bytes, r.flops, r.gbps, r.gflops, r.frac_copy, r.frac_fma) == (None,) * 6
    assert r.unit is None and r.unit_rate is None
    assert r.device == gl.ceilings("cpu")["device"]
    assert "<lambda>" in str(r) and f"{r.median_ms:.4f} ms" in str(r) and "GB/s" not in str(r)
    assert r.to_dict()["samples"] == r.samples
    # it can be tabled beside gpulab's own results
    assert f"{r.median_ms:.4f}" in results_table([r])


def test_bench_passes_arguments_to_a_plain_callable():
    a = np.random.default_rng(2).random(5000)
    r = gl.bench(np.sort, a, kind="stable", budget_s=0.1)
    assert (r.op, r.size, r.dtype, r.params) == ("sort", 5000, "float64", {"kind": "stable"})
    # a gpulab CPU variant through a lambda is a plain callable too: times, no rates
    b, x, y = saxpy_inputs(N, np.float32)
    cpu = next(v for v in gl.variants("saxpy") if v.backend == "cpu")
    r = gl.bench(lambda: gl.saxpy(b, x, y, variant=cpu.id), budget_s=0.1)
    assert r.variant is None and r.gbps is None and r.median_ms > 0


def counting(seconds=0.0):
    """A callable that sleeps for seconds, and the list of the times it was called."""
    import time
    calls = []

    def fn():
        calls.append(time.perf_counter())
        if seconds:
            time.sleep(seconds)

    return fn, calls


def test_bench_keeps_within_its_budget():
    import time
    fn, calls = counting(0.005)
    t0 = time.perf_counter()
    r = gl.bench(fn, budget_s=0.3)
    spent = time.perf_counter() - t0
    # one untimed first call, then the budget; the last call may end within its own length
    assert spent < 0.3 + 0.1, spent
    assert spent > 0.3 * 0.8, spent  # and it is used: more samples pin the median better
    assert bench_module.MIN_REPEAT <= len(r.samples) <= 0.3 / 0.005
    assert len(calls) > len(r.samples)  # warm-up calls ran first, untimed
    assert all(s >= 5.0 for s in r.samples)


def test_repeat_caps_the_timed_calls_and_no_budget_means_exactly_repeat():
    fn, calls = counting()
    r = gl.bench(fn, repeat=7, budget_s=1.0)
    assert len(r.samples) == 7
    fn, calls = counting()
    r = gl.bench(fn, repeat=4, warmup=2, budget_s=math.inf)
    assert len(r.samples) == 4 and len(calls) == 1 + 2 + 4  # first call, warm-up, timed


def test_a_call_longer_than_the_budget_still_gets_its_minimum_samples():
    fn, calls = counting(0.03)
    r = gl.bench(fn, budget_s=0.01)
    assert len(r.samples) == bench_module.MIN_REPEAT
    r = gl.bench(fn, budget_s=0.01, repeat=2)
    assert len(r.samples) == 2


def test_a_gpulab_op_under_a_budget():
    a, x, y = saxpy_inputs(N, np.float32)
    cpu = next(v for v in gl.variants("saxpy") if v.backend == "cpu")
    r = gl.bench(gl.saxpy, a, x, y, variant=cpu.id, budget_s=0.1, repeat=10_000)
    assert bench_module.MIN_REPEAT <= len(r.samples) < 10_000
    assert r.gbps > 0 and r.bound == "memory"  # the op's own path: its cost model


@pytest.mark.parametrize("options, words", [
    ({"repeat": -1}, "repeat must be an integer >= 1"),
    ({"repeat": 0}, "repeat must be an integer >= 1"),
    ({"repeat": 2.5}, "repeat must be an integer >= 1"),
    ({"warmup": -1}, "warmup must be an integer >= 0"),
    ({"budget_s": 0}, "budget_s must be a positive number"),
    ({"budget_s": -1.0}, "budget_s must be a positive number"),
    ({"budget_s": "1s"}, "budget_s must be a positive number"),
    ({"peers": True}, "not a gpulab op"),
])
def test_bench_refuses_bad_options_for_any_callable(options, words):
    fn, calls = counting()
    with pytest.raises(ValueError, match=words):
        gl.bench(fn, **options)
    assert calls == []  # refused before anything ran


def test_bench_refuses_what_is_not_callable_and_passes_the_callable_errors_on():
    for thing in (None, "np.sort", np.zeros(3)):
        with pytest.raises(TypeError, match="bench\\(\\) times a callable"):
            gl.bench(thing)
    with pytest.raises(ZeroDivisionError):
        gl.bench(lambda: 1 / 0)


# ---------------------------------------------------------------- on the GPU


@pytest.mark.gpu
def test_bench_device_arrays():
    a, x, y = saxpy_inputs(1 << 20, np.float32)
    dx, dy = gl.to_device(x), gl.to_device(y)
    for v in gl.variants("saxpy"):
        if v.backend != "cuda":
            continue
        r = gl.bench(gl.saxpy, a, dx, dy, variant=v.id, repeat=5, warmup=2)
        check_consistent(r, 1 << 20, 4, 5)
        assert (r.backend, r.timer) == ("cuda", "cuda-events")
        assert r.l2_flushed is True and r.transfers_included is False
        assert r.device == gl.device_info()["name"]
    r = gl.bench(gl.saxpy, a, dx, dy, repeat=2, warmup=0, flush_l2=False)
    assert r.l2_flushed is False
    assert r.variant == next(v.id for v in gl.variants("saxpy") if v.backend == "cuda" and v.best)


@pytest.mark.gpu
def test_bench_numpy_through_cuda_variant():
    a, x, y = saxpy_inputs(1 << 16, np.float32)
    v = next(v for v in gl.variants("saxpy") if v.backend == "cuda")
    r = gl.bench(gl.saxpy, a, x, y, variant=v.id, repeat=3, warmup=1)
    check_consistent(r, 1 << 16, 4, 3)
    assert r.transfers_included is True and r.timer == "perf_counter" and r.backend == "cuda"


@pytest.mark.gpu
def test_bench_peers():
    a, x, y = saxpy_inputs(1 << 20, np.float32)
    dx, dy = gl.to_device(x), gl.to_device(y)
    r = gl.bench(gl.saxpy, a, dx, dy, repeat=3, warmup=1, peers=True)
    expected = {name for name in ("cupy", "torch") if gl_peers.available(name)}
    assert set(r.peers) == expected
    for name, p in r.peers.items():
        assert p["median_ms"] > 0 and p["speedup"] > 0 and p["gbps"] > 0
        assert math.isclose(p["speedup"], p["median_ms"] / r.median_ms, rel_tol=1e-9)
        assert p["version"]


@pytest.mark.gpu
def test_bench_a_plain_callable_on_device_arrays_uses_events():
    a, x, y = saxpy_inputs(1 << 20, np.float32)
    dx, dy = gl.to_device(x), gl.to_device(y)
    r = gl.bench(lambda: gl.saxpy(a, dx, dy), budget_s=0.2)
    assert (r.backend, r.timer, r.l2_flushed) == ("cuda", "cuda-events", True)
    assert r.device == gl.device_info()["name"] and r.gbps is None
    r = gl.bench(lambda: gl.saxpy(a, x, y), budget_s=0.2)  # NumPy in: the host's clock
    assert (r.backend, r.timer) == ("cpu", "perf_counter")


@pytest.mark.gpu
@pytest.mark.parametrize("library", ["cupy", "torch"])
def test_bench_a_peer_library_call_on_its_current_stream(library):
    lib = pytest.importorskip(library)
    if not gl_peers.available(library):
        pytest.skip(f"{library} sees no GPU")
    x = np.random.default_rng(0).random(1 << 20).astype(np.float32)
    d = lib.asarray(x) if library == "cupy" else lib.from_numpy(x).cuda()
    r = gl.bench(lambda: lib.sort(d), budget_s=0.2)
    assert (r.backend, r.timer, r.op) == ("cuda", "cuda-events", "<lambda>")
    assert r.median_ms > 0 and len(r.samples) >= 5


@pytest.mark.gpu
def test_sweep_blocks_and_mixed_backends():
    a, x, y = saxpy_inputs(1 << 18, np.float32)
    dx, dy = gl.to_device(x), gl.to_device(y)
    cuda = [v for v in gl.variants("saxpy") if v.backend == "cuda" and "block" in v.tunables]
    blocks = cuda[0].tunables["block"]["values"][:2]
    res = gl.sweep(gl.saxpy, a, dx, dy, variant=[v.id for v in cuda], block=blocks, repeat=2,
                   warmup=0, progress=False)
    assert [(r.variant, r.params["block"]) for r in res] == [
        (v.id, b) for v in cuda for b in blocks]
    cpu = next(v for v in gl.variants("saxpy") if v.backend == "cpu")
    res = gl.sweep(gl.saxpy, a, x, y, variant=[cpu.id, cuda[0].id], block=[64], repeat=1,
                   warmup=0, progress=False)
    assert [r.variant for r in res] == [cuda[0].id]
    assert [c["variant"] for c, _ in res.skipped] == [cpu.id]


def test_an_op_unit_shows_on_memory_bound_rows():
    """Mandelbrot's cost counts the image it writes (its iterations are data), so it reads as
    memory-bound; its Gpixels/s still belongs in the row and the table."""
    from gpulab.report import results_table
    r = gl.bench(gl.mandelbrot, 64, 48, (-2.0, 0.5), (-1.25, 1.25), 32, variant="openmp",
                 repeat=2, warmup=0)
    assert r.bound == "memory" and r.unit == "Gpixels/s" and r.unit_rate > 0
    assert "Gpixels/s" in str(r)
    header = results_table([r]).splitlines()[0].split()
    assert "Gpixels/s" in header and "GFLOP/s" not in header
