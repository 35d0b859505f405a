#!/usr/bin/env bash
# Builds gpulab's extension here, on the CPU machine, for the GPU machine's CPython (3.12), so
# that a device call carries it instead of building: the device's `pip install -e .` takes 110-
# 170 s of the session's 30 device minutes, and every call starts on a bare machine.
#
#   tools/device_build.sh          -> gpulab/_core.cpython-312-x86_64-linux-gnu.so
#
# then, with the device tool: carry ["gpulab/_core.cpython-312-x86_64-linux-gnu.so"], and run
# everything with PYTHONPATH=$PWD (no install step: tools/gpu-check.sh's steps but `build`, and
# tools/mutation_check.py, which builds its own copy of the tree, work that way).
#
# How: this tree's own build first (python3 setup.py build_ext --inplace), then its CUDA objects,
# which do not include Python.h, copied with their times into the 3.12 build folder, so that the
# 3.12 build compiles only the C binding (~10 s) and links. The 3.12 interpreter comes from
# GPULAB_DEVICE_PYTHON or pyenv's 3.12; its venv (GPULAB_DEVICE_VENV, default
# /tmp/gpulab-py312) gets the device's NumPy (GPULAB_DEVICE_NUMPY, default 2.5.2, as the device
# reported on 2026-11-27) and setuptools from PyPI on first use. The archs are setup.py's
# defaults (80;90) unless GPULAB_CUDA_ARCHS says otherwise, the same for both builds.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${GPULAB_DEVICE_VENV:-/tmp/gpulab-py312}
if [ ! -x "$venv/bin/python" ]; then
  base=${GPULAB_DEVICE_PYTHON:-$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 2>/dev/null | tail -1)}
  if [ -z "$base" ] || [ ! -x "$base" ]; then
    echo "no CPython 3.12 here: set GPULAB_DEVICE_PYTHON to one (with its headers)" >&2
    exit 1
  fi
  "$base" -m venv "$venv"
  "$venv/bin/pip" install -q "numpy==${GPULAB_DEVICE_NUMPY:-2.5.2}" setuptools wheel
fi
tag=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_config_var('SOABI'))")
here=$(python3 -c "import sysconfig, sys; print(f'{sysconfig.get_platform()}-{sys.implementation.cache_tag}')")
there=$("$venv/bin/python" -c "import sysconfig, sys; print(f'{sysconfig.get_platform()}-{sys.implementation.cache_tag}')")
python3 setup.py -q build_ext --inplace -j "$(nproc)"
mkdir -p "build/temp.$there"
cp -a "build/temp.$here/cuda/." "build/temp.$there/cuda/"
"$venv/bin/python" setup.py -q build_ext --inplace -j "$(nproc)"
ls -l "gpulab/_core.$tag.so"
