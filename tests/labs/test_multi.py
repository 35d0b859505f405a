"""The multi lab: NCCL found at run time or a clear error, arguments checked before anything runs,
and, on GPUs, allreduce and the partitioned reduce against NumPy float64 references for every op and
dtype with uneven partitions, in one process and in two processes (one per GPU). With one GPU the
degenerate cases run, and the tests that need two GPUs skip, saying so."""

import math
import multiprocessing
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import gpulab as gl
from conftest import GPU, child_env

mg = gl.multi
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
nogpu = pytest.mark.skipif(GPU, reason="checks the behaviour without a GPU")


def run_python(code, **env):
    """Runs code in a fresh interpreter (NCCL is opened once per process) that imports this
    gpulab, with env added and NCCL_NVLS_ENABLE kept (gl.multi.child_env)."""
    return subprocess.run([sys.executable, "-c", code], env=mg.child_env(child_env(**env)),
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------- finding NCCL (no GPU needed)

def test_the_wheel_is_found_on_sys_path_before_the_soname(tmp_path):
    lib = tmp_path / "nvidia" / "nccl" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnccl.so.2").write_bytes(b"")
    found = mg.nccl_candidates(environ={}, paths=["", str(tmp_path), str(tmp_path / "none"),
                                                  str(tmp_path)])
    assert found == [("pip wheel", str(lib / "libnccl.so.2")), ("system", "libnccl.so.2")]


def test_gpulab_nccl_overrides_every_other_place(tmp_path):
    assert mg.nccl_candidates(environ={"GPULAB_NCCL": "/x/libnccl.so.2"}, paths=[str(tmp_path)]) \
        == [("GPULAB_NCCL", "/x/libnccl.so.2")]
    # empty: as if unset
    assert mg.nccl_candidates(environ={"GPULAB_NCCL": ""}, paths=[]) == [("system", "libnccl.so.2")]


def test_a_missing_nccl_says_how_to_install_and_the_rest_of_gpulab_works():
    code = ("import numpy as np, gpulab as gl\n"
            "assert gl.reduce(np.arange(5.0), variant='serial') == 10.0\n"
            "try:\n    gl.multi.unique_id()\n"
            "except gl.multi.NcclNotFoundError as e:\n    print('ERROR', e)\n"
            "try:\n    gl.multi.reduce([np.ones(3), np.ones(4)], gpus=[0, 1])\n"
            "except gl.multi.NcclNotFoundError as e:\n    print('REDUCE', e)\n")
    out = run_python(code, GPULAB_NCCL="/nonexistent/libnccl.so.2")
    assert out.returncode == 0, out.stderr
    error = out.stdout.split("ERROR ", 1)[1]
    assert "pip install nvidia-nccl-cu13" in error and "GPULAB_NCCL" in error
    assert "/nonexistent/libnccl.so.2" in error and "No such file" in error
    assert "REDUCE NCCL (libnccl.so.2) not found" in out.stdout


def test_a_file_that_is_not_nccl_is_refused_with_the_loaders_reason(tmp_path):
    fake = tmp_path / "libnccl.so.2"
    fake.write_bytes(b"not a library")
    out = run_python("import gpulab as gl\ntry:\n    gl.multi.load_nccl()\n"
                     "except gl.multi.NcclNotFoundError as e:\n    print(e)\n",
                     GPULAB_NCCL=str(fake))
    assert out.returncode == 0, out.stderr
    assert str(fake) in out.stdout and "pip install nvidia-nccl-cu13" in out.stdout


def test_an_nccl_that_opens_reports_its_version():
    try:
        info = mg.nccl_info()
    except mg.NcclNotFoundError as e:
        pytest.skip(f"no NCCL on this machine, could not check loading: {e}")
    assert re.fullmatch(r"2\.\d+\.\d+", info["version"]), info
    assert len(mg.unique_id()) == 128


def _nccl_header():
    for folder in sys.path + ["/usr/local/cuda/include", "/usr/include"]:
        for path in (os.path.join(folder, "nvidia", "nccl", "include", "nccl.h"),
                     os.path.join(folder, "nccl.h")):
            if os.path.isfile(path):
                return path
    return None


def test_the_abi_values_match_ncclh():
    header = _nccl_header()
    if header is None:
        pytest.skip("no nccl.h here (pip's nvidia-nccl-cu13 or the CUDA toolkit's): could not "
                    "compare gpulab's ncclRedOp_t and ncclDataType_t values with NCCL's")
    with open(header) as f:
        text = f.read()

    def value(name):
        return int(re.search(rf"\b{name}\s*=\s*(\d+)", text).group(1))

    for op, name in {"sum": "ncclSum", "prod": "ncclProd", "max": "ncclMax", "min": "ncclMin",
                     "avg": "ncclAvg"}.items():
        assert mg.NCCL_OPS[op] == value(name), op
    for dtype, name in {np.int32: "ncclInt32", np.int64: "ncclInt64", np.float32: "ncclFloat32",
                        np.float64: "ncclFloat64"}.items():
        assert mg.NCCL_TYPES[np.dtype(dtype)] == value(name), dtype
    assert int(re.search(r"NCCL_UNIQUE_ID_BYTES\s+(\d+)", text).group(1)) == 128


def test_child_env_keeps_nvlink_multicast_off():
    assert mg.child_env({})["NCCL_NVLS_ENABLE"] == "0"
    assert mg.child_env({"NCCL_NVLS_ENABLE": "0", "A": "b"}) == {"NCCL_NVLS_ENABLE": "0", "A": "b"}
    if "NCCL_NVLS_ENABLE" in os.environ:  # the lent machines set it: kept as it is
        assert mg.child_env()["NCCL_NVLS_ENABLE"] == os.environ["NCCL_NVLS_ENABLE"]


# ---------------------------------------------------------------- partitions and arguments

@pytest.mark.parametrize("n, parts", [(10, 3), (1, 3), (0, 2), (1000003, 2), (7, 7), (8, 1)])
def test_partition_is_contiguous_and_as_even_as_array_split(n, parts):
    bounds = mg.partition(n, parts)
    assert [b - a for a, b in bounds] == [len(p) for p in np.array_split(np.arange(n), parts)]
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(bounds[i][1] == bounds[i + 1][0] for i in range(parts - 1))


@pytest.mark.parametrize("call, error, words", [
    (lambda: mg.allreduce([]), ValueError, "arrays must not be empty"),
    (lambda: mg.allreduce(np.ones(3)), TypeError, "arrays must be a list"),
    (lambda: mg.allreduce([np.ones(3)]), TypeError, "arrays[0] must be a device array"),
    (lambda: mg.allreduce([], op="median"), ValueError, "op must be one of"),
    (lambda: mg.allreduce([], op=1), TypeError, "op must be a str"),
    (lambda: mg.reduce(np.ones(4), op="prod"), ValueError, "op must be one of"),
    (lambda: mg.reduce(np.ones(4, np.float16)), TypeError, "x has dtype float16"),
    (lambda: mg.reduce([]), ValueError, "x must not be an empty list"),
    (lambda: mg.reduce("abc"), TypeError, "x must be a NumPy array"),
    (lambda: mg.reduce(np.ones((4, 4))[:, ::2]), ValueError, "x must be C-contiguous"),
    (lambda: mg.reduce([np.ones(3), [1.0]]), TypeError, "x[1] must be a NumPy array"),
    (lambda: mg.reduce([np.ones(3), np.ones(3, np.float32)]), TypeError, "x[1] has dtype"),
    (lambda: mg.reduce(np.ones(4), gpus=[0, 0]), ValueError, "gpus must be distinct"),
    (lambda: mg.reduce(np.ones(4), gpus=[]), ValueError, "gpus must not be empty"),
    (lambda: mg.reduce(np.ones(4), gpus=[-1]), ValueError, "gpus[i] must be >= 0"),
    (lambda: mg.reduce(np.ones(4), gpus="01"), TypeError, "gpus must be a list"),
    (lambda: mg.reduce([np.ones(3), np.ones(2)], gpus=[0]), ValueError, "one part per GPU"),
    (lambda: mg.reduce(np.ones(0), op="min", gpus=[0]), ValueError, "min of an empty array"),
    (lambda: mg.reduce(np.ones(3), comm="rank0"), TypeError, "comm must be"),
    (lambda: mg.communicator(b"x" * 127, 0, 2, 0), TypeError, "unique_id must be"),
    (lambda: mg.communicator(b"x" * 128, 2, 2, 0), ValueError, "rank must lie in"),
    (lambda: mg.communicator(b"x" * 128, 0, 0, 0), ValueError, "world_size must be >= 1"),
    (lambda: mg.communicator(b"x" * 128, 0, 2, 1.0), TypeError, "device must be an int"),
    (lambda: mg.devices(bandwidth=1), TypeError, "bandwidth must be a bool"),
    (lambda: mg.devices(nbytes=0), ValueError, "nbytes must be >= 1"),
])
def test_bad_arguments_are_refused_before_anything_runs(call, error, words):
    with pytest.raises(error) as caught:
        call()
    assert words in str(caught.value)


@nogpu
def test_without_a_gpu_devices_and_scatter_raise_nodeviceerror():
    with pytest.raises(gl.NoDeviceError):
        gl.devices()
    with pytest.raises(gl.NoDeviceError):
        mg.scatter(np.ones(10))
    with pytest.raises(gl.NoDeviceError):
        mg.reduce(np.ones(10), gpus=[0])


# ---------------------------------------------------------------- on GPUs

def gpu_count():
    return gl._core._multi_device_count() if GPU else 0


def need_gpus(k, what):
    if gpu_count() < k:
        pytest.skip(f"needs {k} GPUs, {gpu_count()} visible: could not check {what}")


def need_nccl(what):
    try:
        mg.load_nccl()
    except mg.NcclNotFoundError as e:
        pytest.skip(f"no NCCL, could not check {what}: {e}")


ALLREDUCE_DTYPES = [np.float32, np.float64, np.int32, np.int64]
ALLREDUCE_OPS = ["sum", "prod", "min", "max", "avg"]


def allreduce_inputs(dtype, op, count, shape, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        # prod: factors near 1, so that the product keeps its precision
        make = (lambda: rng.uniform(0.5, 1.5, shape)) if op == "prod" else \
            (lambda: rng.standard_normal(shape))
    else:
        make = (lambda: rng.integers(-3, 4, shape)) if op == "prod" else \
            (lambda: rng.integers(-1000, 1000, shape))
    return [make().astype(dtype) for _ in range(count)]


def allreduce_reference(xs, op):
    stack = np.stack([x.astype(np.float64) for x in xs])
    return {"sum": stack.sum(0), "prod": stack.prod(0), "min": stack.min(0),
            "max": stack.max(0), "avg": stack.mean(0)}[op]


def assert_allreduce_matches(got, xs, op, dtype):
    ref = allreduce_reference(xs, op)
    if np.dtype(dtype).kind == "i" or op in ("min", "max"):  # exact
        np.testing.assert_array_equal(got, ref.astype(dtype))
        return
    # every combining step rounds once: at most len(xs) roundings, each within eps of the
    # magnitude in play (sum of |x| for sums and means, |product| for products)
    stack = np.abs(np.stack(xs).astype(np.float64))
    scale = {"sum": stack.sum(0), "avg": stack.sum(0) / len(xs), "prod": np.abs(ref)}[op]
    bound = 2 * len(xs) * np.finfo(dtype).eps * scale
    assert np.all(np.abs(got.astype(np.float64) - ref) <= bound), (got, ref)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ALLREDUCE_DTYPES)
@pytest.mark.parametrize("op", ALLREDUCE_OPS)
@pytest.mark.parametrize("shape", [(1001,), (3, 5)])
def test_allreduce_over_every_gpu_matches_numpy(dtype, op, shape):
    need_gpus(2, "an NCCL all-reduce over several GPUs")
    need_nccl("an NCCL all-reduce over several GPUs")
    if op == "avg" and np.dtype(dtype).kind == "i":
        pytest.skip("avg is for float dtypes (ValueError otherwise: tested below)")
    count = gpu_count()
    xs = allreduce_inputs(dtype, op, count, shape)
    arrays = [mg.to_device(x, d) for d, x in enumerate(xs)]
    assert [a.device for a in arrays] == list(range(count))
    out = mg.allreduce(arrays, op)
    assert all(o is a for o, a in zip(out, arrays))  # in place
    for d, a in enumerate(arrays):
        got = mg.to_host(a)
        assert got.dtype == dtype and got.shape == shape
        assert_allreduce_matches(got, xs, op, dtype)


@pytest.mark.gpu
def test_allreduce_of_one_array_is_that_array_and_needs_no_nccl():
    x = np.arange(10, dtype=np.float32)
    a = mg.to_device(x, 0)
    assert mg.allreduce([a], "sum")[0] is a
    np.testing.assert_array_equal(mg.to_host(a), x)


@pytest.mark.gpu
def test_allreduce_refuses_mismatched_arrays_before_running():
    a = mg.to_device(np.arange(4, dtype=np.float32), 0)
    same_device = mg.to_device(np.arange(4, dtype=np.float32), 0)
    with pytest.raises(ValueError, match="distinct GPU"):
        mg.allreduce([a, same_device])
    with pytest.raises(ValueError, match="avg.*float"):
        mg.allreduce([mg.to_device(np.arange(4, dtype=np.int32), 0)], "avg")
    with pytest.raises(TypeError, match="dtype"):
        mg.allreduce([mg.to_device(np.arange(4, dtype=np.uint16), 0)])
    if gpu_count() >= 2:
        with pytest.raises(ValueError, match="shape"):
            mg.allreduce([a, mg.to_device(np.arange(5, dtype=np.float32), 1)])
        with pytest.raises(TypeError, match="dtype"):
            mg.allreduce([a, mg.to_device(np.arange(4, dtype=np.float64), 1)])
    np.testing.assert_array_equal(mg.to_host(a), np.arange(4))  # untouched


REDUCE_DTYPES = [np.float32, np.float64, np.int32]
REDUCE_OPS = ["sum", "min", "max"]


def reduce_input(dtype, n, seed=1):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(n).astype(dtype)
    return rng.integers(-(1 << 30), 1 << 30, n).astype(dtype)  # int32 sums overflow int32


def assert_reduce_matches(got, x, op):
    dtype = x.dtype
    want_dtype = np.int64 if (dtype == np.int32 and op == "sum") else dtype
    assert np.asarray(got).dtype == want_dtype
    if op == "sum":
        if dtype.kind == "i":
            assert got == x.astype(np.int64).sum()
            return
        ref = x.astype(np.float64).sum()
        bound = np.finfo(dtype).eps * (math.log2(x.size + 2) + 2) * np.abs(x.astype(np.float64)).sum()
        assert abs(float(got) - ref) <= bound + 1e-300, (got, ref, bound)
    else:
        assert got == (x.min() if op == "min" else x.max())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("n", [1, 1000003])
def test_partitioned_reduce_over_every_gpu_matches_numpy(dtype, op, n):
    """n = 1 leaves every GPU but one with an empty part (the op's identity)."""
    need_gpus(2, "a reduce partitioned over several GPUs")
    need_nccl("a reduce partitioned over several GPUs")
    x = reduce_input(dtype, n)
    assert_reduce_matches(mg.reduce(x, op), x, op)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_of_uneven_parts_numpy_and_device(dtype, op):
    need_gpus(2, "uneven parts over several GPUs")
    need_nccl("uneven parts over several GPUs")
    count = gpu_count()
    x = reduce_input(dtype, 7 + 100003 * count)
    cuts = [0, 7] + [7 + 100003 * k + k * 11 for k in range(1, count - 1)] + [x.size]
    parts = [x[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    assert len(parts) == count and len({p.size for p in parts}) > 1
    assert_reduce_matches(mg.reduce(parts, op, gpus=list(range(count))), x, op)
    on_gpus = [mg.to_device(p, d) for d, p in enumerate(parts)]
    assert_reduce_matches(mg.reduce(on_gpus, op), x, op)


@pytest.mark.gpu
def test_scatter_places_uneven_parts_on_each_gpu():
    x = np.arange(1000003, dtype=np.float32)
    parts = mg.scatter(x)
    assert [p.device for p in parts] == list(range(gpu_count()))
    assert [p.size for p in parts] == [len(s) for s in np.array_split(x, gpu_count())]
    np.testing.assert_array_equal(np.concatenate([mg.to_host(p) for p in parts]), x)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_one_gpu_degenerates_to_the_local_reduce(dtype, op):
    x = reduce_input(dtype, 100003)
    assert_reduce_matches(mg.reduce(x, op, gpus=[0]), x, op)
    assert_reduce_matches(mg.reduce(mg.to_device(x, 0), op), x, op)
    assert mg.reduce(np.zeros(0, dtype), "sum", gpus=[0]) == 0


@pytest.mark.gpu
def test_one_gpu_runs_without_nccl():
    out = run_python("import numpy as np, gpulab as gl\n"
                     "x = np.arange(1, 101, dtype=np.float64)\n"
                     "print(gl.multi.reduce(x, 'sum', gpus=[0]))\n",
                     GPULAB_NCCL="/nonexistent/libnccl.so.2")
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.split()[-1]) == 5050.0


@pytest.mark.gpu
def test_devices_reports_every_gpu_and_its_links():
    table = gl.devices()
    n = gpu_count()
    assert [r["device"] for r in table] == list(range(n))
    assert all(r["total_memory"] > 0 and re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.0",
                                                       r["pci_bus_id"]) for r in table)
    links = table.meta["link"]
    assert all(links[i][i] == "self" for i in range(n))
    assert all(links[i][j] in ("NVLink", "PCIe", "host") for i in range(n) for j in range(n) if i != j)
    assert all(table.meta["p2p_access"][i][i] == 0 for i in range(n))
    measured = gl.devices(bandwidth=True, nbytes=8 << 20, repeat=3).meta["bandwidth_gbps"]
    assert len(measured) == n and all(len(r) == n and all(v > 0 for v in r) for r in measured)


@pytest.mark.gpu
def test_the_cached_communicators_close_and_come_back():
    need_gpus(2, "closing the communicators of several GPUs")
    need_nccl("closing the communicators of several GPUs")
    x = reduce_input(np.float64, 1000)
    first = mg.reduce(x, "max")
    mg.close()
    assert mg.reduce(x, "max") == first == x.max()


# ---------------------------------------------------------------- two processes, one GPU each

def _rank_main(rank, world, ids, results):
    """One rank: rank 0 makes the unique id and hands it to the others through the queue."""
    try:
        import numpy as np
        import gpulab as gl
        if rank == 0:
            uid = gl.multi.unique_id()
            for _ in range(world - 1):
                ids.put(uid)
        else:
            uid = ids.get(timeout=60)
        comm = gl.multi.communicator(uid, rank, world, device=rank)
        x = (np.arange(1000 + 37 * rank, dtype=np.float64) + rank)  # uneven parts
        sums = gl.multi.reduce(x, "sum", comm=comm)
        maxes = gl.multi.reduce(gl.multi.to_device(x.astype(np.int32), rank), "max", comm=comm)
        a = gl.multi.to_device(np.full(5, rank + 1, np.float32), rank)
        gl.multi.allreduce(a, "prod", comm=comm)
        comm.close()
        results.put((rank, float(sums), int(maxes), gl.multi.to_host(a).tolist(),
                     os.environ.get("NCCL_NVLS_ENABLE"), None))
    except Exception as e:  # reported, not lost in the child
        results.put((rank, None, None, None, None, repr(e)))


@pytest.mark.gpu
def test_two_processes_one_gpu_each(monkeypatch):
    need_gpus(2, "two processes with one GPU each (ncclCommInitRank)")
    need_nccl("two processes with one GPU each (ncclCommInitRank)")
    for key, value in mg.child_env().items():  # the children's environment, NVLS kept off
        if os.environ.get(key) != value:
            monkeypatch.setenv(key, value)
    ctx = multiprocessing.get_context("spawn")
    ids, results = ctx.Queue(), ctx.Queue()
    world = 2
    procs = [ctx.Process(target=_rank_main, args=(r, world, ids, results)) for r in range(world)]
    for p in procs:
        p.start()
    try:
        got = sorted(results.get(timeout=180) for _ in range(world))
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    xs = [np.arange(1000 + 37 * r, dtype=np.float64) + r for r in range(world)]
    for rank, sums, maxes, prods, nvls, error in got:
        assert error is None, f"rank {rank}: {error}"
        assert sums == sum(x.sum() for x in xs)
        assert maxes == max(int(x.max()) for x in xs)
        assert prods == [float(math.factorial(world))] * 5
        assert nvls == "0"


@pytest.mark.gpu
def test_the_other_labs_refuse_arrays_on_other_gpus():
    need_gpus(2, "that ops of device 0 refuse an array on GPU 1")
    a = mg.to_device(np.arange(10, dtype=np.float32), 1)
    with pytest.raises(ValueError, match="lives on device 1"):
        gl.reduce(a)
    np.testing.assert_array_equal(mg.to_host(a), np.arange(10))
