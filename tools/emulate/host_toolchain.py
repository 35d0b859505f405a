"""What the host emulations (tools/emulate/*.py) build with: g++ (or $CXX) and the CUDA headers
($CUDA_HOME/include), found once here for all of them."""

import os
import shutil
import sys


def find():
    """(compiler, CUDA include folder), the compiler None where either is missing."""
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    include = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")
    if not os.path.isfile(os.path.join(include, "cuda_runtime.h")):
        cxx = None
    return cxx, include


def require():
    """find()'s pair, or the script exits saying what is missing."""
    cxx, include = find()
    if not cxx:
        sys.exit("emulate: needs g++ and the CUDA headers (CUDA_HOME)")
    return cxx, include
