"""The variant registry is consistent, and build_info() tells the truth about the build."""

import collections
import os
import shutil

import pytest

import gpulab as gl
from gpulab._op import OPS

KNOWN_DTYPES = {"float32", "float64", "int32", "int64", "uint8", "int8", "uint16", "int16",
                "uint32", "float16", "bfloat16"}


def test_registry_is_not_empty():
    assert gl.variants()
    assert len(gl.variants()) == sum(len(gl.variants(op)) for op in OPS)


def test_every_op_is_registered_and_callable():
    ops = {v.op for v in gl.variants()}
    assert ops == set(OPS)
    for name, fn in OPS.items():
        assert callable(fn)
        assert fn.__gpulab_op__.name == name
        # gl.<name>, or gl.<lab>.<name> for a lab reached as a namespace (gl.concepts.sin)
        lab = gl.variants(name)[0].lab
        public = getattr(gl, fn.__name__, None)
        if public is not fn:
            public = getattr(getattr(gl, lab, None), fn.__name__, None)
        assert public is fn, f"{name} is public neither as gl.{name} nor as gl.{lab}.{name}"


def test_unknown_op():
    with pytest.raises(ValueError, match="nope"):
        gl.variants("nope")


@pytest.mark.parametrize("op", list(OPS))
def test_ids_and_names_unique(op):
    vs = gl.variants(op)
    ids = [v.id for v in vs]
    names = [v.name for v in vs]
    assert len(set(ids)) == len(ids), f"duplicate ids: {ids}"
    assert len(set(names)) == len(names), f"duplicate names: {names}"
    for v in vs:
        assert v.op == op
        assert v.name and v.name.isidentifier(), f"{v.name!r} is no plain name"


@pytest.mark.parametrize("op", list(OPS))
def test_id_ranges_by_backend(op):
    for v in gl.variants(op):
        assert v.backend in ("cuda", "cpu")
        if v.backend == "cuda":
            assert 0 <= v.id < 100, v
        else:
            assert v.id >= 100, v


@pytest.mark.parametrize("op", list(OPS))
def test_exactly_one_best_per_backend(op):
    best = collections.Counter(v.backend for v in gl.variants(op) if v.best)
    for backend in {v.backend for v in gl.variants(op)}:
        assert best[backend] == 1, f"{op}: {best[backend]} best {backend} variants"


@pytest.mark.parametrize("op", list(OPS))
def test_best_for_dtypes_covers_only_what_best_does_not(op):
    """A best_for_dtypes variant (variant=None's pick for the dtypes its backend's best does not
    take) takes none of best's dtypes, and no two of them on a backend share a dtype."""
    for backend in {v.backend for v in gl.variants(op)}:
        best = gl.registry.best(op, backend)
        seen = set()
        for v in gl.variants(op):
            if v.backend == backend and v.best_for_dtypes:
                assert not v.best and not set(v.dtypes) & set(best.dtypes), v
                assert not set(v.dtypes) & seen, v
                seen |= set(v.dtypes)
                for dtype in v.dtypes:
                    assert gl.registry.best(op, backend, dtype) == v


@pytest.mark.parametrize("op", list(OPS))
def test_every_op_runs_without_a_gpu(op):
    """NoDeviceError lists the CPU variants, and variant=None falls back on one: both need a
    CPU variant in every lab."""
    assert any(v.backend == "cpu" for v in gl.variants(op))


@pytest.mark.parametrize("v", gl.variants(), ids=lambda v: f"{v.op}-{v.id}-{v.name}")
def test_record_fields(v):
    assert v.summary.strip() and v.seed.strip()
    assert v.dtypes and set(v.dtypes) <= KNOWN_DTYPES
    assert isinstance(v.best, bool) and isinstance(v.deterministic, bool)
    assert v.op in str(v) and v.name in str(v)
    for name, t in v.tunables.items():
        assert t["values"], f"{name}: no values"
        # default 0: the variant chooses per call (registry.h), never a listed value
        assert t["default"] in t["values"] or (t["default"] == 0 and 0 not in t["values"]), \
            f"{name}: default {t['default']} not allowed"
        assert len(set(t["values"])) == len(t["values"])
    if "block" in v.tunables:
        assert v.backend == "cuda"
        for b in v.tunables["block"]["values"]:
            assert 32 <= b <= 1024 and b % 32 == 0, f"block {b} is no CUDA block size"


def test_variants_is_a_copy():
    """Callers may edit what they get back without changing the registry."""
    first = gl.variants("saxpy")
    first.clear()
    assert gl.variants("saxpy")


# ---------------------------------------------------------------- build_info


def _nvcc_present():
    home = os.environ.get("CUDA_HOME")
    return bool(shutil.which("nvcc")) or bool(home and os.path.isfile(
        os.path.join(home, "bin", "nvcc")))


def test_build_info_keys():
    info = gl.build_info()
    for key in ("cuda", "archs", "nvcc", "nvcc_version", "nvcc_flags", "cc", "cflags", "openmp",
                "openmp_threads"):
        assert key in info
    assert isinstance(info["cuda"], bool)
    assert info["openmp"] is True, "the build uses -fopenmp"
    assert info["openmp_threads"] >= 1


def test_build_info_cuda_is_honest():
    info = gl.build_info()
    if _nvcc_present():
        assert info["cuda"] is True, ("nvcc is on this machine but gpulab._core was built "
                                      "without CUDA; rebuild")
    if info["cuda"]:
        assert info["archs"] and info["nvcc"] and info["nvcc_version"]
        assert all(a.rstrip("a").isdigit() for a in info["archs"].split(";"))
    else:
        assert info["archs"] == "" and info["nvcc"] == ""
        assert not gl.cuda_available()
        assert gl._core._gpu_status().reason == "not built"


def test_cuda_available_agrees_with_gpu_status():
    status = gl._core._gpu_status()
    assert isinstance(gl.cuda_available(), bool)
    if gl.cuda_available():
        assert status is None
    else:
        assert isinstance(status, gl.NoDeviceError)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _lab_docs():
    """tools/lab_docs.py, the generator of the labs' docs pages, as a module."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("lab_docs",
                                                  os.path.join(ROOT, "tools", "lab_docs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lab_docs_are_generated_from_the_registry_and_the_results():
    """Each docs/labs/<lab>.md's ladder block is the registry rendered and its figures block the
    lab's committed results JSON; regenerate them with python3 tools/lab_docs.py."""
    problems = _lab_docs().check()
    assert not problems, "; ".join(problems) + ": run python3 tools/lab_docs.py"


def test_lab_docs_check_sees_a_hand_edit():
    """The check compares the blocks' text: a hand edit inside a block makes the page stale, one
    in the prose around the blocks does not, and a missing marker is named, not guessed."""
    docs = _lab_docs()
    path = os.path.join(docs.PAGES, "saxpy.md")
    with open(path) as f:
        text = f.read()
    bodies = {"ladder": docs.ladder("saxpy"), "figures": docs.figures("saxpy")[0]}
    blocks = docs.blocks_of(path, text, bodies)
    assert docs.stale(path, text + "\nMore prose.\n", bodies) == docs.stale(path, text, bodies)
    for name in bodies:
        edited = text.replace(blocks[name], blocks[name].replace("| ", "| 1", 1))
        assert name in docs.stale(path, edited, bodies)
    with pytest.raises(docs.MarkerError, match="generated:figures"):
        docs.stale(path, text.replace("<!-- /generated:figures -->", ""), bodies)


def test_lab_pages_are_written():
    """No lab page still holds the placeholder the generator leaves where prose belongs."""
    docs = _lab_docs()
    unwritten = []
    for lab in docs.labs():
        path = os.path.join(docs.PAGES, f"{lab}.md")
        if os.path.exists(path) and docs.PLACEHOLDER in open(path).read():
            unwritten.append(f"docs/labs/{lab}.md")
    assert not unwritten, f"prose still to be written in {', '.join(unwritten)}"


def test_kernel_lists_read_single_and_grouped_parentheses():
    from gpulab.registry import _kernel_lists
    got = _kernel_lists("a (b) c (d e f) g")
    assert got["kernels"] == ("a", "b", "c", "d", "e", "f", "g")
    assert got["sometimes"] == ("b", "d", "e", "f")

