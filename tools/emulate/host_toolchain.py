"""What the host emulations (tools/emulate/*.py) build with: g++ (or $CXX) and the CUDA headers
($CUDA_HOME/include), found once here for all of them."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

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


def kernel_parts(path, parts):
    """The (start marker, end marker) parts of the kernel source at path, joined, each
    __shared__ variable per block (per_block_shared); exits where a marker is gone."""
    with open(path) as f:
        text = f.read()
    found = []
    for start, end in parts:
        if start not in text or end not in text:
            sys.exit(f"emulate: {start!r} or {end!r} is no longer in {os.path.basename(path)}: "
                     "update tools/emulate")
        found.append(text[text.index(start):text.index(end)])
    return per_block_shared("\n".join(found))


def emulator_args(args):
    """(quick, the host program's part argument as a list, the kernel source paths) of an
    emulator's command line: [--quick] [--part K/N] [source]."""
    args = list(args)
    quick = "--quick" in args
    args = [a for a in args if a != "--quick"]
    part = []
    if "--part" in args:
        at = args.index("--part")
        if at + 1 == len(args):
            sys.exit("--part takes K/N")
        part = [f"part={args[at + 1]}"]
        del args[at:at + 2]
    return quick, part, args


def build_and_run(host_cpp, kernel_text, args, timeout, defines=(), files=None):
    """Builds tools/emulate/<host_cpp> with kernel_text as its kernel_gen.inc (C++20, the CUDA
    and libcu++ headers, this tree on the include path, each of defines as -D; files: more
    {name: text} it includes) and runs it with args; its exit code, or 1 when it runs past
    timeout seconds (a thread missing from a barrier or a collective hangs its block)."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    cxx, include = require()
    with tempfile.TemporaryDirectory() as work:
        for name, text in {"kernel_gen.inc": kernel_text, **(files or {})}.items():
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
        shutil.copy(os.path.join(here, host_cpp), work)
        exe = os.path.join(work, os.path.splitext(host_cpp)[0])
        subprocess.run([cxx, "-std=c++20", "-O1", "-pthread", "-w", f"-I{include}",
                        *cccl_flags(include), *(f"-D{d}" for d in defines), f"-I{here}",
                        f"-I{root}", f"-I{work}",
                        os.path.join(work, host_cpp), "-o", exe], check=True)
        try:
            return subprocess.run([exe, *args], timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            print("emulate: the kernel hung (a thread missing from a barrier or a collective?)")
            return 1
