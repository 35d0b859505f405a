"""bench() and sweep(): what they measure, how they say it, and what they refuse."""

import math

import numpy as np
import pytest

import gpulab as gl
from references.saxpy import saxpy_inputs
from gpulab import peers as gl_peers

N = 100_003


def check_consistent(r, n, itemsize, repeat):
    assert isinstance(r, gl.BenchResult)
    assert r.op == "saxpy" and r.size == n
    assert len(r.samples) == repeat and all(s > 0 for s in r.samples)
    assert r.min_ms == min(r.samples) and r.max_ms == max(r.samples)
    assert r.min_ms <= r.median_ms <= r.max_ms
    assert r.bytes == 3 * n * itemsize  # read x and y, write out
    assert r.flops == 2 * n
    assert r.gbps > 0 and r.gflops > 0 and r.frac_copy > 0 and r.frac_fma > 0
    assert math.isclose(r.gbps, r.bytes / r.median_ms / 1e6, rel_tol=1e-9)
    assert math.isclose(r.gflops, r.flops / r.median_ms / 1e6, rel_tol=1e-9)
    name = next(v.name for v in gl.variants("saxpy") if v.id == r.variant)
    assert r.variant_name == name
    d = r.to_dict()
    assert d["median_ms"] == r.median_ms and d["samples"] == r.samples
    assert r.op in str(r) and r.variant_name in str(r)


def test_bench_cpu_variant():
    a, x, y = saxpy_inputs(N, np.float32)
    v = next(w for w in gl.variants("saxpy") if w.backend == "cpu")
    r = gl.bench(gl.saxpy, a, x, y, variant=v.id, repeat=3, warmup=1)
    check_consistent(r, N, 4, 3)
    assert r.bytes == 12 * N
    assert (r.variant, r.backend, r.timer) == (v.id, "cpu", "perf_counter")
    assert r.transfers_included is False and r.l2_flushed is False
    assert r.dtype == "float32" and r.peers == {}
    assert r.device == gl.ceilings("cpu")["device"]


def test_bench_by_name_and_float64():
    a, x, y = saxpy_inputs(N, np.float64)
    v = next(w for w in gl.variants("saxpy") if w.backend == "cpu")
    r = gl.bench(gl.saxpy, a, x, y, variant=v.name, repeat=2, warmup=0)
    check_consistent(r, N, 8, 2)
    assert r.variant == v.id and r.dtype == "float64"


def test_bench_refuses():
    a, x, y = saxpy_inputs(16, np.float32)
    with pytest.raises(TypeError, match="not a gpulab op"):
        gl.bench(len, x)
    with pytest.raises(TypeError):
        gl.bench(np.add, x, y)
    with pytest.raises(ValueError):
        gl.bench(gl.saxpy, a, x, y, variant=100, repeat=0)
    with pytest.raises(ValueError):
        gl.bench(gl.saxpy, a, x, y, variant=100, warmup=-1)
    with pytest.raises(ValueError):
        gl.bench(gl.saxpy, a, x, y, variant="nope")
    with pytest.raises(TypeError):  # the op's own checks run before anything is timed
        gl.bench(gl.saxpy, a, x, y.astype(np.float64), variant=100)


def test_ceilings_cpu():
    c = gl.ceilings("cpu")
    assert c["where"] == "cpu" and c["copy_gbps"] > 0 and c["fma_gflops"] > 0
    assert c["threads"] == gl.build_info()["openmp_threads"]
    with pytest.raises(ValueError):
        gl.ceilings("tpu")


def test_sweep_over_variants():
    pd = pytest.importorskip("pandas")
    a, x, y = saxpy_inputs(N, np.float32)
    cpu_ids = [v.id for v in gl.variants("saxpy") if v.backend == "cpu"]
    res = gl.sweep(gl.saxpy, a, x, y, variant=cpu_ids, repeat=2, warmup=0, progress=False)
    assert isinstance(res, gl.SweepResults) and isinstance(res, list)
    assert [r.variant for r in res] == cpu_ids and res.skipped == []
    for r in res:
        check_consistent(r, N, 4, 2)
    df = res.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == len(cpu_ids)
    assert list(df["variant"]) == cpu_ids
    assert {"median_ms", "gbps", "backend"} <= set(df.columns)


def test_sweep_skips_what_the_op_refuses():
    a, x, y = saxpy_inputs(1000, np.float32)
    cpu = [v.id for v in gl.variants("saxpy") if v.backend == "cpu"]
    res = gl.sweep(gl.saxpy, a, x, y, variant=cpu, block=[64], repeat=1, warmup=0,
                   progress=False)
    assert len(res) == 0
    assert [combo for combo, _ in res.skipped] == [{"variant": i, "block": 64} for i in cpu]
    assert all("block" in why for _, why in res.skipped)


def test_sweep_progress_goes_to_stderr(capsys):
    a, x, y = saxpy_inputs(1000, np.float32)
    cpu = [v.id for v in gl.variants("saxpy") if v.backend == "cpu"]
    gl.sweep(gl.saxpy, a, x, y, variant=cpu, repeat=1, warmup=0, progress=True)
    assert capsys.readouterr().out == ""


# ---------------------------------------------------------------- on the GPU


@pytest.mark.gpu
def test_bench_device_arrays():
    a, x, y = saxpy_inputs(1 << 20, np.float32)
    dx, dy = gl.to_device(x), gl.to_device(y)
    for v in gl.variants("saxpy"):
        if v.backend != "cuda":
            continue
        r = gl.bench(gl.saxpy, a, dx, dy, variant=v.id, repeat=5, warmup=2)
        check_consistent(r, 1 << 20, 4, 5)
        assert (r.backend, r.timer) == ("cuda", "cuda-events")
        assert r.l2_flushed is True and r.transfers_included is False
        assert r.device == gl.device_info()["name"]
    r = gl.bench(gl.saxpy, a, dx, dy, repeat=2, warmup=0, flush_l2=False)
    assert r.l2_flushed is False
    assert r.variant == next(v.id for v in gl.variants("saxpy") if v.backend == "cuda" and v.best)


@pytest.mark.gpu
def test_bench_numpy_through_cuda_variant():
    a, x, y = saxpy_inputs(1 << 16, np.float32)
    v = next(v for v in gl.variants("saxpy") if v.backend == "cuda")
    r = gl.bench(gl.saxpy, a, x, y, variant=v.id, repeat=3, warmup=1)
    check_consistent(r, 1 << 16, 4, 3)
    assert r.transfers_included is True and r.timer == "perf_counter" and r.backend == "cuda"


@pytest.mark.gpu
def test_bench_peers():
    a, x, y = saxpy_inputs(1 << 20, np.float32)
    dx, dy = gl.to_device(x), gl.to_device(y)
    r = gl.bench(gl.saxpy, a, dx, dy, repeat=3, warmup=1, peers=True)
    expected = {name for name in ("cupy", "torch") if gl_peers.available(name)}
    assert set(r.peers) == expected
    for name, p in r.peers.items():
        assert p["median_ms"] > 0 and p["speedup"] > 0 and p["gbps"] > 0
        assert math.isclose(p["speedup"], p["median_ms"] / r.median_ms, rel_tol=1e-9)
        assert p["version"]


@pytest.mark.gpu
def test_sweep_blocks_and_mixed_backends():
    a, x, y = saxpy_inputs(1 << 18, np.float32)
    dx, dy = gl.to_device(x), gl.to_device(y)
    cuda = [v for v in gl.variants("saxpy") if v.backend == "cuda" and "block" in v.tunables]
    blocks = cuda[0].tunables["block"]["values"][:2]
    res = gl.sweep(gl.saxpy, a, dx, dy, variant=[v.id for v in cuda], block=blocks, repeat=2,
                   warmup=0, progress=False)
    assert [(r.variant, r.params["block"]) for r in res] == [
        (v.id, b) for v in cuda for b in blocks]
    cpu = next(v for v in gl.variants("saxpy") if v.backend == "cpu")
    res = gl.sweep(gl.saxpy, a, x, y, variant=[cpu.id, cuda[0].id], block=[64], repeat=1,
                   warmup=0, progress=False)
    assert [r.variant for r in res] == [cuda[0].id]
    assert [c["variant"] for c, _ in res.skipped] == [cpu.id]
