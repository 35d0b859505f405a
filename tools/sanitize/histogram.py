"""The histogram lab's kernels under compute-sanitizer: every CUDA variant of histogram and
histogram_rgb at its smallest, default and largest block, at sizes that end exactly on 16-byte
vectors and on tiles and at odd sizes, from NumPy and from device inputs, and from device views
that start and end inside a 16-byte vector (the head and tail of the wide loads); every dtype
path (uint8 bytes, other integer bins, float32 and float64 with a range and with range=None,
whose data-range kernel runs too), more bins than one shared tile holds, and skewed data. Every
result checked exactly against NumPy. See _common.py.

    python3 tools/sanitize/histogram.py [--inputs both|device] [--only op:id,...]
"""

import sys

import numpy as np

from _common import KERNEL_SIZES, SIZES, done, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import histogram as ref  # noqa: E402

# sizes ending on a 16-byte vector of uint8 and float32 and on a block's four vectors in flight
VECTOR_SIZES = (16, 64, 4096 + 16, 512 * 64, 512 * 64 + 15)


class View:
    """A device array over part of another's memory (CUDA Array Interface), for starts that
    are not 16-byte aligned."""

    def __init__(self, base, shape, offset):
        self.base = base
        cai = dict(base.__cuda_array_interface__)
        cai.update(shape=tuple(shape), strides=None, data=(base.ptr + offset, False))
        self.__cuda_array_interface__ = cai


def blocks(v):
    values = v.tunables.get("block", {}).get("values")
    return sorted({min(values), v.tunables["block"]["default"], max(values)}) if values else [None]


class Runner:
    def __init__(self, args):
        self.args, self.calls = args, 0

    def variants(self, op):
        return [v for v in gl.variants(op) if v.backend == "cuda" and wanted(self.args,
                                                                            f"{op}:{v.id}")]

    def sizes(self):
        return (SIZES if self.args.inputs == "both" else KERNEL_SIZES) + VECTOR_SIZES

    def check(self, got, want, what):
        got = got.get() if isinstance(got, gl.DeviceArray) else got
        try:
            ref.assert_counts_equal(got, want)
        except AssertionError as e:
            sys.exit(f"wrong result: {what}: {e}")
        self.calls += 1

    def run(self, fn, v, x, want, what, **kw):
        for block in blocks(v):
            call = dict(kw, variant=v.id, block=block)
            got = fn(gl.to_device(x), **call)
            settle()
            self.check(got, want, f"{fn.__name__} {v.name} device {what} block={block}")
            if self.args.inputs == "both":
                got = fn(x, **call)
                settle()
                self.check(got, want, f"{fn.__name__} {v.name} numpy {what} block={block}")


def histogram(r, rng):
    variants = r.variants("histogram")
    for n in r.sizes():
        cases = [(rng.integers(0, 256, n, dtype=np.uint8), 256, None),
                 (rng.integers(0, 256, n, dtype=np.uint8), 100, (50, 150)),
                 (rng.uniform(-0.5, 1.5, n).astype(np.float32), 256, (0.0, 1.0)),
                 (rng.standard_normal(n), 37, None)]
        if n in (1025, 100_003):  # more bins than a shared tile; skewed data
            cases += [(rng.integers(0, 65536, n, dtype=np.uint16), 65536, None),
                      (rng.uniform(0, 1, n).astype(np.float32), 20_000, (0.0, 1.0)),
                      (np.full(n, 200, np.uint8), 256, None)]
        for x, bins, rng_ in cases:
            want = ref.numpy_histogram(x, bins, rng_)[0]
            for v in variants:
                if x.dtype.name not in v.dtypes:
                    continue  # refused by design (CUB's variant takes integer data)
                r.run(gl.histogram_counts, v, x, want, f"{x.dtype} n={n} bins={bins}",
                      bins=bins, range=rng_)
    # views whose start and end fall inside 16-byte vectors
    host = rng.integers(0, 256, 8192 + 32, dtype=np.uint8)
    base = gl.to_device(host)
    for offset in (1, 3, 8, 15):
        for n in (5, 17, 8192 + 7):
            want = np.bincount(host[offset:offset + n], minlength=256)
            for v in variants:
                r.check(gl.histogram_counts(View(base, (n,), offset), 256, variant=v.id), want,
                        f"histogram {v.name} view offset={offset} n={n}")
                settle()


def histogram_rgb(r, rng):
    variants = r.variants("histogram_rgb")
    for pixels in sorted({0, 1, 5, 11, 16, 33, 1024, 4096 + 5, 100_003} |
                         {n // 3 for n in r.sizes()}):
        h = 1 if pixels < 64 else 64
        shape = (h, pixels // h, 3)
        for img in (rng.integers(0, 256, shape, dtype=np.uint8),
                    rng.uniform(-0.1, 1.1, shape).astype(np.float32)):
            want = gl.labs.histogram.reference_rgb(img)
            for v in variants:
                r.run(gl.histogram_rgb, v, img, want, f"{img.dtype} {shape}")
    host = rng.integers(0, 256, 3 * 4096 + 32, dtype=np.uint8)
    base = gl.to_device(host)
    for offset in (1, 7, 15):
        for pixels in (1, 6, 4096):
            img = host[offset:offset + 3 * pixels].reshape(1, pixels, 3)
            want = gl.labs.histogram.reference_rgb(img)
            for v in variants:
                r.check(gl.histogram_rgb(View(base, img.shape, offset), variant=v.id), want,
                        f"histogram_rgb {v.name} view offset={offset} pixels={pixels}")
                settle()


def main():
    args, rng = start(__doc__)
    r = Runner(args)
    histogram(r, rng)
    histogram_rgb(r, rng)
    if r.calls == 0:
        sys.exit("no call matched --only")
    done("sanitize/histogram", r.calls)


if __name__ == "__main__":
    main()
