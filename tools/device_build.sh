#!/usr/bin/env bash
# Builds gpulab's extension here, on the CPU machine, for the GPU machine's CPython (3.12), so
# that a device call carries it instead of building: the device's `pip install -e .` takes
# 110-170 s, and every call starts on a bare machine.
#
#   tools/device_build.sh          -> gpulab/_core.cpython-312-x86_64-linux-gnu.so
#
# then, with the device tool: carry ["gpulab/_core.cpython-312-x86_64-linux-gnu.so"], and run
# everything with PYTHONPATH=$PWD (no install step: tools/gpu-check.sh's steps but `build`, and
# tools/mutation_check.py, which builds its own copy of the tree, work that way).
#
# How: setup.py's object cache (~/.cache/gpulab/build) holds the CUDA objects of any earlier
# build of this tree here, whatever its Python, so the 3.12 build compiles only the C binding and
# links. The 3.12 interpreter comes from GPULAB_DEVICE_PYTHON or pyenv's 3.12; its venv
# (GPULAB_DEVICE_VENV, default /tmp/gpulab-py312) gets the device's NumPy (GPULAB_DEVICE_NUMPY,
# default 2.5.2) and a current setuptools from PyPI on first use. The archs are setup.py's
# defaults (80;90) unless GPULAB_CUDA_ARCHS says otherwise.
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
  "$venv/bin/pip" install -q "numpy==${GPULAB_DEVICE_NUMPY:-2.5.2}" "setuptools>=77" wheel
fi
tag=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_config_var('SOABI'))")
"$venv/bin/python" setup.py -q build_ext --inplace
ls -l "gpulab/_core.$tag.so"
