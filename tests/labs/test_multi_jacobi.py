"""gl.multi.jacobi and gl.multi.scaling. Here without a GPU: every argument refused before any GPU
work, the slab rule, and scaling's arithmetic, Table and plot with a fake fn. On GPUs: the multi-GPU
solve is bitwise gl.jacobi's with the same variant (u's bytes, the residuals' bytes, sweeps,
converged): the default (temporal passes in 2D, fused sweeps in 3D) and fused, each temporal depth,
after 1, 2, check_every and an odd number of sweeps, 2D and 3D, float32 and float64, p2p and nccl,
overlap on and off, uneven and thin slabs; with one GPU the degenerate partition runs without NCCL. The tests
that need two GPUs skip, saying what they could not check."""

import subprocess
import sys

import numpy as np
import pytest

import gpulab as gl
from conftest import GPU, child_env, emulator

mg = gl.multi
nogpu = pytest.mark.skipif(GPU, reason="checks the behaviour without a GPU")

F2 = np.zeros((8, 8), np.float32)


# ---------------------------------------------------------------- arguments (no GPU needed)

@pytest.mark.parametrize("call, error, words", [
    (lambda: mg.jacobi(F2, iters=1, exchange="mpi"), ValueError, "exchange must be 'p2p' or"),
    (lambda: mg.jacobi(F2, iters=1, exchange=None), ValueError, "exchange must be"),
    (lambda: mg.jacobi(F2, iters=1, overlap=1), TypeError, "overlap must be a bool"),
    (lambda: mg.jacobi([[0.0]], iters=1), TypeError, "f must be a NumPy array"),
    (lambda: mg.jacobi(np.zeros(8, np.float32), iters=1), ValueError, "f must be 2-D or 3-D"),
    (lambda: mg.jacobi(np.zeros((4, 4), np.int32), iters=1), TypeError, "f has dtype int32"),
    (lambda: mg.jacobi(np.zeros((4, 8), np.float32)[:, ::2], iters=1), ValueError,
     "f must be C-contiguous"),
    (lambda: mg.jacobi(F2, np.zeros((8, 9), np.float32), iters=1), ValueError,
     "u0 must have f's shape"),
    (lambda: mg.jacobi(F2, np.zeros((8, 8)), iters=1), ValueError, "u0 must have f's shape"),
    (lambda: mg.jacobi(F2), ValueError, "iters or tol"),
    (lambda: mg.jacobi(F2, iters=-1), ValueError, "iters must be an int >= 0"),
    (lambda: mg.jacobi(F2, iters=1, h=0), ValueError, "h must be a positive finite"),
    (lambda: mg.jacobi(F2, tol=0), ValueError, "tol must be > 0"),
    (lambda: mg.jacobi(F2, iters=1, check_every=0), ValueError, "check_every must be an int"),
    (lambda: mg.jacobi(F2, iters=1, gpus=[]), ValueError, "gpus must not be empty"),
    (lambda: mg.jacobi(F2, iters=1, gpus=[0, 0]), ValueError, "gpus must be distinct"),
    (lambda: mg.jacobi(F2, iters=1, gpus="01"), TypeError, "gpus must be a list"),
    (lambda: mg.jacobi(np.zeros((2, 8), np.float32), iters=1, gpus=[0, 1, 2]), ValueError,
     "fewer than the 3 GPUs"),
    (lambda: mg.jacobi(np.zeros((1, 4, 4)), iters=1, gpus=[0, 1]), ValueError,
     "each slab needs at least one"),
    (lambda: mg.jacobi(F2, iters=1, variant="graph"), ValueError, "variant must be one of"),
    (lambda: mg.jacobi(F2, iters=1, variant=7), ValueError, "variant must be one of"),
    (lambda: mg.jacobi(np.zeros((4, 4, 4)), iters=1, variant="temporal"), ValueError,
     "2-D grids only"),
    (lambda: mg.jacobi(F2, iters=1, variant="fused", depth=4), ValueError,
     "depth is the temporal variant's"),
    (lambda: mg.jacobi(F2, iters=1, depth=3), ValueError, "depth must be one of [1, 2, 4, 8]"),
    (lambda: mg.jacobi(F2, iters=1, depth=True), ValueError, "depth must be one of"),
    (lambda: mg.scaling(None, [1]), TypeError, "fn must be callable"),
    (lambda: mg.scaling(print, [1], mode="both"), ValueError, "mode must be 'strong' or 'weak'"),
    (lambda: mg.scaling(print, []), ValueError, "sizes must not be empty"),
    (lambda: mg.scaling(print, 5), TypeError, "sizes must be a list"),
    (lambda: mg.scaling(print, [1], gpus=[2, 4]), ValueError, "gpus must include 1"),
    (lambda: mg.scaling(print, [1], gpus=[1, 1]), ValueError, "gpus must be distinct"),
    (lambda: mg.scaling(print, [1], trials=0), ValueError, "trials must be >= 1"),
])
def test_bad_arguments_are_refused_before_any_gpu_work(call, error, words):
    with pytest.raises(error) as caught:
        call()
    assert words in str(caught.value)


@pytest.mark.parametrize("n0, parts, expected", [
    (10, 3, [(0, 4), (4, 7), (7, 10)]),
    (4, 4, [(0, 1), (1, 2), (2, 3), (3, 4)]),
    (16384, 2, [(0, 8192), (8192, 16384)]),
    (513, 2, [(0, 257), (257, 513)]),
    (0, 1, [(0, 0)]),
    (1, 1, [(0, 1)]),
])
def test_slabs_are_array_split_with_at_least_one_row_each(n0, parts, expected):
    assert mg.slabs(n0, parts) == expected


def test_slabs_thinner_than_one_row_are_refused():
    with pytest.raises(ValueError, match="fewer than the 4 GPUs"):
        mg.slabs(3, 4)


def test_the_result_is_a_jacobi_result_with_timing():
    u, residuals = np.arange(6.0).reshape(2, 3), np.array([0.5])
    r = mg.MultiJacobiResult(u, 4, residuals, True, {"total_ms": 2.0}, (0, 1), "nccl", False,
                             [(0, 1), (1, 2)])
    assert isinstance(r, gl.JacobiResult)
    got_u, got_residuals = r  # unpacks as gl.jacobi's
    assert got_u is u and got_residuals is residuals
    copy = r.get()
    assert isinstance(copy, mg.MultiJacobiResult) and copy.timing == {"total_ms": 2.0}
    assert (copy.gpus, copy.exchange, copy.overlap, copy.slabs) == ((0, 1), "nccl", False,
                                                                   [(0, 1), (1, 2)])
    assert "exchange='nccl'" in repr(r)


EMULATOR, needs_toolchain = emulator("multi_jacobi.py")


@needs_toolchain
def test_the_slab_orchestration_emulated_on_the_cpu():
    """cuda/multi/jacobi.cu itself, compiled by g++ against CPU stand-ins for the CUDA runtime,
    the stencil lab's sweeps and NCCL (tools/emulate/multi_jacobi.py): on 1 to 4 emulated GPUs,
    p2p and nccl, overlap on and off, 2D and 3D, both dtypes, uneven and one-row slabs, u and
    the residuals byte for byte against the whole grid, no write outside an allocation, every
    call on its memory's device. The slab arithmetic without a GPU; not the hardware's order."""
    done = subprocess.run([sys.executable, EMULATOR], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and ", 0 failures" in done.stdout, done.stdout + done.stderr


@nogpu
def test_without_a_gpu_jacobi_raises_nodeviceerror():
    with pytest.raises(gl.NoDeviceError):
        mg.jacobi(F2, iters=1)
    with pytest.raises(gl.NoDeviceError):
        mg.jacobi(F2, iters=1, gpus=[0])


# ---------------------------------------------------------------- scaling (no GPU needed)

class FakeRun:
    """A stand-in for fn: times in ms that depend on the GPU count, a different value each
    trial (so that the median is the middle one), and a count of the calls."""

    def __init__(self, per_gpu_ms, spread=(1.0, 3.0, 2.0)):
        self.per_gpu_ms, self.spread, self.calls = per_gpu_ms, spread, []

    def __call__(self, size, gpus):
        k = len(self.calls)
        self.calls.append((size, gpus))
        factor = self.spread[k % len(self.spread)]
        return {"total_ms": self.per_gpu_ms[gpus] * factor, "compute_ms": 8.0 * factor / gpus,
                "exchange_ms": 0.5 * factor, "allreduce_ms": 0.25 * factor}


def test_strong_scaling_is_t1_over_tn_from_medians():
    fn = FakeRun({1: 10.0, 2: 5.5})
    table = mg.scaling(fn, [4096], gpus=[2, 1], trials=3, warmup=0)
    assert fn.calls == [(4096, 1)] * 3 + [(4096, 2)] * 3  # counts sorted, same size
    one, two = table
    assert (one["gpus"], two["gpus"]) == (1, 2)
    assert one["total_ms"] == 20.0 and two["total_ms"] == 11.0  # the middle of 1x, 3x, 2x
    assert one["compute_ms"] == 16.0 and two["compute_ms"] == 8.0
    assert one["exchange_ms"] == 1.0 and one["allreduce_ms"] == 0.5
    assert one["speedup"] == 1.0 and one["efficiency"] == 1.0
    assert two["speedup"] == pytest.approx(20.0 / 11.0)
    assert two["efficiency"] == pytest.approx(20.0 / 11.0 / 2)
    assert table.meta["mode"] == "strong" and table.meta["trials"] == 3
    assert table.meta["speedup"] == "T(1)/T(N)" and isinstance(table, gl.Table)


def test_weak_scaling_grows_axis_0_and_its_efficiency_is_t1_over_tn():
    fn = FakeRun({1: 10.0, 2: 12.5}, spread=(1.0,))
    table = mg.scaling(fn, [(256, 512)], gpus=[1, 2], mode="weak", trials=2, warmup=1)
    assert fn.calls == [((256, 512), 1)] * 3 + [((512, 512), 2)] * 3  # warm-up + 2 trials
    one, two = table
    assert two["problem"] == (512, 512) and two["size"] == (256, 512)
    assert two["efficiency"] == pytest.approx(10.0 / 12.5)
    assert two["speedup"] == pytest.approx(2 * 10.0 / 12.5)
    assert table.meta["speedup"] == "N T(1)/T(N)"
    assert mg.weak_size(100, 4) == 400


def test_a_fn_without_times_is_timed_by_the_harness_and_has_no_components():
    table = mg.scaling(lambda size, gpus: None, [1, 2], trials=2)
    assert len(table) == 4
    assert all(r["total_ms"] >= 0 and r["compute_ms"] is None for r in table)


def test_a_fn_returning_something_else_is_refused():
    with pytest.raises(TypeError, match="fn must return None, a dict"):
        mg.scaling(lambda size, gpus: 3.0, [1])


def test_the_scaling_table_plots_or_says_matplotlib_is_missing():
    table = mg.scaling(FakeRun({1: 10.0, 2: 6.0}), [64], trials=1)
    try:
        import matplotlib
    except ImportError:
        with pytest.raises(ImportError, match="pip install matplotlib"):
            table.plot()
        return
    matplotlib.use("Agg")
    fig = table.plot()
    assert len(fig.axes) == 2


# ---------------------------------------------------------------- on GPUs

def gpu_count():
    return gl._core._multi_device_count() if GPU else 0


def need_gpus(k, what):
    if gpu_count() < k:
        pytest.skip(f"needs {k} GPUs, {gpu_count()} visible: could not check {what}")


def need_exchange(exchange, what):
    if exchange == "nccl":
        try:
            mg.load_nccl()
        except mg.NcclNotFoundError as e:
            pytest.skip(f"no NCCL, could not check {what}: {e}")
    else:
        access = gl.devices().meta["p2p_access"]
        if not (access[0][1] and access[1][0]):
            pytest.skip(f"GPUs 0 and 1 have no peer access: could not check {what} over p2p")


def problem(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype))


def single_gpu(f, u0, h, iters=None, tol=None, check_every=50, variant=None, depth=None):
    """gl.jacobi on device 0, the same variant (None: its default): the reference, bitwise."""
    return gl.jacobi(gl.to_device(f), gl.to_device(u0), h=h, iters=iters, tol=tol,
                     check_every=check_every, variant=variant, depth=depth).get()


def assert_bitwise(got, ref):
    assert isinstance(got, gl.JacobiResult)
    assert got.sweeps == ref.sweeps and got.converged == ref.converged
    assert got.u.dtype == ref.u.dtype and got.u.shape == ref.u.shape
    assert got.u.tobytes() == ref.u.tobytes(), np.argwhere(got.u != ref.u)[:5]
    assert got.residuals.tobytes() == ref.residuals.tobytes(), (got.residuals, ref.residuals)


# uneven over two GPUs: 37 rows (19 + 18), 19 planes (10 + 9); 68 columns take the 16-byte
# vector sweep, 67 the scalar one
SHAPES = [(37, 68), (37, 67), (19, 12, 16), (19, 10, 13)]
SWEEPS = [1, 2, 5, 7]  # with check_every=5: one sweep, two, exactly check_every, odd past it


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exchange", ["p2p", "nccl"])
@pytest.mark.parametrize("overlap", [True, False])
@pytest.mark.parametrize("iters", SWEEPS)
@pytest.mark.parametrize("variant", [None, "fused"])
def test_two_gpus_match_one_gpu_bitwise(shape, dtype, exchange, overlap, iters, variant):
    need_gpus(2, f"the {exchange} halo exchange against one GPU")
    need_exchange(exchange, "the halo exchange against one GPU")
    f, u0 = problem(shape, dtype)
    got = mg.jacobi(f, u0, h=0.5, iters=iters, check_every=5, gpus=[0, 1], exchange=exchange,
                    overlap=overlap, variant=variant)
    assert got.slabs[0][1] - got.slabs[0][0] != got.slabs[1][1] - got.slabs[1][0]  # uneven
    assert got.variant == (variant or ("temporal" if len(shape) == 2 else "fused"))
    assert_bitwise(got, single_gpu(f, u0, 0.5, iters=iters, check_every=5, variant=variant))


@pytest.mark.gpu
@pytest.mark.parametrize("depth", [1, 2, 4, 8])
@pytest.mark.parametrize("exchange", ["p2p", "nccl"])
@pytest.mark.parametrize("overlap", [True, False])
def test_temporal_passes_of_every_depth_match_one_gpu_bitwise(depth, exchange, overlap):
    """Halos as deep as a pass: 13 sweeps checked every 5 are passes of depth, the check's last
    one shorter; 77 x 150 spans several 64 x 32 tiles each way, 40 rows per slab several bands."""
    need_gpus(2, f"temporal passes of depth {depth} over two GPUs")
    need_exchange(exchange, "temporal passes over two GPUs")
    f, u0 = problem((77, 150), np.float32, seed=depth)
    for iters, check_every in [(13, 5), (16, 16), (1, 1)]:
        got = mg.jacobi(f, u0, h=0.5, iters=iters, check_every=check_every, gpus=[0, 1],
                        exchange=exchange, overlap=overlap, variant="temporal", depth=depth)
        assert got.depth == depth
        assert_bitwise(got, single_gpu(f, u0, 0.5, iters=iters, check_every=check_every,
                                       variant="temporal", depth=depth))


@pytest.mark.gpu
@pytest.mark.parametrize("exchange", ["p2p", "nccl"])
def test_temporal_passes_on_slabs_thinner_than_depth_run_shallower(exchange):
    need_gpus(2, "temporal passes on thin slabs")
    need_exchange(exchange, "temporal passes on thin slabs")
    f, u0 = problem((5, 70), np.float64, seed=9)  # slabs of 3 and 2 rows: passes of 2 sweeps
    got = mg.jacobi(f, u0, iters=11, check_every=4, gpus=[0, 1], exchange=exchange, depth=8)
    assert got.depth == 2
    assert_bitwise(got, single_gpu(f, u0, 1.0, iters=11, check_every=4, variant="temporal"))


@pytest.mark.gpu
@pytest.mark.parametrize("exchange", ["p2p", "nccl"])
def test_every_gpu_and_thin_slabs_match_one_gpu_bitwise(exchange):
    need_gpus(2, "slabs of one row on every GPU")
    need_exchange(exchange, "slabs of one row")
    count = gpu_count()
    f, u0 = problem((count, 40), np.float64)  # one row per GPU: the thinnest allowed
    got = mg.jacobi(f, u0, iters=3, check_every=2, gpus=list(range(count)), exchange=exchange)
    assert_bitwise(got, single_gpu(f, u0, 1.0, iters=3, check_every=2))
    f, u0 = problem((count + 2, 40), np.float32)
    got = mg.jacobi(f, u0, iters=9, check_every=4, exchange=exchange)
    assert_bitwise(got, single_gpu(f, u0, 1.0, iters=9, check_every=4))


@pytest.mark.gpu
@pytest.mark.parametrize("exchange", ["p2p", "nccl"])
@pytest.mark.parametrize("ndim", [2, 3])
def test_tol_stops_where_one_gpu_stops(exchange, ndim):
    need_gpus(2, "tol over two GPUs")
    need_exchange(exchange, "tol over two GPUs")
    shape = (33, 32) if ndim == 2 else (17, 16, 16)
    f, u0 = problem(shape, np.float64, seed=3)
    ref = single_gpu(f, u0, 1.0, tol=1e-3, check_every=10)
    assert ref.converged and ref.sweeps < 100000  # the test means something
    got = mg.jacobi(f, u0, tol=1e-3, check_every=10, gpus=[0, 1], exchange=exchange)
    assert_bitwise(got, ref)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(37, 68), (19, 10, 13), (2, 5), (1, 7)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_gpu_is_gl_jacobi_bitwise(shape, dtype):
    f, u0 = problem(shape, dtype)
    for exchange in ("p2p", "nccl"):  # one GPU: no exchange, whatever it says
        got = mg.jacobi(f, u0, h=0.25, iters=7, check_every=3, gpus=[0], exchange=exchange)
        assert got.gpus == (0,) and got.slabs == [(0, shape[0])]
        assert_bitwise(got, single_gpu(f, u0, 0.25, iters=7, check_every=3))


@pytest.mark.gpu
def test_one_gpu_never_opens_nccl():
    code = ("import numpy as np, gpulab as gl\n"
            "r = gl.multi.jacobi(np.ones((9, 9), np.float32), iters=3, gpus=[0], "
            "exchange='nccl')\n"
            "assert r.sweeps == 3 and not gl.multi._loaded, gl.multi._loaded\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code],
                         env=mg.child_env(child_env(GPULAB_NCCL="/nonexistent/libnccl.so.2")),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


@pytest.mark.gpu
def test_device_arrays_come_back_as_device_arrays_and_times_are_reported():
    f, u0 = problem((21, 32), np.float32)
    got = mg.jacobi(gl.to_device(f), gl.to_device(u0), iters=4, check_every=2, gpus=[0])
    assert isinstance(got.u, gl.DeviceArray)
    assert_bitwise(got.get(), single_gpu(f, u0, 1.0, iters=4, check_every=2))
    t = got.timing
    assert t["total_ms"] > 0 and t["compute_ms"] > 0 and t["allreduce_ms"] >= 0
    assert len(t["compute_ms_per_gpu"]) == 1 and t["exchange_ms"] >= 0
    assert t["exposed_ms"] == max(0.0, t["total_ms"] - t["compute_ms"])


@pytest.mark.gpu
def test_a_numpy_grid_goes_through_the_first_gpu_or_slab_by_slab_without_room(monkeypatch):
    f, u0 = problem((37, 68), np.float32)
    gpus = [0, 1] if gpu_count() >= 2 else [0]
    ref = single_gpu(f, u0, 0.5, iters=11, check_every=10)
    staged = mg.jacobi(f, u0, h=0.5, iters=11, check_every=10, gpus=gpus)
    assert isinstance(staged.u, np.ndarray)
    assert staged.timing["upload_ms"] > 0 and staged.timing["download_ms"] > 0
    assert_bitwise(staged, ref)

    def no_room(*args, **kwargs):
        raise gl.OutOfMemoryError("out of memory (a test's)")
    monkeypatch.setattr(gl, "to_device", no_room)
    by_slab = mg.jacobi(f, u0, h=0.5, iters=11, check_every=10, gpus=gpus)
    assert "upload_ms" not in by_slab.timing
    assert_bitwise(by_slab, ref)


@pytest.mark.gpu
def test_zero_sweeps_return_u0_and_an_empty_grid_runs():
    f, u0 = problem((12, 16), np.float64)
    got = mg.jacobi(f, u0, iters=0, gpus=[0])
    assert got.u.tobytes() == u0.tobytes() and got.sweeps == 0 and len(got.residuals) == 0
    empty = mg.jacobi(np.zeros((0, 5)), iters=3, check_every=2, gpus=[0])
    assert empty.u.shape == (0, 5) and list(empty.residuals) == [0.0, 0.0]


@pytest.mark.gpu
def test_scaling_of_the_real_solve_reports_its_components():
    need_gpus(2, "scaling over two GPUs")
    need_exchange("p2p", "scaling over two GPUs")
    f, u0 = problem((258, 256), np.float32)

    def run(size, gpus):
        return mg.jacobi(f, u0, iters=20, gpus=list(range(gpus)), exchange="p2p")

    table = mg.scaling(run, [256], gpus=[1, 2], trials=2)
    assert all(r["compute_ms"] > 0 and r["total_ms"] > 0 for r in table)
    assert table[1]["exchange_ms"] > 0
    assert all(0 <= r["exposed_ms"] <= r["total_ms"] for r in table)
