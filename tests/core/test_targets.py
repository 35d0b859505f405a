"""benchmarks/targets.py and its results: the committed targets.json is well formed and every
row's `met` follows from its figure and target (so no row can be edited into "met"); the script
runs its groups end to end (here with simulated timings, on a GPU for real at small sizes);
tools/lab_docs.py renders the table, or says it is not measured yet."""

import importlib
import json
import math
import os
import random
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import gpulab as gl
from gpulab import registry
from gpulab.bench import BenchResult

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
SCRIPT = os.path.join(BENCHMARKS, "targets.py")
COMMITTED = os.path.join(BENCHMARKS, "results", "targets.json")
DIRECTIONS = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b}
ROW_KEYS = {"name", "figure", "unit", "ratio", "target", "met", "rung", "how", "also", "group"}


def targets_module(monkeypatch):
    monkeypatch.syspath_prepend(BENCHMARKS)
    return importlib.import_module("targets")


def problems(data):
    """What is wrong with a targets JSON: missing fields, figures that are not finite numbers,
    and any `met` that its figure and target do not give. Empty when all is well."""
    out = []
    meta, results = data.get("meta", {}), data.get("results", {})
    for key in ("device", "driver", "commit", "settings", "timestamp"):
        if key not in meta:
            out.append(f"meta has no {key}")
    settings = meta.get("settings", {})
    for key in ("quick", "complete", "groups", "sizes", "repeats", "timing", "ceilings",
                "peers_as_called"):
        if key not in settings:
            out.append(f"meta.settings has no {key}")
    how = settings.get("peers_as_called", {})
    for key in ("torch", "cupy", "CUPY_ACCELERATORS"):
        if key not in how:
            out.append(f"meta.settings.peers_as_called has no {key}")
    rows = results.get("rows")
    if not isinstance(rows, list) or not rows:
        return out + ["results.rows is not a list of rows"]
    seen = set()
    for r in rows:
        label = r.get("name", "?")
        if not ROW_KEYS <= set(r):
            out.append(f"{label}: no {sorted(ROW_KEYS - set(r))}")
            continue
        key = (r["name"], r["ratio"], r["unit"])
        if key in seen:
            out.append(f"{label}: twice")
        seen.add(key)
        figure, target = r["figure"], r["target"]
        if not isinstance(figure, (int, float)) or isinstance(figure, bool) or \
                not math.isfinite(figure):
            out.append(f"{label}: figure {figure!r} is not a finite number")
            continue
        if target.get("op") not in DIRECTIONS or not isinstance(target.get("value"), (int, float)):
            out.append(f"{label}: target {target!r} is not {{op: >= or <=, value: a number}}")
            continue
        if r["met"] is not DIRECTIONS[target["op"]](figure, target["value"]):
            out.append(f"{label}: met is {r['met']!r}, but {figure} {target['op']} "
                       f"{target['value']} is not")
        if r["ratio"] is None and r["unit"] == "ratio":
            out.append(f"{label}: a ratio that says not what it is a ratio against")
    return out


# ---------------------------------------------------------------- the committed results


def committed():
    if not os.path.exists(COMMITTED):
        pytest.skip("benchmarks/results/targets.json is not committed yet: python3 "
                    "benchmarks/targets.py writes it on a GPU (a full run, not --quick)")
    with open(COMMITTED) as f:
        return json.load(f)


def test_committed_targets_are_well_formed_and_met_follows_from_the_figures(monkeypatch):
    data = committed()
    assert not problems(data), problems(data)
    settings = data["meta"]["settings"]
    assert settings["quick"] is False, "a --quick run is a check of the script, not the table"
    assert settings["complete"] is True and not data["results"]["errors"], \
        f"a partial run: {data['results']['errors']}"
    groups = {r["group"] for r in data["results"]["rows"]}
    assert groups == set(targets_module(monkeypatch).GROUPS), "every group, in one run"
    assert data["meta"]["device"] != "cpu"


def test_the_check_sees_a_row_edited_into_met():
    row = {"name": "reduce float32 2^28", "figure": 0.95, "unit": "ratio",
           "ratio": "x torch.sum", "target": {"op": ">=", "value": 0.98}, "met": False,
           "rung": "12", "how": "", "also": {}, "group": "reduce"}
    settings = {k: None for k in ("quick", "complete", "groups", "sizes", "repeats", "timing",
                                  "ceilings")}
    settings["peers_as_called"] = {"torch": "2", "cupy": "14", "CUPY_ACCELERATORS": "cub"}
    meta = {"device": "GPU", "driver": "1", "commit": "c", "timestamp": "t",
            "settings": settings}
    good = {"meta": meta, "results": {"rows": [row]}}
    assert problems(good) == []
    assert problems({"meta": meta, "results": {"rows": [{**row, "met": True}]}})
    assert problems({"meta": meta, "results": {"rows": [{**row, "figure": float("nan")}]}})
    assert problems({"meta": meta, "results": {"rows": [row, row]}})
    upper = {**row, "figure": 4.0, "unit": "us", "ratio": None,
             "target": {"op": "<=", "value": 5.0}, "met": True}
    assert problems({"meta": meta, "results": {"rows": [upper]}}) == []


# ---------------------------------------------------------------- the script


def run_script(*args, env=None):
    env = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


def test_help_lists_the_groups_and_a_bad_group_is_named(monkeypatch):
    done = run_script("--help")
    assert done.returncode == 0, done.stderr
    for group in targets_module(monkeypatch).GROUPS:
        assert group in done.stdout
    done = run_script("--only", "reduce,nope")
    assert done.returncode == 2 and "unknown groups ['nope']" in done.stderr


@pytest.mark.skipif(gl.cuda_available(), reason="checks the message where no GPU is usable")
def test_without_a_gpu_it_says_why_without_a_traceback(tmp_path):
    done = run_script("--quick", env={"GPULAB_RESULTS": str(tmp_path)})
    assert done.returncode != 0
    assert "needs a GPU" in done.stderr and "Traceback" not in done.stderr
    assert os.listdir(tmp_path) == []


FAKE_SASS = """        Function : _Z15nbody_multibodyILi2EEvv
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   FADD R2, R3, R4 ;
        /*0020*/                   FFMA R2, R3, R3, R2 ;
        /*0030*/                   MUFU.RSQ R5, R2 ;
        /*0040*/                   FMUL R6, R5, R5 ;
        /*0050*/               @P0 BRA 0x10 ;
"""


def simulate_gpu(monkeypatch):
    """gl's GPU entry points, replaced for a machine without one: device arrays are the NumPy
    arrays themselves, and gl.bench gives each op a time from its cost model at a random rate
    (and the peers another); the ops' own code, the data, the lab benchmarks' functions and
    the saving run as they are."""
    rng = random.Random(5)

    def bench(fn, *args, repeat=None, warmup=None, budget_s=None, flush_l2=True, peers=False,
              **kw):
        spec = fn.__gpulab_op__
        v = registry.find(spec.name, kw["variant"])
        cost = spec.cost(*args, **kw)
        gbps, gflops = rng.uniform(1500, 3500), rng.uniform(20000, 50000)
        med = max(cost.bytes / gbps, cost.flops / gflops) / 1e6 + 0.002
        samples = [med * rng.uniform(0.98, 1.05) for _ in range(repeat or 5)]
        result = BenchResult(
            op=spec.name, variant=v.id, variant_name=v.name, backend=v.backend,
            params={k: x for k, x in kw.items() if k not in ("variant", "out", "stream")},
            device="simulated", size=spec.size(*args, **kw), dtype="float32",
            transfers_included=False, timer="cuda-events", median_ms=med, min_ms=min(samples),
            max_ms=max(samples), samples=samples, bytes=cost.bytes, flops=cost.flops,
            gbps=cost.bytes / med / 1e6, gflops=cost.flops / med / 1e6,
            frac_copy=cost.bytes / med / 1e6 / 3000, frac_fma=cost.flops / med / 1e6 / 60000,
            bound="memory", l2_flushed=flush_l2)
        if peers:
            for name in spec.peers:
                ms = med * rng.uniform(0.5, 4)
                result.peers[name] = {"median_ms": ms, "min_ms": ms, "gbps": cost.bytes / ms / 1e6,
                                      "speedup": ms / med, "version": "simulated"}
        return result

    counts = gl.histogram_counts

    def histogram_counts(x, bins=10, range=None, variant=None, stream=None, block=None):
        return np.bincount(x, minlength=bins)
    histogram_counts.__gpulab_op__ = counts.__gpulab_op__

    def inspect(op, variant=None, **tunables):
        instance = SimpleNamespace(sass=FAKE_SASS)
        return SimpleNamespace(sass_note=None,
                               kernels=[SimpleNamespace(instances=[instance])])

    info = {"name": "simulated GPU", "multiprocessors": 132, "clock_mhz": 1980.0,
            "fp32_lanes_per_sm": 128}
    monkeypatch.setattr(gl, "bench", bench)
    monkeypatch.setattr(gl, "histogram_counts", histogram_counts)
    monkeypatch.setattr(gl, "inspect", inspect)
    monkeypatch.setattr(gl, "to_device", lambda a, *_, **__: np.asarray(a))
    monkeypatch.setattr(gl, "ceilings", lambda *_, **__: {"copy_gbps": 3000.0,
                                                          "fma_gflops": 60000.0})
    monkeypatch.setattr(gl, "device_info", lambda *_: dict(info))
    monkeypatch.setattr(gl, "release_memory", lambda: None)
    monkeypatch.setattr(gl, "synchronize", lambda *_: None)
    monkeypatch.setattr(gl, "cuda_available", lambda: True)
    common = importlib.import_module("common")
    metadata = common.metadata
    monkeypatch.setattr(common, "metadata", lambda settings: {
        **metadata(settings), "device": info["name"], "driver": "simulated"})


def test_every_group_runs_end_to_end_with_simulated_timings(monkeypatch, tmp_path, capsys):
    """The plumbing without a GPU: each group calls its lab benchmark's functions, picks its
    best rung and writes rows that the check accepts; the file is saved after each group."""
    targets = targets_module(monkeypatch)
    simulate_gpu(monkeypatch)
    monkeypatch.setattr(targets.reduce_ladder, "repeat_for", lambda fn, args, kw, rep: rep)
    monkeypatch.setenv("GPULAB_RESULTS", str(tmp_path))
    assert targets.main(["--quick"]) == 0
    assert os.listdir(tmp_path) == ["targets_quick.json"]  # never the table's name
    data = json.load(open(tmp_path / "targets_quick.json"))
    assert not problems(data), problems(data)
    assert data["meta"]["settings"]["complete"] and data["meta"]["settings"]["quick"]
    rows = data["results"]["rows"]
    assert {r["group"] for r in rows} == set(targets.GROUPS)
    assert len([r for r in rows if r["group"] == "sort"]) == 2 * len(targets.SORT_KEYS)
    nbody = next(r for r in rows if r["group"] == "nbody")
    assert nbody["also"]["slots per interaction"] == 5  # FAKE_SASS's loop, its branch too
    assert "torch" in next(r for r in rows if r["ratio"] == "x torch.sort (with indices)")["note"]
    err = capsys.readouterr().err
    assert f"[{len(targets.GROUPS)}/{len(targets.GROUPS)}] call:" in err

    # a group that fails leaves the others' rows, its error, and a run marked incomplete
    def broken(run):
        raise RuntimeError("planted")
    monkeypatch.setitem(targets.GROUPS, "scan", (broken, "broken"))
    assert targets.main(["--quick", "--only", "reduce,scan"]) == 1
    data = json.load(open(tmp_path / "targets_quick.json"))
    assert data["results"]["errors"] == {"scan": "RuntimeError: planted"}
    assert not data["meta"]["settings"]["complete"]
    assert {r["group"] for r in data["results"]["rows"]} == {"reduce"}


@pytest.mark.gpu
def test_a_quick_pass_on_the_gpu_gives_every_row(monkeypatch, tmp_path):
    """Every group at small sizes: rows produced and finite, `met` consistent. Whether targets
    are met is the committed full run's to say: timings in a busy test run are noise."""
    done = run_script("--quick", env={"GPULAB_RESULTS": str(tmp_path)})
    data = json.load(open(tmp_path / "targets_quick.json"))
    errors = data["results"]["errors"]
    from gpulab.inspection import _cuobjdump
    if _cuobjdump() is None:  # the n-body issue bound reads the kernel's SASS
        errors.pop("nbody", None)
    assert not errors, errors
    assert done.returncode == 0 or set(data["results"]["errors"]) == {"nbody"}, done.stderr
    assert not problems(data), problems(data)
    groups = set(targets_module(monkeypatch).GROUPS) - set(data["results"]["errors"])
    assert {r["group"] for r in data["results"]["rows"]} == groups


# ---------------------------------------------------------------- the docs


def lab_docs():
    spec = importlib.util.spec_from_file_location("lab_docs",
                                                  os.path.join(ROOT, "tools", "lab_docs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_say_not_measured_yet_without_the_file():
    docs = lab_docs()
    assert "Not measured yet" in docs.targets_table(None)
    assert "Not measured yet" in docs.headline(None)
    if docs.load_targets() is None:
        index = open(docs.INDEX).read()
        readme = open(docs.README).read()
        assert "Not measured yet" in docs.blocks_of(docs.INDEX, index, ["targets"])["targets"]
        assert "Not measured yet" in docs.blocks_of(docs.README, readme,
                                                    ["headline"])["headline"]


def test_docs_show_each_figure_and_the_targets_missed():
    docs = lab_docs()
    rows = [{"name": "reduce float32 2^28", "figure": 1.013, "unit": "ratio",
             "ratio": "x torch.sum", "target": {"op": ">=", "value": 0.98}, "met": True,
             "rung": "12 vec16_single_pass", "also": {"of copy": 0.99}, "note": None},
            {"name": "reduce 1024 float32 per call", "figure": 6.2, "unit": "µs", "ratio": None,
             "target": {"op": "<=", "value": 5.0}, "met": False, "rung": "variant=None",
             "also": {}, "note": "host wall time"}]
    data = {"meta": {"device": "NVIDIA H200", "driver": "580", "commit": "abc",
                     "timestamp": "2026-01-01", "settings": {"complete": True, "quick": False,
                                                             "seconds": {"reduce": 60}}},
            "results": {"rows": rows, "errors": {}}}
    table = docs.targets_table(data)
    assert "1 of 2 targets met" in table and "1.01x torch.sum" in table
    assert "≥ 0.98x torch.sum" in table and "≤ 5 µs" in table and "0.99 of copy" in table
    assert "6.20 µs [1]" in table and "- [1] host wall time" in table
    line = " ".join(docs.headline(data).split())
    assert line.startswith("On an NVIDIA H200, 1 of 2 targets met")
    assert "reduce float32 2^28: 1.01x torch.sum;" in line
    assert "6.20\\* µs" in line and line.endswith("A figure marked \\* is short of its target.")
