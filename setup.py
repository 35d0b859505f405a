"""Builds gpulab._core from C (csrc/) and CUDA (cuda/).

Every C and CUDA file is compiled by this script, in parallel (GPULAB_BUILD_JOBS, default: one
job a core), with a progress line a file on stderr, into a persistent object cache keyed by the
contents of the file, of every project header it includes, and of the compiler and its flags
(GPULAB_BUILD_CACHE, default ~/.cache/gpulab/build): a second build of an unchanged tree, a pip
install from an sdist of the same tree included, compiles nothing.

nvcc comes from PATH or $CUDA_HOME/bin. Without it, or with GPULAB_NO_CUDA=1, the CPU part is
built alone, with a loud warning, and gl.build_info() says so. The SASS targets are the visible
GPUs' architectures, else 80 and 90; GPULAB_CUDA_ARCHS ("80;90") overrides them. PTX for the
newest one is always embedded.
"""

import concurrent.futures
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
FALLBACK_ARCHS = ["80", "90"]
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
# relocatable device code (-rdc=true) and a device-link step against cudadevrt.
RDC_SUFFIX = "_cdp.cu"
# Files named hgemm_wgmma*.cu use sm_90a's arch-specific instructions (wgmma, setmaxnreg): their
# sm_90 SASS is built for sm_90a instead, which runs on the same devices (compute capability 9.0
# alone). Their kernels are empty in every other target, where their launchers return
# cudaErrorNotSupported.
SM90A_PREFIX = "hgemm_wgmma"
SM90_GENCODE = "-gencode=arch=compute_90,code=sm_90"
SM90A_GENCODE = "-gencode=arch=compute_90a,code=sm_90a"
# Bumped when the way objects are made changes in a way their keys would not see.
CACHE_FORMAT = "1"
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def find_nvcc():
    if os.environ.get("GPULAB_NO_CUDA", "") not in ("", "0"):
        return None
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and os.path.isfile(os.path.join(home, "bin", "nvcc")):
        return os.path.join(home, "bin", "nvcc")
    return shutil.which("nvcc")


def visible_gpu_archs():
    """The compute capabilities of the GPUs nvidia-smi sees here, as "90"; [] without one."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    archs = {line.strip().replace(".", "") for line in out.stdout.splitlines()}
    return sorted(a for a in archs if a.isdigit())


def cuda_archs():
    """(archs, where they came from): GPULAB_CUDA_ARCHS, else this machine's GPUs, else 80;90."""
    raw = os.environ.get("GPULAB_CUDA_ARCHS")
    if raw is None:
        local = visible_gpu_archs()
        return (local, "this machine's GPU") if local else (FALLBACK_ARCHS, "default")
    archs = [a.strip() for a in raw.replace(",", ";").split(";") if a.strip()]
    if not archs or not all(a.rstrip("a").isdigit() for a in archs):
        sys.exit(f"GPULAB_CUDA_ARCHS must list compute capabilities like '80;90', got {raw!r}")
    return archs, "GPULAB_CUDA_ARCHS"


def gencode_flags(archs):
    flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    newest = max(archs, key=lambda a: int(a.rstrip("a")))
    flags.append(f"-gencode=arch=compute_{newest},code=compute_{newest}")
    return flags


def source_flags(source, flags):
    """nvcc's flags for one file: `flags`, with sm_90 made sm_90a for the SM90A_PREFIX files."""
    if not os.path.basename(source).startswith(SM90A_PREFIX):
        return flags
    return [SM90A_GENCODE if f == SM90_GENCODE else f for f in flags]


def tool_version(tool):
    out = subprocess.run([tool, "--version"], capture_output=True, text=True)
    return out.stdout.strip()


def nvcc_version(nvcc):
    for token in tool_version(nvcc).replace(",", " ").split():
        if token.startswith("V") and token[1:2].isdigit():
            return token[1:]
    return "unknown"


def c_string(value):
    return json.dumps(str(value))


def cache_dir():
    """The object cache: GPULAB_BUILD_CACHE, else $XDG_CACHE_HOME/gpulab/build; None where it
    cannot be written (then every file is compiled, into the build folder)."""
    path = os.environ.get("GPULAB_BUILD_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "gpulab", "build")
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, delete=True)
        probe.close()
        return path
    except OSError:
        return None


class Progress:
    """One line a finished file, `[k/N] path (s)`, on stderr, and on the terminal as well when
    stderr is not one: pip keeps a build's output to itself unless run with -v."""

    def __init__(self, total):
        self.total, self.done, self.start = total, 0, time.monotonic()
        self.streams = [sys.stderr]
        if not sys.stderr.isatty():
            try:
                self.streams.append(open("/dev/tty", "w"))
            except OSError:
                pass

    def say(self, text):
        for stream in self.streams:
            try:
                stream.write(text + "\n")
                stream.flush()
            except OSError:
                pass

    def step(self, rel, seconds):
        self.done += 1
        self.say(f"[{self.done}/{self.total}] {rel} ({seconds:.1f} s)")

    def close(self):
        for stream in self.streams[1:]:
            stream.close()


class Job:
    """One object to make: its source, the command, and the cache key of its inputs."""

    def __init__(self, source, command, key_parts, obj):
        self.source, self.command, self.obj = source, command, obj
        self.rel = os.path.relpath(source, HERE)
        self.key = hashlib.sha256("\0".join(key_parts).encode()).hexdigest()


def project_includes(path, search, seen=None):
    """Every project file that `path` includes with "..." (transitively), resolved against its
    own folder and `search`; headers not found there are the toolkit's or Python's, whose
    versions are in the key already."""
    seen = set() if seen is None else seen
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for name in INCLUDE.findall(text):
        for folder in [os.path.dirname(path), *search]:
            candidate = os.path.normpath(os.path.join(folder, name))
            if os.path.isfile(candidate):
                if candidate not in seen:
                    seen.add(candidate)
                    project_includes(candidate, search, seen)
                break
    return seen


def content_key(source, search, generated=None):
    """The bytes of a source and of the project headers it includes, with their paths relative
    to the tree (a generated header's by its name alone), so that a copy of the tree elsewhere
    (an unpacked sdist) hits the same key."""
    parts = []
    for path in [source, *sorted(project_includes(source, search))]:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        inside = path.startswith(HERE + os.sep) and not (
            generated and path.startswith(os.path.abspath(generated) + os.sep))
        rel = os.path.relpath(path, HERE) if inside else os.path.basename(path)
        parts.append(f"{rel}={digest}")
    return parts


class BuildCore(build_ext):
    """Compiles every C and .cu file itself (cached, in parallel) and links them, with static
    cudart, into _core."""

    def build_extension(self, ext):
        nvcc = find_nvcc()
        self.build_temp = os.path.abspath(self.build_temp)
        os.makedirs(self.build_temp, exist_ok=True)
        cc = " ".join(self.compiler.compiler_so) if hasattr(self.compiler, "compiler_so") else "cc"
        info = {"cuda": 0, "archs": "", "nvcc": "", "nvcc_version": "", "nvcc_flags": ""}
        jobs = []
        if nvcc:
            sources = require_kernel_sources(cuda_sources())
            archs, origin = cuda_archs()
            flags = NVCC_FLAGS + gencode_flags(archs)
            info.update(cuda=1, archs=";".join(archs), nvcc=nvcc,
                        nvcc_version=nvcc_version(nvcc), nvcc_flags=" ".join(flags))
            self.archs_line = f"sm_{', sm_'.join(archs)} ({origin})"
            cuda_home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
            for lib in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
                if os.path.isdir(os.path.join(cuda_home, lib)):
                    ext.library_dirs.append(os.path.join(cuda_home, lib))
            ext.libraries.extend(CUDA_LIBS)
            # The toolkit's header-only NVTX3, for the ranges of csrc/core/nvtx.c.
            if os.path.exists(os.path.join(cuda_home, "include", "nvtx3", "nvToolsExt.h")):
                ext.include_dirs.append(os.path.join(cuda_home, "include"))
                ext.define_macros.append(("GPULAB_HAVE_NVTX", "1"))
            jobs += self.cuda_jobs(nvcc, flags, sources)
        else:
            banner = "!" * 78
            why = ("GPULAB_NO_CUDA is set" if os.environ.get("GPULAB_NO_CUDA", "") not in ("", "0")
                   else "nvcc not found (PATH, CUDA_HOME)")
            print(f"\n{banner}\nWARNING: {why}. Building gpulab WITHOUT CUDA:\n"
                  f"only the CPU variants will run. Install the CUDA toolkit and rebuild for GPU.\n"
                  f"{banner}\n", file=sys.stderr)
        self.write_build_info(info, cc, ext)
        jobs += self.c_jobs(ext)
        objects = self.run_jobs(jobs, info)
        if nvcc:
            objects += self.device_link(nvcc, flags, jobs)
        self.link(ext, objects)

    def cuda_jobs(self, nvcc, flags, sources):
        version = tool_version(nvcc)
        jobs = []
        for source in sources:
            rdc = ["-rdc=true"] if source.endswith(RDC_SUFFIX) else []
            obj = os.path.join(self.build_temp, os.path.relpath(source, HERE) + ".o")
            own = source_flags(source, flags)
            command = [nvcc, *own, *rdc, "-I", HERE, "-c", source, "-o", obj]
            key = [CACHE_FORMAT, "cuda", version, *own, *rdc, *content_key(source, [HERE])]
            jobs.append(Job(source, command, key, obj))
        return jobs

    def c_jobs(self, ext):
        """The C files, compiled as build_ext would, with Python's and NumPy's headers named in
        the key by version rather than by path (pip's isolated build folders are temporary)."""
        include_dirs = list(ext.include_dirs) + list(self.include_dirs or [])
        macros = [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in ext.define_macros]
        base = list(self.compiler.compiler_so)
        version = tool_version(base[0])
        where = [os.path.join(HERE, d) if not os.path.isabs(d) else d for d in include_dirs]
        stable = [d for d in where if d.startswith(HERE) and d != HERE]
        jobs = []
        for source in c_sources():
            obj = os.path.join(self.build_temp, os.path.relpath(source, HERE) + ".o")
            command = [*base, *macros, *[f"-I{d}" for d in where], *C_FLAGS, "-c", source,
                       "-o", obj]
            key = [CACHE_FORMAT, "c", version, *base, *macros, *C_FLAGS,
                   f"python={sysconfig.get_config_var('SOABI')}",
                   f"numpy={numpy.__version__}", *content_key(source, [HERE, self.build_temp, *stable],
                                             generated=self.build_temp)]
            jobs.append(Job(source, command, key, obj))
        return jobs

    def run_jobs(self, jobs, info):
        """The objects of `jobs`, from the cache where it has them, else compiled (longest
        first, as its record of earlier builds says) and stored there."""
        cache = cache_dir()
        timings_path = os.path.join(cache, "timings.json") if cache else None
        timings = {}
        if timings_path and os.path.exists(timings_path):
            try:
                with open(timings_path) as f:
                    timings = json.load(f)
            except (OSError, ValueError):
                timings = {}
        todo = []
        for job in jobs:
            os.makedirs(os.path.dirname(job.obj), exist_ok=True)
            cached = os.path.join(cache, job.key + ".o") if cache else None
            if cached and os.path.exists(cached):
                shutil.copyfile(cached, job.obj)
                os.utime(cached)
            else:
                todo.append(job)
        todo.sort(key=lambda j: -timings.get(j.rel, 30.0 if j.rel.endswith(".cu") else 1.0))
        workers = int(os.environ.get("GPULAB_BUILD_JOBS") or os.cpu_count() or 1)
        progress = Progress(len(todo))
        cuda = sum(j.rel.endswith(".cu") for j in todo)
        where = f"cache {cache}" if cache else "no cache (not writable)"
        archs = f" for {self.archs_line}" if info["cuda"] else ""
        progress.say(f"gpulab: {len(jobs) - len(todo)} of {len(jobs)} objects from the {where}; "
                     f"compiling {len(todo)} ({cuda} CUDA{archs}, {len(todo) - cuda} C) with "
                     f"{workers} jobs")
        if cuda and info["cuda"] and "," in self.archs_line:
            progress.say("gpulab: one architecture builds in about half the time, e.g. "
                         "GPULAB_CUDA_ARCHS=90 for an H100/H200; GPULAB_NO_CUDA=1 builds the "
                         "CPU part alone")

        def compile_one(job):
            began = time.monotonic()
            fd, tmp = tempfile.mkstemp(suffix=".o", dir=os.path.dirname(job.obj))
            os.close(fd)
            command = job.command[:-1] + [tmp]
            done = subprocess.run(command, capture_output=True, text=True)
            return job, done, tmp, time.monotonic() - began

        failed = None
        try:
            with concurrent.futures.ThreadPoolExecutor(max(1, workers)) as pool:
                futures = [pool.submit(compile_one, job) for job in todo]
                for future in concurrent.futures.as_completed(futures):
                    job, done, tmp, seconds = future.result()
                    if done.stdout or done.stderr:
                        sys.stderr.write(done.stdout + done.stderr)
                    if done.returncode:
                        os.unlink(tmp)
                        failed = failed or (job, done)
                        for other in futures:
                            other.cancel()
                        continue
                    os.replace(tmp, job.obj)
                    if cache:
                        staged = os.path.join(cache, f".{job.key}.{os.getpid()}.tmp")
                        shutil.copyfile(job.obj, staged)
                        os.replace(staged, os.path.join(cache, job.key + ".o"))
                    timings[job.rel] = round(seconds, 1)
                    progress.step(job.rel, seconds)
        finally:
            progress.close()
            if timings_path:
                try:
                    with open(timings_path, "w") as f:
                        json.dump(timings, f, indent=0, sort_keys=True)
                except OSError:
                    pass
        if failed:
            job, done = failed
            sys.stderr.write(f"error compiling {job.rel}:\n{' '.join(job.command)}\n")
            raise subprocess.CalledProcessError(done.returncode, job.command)
        if cache:
            prune(cache)
        return [job.obj for job in jobs]

    def device_link(self, nvcc, flags, jobs):
        """nvcc -dlink over the relocatable (*_cdp.cu) objects alone, against cudadevrt: the
        object that resolves their device-side launches. [] when there are none."""
        rdc = [j for j in jobs if j.source.endswith(RDC_SUFFIX)]
        if not rdc:
            return []
        linked = os.path.join(self.build_temp, "cuda", "device_link.o")
        cmd = [nvcc, *flags, "-dlink", *[j.obj for j in rdc], "-lcudadevrt", "-o", linked]
        done = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(done.stdout + done.stderr)
        if done.returncode:
            raise subprocess.CalledProcessError(done.returncode, cmd)
        return [linked]

    def link(self, ext, objects):
        """_core from the objects, exporting PyInit__core alone: nothing of the CUDA runtime,
        CUB or the C core may interpose on, or be interposed by, other extensions."""
        export_map = os.path.join(self.build_temp, "gpulab_core.map")
        with open(export_map, "w") as f:
            f.write("{\n  global: PyInit__core;\n  local: *;\n};\n")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        self.compiler.link_shared_object(
            objects, target, libraries=self.get_libraries(ext), library_dirs=ext.library_dirs,
            runtime_library_dirs=ext.runtime_library_dirs,
            extra_postargs=["-fopenmp", "-Wl,--version-script=" + export_map],
            export_symbols=self.get_export_symbols(ext), build_temp=self.build_temp,
            target_lang="c")

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
        text = "\n".join(lines) + "\n"
        if not os.path.exists(header) or open(header).read() != text:
            with open(header, "w") as f:
                f.write(text)
        ext.include_dirs.append(self.build_temp)


def prune(cache, keep_bytes=2 << 30):
    """Drops the least recently used objects while the cache holds more than `keep_bytes`."""
    entries = []
    for name in os.listdir(cache):
        if name.endswith(".o"):
            path = os.path.join(cache, name)
            stat = os.stat(path)
            entries.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= keep_bytes:
            break
        os.unlink(path)
        total -= size


def cuda_sources(root=HERE):
    """cuda/core/*.cu, then each lab's cuda/<lab>/*.cu."""
    return sorted(glob.glob(os.path.join(root, "cuda", "*", "*.cu")))


def require_kernel_sources(sources):
    """`sources`, or SystemExit when there are none although nvcc is here: a wheel built from
    an incomplete tree must not come out CPU-only without a word."""
    if not sources:
        sys.exit("error: nvcc was found, but this tree has no CUDA source (cuda/*/*.cu): the "
                 "package it came from is incomplete. Set GPULAB_NO_CUDA=1 for a CPU-only "
                 "build.")
    return sources


def c_sources():
    """The binding's machinery (csrc/core) and every lab's bindings and CPU variants."""
    return sorted(glob.glob(os.path.join(HERE, "csrc", "core", "*.c")) +
                  glob.glob(os.path.join(HERE, "csrc", "labs", "*", "*.c")))


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


if __name__ == "__main__":  # run by pip's backend and by `python3 setup.py`; tests import it
    os.chdir(HERE)
    write_kernel_sources()

    core = Extension(
        "gpulab._core",
        # build_ext wants sources; BuildCore compiles them itself, with the same list.
        sources=[os.path.relpath(p, HERE) for p in c_sources()],
        # Includes name their folder from the top of the tree: "csrc/core/devarray.h",
        # "cuda/reduce/reduce.h"; a file's own folder needs no prefix.
        include_dirs=[numpy.get_include(), "."],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_21_API_VERSION")],
    )

    setup(ext_modules=[core], cmdclass={"build_ext": BuildCore})
