"""compare() and python -m gpulab compare: S3 §12.5's rules on synthetic sample sets (seeded),
correctness apart from performance, results on one side only, and the command's exit status."""

import copy
import dataclasses
import re
import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import gpulab as gl
from conftest import child_env
from gpulab import store
from gpulab.compare import (bootstrap_medians, bootstrap_ratio_interval, compare, mann_whitney,
                            rank)
from references.saxpy import saxpy_inputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNS = 20  # timed repetitions per result, bench()'s default
SEEDS = range(10)


def result(samples, bound="memory", **changes):
    """A BenchResult made from its samples as bench() makes one: median, min, max and the
    rates from a fixed cost."""
    samples = [float(s) for s in samples]
    median = float(np.median(samples))
    nbytes, flops = 3 * (1 << 24) * 4, 2 * (1 << 24)
    values = dict(op="saxpy", variant=2, variant_name="vec16_tiles", backend="cuda",
                  params={"block": 256}, device="NVIDIA H100 80GB HBM3", size=1 << 24,
                  dtype="float32", transfers_included=False, timer="cuda-events",
                  median_ms=median, min_ms=min(samples), max_ms=max(samples), samples=samples,
                  bytes=nbytes, flops=flops, gbps=nbytes / median / 1e6,
                  gflops=flops / median / 1e6, frac_copy=0.9, frac_fma=0.01, bound=bound,
                  l2_flushed=True)
    values.update(changes)
    return gl.BenchResult(**values)


def noisy(seed, scale=1.0, noise=0.01, runs=RUNS, median_ms=0.2):
    """runs timings around median_ms * scale with a relative spread of noise (one sigma)."""
    rng = np.random.default_rng(seed)
    return median_ms * scale * (1 + noise * rng.standard_normal(runs))


def main_job_document():
    """A saved main job, as python -m gpulab --json writes one: event-timed GPU results with 20
    runs at 1% noise, and host-timed CPU results with 5 runs at 10%."""
    ladder = [("saxpy", 0, "one_per_thread"), ("saxpy", 1, "grid_stride"),
              ("saxpy", 2, "vec16_tiles"), ("reduce", 5, "complete_unroll"),
              ("reduce", 12, "vec16_single_pass"), ("dot", 0, "vec16"), ("norm2", 0, "vec16")]
    cpu = [("saxpy", 100, "serial"), ("saxpy", 101, "openmp_simd"), ("reduce", 103, "openmp")]
    results = []
    for i, (op, variant, name) in enumerate(ladder):
        results.append(result(noisy(50 + i), op=op, variant=variant, variant_name=name,
                              params={}).to_dict())
    for i, (op, variant, name) in enumerate(cpu):
        results.append(result(noisy(80 + i, noise=0.1, runs=5, median_ms=20.0), op=op,
                              variant=variant, variant_name=name, backend="cpu", params={},
                              device="AMD EPYC", timer="perf_counter",
                              l2_flushed=False).to_dict())
    return {"meta": {"commit": "abc1234", "device": "NVIDIA H100 80GB HBM3"},
            "results": results}


def pair(seed, scale, noise=0.01, **changes):
    base = result(noisy(seed, noise=noise), **changes)
    new = result(noisy(seed + 1000, scale, noise), **changes)
    return base, new


def lognormal(seed, spread, runs=RUNS, scale=1.0, median_ms=2.0):
    """runs timings whose logarithms spread by `spread` (one sigma): 0.3 is a host timing on a
    busy machine, skewed to the slow side as those are."""
    rng = np.random.default_rng(seed)
    return median_ms * scale * np.exp(spread * rng.standard_normal(runs))


def flagged(c):
    return len(c.regressions) + len(c.improvements)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_ten_percent_slowdown_is_a_regression(seed):
    base, new = pair(seed, 1.10)
    c = compare([base], [new])
    assert len(c.regressions) == 1 and not c.unchanged and not c.ok
    change = c.regressions[0]
    assert change.time.verdict == "regression" and 0.07 < change.time.change < 0.13
    assert change.rate.verdict == "regression" and change.rate.name == "GB/s"
    # the interval lies wholly past the tolerance, and the rank test agrees
    assert 0.04 < change.time.low < change.time.change < change.time.high
    assert change.rate.high < -0.03 and change.deciding.p < 0.001
    assert (change.deciding.base_runs, change.deciding.runs) == (RUNS, RUNS)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("scale", [1.0, 1.01, 0.99])
def test_run_to_run_noise_of_one_percent_is_unchanged(seed, scale):
    base, new = pair(seed, scale)
    c = compare([base], [new])
    assert len(c.unchanged) == 1 and c.ok, str(c)


@pytest.mark.parametrize("spread", [0.1, 0.2, 0.3])
def test_twenty_identical_noisy_runs_compared_with_each_other_flag_nothing(spread):
    """The runs' medians differ by up to 30% (0.3) from one another by chance alone: none of
    the 190 pairs may be called a change."""
    runs = [result(lognormal(seed, spread)) for seed in range(20)]
    medians = [r.median_ms for r in runs]
    assert max(medians) / min(medians) > 1 + spread / 2  # far past the 4% tolerance
    flags = [(i, j) for i in range(20) for j in range(i + 1, 20)
             if flagged(compare([runs[i]], [runs[j]]))]
    assert flags == []


@pytest.mark.parametrize("spread, runs", [(0.1, 300), (0.2, 1000), (0.3, 3000)])
@pytest.mark.parametrize("seed", range(3))
def test_a_ten_percent_slowdown_in_noisy_runs_is_caught_given_enough_runs(spread, runs, seed):
    base = result(lognormal(seed, spread, runs))
    new = result(lognormal(seed + 1000, spread, runs, scale=1.10))
    [change] = compare([base], [new]).regressions
    assert 0.04 < change.time.low and 0.05 < change.time.change < 0.15


def test_a_ten_percent_slowdown_in_too_few_noisy_runs_is_within_noise():
    base, new = result(lognormal(0, 0.3)), result(lognormal(1000, 0.3, scale=1.10))
    c = compare([base], [new])
    assert len(c.unchanged) == 1 and c.ok
    [row] = c.table
    assert row["note"] in ("within noise", "")  # past the tolerance or not, by chance
    assert c.unchanged[0].time.low < 0 < c.unchanged[0].time.high


def test_five_runs_a_side_are_too_few_to_tell():
    """The main job's CPU results have 5 runs: even when every new run is slower than every
    baseline run, the rank test's p is 2/252, so nothing is flagged at 99.9%."""
    base, new = result(noisy(0, runs=5)), result(noisy(1, 1.5, runs=5))
    c = compare([base], [new])
    assert c.ok and len(c.unchanged) == 1
    assert c.unchanged[0].time.p == pytest.approx(2 / 252)
    assert c.table[0]["note"] == "too few runs to tell (5 vs 5)"
    assert compare([base], [new], confidence=0.99).regressions  # p < 0.01 there


def real_runs(variant, n=1 << 12, runs=20, per_run=20):
    """runs BenchResults of one CPU variant of saxpy, measured for real: one bench() of
    runs * per_run repetitions dealt round-robin, so each run sees the same machine (a load
    that comes and goes falls on all of them alike)."""
    a, x, y = saxpy_inputs(n, np.float32)
    r = gl.bench(gl.saxpy, a, x, y, variant=variant, repeat=runs * per_run, warmup=5)
    samples = np.array(r.samples)
    return [dataclasses.replace(r, samples=[float(v) for v in part],
                                median_ms=float(np.median(part)), min_ms=float(part.min()),
                                max_ms=float(part.max()),
                                gbps=r.bytes / float(np.median(part)) / 1e6,
                                gflops=r.flops / float(np.median(part)) / 1e6)
            for part in (samples[i::runs] for i in range(runs))]


@pytest.mark.parametrize("backend_index", [0, -1])
def test_real_cpu_runs_of_a_variant_flag_nothing_and_a_real_slowdown_is_caught(backend_index):
    """Real runs: a burst of load from the tests beside it (on CI's two cores the kernel
    emulations run hundreds of threads) can make the samples bimodal, and then no median
    resolves 10%. So each of three measurements may fail; the last must flag no pair of runs, and
    catch the slowdown or else miss it only with noise too wide to tell (interquartile range
    past 20% of the median, measured apart from the compare) and an interval holding the +10%."""
    variant = [v.id for v in gl.variants("saxpy") if v.backend == "cpu"][backend_index]
    # the same real noise, 10% slower: ten runs a side pooled are enough. The sides take every
    # other run, so that a machine whose load drifts during the test (on a loaded GPU host the
    # samples moved between 1.2 and 2.0 us) gives both sides the same noise
    pooled = lambda part, scale: dataclasses.replace(
        part[0], samples=[scale * s for r in part for s in r.samples],
        median_ms=scale * float(np.median([s for r in part for s in r.samples])))
    for attempt in range(3):
        runs = real_runs(variant)
        flags = [(i, j) for i in range(20) for j in range(i + 1, 20)
                 if flagged(compare([runs[i]], [runs[j]]))]
        c = compare([pooled(runs[0::2], 1.0)], [pooled(runs[1::2], 1.10)])
        if not flags and len(c.regressions) == 1:
            break
    else:
        assert flags == [], [str(compare([runs[i]], [runs[j]])) for i, j in flags[:2]]
        q1, q2, q3 = np.percentile([s for r in runs[0::2] for s in r.samples], [25, 50, 75])
        [change] = c.unchanged
        assert (q3 - q1) / q2 > 0.2 and change.time.low < 0.10 < change.time.high, (
            f"missed with an interquartile range of {(q3 - q1) / q2:.0%} of the median\n{c}")


def test_a_spike_in_one_or_two_runs_is_not_a_regression():
    for seed in SEEDS:
        for spikes in (1, 2):
            base = result(noisy(seed))
            samples = noisy(seed + 1000)
            samples[[3, 11][:spikes]] *= 3.0
            c = compare([base], [result(samples)])
            assert len(c.unchanged) == 1 and c.ok, str(c)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_ten_percent_speedup_is_an_improvement(seed):
    base, new = pair(seed, 1 / 1.10)
    c = compare([base], [new])
    assert len(c.improvements) == 1 and c.ok
    assert c.improvements[0].rate.change > 0.07 and c.improvements[0].rate.low > 0.03


@pytest.mark.parametrize("seed", SEEDS)
def test_a_change_in_only_some_runs_does_not_pin_the_median(seed):
    # 12 of 20 runs 10% slower: the median moves past the tolerance, but a resample's median
    # falls among the fast runs often enough that the interval reaches below it
    samples = noisy(seed + 1000)
    samples[:12] *= 1.10
    base, new = result(noisy(seed)), result(samples)
    assert (new.median_ms - base.median_ms) / base.median_ms > 0.04
    c = compare([base], [new])
    assert len(c.unchanged) == 1 and c.table[0]["note"] == "within noise"
    assert len(compare([base], [result(noisy(seed + 1000) * 1.10)]).regressions) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_the_rate_has_its_own_tighter_tolerance(seed):
    # 3.5% slower: inside the time tolerance (4%), past the rate's (3%)
    base, new = pair(seed, 1.035, noise=0.001)
    c = compare([base], [new])
    [change] = c.regressions
    assert change.time.verdict == "unchanged" and change.rate.verdict == "regression"
    assert change.deciding is change.rate
    assert compare([base], [new], rate_tol=0.04).unchanged
    assert compare([base], [new], time_tol=0.03, rate_tol=0.04).regressions


def test_the_rate_of_a_compute_bound_result_is_gflops():
    base, new = pair(0, 1.10, bound="compute")
    [change] = compare([base], [new]).regressions
    assert change.rate.name == "GFLOP/s"
    assert change.rate.baseline == base.gflops and change.rate.new == new.gflops


def test_the_time_decides_when_the_cost_model_differs():
    # the new side counts twice the bytes for a 10% slower run: its GB/s went up, yet the
    # call is slower
    base = result(noisy(0))
    slow = noisy(1, 1.10)
    new = result(slow, bytes=2 * base.bytes, gbps=2 * base.bytes / float(np.median(slow)) / 1e6)
    [change] = compare([base], [new]).regressions
    assert change.time.verdict == "regression" and change.rate.verdict == "improvement"


def test_results_without_a_cost_model_are_judged_on_their_time():
    """bench() of a plain callable has no bytes or flops: no rate metric."""
    base, new = pair(0, 1.10, bytes=None, flops=None, gbps=None, gflops=None, frac_copy=None,
                     frac_fma=None, bound="", variant=None, variant_name="")
    [change] = compare([base], [new]).regressions
    assert change.rate is None and change.deciding is change.time
    assert str(compare([base], [new])).splitlines()[2].startswith(
        "regression: saxpy block=256 n=16777216 float32: time +")


def test_options_are_keyword_arguments():
    base, new = pair(0, 1.10)
    assert compare([base], [new], time_tol=0.15, rate_tol=0.15).unchanged
    for bad in ({"time_tol": 1.5}, {"rate_tol": -0.01}, {"confidence": 0.3},
                {"confidence": 1.0}, {"time_tol": "5%"}, {"resamples": 10}, {"seed": -1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            compare([base], [new], **bad)


def test_the_verdict_is_deterministic():
    base, new = result(lognormal(0, 0.2)), result(lognormal(1, 0.2, scale=1.05))
    one, two = compare([base], [new]), compare([base], [new])
    assert one.unchanged[0].time == two.unchanged[0].time
    other = compare([base], [new], seed=1).unchanged[0].time
    assert other.low != one.unchanged[0].time.low and other.p == one.unchanged[0].time.p


def test_a_result_saved_without_samples_is_judged_on_its_median():
    base = result(noisy(0))
    new = result(noisy(1, 1.10))
    new.samples = []
    c = compare([base], [new])
    assert len(c.regressions) == 1
    assert c.regressions[0].time.interval == "medians only"
    assert c.table[0]["interval"] == "medians only" and c.table[0]["p"] == "-"


# ---------------------------------------------------------------- the statistics


def brute_force_p(x, y):
    """The exact two-sided p of U by enumerating every split of the pooled values."""
    pooled = np.concatenate([x, y])
    u = sum(a > b for a in x for b in y)
    us = []
    for chosen in itertools.combinations(range(len(pooled)), len(x)):
        rest = np.delete(pooled, chosen)
        us.append(sum(a > b for a in pooled[list(chosen)] for b in rest))
    us = np.array(us)
    return u, min(1.0, 2 * min((us <= u).mean(), (us >= u).mean()))


@pytest.mark.parametrize("m, n", [(1, 1), (2, 5), (4, 4), (5, 3), (6, 6)])
def test_mann_whitney_exact_p(m, n):
    rng = np.random.default_rng(m * 10 + n)
    x, y = rng.standard_normal(m), rng.standard_normal(n) + 0.5
    u, p = mann_whitney(x, y)
    assert (u, p) == pytest.approx(brute_force_p(x, y))
    assert mann_whitney(np.arange(5.0), np.arange(5.0) + 10) == (0.0, pytest.approx(2 / 252))


def test_mann_whitney_with_ties_and_against_scipy():
    assert list(rank([3.0, 1.0, 2.0, 2.0, 5.0])) == [4.0, 1.0, 2.5, 2.5, 5.0]
    assert mann_whitney([1.0, 1.0], [1.0, 1.0]) == (2.0, 1.0)
    stats = pytest.importorskip("scipy.stats")  # a reference only: gpulab needs no scipy
    rng = np.random.default_rng(5)
    for m, n, digits in ((30, 40, 1), (60, 70, 3), (8, 9, 1), (20, 20, 6)):
        x = np.round(rng.standard_normal(m), digits)
        y = np.round(rng.standard_normal(n) + 0.3, digits)
        ties = len(np.unique(np.concatenate([x, y]))) < m + n
        method = "asymptotic" if ties or max(m, n) > 50 else "exact"
        ref = stats.mannwhitneyu(x, y, alternative="two-sided", method=method)
        assert mann_whitney(x, y) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))


@pytest.mark.parametrize("n", [1, 2, 5, 6, 21])
def test_bootstrap_medians_follow_the_resampled_median_law(n):
    """The O(1) draw of a resample's median has the law of the median of n values drawn
    with replacement."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n)
    fast = bootstrap_medians(x, 40_000, np.random.default_rng(1))
    slow = np.median(x[np.random.default_rng(2).integers(0, n, (40_000, n))], axis=1)
    # the same values, each as often (total variation distance of the two laws)
    values, counts = np.unique(np.round(np.concatenate([fast, slow]), 9), return_inverse=True)
    fast_counts = np.bincount(counts[:40_000], minlength=len(values))
    slow_counts = np.bincount(counts[40_000:], minlength=len(values))
    assert np.abs(fast_counts - slow_counts).sum() / 2 / 40_000 < 0.02


def test_bootstrap_interval_covers_the_true_ratio():
    misses = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        base, new = np.exp(0.2 * rng.standard_normal(30)), 1.1 * np.exp(
            0.2 * rng.standard_normal(30))
        low, high = bootstrap_ratio_interval(base, new, 0.9, 2000, rng)
        misses += not low < 1.1 < high
    assert misses < 40  # about 20 expected at 90%


def test_a_failed_check_is_reported_apart_and_fails_the_comparison():
    base, new = pair(0, 1.0)
    failed = {**new.to_dict(), "ok": False, "error": "element 17: 3.0 != 4.0"}
    c = compare([base], [failed])
    assert not c.ok and not c.unchanged and not c.regressions and not c.added
    [f] = c.failures
    assert f.side == "new" and f.error == "element 17: 3.0 != 4.0" and f.partner.result == base
    assert "FAILED" in str(c) and "element 17" in str(c)
    # a failed check is never hidden, not even behind a slowdown or as an added result
    slow = {**pair(0, 1.5)[1].to_dict(), "error": "NaN in output"}
    lone = {**result(noisy(3), size=5).to_dict(), "ok": False}
    c = compare([base], [slow, lone])
    assert [f.side for f in c.failures] == ["new", "new"] and not c.regressions and not c.added


def test_a_baseline_that_failed_its_check_is_not_timed_against():
    base, new = pair(0, 0.5)
    c = compare([{**base.to_dict(), "ok": False}], [new])
    [f] = c.failures
    assert f.side == "baseline" and f.partner.result == new
    assert c.ok and not c.improvements and "baseline failed" in str(c)


def test_results_on_one_side_only_are_added_or_removed():
    base, new = pair(0, 1.0)
    other_block = result(noisy(1), params={"block": 512})
    other_device = result(noisy(2), device="NVIDIA H200")
    other_size = result(noisy(3), size=1 << 20)
    c = compare([base, other_block], [new, other_device, other_size])
    assert len(c.unchanged) == 1 and c.ok
    assert [r.result for r in c.added] == [other_device, other_size]
    assert [r.result for r in c.removed] == [other_block]
    statuses = c.table.column("status")
    assert statuses == ["unchanged", "added", "added", "removed"]


def test_the_last_of_duplicates_counts():
    base = result(noisy(0))
    stale, fresh = result(noisy(1, 1.5)), result(noisy(2))
    c = compare([base], [stale, fresh])
    assert len(c.unchanged) == 1 and c.unchanged[0].new.result == fresh
    assert c.superseded == {"new": 1} and "1 older duplicate ignored" in str(c)


def test_every_result_shape_compares(tmp_path):
    doc = json.loads(json.dumps(main_job_document()))  # as read back from a file
    n = len(doc["results"])
    assert compare(doc, doc).matched == n
    assert compare(doc["results"], doc).matched == n
    path = tmp_path / "results.sqlite"
    store.save(doc, path, tag="h100")
    assert len(compare(store.load(path, tag="h100"), doc).unchanged) == n
    base, new = pair(0, 1.0)
    assert compare(base, new).matched == 1
    with pytest.raises(TypeError, match="baseline"):
        compare("base.json", [new])
    with pytest.raises(ValueError, match=r"new\[0\]"):
        compare([base], [{"op": "saxpy", "median_ms": 1.0}])


def test_the_table_and_text():
    base, new = pair(0, 1.10)
    same_base, same_new = pair(1, 1.0, params={"block": 128})
    c = compare([base, same_base], [new, same_new])
    table = c.table
    assert isinstance(table, gl.Table) and len(table) == 2
    assert table.column("status") == ["regression", "unchanged"]
    row = table[0]
    assert row["op"] == "saxpy" and row["variant"] == "2 vec16_tiles"
    assert row["params"] == "block=256" and row["rate"] == "GB/s"
    assert row["time %"].startswith("+") and row["runs"] == f"{RUNS}/{RUNS}"
    assert row["interval"] == c.regressions[0].rate.interval
    assert re.fullmatch(r"\[-\d+\.\d%, -\d+\.\d%\]", row["interval"]) and float(row["p"]) < 1e-3
    text = str(c)
    lines = text.splitlines()
    assert lines[0] == ("FAIL: 1 regression, 0 improvements, 1 unchanged, "
                        "0 failed checks, 0 added, 0 removed")
    assert "time 4.0%" in lines[1] and "rate 3.0%" in lines[1] and "99.9%" in lines[1]
    assert "p < 0.001" in lines[1]
    m = c.regressions[0].rate
    assert lines[2] == (f"regression: saxpy[2 vec16_tiles] block=256 n={1 << 24} float32: GB/s "
                        f"{100 * m.change:+.1f}% (interval {m.interval}, p = {m.p:.2g}; "
                        f"{RUNS} vs {RUNS} runs)")
    assert "vec16_tiles" in text


# ---------------------------------------------------------------- python -m gpulab compare


def run_compare(*args, **env):
    return subprocess.run([sys.executable, "-m", "gpulab", "compare", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=child_env(**env))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A main job's results; copies of it with its first three results 10% slower, with a
    failed check, and run on another device; a store holding the original as 'baseline'."""
    folder = tmp_path_factory.mktemp("compare")
    doc = main_job_document()
    slow = copy.deepcopy(doc)
    for r in slow["results"][:3]:
        r["samples"] = [s * 1.1 for s in r["samples"]]
        r["median_ms"] *= 1.1
        r["gbps"] /= 1.1
        r["gflops"] /= 1.1
    failed = copy.deepcopy(doc)
    failed["results"][5]["ok"] = False
    elsewhere = copy.deepcopy(doc)
    for r in elsewhere["results"]:
        r["device"] = "NVIDIA H200"
    not_results = {"meta": {}, "results": {"call_overhead_us": 3.5}}
    paths = {}
    for name, content in (("base", doc), ("slow", slow), ("failed", failed),
                          ("elsewhere", elsewhere), ("not_results", not_results)):
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps(content))
    paths["store"] = folder / "results.sqlite"
    store.save(doc, paths["store"], tag="baseline")
    (folder / "garbage.json").write_text("{not json")
    paths["garbage"] = folder / "garbage.json"
    return paths


def test_cli_exits_zero_when_nothing_regressed(files):
    done = run_compare(files["base"], files["base"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OK: 0 regressions") and "unchanged" in done.stdout


def test_cli_exits_one_on_a_regression(files):
    done = run_compare(files["base"], files["slow"])
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("FAIL: 3 regressions")
    assert done.stdout.count("regression ") == 3
    # each with its interval: 10% slower in every run of 20
    verdicts = [line for line in done.stdout.splitlines() if line.startswith("regression: ")]
    assert len(verdicts) == 3 and all("(interval [" in line and "20 vs 20 runs" in line
                                      for line in verdicts)
    assert run_compare(files["base"], files["slow"], "--time-tol", 15, "--rate-tol",
                       15).returncode == 0


def test_cli_exits_one_on_a_failed_check(files):
    done = run_compare(files["base"], files["failed"])
    assert done.returncode == 1 and "FAILED" in done.stdout and "1 failed check" in done.stdout


def test_cli_reads_store_selections(files):
    done = run_compare("store:tag=baseline", files["slow"], "--store", files["store"])
    assert done.returncode == 1 and "3 regressions" in done.stdout, done.stderr
    done = run_compare("store:tag=baseline,op=saxpy", files["base"],
                       GPULAB_STORE=str(files["store"]))
    assert done.returncode == 0, done.stderr
    ops = [r["op"] for r in main_job_document()["results"]]
    saxpy = ops.count("saxpy")
    assert f"{saxpy} unchanged" in done.stdout
    assert f"{len(ops) - saxpy} added" in done.stdout


@pytest.mark.parametrize("args, words", [
    (("{missing}", "{base}"), "cannot read"),
    (("{base}", "{garbage}"), "not JSON"),
    (("{base}", "{not_results}"), "no BenchResult records"),
    (("store:tag=nothing", "{base}", "--store", "{store}"), "selects no results"),
    (("store:colour=red", "{base}", "--store", "{store}"), "unknown filter 'colour'"),
    (("store:tag", "{base}", "--store", "{store}"), "NAME=VALUE"),
    (("store:run=last", "{base}", "--store", "{store}"), "run must be an integer"),
    (("store:tag=baseline", "{base}", "--store", "{missing}"), "no gpulab store"),
    (("store:tag=baseline", "{base}", "--store", "{garbage}"), "not a gpulab store"),
    (("{base}", "{base}", "--time-tol", "150"), "--time-tol"),
    (("{base}", "{base}", "--confidence", "1"), "--confidence"),
    (("{base}", "{base}", "--confidence", "0.2"), "--confidence"),
    (("{base}", "{base}", "--seed", "-3"), "--seed"),
    (("{base}", "{elsewhere}"), "no result in NEW has a partner"),
])
def test_cli_exits_two_on_bad_input(files, tmp_path, args, words):
    names = {**files, "missing": tmp_path / "missing.json"}
    done = run_compare(*(a.format(**names) for a in args))
    assert done.returncode == 2, done.stdout + done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr


def test_cli_back_to_back_cpu_main_jobs_exit_zero(tmp_path):
    """The case that used to fail: the same code run twice on the CPU, a few seconds apart. The
    children see no GPU even on a GPU machine, whose device other test processes may share."""
    paths = [tmp_path / f"run{i}.json" for i in (1, 2)]
    for path in paths:
        done = subprocess.run([sys.executable, "-m", "gpulab", "--ops", "saxpy,reduce",
                               "--scale", "0.01", "--no-peers", "--json", str(path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env=child_env(CUDA_VISIBLE_DEVICES=""))
        assert done.returncode == 0, done.stderr
        assert {r["backend"] for r in json.loads(path.read_text())["results"]} == {"cpu"}
    done = run_compare(*paths)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("OK: 0 regressions") and "interval" in done.stdout


def test_cli_usage_errors_exit_two():
    done = run_compare("only-one.json")
    assert done.returncode == 2 and "usage" in done.stderr
