"""Builds gpulab._core from C (csrc/) and CUDA (cuda/).

nvcc is taken from PATH or $CUDA_HOME/bin. Without it the CPU part is built alone,
with a loud warning, and gl.build_info() says so. GPULAB_CUDA_ARCHS (e.g. "80;90")
overrides the default SASS targets; PTX for the newest one is always embedded.
"""

import concurrent.futures
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ARCHS = "80;90"
# -fno-math-errno: no gpulab code reads errno after a math call, and a sqrtf that may set errno
# keeps gcc from vectorizing any loop that calls it (the CPU n-body variants).
C_FLAGS = ["-O3", "-std=gnu11", "-fopenmp", "-fno-math-errno", "-Wall", "-Wno-unused-function"]
# -fno-gnu-unique: static locals of inline code (CUB's, NVTX's) would otherwise be GNU-unique
# symbols, which bind across the whole process even under RTLD_LOCAL and collided with other
# CCCL users loaded later (importing CuPy after gpulab crashed).
NVCC_FLAGS = ["-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-Xcompiler", "-O3", "-Xcompiler",
              "-fno-gnu-unique"]
# cudadevrt (static: the toolkit ships it only as an archive) is the device runtime that the
# dynamic-parallelism files' device-side launches call.
CUDA_LIBS = ["cudadevrt", "cudart_static", "stdc++", "dl", "rt", "pthread"]
# Files named *_cdp.cu launch kernels from the device (CUDA dynamic parallelism): they need
# relocatable device code (-rdc=true) and a device-link step against cudadevrt. Every other file
# builds as before, whole-program, and is not part of the device link.
RDC_SUFFIX = "_cdp.cu"


def find_nvcc():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and os.path.isfile(os.path.join(home, "bin", "nvcc")):
        return os.path.join(home, "bin", "nvcc")
    return shutil.which("nvcc")


def cuda_archs():
    raw = os.environ.get("GPULAB_CUDA_ARCHS", DEFAULT_ARCHS)
    archs = [a.strip() for a in raw.replace(",", ";").split(";") if a.strip()]
    if not archs or not all(a.rstrip("a").isdigit() for a in archs):
        sys.exit(f"GPULAB_CUDA_ARCHS must list compute capabilities like '80;90', got {raw!r}")
    return archs


def gencode_flags(archs):
    flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    newest = max(archs, key=lambda a: int(a.rstrip("a")))
    flags.append(f"-gencode=arch=compute_{newest},code=compute_{newest}")
    return flags


def nvcc_version(nvcc):
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    for token in out.replace(",", " ").split():
        if token.startswith("V") and token[1:2].isdigit():
            return token[1:]
    return "unknown"


def c_string(value):
    return json.dumps(str(value))


class BuildCore(build_ext):
    """Compiles the .cu files with nvcc and links them, with static cudart, into _core."""

    def build_extension(self, ext):
        nvcc = find_nvcc()
        os.makedirs(self.build_temp, exist_ok=True)
        cc = " ".join(self.compiler.compiler_so) if hasattr(self.compiler, "compiler_so") else "cc"
        info = {"cuda": 0, "archs": "", "nvcc": "", "nvcc_version": "", "nvcc_flags": ""}
        if nvcc:
            archs = cuda_archs()
            flags = NVCC_FLAGS + gencode_flags(archs)
            info.update(cuda=1, archs=";".join(archs), nvcc=nvcc,
                        nvcc_version=nvcc_version(nvcc), nvcc_flags=" ".join(flags))
            cuda_home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
            for lib in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
                if os.path.isdir(os.path.join(cuda_home, lib)):
                    ext.library_dirs.append(os.path.join(cuda_home, lib))
            ext.libraries.extend(CUDA_LIBS)
            # The toolkit's header-only NVTX3, for the ranges of csrc/core/nvtx.c.
            nvtx = os.path.join(cuda_home, "include", "nvtx3", "nvToolsExt.h")
            if os.path.exists(nvtx):
                ext.include_dirs.append(os.path.join(cuda_home, "include"))
                ext.define_macros.append(("GPULAB_HAVE_NVTX", "1"))
            objects = self.compile_cuda(nvcc, flags, ext)
            ext.extra_objects.extend(objects)
            # build_ext relinks only when a source or a dependency is newer than the extension:
            # a recompiled CUDA object must count, or a change to a .cu file never reaches _core.
            ext.depends.extend(objects)
        else:
            banner = "!" * 78
            print(f"\n{banner}\nWARNING: nvcc not found (PATH, CUDA_HOME). Building gpulab WITHOUT CUDA:\n"
                  f"only the CPU variants will run. Install the CUDA toolkit and rebuild for GPU.\n"
                  f"{banner}\n", file=sys.stderr)
        self.write_build_info(info, cc, ext)
        ext.extra_link_args.append("-Wl,--version-script=" + self.write_export_map())
        super().build_extension(ext)

    def write_export_map(self):
        """A linker version script that exports PyInit__core alone: nothing of the CUDA runtime,
        CUB or the C core may interpose on, or be interposed by, other extensions."""
        path = os.path.join(self.build_temp, "gpulab_core.map")
        with open(path, "w") as f:
            f.write("{\n  global: PyInit__core;\n  local: *;\n};\n")
        return path

    def compile_cuda(self, nvcc, flags, ext):
        """nvcc on every stale .cu file, as many at once as there are cores: the template-heavy
        files (CUB, the reduce ladder) take most of a minute each. Objects mirror the sources'
        paths (cuda/reduce/cub.cu -> <build_temp>/cuda/reduce/cub.cu.o)."""
        objects, commands = [], []
        for source in cuda_sources():
            rel = os.path.relpath(source, HERE)
            obj = os.path.join(self.build_temp, rel + ".o")
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            rdc = ["-rdc=true"] if source.endswith(RDC_SUFFIX) else []
            if self.force or not os.path.exists(obj) or newer_than(source, obj):
                commands.append([nvcc, *flags, *rdc, "-I", HERE, "-c", source, "-o", obj])
            objects.append(obj)
        with concurrent.futures.ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
            for cmd, done in zip(commands, pool.map(
                    lambda c: subprocess.run(c, capture_output=True, text=True), commands)):
                print(" ".join(cmd))
                sys.stdout.write(done.stdout)
                sys.stderr.write(done.stderr)
                if done.returncode:
                    raise subprocess.CalledProcessError(done.returncode, cmd)
        return objects + self.device_link(nvcc, flags, objects)

    def device_link(self, nvcc, flags, objects):
        """nvcc -dlink over the relocatable (*_cdp.cu) objects alone, against cudadevrt: the
        object that resolves their device-side launches. [] when there are none."""
        rdc_objects = [o for o in objects if o.endswith(RDC_SUFFIX + ".o")]
        if not rdc_objects:
            return []
        linked = os.path.join(self.build_temp, "cuda", "device_link.o")
        if self.force or not os.path.exists(linked) or any(
                os.path.getmtime(o) > os.path.getmtime(linked) for o in rdc_objects):
            cmd = [nvcc, *flags, "-dlink", *rdc_objects, "-lcudadevrt", "-o", linked]
            print(" ".join(cmd))
            done = subprocess.run(cmd, capture_output=True, text=True)
            sys.stdout.write(done.stdout)
            sys.stderr.write(done.stderr)
            if done.returncode:
                raise subprocess.CalledProcessError(done.returncode, cmd)
        return [linked]

    def write_build_info(self, info, cc, ext):
        header = os.path.join(self.build_temp, "gpulab_build_info.h")
        lines = [
            "/* Generated by setup.py: what this _core was built with. */",
            f"#define GPULAB_BUILT_WITH_CUDA {info['cuda']}",
            f"#define GPULAB_CUDA_ARCHS {c_string(info['archs'])}",
            f"#define GPULAB_NVCC {c_string(info['nvcc'])}",
            f"#define GPULAB_NVCC_VERSION {c_string(info['nvcc_version'])}",
            f"#define GPULAB_NVCC_FLAGS {c_string(info['nvcc_flags'])}",
            f"#define GPULAB_CC {c_string(cc)}",
            f"#define GPULAB_CFLAGS {c_string(' '.join(C_FLAGS))}",
        ]
        with open(header, "w") as f:
            f.write("\n".join(lines) + "\n")
        ext.include_dirs.append(self.build_temp)


def cuda_sources():
    """cuda/core/*.cu, then each lab's cuda/<lab>/*.cu."""
    return sorted(glob.glob(os.path.join(HERE, "cuda", "*", "*.cu")))


def cuda_headers(folder):
    return glob.glob(os.path.join(folder, "*.h")) + glob.glob(os.path.join(folder, "*.cuh"))


def newer_than(source, obj):
    """A .cu object is stale when its source, a header of its own folder or a header of
    cuda/core changed after it: a change to one lab rebuilds that lab alone."""
    folder = os.path.dirname(source)
    deps = [source] + cuda_headers(folder) + cuda_headers(os.path.join(HERE, "cuda", "core"))
    return max(os.path.getmtime(d) for d in deps) > os.path.getmtime(obj)


def c_sources():
    """The binding's machinery (csrc/core) and every lab's bindings and CPU variants."""
    return sorted(glob.glob("csrc/core/*.c") + glob.glob("csrc/labs/*/*.c"))


def write_kernel_sources():
    """gpulab/_kernel_sources.py: the text of every file of cuda/, for gl.inspect to show a
    variant's kernels where only the package is installed (a wheel has no cuda/ folder)."""
    paths = sorted(glob.glob("cuda/*/*.cu") + glob.glob("cuda/*/*.cuh") + glob.glob("cuda/*/*.h"))
    sources = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            sources[path] = f.read()
    text = ("# Generated by setup.py from cuda/ (gitignored): do not edit.\n"
            f"SOURCES = {sources!r}\n")
    target = os.path.join("gpulab", "_kernel_sources.py")
    if not os.path.exists(target) or open(target, encoding="utf-8").read() != text:
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)


write_kernel_sources()

core = Extension(
    "gpulab._core",
    sources=c_sources(),
    # Includes name their folder from the top of the tree: "csrc/core/devarray.h",
    # "cuda/reduce/reduce.h"; a file's own folder needs no prefix.
    include_dirs=[numpy.get_include(), "."],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_21_API_VERSION")],
    extra_compile_args=C_FLAGS,
    extra_link_args=["-fopenmp"],
    depends=glob.glob("csrc/**/*.h", recursive=True) + glob.glob("cuda/*/*.h") + [
        "csrc/labs/labs.def"],
)

setup(ext_modules=[core], cmdclass={"build_ext": BuildCore})
