"""Argument fuzz of every gpulab op: random calls, most of them with wrong arguments, from which
only the outcomes that the contract (CONTRIBUTING.md, The rules) allows may come out.

    python3 tools/fuzz_ops.py --calls 100000 --seed 1         # from the repository root
    python3 tools/fuzz_ops.py --seed 1 --start 4711 --calls 1 -v   # replays call 4711 alone

It imports whichever gpulab Python finds first (the header line says which): set PYTHONPATH to
the repository root to fuzz a checkout built with `python3 setup.py build_ext --inplace`.

The calls go to every op of the registry (gpulab._op.OPS) and to gl.nbody_step and
gl.nbody_energy. Each starts from the op's own valid example (its `example(n, rng)`) and
replaces arguments at random: arrays by other dtypes, ranks, sizes, empty, non-contiguous,
read-only and misaligned views, NumPy or device placement or a mix, lists, None, scalars,
strings; variant, block and the other tunables by valid and invalid ids, names and types;
stream by None, gpulab.Stream, 0, 1, 2, refused ints (negative, >= 2**47, past 64 bits) and
objects; out by right and wrong arrays; the op's scalars (a, eps, dt, G, steps, ...) by NaN,
infinities, negative and huge values and wrong types.

Allowed outcomes: a return, TypeError, ValueError, an OverflowError whose message names an
argument, and gl.NoDeviceError on a machine without a usable GPU. Anything else (RuntimeError,
SystemError, gl.CudaError, an asynchronous CUDA error found by the synchronize after each call,
a crash, a hang) is a failure: it is printed with the call, the seed and the call's index, and
the exit status is 1. After the calls the library must still work: saxpy and reduce against
NumPy (on the GPU too when one is usable), and gl.synchronize() where there is a GPU.

Every call draws from its own generator, seeded by (seed, index), so --start and --calls replay
one call alone. The calls run in a worker process that records, in a small shared file, which
call it is in; when the worker dies (SIGSEGV, abort) or stops moving (--hang-s), this process
names that call. --in-process runs the calls here, without that guard.

Not fuzzed, because the contract trusts them: int stream handles in [3, 2**47) (taken as
cudaStream_t pointers, as CuPy and PyTorch take them) and the pointers and extents of
__cuda_array_interface__ (device views here are honest views of real device memory), and huge
but valid work sizes (steps stay small, arrays stay under ~5000 elements).
"""

import argparse
import faulthandler
import gc
import inspect
import mmap
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from decimal import Decimal
from fractions import Fraction

import numpy as np

import gpulab as gl
from gpulab._op import OPS

OUTCOMES = ("ok", "TypeError", "ValueError", "OverflowError", "NoDeviceError")
FULL_REPORTS = 10  # failures printed with their traceback; later ones get one line
MAX_FAILURES = 100  # then the run stops: after a sticky CUDA error every call would fail

# The shared state file: call index (int64; -1 before the first call, -2 in the health
# check), description length (uint32), description (UTF-8).
STATE_BYTES = 1 << 16
STATE_HEAD = struct.Struct("<qI")

SIZES = (0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4097)
BODIES = (0, 1, 2, 3, 16, 31, 32, 33, 64, 65)

# Ints that can never be a CUDA stream (gl_stream_arg refuses them with ValueError).
REFUSED_STREAM_INTS = (-1, -5, -2**31, -2**63, -2**63 - 1, 2**47, 2**48, 2**63, 2**64 - 1, 2**64,
                       2**100)


# ---------------------------------------------------------------- odd objects


class CaiView:
    """A foreign device array (CUDA Array Interface v3) over part of a DeviceArray's memory, for
    layouts gpulab never makes itself; its pointer and extent are honest."""

    def __init__(self, base, shape, strides=None, offset=0, readonly=False, override=None):
        self.base = base  # keeps the memory alive
        override = override or {}
        cai = dict(base.__cuda_array_interface__)
        cai.update(shape=tuple(shape), strides=strides, data=(base.ptr + offset, readonly))
        for key, value in override.items():
            if value is _DROP:
                cai.pop(key, None)
            else:
                cai[key] = value
        self.__cuda_array_interface__ = cai
        self.note = (f"CaiView({cai.get('typestr')}, {cai.get('shape')}, strides={strides}, "
                     f"offset={offset}, readonly={readonly}"
                     + "".join(f", {k}={describe(v)}" for k, v in override.items()) + ")")

    def __repr__(self):
        return self.note


class FakeCai:
    """What looks like a device array to gpulab but points nowhere: only on machines without a
    GPU, where gpulab must stop at its GPU check."""

    def __init__(self, shape, typestr):
        self.__cuda_array_interface__ = {"version": 3, "shape": tuple(shape), "typestr": typestr,
                                         "data": (0x10000, False), "strides": None}

    def __repr__(self):
        cai = self.__cuda_array_interface__
        return f"FakeCai({cai['typestr']}, {cai['shape']})"


class _Drop:
    def __repr__(self):
        return "<dropped>"


_DROP = _Drop()


class TorchStream:
    """A stream as PyTorch hands it over: .cuda_stream."""

    def __init__(self, handle):
        self.cuda_stream = handle

    def __repr__(self):
        return f"TorchStream(cuda_stream={describe(self.cuda_stream)})"


class CupyStream:
    """A stream as CuPy hands it over: .ptr."""

    def __init__(self, handle):
        self.ptr = handle

    def __repr__(self):
        return f"CupyStream(ptr={describe(self.ptr)})"


class BrokenStream:
    """A stream-like object whose handle cannot be read."""

    @property
    def cuda_stream(self):
        raise RuntimeError("this stream's handle cannot be read")

    def __repr__(self):
        return "BrokenStream()"


class Opaque:
    def __repr__(self):
        return "object()"


# ---------------------------------------------------------------- descriptions


def int_text(v):
    """A big int as the power of two it is next to (2**64, 2**64-1, -2**63-1), else in hex."""
    if abs(v) < 2**32:
        return repr(v)
    sign, w = ("-", -v) if v < 0 else ("", v)
    k = w.bit_length() - 1
    if w == 1 << k:
        return f"{sign}2**{k}"
    if w == (1 << k) + 1:
        return f"{sign}2**{k}{'-' if sign else '+'}1"
    if w == (1 << (k + 1)) - 1:
        return f"{sign}2**{k + 1}{'+' if sign else '-'}1"
    return hex(v)


def describe(v, streams=()):
    """A short, readable description of an argument (no data, only what the call depends on)."""
    for k, s in enumerate(streams):
        if v is s:
            return f"streams[{k}]"
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return int_text(v)
    if isinstance(v, (float, complex, str, bytes, Fraction, Decimal)):
        text = repr(v)
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(v, np.ndarray):
        dtype = v.dtype.str if v.dtype.byteorder == ">" else str(v.dtype)
        flags = []
        if type(v) is not np.ndarray:
            flags.append(type(v).__name__)
        if not v.flags.c_contiguous:
            flags.append(f"strides={v.strides}")
        if not v.flags.writeable:
            flags.append("readonly")
        if not v.flags.aligned:
            flags.append("unaligned")
        return f"ndarray({dtype}, {v.shape}{''.join(', ' + f for f in flags)})"
    if isinstance(v, np.generic):
        return f"np.{type(v).__name__}({v.item()!r})"
    if isinstance(v, gl.DeviceArray):
        return f"DeviceArray({v.dtype}, {v.shape})"
    if isinstance(v, gl.Stream):
        return "Stream()"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(describe(x, streams) for x in v[:2])
        more = ", ..." if len(v) > 2 else ""
        brackets = "[]" if isinstance(v, list) else "()"
        return f"{brackets[0]}{inner}{more}{brackets[1]} (len {len(v)})"
    if isinstance(v, dict):
        return f"dict(len {len(v)})"
    if isinstance(v, memoryview):
        return f"memoryview({v.format}, {v.shape})"
    text = repr(v)
    return text if len(text) <= 200 else f"{type(v).__name__}(...)"


# ---------------------------------------------------------------- targets


def _nbody_system(rng):
    n = int(rng.choice(BODIES))
    return gl.plummer(n, seed=int(rng.integers(1 << 31)))


def _step_example(n, rng):
    pos, vel, mass = _nbody_system(rng)
    return pos, vel, mass, 1e-3, 0.05


def _energy_example(n, rng):
    pos, vel, mass = _nbody_system(rng)
    return pos, vel, mass, 0.05


class Target:
    """A function to fuzz: its valid example arguments, its parameters, and the variant ladder
    that its variant= picks from (None: it takes no variant)."""

    def __init__(self, name, fn, example, ladder):
        self.name, self.fn, self.example, self.ladder = name, fn, example, ladder
        self.params = list(inspect.signature(fn).parameters)
        self.variants = gl.variants(ladder) if ladder else []
        self.tunables = {}
        for v in self.variants:
            for tunable, record in v.tunables.items():
                self.tunables.setdefault(tunable, set()).update(record["values"])


def targets():
    found = {name: Target(name, fn, fn.__gpulab_op__.example, name) for name, fn in OPS.items()}
    found["nbody_step"] = Target("nbody_step", gl.nbody_step, _step_example, "nbody_accel")
    found["nbody_energy"] = Target("nbody_energy", gl.nbody_energy, _energy_example, None)
    return found


# ---------------------------------------------------------------- the fuzzer


def pick(rng, options):
    return options[int(rng.integers(len(options)))]


class Fuzzer:
    """Makes the calls, checks their outcomes and counts them."""

    def __init__(self, seed, only=None, verbose=False, state=None):
        self.seed, self.verbose, self.state = seed, verbose, state
        self.gpu = gl.cuda_available()
        self.targets = {k: v for k, v in targets().items() if not only or k in only}
        self.names = list(self.targets)
        # Streams made once, so that a call's stream is the same whenever it is replayed.
        self.streams = [gl.Stream(), gl.Stream(non_blocking=False)] if self.gpu else []
        self.counts = Counter()
        self.failures = 0
        self.wild = 0.0
        self.chosen = None  # the variant record the call picks, when it picks a known one

    # ---- arrays

    def mutate_array(self, a, rng):
        kind = pick(rng, ("dtype", "dtype", "rank", "size", "size", "empty", "strided", "readonly",
                          "unaligned", "nonarray", "nonarray", "special", "exotic"))
        if kind == "dtype":
            dtype = pick(rng, (np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_,
                               np.complex64, object, np.float16, ">f4", ">f8"))
            return a.astype(dtype)
        if kind == "rank":
            flat = a.ravel()
            ndim = int(rng.integers(4))
            if ndim == 0:
                return np.asarray(flat[0] if flat.size else 0, dtype=a.dtype)
            if ndim == 1:
                return flat.copy()
            k = flat.size
            d = next((d for d in (3, 2, 4, 5) if k % d == 0), 1)
            return flat.reshape((d, k // d) if ndim == 2 else (d, 1, k // d)).copy()
        if kind == "size":
            shape = list(a.shape) or [1]
            axis = int(rng.integers(len(shape)))
            shape[axis] = max(0, shape[axis] + int(pick(rng, (-1, 1, 2, -3, 7))))
            return rng.standard_normal(shape).astype(a.dtype)
        if kind == "empty":
            return np.empty(pick(rng, ((0,), (0, 3), (3, 0), (0, 0), (0, 3, 1))), dtype=a.dtype)
        if kind == "strided":
            if a.ndim == 0:
                return a
            how = pick(rng, ("every_other", "reversed", "fortran", "transposed"))
            if how == "every_other":
                return np.repeat(a, 2, axis=-1)[..., ::2]
            if how == "reversed":
                return a[::-1]
            return np.asfortranarray(a) if how == "fortran" else a.T
        if kind == "readonly":
            b = a.copy()
            b.flags.writeable = False
            return b
        if kind == "unaligned":
            buf = np.empty(a.nbytes + 1, dtype=np.uint8)[1:]
            b = buf.view(a.dtype).reshape(a.shape)
            b[...] = a
            return b
        if kind == "nonarray":
            return pick(rng, (a.tolist(), tuple(a.ravel()[:3].tolist()), None, 1.5, 3, "x", b"x",
                              {"x": 1}, np.float32(1.5), memoryview(np.ascontiguousarray(a)),
                              Opaque()))
        if kind == "special":
            b = a.astype(a.dtype)
            if b.size and b.dtype.kind == "f":
                b.flat[int(rng.integers(b.size))] = pick(rng, (np.nan, np.inf, -np.inf, 0.0))
            return b
        # exotic: NumPy subclasses and dtypes no op takes
        how = pick(rng, ("masked", "matrix", "structured", "datetime", "string"))
        if how == "masked":
            return np.ma.masked_array(a, mask=np.zeros(a.shape, bool))
        if how == "matrix" and a.ndim == 2:
            return np.asmatrix(a)
        if how == "structured":
            return np.zeros(a.shape, dtype=[("x", "f4")])
        if how == "datetime":
            return np.zeros(a.shape, dtype="datetime64[s]")
        return np.zeros(a.shape, dtype="U3")

    def to_device(self, a, rng):
        """a on the device (a DeviceArray, or an honest CAI view with an odd layout); a itself
        where it cannot live there."""
        if type(a) is not np.ndarray or a.dtype.kind not in "biufc":
            return a
        if not self.gpu:
            return FakeCai(a.shape, a.dtype.str)
        kind = self.either(rng, ("plain", "plain", "plain", "plain", "readonly", "offset"),
                           ("strided", "offset", "malformed"))
        if kind == "plain" or a.ndim == 0 or a.size == 0:
            return gl.to_device(a)
        if kind == "strided":
            base = gl.to_device(np.repeat(a, 2, axis=-1))
            strides = list(base.strides)
            strides[-1] *= 2
            return CaiView(base, a.shape, strides=tuple(strides))
        if kind == "readonly":
            return CaiView(gl.to_device(a), a.shape, readonly=True)
        if kind == "offset":  # by one element, or by one byte (misaligned)
            step = pick(rng, (a.itemsize, 1))
            raw = np.zeros(a.nbytes + a.itemsize, dtype=np.uint8)
            raw[step:step + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).ravel()
            return CaiView(gl.to_device(raw), a.shape, offset=step,
                           override={"typestr": a.dtype.str})
        # malformed interfaces over honest memory: whatever they claim lies inside the
        # allocation or can be seen to be wrong (a negative dimension, a garbage stream)
        base = gl.to_device(a)
        override = pick(rng, ({"version": 1}, {"typestr": _DROP}, {"shape": _DROP},
                              {"data": None}, {"data": (base.ptr,)}, {"typestr": "|O"},
                              {"typestr": 5}, {"shape": list(a.shape)}, {"shape": ("x",)},
                              {"shape": (-1,) * a.ndim}, {"strides": (1,)},
                              {"strides": "x"}, {"mask": 0},
                              {"stream": pick(rng, REFUSED_STREAM_INTS)}, {"stream": "x"}))
        return CaiView(base, a.shape, override=override)

    def place(self, a, mode, rng):
        if mode == "device" or (mode == "mixed" and rng.random() < 0.5):
            return self.to_device(a, rng)
        return a

    # ---- scalars and keywords

    def either(self, rng, valid, invalid):
        """One of valid, or with the call's wildness one of invalid (which may hold valid
        values too: they are what a wild call sometimes passes as well)."""
        return pick(rng, invalid if rng.random() < self.wild else valid)

    def scalar(self, base, rng):
        return self.either(rng, (base, base, 1.0, 0.5, -2.0, np.float32(2), np.float64(0.1),
                                 np.int64(3), 3), (
            0, 0.0, -0.0, np.bool_(True), True, float("nan"), float("inf"), -float("inf"),
            1e300, -1e300, 1e-300, 5e-324, 1e38, 3.5e38, 2**70, -2**70, 2**1100, "2", None, [1.0],
            1 + 2j, np.complex64(1), b"2", Opaque(), np.array(2.0), np.array([1.0, 2.0]),
            Fraction(1, 3), Decimal("1.5")))

    def variant(self, target, rng):
        """variant=, remembering the variant it picks (self.chosen), so that the tunables and
        the stream of a call meant to succeed suit it."""
        ids = [v.id for v in target.variants]
        valid = pick(rng, target.variants)
        value = self.either(rng, (None, valid.id, valid.id, valid.name, np.int64(valid.id)), (
            np.int32(valid.id), max(ids) + 1, -1, 50, 2**31, 2**64, -2**63, "nope", "",
            valid.name.upper() + "_X", 1.5, float(valid.id), True, False, [valid.id],
            valid.name.encode(), {valid.id: 1}, Opaque()))
        if value is None:
            self.chosen = self.default_variant(target)
        else:
            self.chosen = next((v for v in target.variants if value is not True and
                                value is not False and value in (v.id, v.name)), None)
        return value

    def default_variant(self, target):
        backend = "cuda" if self.gpu else "cpu"
        return next((v for v in target.variants if v.backend == backend and v.best), None)

    def tunable(self, target, name, rng):
        values = sorted(target.tunables.get(name, ())) or [256]
        own = self.chosen.tunables.get(name, {}).get("values") if self.chosen else None
        valid = (None, pick(rng, own), np.int32(pick(rng, own))) if own else (None,)
        return self.either(rng, valid, (
            pick(rng, values), 0, -32, 1, 3, 16, 48, 100, 2048, 4096, 2**31, 2**64, -2**63,
            2 * max(values), "256", 256.0, True, [256], Opaque()))

    def stream(self, rng):
        runs_on_cpu = not self.gpu or (self.chosen is not None and self.chosen.backend == "cpu")
        valid = [None] if runs_on_cpu else [None, 0, 1, 2]
        if self.streams and not runs_on_cpu:
            own = pick(rng, self.streams)
            valid += [own, own, own.handle, TorchStream(own.handle), CupyStream(own.handle),
                      TorchStream(0)]
        return self.either(rng, valid, (
            0, 1, 2, pick(rng, REFUSED_STREAM_INTS), pick(rng, REFUSED_STREAM_INTS),
            TorchStream(pick(rng, REFUSED_STREAM_INTS)), CupyStream(pick(rng, REFUSED_STREAM_INTS)),
            TorchStream("x"), CupyStream(1.5), BrokenStream(), Opaque(), "0", 1.5, np.int64(0),
            [0], b""))

    def out(self, like, mode, rng):
        """out= for an op whose result is like `like` (a NumPy array); None for out=x."""
        valid = np.full(like.shape, np.nan, dtype=like.dtype)
        choice = self.either(rng, ("valid", "valid", "valid", "alias"),
                             ("mutated", "mutated", "opposite"))
        if choice == "alias":
            return None
        if choice == "mutated":
            valid = self.mutate_array(valid, rng)
        if choice == "opposite":
            mode = {"numpy": "device", "device": "numpy", "mixed": "mixed"}[mode]
        return self.place(valid, mode, rng)

    def keyword(self, target, name, base, args, mode, rng):
        """A value for the keyword argument `name`; base holds the call's valid example
        arguments, args the ones it passes."""
        if name == "variant":
            return self.variant(target, rng)
        if name in target.tunables or name in ("block", "unroll", "bodies"):
            return self.tunable(target, name, rng)
        if name == "stream":
            return self.stream(rng)
        if name == "out":
            arrays = [k for k, a in enumerate(base) if isinstance(a, np.ndarray)]
            like = base[arrays[0]]
            if target.name == "nbody_accel":
                like = np.zeros((like.shape[0], 3), np.float32)
            out = self.out(like, mode, rng)
            return out if out is not None else args[arrays[0]]
        if name == "op":
            return self.either(rng, ("sum", "min", "max"),
                               ("SUM", "mean", "", None, 0, b"sum", ["sum"]))
        if name == "steps":
            return self.either(rng, (0, 1, 2, 3, np.int64(2), np.int32(1)), (
                -1, -2**63, 2**63, 2**64, 2**100, 1.5, True, None, "1", np.float64(1)))
        if name == "parts":
            return self.either(rng, (True, False), (None, "yes", 1, np.bool_(True)))
        if name in ("G", "eps", "dt", "a"):
            return self.scalar(1.0, rng)
        return pick(rng, (None, 0, -1, 2**64, 1.5, "x", Opaque()))

    # ---- one call

    def make_call(self, index):
        """The call of this index: (target, positional args, keyword args), from its own
        generator."""
        rng = np.random.default_rng([self.seed, index])
        target = self.targets[pick(rng, self.names)]
        n = int(pick(rng, SIZES)) if rng.random() < 0.7 else int(rng.integers(0, 5001))
        base = list(target.example(n, rng))
        # the share of arguments that go wrong: a quarter of the calls are meant to succeed
        self.wild = pick(rng, (0.0, 0.1, 0.3, 0.6))
        self.chosen = self.default_variant(target)
        # without a GPU, "device" arrays are FakeCai objects, which must not get past the
        # GPU check: a few of them suffice
        modes = ("numpy", "numpy", "device", "device", "mixed") if self.gpu else \
            ("numpy", "numpy", "numpy", "numpy", "mixed")
        mode = pick(rng, modes)
        args = []
        for value in base:
            if isinstance(value, np.ndarray):
                if rng.random() < self.wild:
                    value = self.mutate_array(value, rng)
                value = self.place(value, mode, rng)
            elif rng.random() < self.wild:
                value = self.scalar(value, rng)
            args.append(value)
        kwargs = {}
        for name in target.params[len(base):]:
            if rng.random() < 0.5:
                kwargs[name] = self.keyword(target, name, base, args, mode, rng)
        odd = rng.random() if self.wild else 1.0
        if odd < 0.01 and args:
            args.pop()  # a missing argument
        elif odd < 0.02:
            kwargs["bogus"] = 1
        elif odd < 0.03:
            args.extend([None] * (len(target.params) + 1 - len(args)))  # too many
        return target, args, kwargs

    def describe_call(self, target, args, kwargs):
        parts = [describe(a, self.streams) for a in args]
        parts += [f"{k}={describe(v, self.streams)}" for k, v in kwargs.items()]
        return f"gl.{target.name}({', '.join(parts)})"

    def record(self, index, text):
        if self.state is None:
            return
        data = text.encode("utf-8", "replace")[:STATE_BYTES - STATE_HEAD.size]
        self.state[STATE_HEAD.size:STATE_HEAD.size + len(data)] = data
        STATE_HEAD.pack_into(self.state, 0, index, len(data))

    def settle(self):
        """Waits for all the work the call may have queued, so that an asynchronous CUDA error
        is charged to the call that caused it."""
        if not self.gpu:
            return
        gl.synchronize()
        for s in self.streams:
            s.synchronize()
        gl.synchronize(0)
        gl.synchronize(2)

    def documented(self, error, target):
        """The outcome's name, or None for a failure."""
        if isinstance(error, gl.NoDeviceError):
            return None if self.gpu else "NoDeviceError"
        if isinstance(error, gl.CudaError):
            return None
        if isinstance(error, OverflowError):
            return "OverflowError" if names_a_parameter(str(error), target.params) else None
        if isinstance(error, (TypeError, ValueError)):
            return "ValueError" if isinstance(error, ValueError) else "TypeError"
        return None

    def fail(self, index, text, what):
        self.failures += 1
        self.counts["failures"] += 1
        if self.failures <= FULL_REPORTS:
            print(f"fuzz_ops: FAILURE in call #{index} (seed {self.seed}): {text}\n"
                  f"  reproduce: {replay_command(self.seed, index)}\n{what}", flush=True)
        else:
            print(f"fuzz_ops: FAILURE in call #{index} (seed {self.seed}): {text}: "
                  f"{what.strip().splitlines()[-1]}", flush=True)

    def run_call(self, index):
        self.record(index, "(building the call's arguments)")
        try:
            target, args, kwargs = self.make_call(index)
        except Exception:  # noqa: BLE001 - gl.to_device failed, or this fuzzer has a bug
            self.fail(index, "building the call's arguments", traceback.format_exc())
            return
        values = [*args, *kwargs.values()]
        text = self.describe_call(target, args, kwargs)
        self.index, self.text = index, text
        self.record(index, text)
        if self.verbose:
            print(f"#{index}: {text}", flush=True)
        outcome = None
        try:
            target.fn(*args, **kwargs)
            outcome = "ok"
        except Exception as error:  # noqa: BLE001 - what comes out is what is checked
            outcome = self.documented(error, target)
            if outcome is None:
                self.fail(index, text, traceback.format_exc())
        del args, kwargs, values
        try:
            self.settle()
        except Exception:  # noqa: BLE001
            self.fail(index, text, "  after the call, synchronizing:\n" + traceback.format_exc())
            outcome = None
        if outcome:
            self.counts[outcome] += 1
        if self.verbose:
            print(f"#{index}: -> {outcome or 'FAILURE'}", flush=True)

    # ---- after the calls

    def health_check(self):
        """The library still computes right: saxpy and reduce against NumPy, on the GPU too
        when one is usable, and gl.synchronize()."""
        self.record(-2, "health check: saxpy and reduce against NumPy, gl.synchronize()")
        rng = np.random.default_rng([self.seed, 1 << 40])
        x = rng.standard_normal(1025).astype(np.float32)
        y = rng.standard_normal(1025).astype(np.float32)
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        eps = float(np.finfo(np.float32).eps)
        saxpy_bound = 2 * eps * (np.abs(2.5 * x64) + np.abs(y64))
        sum_bound = x.size * eps * np.abs(x64).sum()
        problems = []

        def check(where, got_saxpy, got_sum):
            err = np.abs(np.asarray(got_saxpy, np.float64) - (2.5 * x64 + y64))
            if got_saxpy.shape != x.shape or not (err <= saxpy_bound).all():
                problems.append(f"saxpy ({where}) differs from NumPy")
            if not abs(float(got_sum) - x64.sum()) <= sum_bound:
                problems.append(f"reduce ({where}) gave {float(got_sum)!r}, NumPy {x64.sum()!r}")

        try:
            check("NumPy in", gl.saxpy(2.5, x, y), gl.reduce(x))
            if self.gpu:
                dx, dy = gl.to_device(x), gl.to_device(y)
                check("device in", gl.saxpy(2.5, dx, dy).get(), gl.reduce(dx).item())
                gl.synchronize()
        except Exception:  # noqa: BLE001
            problems.append("raised:\n" + traceback.format_exc())
        return problems


def names_a_parameter(message, params):
    """Whether the message names one of params as a word. saxpy's `a` counts only where gpulab
    puts the argument it complains about, at the start, and not as the English article."""
    words = set(re.findall(r"(?<![\w.])\w+", message))
    return any(p in words if p != "a" else
               re.match(r"a(:|\s+(must|is|has|of|can't|cannot)\b)", message)
               for p in params)


def replay_command(seed, index):
    return f"python3 tools/fuzz_ops.py --seed {seed} --start {index} --calls 1 -v"


def tally(counts):
    return ", ".join(f"{k}={counts[k]}" for k in OUTCOMES
                     if counts[k] or k != "OverflowError")


def summary(counts, calls):
    return f"{calls} calls, {counts['failures']} failures ({tally(counts)})"


def work(opts, state=None):
    """Runs the calls here; returns the exit status."""
    faulthandler.enable()
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    fuzzer = Fuzzer(opts.seed, opts.only, opts.verbose, state)
    where = "a GPU" if fuzzer.gpu else f"no GPU ({gl._core._gpu_status()})"
    print(f"fuzz_ops: seed {opts.seed}, calls {opts.start}..{opts.start + opts.calls - 1}, "
          f"{where}; gpulab from {os.path.dirname(gl.__file__)}; targets: "
          f"{', '.join(fuzzer.names)}", flush=True)
    pool0 = gl.pool_usage()["used"] if fuzzer.gpu else None
    every = max(1, opts.calls // 10)
    t0 = time.perf_counter()
    made = 0
    for k in range(opts.calls):
        if fuzzer.failures >= MAX_FAILURES:
            print(f"fuzz_ops: stopping after {fuzzer.failures} failures", flush=True)
            break
        fuzzer.run_call(opts.start + k)
        made += 1
        if (k + 1) % every == 0 and k + 1 < opts.calls:
            print(f"fuzz_ops: {k + 1}/{opts.calls} calls ({100 * (k + 1) // opts.calls}%), "
                  f"{time.perf_counter() - t0:.1f} s: {fuzzer.counts['failures']} failures "
                  f"({tally(fuzzer.counts)})", flush=True)
    elapsed = time.perf_counter() - t0
    problems = fuzzer.health_check()
    for problem in problems:
        print(f"fuzz_ops: HEALTH CHECK FAILED after the calls: {problem}", flush=True)
    if fuzzer.gpu:
        gc.collect()
        gl.synchronize()
        print(f"fuzz_ops: device pool in use: {pool0} bytes before the calls, "
              f"{gl.pool_usage()['used']} after (for information)", flush=True)
    print(f"fuzz_ops: {summary(fuzzer.counts, made)} in {elapsed:.1f} s; health check "
          f"{'FAILED' if problems else 'ok'}", flush=True)
    return 1 if fuzzer.failures or problems else 0


def read_state(path):
    with open(path, "rb") as f:
        raw = f.read(STATE_BYTES)
    index, length = STATE_HEAD.unpack_from(raw, 0)
    return index, raw[STATE_HEAD.size:STATE_HEAD.size + length].decode("utf-8", "replace")


def guard(opts, argv):
    """Runs the calls in a worker process; names the call if the worker crashes or hangs."""
    fd, path = tempfile.mkstemp(prefix="fuzz_ops-", suffix=".state")
    try:
        os.write(fd, STATE_HEAD.pack(-1, 0).ljust(STATE_BYTES, b"\0"))
        os.close(fd)
        worker = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker-state",
                                   path, *argv])
        try:
            return watch(worker, path, opts)
        finally:
            if worker.poll() is None:  # this process was interrupted
                worker.kill()
                worker.wait()
    finally:
        os.unlink(path)


def watch(worker, path, opts):
    """Waits for the worker; names the call it was in if it crashed or hung."""
    last, since = None, time.monotonic()
    while True:
        try:
            rc = worker.wait(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            pass
        index, text = read_state(path)
        if index != last:
            last, since = index, time.monotonic()
        elif time.monotonic() - since > opts.hang_s:
            worker.kill()
            worker.wait()
            print(f"fuzz_ops: HANG: call #{index} (seed {opts.seed}) ran for more than "
                  f"{opts.hang_s:g} s: {text}\n  reproduce: {replay_command(opts.seed, index)}",
                  flush=True)
            return 1
    if rc in (0, 1):
        return rc
    index, text = read_state(path)
    how = f"signal {signal.strsignal(-rc) or -rc}" if rc < 0 else f"exit status {rc}"
    where = {-1: "before the first call", -2: "in the health check"}.get(
        index, f"in call #{index} (seed {opts.seed})")
    print(f"fuzz_ops: CRASH: the worker died of {how} {where}: {text}", flush=True)
    if index >= 0:
        print(f"  reproduce: {replay_command(opts.seed, index)}", flush=True)
    return 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10000, help="calls to make (10000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the run (0)")
    parser.add_argument("--start", type=int, default=0, help="index of the first call (0)")
    parser.add_argument("--only", type=lambda s: s.split(","), default=None,
                        help="comma-separated targets to fuzz (all)")
    parser.add_argument("--hang-s", type=float, default=120.0,
                        help="a call that runs longer than this many seconds is a hang (120)")
    parser.add_argument("--in-process", action="store_true",
                        help="run the calls in this process, without the crash guard")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every call")
    parser.add_argument("--worker-state", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.calls < 1 or opts.seed < 0 or opts.start < 0:
        parser.error("--calls must be >= 1, --seed and --start >= 0")
    unknown = set(opts.only or ()) - set(targets())
    if unknown:
        parser.error(f"--only: unknown target(s) {', '.join(sorted(unknown))}; known: "
                     f"{', '.join(targets())}")
    if opts.worker_state:
        with open(opts.worker_state, "r+b") as f:
            state = mmap.mmap(f.fileno(), STATE_BYTES)
        return work(opts, state)
    if opts.in_process:
        return work(opts)
    return guard(opts, argv)


if __name__ == "__main__":
    sys.exit(main())
