"""compare() and python -m gpulab compare: S3 §12.5's rules on synthetic sample sets (seeded),
correctness apart from performance, results on one side only, and the command's exit status."""

import copy
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import gpulab as gl
from conftest import child_env
from gpulab import store
from gpulab.compare import compare

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAINJOB = os.path.join(ROOT, "benchmarks", "results", "mainjob.json")
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


def pair(seed, scale, noise=0.01, **changes):
    base = result(noisy(seed, noise=noise), **changes)
    new = result(noisy(seed + 1000, scale, noise), **changes)
    return base, new


@pytest.mark.parametrize("seed", SEEDS)
def test_a_ten_percent_slowdown_is_a_regression(seed):
    base, new = pair(seed, 1.10)
    c = compare([base], [new])
    assert len(c.regressions) == 1 and not c.unchanged and not c.ok
    change = c.regressions[0]
    assert change.time.verdict == "regression" and 0.07 < change.time.change < 0.13
    assert change.rate.verdict == "regression" and change.rate.name == "GB/s"
    assert change.deciding.past >= 0.75 * RUNS


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("scale", [1.0, 1.01, 0.99])
def test_run_to_run_noise_of_one_percent_is_unchanged(seed, scale):
    base, new = pair(seed, scale)
    c = compare([base], [new])
    assert len(c.unchanged) == 1 and c.ok, str(c)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_ten_percent_speedup_is_an_improvement(seed):
    base, new = pair(seed, 1 / 1.10)
    c = compare([base], [new])
    assert len(c.improvements) == 1 and c.ok
    assert c.improvements[0].rate.change > 0.07


@pytest.mark.parametrize("seed", SEEDS)
def test_a_spike_in_one_or_two_runs_is_not_a_regression(seed):
    for spikes in (1, 2):
        base = result(noisy(seed))
        samples = noisy(seed + 1000)
        samples[[3, 11][:spikes]] *= 3.0
        c = compare([base], [result(samples)])
        assert len(c.unchanged) == 1 and c.ok, str(c)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_change_in_less_than_most_runs_is_not_a_regression(seed):
    # 12 of 20 runs 10% slower: the median moves past the tolerance, but the change does not
    # persist across three quarters of the runs
    samples = noisy(seed + 1000)
    samples[:12] *= 1.10
    base, new = result(noisy(seed)), result(samples)
    assert (new.median_ms - base.median_ms) / base.median_ms > 0.04
    assert len(compare([base], [new]).unchanged) == 1
    assert len(compare([base], [new], persist=0.55).regressions) == 1
    samples[:16] = noisy(seed + 1000)[:16] * 1.10  # 16 of 20: most runs
    assert len(compare([base], [result(samples)]).regressions) == 1


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


def test_tolerances_are_keyword_arguments():
    base, new = pair(0, 1.10)
    assert compare([base], [new], time_tol=0.15, rate_tol=0.15).unchanged
    for bad in ({"time_tol": 1.5}, {"rate_tol": -0.01}, {"persist": 0}, {"persist": 1.2},
                {"time_tol": "5%"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            compare([base], [new], **bad)


def test_a_result_saved_without_samples_is_judged_on_its_median():
    base = result(noisy(0))
    new = result(noisy(1, 1.10))
    new.samples = []
    assert len(compare([base], [new]).regressions) == 1


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
    with open(MAINJOB) as f:
        doc = json.load(f)
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
    assert row["time %"].startswith("+") and row["runs past"].endswith(f"/{RUNS}")
    text = str(c)
    assert text.splitlines()[0] == ("FAIL: 1 regression, 0 improvements, 1 unchanged, "
                                    "0 failed checks, 0 added, 0 removed")
    assert "time 4.0%" in text and "rate 3.0%" in text and "75%" in text
    assert "vec16_tiles" in text


# ---------------------------------------------------------------- python -m gpulab compare


def run_compare(*args, **env):
    return subprocess.run([sys.executable, "-m", "gpulab", "compare", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=child_env(**env))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """mainjob.json; copies of it with its first three results 10% slower, with a failed
    check, and run on another device; a store holding the original as 'baseline'."""
    folder = tmp_path_factory.mktemp("compare")
    with open(MAINJOB) as f:
        doc = json.load(f)
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
    paths = {"base": MAINJOB}
    for name, content in (("slow", slow), ("failed", failed), ("elsewhere", elsewhere)):
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
    with open(MAINJOB) as f:
        ops = [r["op"] for r in json.load(f)["results"]]
    saxpy = ops.count("saxpy")
    assert f"{saxpy} unchanged" in done.stdout
    assert f"{len(ops) - saxpy} added" in done.stdout


@pytest.mark.parametrize("args, words", [
    (("{missing}", "{base}"), "cannot read"),
    (("{base}", "{garbage}"), "not JSON"),
    (("{base}", "benchmarks/results/call_overhead.json"), "no BenchResult records"),
    (("store:tag=nothing", "{base}", "--store", "{store}"), "selects no results"),
    (("store:colour=red", "{base}", "--store", "{store}"), "unknown filter 'colour'"),
    (("store:tag", "{base}", "--store", "{store}"), "NAME=VALUE"),
    (("store:run=last", "{base}", "--store", "{store}"), "run must be an integer"),
    (("store:tag=baseline", "{base}", "--store", "{missing}"), "no gpulab store"),
    (("store:tag=baseline", "{base}", "--store", "{garbage}"), "not a gpulab store"),
    (("{base}", "{base}", "--time-tol", "150"), "--time-tol"),
    (("{base}", "{base}", "--persist", "0"), "--persist"),
    (("{base}", "{elsewhere}"), "no result in NEW has a partner"),
])
def test_cli_exits_two_on_bad_input(files, tmp_path, args, words):
    names = {**files, "missing": tmp_path / "missing.json"}
    done = run_compare(*(a.format(**names) for a in args))
    assert done.returncode == 2, done.stdout + done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr


def test_cli_usage_errors_exit_two():
    done = run_compare("only-one.json")
    assert done.returncode == 2 and "usage" in done.stderr
