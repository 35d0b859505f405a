"""The concepts lab seen by the tools: the compiled code keeps what each demo is about (real
branches, no __syncwarp or volatile in the lockstep variants, MUFU.SIN only in __sinf, one atomic
per thread where it says so), and compute-sanitizer's racecheck reports the deliberate
shared-memory races and nothing else. The PTX test needs nvcc (CI has it), the SASS tests
cuobjdump and nvdisasm too, the sanitizer tests a GPU and compute-sanitizer; each skips with the
reason when they are missing."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tools", "sanitize", "concepts.py")
SHIFTS = ("0.25", "-0.5", "0.75", "-1")  # the paths' immediates (cuda/concepts/concepts.h)


def nvcc():
    home = os.environ.get("CUDA_HOME")
    found = os.path.join(home, "bin", "nvcc") if home else None
    return found if found and os.path.isfile(found) else shutil.which("nvcc")


@pytest.fixture(scope="module")
def sass(tmp_path_factory):
    """{kernel name: [instruction lines]} of the lab's kernels, compiled for sm_90 (the H100's)
    with setup.py's optimization, and disassembled."""
    compiler, dump = nvcc(), shutil.which("cuobjdump")
    if not compiler or not dump:
        pytest.skip("needs nvcc and cuobjdump on PATH (the CUDA toolkit)")
    out = tmp_path_factory.mktemp("sass")
    kernels = {}
    for name in ("divergence", "warp_reduce", "counter", "sin", "lookup"):
        cubin = out / f"{name}.cubin"
        subprocess.run([compiler, "-O3", "-std=c++17", "-I", ROOT, "-arch=sm_90", "-cubin",
                        "-o", str(cubin), os.path.join(ROOT, "cuda", "concepts", f"{name}.cu")],
                       check=True, capture_output=True)
        listing = subprocess.run([dump, "-sass", str(cubin)], capture_output=True, text=True)
        if listing.returncode:
            pytest.skip(f"cuobjdump -sass failed (nvdisasm missing?): {listing.stderr.strip()}")
        current = None
        for line in listing.stdout.splitlines():
            m = re.search(r"Function : (\S+)", line)
            if m:
                current = kernels.setdefault(m.group(1), [])
            elif current is not None and re.search(r"/\*[0-9a-f]{4}\*/", line):
                current.append(line.split(";")[0])
    return kernels


def kernel(sass, name, template=""):
    """The kernel called name (its mangled name holds len(name) then name), with the template
    arguments as mangled (ILi0E for <0>)."""
    pattern = re.compile(rf"{len(name)}{re.escape(name)}{re.escape(template)}E")
    found = [code for mangled, code in sass.items() if pattern.search(mangled)]
    assert len(found) == 1, f"{name}{template}: {len(found)} kernels match"
    return found[0]


def ops(code, opcode):
    return [line for line in code if re.search(rf"\b{re.escape(opcode)}\b", line)]


def backward_branches(code):
    """Branches to an earlier address: the loops (not the BRA-to-itself that ends the code)."""
    count = 0
    for line in code:
        m = re.search(r"/\*([0-9a-f]{4})\*/.*\bBRA\b.*0x([0-9a-f]+)", line)
        if m and int(m.group(2), 16) < int(m.group(1), 16):
            count += 1
    return count


def test_divergence_keeps_one_loop_per_path_behind_branches(sass):
    branch = kernel(sass, "divergence_branch")
    for shift in SHIFTS:
        assert any(re.search(rf",\s*{re.escape(shift)}\s*$", line)
                   for line in ops(branch, "FFMA")), f"no FFMA loop with shift {shift}"
    assert backward_branches(branch) >= 4, "the four paths' loops were merged or unrolled away"
    free = kernel(sass, "divergence_branch_free")
    assert not any(re.search(r",\s*(0\.25|-0\.5|0\.75|-1)\s*$", line)
                   for line in ops(free, "FFMA")), "branch_free has a loop per path"
    assert backward_branches(free) <= 2  # the unrolled loop and its remainder


@pytest.fixture(scope="module")
def warp_reduce_ptx(tmp_path_factory):
    """{kernel name: PTX} of cuda/concepts/warp_reduce.cu. PTX, not SASS: a __syncwarp() in a warp
    that ptxas knows to be converged becomes a NOP in the SASS, but stays bar.warp.sync here."""
    compiler = nvcc()
    if not compiler:
        pytest.skip("needs nvcc")
    out = tmp_path_factory.mktemp("ptx") / "warp_reduce.ptx"
    subprocess.run([compiler, "-O3", "-std=c++17", "-I", ROOT, "-arch=sm_90", "-ptx", "-o",
                    str(out), os.path.join(ROOT, "cuda", "concepts", "warp_reduce.cu")],
                   check=True, capture_output=True)
    entries = re.split(r"^\.entry ", out.read_text(), flags=re.M)[1:]
    return {entry.split("(")[0]: entry for entry in entries}


def trials_kernel(ptx, variant):
    found = [code for name, code in ptx.items() if f"block_sums_trialsILi{variant}E" in name]
    assert len(found) == 1
    return found[0]


def test_lockstep_variants_lack_what_their_summaries_say(warp_reduce_ptx):
    """lockstep_plain: neither __syncwarp nor volatile (nothing fixes it by accident);
    lockstep_volatile: volatile shared accesses, no __syncwarp; the correct ones have theirs."""
    plain, volatile = (trials_kernel(warp_reduce_ptx, v) for v in (0, 1))
    assert "bar.warp.sync" not in plain and ".volatile" not in plain
    assert "bar.warp.sync" not in volatile and "ld.volatile.shared" in volatile
    assert trials_kernel(warp_reduce_ptx, 2).count("bar.warp.sync") >= 10
    assert "shfl.sync.down" in trials_kernel(warp_reduce_ptx, 3)
    assert all("membar" not in trials_kernel(warp_reduce_ptx, v) for v in (0, 1))


def test_sin_intrinsic_is_the_special_function_unit_and_sinf_is_not(sass):
    assert ops(kernel(sass, "sin_intrinsic"), "MUFU.SIN")
    assert not ops(kernel(sass, "sin_accurate"), "MUFU.SIN"), "sinf became __sinf (fast math?)"


def test_counter_atomics_are_what_the_summaries_say(sass):
    racy = kernel(sass, "count_racy")
    assert not ops(racy, "REDG.E.ADD.64.STRONG.GPU") and not any("ATOM" in line for line in racy)
    per_thread = kernel(sass, "count_atomic_per_thread")
    assert any("REDG" in line or "ATOMG" in line for line in per_thread)
    assert not any("VOTE" in line for line in per_thread), "ptxas aggregated it after all"
    assert any("VOTEU" in line for line in kernel(sass, "count_atomic")), \
        "ptxas no longer aggregates atomicAdd(counter, 1): update variant 1's summary"


def test_constant_lookup_indexes_the_constant_bank(sass):
    assert any(re.search(r"LDC\S* R\d+, c\[0x3\]\[R\d+", line)
               for line in kernel(sass, "lookup_constant"))


# ---------------------------------------------------------------- compute-sanitizer


def sanitize(tool, *driver_args):
    """compute-sanitizer --tool tool on the lab's driver; returns (exit status, output)."""
    command = ["compute-sanitizer", "--tool", tool, sys.executable, DRIVER, *driver_args]
    done = subprocess.run(command, cwd=ROOT, env=child_env(), capture_output=True, text=True,
                          timeout=1200)
    return done.returncode, done.stdout + done.stderr


def hazards(output):
    found = re.findall(r"RACECHECK SUMMARY: (\d+) hazard", output)
    return int(found[-1]) if found else 0


def errors(output):
    found = re.findall(r"ERROR SUMMARY: (\d+) error", output)
    return int(found[-1]) if found else 0


@pytest.mark.gpu
@pytest.mark.parametrize("mode", [[], ["--expect-race"]], ids=["clean", "expect-race"])
def test_driver_runs_and_checks_out_without_a_sanitizer(mode):
    """The driver itself, before any tool slows it down: every result it checks is right."""
    done = subprocess.run([sys.executable, DRIVER, *mode], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0 and "CUDA calls checked" in done.stdout, \
        (done.stdout + done.stderr)[-3000:]


needs_sanitizer = pytest.mark.skipif(not shutil.which("compute-sanitizer"),
                                     reason="needs compute-sanitizer on PATH")


@pytest.mark.gpu
@needs_sanitizer
@pytest.mark.parametrize("variant", [0, 1], ids=["lockstep_plain", "lockstep_volatile"])
def test_racecheck_reports_the_lockstep_warps(variant):
    """The last warp without __syncwarp() is a race whether or not its sums come out wrong on
    this GPU: racecheck must say so, in block_sums_trials."""
    status, output = sanitize("racecheck", "--expect-race", "--inputs", "device", "--only",
                              f"warp_reduce:{variant}")
    assert "--expect-race" in output and "CUDA calls checked" in output, output[-3000:]
    assert hazards(output) > 0, f"racecheck saw no hazard:\n{output[-3000:]}"
    assert "block_sums_trials" in output, output[-3000:]


@pytest.mark.gpu
@needs_sanitizer
def test_racecheck_is_silent_on_the_correct_warps():
    status, output = sanitize("racecheck", "--inputs", "device", "--only",
                              "warp_reduce:2,warp_reduce:3")
    assert status == 0 and "CUDA calls checked" in output, output[-3000:]
    assert hazards(output) == 0, output[-3000:]


@pytest.mark.gpu
@needs_sanitizer
def test_the_racy_warps_are_memory_safe():
    """Racy, but in bounds and initialized: memcheck and initcheck find nothing."""
    for tool in ("memcheck", "initcheck"):
        status, output = sanitize(tool, "--expect-race", "--inputs", "device")
        assert status == 0 and "CUDA calls checked" in output, f"{tool}:\n{output[-3000:]}"
        assert errors(output) == 0, f"{tool}:\n{output[-3000:]}"
