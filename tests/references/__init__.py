"""Each lab's inputs and NumPy references for the tests and the sanitizer drivers, one module per
lab (references/<lab>.py). A module's CHECKS maps each of the lab's ops to a function
check(got, *args) that raises AssertionError unless got, the op's result for the NumPy
arguments args, lies within the problem's rounding bound of a float64 reference.
conftest.CHECKS gathers them all. This file holds what the references share."""

import importlib
import pkgutil
import zlib

import numpy as np


def rng_for(*key):
    """A generator seeded from the test's parameters, so every failure reproduces."""
    return np.random.default_rng([zlib.crc32(repr(k).encode()) for k in key])


def nonzero_normal(rng, shape, dtype):
    """Standard normal values, never zero (DESIGN: random data, never zeros)."""
    a = rng.standard_normal(shape).astype(dtype)
    a[a == 0] = dtype(0.5)
    return a


def check_variant(checks, v, got, *args):
    """Checks got, variant v's result for the NumPy arguments args, against the op's reference:
    every variant computes its op, so none is exempt. A check that takes the variant
    (check.per_variant: the TF32 rungs' bound differs from FP32's) gets it; any other is called
    as checks[v.op](got, *args)."""
    check = checks[v.op]
    if getattr(check, "per_variant", False):
        check(got, *args, variant=v)
    else:
        check(got, *args)


def all_checks():
    """Every lab's CHECKS, merged."""
    checks = {}
    for module in pkgutil.iter_modules(__path__):
        checks.update(importlib.import_module(f"{__name__}.{module.name}").CHECKS)
    return checks
