"""What the host emulations (tools/emulate/*.py) build with: g++ (or $CXX) and the CUDA headers
($CUDA_HOME/include), found once here for all of them."""

import os
import re
import shutil
import sys

SHARED = re.compile(r"__shared__\s+(__align__\(\d+\)\s+)?([^;]+?)\s+(\w+)((?:\[[^\]]+\])*);")


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


def cccl_flags(include):
    """The include flag of libcu++ (<cuda/atomic>), in include/cccl from CUDA 13 on."""
    cccl = os.path.join(include, "cccl")
    return [f"-I{cccl}"] if os.path.isdir(cccl) else []


def per_block_shared(text):
    """text with each __shared__ variable (arrays of any rank) a reference to the running
    block's copy, emu_shared<type, id>(), which each host emulation defines: blocks that run
    at once then keep their own shared memory."""
    ids = iter(range(100000))
    return SHARED.sub(lambda m: f"auto &{m.group(3)} = emu_shared<{m.group(2)}{m.group(4)}, "
                                f"{next(ids)}>();", text)
