"""benchmarks/user_path.py and gpulab/user_path.py: the default call timed as users see it."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import gpulab as gl
from gpulab import user_path as up

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_script_quick_writes_the_table(tmp_path):
    env = {**os.environ, "GPULAB_RESULTS": str(tmp_path), "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "user_path.py"),
                           "--quick", "--ops", "saxpy,sort,spmv,mandelbrot"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    name = "user_path_quick.json" if gl.cuda_available() else "user_path_cpu_quick.json"
    assert os.listdir(tmp_path) == [name]  # never the GPU table's name from a quick run
    saved = json.load(open(tmp_path / name))
    meta, ops = saved["meta"], saved["results"]["ops"]
    assert {"commit", "device", "settings"} <= set(meta)
    assert meta["settings"]["quick"] and "CUPY_ACCELERATORS" in meta["settings"]["peers_as_called"]
    assert {r["op"] for r in ops} == {"saxpy", "sort", "spmv", "mandelbrot"}
    assert {r["container"] for r in ops if r["op"] == "spmv"} >= {"numpy", "scipy"}
    for r in ops:
        assert r["default_ms"] > 0 and r["best_ms"] > 0, r
        assert r["gap"] == pytest.approx(r["default_ms"] / r["best_ms"])
        if r["op"] != "mandelbrot":
            assert r["peer_ms"] > 0 and r["peer_how"], r
            assert r["peer_over_ours"] == pytest.approx(r["peer_ms"] / r["default_ms"])
    assert "peer_ms" not in next(r for r in ops if r["op"] == "mandelbrot")
    assert "default_ms" in proc.stdout and "peer_over_ours" in proc.stdout


def test_wall_ms_waits_for_the_result_and_keeps_the_budget():
    waited = []
    t = up.wall_ms(lambda: 7, waited.append, budget_s=0.01, min_repeat=4)
    assert t["samples"] >= 4 and len(waited) == t["samples"] + 1  # the warm-up call too
    assert set(waited) == {7}
    slow = up.wall_ms(lambda: time.sleep(0.03), budget_s=0.01)
    assert slow["samples"] == 1 and slow["median_ms"] >= 30  # one slow call is the only sample
    assert slow["cold"]


def test_wall_ms_never_times_gpulab_s_first_call():
    """gpulab's calls (cold_ok=False) are timed after a warm-up, however slow the first: it may
    convert a scipy or cupyx matrix that later calls find cached."""
    calls = []

    def converting():
        time.sleep(0.05 if not calls else 0.0)
        calls.append(1)
    t = up.wall_ms(converting, budget_s=0.01, cold_ok=False)
    assert not t["cold"] and t["samples"] >= 1 and t["median_ms"] < 20


def test_cpu_peers_compute_what_the_op_computes():
    rng = np.random.default_rng(3)
    for name in ("saxpy", "scan", "sort", "histogram", "spmv", "stencil", "jacobi"):
        args = gl._op.OPS[name].__gpulab_op__.example(4096, rng)
        want = up.CPU_PEERS[name][1](*args)()
        got = gl._op.OPS[name](*args)
        got = got.u if name == "jacobi" else got
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                                   np.asarray(want, dtype=np.float64), rtol=1e-4, atol=1e-4,
                                   err_msg=name)


def test_a_gap_past_the_line_is_taken_apart():
    """A device row more than 5% over the best rung's event time says how much the best rung's
    own wall-clock call adds (launch and synchronize) and how much the default call adds to
    that; the printed table lists them under it."""
    row = {"op": "sin", "container": "cupy", "best_ms": 0.050, "best_wall_ms": 0.058,
           "default_ms": 0.060, "gap": 1.2}
    why = up.gap_why(row)
    assert "+8 us launch and synchronize" in why and "+2 us the call's own" in why
    assert "within 5% of the best rung's wall-clock call" in why
    assert "more than 5%" in up.gap_why(dict(row, default_ms=0.070, gap=1.4))
    assert up.gap_why(dict(row, default_ms=0.052, gap=1.04)) is None  # within the line
    assert up.gap_why({k: v for k, v in row.items() if k != "best_wall_ms"}) is None  # host
    text = up.table([dict(row, gap_why=why, peer="cupy", peer_ms=0.07, peer_over_ours=1.17)])
    assert "best_wall_ms" in text and f"sin [cupy]: {why}" in text


@pytest.mark.gpu
def test_gpu_containers_at_tiny_sizes():
    rows = up.op_rows("saxpy", 1 << 16, True, 0.5, np.random.default_rng(1))
    kinds = {r["container"]: r for r in rows}
    assert {"numpy", "gpulab"} <= set(kinds)
    for r in rows:
        assert r.get("default_error") is None and r["default_ms"] > 0, r
        assert r["best_variant"] == gl.registry.best("saxpy", "cuda").name
        device = r["container"] not in up.HOST
        assert (r.get("best_wall_ms", 0) > 0) == device, r
        assert ("gap_why" in r) == (device and r["gap"] > up.GAP_LINE), r
    rows = up.op_rows("spmv", 1 << 14, True, 0.5, np.random.default_rng(2))
    assert {"numpy", "scipy", "gpulab"} <= {r["container"] for r in rows}
    assert all(r.get("default_error") is None for r in rows), rows
