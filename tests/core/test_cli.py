"""The main job, python -m gpulab: a table per op, and JSON with the metadata to reproduce it."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import gpulab as gl
from gpulab._op import OPS, Cost
from gpulab.bench import bound_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "gpulab", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def main_job(tmp_path_factory):
    path = tmp_path_factory.mktemp("main") / "results.json"
    proc = run("--scale", "0.01", "--repeat", "2", "--json", str(path))
    return proc, path


def test_main_job_exits_zero(main_job):
    proc, _ = main_job
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_main_job_prints_a_table_per_op(main_job):
    proc, _ = main_job
    out = proc.stdout
    gpu = gl.cuda_available()
    if not gpu:
        assert "CPU variants" in out
    for op in OPS:
        assert f"== {op}" in out
        for v in gl.variants(op):
            if gpu or v.backend == "cpu":
                assert v.name in out, f"{op} variant {v.name} missing from the table"
    assert "Ceiling (cpu" in out
    if gpu:
        assert "Ceiling (gpu" in out and gl.device_info()["name"] in out


def test_main_job_json(main_job):
    _, path = main_job
    data = json.loads(path.read_text())
    meta = data["meta"]
    for key in ("commit", "build", "ceilings", "timestamp", "python", "numpy", "settings"):
        assert key in meta
    assert meta["build"] == json.loads(json.dumps(gl.build_info()))
    assert meta["settings"]["scale"] == 0.01 and meta["settings"]["repeat"] == 2
    assert meta["ceilings"]["cpu"]["copy_gbps"] > 0
    assert data["not_run"] == []  # at this scale every variant takes its size
    gpu = gl.cuda_available()
    assert ("gpu" in meta["ceilings"]) == gpu
    expected = sorted((v.op, v.id) for v in gl.variants() if gpu or v.backend == "cpu")
    assert sorted((r["op"], r["variant"]) for r in data["results"]) == expected
    for r in data["results"]:
        assert r["min_ms"] <= r["median_ms"] <= r["max_ms"] and r["gbps"] > 0
        if r["backend"] == "cuda":
            assert r["timer"] == "cuda-events" and r["transfers_included"] is False
        # the bound follows from the op's cost and the ceilings saved beside it
        where = "gpu" if r["backend"] == "cuda" else "cpu"
        assert r["bound"] == bound_of(Cost(r["bytes"], r["flops"]), meta["ceilings"][where])


@pytest.fixture(scope="module")
def nbody_and_saxpy(tmp_path_factory):
    path = tmp_path_factory.mktemp("two") / "results.json"
    proc = run("--ops", "nbody_accel,saxpy", "--scale", "0.01", "--repeat", "3", "--json",
               str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, json.loads(path.read_text())


def section(out, op):
    """The table the main job printed for op: its header line and its rows' cells."""
    lines = out.split(f"\n== {op} ", 1)[1].split("\n\n", 1)[0].splitlines()
    header = [h for h in lines[1].split("  ") if h.strip()]
    return [h.strip() for h in header], [line.split() for line in lines[3:]]


def test_main_job_columns_follow_the_bound(nbody_and_saxpy):
    out, _ = nbody_and_saxpy
    assert "== nbody_accel  (compute-bound;" in out and "== saxpy  (memory-bound;" in out
    header, rows = section(out, "nbody_accel")
    assert {"GFLOP/s", "G interactions/s", "of FMA"} <= set(header)
    assert "GB/s" not in header and "of copy" not in header
    assert rows and all(cell not in ("0.0", "0.000") for row in rows for cell in row)
    header, rows = section(out, "saxpy")
    assert {"GB/s", "of copy"} <= set(header)
    assert not {"GFLOP/s", "G interactions/s", "of FMA"} & set(header)
    assert rows and all(cell not in ("0.0", "0.000") for row in rows for cell in row)


def test_main_job_json_has_bound_and_unit(nbody_and_saxpy):
    _, data = nbody_and_saxpy
    by_op = {}
    for r in data["results"]:
        by_op.setdefault(r["op"], []).append(r)
    assert set(by_op) == {"nbody_accel", "saxpy"}
    for r in by_op["nbody_accel"]:
        assert r["bound"] == "compute" and r["unit"] == "G interactions/s"
        assert r["unit_rate"] > 0 and r["unit_rate"] * 20 == pytest.approx(r["gflops"])
    for r in by_op["saxpy"]:
        assert r["bound"] == "memory"
        assert r["unit"] is None and r["unit_rate"] is None


@pytest.mark.gpu
def test_variants_that_refuse_the_size_are_listed_with_their_reason(tmp_path):
    """Past 2^24 elements the one-block scans refuse; the job names them and goes on."""
    path = tmp_path / "scan.json"
    proc = run("--ops", "scan", "--scale", "0.3", "--repeat", "2", "--no-peers", "--json",
               str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(path.read_text())
    one_block = {"hillis_steele", "blelloch"}
    assert {r["variant_name"] for r in data["not_run"]} == one_block
    for r in data["not_run"]:
        assert "scans in one block, up to 16777216 elements" in r["reason"]
        assert r["n"] > 1 << 24
        assert f"{r['variant_name']}: not run at n = {r['n']}" in proc.stdout
    ran = {r["variant_name"] for r in data["results"]}
    assert ran == {v.name for v in gl.variants("scan")} - one_block


def test_info_command():
    proc = run("info", timeout=120)
    assert proc.returncode == (0 if gl.cuda_available() else 1), proc.stderr
    assert "Build:" in proc.stdout
    assert json.loads(proc.stdout.split("Build:", 1)[1]) == json.loads(
        json.dumps(gl.build_info()))


def test_unknown_op_is_a_usage_error():
    proc = run("--scale", "0.001", "--repeat", "1", "--ops", "nope")
    assert proc.returncode == 2
    assert "nope" in proc.stderr


def _commit_seen_from(package_parent):
    code = "from gpulab.provenance import commit; print(repr(commit()))"
    env = {k: v for k, v in os.environ.items() if k != "GPULAB_COMMIT"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=package_parent, capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return eval(proc.stdout.strip())


@pytest.fixture
def package_copy(tmp_path):
    """gpulab's package directory copied where no repository is."""
    shutil.copytree(os.path.join(ROOT, "gpulab"), tmp_path / "gpulab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_commit_outside_a_repository_is_none(package_copy):
    assert _commit_seen_from(package_copy) is None


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_commit_in_a_repository_without_commits_is_none(package_copy):
    subprocess.run(["git", "init", "-q", str(package_copy)], check=True)
    assert _commit_seen_from(package_copy) is None
