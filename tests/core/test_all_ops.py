"""What holds for every op and every variant of the registry, read from the registry itself:
a new op or variant is covered here without editing a test (a new op needs only its reference in
tests/references/<lab>.py, which test_every_op_has_a_reference asks for)."""

import numpy as np
import pytest

import gpulab as gl
from conftest import CHECKS, GPU, all_variant_params, rng_for, to_device_args
from references import check_variant
from gpulab._op import OPS, example_for

EXAMPLE_SIZES = [1, 33, 1000, 100_003]


def example(op, n, seed=0, v=None):
    """The op's example, in a dtype variant v takes (gpulab._op.example_for)."""
    return example_for(OPS[op].__gpulab_op__, v, n, rng_for(op, n, seed))


def array_of(got):
    """The array an op returns; for an op that returns a result object around it, that array
    (cg's CgResult.x, jacobi's JacobiResult.u)."""
    if type(got).__name__.endswith("Result"):
        return getattr(got, "x", None) if hasattr(got, "x") else got.u
    return got


def bits_of(got):
    """The bytes of an op's result on the host: its array's, and a result object's residual
    history too (jacobi's is reduced on the device and must repeat as exactly as u); of a tuple
    of arrays (sort_pairs' keys and values), all of theirs."""
    if isinstance(got, tuple):
        return b"".join(bits_of(part) for part in got)
    array = array_of(got)
    array = array.get() if isinstance(array, gl.DeviceArray) else np.asarray(array)
    residuals = getattr(got, "residuals", None)
    return array.tobytes() + (np.asarray(residuals).tobytes() if residuals is not None else b"")


def test_every_op_has_a_reference():
    assert set(CHECKS) == set(OPS), "add a NumPy reference for each new op to its lab's CHECKS in tests/references/"


@pytest.mark.parametrize("v", all_variant_params())
def test_matches_reference(v):
    for n in EXAMPLE_SIZES:
        args = example(v.op, n, v=v)
        check_variant(CHECKS, v, OPS[v.op](*args, variant=v.id), *args)


@pytest.mark.parametrize("v", all_variant_params(backend="cuda"))
def test_matches_reference_on_device(v):
    for n in EXAMPLE_SIZES:
        args = example(v.op, n, v=v)
        got = OPS[v.op](*to_device_args(args), variant=v.id)
        if v.op == "sort_pairs":  # keys and values (cg's result is a tuple too: not this)
            assert all(isinstance(part, gl.DeviceArray) for part in got)
            check_variant(CHECKS, v, tuple(part.get() for part in got), *args)
            continue
        assert isinstance(array_of(got), gl.DeviceArray)
        check_variant(CHECKS, v, got.get() if hasattr(got, "get") else array_of(got).get(), *args)


@pytest.mark.parametrize("v", [p for p in all_variant_params() if p.values[0].deterministic])
def test_deterministic_variants_are_bit_identical(v):
    args = example(v.op, 1_000_003, v=v)
    if v.backend == "cuda":
        dargs = to_device_args(args)
        runs = [bits_of(OPS[v.op](*dargs, variant=v.id)) for _ in range(2)]
        runs.append(bits_of(OPS[v.op](*args, variant=v.id)))  # NumPy in: the same kernel
    else:
        runs = [bits_of(OPS[v.op](*args, variant=v.id)) for _ in range(2)]
    for other in runs[1:]:
        assert runs[0] == other


def _cpu_best(op):
    return next(v for v in gl.variants(op) if v.backend == "cpu" and v.best)


@pytest.mark.parametrize("op", list(OPS))
def test_default_variant(op):
    """variant=None runs the best variant where the op runs: without a GPU, the CPU one."""
    args = example(op, 1000)
    got = OPS[op](*args)
    CHECKS[op](got, *args)
    if not GPU:
        assert bits_of(got) == bits_of(OPS[op](*args, variant=_cpu_best(op).id))
        r = gl.bench(OPS[op], *args, repeat=1, warmup=0)
        assert (r.variant, r.backend) == (_cpu_best(op).id, "cpu")
    else:
        r = gl.bench(OPS[op], *args, repeat=1, warmup=0)
        best = next(v for v in gl.variants(op) if v.backend == "cuda" and v.best)
        assert (r.variant, r.backend) == (best.id, "cuda")


# ---------------------------------------------------------------- without a GPU

nogpu = pytest.mark.skipif(GPU, reason="checks the behaviour without a usable GPU")
REASONS = {"no driver", "no GPU", "not built"}
# CUDA variants without their gpu mark: these tests are for machines that have no GPU.
CUDA_VARIANTS = [pytest.param(p.values[0], id=p.id) for p in all_variant_params(backend="cuda")]


@nogpu
@pytest.mark.parametrize("v", CUDA_VARIANTS)
def test_cuda_variant_without_gpu_raises_no_device(v):
    args = example(v.op, 1000, v=v)
    with pytest.raises(gl.NoDeviceError) as e:
        OPS[v.op](*args, variant=v.id)
    err = e.value
    assert isinstance(err, gl.CudaError) and isinstance(err, RuntimeError)
    assert err.reason in REASONS
    assert err.reason in str(err)
    assert "no CUDA device" in str(err)
    for cpu in gl.variants(v.op):
        if cpu.backend == "cpu":
            assert f"{cpu.id} {cpu.name}" in str(err), f"{cpu} not listed in: {err}"
    assert isinstance(err.code, int)


@nogpu
@pytest.mark.parametrize("v", CUDA_VARIANTS)
def test_cuda_variant_without_gpu_raises_no_device_for_empty_input(v):
    args = [a[:0] if isinstance(a, np.ndarray) else a for a in example(v.op, 1000, v=v)]
    with pytest.raises(gl.NoDeviceError):
        OPS[v.op](*args, variant=v.id)


@nogpu
def test_gpu_entry_points_without_gpu():
    """Everything that needs the device says so with NoDeviceError (never crashes)."""
    x = np.ones(4, np.float32)
    calls = [
        lambda: gl.to_device(x), lambda: gl.empty(4), lambda: gl.zeros((2, 2)),
        lambda: gl.Stream(), lambda: gl.Event(), lambda: gl.pinned_empty((3, 4), np.float64),
        lambda: gl.synchronize(), lambda: gl.pool_usage(), lambda: gl.device_info(),
        lambda: gl.as_device(x), lambda: gl.from_dlpack(x), lambda: gl.ceilings("gpu"),
    ]
    for call in calls:
        with pytest.raises(gl.NoDeviceError) as e:
            call()
        assert e.value.reason in REASONS
    status = gl._core._gpu_status()
    assert isinstance(status, gl.NoDeviceError) and status.reason in REASONS
    assert gl.pinned_usage() == {"user": 0, "staging": 0}
