"""The sort lab: a bitonic network, an LSD radix sort, a merge-path merge sort, a onesweep radix
sort, a quicksort by scans and CUB's radix sort on the GPU, and S4's quicksort with dynamic
parallelism (up to 2^24 keys); qsort and an OpenMP radix sort on the CPU.

    gl.sort(x)                          # np.sort(x, kind="stable"), on the GPU when there is one
    gl.argsort(x)                       # np.argsort(x, kind="stable"), int64
    gl.sort_pairs(keys, values)         # keys in order, values moved with them
    gl.sort(x, descending=True)         # largest first, NaN first, ties in input order
    gl.sort(x, variant="lsd_radix", bits=4)

NumPy in, NumPy out; device arrays in, DeviceArray out, asynchronously on `stream`.

The order is NumPy's, for every variant: integers by value; floats by value with -0.0 equal to
+0.0 and every NaN (any sign, any payload) after +inf. Equal keys keep their input order: every
variant of the lab is stable, so sort returns exactly np.sort(x, kind="stable") -- bit for bit,
the sign of each zero and each NaN's payload included, since the keys' own bits are moved -- and
argsort exactly np.argsort(x, kind="stable").

descending=True is the reverse key order with ties still in input order: NaN first, then +inf
down to -inf, -0.0 and +0.0 equal (input order). It is not np.sort(x)[::-1], which would also
reverse the ties; it is the stable sort of the keys by the reversed comparison, which NumPy
writes as (n - 1 - np.argsort(x[::-1], kind="stable"))[::-1] for argsort.
"""

import numpy as np

from .. import _core
from .. import peers as _peers
from .._op import Cost, nbytes, numel, op

EXPORTS = ("sort", "argsort", "sort_pairs")


def _sort_cost(x, **_):
    # the least any sort moves: the keys read once and written once (a radix sort moves them
    # once a pass; docs/labs/sort.md gives each variant's bytes a key)
    return Cost(bytes=2 * nbytes(x), flops=0)


def _argsort_cost(x, **_):
    return Cost(bytes=nbytes(x) + 8 * numel(x), flops=0)


def _pairs_cost(keys, values, **_):
    return Cost(bytes=2 * (nbytes(keys) + nbytes(values)), flops=0)


def _torch_sort(x, descending=False, **_):
    # torch has no keys-only sort: torch.sort computes the indices too (stable=False as well),
    # so its time includes writing them; cupy.sort is keys-only
    import torch
    tx = _peers.as_peer("torch", x)
    return lambda: torch.sort(tx, stable=True, descending=descending).values


def _cupy_sort(x, descending=False, **_):
    cupy = _peers.cupy_with_cub()
    cx = _peers.as_peer("cupy", x)
    if descending:
        return lambda: cupy.sort(cx)[::-1]
    return lambda: cupy.sort(cx)


def _torch_argsort(x, descending=False, **_):
    import torch
    tx = _peers.as_peer("torch", x)
    return lambda: torch.argsort(tx, stable=True, descending=descending)


def _cupy_argsort(x, descending=False, **_):
    cupy = _peers.cupy_with_cub()
    cx = _peers.as_peer("cupy", x)
    return lambda: cupy.argsort(cx)


def _torch_pairs(keys, values, descending=False, **_):
    import torch
    tk, tv = _peers.as_peer("torch", keys), _peers.as_peer("torch", values)

    def run():
        sorted_keys, order = torch.sort(tk, stable=True, descending=descending)
        return sorted_keys, tv[order]
    return run


def _cupy_pairs(keys, values, descending=False, **_):
    cupy = _peers.cupy_with_cub()
    ck, cv = _peers.as_peer("cupy", keys), _peers.as_peer("cupy", values)

    def run():
        order = cupy.argsort(ck)
        return ck[order], cv[order]
    return run


def _keys_example(n, rng):
    # a few repeats (ties, so stability shows) among random int32 keys
    return (rng.integers(-(n // 2) - 1, n // 2 + 1, n, dtype=np.int32),)


def _pairs_example(n, rng):
    return (_keys_example(n, rng)[0], rng.standard_normal(n).astype(np.float32))


_DEMO = {"gpu": 1 << 26, "cpu": 1 << 22}


@op("sort", cost=_sort_cost, size=lambda x, **_: numel(x), example=_keys_example,
    demo_size=_DEMO, peers={"cupy": _cupy_sort, "torch": _torch_sort})
def sort(x, variant=None, stream=None, descending=False, bits=None):
    """x's keys in order, as np.sort(x, kind="stable") orders them (the module's docstring says
    the order precisely, descending too). x: 1-D int32, uint32, int64, float32 or float64, any
    length. The result has x's dtype and length.

    `variant`: None (the best where it runs), an id or a name from ``gl.variants("sort")``; each
    variant's summary says how it sorts and its limits (bitonic: up to 2^28 keys, ValueError
    beyond). `bits`: the digit width of lsd_radix, 4 or 8 (default 8); other variants take only
    None."""
    return _core.sort(x, descending, variant, stream, bits)


@op("argsort", cost=_argsort_cost, size=lambda x, **_: numel(x), example=_keys_example,
    demo_size=_DEMO, peers={"cupy": _cupy_argsort, "torch": _torch_argsort})
def argsort(x, variant=None, stream=None, descending=False, bits=None):
    """The indices (int64) that put x in order: np.argsort(x, kind="stable") (every variant is
    stable). Arguments as sort's."""
    return _core.argsort(x, descending, variant, stream, bits)


@op("sort_pairs", cost=_pairs_cost, size=lambda keys, *a, **_: numel(keys),
    example=_pairs_example, demo_size=_DEMO, peers={"cupy": _cupy_pairs, "torch": _torch_pairs})
def sort_pairs(keys, values, variant=None, stream=None, descending=False, bits=None):
    """(keys in order, values moved with them): with order = np.argsort(keys, kind="stable"),
    (keys[order], values[order]). values: 1-D, the keys' length, int32, uint32, int64, float32
    or float64 (moved as bits, never compared), on the same side (NumPy or device) as keys.
    Arguments as sort's."""
    return _core.sort_pairs(keys, values, descending, variant, stream, bits)
