"""The argument fuzz of every op (tools/fuzz_ops.py), run in a child process so that a crash
fails one test, with the child's output in the message, instead of ending the test run.

A short run everywhere (CI has no GPU, where it checks the CPU variants and that the CUDA ones
stop at the GPU check) and the full 100,000 calls where a GPU is usable:

    python3 -m pytest -q tests/core/test_fuzz.py
"""

import os
import signal
import subprocess
import sys

import pytest

from conftest import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "fuzz_ops.py")
SHOWN = 20000  # characters of the child's output that a failure shows, from each end


def excerpt(output):
    if len(output) <= 2 * SHOWN:
        return output
    return f"{output[:SHOWN]}\n[... {len(output) - 2 * SHOWN} characters ...]\n{output[-SHOWN:]}"


def run_fuzz(calls, seed, timeout):
    """Runs the fuzz; fails the test unless it ends with 0 failures and a healthy library."""
    env = child_env()  # the child fuzzes the gpulab that this test imported
    command = [sys.executable, TOOL, "--calls", str(calls), "--seed", str(seed)]
    # its own session, so that a timeout ends the fuzz and its worker together
    child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        output, _ = child.communicate()
        pytest.fail(f"{' '.join(command)} ran past {timeout} s:\n{excerpt(output)}")
    summary = f"fuzz_ops: {calls} calls, 0 failures"
    assert child.returncode == 0 and summary in output and "health check ok" in output, (
        f"{' '.join(command)} exited with status {child.returncode}:\n{excerpt(output)}")
    return output


def test_fuzz_short():
    run_fuzz(calls=10000, seed=1, timeout=300)


@pytest.mark.gpu
def test_fuzz_full():
    run_fuzz(calls=100000, seed=2, timeout=1800)
