"""The stencil lab: stencils over 1D, 2D and 3D grids with S3's boundary policies, and a Jacobi
solver of the Poisson problem on the device.

    gl.stencil(u, "laplace5")                          # 2D 5-point Laplacian, zero boundary
    gl.stencil(u, w, boundary="periodic")              # any (2r+1)^ndim weights, r = 1..4
    r = gl.jacobi(f, iters=2000, tol=1e-4)             # -laplace(u) = f, u = 0 on the faces
    u, residuals = r                                   # or r.u, r.residuals, r.sweeps, r.converged

A stencil is a correlation (scipy.ndimage.correlate's orientation): out[i] = sum_k w[k]
u[i + k - r]. Boundary policies (S3 6.4), as numpy.pad modes: "zero" = constant 0, "clamp" =
edge, "periodic" = wrap, "reflect" = symmetric (the edge cell repeated, -1 -> 0: what
scipy.ndimage calls "reflect"), "fixed" = a cell closer to an edge than r keeps its value.

NumPy in, NumPy out; device arrays in, DeviceArray out on `stream`. The Jacobi solver runs its
sweep loop on the device and brings back one scalar per check, so it waits for the device at
every check even with device arrays.
"""

import math

import numpy as np

from .. import _core
from .. import peers as _peers
from .._op import Cost, nbytes, numel, op

EXPORTS = ("stencil", "jacobi", "JacobiResult", "named_weights", "BOUNDARIES")

BOUNDARIES = ("zero", "clamp", "periodic", "reflect", "fixed")  # enum glc_boundary's order
# what each policy is called by numpy.pad and by scipy.ndimage / cupyx.scipy.ndimage
PAD_MODES = {"zero": "constant", "clamp": "edge", "periodic": "wrap", "reflect": "symmetric"}
NDIMAGE_MODES = {"zero": "constant", "clamp": "nearest", "periodic": "wrap", "reflect": "reflect"}
TORCH_MODES = {"zero": "constant", "clamp": "replicate", "periodic": "circular",
               "reflect": "reflect"}  # torch's reflect skips the edge: the same work, not the same
DEFAULT_MAX_SWEEPS = 100_000  # when only tol is given
MAX_SWEEPS = 1 << 40
MAX_CHECKS = 1 << 24  # residuals kept on the host


def named_weights(name):
    """The named stencils: "laplace5" (2D), "laplace7" (3D), "box9" (2D 3x3 mean)."""
    if name == "laplace5":
        w = np.zeros((3, 3))
        w[1, :] = w[:, 1] = 1.0
        w[1, 1] = -4.0
        return w
    if name == "laplace7":
        w = np.zeros((3, 3, 3))
        w[1, 1, :] = w[1, :, 1] = w[:, 1, 1] = 1.0
        w[1, 1, 1] = -6.0
        return w
    if name == "box9":
        return np.full((3, 3), 1.0 / 9.0)
    raise ValueError(f"weights: unknown stencil {name!r}; named ones are 'laplace5', 'laplace7', "
                     "'box9', or pass an array")


def _weights(weights, ndim):
    if isinstance(weights, str):
        w = named_weights(weights)
        if w.ndim != ndim:
            raise ValueError(f"weights: {weights!r} is a {w.ndim}-D stencil, u is {ndim}-D")
        return w
    if hasattr(weights, "__cuda_array_interface__") or isinstance(weights, _core.DeviceArray):
        # the kernels take the weights by value: a few numbers, copied here (a wait on the
        # device), so that weights may sit where u does
        from .. import as_device
        weights = as_device(weights).get()
    try:
        w = np.asarray(weights)
    except Exception:
        raise TypeError(f"weights must be an array or a name, not "
                        f"{type(weights).__name__}") from None
    if not (np.issubdtype(w.dtype, np.floating) or np.issubdtype(w.dtype, np.integer)):
        raise TypeError(f"weights must be numbers, got dtype {w.dtype}")
    return np.ascontiguousarray(w, dtype=np.float64)


def _boundary(boundary):
    if not isinstance(boundary, str):
        raise TypeError(f"boundary must be a str, not {type(boundary).__name__}")
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary must be one of {', '.join(map(repr, BOUNDARIES))}; "
                         f"got {boundary!r}")
    return BOUNDARIES.index(boundary)


def _itemsize(a):
    return nbytes(a) // max(numel(a), 1)


# ---------------------------------------------------------------- stencil


def _stencil_cost(u, weights, boundary="zero", **_):
    # u read once and out written once (the least traffic); 2 flops per nonzero weight per cell
    w = _weights(weights, len(u.shape))
    return Cost(bytes=2 * nbytes(u), flops=2 * int(np.count_nonzero(w)) * numel(u))


def _stencil_example(n, rng):
    rows = max(1, math.isqrt(max(n, 1)))
    cols = max(1, n // rows) + 2  # never square, never a power of two
    u = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (3, 3)) * rng.choice([-1.0, 1.0], (3, 3))
    return u, w, "reflect"


def _cupy_stencil(u, weights, boundary="zero", **_):
    import cupyx.scipy.ndimage as ndi
    import cupy
    cu = _peers.as_peer("cupy", u)
    w = cupy.asarray(_weights(weights, cu.ndim), dtype=cu.dtype)
    mode = NDIMAGE_MODES.get(boundary, "constant")
    return lambda: ndi.correlate(cu, w, mode=mode)


def _torch_stencil(u, weights, boundary="zero", **_):
    import torch
    import torch.nn.functional as F
    tu = _peers.as_peer("torch", u)
    w = _weights(weights, tu.ndim)
    r = w.shape[0] // 2
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[tu.ndim]
    tw = torch.as_tensor(w, dtype=tu.dtype, device=tu.device)[None, None]
    x = tu[None, None]
    mode = TORCH_MODES.get(boundary, "constant")
    pad = (r,) * (2 * tu.ndim)
    return lambda: conv(F.pad(x, pad, mode=mode), tw)  # conv is a correlation, like ours


@op("stencil", cost=_stencil_cost, size=lambda u, *a, **_: numel(u), example=_stencil_example,
    demo_size={"gpu": 4096 * 4096, "cpu": 1024 * 1024},
    peers={"cupy": _cupy_stencil, "torch": _torch_stencil})
def stencil(u, weights, boundary="zero", variant=None, stream=None, bx=None, by=None, rows=None):
    """The weights correlated with u, a C-contiguous 1D, 2D or 3D float32/float64 grid: out[i] =
    sum_k weights[k] u[i + k - r], the neighbours outside the grid given by `boundary`.

    `weights`: an array of shape (2r+1,) * u.ndim, r = 1..4 (held in u's dtype), or "laplace5"
    (2D), "laplace7" (3D), "box9" (2D). Only nonzero weights are read, in C order; each cell's
    sum is accumulated in u's dtype. `boundary`: "zero", "clamp", "periodic", "reflect"
    (numpy.pad's "symmetric") or "fixed" (cells within r of an edge keep their input value).
    `variant`: None (the best where it runs), an id or a name from ``gl.variants("stencil")``.
    `bx`, `by`: the CUDA block's threads along x and y (None: 32 x 8 for 2D and 3D grids, a row
    of threads for 1D). `rows`: variant "hopper" only, the rows along y each thread of its 3D
    star kernel owns (1, 2 or 4; None: 1): fewer loads of neighbouring rows, more registers."""
    w = _weights(weights, len(getattr(u, "shape", ())))
    return _core.stencil(u, w, _boundary(boundary), variant, stream, bx, by, rows)


# ---------------------------------------------------------------- jacobi


class JacobiResult:
    """What gl.jacobi returns: `u` (NumPy or DeviceArray, where f was), `sweeps` done,
    `residuals` (NumPy float64, one per check: max |f + laplace_h(u)| over the interior at the
    iterate the checked sweep started from) and `converged` (the last residual <= tol).
    Unpacks as (u, residuals)."""

    def __init__(self, u, sweeps, residuals, converged):
        self.u, self.sweeps, self.residuals, self.converged = u, sweeps, residuals, converged

    def __iter__(self):
        return iter((self.u, self.residuals))

    def get(self):
        """The same result with u copied to the host."""
        u = self.u.get() if hasattr(self.u, "get") else self.u
        return JacobiResult(u, self.sweeps, self.residuals, self.converged)

    def __repr__(self):
        last = f"{self.residuals[-1]:.3g}" if len(self.residuals) else "none"
        return (f"JacobiResult(shape={tuple(self.u.shape)}, sweeps={self.sweeps}, "
                f"last residual={last}, converged={self.converged})")


def _jacobi_sweeps(f, u0=None, h=1.0, iters=None, tol=None, **_):
    return iters if iters is not None else DEFAULT_MAX_SWEEPS


def _jacobi_cost(f, u0=None, h=1.0, iters=None, tol=None, **_):
    # per sweep: u and f read, u_new written (3 x itemsize per cell); 2 ndim + 2 flops per cell
    sweeps = _jacobi_sweeps(f, u0, h, iters, tol)
    cells, ndim = numel(f), len(f.shape)
    return Cost(bytes=3 * _itemsize(f) * cells * sweeps, flops=(2 * ndim + 2) * cells * sweeps)


def _jacobi_example(n, rng):
    rows = max(1, math.isqrt(max(n, 1)))
    cols = max(1, n // rows) + 2
    f = rng.standard_normal((rows, cols)).astype(np.float32)
    u0 = rng.standard_normal((rows, cols)).astype(np.float32)
    return f, u0, 0.5, 20


def _zeros_like(f, stream):
    """Zeros where f is (NumPy, or a device array zeroed on the solve's own stream)."""
    if isinstance(f, np.ndarray):
        return np.zeros_like(f)
    from .. import zeros
    try:
        dtype = np.dtype(str(f.dtype).split(".")[-1])
    except TypeError:
        raise TypeError(f"f: unknown dtype {f.dtype!r}") from None
    return zeros(tuple(int(s) for s in f.shape), dtype=dtype, stream=stream)


# One Jacobi sweep over the interior as a CuPy ElementwiseKernel: the fastest way a CuPy user
# writes it (one kernel a sweep; slicing makes a temporary per term). i runs over the interior
# cells; ny and nx are the grid's last two extents; the faces of b keep u0's values.
_CUPY_JACOBI_SWEEPS = {
    2: """const long long w = nx - 2, k = (i / w + 1) * nx + i % w + 1;
          b[k] = (T)0.25 * (a[k - nx] + a[k + nx] + a[k - 1] + a[k + 1] + h2f[k]);""",
    3: """const long long w = nx - 2, plane_cells = (ny - 2) * w, rest = i % plane_cells;
          const long long k = ((i / plane_cells + 1) * ny + rest / w + 1) * nx + rest % w + 1;
          b[k] = (a[k - ny * nx] + a[k + ny * nx] + a[k - nx] + a[k + nx] + a[k - 1] + a[k + 1]
                  + h2f[k]) / (T)6;"""}


def _cupy_jacobi(f, u0=None, h=1.0, iters=None, tol=None, **_):
    """CuPy at its fastest: one ElementwiseKernel launch per sweep over the interior, no
    residual (the slicing form, b[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + ...), launches a kernel
    and a temporary per term)."""
    import cupy
    cf = _peers.as_peer("cupy", f)
    cu = cupy.zeros_like(cf) if u0 is None else _peers.as_peer("cupy", u0).copy()
    nxt = cu.copy()
    h2f = (h * h) * cf
    sweeps = _jacobi_sweeps(f, u0, h, iters, tol)
    sweep = cupy.ElementwiseKernel("raw T a, raw T h2f, int64 ny, int64 nx", "raw T b",
                                   _CUPY_JACOBI_SWEEPS[cf.ndim], f"gpulab_jacobi{cf.ndim}d")
    interior = int(np.prod([max(s - 2, 0) for s in cf.shape]))
    ny, nx = cf.shape[-2:]

    def run():
        a, b = cu, nxt
        for _ in range(sweeps if interior else 0):
            sweep(a, h2f, ny, nx, b, size=interior)
            a, b = b, a
        return a

    return run


@op("jacobi", cost=_jacobi_cost, size=lambda f, *a, **_: numel(f), example=_jacobi_example,
    demo_size={"gpu": 4096 * 4096, "cpu": 256 * 256}, peers={"cupy": _cupy_jacobi})
def jacobi(f, u0=None, h=1.0, iters=None, tol=None, check_every=50, variant=None, stream=None,
           depth=None):
    """Solves -laplace_h(u) = f on a 2D or 3D grid of spacing h by Jacobi sweeps, u_new = (sum of
    the 2 ndim neighbours + h^2 f) / (2 ndim) on the interior; the cells on the grid's faces keep
    u0's values (Dirichlet; u0=None: zeros). Returns a JacobiResult (u, sweeps, residuals,
    converged), which also unpacks as (u, residuals).

    `iters`: the most sweeps; `tol`: stop at the first check whose residual is <= tol (one of
    them, or both, must be given; tol alone caps the sweeps at 100000). A check is every
    `check_every` sweeps and after the last; its residual, max |f + laplace_h(u)| over the
    interior at the iterate the checked sweep started from (= 2 ndim / h^2 times the max-norm of
    that sweep's update), is reduced on the device, and only that scalar comes back. With
    Dirichlet boundaries the update's max-norm never grows from check to check.
    `variant`: None (the best where it runs; on the GPU "temporal" for 2D, "fused" for 3D), an id
    or a name from ``gl.variants("jacobi")``. `depth`: sweeps per launch of "temporal"."""
    h, check_every = _jacobi_checked(f, u0, h, iters, tol, check_every)
    ndim = len(getattr(f, "shape", ()))
    if variant is None and ndim == 3 and (not isinstance(f, np.ndarray) or _gpu()):
        variant = "fused"  # temporal blocking is 2D only
    if u0 is None and ndim in (2, 3) and _solve_on_the_gpu(f, variant):
        # zeros made on the GPU, not a host array of f's size: its fresh pages cost more to copy
        # than the solve itself (16384^2 float32 on an H200: 320 ms of a 513 ms call)
        from .. import to_device
        r = jacobi(to_device(f, stream), None, h, iters, tol, check_every, variant, stream, depth)
        return JacobiResult(r.u.get(stream=stream), r.sweeps, r.residuals, r.converged)
    if u0 is None and ndim in (2, 3):
        u0 = _zeros_like(f, stream)
    sweeps = int(_jacobi_sweeps(f, u0, h, iters, tol))
    u, residuals, done, checks, converged = _core.jacobi(
        f, u0, float(h), sweeps, float(tol) if tol is not None else 0.0, int(check_every),
        variant, stream, depth)
    return JacobiResult(u, done, residuals[:checks].copy(), converged)


def _jacobi_checked(f, u0, h, iters, tol, check_every):
    """(h, check_every) of gl.jacobi's arguments, each checked (ValueError naming it); also what
    gl.multi.jacobi checks, so that both refuse the same things."""
    if iters is None and tol is None:
        raise ValueError("iters or tol (or both) must be given")
    if iters is not None and (isinstance(iters, bool) or not isinstance(iters, (int, np.integer))
                              or iters < 0):
        raise ValueError(f"iters must be an int >= 0, got {iters!r}")
    try:
        h = float(h)
    except OverflowError:
        raise ValueError(f"h must be a positive finite spacing, got {h!r}") from None
    if not (h > 0 and math.isfinite(h)):
        raise ValueError(f"h must be a positive finite spacing, got {h!r}")
    if iters is not None and iters > MAX_SWEEPS:
        raise ValueError(f"iters must be <= {MAX_SWEEPS}, got {iters}")
    if tol is not None and not (float(tol) > 0):
        raise ValueError(f"tol must be > 0, got {tol!r}")
    if isinstance(check_every, bool) or not isinstance(check_every, (int, np.integer)) or \
            check_every < 1:
        raise ValueError(f"check_every must be an int >= 1, got {check_every!r}")
    check_every = min(int(check_every), MAX_SWEEPS)  # past iters it means: only the last
    checks = -(-_jacobi_sweeps(f, u0, h, iters, tol) // check_every)
    if checks > MAX_CHECKS:
        raise ValueError(f"check_every: {checks} checks would be kept; at most {MAX_CHECKS} "
                         "(raise check_every)")
    return h, check_every


def _solve_on_the_gpu(f, variant):
    """Whether gl.jacobi on the NumPy array f runs a CUDA variant (None: wherever a GPU is
    usable), on a C-contiguous float grid of 1 MiB or more: then f goes to the GPU as a
    DeviceArray."""
    if not isinstance(f, np.ndarray) or f.dtype not in (np.float32, np.float64) or \
            not f.flags.c_contiguous or f.nbytes < (1 << 20) or isinstance(variant, bool) or \
            not _gpu():
        return False
    if variant is None:
        return True
    from ..registry import variants
    return any(v.backend == "cuda" and variant in (v.id, v.name) for v in variants("jacobi"))


def _gpu():
    from .. import cuda_available
    return cuda_available()
