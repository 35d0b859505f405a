"""Exact allocation mode (GPULAB_EXACT_ALLOC=1 at import, for the sanitizers): every device
buffer at its exact size, no cache of freed blocks, no small NumPy calls on mapped pinned memory.
Each case runs in a child process, since the mode is read once, when gpulab is imported."""

import json
import subprocess
import sys

import pytest

from conftest import child_env


def child(code, exact):
    done = subprocess.run([sys.executable, "-c", code], env=child_env(GPULAB_EXACT_ALLOC=exact),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("value, on", [(None, False), ("", False), ("0", False), ("1", True),
                                       ("yes", True)])
def test_the_mode_follows_the_environment_at_import(value, on):
    assert child("import json, gpulab; print(json.dumps(gpulab._core._exact_alloc()))",
                 value) is on


# Small arrays freed on the library's stream: normal runs keep their blocks for reuse (the
# cache), exact mode hands every one back to the pool; a small NumPy call works either way.
CACHE_PROBE = """
import json, numpy as np, gpulab as gl
x = np.arange(33, dtype=np.float32)
assert np.array_equal(gl.saxpy(2.0, x, x), 3 * x)
arrays = [gl.to_device(x) for _ in range(4)]
del arrays
gl.synchronize()
print(json.dumps(gl.pool_usage()["cached"]))
"""


@pytest.mark.gpu
def test_exact_mode_keeps_no_freed_blocks():
    assert child(CACHE_PROBE, "1") == 0
    assert child(CACHE_PROBE, None) > 0
