"""The multi lab: several GPUs, with NCCL doing the communication.

    gl.devices()                           # the GPUs and their links; bandwidth=True measures
    gl.multi.reduce(x, op="sum")           # x split over every visible GPU, one NCCL all-reduce
    gl.multi.reduce([p0, p1], op="max")    # parts given, one per GPU (NumPy or DeviceArrays)
    parts = gl.multi.scatter(x)            # DeviceArrays, part i on GPU i (uneven allowed)
    gl.multi.allreduce(parts2, op="sum")   # same-shape arrays, one per GPU: in place

Two ways to drive the GPUs:

* One process, every GPU (notebooks): the functions above, with no `comm=`. They build one
  NCCL communicator per set of GPUs (ncclCommInitAll, one stream per GPU) on first use and keep
  it for the process; `gl.multi.close()` destroys them (also run at exit).
* One process per GPU (torchrun, mpirun, across nodes): rank 0 makes `gl.multi.unique_id()`
  (128 bytes) and hands it to every rank by any means (torch.distributed.broadcast_object_list,
  mpi4py's bcast, a multiprocessing Queue); each rank then builds
  `comm = gl.multi.communicator(uid, rank, world_size, device)` (ncclCommInitRank) and passes
  `comm=comm` to reduce and allreduce with its own part. `comm.close()` destroys it.

NCCL is not linked: libnccl.so.2 is opened on first use, from GPULAB_NCCL when set (that path
only), else from pip's nvidia-nccl-cu13 wheel (nvidia/nccl/lib/libnccl.so.2 in a sys.path
folder), else the system's (the soname libnccl.so.2, through the dynamic loader). Where none
opens, NcclNotFoundError says what was tried and how to install it; the rest of gpulab does not
need NCCL. Work on a single GPU never opens NCCL (see reduce and allreduce).

Arrays on GPUs other than 0: gpulab's own arrays live on device 0; `scatter`, `to_device(x,
device)` and `empty(shape, dtype, device)` make DeviceArrays on any GPU (memory from that
GPU's stream-ordered pool). Give them to this module's functions and `to_host`, not to the
other labs' ops, which run on device 0. This module's functions take what gl takes: NumPy
arrays, gpulab DeviceArrays, and CuPy arrays, PyTorch tensors or anything with
__cuda_array_interface__ or CUDA DLPack, on any GPU (its device found from the pointer); they
first wait for every stream of that GPU, so whatever its producer queued is done.

Keep NCCL_NVLS_ENABLE=0 (NVLink multicast off) as the lent machines set it: `child_env()` is
the environment to give child processes, with it kept.
"""

import atexit
import os
import sys
import threading
import time

import numpy as np

from .. import _core
from ..bench import _is_device
from ..table import Table
from .stencil import JacobiResult

# gl.devices at gpulab's top level; the rest is reached as gl.multi.*.
EXPORTS = ("devices",)

INSTALL_HINT = ("install it with `pip install nvidia-nccl-cu13` (gpulab then finds the wheel's "
                "nvidia/nccl/lib/libnccl.so.2 on sys.path), or set GPULAB_NCCL to the path of a "
                "libnccl.so.2")


class NcclNotFoundError(RuntimeError):
    """libnccl.so.2 could not be opened; the message lists what was tried and how to install."""


# ---------------------------------------------------------------- finding and opening NCCL

def nccl_candidates(environ=None, paths=None):
    """[(where, path)] in the order NCCL is looked for: GPULAB_NCCL alone when it is set and not
    empty; else each `nvidia/nccl/lib/libnccl.so.2` under the folders of `paths` (default
    sys.path: where pip puts the nvidia-nccl-cu13 wheel, in a venv or not) that exists, then the
    soname "libnccl.so.2" for the dynamic loader (LD_LIBRARY_PATH, ldconfig's cache)."""
    environ = os.environ if environ is None else environ
    chosen = environ.get("GPULAB_NCCL", "")
    if chosen:
        return [("GPULAB_NCCL", chosen)]
    found, seen = [], set()
    for folder in (sys.path if paths is None else paths):
        if not folder:
            continue
        path = os.path.join(os.path.abspath(folder), "nvidia", "nccl", "lib", "libnccl.so.2")
        if path not in seen and os.path.isfile(path):
            seen.add(path)
            found.append(("pip wheel", path))
    return found + [("system", "libnccl.so.2")]


_loaded = {}  # {"version": int, "path": str} once NCCL is open
_load_lock = threading.Lock()


def load_nccl():
    """Opens NCCL once for the process and returns its version as a string ("2.28.3"). Raises
    NcclNotFoundError when no candidate opens. Needs no GPU."""
    with _load_lock:
        if not _loaded:
            tried = []
            for where, path in nccl_candidates():
                ok, detail = _core._multi_nccl_open(path)
                if ok:
                    _loaded.update(version=detail, path=path, where=where)
                    break
                tried.append(f"{where} {path}: {detail}")
            else:
                raise NcclNotFoundError(
                    "NCCL (libnccl.so.2) not found; gl.multi needs it for work on several GPUs. "
                    f"Tried: {'; '.join(tried)}. To fix: {INSTALL_HINT}.")
    v = _loaded["version"]
    # NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9 (major*1000 + ... before)
    major, rest = (v // 10000, v % 10000) if v >= 20900 else (v // 1000, v % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def nccl_info():
    """{"version", "path", "where"} of the NCCL in use (opening it if needed)."""
    version = load_nccl()
    return {"version": version, "path": _loaded["path"], "where": _loaded["where"]}


def child_env(env=None):
    """A copy of env (default os.environ) for a child process, with NCCL_NVLS_ENABLE kept: the
    parent's value when it has one, else "0" (NVLink multicast off, as the lent machines set
    it)."""
    out = dict(os.environ if env is None else env)
    out.setdefault("NCCL_NVLS_ENABLE", "0")
    return out


# ---------------------------------------------------------------- communicators

class Communicator:
    """One NCCL rank: `rank` of `world_size`, on `device`, with its own stream there. Made by
    `communicator()` (one process per GPU) or inside this module (one process, every GPU).
    `close()` destroys it (idempotent; also a context manager)."""

    def __init__(self, capsule):
        self._capsule = capsule
        self.rank, self.world_size, self.device = _core._multi_comm_info(capsule)
        self.closed = False

    def close(self):
        if not self.closed:
            self.closed = True
            _core._multi_comm_destroy(self._capsule)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if self.closed:
            raise ValueError("comm is closed")
        return self._capsule

    def __repr__(self):
        state = ", closed" if self.closed else ""
        return (f"gl.multi.Communicator(rank={self.rank}, world_size={self.world_size}, "
                f"device={self.device}{state})")


def unique_id():
    """The 128 bytes (ncclGetUniqueId) that every rank of one group passes to communicator();
    made once, on one rank, and sent to the others."""
    load_nccl()
    return _core._multi_unique_id()


def communicator(unique_id, rank, world_size, device):
    """This process's rank of a group of world_size processes (ncclCommInitRank), on CUDA device
    `device`. Blocks until every rank has joined."""
    if not isinstance(unique_id, (bytes, bytearray)) or len(unique_id) != 128:
        raise TypeError("unique_id must be the 128 bytes of gl.multi.unique_id()")
    world_size = _int_arg("world_size", world_size, 1)
    rank = _int_arg("rank", rank, 0)
    device = _int_arg("device", device, 0)
    if rank >= world_size:
        raise ValueError(f"rank must lie in [0, world_size), got {rank} of {world_size}")
    load_nccl()
    return Communicator(_core._multi_comm_init_rank(bytes(unique_id), rank, world_size, device))


_cliques = {}  # {tuple of devices: [Communicator]}, one process driving them all
_cliques_lock = threading.Lock()


def _clique(devices):
    with _cliques_lock:
        comms = _cliques.get(devices)
        if comms is None:
            load_nccl()
            comms = [Communicator(c) for c in _core._multi_comm_init_all(devices)]
            _cliques[devices] = comms
        return comms


def close():
    """Destroys the communicators this process made for its GPUs (made again when needed)."""
    with _cliques_lock:
        cliques = list(_cliques.values())
        _cliques.clear()
    for comms in cliques:
        for comm in comms:
            comm.close()


atexit.register(close)


# ---------------------------------------------------------------- arrays on any GPU

def _int_arg(name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def empty(shape, dtype=np.float32, device=0):
    """An uninitialised DeviceArray on GPU `device`."""
    return _core._multi_empty(shape, dtype, _int_arg("device", device, 0))


def to_device(x, device=0):
    """A copy of the NumPy array x on GPU `device` (a DeviceArray)."""
    x = np.ascontiguousarray(x)
    out = empty(x.shape, x.dtype, device)
    _core._multi_copy(out.device, _address(out), x.ctypes.data, x.nbytes)
    return out


def to_host(a):
    """A NumPy copy of the C-contiguous DeviceArray a, from whichever GPU it lives on."""
    if not isinstance(a, _core.DeviceArray):
        raise TypeError(f"a must be a gpulab.DeviceArray, not {type(a).__name__}")
    out = np.empty(a.shape, a.dtype)
    _core._multi_copy(a.device, out.ctypes.data, _address(a), out.nbytes)
    return out


def _address(a):
    return a.__cuda_array_interface__["data"][0]


def _cai_checked(x, name):
    """(shape, dtype, C-contiguous) that x's __cuda_array_interface__ states, checked for form
    without a GPU; None for an array without one (DLPack alone: checked once imported)."""
    try:
        cai = x.__cuda_array_interface__
    except AttributeError:
        return None
    if not isinstance(cai, dict) or not isinstance(cai.get("shape"), tuple) or \
            "typestr" not in cai or not isinstance(cai.get("data"), tuple):
        raise ValueError(f"{name} has a malformed __cuda_array_interface__")
    shape = tuple(int(n) for n in cai["shape"])
    try:
        dtype = np.dtype(cai["typestr"])
    except TypeError:
        raise TypeError(f"{name}: unknown typestr {cai['typestr']!r}") from None
    strides = cai.get("strides")
    contiguous = strides is None or tuple(strides) == _c_strides(shape, dtype.itemsize)
    return shape, dtype, contiguous


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _as_device(x, name):
    """A DeviceArray of the device array x (itself, or a zero-copy view) on whichever GPU it
    lives, with that GPU's streams waited for."""
    return _core._multi_as_device(x, name)


def partition(n, parts):
    """[(start, stop)] of parts contiguous pieces of n elements, as even as they come: the first
    n % parts pieces hold one more (np.array_split's rule); pieces may be empty when n < parts."""
    n, parts = _int_arg("n", n, 0), _int_arg("parts", parts, 1)
    base, extra = divmod(n, parts)
    bounds, start = [], 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def scatter(x, gpus=None):
    """x (flattened; C-contiguous) split by partition() over gpus (default: every visible GPU):
    a list of 1-D DeviceArrays, part i on gpus[i]. x: a NumPy array (copied host to device), or
    a device array on any GPU (copied device to device, never through the host)."""
    if not _is_device(x):
        flat = _flat_host(x, "x")
        gpus = _gpus_arg(gpus)
        return [to_device(flat[a:b], g)
                for (a, b), g in zip(partition(flat.size, len(gpus)), gpus)]
    _cai_checked(x, "x")
    gpus = _gpus_arg(gpus)
    x = _as_device(x, "x")
    if x.__cuda_array_interface__.get("strides") is not None:
        raise ValueError("x must be C-contiguous")
    base, item = _address(x), x.dtype.itemsize
    parts = []
    for (a, b), g in zip(partition(x.size, len(gpus)), gpus):
        part = empty((b - a,), x.dtype, g)
        _core._multi_copy(g, _address(part), base + a * item, (b - a) * item)
        parts.append(part)
    return parts


def _flat_host(x, name):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array, not {type(x).__name__}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    return x.reshape(-1)


def _gpus_arg(gpus, count=None):
    """A tuple of distinct device ordinals; None: every visible GPU (needs the GPU)."""
    if gpus is None:
        return tuple(range(_core._multi_device_count() if count is None else count))
    if isinstance(gpus, (str, bytes)) or not hasattr(gpus, "__iter__"):
        raise TypeError(f"gpus must be a list of device ordinals, not {type(gpus).__name__}")
    gpus = tuple(_int_arg("gpus[i]", g, 0) for g in gpus)
    if not gpus:
        raise ValueError("gpus must not be empty")
    if len(set(gpus)) != len(gpus):
        raise ValueError(f"gpus must be distinct, got {list(gpus)}")
    return gpus


# ---------------------------------------------------------------- all-reduce

# op name -> ncclRedOp_t (nccl.h 2.x; cuda/multi/multi.h)
NCCL_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
# dtype -> ncclDataType_t
NCCL_TYPES = {np.dtype(np.int32): 2, np.dtype(np.int64): 4, np.dtype(np.float32): 7,
              np.dtype(np.float64): 8}


def _op_arg(op, allowed):
    if not isinstance(op, str):
        raise TypeError(f"op must be a str, not {type(op).__name__}")
    if op not in allowed:
        raise ValueError(f"op must be one of {', '.join(allowed)}, got {op!r}")
    return op


def _check_allreduce(arrays, op, comm):
    """The arrays as a list, every argument checked; raises before anything runs."""
    op = _op_arg(op, tuple(NCCL_OPS))
    if _is_device(arrays):
        arrays = [arrays]
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(f"arrays must be a list of device arrays, not {type(arrays).__name__}")
    arrays = list(arrays)
    if not arrays:
        raise ValueError("arrays must not be empty")
    for i, a in enumerate(arrays):
        if not _is_device(a):
            raise TypeError(f"arrays[{i}] must be a device array (gpulab.DeviceArray, CuPy, "
                            f"PyTorch), not {type(a).__name__}")
        _cai_checked(a, f"arrays[{i}]")
    # views share the arrays' memory: the all-reduce lands in the callers' own arrays
    arrays = [_as_device(a, f"arrays[{i}]") for i, a in enumerate(arrays)]
    first = arrays[0]
    if first.dtype not in NCCL_TYPES:
        raise TypeError(f"arrays[0] has dtype {first.dtype}; allreduce takes "
                        f"{', '.join(str(d) for d in NCCL_TYPES)}")
    if op == "avg" and first.dtype.kind != "f":
        raise ValueError(f"op='avg' needs a float dtype, arrays[0] is {first.dtype}")
    for i, a in enumerate(arrays[1:], 1):
        if a.dtype != first.dtype:
            raise TypeError(f"arrays[{i}] has dtype {a.dtype}, arrays[0] {first.dtype}")
        if a.shape != first.shape:
            raise ValueError(f"arrays[{i}] has shape {a.shape}, arrays[0] {first.shape}")
    devices = [a.device for a in arrays]
    if len(set(devices)) != len(devices):
        raise ValueError(f"arrays must each live on a distinct GPU, got devices {devices}")
    if comm is not None:
        if not isinstance(comm, Communicator):
            raise TypeError(f"comm must be a gl.multi.Communicator, not {type(comm).__name__}")
        if len(arrays) != 1:
            raise ValueError(f"with comm=, arrays is this rank's one array, got {len(arrays)}")
        if devices[0] != comm.device:
            raise ValueError(f"arrays[0] lives on device {devices[0]}, comm on {comm.device}")
        comm._handle()
    return arrays


def allreduce(arrays, op="sum", comm=None):
    """All-reduce in place: every array of `arrays` (device arrays of one shape and dtype, each
    on a distinct GPU: DeviceArrays, CuPy arrays, PyTorch tensors) becomes the elementwise op of all
    of them, as NCCL's ncclAllReduce and torch.distributed.all_reduce do; returns the list of the
    same arrays.

    op: "sum", "prod", "min", "max", or "avg" (float dtypes only). dtypes: float32, float64,
    int32, int64 (integers wrap on overflow, as in NumPy).
    One process, several GPUs (comm=None): one NCCL call per GPU in one group, each on its GPU's
    stream after the work that last used the array; returns when all are done. One array (one
    GPU): it already is the result; nothing runs and NCCL is not opened.
    comm= (one process per GPU): `arrays` is this rank's array (or a one-element list) on
    comm.device; every rank of the group must call it.
    Arguments are checked (TypeError, ValueError naming the argument) before anything runs."""
    given = list(arrays) if isinstance(arrays, (list, tuple)) else [arrays]
    arrays = _check_allreduce(arrays, op, comm)
    if comm is None:
        if len(arrays) == 1:
            return given
        comms = _clique(tuple(a.device for a in arrays))
    else:
        comms = [comm]
    _core._multi_allreduce([c._handle() for c in comms], arrays, NCCL_TYPES[arrays[0].dtype],
                           NCCL_OPS[op])
    return given


# ---------------------------------------------------------------- partitioned reduce

REDUCE_OPS = {"sum": (0, NCCL_OPS["sum"]), "min": (1, NCCL_OPS["min"]),
              "max": (2, NCCL_OPS["max"])}
# the reduce lab's dtypes: glc_dtype code, and the dtype of its sum (int32 sums are int64)
REDUCE_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.int32): 2}


def _result_dtype(dtype, op):
    return np.dtype(np.int64) if dtype == np.int32 and op == "sum" else dtype


def _identity(dtype, op):
    """The op's identity in dtype, as 8 bytes: what an empty part contributes."""
    if op == "sum":
        value = 0
    elif dtype.kind == "f":
        value = np.inf if op == "min" else -np.inf
    else:
        info = np.iinfo(dtype)
        value = info.max if op == "min" else info.min
    return np.array([value], dtype).tobytes().ljust(8, b"\0")


def _best_local_reduce():
    """(variant id, block) of the reduce lab's best CUDA variant, from its table."""
    from ..registry import variants
    for v in variants("reduce"):
        if v.best and v.backend == "cuda":
            block = v.tunables.get("block", {})
            return v.id, int(block.get("default", 256)) if isinstance(block, dict) else 256
    raise RuntimeError("the reduce lab has no best CUDA variant")  # pragma: no cover


def _reduce_parts(x):
    """(parts, on_host, dtype): x checked and cut into its parts, nothing run yet."""
    if isinstance(x, np.ndarray):
        return [_flat_host(x, "x")], True, x.dtype
    if _is_device(x):
        _cai_checked(x, "x")
        parts = [_as_device(x, "x")]
    elif isinstance(x, (list, tuple)):
        parts = list(x)
        if not parts:
            raise ValueError("x must not be an empty list of parts")
    else:
        raise TypeError("x must be a NumPy array, a device array or a list of parts, not "
                        f"{type(x).__name__}")
    on_host = isinstance(parts[0], np.ndarray)
    for i, p in enumerate(parts):
        if on_host and isinstance(p, np.ndarray):
            parts[i] = _flat_host(p, f"x[{i}]")
        elif not on_host and _is_device(p):
            _cai_checked(p, f"x[{i}]")
            # C-contiguous: checked by _multi_reduce before anything runs
            parts[i] = _as_device(p, f"x[{i}]")
        else:
            raise TypeError(f"x[{i}] must be a {'NumPy array' if on_host else 'device array'} "
                            f"like x[0], not {type(p).__name__}")
        if parts[i].dtype != parts[0].dtype:
            raise TypeError(f"x[{i}] has dtype {parts[i].dtype}, x[0] {parts[0].dtype}")
    if not on_host:
        devices = [p.device for p in parts]
        if len(set(devices)) != len(devices):
            raise ValueError(f"the parts of x must each live on a distinct GPU, got {devices}")
    return parts, on_host, parts[0].dtype


def reduce(x, op="sum", gpus=None, comm=None):
    """The reduce of all the data of x over several GPUs: each GPU reduces its part with the
    reduce lab's best variant (gl.variants("reduce"), the one variant=None picks), then one
    NCCL all-reduce combines the GPUs' values. Returns a NumPy scalar.

    x: a NumPy array, split over `gpus` (default: every visible GPU) by partition(): contiguous
    pieces as even as they come (uneven when the length does not divide); a device array
    (DeviceArray, CuPy, PyTorch), reduced on its own GPU; or a list of parts, NumPy arrays
    (part i on gpus[i]) or device arrays (each on its own GPU; gpus must be None);
    parts may have different lengths, and empty parts add the op's identity.
    op: "sum", "min" or "max"; dtypes float32, float64, int32, with gl.reduce's result types
    (int32 sums are int64). The sum of nothing is 0; min and max of nothing raise ValueError.
    float sums differ from NumPy's by rounding (another order of additions).
    One GPU (gpus of one, one part, or one visible GPU): the local reduce alone; NCCL is not
    opened. comm= (one process per GPU): x is this rank's part (NumPy, or a DeviceArray on
    comm.device) and the result is the reduce over every rank's part; every rank must call it.
    Arguments are checked (TypeError, ValueError naming the argument) before anything runs."""
    op = _op_arg(op, tuple(REDUCE_OPS))
    parts, on_host, dtype = _reduce_parts(x)
    if dtype not in REDUCE_DTYPES:
        raise TypeError(f"x has dtype {dtype}; reduce takes float32, float64 or int32")
    if comm is not None:
        if not isinstance(comm, Communicator):
            raise TypeError(f"comm must be a gl.multi.Communicator, not {type(comm).__name__}")
        if gpus is not None:
            raise ValueError("gpus must be None with comm= (the rank's GPU is comm.device)")
        if len(parts) != 1:
            raise ValueError(f"with comm=, x is this rank's one part, got {len(parts)}")
        if not on_host and parts[0].device != comm.device:
            raise ValueError(f"x lives on device {parts[0].device}, comm on {comm.device}")
        comm._handle()
        devices = (comm.device,)
    elif on_host:
        if len(parts) == 1:  # one array: split it over the GPUs
            gpus = _gpus_arg(gpus)
            flat = parts[0]
            parts = [flat[a:b] for a, b in partition(flat.size, len(gpus))]
        else:
            gpus = _gpus_arg(gpus, count=len(parts) if gpus is None else None)
            if len(gpus) != len(parts):
                raise ValueError(f"one part per GPU: {len(parts)} parts, gpus {list(gpus)}")
        devices = gpus
    else:
        if gpus is not None:
            raise ValueError("gpus must be None when the parts are DeviceArrays (each runs "
                             "on its own GPU)")
        devices = tuple(p.device for p in parts)
    total = sum(p.size for p in parts)
    if total == 0 and op != "sum":
        raise ValueError(f"{op} of an empty array (no identity to return)")
    result = _result_dtype(dtype, op)
    if comm is None and len(devices) == 1:
        comms = None  # one GPU: the local reduce alone, no NCCL
    else:
        comms = [c._handle() for c in ([comm] if comm is not None else _clique(devices))]
    variant, block = _best_local_reduce()
    reduce_op, nccl_op = REDUCE_OPS[op]
    raw = _core._multi_reduce(comms, devices[0], parts, on_host, REDUCE_DTYPES[dtype], variant,
                              block, reduce_op, _nccl_type(result), nccl_op,
                              _identity(result, op))
    return np.frombuffer(raw[:result.itemsize], result)[0]


def _nccl_type(dtype):
    return NCCL_TYPES[np.dtype(dtype)]


# ---------------------------------------------------------------- topology

def _link(i, j, access, atomics):
    if i == j:
        return "self"
    if not access[i][j]:
        return "host"
    return "NVLink" if atomics[i][j] else "PCIe"


def devices(bandwidth=False, nbytes=256 << 20, repeat=5):
    """The visible GPUs, one row each (device, name, total_memory in bytes, pci_bus_id,
    compute_capability, peers: the devices it reaches directly, links: {device: kind}), and in
    .meta the n x n matrices "p2p_access" (cudaDeviceCanAccessPeer), "link", and
    "performance_rank" (cudaDevP2PAttrPerformanceRank: lower is faster, relative within one
    machine).

    The link kind comes from CUDA alone: "NVLink" where peer access comes with native atomics
    (cudaDevP2PAttrNativeAtomicSupported, which CUDA gives over NVLink, NVSwitch and C2C but not
    over PCIe), "PCIe" where peer access has no native atomics, "host" where the GPUs cannot
    reach each other and copies go through host memory. Its limits: it does not count links or
    tell NVLink generations, an NVSwitch reads as NVLink, and a PCIe fabric with atomics
    enabled between peers would read as NVLink; `nvidia-smi topo -m` tells the full story.

    bandwidth=True also measures meta["bandwidth_gbps"][i][j]: GB/s (1e9 bytes/s) of an
    nbytes copy from GPU i to GPU j (cudaMemcpyPeerAsync, peer access enabled where allowed;
    the diagonal is a copy within the GPU, which reads and writes), the median of `repeat`
    timed copies after a warm-up. Raises NoDeviceError without a GPU."""
    if not isinstance(bandwidth, bool):
        raise TypeError(f"bandwidth must be a bool, not {type(bandwidth).__name__}")
    nbytes = _int_arg("nbytes", nbytes, 1)
    repeat = _int_arg("repeat", repeat, 1)
    count = _core._multi_device_count()
    access, atomics, rank = _core._multi_topology(count)
    links = [[_link(i, j, access, atomics) for j in range(count)] for i in range(count)]
    rows = []
    for d in range(count):
        info = _core.device_info(d)
        rows.append({"device": d, "name": info["name"], "total_memory": info["total_memory"],
                     "pci_bus_id": info["pci_bus_id"],
                     "compute_capability": "%d.%d" % tuple(info["compute_capability"]),
                     "peers": [j for j in range(count) if access[d][j]],
                     "links": {j: links[d][j] for j in range(count) if j != d}})
    meta = {"p2p_access": access, "link": links, "performance_rank": rank}
    if bandwidth:
        meta.update(bandwidth_gbps=_core._multi_bandwidth(count, nbytes, repeat),
                    bandwidth_bytes=nbytes, bandwidth_repeat=repeat)
    return Table(rows, meta=meta)


# ---------------------------------------------------------------- Jacobi over slabs

EXCHANGES = {"p2p": 0, "nccl": 1}  # enum glc_multi_exchange


def slabs(n0, parts):
    """[(start, stop)] of the rows (2D) or planes (3D) of axis 0 that each of `parts` GPUs owns
    in gl.multi.jacobi: partition()'s rule (the first n0 % parts slabs one thicker). Every slab
    must own at least one row or plane: the halo is one deep, so a GPU's ghost row must be its
    neighbour's own row. Raises ValueError for thinner slabs; one GPU takes any n0."""
    n0, parts = _int_arg("n0", n0, 0), _int_arg("parts", parts, 1)
    if parts > 1 and n0 < parts:
        raise ValueError(f"f: axis 0 has {n0} rows/planes, fewer than the {parts} GPUs: each "
                         "slab needs at least one (the halo is one row or plane deep); use "
                         "fewer gpus or a taller grid")
    return partition(n0, parts)


class MultiJacobiResult(JacobiResult):
    """What gl.multi.jacobi returns: a gl.JacobiResult (u, sweeps, residuals, converged;
    unpacks as (u, residuals); get()) that also says where the time went:

    timing: {"call_ms": the host clock around the whole call, from entry to u available where f was
    (synchronized): what the caller waits for; "scatter_ms": the host clock around placing the grid
    (slabs allocated, f and u0 copied in, waited for); "gather_ms": around copying u out of the
    slabs (waited for); "total_ms": the host clock around the solve (first sweep to last check, the
    scatter and the gather excluded), "compute_ms" and "exchange_ms": the slowest GPU's sum of its
    sweeps and of its halo transfers (CUDA events on its compute and copy streams; with overlap they
    run at once, so they may add up to more than total_ms), "allreduce_ms": the host clock around
    the checks' combines of the GPUs' residuals, "exposed_ms": total_ms less compute_ms, the time
    the solve spent beyond the slowest GPU's sweeps (the exchanges and checks that did not hide
    under them, and host gaps), "compute_ms_per_gpu", "exchange_ms_per_gpu"; for a NumPy f
    staged on the first GPU also "upload_ms" (entry to f and u0 there) and "download_ms" (u
    back to the host)}; gpus, exchange,
    overlap, slabs, variant, depth (the sweeps of a temporal pass as run, 0 for fused): how it ran.

    With exchange="nccl" and overlap, exchange_ms is long (on 2 H200 at 16384^2, 54 ms of an
    82 ms solve) while exposed_ms stays small (2 ms): NCCL's send/recv is a kernel, timed from
    the moment its stream may start it to its end, and it runs beside the interior sweep,
    sharing the SMs and waiting for the peer's kernel. exposed_ms is what it cost."""

    def __init__(self, u, sweeps, residuals, converged, timing, gpus, exchange, overlap,
                 bounds, variant="fused", depth=0):
        super().__init__(u, sweeps, residuals, converged)
        self.timing, self.gpus, self.exchange = timing, gpus, exchange
        self.overlap, self.slabs = overlap, bounds
        self.variant, self.depth = variant, depth

    def get(self):
        """The same result with u copied to the host."""
        u = self.u.get() if hasattr(self.u, "get") else self.u
        return MultiJacobiResult(u, self.sweeps, self.residuals, self.converged, self.timing,
                                 self.gpus, self.exchange, self.overlap, self.slabs,
                                 self.variant, self.depth)

    def __repr__(self):
        return (f"MultiJacobiResult(sweeps={self.sweeps}, checks={len(self.residuals)}, "
                f"converged={self.converged}, gpus={list(self.gpus)}, exchange={self.exchange!r}, "
                f"overlap={self.overlap}, variant={self.variant!r}, "
                f"call_ms={self.timing.get('call_ms', float('nan')):.3f}, "
                f"total_ms={self.timing['total_ms']:.3f})")


def _grid_arg(x, name):
    """(grid, on a device, shape, dtype): x as a NumPy array or a DeviceArray (a zero-copy view
    of a CuPy or PyTorch array, on its own GPU), checked: a 2-D or 3-D float32/float64
    C-contiguous grid. What a device array's __cuda_array_interface__ states is checked before
    any GPU work."""
    on_device = _is_device(x)
    if not on_device and not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array or a device array (gpulab.DeviceArray, "
                        "or CuPy, PyTorch and others through __cuda_array_interface__ or DLPack), "
                        f"not {type(x).__name__}")
    stated = _cai_checked(x, name) if on_device else None
    if on_device and stated is None:
        x = _as_device(x, name)  # DLPack alone: its shape and dtype once imported
    shape, dtype, contiguous = stated or (tuple(x.shape), np.dtype(x.dtype), None)
    if len(shape) not in (2, 3):
        raise ValueError(f"{name} must be 2-D or 3-D, got shape {shape}")
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"{name} has dtype {dtype}; jacobi takes float32 or float64")
    if contiguous is None:
        contiguous = x.__cuda_array_interface__.get("strides") is None if on_device else \
            x.flags.c_contiguous
    if not contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    return x, on_device, tuple(int(n) for n in shape), dtype


def _peer_access_checked(gpus):
    """Raises ValueError naming exchange when neighbouring GPUs cannot reach each other."""
    access, _, _ = _core._multi_topology(max(gpus) + 1)
    for a, b in zip(gpus, gpus[1:]):
        if not (access[a][b] and access[b][a]):
            raise ValueError(f"exchange='p2p' needs peer access between neighbouring GPUs; "
                             f"GPUs {a} and {b} have none (cudaDeviceCanAccessPeer): use "
                             "exchange='nccl'")


def jacobi(f, u0=None, h=1.0, iters=None, tol=None, check_every=50, gpus=None, exchange="p2p",
           overlap=True, variant=None, depth=None):
    """gl.jacobi on several GPUs: the same solve (-laplace_h(u) = f, Dirichlet faces from u0,
    sweeps, checks every `check_every` sweeps and after the last, `tol`) with the grid split
    along axis 0 into slabs (slabs(): as even as they come, uneven allowed, at least one row or
    plane each), slab i on gpus[i] (default: every visible GPU) with ghost rows/planes on either
    side. Returns a MultiJacobiResult: gl.jacobi's fields, bitwise equal to
    gl.jacobi(f, ..., variant=variant) (each cell gets the same arithmetic: the sweeps are the
    stencil lab's, run on row ranges), plus `timing`.

    variant: as gl.jacobi's default, None is "temporal" in 2D (passes of `depth` sweeps a launch,
    halos `depth` rows deep, exchanged once a pass; depth as gl.jacobi's: 1, 2, 4, 8, default 4,
    lowered to the thinnest slab's rows) and "fused" in 3D (one sweep a launch, halos one
    row/plane deep); either may be named (or its id in gl.variants("jacobi")).

    f and u0: NumPy arrays or device arrays on any GPU (DeviceArray, CuPy, PyTorch: anything
    with __cuda_array_interface__ or CUDA DLPack); u0=None: zeros, made on the GPUs. u comes back
    where f was: NumPy for NumPy; for a device array, a new DeviceArray on f's GPU (as gl.jacobi
    returns a DeviceArray for CuPy or PyTorch input). A device f is split device to device
    (each GPU copies its slab and ghost rows straight from f's GPU, at once; a slab on f's own
    GPU reads f in place) and u gathered the same way, never through the host. A NumPy f goes
    to the first GPU through gpulab's pinned staging ring (as gl.to_device copies), is split and
    gathered there device to device, and u comes back through the ring; where the grid does
    not fit on the first GPU as well, each GPU copies its slab from the host, from a host
    thread of its own, at once, and u is gathered straight into the NumPy result.

    exchange: how the halos travel after each pass: "p2p" (cudaMemcpyPeerAsync between
    neighbouring GPUs, which need peer access; ValueError otherwise) or "nccl"
    (ncclSend/ncclRecv in one group). overlap=True: each GPU sweeps its two edge bands (as deep
    as the halo) first, then its interior while the halos travel (S3 10.1); False: the whole
    slab, then the exchange. A temporal pass that checks no residual sweeps the whole slab in
    one launch either way, its ghost rows too (the exchange then overwrites them): the row
    range that bands need costs the kernel about 10%. The residual at a check:
    each GPU's max |u_new - u| of the checked sweep, combined exactly (p2p: read on the host,
    the max taken there; nccl: NCCL's max all-reduce), scaled by 2 ndim / h^2 as gl.jacobi does.
    One GPU: no exchange, no NCCL opened, whatever `exchange` says.
    Arguments are checked (ValueError, TypeError naming the argument) before any GPU work."""
    start = time.perf_counter()
    from .stencil import _jacobi_checked, _jacobi_sweeps
    if not isinstance(exchange, str) or exchange not in EXCHANGES:
        raise ValueError(f"exchange must be 'p2p' or 'nccl', got {exchange!r}")
    if not isinstance(overlap, bool):
        raise TypeError(f"overlap must be a bool, not {type(overlap).__name__}")
    f, f_on_device, shape, dtype = _grid_arg(f, "f")
    asked = dict(variant=variant, depth=depth)  # as given: a staged call checks them again
    variant, depth = _jacobi_variant(variant, depth, len(shape))
    if u0 is not None:
        u0, u0_on_device, u0_shape, u0_dtype = _grid_arg(u0, "u0")
        if u0_shape != shape or u0_dtype != dtype:
            raise ValueError(f"u0 must have f's shape {shape} and dtype {dtype}, got "
                             f"{u0_shape} {u0_dtype}")
    h, check_every = _jacobi_checked(f, u0, h, iters, tol, check_every)
    sweeps = int(_jacobi_sweeps(f, u0, h, iters, tol))
    gpus = _gpus_arg(gpus)  # None: every visible GPU (NoDeviceError without one)
    bounds = slabs(shape[0], len(gpus))
    if not f_on_device and (u0 is None or not u0_on_device):
        staged = _staged_on_first_gpu(
            f, u0, start, gpus, dict(h=h, iters=iters, tol=tol, check_every=check_every,
                                     exchange=exchange, overlap=overlap, **asked))
        if staged is not None:
            return staged
    # device arrays as DeviceArray views on their own GPUs, that GPU waited for
    f = _as_device(f, "f") if f_on_device else f
    if u0 is not None and u0_on_device:
        u0 = _as_device(u0, "u0")
    # u: where f is; on a GPU, a new array there that the slabs are gathered into
    out = empty(shape, dtype, f.device) if f_on_device else None
    comms = None
    if len(gpus) > 1:
        if exchange == "p2p":
            _peer_access_checked(gpus)
        else:
            comms = [c._handle() for c in _clique(gpus)]
    starts = tuple(a for a, _ in bounds) + (shape[0],)
    u, residuals, done, checks, converged, timing, depth = _core._multi_jacobi(
        gpus, comms, EXCHANGES[exchange], overlap, depth, f, u0, starts, float(h), sweeps,
        float(tol) if tol is not None else 0.0, int(check_every), out)
    timing["call_ms"] = (time.perf_counter() - start) * 1e3  # u is in place: the gather waited
    timing["compute_ms_per_gpu"] = timing.pop("compute_ms")
    timing["exchange_ms_per_gpu"] = timing.pop("exchange_ms")
    timing["compute_ms"] = max(timing["compute_ms_per_gpu"])
    timing["exchange_ms"] = max(timing["exchange_ms_per_gpu"])
    timing["exposed_ms"] = max(0.0, timing["total_ms"] - timing["compute_ms"])
    return MultiJacobiResult(u, done, residuals[:checks].copy(), converged, timing, gpus,
                             exchange, overlap, bounds, variant, depth)


def _staged_on_first_gpu(f, u0, start, gpus, arguments):
    """gl.multi.jacobi of a NumPy grid through gpulab's staging ring: f (and u0) copied to the
    first GPU, split and gathered from there device to device, u copied back. On 2 H200s at
    16384^2 float32 the ring moves the GiB in 25 ms where the driver's pageable copies, a host
    thread a GPU, took 75-105. None where the first GPU is not the one the ring copies to, or
    where the grid does not fit there as well (OutOfMemoryError): the caller then copies each
    slab from the host itself."""
    from .. import to_device
    try:
        f_device = to_device(f)
        if f_device.device != gpus[0]:
            return None
        u0_device = None if u0 is None else to_device(u0)
        uploaded = time.perf_counter()
        result = jacobi(f_device, u0_device, gpus=gpus, **arguments)
    except _core.OutOfMemoryError:
        return None
    downloading = time.perf_counter()
    result.u = result.u.get()
    done = time.perf_counter()
    result.timing["upload_ms"] = (uploaded - start) * 1e3
    result.timing["download_ms"] = (done - downloading) * 1e3
    result.timing["call_ms"] = (done - start) * 1e3
    return result


def _jacobi_variant(variant, depth, ndim):
    """(name, depth for _core: 0 for fused) of gl.multi.jacobi's variant and depth arguments,
    checked against gl.variants("jacobi") (ValueError naming the argument)."""
    from ..registry import variants
    table = {v.name: v for v in variants("jacobi")}
    runs = ("fused", "temporal")
    if variant is None:
        variant = "temporal" if ndim == 2 else "fused"
    by_id = {v.id: name for name, v in table.items()}
    if isinstance(variant, (int, np.integer)) and not isinstance(variant, bool):
        variant = by_id.get(int(variant), variant)
    if variant not in runs:
        raise ValueError(f"variant must be one of {list(runs)} (or their ids "
                         f"{[table[n].id for n in runs]}): the rungs gl.multi.jacobi runs on "
                         f"slabs, got {variant!r}")
    if variant == "temporal" and ndim != 2:
        raise ValueError("variant 'temporal' is for 2-D grids only; f is 3-D: use 'fused'")
    if variant == "fused":
        if depth is not None:
            raise ValueError("depth is the temporal variant's: fused sweeps once a launch")
        return variant, 0
    tunable = table["temporal"].tunables["depth"]
    if depth is None:
        depth = tunable["default"]
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or \
            int(depth) not in tunable["values"]:
        raise ValueError(f"depth must be one of {tunable['values']}, got {depth!r}")
    return variant, int(depth)


# ---------------------------------------------------------------- scaling

COMPONENTS = ("compute_ms", "exchange_ms", "allreduce_ms", "exposed_ms")


def weak_size(size, gpus):
    """The problem weak scaling gives `gpus` GPUs when one GPU gets `size`: a shape (tuple or
    list) with axis 0 (the slab axis) times gpus, else the number size * gpus."""
    if isinstance(size, (tuple, list)):
        return (size[0] * gpus,) + tuple(size[1:])
    return size * gpus


def _timing_of(returned, elapsed_ms):
    """{"call_ms", "total_ms", and each of COMPONENTS it reports} of one call of scaling()'s
    fn; call_ms: the call's own, else the harness's clock around fn."""
    timing = getattr(returned, "timing", returned)
    if isinstance(timing, dict):
        out = {k: float(timing[k]) for k in ("call_ms", "total_ms") + COMPONENTS
               if timing.get(k) is not None}
        out.setdefault("total_ms", elapsed_ms)
        out.setdefault("call_ms", elapsed_ms)
        return out
    if returned is None:
        return {"call_ms": elapsed_ms, "total_ms": elapsed_ms}
    raise TypeError("fn must return None, a dict of times in ms (total_ms, compute_ms, "
                    "exchange_ms, allreduce_ms, exposed_ms) or an object with such a .timing (a "
                    f"MultiJacobiResult), not {type(returned).__name__}")


def scaling(fn, sizes, gpus=(1, 2), mode="strong", trials=5, warmup=1):
    """Strong or weak scaling of fn over GPU counts, as a Table (one row per size and count)
    with a .plot().

    The contract: fn(size, gpus=N) runs the work once on N GPUs and returns either a
    MultiJacobiResult (its .timing is used: call_ms, the whole call, and total_ms and the
    components compute_ms, exchange_ms, allreduce_ms, exposed_ms, all from the solve itself), a
    dict with those keys (any subset; total_ms or call_ms missing: the harness's clock), or None
    (the harness times the call with time.perf_counter, and no components). It is called
    `warmup` times untimed, then `trials` times; every time in the table is the median over the
    trials.

    Columns: call_ms (what a caller waits for: the scatter and gather included) and
    call_speedup, its T(1)/T(N); total_ms (the solve alone) with speedup and efficiency.

    mode="strong": the same `size` for every N; S(N) = T(1) / T(N), E(N) = S(N) / N.
    mode="weak": `size` is one GPU's share: fn gets weak_size(size, N) (axis 0 of a shape
    times N: the slab axis; a number times N); E(N) = T(1) / T(N) (1 is perfect) and
    S(N) = N E(N), the scaled speedup. gpus must include 1 (the baseline)."""
    import time
    if not callable(fn):
        raise TypeError(f"fn must be callable, not {type(fn).__name__}")
    if mode not in ("strong", "weak"):
        raise ValueError(f"mode must be 'strong' or 'weak', got {mode!r}")
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"sizes must be a list of sizes, not {type(sizes).__name__}")
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sizes must not be empty")
    if isinstance(gpus, (str, bytes)) or not hasattr(gpus, "__iter__"):
        raise TypeError(f"gpus must be a list of GPU counts, not {type(gpus).__name__}")
    counts = [_int_arg("gpus[i]", n, 1) for n in gpus]
    if 1 not in counts:
        raise ValueError(f"gpus must include 1 (the baseline T(1)), got {counts}")
    if len(set(counts)) != len(counts):
        raise ValueError(f"gpus must be distinct, got {counts}")
    counts.sort()
    trials = _int_arg("trials", trials, 1)
    warmup = _int_arg("warmup", warmup, 0)
    rows = []
    for size in sizes:
        baseline = None
        for n in counts:
            given = weak_size(size, n) if mode == "weak" else size
            samples = []
            for k in range(warmup + trials):
                start = time.perf_counter()
                returned = fn(given, gpus=n)
                elapsed_ms = (time.perf_counter() - start) * 1e3
                if k >= warmup:
                    samples.append(_timing_of(returned, elapsed_ms))
            row = {"size": size, "gpus": n, "problem": given, "mode": mode}
            for key in ("call_ms", "total_ms") + COMPONENTS:
                values = [s[key] for s in samples if key in s]
                row[key] = float(np.median(values)) if len(values) == len(samples) else None
            if n == 1:
                baseline, call_baseline = row["total_ms"], row["call_ms"]
            ratio = baseline / row["total_ms"] if row["total_ms"] > 0 else float("inf")
            row["speedup"] = ratio if mode == "strong" else n * ratio
            row["efficiency"] = row["speedup"] / n
            call_ratio = call_baseline / row["call_ms"] if row["call_ms"] > 0 else float("inf")
            row["call_speedup"] = call_ratio if mode == "strong" else n * call_ratio
            rows.append(row)
    meta = {"mode": mode, "trials": trials, "warmup": warmup, "gpus": counts, "sizes": sizes,
            "statistic": "median", "time": "ms",
            "speedup": "T(1)/T(N)" if mode == "strong" else "N T(1)/T(N)",
            "efficiency": "S(N)/N"}
    return ScalingTable(rows, meta)


class ScalingTable(Table):
    """scaling()'s Table, with plot()."""

    def plot(self, ax=None):
        """Speedup (left) and the component times (right, stacked bars per size and GPU
        count) with matplotlib; returns the figure. Needs matplotlib."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError("ScalingTable.plot() needs matplotlib, which is not installed: "
                              "pip install matplotlib (the numbers are in the Table itself)") from e
        if ax is None:
            fig, (ax_speed, ax_parts) = plt.subplots(1, 2, figsize=(11, 4))
        else:
            ax_speed, ax_parts = ax
            fig = ax_speed.figure
        counts = self.meta["gpus"]
        for size in self.meta["sizes"]:
            rows = [r for r in self if r["size"] == size]
            ax_speed.plot([r["gpus"] for r in rows], [r["speedup"] for r in rows], "o-",
                          label=f"{size}")
        ax_speed.plot(counts, counts, "k:", label="ideal")
        ax_speed.set_xlabel("GPUs")
        ax_speed.set_ylabel("speedup " + self.meta["speedup"])
        ax_speed.set_title(f"{self.meta['mode']} scaling")
        ax_speed.legend()
        labels = [f"{r['size']}\n{r['gpus']} GPU" for r in self]
        # compute and exposed add up to the total; exchange and all-reduce run under the
        # sweeps when they overlap, so they are stacked only where exposed is unknown.
        parts = (("compute_ms", "exposed_ms") if all(r.get("exposed_ms") is not None for r in self)
                 else COMPONENTS[:3])
        bottom = np.zeros(len(self))
        for key in parts:
            values = np.array([r.get(key) or 0.0 for r in self])
            if values.any():
                ax_parts.bar(labels, values, bottom=bottom, label=key[:-3])
                bottom += values
        ax_parts.plot(labels, [r["total_ms"] for r in self], "kD", label="total (solve)")
        ax_parts.plot(labels, [r["call_ms"] for r in self], "k^", label="call (wall)")
        ax_parts.set_ylabel("ms (median)")
        ax_parts.set_title("where the time goes")
        ax_parts.legend()
        fig.tight_layout()
        return fig
