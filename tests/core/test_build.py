"""setup.py's build rules that a user relies on: which files a change recompiles (the object
cache's keys), the SASS targets, the CPU-only switch, and the refusal to build a silently
CPU-only package from a tree that lost its kernels. Needs no compiler and no GPU."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def build():
    if not os.path.exists(os.path.join(ROOT, "setup.py")):
        pytest.skip("runs in a source tree (setup.py is not installed with the package)")
    spec = importlib.util.spec_from_file_location("gpulab_setup", os.path.join(ROOT, "setup.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the build, runs nothing: setup() is under __main__
    return module


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_a_source_depends_on_the_headers_it_includes_and_no_others(build, tmp_path):
    kernel = write(tmp_path / "cuda" / "lab" / "k.cu", '#include "lab.h"\n#include <vector>\n')
    write(tmp_path / "cuda" / "lab" / "lab.h", '#include "cuda/core/launch.cuh"\n')
    write(tmp_path / "cuda" / "core" / "launch.cuh", "// launch\n")
    other = write(tmp_path / "cuda" / "core" / "other.cuh", "// nobody includes this\n")
    found = build.project_includes(kernel, [str(tmp_path)])
    assert {os.path.relpath(p, tmp_path) for p in found} == {
        os.path.join("cuda", "lab", "lab.h"), os.path.join("cuda", "core", "launch.cuh")}

    before = build.content_key(kernel, [str(tmp_path)])
    write(tmp_path / "cuda" / "core" / "other.cuh", "// changed, still included by nobody\n")
    assert build.content_key(kernel, [str(tmp_path)]) == before
    write(tmp_path / "cuda" / "core" / "launch.cuh", "// launch, changed\n")
    assert build.content_key(kernel, [str(tmp_path)]) != before
    assert other


def test_include_cycles_end(build, tmp_path):
    a = write(tmp_path / "a.h", '#include "b.h"\n')
    write(tmp_path / "b.h", '#include "a.h"\n')
    assert {os.path.basename(p) for p in build.project_includes(a, [])} == {"a.h", "b.h"}


def test_the_tree_s_own_c_files_do_not_depend_on_kernel_sources(build):
    """A .cu change never recompiles the binding: no C file includes a .cu or .cuh file."""
    for source in build.c_sources():
        deps = build.project_includes(source, [ROOT])
        assert not [d for d in deps if d.endswith((".cu", ".cuh"))], source


def test_archs_from_the_environment(build, monkeypatch):
    monkeypatch.setenv("GPULAB_CUDA_ARCHS", "80, 90a")
    assert build.cuda_archs() == (["80", "90a"], "GPULAB_CUDA_ARCHS")
    assert build.gencode_flags(["80", "90"])[-1] == "-gencode=arch=compute_90,code=compute_90"
    monkeypatch.setenv("GPULAB_CUDA_ARCHS", "sm_90")
    with pytest.raises(SystemExit, match="GPULAB_CUDA_ARCHS"):
        build.cuda_archs()


def test_default_archs_are_the_visible_gpus_else_80_and_90(build, monkeypatch):
    monkeypatch.delenv("GPULAB_CUDA_ARCHS", raising=False)
    monkeypatch.setattr(build, "visible_gpu_archs", lambda: [])
    assert build.cuda_archs() == (["80", "90"], "default")
    monkeypatch.setattr(build, "visible_gpu_archs", lambda: ["90"])
    assert build.cuda_archs() == (["90"], "this machine's GPU")


def test_no_cuda_switch(build, monkeypatch):
    monkeypatch.setenv("GPULAB_NO_CUDA", "1")
    assert build.find_nvcc() is None
    monkeypatch.setenv("GPULAB_NO_CUDA", "0")
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    assert build.find_nvcc() is None


def test_a_tree_without_kernels_fails_loudly_when_nvcc_is_there(build, tmp_path):
    assert build.cuda_sources(str(tmp_path)) == []
    with pytest.raises(SystemExit, match="no CUDA source"):
        build.require_kernel_sources(build.cuda_sources(str(tmp_path)))
    assert build.require_kernel_sources(build.cuda_sources()) == build.cuda_sources()


def test_the_sdist_manifest_carries_every_build_input(build):
    """MANIFEST.in grafts the folders that hold every C, CUDA and header file the build reads."""
    with open(os.path.join(ROOT, "MANIFEST.in")) as f:
        grafted = {line.split()[1] for line in f if line.startswith("graft ")}
    inputs = build.cuda_sources() + build.c_sources()
    for source in inputs:
        inputs += list(build.project_includes(source, [ROOT]))
    tops = {os.path.relpath(p, ROOT).split(os.sep)[0] for p in inputs}
    assert tops <= grafted, tops - grafted
