"""The GPU machine's check runs the suite in shards (tests/conftest.py's GPULAB_SHARD, driven by
tools/gpu-check.sh's GPULAB_TEST_SHARDS) and sums their logs (tools/pytest_totals.py): both are
checked here, where they are written."""

import importlib.util
import os
import pathlib
import subprocess
import sys

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
