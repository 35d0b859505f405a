"""The sort lab's references: np.sort and np.argsort with kind="stable", which every variant of
the lab must match exactly (it is stable, and it moves the keys' own bits, so the comparison is
of bytes: -0.0 against +0.0 and NaN payloads included), and the descending order the lab
defines: the stable sort by the reversed comparison, NaN first (gpulab/labs/sort.py)."""

import numpy as np


def order(x, descending=False):
    """The stable order of x: np.argsort(x, kind="stable"), or for descending the order that
    puts the largest key first (NaN first) and keeps equal keys in input order."""
    x = np.asarray(x)
    if not descending:
        return np.argsort(x, kind="stable")
    # ascending on the reversed array puts equal keys last-index first; reversing the result
    # turns the keys largest first and the equal ones back into input order
    return (x.size - 1 - np.argsort(x[::-1], kind="stable"))[::-1]


def assert_sorted_equal(got, x, descending=False):
    x = np.asarray(x)
    got = np.asarray(got)
    want = x[order(x, descending)]
    assert got.dtype == x.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    if got.tobytes() != want.tobytes():
        bits = np.dtype(f"u{x.dtype.itemsize}")
        first = np.flatnonzero(got.view(bits) != want.view(bits))[0]
        raise AssertionError(f"sort differs first at {first}: got {got[first]!r}, want "
                             f"{want[first]!r} (of {got.size})")


def assert_argsort_equal(got, x, descending=False):
    got = np.asarray(got)
    want = order(x, descending)
    assert got.dtype == np.int64 and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def assert_pairs_equal(got, keys, values, descending=False):
    got_keys, got_values = (np.asarray(g) for g in got)
    keys, values = np.asarray(keys), np.asarray(values)
    o = order(keys, descending)
    assert got_keys.dtype == keys.dtype and got_values.dtype == values.dtype
    assert got_keys.tobytes() == keys[o].tobytes(), "keys out of order"
    assert got_values.tobytes() == values[o].tobytes(), "values not moved with their keys"


def keys_differing_in(varying, n, dtype, rng):
    """n keys of dtype whose bits are one fixed pattern but in the bytes `varying` (0: the lowest,
    -1: the highest), each of which takes one of 5 values (ties, so stability shows): a radix
    pass over any other byte finds every key with the same digit. The fixed pattern and the
    values keep floats positive and finite, so that their order bits differ in those bytes alone
    too."""
    dtype = np.dtype(dtype)
    bits = np.dtype(f"u{dtype.itemsize}").type
    x = np.full(n, 0x3FF1B2C3D4E5F607 if dtype.itemsize == 8 else 0x3F8A5C19, bits)
    for b in varying:
        shift = bits(8 * (b % dtype.itemsize))
        byte = rng.integers(0, 5, n).astype(bits) * bits(0x13) + bits(0x10)
        x = (x & ~(bits(0xFF) << shift)) | (byte << shift)
    return x.view(dtype)


CHECKS = {
    "sort": lambda got, x: assert_sorted_equal(got, x),
    "argsort": lambda got, x: assert_argsort_equal(got, x),
    "sort_pairs": lambda got, keys, values: assert_pairs_equal(got, keys, values),
}
