"""The image lab: 2-D filters on images and the Mandelbrot set.

    gl.gaussian(img, 2.0)                    # scipy.ndimage.gaussian_filter, per channel
    gl.box(img, 5)                           # scipy.ndimage.uniform_filter, per channel
    gl.filter2d(img, kernel, mode="wrap")    # scipy.ndimage.correlate, per channel
    gl.mandelbrot(1024, 768, max_iter=512)   # the dwell map, int32 (768, 1024)

Images are C-contiguous (H, W) or (H, W, C) arrays (C from 1 to 4, each channel filtered on its
own, as scipy does with a size or sigma of 0 along the last axis) of float32 or uint8, at most
65536 pixels a side. The result has the image's shape and dtype. Sums are taken in float32;
for uint8 the sum is rounded to the nearest integer (ties to even) and saturated to 0..255, so
that it may differ by one from scipy's uint8 output where float32 and float64 sums round
differently (scipy itself truncates some cases; compare against the float result rounded).

Filters are correlations, as scipy.ndimage.correlate defines them: out[i, j] = sum over a, b of
k[a, b] img[i + a - kh // 2, j + b - kw // 2] (so a kernel of even size reaches one further to
the top and left), with scipy's boundary modes by scipy's names: "reflect" (the default, as in
scipy: d c b a | a b c d | d c b a), "mirror" (d c b | a b c d | c b a), "nearest", "constant"
(zeros) and "wrap".

Separable kernels. gaussian and box always are. filter2d takes a 2-D kernel, or a pair
(ky, kx) of 1-D factors (k = outer(ky, kx)); a 2-D kernel is tested for rank 1 on the host
(NumPy's SVD: separable when the second singular value is below 1e-6 of the first) and then
factored as sqrt(s0) u0, sqrt(s0) v0 (weights that differ from the kernel's by float32 rounding),
once for each distinct kernel: prepared weights are kept by value (_PREPARED).
The variants: 0 "global" and 1 "texture" apply the 2-D kernel directly (up to 625 taps);
2 "shared_separable" and 3 "fused_separable" take separable kernels only (each factor up to 65
taps: a Gaussian up to sigma 8 at truncate 4) and refuse others with ValueError; variant=None
picks 3 for a separable kernel and 0 otherwise (on the GPU). The texture variant filters one
channel and has no "mirror"; it refuses both with ValueError. Variant 3 rounds the radius up to
4, 8, 16 or 32 with zero weights: a NaN or Inf pixel then reaches further than the kernel does.

Mandelbrot. Pixel (i, j) of a width x height map is the point c = x + iy with
x = x0 + (j + 0.5) (x1 - x0) / width and y = y0 + (i + 0.5) (y1 - y0) / height (row 0 at ylim[0]:
plot it with origin="lower"); its dwell is the first n >= 1 with |z_n|^2 > 4 for z_0 = 0,
z_{n+1} = z_n^2 + c, or max_iter when no n < max_iter escapes. Everything is float64, every
operation rounded where NumPy rounds (no FMA contraction; the one fused (t + t) + cy rounds
exactly what NumPy does, t + t being exact), in the order of tests/references/image.py: every
variant gives NumPy's map bit for bit.

Why Mariani-Silver (variants 1 and 2) is exact. For each k, the set {c : dwell(c) >= k} is
{c : |P_j(c)| <= 2 for j < k}, P_j(c) = z_j, and escape is monotone (once |z_n| > 2 it grows), so
it is the filled lemniscate {|P_{k-1}| <= 2}: a polynomial's sublevel set, which has no holes
(a bounded component of {|P| > 2} would break the maximum modulus principle), and for the
Mandelbrot polynomials it is connected (Douady-Hubbard: every critical value lies inside). So
if the border of a square has one dwell d, no point inside has a smaller one (it would lie in a
hole of {dwell >= d}), and none a larger one unless all of {dwell >= d + 1} lay inside the
square (it is connected and the border misses it) -- which would need the square to enclose
the whole set. That is the continuum; the map samples the border at pixel centres, and a
filament of another dwell thinner than a pixel could slip between two border samples. The
tests check equality with the per-pixel map on several views, zoomed ones included.

NumPy in, NumPy out; device arrays in, DeviceArray out, asynchronously on `stream` (mandelbrot:
xlim and ylim as float64 device arrays of 2 put the map on the device).
"""

import math
import numbers

import numpy as np

from .. import _core
from .. import peers as _peers
from .._op import Cost, Unit, nbytes, numel, op
from ._prepared import Prepared

EXPORTS = ("filter2d", "gaussian", "box", "mandelbrot", "gaussian_weights", "box_weights")

MODES = _core.filter_modes()
MAX_TAPS = 65
MAX_TAPS_2D = 625
MAX_SIDE = 65536
_RANK1_TOL = 1e-6


def _mode_index(mode):
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a str, one of {', '.join(MODES)}; got {type(mode).__name__}")
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not a boundary mode; known: {', '.join(MODES)}")
    return MODES.index(mode)


def _pair(value, name, kind=numbers.Real):
    """(rows, cols) from a number or a pair of numbers of kind (not bool)."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(values) != 2 or not all(isinstance(v, kind) and not isinstance(v, bool)
                                   for v in values):
        raise TypeError(f"{name} must be a number or a pair (rows, cols) of numbers, got "
                        f"{value!r}")
    return values


def _real(value, name):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    try:
        value = float(value)
    except OverflowError:  # an int past float's range
        raise ValueError(f"{name} must be finite and >= 0, got {value}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value}")
    return value


def gaussian_weights(sigma, truncate=4.0):
    """scipy.ndimage's 1-D Gaussian: radius int(truncate sigma + 0.5), exp(-x^2 / 2 sigma^2)
    normalized to sum 1, in float64 (a single 1 for sigma 0)."""
    sigma, truncate = _real(sigma, "sigma"), _real(truncate, "truncate")
    reach = truncate * sigma + 0.5
    if not math.isfinite(reach) or reach > MAX_TAPS // 2 + 1:
        raise ValueError(f"sigma {sigma} at truncate {truncate} reaches too far; at most "
                         f"{MAX_TAPS // 2} pixels")
    radius = int(reach)
    if radius == 0:  # sigma 0, or so small that only the centre tap is left
        return np.ones(1)
    if radius > MAX_TAPS // 2:
        raise ValueError(f"sigma {sigma} at truncate {truncate} reaches {radius} pixels; at most "
                         f"{MAX_TAPS // 2}")
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    phi = np.exp(-0.5 / (sigma * sigma) * x * x)
    return phi / phi.sum()


def box_weights(size):
    """size taps of 1 / size (scipy.ndimage.uniform_filter's)."""
    if not isinstance(size, numbers.Integral) or isinstance(size, bool):
        raise TypeError(f"size must be an integer, got {size!r}")
    if not 1 <= size <= MAX_TAPS:
        raise ValueError(f"size must be an integer from 1 to {MAX_TAPS}, got {size!r}")
    return np.full(int(size), 1.0 / int(size))


# Weights the filters have prepared (a Gaussian's taps, a kernel's SVD: 10-30 us of NumPy), by
# the values that define them: a call with the weights of an earlier one does no host work for
# them.
_PREPARED = Prepared()


def _factors(kernel):
    """(w2d, wy, wx) for _core from a 2-D kernel or a pair of 1-D factors: float32 arrays, wy and
    wx None when the kernel is not of rank 1, w2d None when it has more than MAX_TAPS_2D taps."""
    if hasattr(kernel, "__cuda_array_interface__") or type(kernel).__name__ == "DeviceArray":
        raise TypeError("kernel must be host data (a NumPy array, nested lists or a pair of "
                        "1-D factors), not a device array")
    try:
        if isinstance(kernel, tuple) and len(kernel) == 2 and np.ndim(kernel[0]) == 1:
            wy = np.asarray(kernel[0], np.float64)
            wx = np.asarray(kernel[1], np.float64)
            k = None
        else:
            k, wy, wx = np.asarray(kernel, np.float64), None, None
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"kernel must be an array of real weights or a pair of 1-D factors: "
                        f"{e}") from None
    if k is None:
        key = ("factors", wy.shape, wy.tobytes(), wx.shape, wx.tobytes())
    else:
        key = ("kernel", k.shape, k.tobytes())
    return _PREPARED.get(key, lambda: _factored(k, wy, wx))


def _factored(k, wy, wx):
    """_factors' work on float64 weights: k a 2-D kernel (wy, wx None) or None and two factors."""
    if k is None:
        if wy.ndim != 1 or wx.ndim != 1:
            raise ValueError("kernel: both factors must be 1-D")
        if not (np.all(np.isfinite(wy)) and np.all(np.isfinite(wx))):
            raise ValueError("kernel has NaN or Inf weights")
    else:
        if k.ndim != 2 or k.size == 0:
            raise ValueError(f"kernel must be a non-empty 2-D array or a pair of 1-D factors, got "
                             f"shape {k.shape}")
        if not np.all(np.isfinite(k)):
            raise ValueError("kernel has NaN or Inf weights")
        u, s, vt = np.linalg.svd(k)
        if s[0] == 0:
            wy, wx = np.zeros(k.shape[0]), np.zeros(k.shape[1])
        elif len(s) == 1 or s[1] <= _RANK1_TOL * s[0]:
            wy, wx = u[:, 0] * math.sqrt(s[0]), vt[0] * math.sqrt(s[0])
        else:
            w2d = np.ascontiguousarray(k, np.float32) if k.size <= MAX_TAPS_2D else None
            if w2d is None:
                raise ValueError(f"kernel has {k.shape[0]} x {k.shape[1]} taps and is not "
                                 f"separable; at most {MAX_TAPS_2D} taps")
            return w2d, None, None
        return _separable(wy, wx)
    if wy.size == 0 or wx.size == 0:
        raise ValueError("kernel: empty factor")
    return _separable(wy, wx)


def _separable(wy, wx):
    if wy.size > MAX_TAPS or wx.size > MAX_TAPS:
        raise ValueError(f"kernel's factors have {wy.size} and {wx.size} taps; at most {MAX_TAPS}")
    w2d = np.outer(wy, wx).astype(np.float32) if wy.size * wx.size <= MAX_TAPS_2D else None
    return w2d, wy.astype(np.float32), wx.astype(np.float32)


def _run(name, img, factors, mode, variant, stream):
    w2d, wy, wx = factors
    if variant is None and wy is None and _on_gpu(img):
        variant = "global"  # the best variant (fused) needs a separable kernel
    return getattr(_core, name)(img, variant, stream, w2d, wy, wx, _mode_index(mode))


def _on_gpu(img):
    from .. import cuda_available
    return not isinstance(img, np.ndarray) or cuda_available()


# ---------------------------------------------------------------- cost and examples


def _filter_cost(img, *args, **kw):
    # the image read once and written once; 2 flops a tap (a 17 + 17 separable Gaussian: 68)
    return Cost(bytes=2 * nbytes(img), flops=0)


def _image_example(n, rng):
    """An (H, W) float32 image of about n pixels, neither side a multiple of a tile. One channel:
    the texture variant filters no more (the tests take three channels to every other)."""
    h = max(1, math.isqrt(max(n, 1)) - 3)
    w = max(1, n // h + 1)
    return rng.standard_normal((h, w)).astype(np.float32)


def _cupy_gaussian(img, sigma, mode="reflect", truncate=4.0, **_):
    from cupyx.scipy import ndimage
    c = _peers.as_peer("cupy", img)
    sy, sx = _pair(sigma, "sigma")
    s = (sy, sx, 0) if c.ndim == 3 else (sy, sx)
    return lambda: ndimage.gaussian_filter(c, s, mode=mode, truncate=truncate)


def _torch_separable(img, wy, wx):
    """Two conv2d passes with 1-D kernels over a reflect-padded (N=1, C, H, W) view: torch's
    'reflect' padding is scipy's 'mirror' (the same work)."""
    import torch
    import torch.nn.functional as F
    t = _peers.as_peer("torch", img)
    x = t.permute(2, 0, 1)[None] if t.ndim == 3 else t[None, None]
    ch = x.shape[1]
    ky = torch.as_tensor(np.asarray(wy, np.float32), device=t.device).view(1, 1, -1, 1)
    kx = torch.as_tensor(np.asarray(wx, np.float32), device=t.device).view(1, 1, 1, -1)
    ky, kx = ky.repeat(ch, 1, 1, 1), kx.repeat(ch, 1, 1, 1)
    ry, rx = len(wy) // 2, len(wx) // 2

    def run():
        y = F.conv2d(F.pad(x, (rx, rx, 0, 0), mode="reflect"), kx, groups=ch)
        return F.conv2d(F.pad(y, (0, 0, ry, ry), mode="reflect"), ky, groups=ch)
    return run


def _torch_gaussian(img, sigma, mode="reflect", truncate=4.0, **_):
    sy, sx = _pair(sigma, "sigma")
    return _torch_separable(img, gaussian_weights(sy, truncate), gaussian_weights(sx, truncate))


@op("gaussian", cost=_filter_cost, size=lambda img, *a, **_: numel(img),
    example=lambda n, rng: (_image_example(n, rng), 2.0),
    demo_size={"gpu": 8192 * 8192, "cpu": 1024 * 1024},
    peers={"cupy": _cupy_gaussian, "torch": _torch_gaussian})
def gaussian(img, sigma, mode="reflect", truncate=4.0, variant=None, stream=None):
    """scipy.ndimage.gaussian_filter(img, sigma, mode=mode, truncate=truncate) on each channel:
    sigma a number or (sigma_rows, sigma_cols), the radius int(truncate sigma + 0.5) (at most
    32). `variant`: None (fused_separable on the GPU, openmp on the CPU), an id or a name from
    ``gl.variants("gaussian")``."""
    sy, sx = _pair(sigma, "sigma")
    factors = _PREPARED.get(("gaussian", sy, sx, _real(truncate, "truncate")), lambda: _separable(
        gaussian_weights(sy, truncate), gaussian_weights(sx, truncate)))
    return _run("gaussian", img, factors, mode, variant, stream)


def _cupy_box(img, size, mode="reflect", **_):
    from cupyx.scipy import ndimage
    c = _peers.as_peer("cupy", img)
    sy, sx = _pair(size, "size")
    s = (sy, sx, 1) if c.ndim == 3 else (sy, sx)
    return lambda: ndimage.uniform_filter(c, s, mode=mode)


@op("box", cost=_filter_cost, size=lambda img, *a, **_: numel(img),
    example=lambda n, rng: (_image_example(n, rng), 5),
    demo_size={"gpu": 8192 * 8192, "cpu": 1024 * 1024}, peers={"cupy": _cupy_box})
def box(img, size, mode="reflect", variant=None, stream=None):
    """scipy.ndimage.uniform_filter(img, size, mode=mode) on each channel: the mean over a
    size x size window (or size = (rows, cols)), 1 to 65 taps a side; an even size reaches one
    further to the top and left, as scipy's does."""
    sy, sx = _pair(size, "size", numbers.Integral)
    factors = _PREPARED.get(("box", sy, sx), lambda: _separable(box_weights(sy), box_weights(sx)))
    return _run("box", img, factors, mode, variant, stream)


def _cupy_filter2d(img, kernel, mode="reflect", **_):
    from cupyx.scipy import ndimage
    import cupy
    c = _peers.as_peer("cupy", img)
    k = np.asarray(kernel, np.float32) if not isinstance(kernel, tuple) else np.outer(*kernel)
    ck = cupy.asarray(k[:, :, None] if c.ndim == 3 else k, dtype=cupy.float32)
    return lambda: ndimage.correlate(c, ck, mode=mode)


def _filter2d_example(n, rng):
    # Sobel's horizontal derivative: separable ([1, 2, 1] down, [-1, 0, 1] across); as lists, so
    # that the tests' device copies leave the kernel on the host
    return (_image_example(n, rng), [[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])


@op("filter2d", cost=_filter_cost, size=lambda img, *a, **_: numel(img),
    example=_filter2d_example, demo_size={"gpu": 8192 * 8192, "cpu": 1024 * 1024},
    peers={"cupy": _cupy_filter2d})
def filter2d(img, kernel, mode="reflect", variant=None, stream=None):
    """scipy.ndimage.correlate(img, kernel, mode=mode) on each channel. kernel: a 2-D array
    (nested lists, NumPy) of float weights, or a pair (ky, kx) of 1-D factors. Separable (rank 1)
    kernels run on every variant, others on global, texture and openmp (up to 625 taps); see the
    module's notes."""
    return _run("filter2d", img, _factors(kernel), mode, variant, stream)


# ---------------------------------------------------------------- mandelbrot


def _limits(lim, name):
    if type(lim).__name__ == "DeviceArray":
        return lim
    a = np.ascontiguousarray(lim, dtype=np.float64)
    if a.shape == (2,) and not np.all(np.isfinite(a)):  # other shapes: refused by _core
        raise ValueError(f"{name} must be two finite numbers, got {lim!r}")
    return a


def _mandelbrot_example(n, rng):
    h = max(1, math.isqrt(max(n, 1)) - 5)
    w = max(1, n // h)
    return (w, h, np.array([-2.0, 0.5]), np.array([-1.25, 1.25]), 64)


# The peer's own copy of the iteration, written for CuPy's elementwise form (i is the flat pixel
# index): the same operations, rounded the same way, as cuda/image/mandelbrot.cuh's glc_dwell,
# so that the two maps agree bit for bit and the timing compares like with like.
_CUPY_DWELL = r"""
    const double cx = __dadd_rn(x0, __dmul_rn((i % width) + 0.5, dx));
    const double cy = __dadd_rn(y0, __dmul_rn((i / width) + 0.5, dy));
    double zr = 0.0, zi = 0.0;
    int n = 0;
    while (n < max_iter) {
      const double zr2 = __dmul_rn(zr, zr), zi2 = __dmul_rn(zi, zi);
      if (__dadd_rn(zr2, zi2) > 4.0) break;
      const double t = __dmul_rn(zr, zi);
      zi = __dadd_rn(__dadd_rn(t, t), cy);
      zr = __dadd_rn(__dsub_rn(zr2, zi2), cx);
      n++;
    }
    dwell = n;
"""


def cupy_mandelbrot(width, height, xlim, ylim, max_iter):
    """The peer: a CuPy ElementwiseKernel over the pixels doing the same float64 iteration,
    rounding each operation as gpulab does (so its map is the same, bit for bit). Returns a
    zero-argument callable that makes a CuPy (height, width) int32 map."""
    import cupy
    kernel = cupy.ElementwiseKernel(
        "float64 x0, float64 dx, float64 y0, float64 dy, int32 width, int32 max_iter",
        "int32 dwell", _CUPY_DWELL, "gpulab_mandelbrot_peer")
    x = np.asarray(xlim.get() if hasattr(xlim, "get") else xlim, np.float64)
    y = np.asarray(ylim.get() if hasattr(ylim, "get") else ylim, np.float64)
    dx, dy = (x[1] - x[0]) / width, (y[1] - y[0]) / height

    def run():
        out = cupy.empty((height, width), cupy.int32)
        return kernel(x[0], dx, y[0], dy, np.int32(width), np.int32(max_iter), out)
    return run


@op("mandelbrot", cost=lambda w, h, *a, **_: Cost(bytes=4 * w * h, flops=0),
    size=lambda w, h, *a, **_: w * h, example=_mandelbrot_example,
    demo_size={"gpu": 4096 * 4096, "cpu": 512 * 512},
    peers={"cupy": lambda w, h, xlim, ylim, max_iter=256, **_: cupy_mandelbrot(
        w, h, xlim, ylim, max_iter)},
    unit=Unit("Gpixels/s", lambda w, h, *a, **_: w * h))
def mandelbrot(width, height, xlim=(-2.0, 1.0), ylim=(-1.5, 1.5), max_iter=256, variant=None,
               stream=None):
    """The dwell map of the view xlim x ylim as an int32 (height, width) image (see the module's
    notes for the exact definition): NumPy's float64 iteration, bit for bit, on every variant.
    `variant`: None (mariani_silver_dynamic on the GPU, openmp on the CPU), an id or a name
    from ``gl.variants("mandelbrot")``. xlim and ylim as float64 device arrays of 2 put the map
    on the device, asynchronously on `stream`."""
    for name, v, low, high in (("width", width, 0, MAX_SIDE), ("height", height, 0, MAX_SIDE),
                               ("max_iter", max_iter, 1, 2**31 - 1)):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise TypeError(f"{name} must be an integer, got {v!r}")
        if not low <= v <= high:
            raise ValueError(f"{name} must lie in {low}..{high}, got {v}")
    return _core.mandelbrot(_limits(xlim, "xlim"), _limits(ylim, "ylim"), variant, stream,
                            int(width), int(height), int(max_iter))
