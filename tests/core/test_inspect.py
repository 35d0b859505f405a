"""gl.inspect: the source of every CUDA variant's kernels from the variant table (CPU), and on
the GPU the kernels that really launch, their resources, occupancy and SASS."""

import shutil

import pytest

import gpulab as gl
from gpulab import inspection
from gpulab.kernel_source import definition, helpers

CUDA_VARIANTS = [pytest.param(v, id=f"{v.op}-{v.id}-{v.name}")
                 for v in gl.variants() if v.backend == "cuda"]


@pytest.mark.parametrize("v", CUDA_VARIANTS)
def test_every_cuda_variant_names_kernels_whose_source_is_found(v):
    assert v.kernels, f"{v.op}[{v.id}] names no kernels in its variant table"
    for name in v.kernels:
        src = definition(name, v.lab)
        assert src is not None, f"{name} of {v.op}[{v.id}] not found in cuda/{v.lab}/"
        assert src.path.startswith((f"cuda/{v.lab}/", "cuda/core/"))
        assert f"{name}(" in src.text.replace(" (", "(") or f"{name}<" in src.text
        assert src.text.rstrip().endswith("}")
        # a library variant shows our host function that makes the call (and the kernels of
        # the binding's own it names as some calls'); others, kernels
        kernel = v.library is None or name in v.sometimes
        assert src.is_kernel == kernel, (name, src.is_kernel, v.library)


def test_source_starts_at_the_comment_that_explains_it():
    src = definition("saxpy_vec16", "saxpy")
    first = src.text.splitlines()[0]
    assert first.startswith("//") and "16-byte aligned" in first
    assert "constexpr int vectors_per_thread" not in src.text  # the statement before it
    assert src.line == 1 + gl.kernel_source.sources()[src.path][:gl.kernel_source.sources()[
        src.path].index(first)].count("\n")


def test_helpers_follow_device_calls():
    names = [h.name for h in helpers(definition("complete_unroll", "reduce"), "reduce")]
    assert "unrolled_tree" in names and "last_warp" in names  # last_warp: two levels down
    assert all(definition(n, "reduce").is_device for n in names)


def test_calls_and_declarations_are_not_taken_for_definitions():
    # launch_single_pass names single_pass in `kernel = single_pass<...>`: not a definition
    src = definition("single_pass", "reduce")
    assert "__global__" in src.text.split("single_pass(")[0]
    assert definition("no_such_kernel_anywhere", "reduce") is None


@pytest.mark.parametrize("signature, name", [
    ("void (anonymous namespace)::cascaded<256u, float, double, (anonymous namespace)::Sum>"
     "(float const*, unsigned long, double*)", "cascaded"),
    ("(anonymous namespace)::nbody_naive(float4 const*, float4*, int, float, float)",
     "nbody_naive"),
    ("void (anonymous namespace)::nbody_multibody<8, 4>(float4 const*, float4*, int)",
     "nbody_multibody"),
    ("saxpy_vec16", "saxpy_vec16"),
])
def test_base_name_of_a_demangled_signature(signature, name):
    assert inspection.base_name(signature) == name


H100 = {"max_blocks_per_sm": 32, "max_threads_per_sm": 2048, "registers_per_sm": 65536,
        "shared_per_sm": 233472, "reserved_shared_per_block": 1024}


def test_function_sass_keeps_only_the_functions():
    listing = ("Fatbin elf code:\n================\narch = sm_90\n\n\tcode for sm_90\n"
               "\t\tFunction : _Z3fooPf\n\t.headerflags @\"EF_CUDA_SM90\"\n"
               "        /*0000*/  MOV R1, c[0x0][0x28] ;\n"
               "\t\t..........\n\nFatbin ptx code:\n================\narch = sm_90\n")
    sass = inspection.function_sass(listing)
    assert sass.startswith("Function : _Z3fooPf") and "MOV R1" in sass
    assert "Fatbin" not in sass and "arch =" not in sass


def test_occupancy_limits_arithmetic():
    attrs = {"registers": 128, "static_shared_bytes": 0}
    # 128 registers x 32 lanes = 4096 per warp; 4 warps fit in each quarter's 16384 registers,
    # 16 in all; a 256-thread block has 8
    by = inspection.occupancy_limits(attrs, 256, 0, H100)
    assert by == {"threads": 8, "blocks per SM": 32, "registers": 2, "shared memory": 228}
    assert inspection.limiting(by, 2) == "registers"
    # 39 registers round up to 1280 per warp: 12 warps per quarter (not 51 // 1 over the whole
    # SM), so 24 two-warp blocks, as the occupancy API says for nbody_multibody<2, 8> on the H100
    by = inspection.occupancy_limits({"registers": 39, "static_shared_bytes": 0}, 64, 0, H100)
    assert by["registers"] == 24 and inspection.limiting(by, 24) == "registers"
    # 48 KiB of shared memory per block: 233472 // (49152 + 1024) = 4
    by = inspection.occupancy_limits({"registers": 16, "static_shared_bytes": 0}, 64, 49152, H100)
    assert by["shared memory"] == 4 and inspection.limiting(by, 4) == "shared memory"
    # 32-thread blocks of a light kernel: the blocks-per-SM limit
    by = inspection.occupancy_limits({"registers": 16, "static_shared_bytes": 0}, 32, 0, H100)
    assert inspection.limiting(by, 32) == "blocks per SM"
    assert inspection.limiting(by, 5).startswith("other")
    assert inspection.limiting(by, 0) == "cannot run at this block size"


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="op: unknown op"):
        gl.inspect("no_such_op")
    with pytest.raises(ValueError, match="runs on the CPU"):
        gl.inspect("saxpy", 100)
    with pytest.raises(ValueError, match="no variant"):
        gl.inspect("saxpy", 77)
    with pytest.raises(ValueError, match="unroll: saxpy"):
        gl.inspect("saxpy", 0, unroll=2)


def test_without_a_gpu_it_shows_the_source_and_says_why():
    if gl.cuda_available():
        pytest.skip("checks the behaviour without a usable GPU")
    r = gl.inspect("reduce", 5)
    assert r.gpu_note and "need a GPU" in r.gpu_note
    assert r.launched is None and not r.kernels[0].instances
    text, page = str(r), r._repr_html_()
    assert "complete_unroll" in text and "__syncthreads" in text
    assert "<h4>" in page and "complete_unroll" in page


@pytest.mark.gpu
@pytest.mark.parametrize("v", CUDA_VARIANTS)
def test_the_kernels_that_launch_are_the_ones_the_table_names(v):
    r = gl.inspect(v.op, v.id, sass=False)
    assert r.gpu_note is None and r.launches_counted > 0 or v.library
    if v.library:
        # the library's kernels are launched by it, not through gpulab's launch: none noted but
        # the binding's own that the table names as some calls' (compaction's sizing count)
        assert r.launched <= set(v.sometimes), (v.op, v.id, sorted(r.launched))
        return
    # Exactly the kernels the table names, but for those it marks as launched by some calls
    # only (in parentheses: a pass for another dtype, or range=None), which may be missing.
    always = set(v.kernels) - set(v.sometimes)
    assert always <= r.launched <= set(v.kernels), (
        f"{v.op}[{v.id}] launched {sorted(r.launched)}, its table names {list(v.kernels)} "
        f"({list(v.sometimes)} only sometimes)")
    major, minor = gl.device_info()["compute_capability"]
    for k in r.kernels:
        if k.name in v.sometimes and k.name not in r.launched:
            continue  # not launched by inspect's call, so nothing to measure
        assert k.instances, f"{k.name}: no instance ran"
        for inst in k.instances:
            a = inst.attributes
            assert 0 < a["registers"] <= 255 and a["max_threads_per_block"] >= 32
            assert a["binary_version"] == 10 * major + minor  # SASS for this GPU, not PTX JIT
            launched = [row for row in inst.occupancy if row.launched]
            assert launched, f"{inst.signature}: no occupancy row for a launched block"
            for row in launched:
                assert row.blocks_per_sm >= 1 and 0 < row.occupancy <= 1
                assert not row.limited_by.startswith("other"), (inst.signature, row)


@pytest.mark.gpu
def test_resources_match_what_the_kernels_declare():
    r = gl.inspect("reduce", 5, block=256, sass=False)
    [inst] = r.kernels[0].instances[:1]
    # complete_unroll<256> keeps a static __shared__ Acc s[256]; float sums accumulate in double
    assert inst.attributes["static_shared_bytes"] >= 256 * 4
    assert {launch["shared_bytes"] for launch in inst.launches} == {0}
    r = gl.inspect("reduce", 2, block=128, sass=False)
    shared = {launch["shared_bytes"] for i in r.kernels[0].instances for launch in i.launches}
    assert shared and all(s % 128 == 0 and s > 0 for s in shared)  # block * sizeof(Acc), dynamic


@pytest.mark.gpu
def test_sass_of_a_kernel():
    if inspection._cuobjdump() is None:
        pytest.skip("cuobjdump is not on PATH")
    r = gl.inspect("saxpy", 2, block=256)
    sass = r.kernels[0].instances[0].sass
    assert "saxpy_vec16" in sass and "FFMA" in sass and "LDG" in sass
    assert "Fatbin" not in sass  # only the function's own code
    assert "SASS" in r._repr_html_()


@pytest.mark.gpu
def test_noting_is_off_after_inspect():
    import numpy as np
    gl.inspect("saxpy", 0, block=64, sass=False)
    gl._core._launch_notes_begin()
    counted, _ = gl._core._launch_notes_end()
    assert counted == 0
    x = gl.to_device(np.ones(1000, np.float32))
    gl.saxpy(1.0, x, x, variant=0)
    gl.synchronize()
    gl._core._launch_notes_begin()
    counted, notes = gl._core._launch_notes_end()
    assert counted == 0, "launches after _launch_notes_end() were still noted"
    with pytest.raises(ValueError, match="not a kernel noted"):
        gl._core._kernel_attributes(12345)
