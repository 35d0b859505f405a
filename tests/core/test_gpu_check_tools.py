"""The GPU machine's check runs the suite in shards (tests/conftest.py's GPULAB_SHARD, driven by
tools/gpu-check.sh's GPULAB_TEST_SHARDS) and sums their logs (tools/pytest_totals.py): both are
checked here, where they are written."""

import importlib.util
import os
import pathlib
import signal
import subprocess
import sys
import time

REGISTRY_TESTS = str(pathlib.Path(__file__).with_name("test_registry.py"))


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
