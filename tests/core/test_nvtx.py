"""NVTX ranges: ops open "op variant=v" ranges only when a profiler is attached (checked with a
stand-in NVTX tool that records what it is given), and gl.nvtx_range for users' code."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import gpulab as gl
from gpulab import nvtx

from conftest import child_env

HERE = os.path.dirname(os.path.abspath(__file__))


def test_when_ranges_are_wanted():
    assert not nvtx.wanted({})
    assert nvtx.wanted({"NVTX_INJECTION64_PATH": "/x/libToolsInjection64.so"})
    assert nvtx.wanted({"CUDA_INJECTION64_PATH": "/x/libcuda-injection.so"})
    assert nvtx.wanted({"GPULAB_NVTX": "1"})
    assert not nvtx.wanted({"GPULAB_NVTX": "0", "NVTX_INJECTION64_PATH": "/x.so"})
    with pytest.raises(ValueError, match="GPULAB_NVTX must be 0 or 1"):
        nvtx.wanted({"GPULAB_NVTX": "yes"})


def test_no_profiler_means_no_wrapper():
    if nvtx.ENABLED:
        pytest.skip("this process runs under a profiler (or GPULAB_NVTX=1)")
    for name, fn in gl._op.OPS.items():
        assert not hasattr(fn, "__wrapped__"), f"{name} is wrapped without a profiler"


def test_nvtx_range_checks_its_name():
    with pytest.raises(TypeError, match="name must be a str"):
        with gl.nvtx_range(3):
            pass
    with gl.nvtx_range("a user's range"):
        pass


def _recorder(tmp_path):
    include = None
    nvcc = gl.build_info().get("nvcc")
    for root in filter(None, [os.path.dirname(os.path.dirname(nvcc)) if nvcc else None,
                              os.environ.get("CUDA_HOME"), "/usr/local/cuda"]):
        if os.path.exists(os.path.join(root, "include", "nvtx3", "nvToolsExt.h")):
            include = os.path.join(root, "include")
            break
    cc = shutil.which("cc") or shutil.which("gcc")
    if include is None or cc is None or not gl._core._nvtx_built():
        pytest.skip("needs a C compiler, the CUDA toolkit's NVTX3 headers and a build with them")
    lib = tmp_path / "nvtx_recorder.so"
    subprocess.run([cc, "-shared", "-fPIC", "-I", include, "-o", str(lib),
                    os.path.join(HERE, "data", "nvtx_recorder.c")], check=True)
    return lib


def test_ops_open_named_ranges_under_a_tool(tmp_path):
    lib = _recorder(tmp_path)
    record = tmp_path / "ranges.txt"
    script = """
import numpy as np, gpulab as gl
x = np.ones(100, np.float32)
gl.saxpy(2.0, x, x, 100)                # positional variant
gl.reduce(x, variant="serial")
with gl.nvtx_range("user step"):
    gl.saxpy(2.0, x, x, variant=101)
gl.saxpy(2.0, x, x)                     # the default variant
assert hasattr(gl.saxpy, "__wrapped__") and gl.saxpy.__gpulab_op__.name == "saxpy"
"""
    env = child_env(NVTX_INJECTION64_PATH=str(lib), GPULAB_NVTX_RECORD=str(record))
    env.pop("GPULAB_NVTX", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert record.read_text().splitlines() == [
        "saxpy variant=100", "pop", "reduce variant=serial", "pop", "user step",
        "saxpy variant=101", "pop", "pop", "saxpy variant=default", "pop"]
