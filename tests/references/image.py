"""The image lab's references: scipy.ndimage's filters in float64, NumPy's Mandelbrot iteration,
and the rounding bounds the variants are held to.

Filters. Each output is a sum of kh kw products (a separable variant sums kw of them along the
row, then kh of those down the column), in float32, of weights rounded to float32 (a factored
rank-1 kernel's weights are the factors' products, within float32 rounding of the kernel's).
Higham's bound for a sum of K terms in any order, gamma_K = K u / (1 - K u), u = 2^-24, then
gives |got - ref| <= gamma_{kh kw + kh + kw + 4} (|k| * |img|) + tiny, with |k| * |img| the
correlation of the magnitudes (the same mode). uint8 results are the float32 sum rounded to
nearest and saturated: they lie within 1 of the float64 result rounded the same way (a sum near
a half-integer may round either way), and where the float64 sum is further than the bound from
a half-integer they are exact.

The references extend the image with numpy.pad (scipy's modes by numpy's names), not with
scipy.ndimage.correlate, which goes wrong on images smaller than half its kernel (PAD_MODES);
tests/labs/test_image.py compares with scipy's own gaussian_filter and uniform_filter too.

Mandelbrot: NumPy's float64 iteration, each operation rounded on its own in the order
cuda/image/mandelbrot.cuh does them: every variant must match it bit for bit.
"""

import functools

import numpy as np

from gpulab.labs import image as _image

U32 = np.finfo(np.float32).eps / 2


def gamma(k):
    return k * U32 / (1 - k * U32)


# scipy.ndimage's modes as numpy.pad's (which reflect as often as a wide kernel needs; scipy's
# 2-D correlate does not, for kernels much larger than the image: it returned 0.47 for the
# 17 x 17 mean of [[0.3, 0.7]] under "reflect", and uninitialized values for a 1 x 2 image)
PAD_MODES = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap",
             "constant": "constant"}


def correlate2d(x, k, mode):
    """scipy.ndimage.correlate's definition in float64: out[i, j] = sum k[a, b]
    x[i + a - kh // 2, j + b - kw // 2], the image extended by the mode."""
    kh, kw = k.shape
    h, w = x.shape
    padded = np.pad(x, ((kh // 2, kh - 1 - kh // 2), (kw // 2, kw - 1 - kw // 2)),
                    mode=PAD_MODES[mode])
    out = np.zeros((h, w))
    for a in range(kh):
        for b in range(kw):
            if k[a, b] != 0:
                out += k[a, b] * padded[a:a + h, b:b + w]
    return out


def correlate_channels(img, kernel, mode):
    """correlate2d of each channel of an (H, W) or (H, W, C) image, in float64."""
    x = np.asarray(img, np.float64)
    k = np.asarray(kernel, np.float64)
    if x.ndim == 2:
        return correlate2d(x, k, mode)
    return np.stack([correlate2d(x[..., c], k, mode) for c in range(x.shape[2])], axis=-1)


def round_like_gpulab(v):
    """The float result as a uint8 output: rounded to nearest, ties to even, saturated."""
    return np.clip(np.rint(v), 0, 255)


def check_filtered(got, img, kernel, mode, what):
    kernel = np.asarray(kernel, np.float64)
    assert isinstance(got, np.ndarray), type(got)
    assert got.shape == img.shape and got.dtype == img.dtype, (what, got.shape, got.dtype)
    if img.size == 0:
        return
    want = correlate_channels(img, kernel, mode)
    bound = gamma(kernel.size + sum(kernel.shape) + 4) * correlate_channels(
        np.abs(img.astype(np.float64)), np.abs(kernel), mode) + np.finfo(np.float32).tiny
    if img.dtype == np.uint8:
        rounded = round_like_gpulab(want)
        diff = np.abs(got.astype(np.float64) - rounded)
        assert diff.max() <= 1, (what, diff.max())
        # away from a half-integer, the rounding is certain
        sure = np.abs(np.abs(want - np.floor(want)) - 0.5) > bound + 1e-9
        sure &= (want > -0.5) & (want < 255.5)
        bad = np.flatnonzero(sure & (diff != 0))
        assert bad.size == 0, (what, bad.size, got.flat[bad[0]], want.flat[bad[0]])
        return
    err = np.abs(got.astype(np.float64) - want)
    bad = np.flatnonzero(~(err <= bound))
    assert bad.size == 0, (f"{what}: {bad.size} of {want.size} outside the bound; first at "
                           f"{np.unravel_index(bad[0], want.shape)}: got {got.flat[bad[0]]!r}, "
                           f"want {want.flat[bad[0]]!r}, bound {bound.flat[bad[0]]:.3g}")


def gaussian_kernel(sigma, truncate=4.0):
    sy, sx = _image._pair(sigma, "sigma")
    return np.outer(_image.gaussian_weights(sy, truncate), _image.gaussian_weights(sx, truncate))


def box_kernel(size):
    sy, sx = _image._pair(size, "size")
    return np.ones((sy, sx)) / (sy * sx)


def filter2d_kernel(kernel):
    if isinstance(kernel, tuple):
        return np.outer(kernel[0], kernel[1])
    return np.asarray(kernel, np.float64)


def check_gaussian(got, img, sigma, mode="reflect", truncate=4.0):
    check_filtered(got, img, gaussian_kernel(sigma, truncate), mode, "gaussian")


def check_box(got, img, size, mode="reflect"):
    check_filtered(got, img, box_kernel(size), mode, "box")


def check_filter2d(got, img, kernel, mode="reflect"):
    check_filtered(got, img, filter2d_kernel(kernel), mode, "filter2d")


# ---------------------------------------------------------------- mandelbrot


def mandelbrot_reference(width, height, xlim=(-2.0, 1.0), ylim=(-1.5, 1.5), max_iter=256):
    """The dwell map in NumPy float64: the first n >= 1 with |z_n|^2 > 4, or max_iter."""
    x0, x1 = (float(v) for v in np.asarray(xlim, np.float64))
    y0, y1 = (float(v) for v in np.asarray(ylim, np.float64))
    dwell = np.full((height, width), max_iter, np.int32)
    if width == 0 or height == 0:
        return dwell
    dx = np.float64(x1 - x0) / np.float64(width)
    dy = np.float64(y1 - y0) / np.float64(height)
    cx = (x0 + (np.arange(width, dtype=np.float64) + 0.5) * dx)[None, :]
    cy = (y0 + (np.arange(height, dtype=np.float64) + 0.5) * dy)[:, None]
    cx = np.broadcast_to(cx, (height, width)).ravel()
    cy = np.broadcast_to(cy, (height, width)).ravel()
    live = np.arange(width * height)
    zr = np.zeros(live.size)
    zi = np.zeros(live.size)
    flat = dwell.ravel()
    for n in range(max_iter):  # the test of z_n, then z_{n+1}
        zr2, zi2 = zr * zr, zi * zi
        out = zr2 + zi2 > 4.0
        if out.any():
            flat[live[out]] = n
            keep = ~out
            live, zr, zi, zr2, zi2 = live[keep], zr[keep], zi[keep], zr2[keep], zi2[keep]
        if live.size == 0:
            break
        t = zr * zi
        zi = (t + t) + cy[live]
        zr = (zr2 - zi2) + cx[live]
    return dwell


def mariani_silver_emulation(dwell, initial=256, subdiv=4, min_size=16):
    """What Mariani-Silver makes of a per-pixel dwell map (cuda/image/mandelbrot.cuh's squares):
    squares with a uniform border are filled with it, the others subdivided down to min_size and
    copied there. Equal to dwell exactly when the border test never misleads on this view."""
    height, width = dwell.shape
    out = np.full_like(dwell, -1)
    squares = [(x, y) for y in range(0, height, initial) for x in range(0, width, initial)]
    side = initial
    while squares:
        nxt = []
        for x, y in squares:
            block = dwell[y:y + side, x:x + side]
            border = np.concatenate([block[0], block[-1], block[:, 0], block[:, -1]])
            if border.min() == border.max():
                out[y:y + side, x:x + side] = border[0]
            elif side <= min_size:
                out[y:y + side, x:x + side] = block
            else:
                c = side // subdiv
                nxt += [(x + i * c, y + j * c) for j in range(subdiv) for i in range(subdiv)
                        if x + i * c < width and y + j * c < height]
        squares, side = nxt, side // subdiv
    return out


@functools.lru_cache(maxsize=32)
def _cached_reference(width, height, xlim, ylim, max_iter):
    return mandelbrot_reference(width, height, xlim, ylim, max_iter)


def check_mandelbrot(got, width, height, xlim=(-2.0, 1.0), ylim=(-1.5, 1.5), max_iter=256):
    # every variant of the tests checks the same few views: each reference is computed once
    want = _cached_reference(width, height, tuple(float(v) for v in np.asarray(xlim)),
                             tuple(float(v) for v in np.asarray(ylim)), max_iter)
    assert isinstance(got, np.ndarray) and got.dtype == np.int32, (type(got),
                                                                   getattr(got, "dtype", None))
    assert got.shape == want.shape, (got.shape, want.shape)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"mandelbrot: {bad.size} of {want.size} dwells differ; first at "
                           f"{np.unravel_index(bad[0], want.shape)}: got {got.flat[bad[0]]}, "
                           f"want {want.flat[bad[0]]}")


CHECKS = {"gaussian": check_gaussian, "box": check_box, "filter2d": check_filter2d,
          "mandelbrot": check_mandelbrot}
