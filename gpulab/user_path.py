"""The user's call, timed as its user sees it: every op's default call (no variant=) on each
container a user passes (NumPy, CuPy, PyTorch, a gpulab DeviceArray; scipy.sparse and
cupyx.scipy.sparse matrices for the sparse ops), host wall-clock from the call until the result
is available where the input was, beside the peer's natural call on the same data and the best
rung's time on the benchmark path (gl.bench: DeviceArray inputs, CUDA events, L2 flushed).

benchmarks/user_path.py saves the table (benchmarks/results/user_path.json); the main job
(python -m gpulab) prints it on the GPU."""

import statistics
import time

import numpy as np

from . import _core, peers, registry
from ._op import OPS
from .bench import bench

HOST = ("numpy", "scipy")
DENSE = ("numpy", "cupy", "torch", "gpulab")
SPARSE = DENSE + ("scipy", "cupyx")
# the library whose natural call is each container's peer ("cpu": NumPy or SciPy)
PEER_OF = {"numpy": "cpu", "scipy": "cpu", "cupy": "cupy", "cupyx": "cupy", "torch": "torch",
           "gpulab": "cupy"}


def wall_ms(call, finish=None, budget_s=1.0, min_repeat=3, max_repeat=50, cold_ok=True):
    """Host wall-clock of call() until its result is available (finish(result) waits for it:
    a stream synchronize; None for host results), in ms: {median_ms, min_ms, samples, cold}. The
    first call warms up (CuPy compiles its kernels then, gpulab converts a scipy or cupyx matrix
    once) and is not a sample, except for a host call (finish None) slower than budget_s where
    cold_ok: a CPU peer at a GPU size, whose first call is as slow as the next, is timed once (cold:
    True). gpulab's own calls pass cold_ok=False: their first call may convert. Then calls are timed
    until budget_s is spent: at least one, min_repeat where the
    budget allows, at most max_repeat."""
    def one():
        t0 = time.perf_counter()
        result = call()
        if finish is not None:
            finish(result)
        return (time.perf_counter() - t0) * 1e3

    first = one()
    if cold_ok and finish is None and first > budget_s * 1e3:
        return {"median_ms": first, "min_ms": first, "samples": 1, "cold": True}
    samples, end = [], time.perf_counter() + budget_s
    while not samples or (len(samples) < max_repeat and (
            time.perf_counter() < end or (len(samples) < min_repeat and
                                          sum(samples) < budget_s * 1e3))):
        samples.append(one())
    return {"median_ms": statistics.median(samples), "min_ms": min(samples),
            "samples": len(samples), "cold": False}


def finisher(container):
    """What waits for a result given to `container`'s user: nothing for host results; for device
    inputs gpulab's stream, where the op ran and its DeviceArray result lives. The container
    library's stream needs no wait of its own: gpulab's stream was ordered after it."""
    if container in HOST:
        return None
    return lambda _: _core.synchronize()


def peer_finisher(lib):
    """What waits for a device peer's result: its library's synchronize."""
    if lib == "cupy":
        import cupy
        return lambda _: cupy.cuda.get_current_stream().synchronize()
    import torch
    return lambda _: torch.cuda.synchronize()


def to_container(value, container):
    """value (an op example's argument: NumPy, a gl.CSR on the host, or a plain parameter) as
    `container`'s user holds it. Arrays of 2 elements or fewer are parameters (mandelbrot's
    limits) and stay NumPy."""
    from .labs.sparse import CSR
    if isinstance(value, CSR):
        if container == "scipy":
            import scipy.sparse as sp
            return sp.csr_matrix((value.data, value.indices, value.indptr), shape=value.shape)
        if container == "cupyx":
            import cupy
            import cupyx.scipy.sparse as cs
            return cs.csr_matrix((cupy.asarray(value.data), cupy.asarray(value.indices),
                                  cupy.asarray(value.indptr)), shape=value.shape)
        return value if container == "numpy" else value.to_device()
    if not isinstance(value, np.ndarray) or value.size <= 2 or container in HOST:
        return value
    if container in ("cupy", "cupyx"):
        import cupy
        return cupy.asarray(value)
    if container == "torch":
        import torch
        return torch.from_numpy(value).cuda()
    return _core.to_device(value)


def _scipy(A):
    return to_container(A, "scipy")


def _jacobi_numpy(f, u0, h, iters):
    a, b = u0.copy(), u0.copy()
    h2f = (h * h) * f
    for _ in range(iters):
        b[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] +
                                h2f[1:-1, 1:-1])
        a, b = b, a
    return a


def _cg_scipy(A, b, x0=None, rtol=0.0, atol=0.0, maxiter=None):
    import scipy.sparse.linalg as sl
    m = _scipy(A)
    inv = 1.0 / m.diagonal()
    pre = sl.LinearOperator(m.shape, matvec=lambda v: inv * v, dtype=m.dtype)
    return lambda: sl.cg(m, b, x0=x0, rtol=rtol, atol=atol, maxiter=maxiter, M=pre)


def _ndimage_mode(boundary):
    from .labs.stencil import NDIMAGE_MODES
    return NDIMAGE_MODES.get(boundary, "constant")


def _ndimage(name):
    import scipy.ndimage as nd
    return getattr(nd, name)


# op -> (how the NumPy/SciPy user writes it, setup(*example args) -> zero-argument call).
# Ops missing here have no natural CPU peer (the concepts demos, nbody's N^2 temporaries,
# mandelbrot's escape loop).
CPU_PEERS = {
    "saxpy": ("a * x + y", lambda a, x, y: lambda: a * x + y),
    "matadd": ("A + B", lambda A, B: lambda: A + B),
    "reduce": ("np.sum(x)", lambda x: lambda: np.sum(x)),
    "dot": ("np.dot(x, y)", lambda x, y: lambda: np.dot(x, y)),
    "norm2": ("np.linalg.norm(x)", lambda x: lambda: np.linalg.norm(x)),
    "counter": ("np.count_nonzero(x)", lambda x: lambda: np.count_nonzero(x)),
    "sin": ("np.sin(x)", lambda x: lambda: np.sin(x)),
    "lookup": ("np.take(table, idx, mode='clip')",
               lambda t, i: lambda: np.take(t, i, mode="clip")),
    "scan": ("np.cumsum(x)", lambda x: lambda: np.cumsum(x)),
    "compact": ("x[mask]", lambda x, m: lambda: x[m]),
    "nonzero": ("np.flatnonzero(x)", lambda x: lambda: np.flatnonzero(x)),
    "histogram": ("np.bincount(x, minlength=bins) (integer x from 0), else np.histogram",
                  lambda x, bins=10: (lambda: np.bincount(x, minlength=bins))
                  if x.dtype.kind in "iu" else (lambda: np.histogram(x, bins))),
    "histogram_rgb": ("np.bincount per channel", lambda img: lambda: np.stack(
        [np.bincount(img[..., c].ravel(), minlength=256) for c in range(3)])),
    "sort": ("np.sort(x) (keys only)", lambda x: lambda: np.sort(x)),
    "argsort": ("np.argsort(x)", lambda x: lambda: np.argsort(x)),
    "sort_pairs": ("o = np.argsort(keys); keys[o], values[o]",
                   lambda k, v: lambda: (lambda o: (k[o], v[o]))(np.argsort(k))),
    "matvec": ("A @ x", lambda A, x: lambda: A @ x),
    "matmul": ("A @ B", lambda A, B: lambda: A @ B),
    "transpose": ("np.ascontiguousarray(A.T)", lambda A: lambda: np.ascontiguousarray(A.T)),
    "spmv": ("scipy.sparse csr_matrix A @ x", lambda A, x: (lambda m: lambda: m @ x)(_scipy(A))),
    "spmm": ("scipy.sparse csr_matrix A @ B", lambda A, B: (lambda m: lambda: m @ B)(_scipy(A))),
    "cg": ("scipy.sparse.linalg.cg, Jacobi preconditioner as a LinearOperator", _cg_scipy),
    "stencil": ("scipy.ndimage.correlate(u, weights, mode=the boundary's ndimage mode)",
                lambda u, w, boundary="zero": lambda: _ndimage("correlate")(
                    u, np.asarray(w, u.dtype), mode=_ndimage_mode(boundary))),
    "jacobi": ("NumPy slicing, one sweep a line", lambda f, u0, h, iters: lambda: _jacobi_numpy(
        f, u0, h, iters)),
    "gaussian": ("scipy.ndimage.gaussian_filter(img, sigma, axes=(0, 1))",
                 lambda img, s: lambda: _ndimage("gaussian_filter")(img, s, axes=(0, 1))),
    "box": ("scipy.ndimage.uniform_filter(img, size, axes=(0, 1))",
            lambda img, s: lambda: _ndimage("uniform_filter")(img, s, axes=(0, 1))),
    "filter2d": ("scipy.ndimage.correlate(img, kernel)",
                 lambda img, k: lambda: _ndimage("correlate")(
                     img, np.asarray(k, img.dtype).reshape(
                         np.shape(k) + (1,) * (img.ndim - 2)))),
}

# what the device peers call, for the saved table (the op's peers: gpulab/labs/<lab>.py)
DEVICE_PEER_NOTES = {
    ("sort", "torch"): "torch.sort(x, stable=True).values: torch has no keys-only sort, it "
                       "computes the indices too (stable=False as well)",
    ("sort", "cupy"): "cupy.sort(x): keys only (Thrust, whatever the accelerators)",
    ("jacobi", "cupy"): "one cupy.ElementwiseKernel launch per sweep over the interior",
    ("cg", "cupy"): "cupyx.scipy.sparse.linalg.cg, Jacobi preconditioner as a LinearOperator",
}


def containers(name, gpu):
    """The containers op `name`'s user may pass: sparse ops take scipy/cupyx matrices too; an op
    without an array input (mandelbrot) has one row, "none"."""
    spec = OPS[name].__gpulab_op__
    args = spec.example(64, np.random.default_rng(0))
    if not any(isinstance(a, np.ndarray) and a.size > 2 for a in args) and \
            type(args[0]).__name__ != "CSR":
        return ["none"]
    kinds = SPARSE if type(args[0]).__name__ == "CSR" else DENSE
    if not gpu:
        return [k for k in kinds if k in HOST]
    return [k for k in kinds if k in HOST or k in ("gpulab", "none") or
            peers.available("torch" if k == "torch" else "cupy")]


def _device_peer(name, container, spec, dev_args):
    lib = PEER_OF[container]
    if container == "gpulab" and "cupy" not in spec.peers:
        lib = "torch"
    if lib not in spec.peers or not peers.available(lib):
        return None
    call = spec.peers[lib](*dev_args)
    how = DEVICE_PEER_NOTES.get((name, lib), f"gpulab/labs peer {lib} of {name}")
    return lib, how, call, peer_finisher(lib)


def op_rows(name, n, gpu, budget_s, rng, progress=None, keep=None, only=None):
    """The rows of op `name` at size n: per container, the default call and its peer, both
    wall-clock, and the best rung (benchmark path) with the gap. budget_s: the op's whole time
    budget, shared by its measurements. keep: a dict that receives the op's example arguments."""
    fn, spec = OPS[name], OPS[name].__gpulab_op__
    host_args = spec.example(n, rng)
    if keep is not None:
        keep[name] = host_args
    kinds = [k for k in containers(name, gpu) if only is None or k in only or k == "none"]
    # the best rung's events (and on the GPU its wall-clock call), then a default and a peer a kind
    per = budget_s / (2 * len(kinds) + (2 if gpu else 1))
    best = registry.best(name, "cuda" if gpu else "cpu")
    dev_args = [to_container(a, "gpulab") for a in host_args] if gpu else host_args
    best_wall_ms = None
    try:
        r = bench(fn, *dev_args, variant=best.id, budget_s=per)
        best_ms = r.median_ms
        if gpu:  # the same rung as its user would time it: what launch and synchronize add
            best_wall_ms = wall_ms(lambda: fn(*dev_args, variant=best.id), finisher("gpulab"),
                                   per, cold_ok=False)["median_ms"]
    except Exception as e:  # noqa: BLE001 (reported in the row)
        best_ms, best_error = None, f"{type(e).__name__}: {e}"
    rows = []
    for kind in kinds:
        row = {"op": name, "container": kind, "n": n, "best_variant": best.name,
               "best_ms": best_ms}
        if best_wall_ms is not None and kind not in HOST:
            row["best_wall_ms"] = best_wall_ms
        if best_ms is None:
            row["best_error"] = best_error
        args = [to_container(a, "numpy" if kind == "none" else kind) for a in host_args]
        finish = finisher(("gpulab" if gpu else "numpy") if kind == "none" else kind)
        try:
            t = wall_ms(lambda: fn(*args), finish, per, cold_ok=False)
            row.update(default_ms=t["median_ms"], default_samples=t["samples"])
        except Exception as e:  # noqa: BLE001 (a call the user makes that fails is a finding)
            row.update(default_ms=None, default_error=f"{type(e).__name__}: {e}")
        if row["default_ms"] and best_ms:
            row["gap"] = row["default_ms"] / best_ms
            why = gap_why(row)
            if why:
                row["gap_why"] = why
        peer = None
        if kind in HOST and name in CPU_PEERS:
            how, setup = CPU_PEERS[name]
            peer = (how.split(".")[0].split()[0] if how.startswith("scipy") else "numpy", how,
                    setup(*host_args), None)
        elif kind not in HOST and kind != "none":
            peer = _device_peer(name, kind, spec, dev_args)
        if peer is not None:
            lib, how, call, peer_finish = peer
            row.update(peer=lib, peer_how=how)
            try:
                t = wall_ms(call, peer_finish, per)
                row["peer_ms"] = t["median_ms"]
                if row["default_ms"]:
                    row["peer_over_ours"] = t["median_ms"] / row["default_ms"]
            except Exception as e:  # noqa: BLE001
                row.update(peer_ms=None, peer_error=f"{type(e).__name__}: {e}")
        rows.append(row)
        if progress:
            progress(f"{name} [{kind}] default {_ms(row.get('default_ms'))} best "
                     f"{_ms(best_ms)} peer {row.get('peer', '-')} {_ms(row.get('peer_ms'))}")
    return rows


def _ms(v):
    return "-" if v is None else f"{v:.3f} ms"


# A device row's default call more than this over the best rung's event time gets its gap
# taken apart (gap_why)
GAP_LINE = 1.05


def gap_why(row):
    """What a device row's gap past GAP_LINE is made of, from the same run's figures: the best
    rung called by name on DeviceArrays, wall-clock (best_wall_ms), against its event time is
    the host's launch and synchronize; the default call against that is the call's own (the
    container's import, the default's choice of rung). None within the line, or for host rows."""
    wall = row.get("best_wall_ms")
    if wall is None or row.get("gap") is None or row["gap"] <= GAP_LINE:
        return None
    launch = (wall - row["best_ms"]) * 1e3
    own = (row["default_ms"] - wall) * 1e3
    verdict = ("the default call is within 5% of the best rung's wall-clock call"
               if row["default_ms"] <= GAP_LINE * wall else
               "the default call is more than 5% over the best rung's wall-clock call")
    return (f"{launch:+.0f} us launch and synchronize (best rung by name, wall-clock "
            f"{wall:.3f} ms), {own:+.0f} us the call's own: {verdict}")


COLUMNS = ("op", "container", "default_ms", "best_ms", "best_wall_ms", "gap", "peer", "peer_ms",
           "peer_over_ours")


def table(rows):
    """The printed table: op, container, default ms, best-rung ms (events) and the same rung's
    wall-clock call, gap (default / best), peer, peer ms, peer / ours (> 1: gpulab's default
    call is faster); then each gap past GAP_LINE taken apart."""
    from .table import text_table

    def cell(v):
        return "-" if v is None else f"{v:.3g}" if isinstance(v, float) else str(v)
    text = text_table(list(COLUMNS), [[cell(r.get(c)) for c in COLUMNS] for r in rows])
    whys = [f"  {r['op']} [{r['container']}]: {r['gap_why']}" for r in rows if r.get("gap_why")]
    if whys:
        text += f"\ngaps past {GAP_LINE}x, taken apart:\n" + "\n".join(whys)
    return text


def user_path_rows(ops, gpu, budget_s=1.0, scale=1.0, progress=None, keep=None, rng=None,
                   only=None):
    """op_rows for each op of `ops` at its demo size ("gpu" or "cpu") times scale."""
    rng = np.random.default_rng(12345) if rng is None else rng
    rows = []
    for name in ops:
        n = max(1, int(OPS[name].__gpulab_op__.demo_size["gpu" if gpu else "cpu"] * scale))
        rows += op_rows(name, n, gpu, budget_s, rng, progress, keep, only)
    return rows

