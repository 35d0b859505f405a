"""The memory lab: tables, data integrity through every memory kind, the latency staircase, the
argument errors, NoDeviceError without a GPU, and no leaks."""

import math

import numpy as np
import pytest

import gpulab as gl
from conftest import GPU, assert_no_leaks

mem = gl.memory
KiB, MiB = 1 << 10, 1 << 20
nogpu = pytest.mark.skipif(GPU, reason="checks the behaviour without a GPU")


# ---------------------------------------------------------------- the host (runs everywhere)


def test_chain_is_one_cycle_over_every_node():
    for shuffle in (False, True):
        succ = gl._core._memlab_chain(1000, shuffle, 5)
        assert succ.dtype == np.uint32 and sorted(succ) == list(range(1000))
        p, seen = 0, set()
        for _ in range(1000):
            seen.add(p)
            p = int(succ[p])
        assert p == 0 and len(seen) == 1000
    assert not np.array_equal(gl._core._memlab_chain(1000, True, 5),
                              gl._core._memlab_chain(1000, True, 6))


def test_chains_that_leave_the_array_are_refused():
    """A link past the last node would make the chase read outside its array."""
    bad = np.array([1, 2, 3, 7], np.uint32)
    for call in (lambda: gl._core._memlab_cpu_chase(bad, 16, 4, 10, 1),
                 lambda: gl._core._memlab_walk(bad, 10)):
        with pytest.raises(ValueError, match="successor"):
            call()
    with pytest.raises(TypeError):
        gl._core._memlab_walk(bad.astype(np.int32), 10)
    assert gl._core._memlab_walk(np.array([2, 0, 1], np.uint32), 4) == 2


def test_cpu_pointer_chase_table():
    t = mem.pointer_chase(sizes=[4 * KiB, 64 * KiB, 1 * MiB], strides=[64, 128], steps=4096,
                          where="cpu", progress=False)
    assert len(t) == 6 and t.meta["where"] == "cpu"
    assert set(t.columns) >= {"bytes", "stride", "nodes", "ns_per_load", "chain_ok"}
    assert all(r["chain_ok"] for r in t)
    assert all(r["nodes"] == r["bytes"] // r["stride"] for r in t)
    assert all(0 < r["min_ns"] <= r["ns_per_load"] <= r["max_ns"] for r in t)
    df = pytest.importorskip("pandas") and t.to_pandas()
    assert list(df.columns) == t.columns and len(df) == 6


def test_cpu_staircase_rises_past_the_caches():
    """A random chain over 64 MiB misses every cache a CI host has; 4 KiB sits in L1."""
    t = mem.pointer_chase(sizes=[4 * KiB, 64 * MiB], steps=1 << 15, where="cpu", progress=False)
    small, big = t.column("ns_per_load")
    assert big > 5 * small


def test_host_bandwidth_table():
    t = mem.host_bandwidth(sizes=[64 * KiB, 4 * MiB], repeat=2, progress=False)
    assert [(r["kind"], r["bytes"]) for r in t] == [(k, s) for s in (64 * KiB, 4 * MiB)
                                                    for k in ("read", "write", "copy")]
    assert all(r["gbps"] > 0 for r in t)
    assert mem.host_bandwidth(sizes=[4 * MiB], kinds="copy", repeat=1,
                              progress=False).column("kind") == ["copy"]


@pytest.mark.parametrize("call, error", [
    (lambda: mem.pointer_chase(sizes=[4096], where="tpu"), ValueError),
    (lambda: mem.pointer_chase(sizes=[4096], where=1), TypeError),
    (lambda: mem.pointer_chase(sizes=[4095], where="cpu"), ValueError),
    (lambda: mem.pointer_chase(sizes=[64], strides=[128], where="cpu"), ValueError),
    (lambda: mem.pointer_chase(sizes=[4096], strides=[6], where="cpu"), ValueError),
    (lambda: mem.pointer_chase(sizes=[4096], steps=0, where="cpu"), ValueError),
    (lambda: mem.pointer_chase(sizes=[4096], steps=1.5, where="cpu"), TypeError),
    (lambda: mem.pointer_chase(sizes=[4096], shuffle="yes", where="cpu"), TypeError),
    (lambda: mem.pointer_chase(sizes=[], where="cpu"), ValueError),
    (lambda: mem.pointer_chase(sizes="big", where="cpu"), TypeError),
    (lambda: mem.pointer_chase(sizes=[1 << 20], max_bytes=4096, where="cpu"), ValueError),
    (lambda: mem.host_bandwidth(sizes=[100]), ValueError),
    (lambda: mem.host_bandwidth(kinds=["scan"]), ValueError),
    (lambda: mem.host_bandwidth(sizes=[4096], repeat=0), ValueError),
    (lambda: mem.bandwidth_test("up"), ValueError),
    (lambda: mem.bandwidth_test("h2d", "shared"), ValueError),
    (lambda: mem.bandwidth_test("d2d", "pageable"), ValueError),
    (lambda: mem.bandwidth_test("h2d", sizes=[100]), ValueError),
    (lambda: mem.bandwidth_test("h2d", sizes=[True]), TypeError),
    (lambda: mem.bandwidth_test("h2d", repeat=0), ValueError),
    (lambda: mem.access_pattern("zigzag"), ValueError),
    (lambda: mem.access_pattern(["offset0"]), ValueError),
    (lambda: mem.access_pattern([3]), TypeError),
    (lambda: mem.access_pattern(n=8), ValueError),
    (lambda: mem.bank_conflicts(strides=[0]), ValueError),
    (lambda: mem.bank_conflicts(strides=[2000]), ValueError),
    (lambda: mem.constant_memory(iterations=0), ValueError),
])
def test_argument_errors(call, error):
    with pytest.raises(error):
        call()


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="direction"):
        mem.bandwidth_test("sideways")
    with pytest.raises(ValueError, match="max_bytes"):
        mem.bandwidth_test("h2d", sizes=[1 << 20], max_bytes=16)
    with pytest.raises(TypeError, match="strides"):
        mem.pointer_chase(strides=None, where="cpu")


@nogpu
def test_gpu_measurements_need_a_gpu():
    for call in (lambda: mem.bandwidth_test("h2d", sizes=[4096]),
                 lambda: mem.bandwidth_test("d2h", "mapped", sizes=[4096]),
                 lambda: mem.access_pattern(), lambda: mem.pointer_chase(sizes=[4096]),
                 lambda: mem.bank_conflicts(), lambda: mem.constant_memory(),
                 lambda: mem.cache_sizes()):
        with pytest.raises(gl.NoDeviceError):
            call()
    assert gl.pinned_usage() == {"user": 0, "staging": 0}


# ---------------------------------------------------------------- the GPU

SMALL = [16, 4 * KiB, 1 * MiB + 48]


@pytest.mark.gpu
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
@pytest.mark.parametrize("memory", ["pageable", "pinned", "mapped", "managed"])
def test_bandwidth_data_arrives_intact(direction, memory):
    t = mem.bandwidth_test(direction, memory, sizes=SMALL, repeat=2, progress=False)
    methods = {"pageable": ["gpulab", "cudaMemcpy"], "pinned": ["gpulab", "cudaMemcpy"],
               "mapped": ["zero-copy kernel"], "managed": ["on-demand", "prefetch"]}[memory]
    assert [(r["bytes"], r["method"]) for r in t] == [(s, m) for s in SMALL for m in methods]
    assert all(r["intact"] for r in t), t
    assert all(r["gbps"] > 0 and r["min_ms"] <= r["median_ms"] <= r["max_ms"] for r in t)
    if memory in ("pageable", "pinned"):
        assert all(r["ratio_to_cudaMemcpy"] > 0 for r in t)


@pytest.mark.gpu
def test_bandwidth_d2d_and_max_bytes():
    t = mem.bandwidth_test("d2d", "device", sizes=[4 * KiB, 1 * MiB], max_bytes=64 * KiB,
                           repeat=2, progress=False)
    assert t.column("bytes") == [4 * KiB, 4 * KiB] and all(t.column("intact"))


@pytest.mark.gpu
def test_access_patterns_order():
    t = mem.access_pattern(n=1 << 22, repeat=3, progress=False)
    assert t.column("pattern") == list(mem.ACCESS_PATTERNS)
    ratio = dict(zip(t.column("pattern"), t.column("ratio_to_coalesced")))
    assert ratio["coalesced"] == 1.0
    # Each doubling of the offset touches twice the sectors; scattered is the worst.
    assert ratio["offset32"] < ratio["offset4"] < ratio["mixed"] + 0.25
    assert ratio["scattered"] < ratio["offset2"]
    only = mem.access_pattern("offset8", n=1 << 20, repeat=2, progress=False)
    assert only.column("pattern") == ["offset8"]


@pytest.mark.gpu
def test_gpu_pointer_chase_ends_where_the_host_walk_ends():
    t = mem.pointer_chase(sizes=[4 * KiB, 8 * MiB], strides=[64, 256], steps=5000, repeat=2,
                          progress=False)
    assert len(t) == 4 and all(t.column("chain_ok"))
    assert t.meta["l2_cache_bytes"] == gl.device_info()["l2_cache_bytes"]
    # 4 KiB stays in L1; a random chain over 8 MiB does not.
    by_size = {(r["bytes"], r["stride"]): r["ns_per_load"] for r in t}
    assert by_size[(8 * MiB, 64)] > 1.5 * by_size[(4 * KiB, 64)]


@pytest.mark.gpu
def test_gpu_pointer_chase_steps_past_the_l2():
    """Twice the L2 in a random cycle misses it on every load; a quarter of it hits. Other
    processes on the GPU share the L2 (the suite's shards run at once, beside the sanitizers):
    their traffic can evict the small chain during one try, so the step must show in one of
    three; a chase that never hits the L2 fails all three."""
    l2 = gl.device_info()["l2_cache_bytes"]
    sizes = [l2 // 4 // 64 * 64, 2 * l2 // 64 * 64]
    tries = []
    for _ in range(3):
        t = mem.pointer_chase(sizes=sizes, steps=5000, repeat=2, progress=False)
        assert all(t.column("chain_ok")), t
        inside, outside = t.column("ns_per_load")
        if outside > 1.3 * inside:
            return
        tries.append(t)
    raise AssertionError("no step past the L2 in three tries:\n" + "\n".join(map(str, tries)))


@pytest.mark.gpu
def test_bank_conflicts_follow_gcd():
    t = mem.bank_conflicts(strides=[1, 2, 16, 32, 33], iterations=2048, repeat=3,
                           progress=False)
    assert t.column("ways") == [math.gcd(s, 32) for s in (1, 2, 16, 32, 33)]
    slow = dict(zip(t.column("stride"), t.column("slowdown")))
    assert slow[32] > 4 * slow[1] and slow[33] < 2 and slow[16] > slow[2]


@pytest.mark.gpu
def test_constant_memory_broadcast_beats_divergent():
    t = mem.constant_memory(iterations=2048, repeat=3)
    assert [(r["memory"], r["access"]) for r in t] == list(mem.CONSTANT_MODES)
    rel = {(r["memory"], r["access"]): r["relative"] for r in t}
    assert rel[("constant", "divergent")] > 2 * rel[("constant", "uniform")]


@pytest.mark.gpu
def test_memory_lab_does_not_leak():
    def run_all():
        for memory in ("pageable", "pinned", "mapped", "managed"):
            mem.bandwidth_test("h2d", memory, sizes=[4 * KiB, 64 * KiB], repeat=1,
                               progress=False)
        mem.bandwidth_test("d2d", "device", sizes=[4 * KiB], repeat=1, progress=False)
        mem.access_pattern(n=1 << 16, repeat=1, progress=False)
        mem.pointer_chase(sizes=[64 * KiB], steps=100, repeat=1, progress=False)
        mem.bank_conflicts(strides=[1, 32], iterations=64, repeat=1, progress=False)
        mem.constant_memory(iterations=64, repeat=1)

    assert_no_leaks(run_all)


@pytest.mark.gpu
def test_refused_arguments_reach_the_core_safely():
    """The bindings refuse what the Python layer would have caught, without touching the GPU."""
    with pytest.raises(gl.CudaError):
        gl._core._memlab_mapped(0, 17, 1)  # not a multiple of 16
    with pytest.raises(gl.CudaError):
        gl._core._memlab_access(7, 0, 1024, 1)
    with pytest.raises(ValueError):
        gl._core._memlab_bank(1, 16, 0)
    with pytest.raises(TypeError):
        gl._core._memlab_chase(np.zeros(4, np.int64), 1, 0, 10, 1)
    with pytest.raises(ValueError):
        gl._core._memlab_chase(np.array([1, 2, 9], np.uint32), 1, 0, 10, 1)
