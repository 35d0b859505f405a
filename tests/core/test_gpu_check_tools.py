"""The GPU machine's check runs the suite in shards (tests/conftest.py's GPULAB_SHARD, driven by
tools/gpu-check.sh's GPULAB_TEST_SHARDS) and sums their logs (tools/pytest_totals.py): both are
checked here, where they are written."""

import importlib.util
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

REGISTRY_TESTS = str(pathlib.Path(__file__).with_name("test_registry.py"))
GPU_CHECK_TESTS = str(pathlib.Path(__file__))


def test_shards_split_the_suite_without_overlap():
    """GPULAB_SHARD=k/n gives n disjoint parts whose union is the whole."""
    def collected(shard=None):
        env = {k: v for k, v in os.environ.items() if k != "GPULAB_SHARD"}
        if shard:
            env["GPULAB_SHARD"] = shard
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                              "-p", "no:cacheprovider", REGISTRY_TESTS], capture_output=True,
                             text=True, env=env, cwd=os.path.dirname(os.path.dirname(__file__)))
        return [line for line in out.stdout.splitlines() if "::" in line]

    whole = collected()
    parts = [collected(f"{k}/3") for k in range(3)]
    assert len(whole) > 3 and all(parts)
    assert sorted(sum(parts, [])) == sorted(whole)


def test_shards_deal_costly_tests_apart_and_keep_a_costly_module_whole(tmp_path):
    """With tests/durations.json's kind of file, the two costliest tests go to different
    shards, and a module with a costly setup goes whole to one."""
    def collected(shard, durations):
        path = tmp_path / "durations.json"
        path.write_text(json.dumps(durations))
        env = dict(os.environ, GPULAB_SHARD=shard, GPULAB_TEST_DURATIONS=str(path))
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                              "-p", "no:cacheprovider", REGISTRY_TESTS, GPU_CHECK_TESTS],
                             capture_output=True, text=True, env=env,
                             cwd=os.path.dirname(os.path.dirname(__file__)))
        return [line for line in out.stdout.splitlines() if "::" in line]

    every = collected("0/1", {})
    registry = [t for t in every if "test_registry" in t]
    heavy = [registry[0], registry[3]]  # one part, were they dealt in turn
    parts = [collected(f"{k}/3", {"tests": {t: 100.0 for t in heavy}}) for k in range(3)]
    assert sorted(sum(parts, [])) == sorted(every)
    assert [sum(t in part for t in heavy) for part in parts] == [1, 1, 0]
    # a test known by its base id alone (parametrized since): its cases share that cost, so
    # they spread over the parts as their cost asks; counted as untimed, all would go where the
    # costly test is not
    base = "tests/core/test_registry.py::test_id_ranges_by_backend"
    cases = [t for t in every if t.split("[")[0] == base]
    parts = [collected(f"{k}/3", {"tests": {base: 300.0, heavy[0]: 100.0}}) for k in range(3)]
    with_heavy = next(part for part in parts if heavy[0] in part)
    assert 2 <= len(set(cases) & set(with_heavy)) <= 5, with_heavy
    module = registry[0].split("::")[0]
    parts = [collected(f"{k}/3", {"modules": {module: 50.0}}) for k in range(3)]
    assert sorted(sum(parts, [])) == sorted(every)
    assert [sum(t in part for t in registry) for part in parts] == [len(registry), 0, 0]


def test_durations_come_from_the_logs_setup_by_module(tmp_path):
    path = pathlib.Path(__file__).parents[2] / "tools" / "test_durations.py"
    spec = importlib.util.spec_from_file_location("test_durations", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = module.durations([
        "54.07s setup    tests/core/test_cli.py::test_a\n"
        "12.50s call     tests/labs/test_sort.py::test_b[x]\n"
        "0.50s call     tests/labs/test_sort.py::test_c\n",
        "13.00s call     tests/labs/test_sort.py::test_b[x]\n"
        "2.00s setup    tests/labs/test_scan.py::test_d\n"])
    assert found == {"modules": {"tests/core/test_cli.py": 54.07},
                     "tests": {"tests/labs/test_sort.py::test_b[x]": 13.0}}


def test_shard_totals_sum_the_logs_and_count_an_unfinished_shard():
    path = pathlib.Path(__file__).parents[2] / "tools" / "pytest_totals.py"
    spec = importlib.util.spec_from_file_location("pytest_totals", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    counts, longest = module.totals([
        "....\n== 10 passed, 2 skipped in 3.50s ==\n",
        "F.\n== 1 failed, 7 passed, 1 warning in 9.25s ==\n",
        "...KeyboardInterrupt\n"])
    assert counts["passed"] == 17 and counts["failed"] == 1 and counts["skipped"] == 2
    assert counts["warnings"] == 1 and counts["errors"] == 1 and longest == 9.25


def running(pid):
    """Whether the process exists and is not a zombie (an ended child that init has not yet
    reaped, as in containers whose first process does not reap)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_stopped_check_ends_the_sanitizer_runs_it_started(tmp_path):
    """tools/gpu-check-lab.sh stops gpu-check.sh with SIGINT at a part's time limit. The
    sanitizer runs it started in the background ignore SIGINT; they must end with it, not run on
    beside the next call's benchmarks (a fake compute-sanitizer that sleeps stands in)."""
    root = pathlib.Path(__file__).parents[2]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started = tmp_path / "started"
    fake = bin_dir / "compute-sanitizer"
    fake.write_text(f"#!/bin/bash\necho $$ >> {started}\nexec sleep 300\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", GPULAB_SANITIZE="ceilings",
               GPULAB_CHECK_JOBS="4", GPULAB_CHECK_DIR=str(tmp_path / "check"),
               OUT=str(tmp_path / "out"))
    # SIGINT back to its default in the child: pytest-xdist's workers ignore it, and bash cannot
    # trap a signal ignored when it starts
    check = subprocess.Popen(["bash", str(root / "tools" / "gpu-check.sh"), "sanitize"], env=env,
                             cwd=root, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
                not started.exists() or len(started.read_text().split()) < 4):
            time.sleep(0.1)
        pids = [int(p) for p in started.read_text().split()]
        assert len(pids) == 4  # one run a sanitizer tool, all four at once
        check.send_signal(signal.SIGINT)
        assert check.wait(timeout=30) == 130
        time.sleep(0.5)
        alive = [pid for pid in pids if running(pid)]
        assert not alive, f"sanitizer runs still going after the check stopped: {alive}"
        assert "STOPPED" in (tmp_path / "check" / "logs" / "steps.txt").read_text()
    finally:
        try:
            os.killpg(check.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_sanitizer_shards_deal_every_variant_to_one_shard():
    """tools/sanitize/_common.py's --shard K/N: N shards run every key once between them (a key
    asked for again, as drivers do for each size, stays in its shard), in near-equal numbers;
    a bad K/N is refused by name. In a child: _common sets GPULAB_EXACT_ALLOC for its process."""
    code = """
import argparse, sys
sys.path.insert(0, "tools/sanitize")
import _common
keys = [f"op{i % 7}:{i}" for i in range(23)] * 2
dealt = []
for k in range(3):
    args = argparse.Namespace(only=set(), shard=_common.shard(f"{k}/3"))
    dealt.append({key for key in keys if _common.wanted(args, key)})
assert set.union(*dealt) == set(keys) and sum(map(len, dealt)) == 23, dealt
assert sorted(map(len, dealt)) == [7, 8, 8], dealt
only = argparse.Namespace(only={"op1:1", "op2:2"}, shard=(1, 2))
assert [key for key in keys[:3] if _common.wanted(only, key)] == ["op2:2"]
for bad in ("3/3", "1", "a/b", "-1/2"):
    try:
        _common.shard(bad)
    except argparse.ArgumentTypeError as e:
        assert "K/N" in str(e), e
    else:
        raise AssertionError(bad)
print("OK")
"""
    root = pathlib.Path(__file__).parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert out.stdout.strip() == "OK", out.stderr


def test_a_sharded_driver_runs_as_its_shards_under_every_tool(tmp_path):
    """A driver declaring SANITIZE_SHARDS = n runs as n processes a tool, each with its
    --shard k/n and its own log; the others with --shard 0/1. The summary puts a driver's shards
    back together: calls summed, None where a shard did not finish (a fake compute-sanitizer
    prints each driver's last line)."""
    root = pathlib.Path(__file__).parents[2]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "compute-sanitizer"
    fake.write_text('#!/bin/bash\necho "gpu=${CUDA_VISIBLE_DEVICES:-all} $*" >> "$FAKE_CALLS"\n'
                    'case "$*" in *ceilings*) exit 0;; esac\n'  # a run that says nothing
                    'echo "sanitize/x: 5 CUDA calls checked in exact allocation mode"\n'
                    'echo "========= ERROR SUMMARY: 0 errors"\n')
    fake.chmod(0o755)
    smi = bin_dir / "nvidia-smi"  # two GPUs
    smi.write_text('#!/bin/bash\nprintf "GPU 0: NVIDIA H200 (UUID: a)\\nGPU 1: NVIDIA H200 '
                   '(UUID: b)\\n"\n')
    smi.chmod(0o755)
    calls = tmp_path / "calls"
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", FAKE_CALLS=str(calls),
               GPULAB_SANITIZE="ceilings scan multi", GPULAB_CHECK_JOBS="3",
               GPULAB_CHECK_DIR=str(tmp_path / "check"), OUT=str(tmp_path / "out"))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    done = subprocess.run(["bash", str(root / "tools" / "gpu-check.sh"), "sanitize"], env=env,
                          cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    runs = calls.read_text().splitlines()
    scan = [r.split("--shard ")[1] for r in runs if "scan.py" in r]
    assert sorted(scan) == ["0/2"] * 4 + ["1/2"] * 4
    assert sum("ceilings.py" in r and r.endswith("--shard 0/1") for r in runs) == 4
    # the runs take turns over the two GPUs; multi.py (SANITIZE_ALL_GPUS) sees both
    assert {r.split()[0] for r in runs if "multi.py" in r} == {"gpu=all"}
    assert {r.split()[0] for r in runs if "multi.py" not in r} == {"gpu=0", "gpu=1"}
    order = (tmp_path / "check" / "logs" / "sanitize-order.txt").read_text().split()
    assert order[:2] == ["6", "tools/sanitize/ops.py"]  # the most shards first
    logs = tmp_path / "check" / "logs"
    assert (logs / "sanitize-racecheck-scan.1.log").exists()
    result = json.loads((tmp_path / "out" / "gpu_check.json").read_text())["results"]
    memcheck = result["sanitizers"]["memcheck"]
    assert memcheck["scan"]["calls"] == 10 and memcheck["scan"]["shards"] == 2
    assert memcheck["scan"]["summary"] == ["ERROR SUMMARY: 0 errors"] * 2
    assert memcheck["ceilings"]["calls"] is None and memcheck["ceilings"]["finished"] == 0
    assert memcheck["scan"]["finished"] == 2
    assert " load " in (logs / "sanitize-monitor.txt").read_text()


def test_sanitizer_shards_dealt_by_cost_end_together():
    """_common.deal: each key to one shard, the costliest first to the least-loaded shard, the
    same in every shard; wanted() follows it. Round-robin over these costs would give one shard
    the three costly keys."""
    code = """
import argparse, sys
sys.path.insert(0, "tools/sanitize")
import _common
costs = {"a:0": 90, "b:0": 1, "c:0": 1, "d:0": 90, "e:0": 1, "f:0": 1, "g:0": 90, "h:0": 3}
dealt, loads = [], None
for k in range(3):
    args = argparse.Namespace(only=set(), shard=(k, 3))
    loads = _common.deal(args, costs)
    dealt.append({key for key in costs if _common.wanted(args, key)})
assert set.union(*dealt) == set(costs) and sum(map(len, dealt)) == len(costs), dealt
assert all(sum(key in ("a:0", "d:0", "g:0") for key in part) == 1 for part in dealt), dealt
assert sorted(loads) == [92, 92, 93], loads
print("OK")
"""
    root = pathlib.Path(__file__).parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert out.stdout.strip() == "OK", out.stderr


def test_ops_driver_leaves_to_a_lab_driver_the_ops_it_declares():
    """A lab driver's OPS_COVERED names ops of the registry, and ops.py plans none of their
    variants unless --only names one; every other CUDA variant it plans at each size."""
    code = """
import argparse, sys
sys.path.insert(0, "tools/sanitize")
import numpy as np
import _common, ops
from gpulab._op import OPS
covered = _common.covered_elsewhere()
assert covered["spmv"] == "sparse.py" and covered["matmul"] == "linalg.py", covered
assert set(covered) <= set(OPS), set(covered) - set(OPS)
args = argparse.Namespace(only=set(), shard=(0, 1), inputs="both")
plan = ops.planned(args, np.random.default_rng(1), _common.SIZES)
assert not any(key.split(":")[0] in covered for key in plan), plan.keys()
assert "saxpy:0" in plan and "reduce:2" in plan
assert {n for n, _, _ in plan["saxpy:0"][1]} == set(_common.SIZES)
only = argparse.Namespace(only={"spmv:0"}, shard=(0, 1), inputs="both")
assert list(ops.planned(only, np.random.default_rng(1), _common.SIZES)) == ["spmv:0"]
print("OK")
"""
    root = pathlib.Path(__file__).parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         env=dict(os.environ, PYTHONPATH=str(root)))
    assert out.stdout.splitlines()[-1:] == ["OK"], out.stderr
    assert "spmv: left to sparse.py (its OPS_COVERED)" in out.stdout.splitlines()
