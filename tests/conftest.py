"""What gpulab's tests share: the GPU skip, registry-driven parametrization, inputs and tolerances.

Tests that need a CUDA device carry ``@pytest.mark.gpu``. Where no device is usable they are
skipped, and the skip says why in gpulab's own words (the NoDeviceError that
``gpulab._core._gpu_status()`` returns: no driver, no GPU, or built without CUDA).

Variants are never listed by hand: ``variant_params(op)`` reads them from ``gl.variants(op)``, so a
new variant is tested without anyone editing a test. CUDA variants get the ``gpu`` mark.
"""

import collections
import importlib
import json
import os
import sys

import numpy as np
import pytest

import gpulab as gl
from references import all_checks, nonzero_normal, rng_for  # noqa: F401 (for the tests)

GPU = gl.cuda_available()


EMULATE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools",
                       "emulate")


def emulator(name):
    """(tools/emulate/<name>, the mark that skips its test where it cannot build): the host
    emulations compile a kernel's own source with g++ against the CUDA headers, which
    tools/emulate/host_toolchain.py finds for them and for this mark."""
    sys.path.insert(0, EMULATE)
    try:
        import host_toolchain
    finally:
        sys.path.remove(EMULATE)
    return os.path.join(EMULATE, name), pytest.mark.skipif(
        host_toolchain.find()[0] is None, reason="needs g++ and the CUDA headers")


def probe_module(name):
    """A module of tools/probe/ (the GPU probes' drivers), imported by name, for the tests of
    what they check before building anything."""
    probe_dir = os.path.join(os.path.dirname(EMULATE), "probe")
    sys.path.insert(0, probe_dir)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(probe_dir)


def gpu_skip_reason():
    status = gl._core._gpu_status()
    if status is None:  # pragma: no cover - only asked for when there is no GPU
        return "needs a CUDA GPU"
    return f"needs a CUDA GPU; {status} [reason: {getattr(status, 'reason', '?')}]"


def _shard(items):
    """GPULAB_SHARD="k/n": the k-th (0-based) of n parts of the suite, so that n processes share
    one GPU machine's suite (tools/gpu-check.sh, GPULAB_TEST_SHARDS). The parts are dealt by
    cost, the longest first, each to the part with the least so far (tests/durations.json,
    from the GPU machine's last run; a test not in it counts UNTIMED_TEST_S, or its share of
    its base id's cost where only that is known), and a module
    whose setup is costly stays whole, paying it once. The deal depends only on the collection
    and the file, so the n processes agree on it."""
    shard = os.environ.get("GPULAB_SHARD")
    if not shard:
        return
    k, n = (int(x) for x in shard.split("/"))
    if not 0 <= k < n:
        raise pytest.UsageError(f"GPULAB_SHARD must be k/n with 0 <= k < n, got {shard!r}")
    known = _durations()
    units = {}  # a module kept whole, or a test: the indices of its items
    for i, item in enumerate(items):
        module = item.nodeid.split("::")[0]
        units.setdefault(module if module in known["modules"] else item.nodeid, []).append(i)

    # a parametrized test the file knows only by its base id (split into cases since): that
    # cost shared among its cases
    cases = collections.Counter(item.nodeid.split("[")[0] for item in items)

    def test_cost(nodeid):
        base = nodeid.split("[")[0]
        if nodeid in known["tests"] or base not in known["tests"]:
            return known["tests"].get(nodeid, UNTIMED_TEST_S)
        return known["tests"][base] / cases[base]

    def cost(unit):
        key, members = unit
        return known["modules"].get(key, 0.0) + sum(test_cost(items[i].nodeid) for i in members)
    load, mine = [0.0] * n, set()
    for unit in sorted(units.items(), key=cost, reverse=True):  # stable: ties in collection order
        part = load.index(min(load))
        load[part] += cost(unit)
        if part == k:
            mine.update(unit[1])
    items[:] = [item for i, item in enumerate(items) if i in mine]


# What a test not in tests/durations.json counts for in the deal (most take a few ms to 0.1 s).
UNTIMED_TEST_S = 0.05


def _durations():
    """tests/durations.json (tools/test_durations.py), or GPULAB_TEST_DURATIONS's file; empty
    where there is none (then the deal is by count, in turn)."""
    path = os.environ.get("GPULAB_TEST_DURATIONS") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "durations.json")
    try:
        with open(path) as f:
            found = json.load(f)
        return {"modules": found.get("modules", {}), "tests": found.get("tests", {})}
    except FileNotFoundError:
        return {"modules": {}, "tests": {}}


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker a core without a GPU, where the suite is CPU-bound (the kernel
    emulations); one with a GPU, so that timing tests do not share the device.
    GPULAB_TEST_WORKERS overrides both."""
    if os.environ.get("GPULAB_TEST_WORKERS"):
        return int(os.environ["GPULAB_TEST_WORKERS"])
    return 1 if GPU else (os.cpu_count() or 1)


def pytest_collection_modifyitems(config, items):
    _shard(items)
    if GPU:
        return
    skip = pytest.mark.skip(reason=gpu_skip_reason())
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


# ---------------------------------------------------------------- registry-driven parameters


def _marks(v):
    return [pytest.mark.gpu] if v.backend == "cuda" else []


def variant_params(op, backend=None, where=None):
    """pytest.params of every variant of op from the registry (optionally of one backend), CUDA
    ones marked gpu. The parameter is the gl.Variant record."""
    return [pytest.param(v, id=f"{v.id}-{v.name}", marks=_marks(v))
            for v in gl.variants(op) if backend in (None, v.backend)]


def all_variant_params(backend=None):
    """Every variant of every op."""
    return [pytest.param(v, id=f"{v.op}-{v.id}-{v.name}", marks=_marks(v))
            for v in gl.variants() if backend in (None, v.backend)]


def variant_where_params(op):
    """(variant, where) pairs: where is 'numpy' (NumPy in and out) for every variant, plus
    'device' (device arrays in and out) for CUDA variants."""
    params = []
    for v in gl.variants(op):
        wheres = ["numpy", "device"] if v.backend == "cuda" else ["numpy"]
        for where in wheres:
            params.append(pytest.param(v, where, id=f"{v.id}-{v.name}-{where}", marks=_marks(v)))
    return params


def block_params(op):
    """(variant, block) for every CUDA variant of op with a 'block' tunable and every value its
    record allows."""
    return [pytest.param(v, b, id=f"{v.id}-{v.name}-block{b}", marks=_marks(v))
            for v in gl.variants(op) if "block" in v.tunables
            for b in v.tunables["block"]["values"]]


# ---------------------------------------------------------------- inputs


SIZES = [0, 1, 2, 31, 32, 33, 255, 256, 257, 1023, 1025, 1_000_003]
DTYPES = [np.float32, np.float64]


def poisoned(shape, dtype):
    return np.full(shape, np.nan, dtype=dtype)


# ---------------------------------------------------------------- references

# Every op of the registry needs a reference (test_every_op_has_a_reference asks): how to check
# its result against NumPy, given the NumPy arguments that produced it (tests/references/).
CHECKS = all_checks()


class CudaView:
    """A foreign device array (CUDA Array Interface v3) over part of a DeviceArray's memory, for
    layouts gpulab never makes itself: offset (misaligned), strided, read-only."""

    def __init__(self, base, shape, strides=None, offset=0, readonly=False):
        self.base = base  # keeps the memory alive
        cai = dict(base.__cuda_array_interface__)
        cai.update(shape=tuple(shape), strides=strides, data=(base.ptr + offset, readonly))
        self.__cuda_array_interface__ = cai



def placed(where, a):
    """a where a test runs a variant: on the device for "device", as it is for "numpy"."""
    return gl.to_device(a) if where == "device" else a


def fetched(where, a):
    """An op's output as a NumPy array, after checking that it came back where its inputs were:
    a DeviceArray for "device", a NumPy array for "numpy"."""
    if where == "device":
        assert isinstance(a, gl.DeviceArray)
        return a.get()
    assert isinstance(a, np.ndarray)
    return a

def to_device_args(args):
    return [gl.to_device(a) if isinstance(a, np.ndarray) else a for a in args]


@pytest.fixture
def rng(request):
    return rng_for(request.node.nodeid)


def child_env(**variables):
    """os.environ for a child Python process that imports the gpulab these tests imported,
    with variables set (None removes one)."""
    env = dict(os.environ)
    home = os.path.dirname(os.path.dirname(os.path.abspath(gl.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (home, env.get("PYTHONPATH")) if p)
    for name, value in variables.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


# ---------------------------------------------------------------- memory and streams labs


def assert_no_leaks(run_all, rounds=3):
    """run_all() once to warm gpulab's caches (staging ring, pool), then `rounds` more times:
    device pool and pinned memory must end where they stood after the warm-up."""
    import gc
    run_all()
    gc.collect()
    gl.synchronize()
    pool0, pinned0 = gl.pool_usage()["used"], gl.pinned_usage()
    for _ in range(rounds):
        run_all()
    gc.collect()
    gl.synchronize()
    assert gl.pool_usage()["used"] == pool0
    assert gl.pinned_usage() == pinned0
