"""The sort lab against NumPy: every variant of sort, argsort and sort_pairs (from the registry)
at the awkward sizes (0, 1, odd, a warp, a radix round and a bitonic chunk +-1, many blocks +-1),
each key dtype, ascending and descending, NumPy and device operands, on random, sorted, reversed,
all-equal and few-distinct keys, and on floats full of NaN (both signs), +-0.0 and +-inf: the
results must equal np.sort / np.argsort(kind="stable") bit for bit (every variant is stable).
Then each radix digit width, the refusals, and sorts over 2^31 keys."""

import os
import subprocess
import sys

import numpy as np
import pytest

import gpulab as gl
from conftest import emulator, probe_module, rng_for, variant_params, variant_where_params
from references import sort as ref

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# 0, 1, 2, odd, a warp +-1, the radix scatter's round of 256 +-1, a bitonic chunk of 2048 +-1
# (the first size with a global step), several chunks +-1, many radix blocks, odd
SIZES = (0, 1, 2, 3, 31, 32, 33, 255, 256, 257, 2047, 2048, 2049, 8191, 8193, 100_003)
DTYPES = (np.int32, np.uint32, np.int64, np.float32, np.float64)
INPUTS = ("random", "sorted", "reversed", "all_equal", "few_distinct", "specials")


def run(fn, where, *arrays, **kw):
    """fn on NumPy arrays, or on device copies with the results brought back."""
    if where == "numpy":
        got = fn(*arrays, **kw)
    else:
        got = fn(*[gl.to_device(a) for a in arrays], **kw)
    results = got if isinstance(got, tuple) else (got,)
    for r in results:
        assert isinstance(r, np.ndarray if where == "numpy" else gl.DeviceArray)
    results = tuple(r if where == "numpy" else r.get() for r in results)
    return results if isinstance(got, tuple) else results[0]


def keys(kind, n, dtype, rng):
    """n keys of dtype: random over the dtype's range (floats: normal), sorted, reversed, all
    equal, a few distinct values (many ties: stability shows), or, for floats, mostly specials:
    NaN of both signs and several payloads, -0.0 and +0.0, -inf and +inf among normal values."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        x = rng.standard_normal(n).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    if kind == "sorted":
        x = np.sort(x)
    elif kind == "reversed":
        x = np.sort(x)[::-1].copy()
    elif kind == "all_equal":
        x = np.full(n, x[0] if n else 0, dtype)
    elif kind == "few_distinct":
        x = rng.integers(0, 3, n).astype(dtype) - (dtype.kind != "u")
    elif kind == "specials":
        if dtype.kind != "f":
            info = np.iinfo(dtype)
            specials = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype)
        else:
            bits = np.dtype(f"u{dtype.itemsize}")
            nan_payload = np.array([np.nan], dtype).view(bits) | bits.type(1)
            specials = np.concatenate([
                np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0], dtype),
                nan_payload.view(dtype), (-nan_payload.view(dtype))])
        pick = rng.integers(0, specials.size, n)
        replace = rng.random(n) < 0.6
        x[replace] = specials[pick[replace]]
    return np.ascontiguousarray(x)


# ---------------------------------------------------------------- results


# each op with its check against NumPy's stable order
RESULTS = {"sort": (gl.sort, ref.assert_sorted_equal),
           "argsort": (gl.argsort, ref.assert_argsort_equal)}


@pytest.mark.parametrize("descending", (False, True), ids=("ascending", "descending"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op,v,where", [pytest.param(op, *p.values, id=f"{op}-{p.id}",
                                                     marks=p.marks)
                                        for op in RESULTS for p in variant_where_params(op)])
def test_matches_numpy_stable(op, v, where, dtype, descending):
    fn, check = RESULTS[op]
    for kind in INPUTS:
        for n in SIZES:
            x = keys(kind, n, dtype, rng_for(op, v.id, kind, n, np.dtype(dtype).name))
            got = run(fn, where, x, variant=v.id, descending=descending)
            try:
                check(got, x, descending)
            except AssertionError as e:
                raise AssertionError(f"{kind} keys, n={n}: {e}") from None


@pytest.mark.parametrize("value_dtype", (np.float32, np.int64), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("v,where", variant_where_params("sort_pairs"))
def test_sort_pairs_moves_values_with_their_keys(v, where, dtype, value_dtype):
    for kind in ("random", "few_distinct", "specials"):
        for n in SIZES:
            rng = rng_for("pairs", v.id, kind, n, np.dtype(dtype).name)
            k = keys(kind, n, dtype, rng)
            values = np.arange(n).astype(value_dtype)[::-1].copy()  # each one names its key
            for descending in (False, True):
                got = run(gl.sort_pairs, where, k, values, variant=v.id, descending=descending)
                try:
                    ref.assert_pairs_equal(got, k, values, descending)
                except AssertionError as e:
                    raise AssertionError(f"{kind}, n={n}, descending={descending}: {e}") from None


def test_the_descending_rule():
    """NaN first, then +inf down to -inf; -0.0 and +0.0 equal, in input order; ties in input
    order -- not np.sort(x)[::-1]."""
    x = np.array([0.0, np.nan, -0.0, 1.0, -np.inf, 1.0, np.inf, -np.nan, 0.0], np.float32)
    for v in (100, 101):
        got = gl.argsort(x, variant=v, descending=True)
        assert got.tolist() == [1, 7, 6, 3, 5, 0, 2, 8, 4]
        s = gl.sort(x, variant=v, descending=True)
        assert np.signbit(s[5:8]).tolist() == [False, True, False]  # 0.0, -0.0, 0.0 as given
        asc = gl.argsort(x, variant=v)
        assert asc.tolist() == [4, 0, 2, 8, 3, 5, 6, 1, 7]


@pytest.mark.parametrize("bits", (4, 8))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.gpu
def test_lsd_radix_every_digit_width(dtype, bits):
    for n in (1, 257, 65_537, 1_000_003):
        for kind in ("random", "specials", "few_distinct"):
            x = keys(kind, n, dtype, rng_for("bits", bits, kind, n))
            ref.assert_sorted_equal(gl.sort(x, variant="lsd_radix", bits=bits), x)
            ref.assert_argsort_equal(gl.argsort(x, variant="lsd_radix", bits=bits,
                                                descending=True), x, True)


# Keys whose bits differ in these bytes alone (references.sort.keys_differing_in): onesweep skips
# the passes of the other bytes on the device. None: all equal (every pass skipped, the inputs
# copied); one byte: one pass, from the inputs straight to the outputs; two and three: an even and
# an odd number of passes, the first reading the inputs.
SKIPPED_PASSES = {"all_equal": (), "low_byte": (0,), "top_byte": (-1,), "second_byte": (1,),
                  "low_and_top_bytes": (0, -1), "three_low_bytes": (0, 1, 2)}


@pytest.mark.gpu
@pytest.mark.parametrize("descending", (False, True), ids=("ascending", "descending"))
@pytest.mark.parametrize("dtype", (np.int32, np.int64, np.float32, np.float64),
                         ids=lambda d: np.dtype(d).name)
def test_onesweep_skips_the_passes_that_move_nothing(dtype, descending):
    """Onesweep on device keys that differ in some bytes only, sort, argsort and sort_pairs (4-
    and 8-byte values), from one key to several waves of tiles: the same results as NumPy's
    stable sort, whichever passes the device skipped and wherever the passes that ran left the
    keys."""
    for kind, varying in SKIPPED_PASSES.items():
        for n in (1, 2, 6145, 1_000_003):
            rng = rng_for("skip", kind, n, np.dtype(dtype).name, descending)
            x = ref.keys_differing_in(varying, n, dtype, rng)
            what = f"{kind} keys, n={n}"
            d = gl.to_device(x)
            try:
                ref.assert_sorted_equal(
                    gl.sort(d, variant="onesweep", descending=descending).get(), x, descending)
                ref.assert_argsort_equal(
                    gl.argsort(d, variant="onesweep", descending=descending).get(), x, descending)
                for value_dtype in (np.float32, np.int64):
                    values = np.arange(n).astype(value_dtype)[::-1].copy()
                    got = gl.sort_pairs(d, gl.to_device(values), variant="onesweep",
                                        descending=descending)
                    ref.assert_pairs_equal(tuple(g.get() for g in got), x, values, descending)
            except AssertionError as e:
                raise AssertionError(f"{what}: {e}") from None


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("sort", backend="cuda"))
def test_sort_on_a_user_stream(v):
    x = keys("random", 300_001, np.float32, rng_for("stream", v.id))
    s = gl.Stream()
    got = gl.sort(gl.to_device(x), variant=v.id, stream=s)
    s.synchronize()
    ref.assert_sorted_equal(got.get(), x)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", (None, "merge_path"), ids=("default", "merge_path"))
def test_sort_over_2_31_keys(variant):
    """The default variant and merge_path past 2^31 keys (64-bit offsets and indices): int32 keys
    of few distinct values, 2^31 + 4097 of them (8.6 GB in and out, 8.6 GB of scratch)."""
    n = (1 << 31) + 4097
    if gl.device_info().get("total_memory", 0) < 40 << 30:
        pytest.skip("needs 40 GB of device memory (26 GB of arrays and the pool's room)")
    pattern = np.array([5, -3, 7, 0], np.int32)
    d = gl.to_device(np.resize(pattern, n))
    got = gl.sort(d, variant=variant)
    del d
    host = got.get()
    del got
    counts = {int(k): n // 4 + (i < n % 4) for i, k in enumerate(pattern)}
    begin = 0
    for key in sorted(counts):
        end = begin + counts[key]
        assert np.all(host[begin:end] == key), key
        begin = end


# ---------------------------------------------------------------- the kernels on the CPU

EMULATOR, needs_toolchain = emulator("sort.py")
SORT_SOURCES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "cuda", "sort")


def emulate(*args):
    return subprocess.run([sys.executable, EMULATOR, *args], capture_output=True, text=True,
                          timeout=900)


@needs_toolchain
def test_radix_and_bitonic_emulated_on_the_cpu():
    """radix.cu's, bitonic.cu's, merge.cu's, onesweep.cu's and quicksort.cu's own kernels, passes,
    stages and levels, run on the CPU by tools/emulate/sort.py (a fiber per CUDA thread, blocks
    in waves that run at once, barriers of the block and of the warp, warp intrinsics' masks
    checked, every buffer poisoned and guarded): every key dtype, 4 and 8 bits, the network, the
    merge sort, onesweep and the quicksort, keys, argsort and 4- and 8-byte values, both
    directions, up to 3 radix blocks of 17 rounds, networks with global steps, merge passes over
    odd numbers of runs, onesweep tiles whose look-back meets unpublished predecessors, onesweep
    on keys that differ in some bytes only (its skipped passes, routes and copy), quicksorts of
    several levels on sorted, reversed, all-equal and few-distinct keys and with a level limit of
    1 and 2 (its merge-sort fallback), bit for bit against a stable sort."""
    done = emulate()
    assert done.returncode == 0 and "all ok" in done.stdout, done.stdout[-2000:] + done.stderr


@needs_toolchain
@pytest.mark.parametrize("source,find,replace", [
    ("radix", "    const bool valid = i < end;", "    const bool valid = i <= end;"),
    ("radix", "      if (first + k < m) counts[first + k] = prefix;",
     "      if (first + k <= m) counts[first + k] = prefix;"),
    ("bitonic", "    compare_exchange(keys, indices, i, j, ((base + i) & k) == 0);\n"
                "    __syncthreads();\n",
     "    compare_exchange(keys, indices, i, j, ((base + i) & k) == 0);\n"),
    ("merge", "    return glc_sort_key<Dtype>::order(a_run[i], descending) <=\n"
              "           glc_sort_key<Dtype>::order(b_run[j], descending);\n  };\n",
     "    return glc_sort_key<Dtype>::order(a_run[i], descending) <\n"
     "           glc_sort_key<Dtype>::order(b_run[j], descending);\n  };\n"),

    ("quicksort", "        }\n      }\n      __syncthreads();\n    }\n",
     "        }\n      }\n    }\n"),
    ("quicksort", "    if (other < ordered || (inclusive && other == ordered))",
     "    if (other < ordered)"),
    ("onesweep", "if (__syncthreads_or(count[p] == n))",
     "if (__syncthreads_or(count[p] == n - 1))"),
    ("onesweep", "--later % 2 == 0 ? route_to_output", "--later % 2 != 0 ? route_to_output"),
    ("onesweep", "auto exists = [&](int j) { return at(j) < n; };",
     "auto exists = [&](int j) { return at(j) <= n; };"),
], ids=("radix-scatter-round-one-past", "radix-scan-writes-one-past",
        "bitonic-shared-step-without-barrier", "merge-pass-ties-from-the-right",
        "quicksort-leaf-step-without-barrier", "quicksort-merge-ties-unstable",
        "onesweep-skip-test-off-by-one", "onesweep-routes-end-on-the-spares",
        "onesweep-copy-one-past"))
def test_the_emulation_catches_a_planted_bug(tmp_path, source, find, replace):
    """The same run of one variant on a copy of its source with one bug planted must fail."""
    with open(os.path.join(SORT_SOURCES, f"{source}.cu")) as f:
        text = f.read()
    assert text.count(find) == 1
    planted = tmp_path / f"{source}.cu"
    planted.write_text(text.replace(find, replace))
    done = emulate("--only", source, f"--{source}", str(planted))
    assert done.returncode != 0 and "FAIL" in done.stdout, done.stdout[-2000:] + done.stderr


CDP_EMULATOR, _ = emulator("quicksort_cdp.py")


@needs_toolchain
def test_quicksort_cdp_emulated_on_the_cpu():
    """quicksort_cdp.cu's kernels, host code and tree of device launches, run on the CPU by
    tools/emulate/quicksort_cdp.py (child grids after their parent block, in a random order,
    before the host launch returns; the launch pool and the nesting limit): every key dtype, keys,
    argsort and values, both directions, random, sorted, reversed, all-equal and few-distinct
    keys, around the shared sort's limit and the tile, at depth limits 0-2 and with launches
    failing, bit for bit against a stable sort."""
    done = subprocess.run([sys.executable, CDP_EMULATOR], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0 and "all ok" in done.stdout, done.stdout[-2000:] + done.stderr


@needs_toolchain
@pytest.mark.parametrize("find,replace", [
    ("        at = hi - 1 - (greater + (prefix >> 16) + __popc(greater_lanes[item] & "
     "lanes_below));",
     "        at = hi - (greater + (prefix >> 16) + __popc(greater_lanes[item] & lanes_below));"),
    ("launch_segment(r, middle + 1, hi, depth + 1, max_depth)",
     "launch_segment(r, middle + 1, hi, depth, max_depth)"),
    ("  return a.key < b.key || (a.key == b.key && a.index < b.index);",
     "  return a.key < b.key;"),
], ids=("cdp-greater-side-one-past", "cdp-child-at-its-parents-depth", "cdp-ties-by-key-alone"))
def test_the_cdp_emulation_catches_a_planted_bug(tmp_path, find, replace):
    """The emulation of a copy of quicksort_cdp.cu with one bug planted must fail: a partition
    writing one past its segment, a child grid reading its parent's buffer, and records ordered
    by key alone (equal keys are then neither below nor above the pivot, and the partition drops
    them)."""
    with open(os.path.join(SORT_SOURCES, "quicksort_cdp.cu")) as f:
        text = f.read()
    assert text.count(find) == 1
    planted = tmp_path / "quicksort_cdp.cu"
    planted.write_text(text.replace(find, replace))
    done = subprocess.run([sys.executable, CDP_EMULATOR, "--source", str(planted), "--first"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode != 0 and "FAIL" in done.stdout, done.stdout[-2000:] + done.stderr


# ---------------------------------------------------------------- refusals


def test_bitonic_refuses_past_its_limit():
    """Refused before anything runs (no gpu mark): no GPU needed to see it. np.zeros maps its
    1 GB lazily, and the refusal comes before the keys are read."""
    x = np.zeros((1 << 28) + 1, np.int32)
    with pytest.raises(ValueError, match="up to 268435456 keys"):
        gl.sort(x, variant="bitonic")


def test_quicksort_cdp_refuses_past_its_limit():
    x = np.zeros((1 << 24) + 1, np.int32)
    with pytest.raises(ValueError, match="up to 16777216 keys"):
        gl.argsort(x, variant="quicksort_cdp")


def test_bad_arguments_name_themselves():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(TypeError, match="x"):
        gl.sort(x.astype(np.int16))
    with pytest.raises(TypeError, match="x"):
        gl.sort([3, 1, 2])
    with pytest.raises(ValueError, match="x must be 1-D"):
        gl.sort(x.reshape(2, 5))
    with pytest.raises(ValueError, match="x must be C-contiguous"):
        gl.sort(x[::2])
    with pytest.raises(TypeError, match="descending"):
        gl.sort(x, descending=1)
    with pytest.raises(ValueError, match="bits"):
        gl.sort(x, variant="lsd_radix", bits=6)
    with pytest.raises(ValueError, match="bits"):
        gl.sort(x, variant="qsort", bits=8)
    with pytest.raises(ValueError, match="variant"):
        gl.sort(x, variant="no_such_sort")
    with pytest.raises(ValueError, match="values"):
        gl.sort_pairs(x, np.arange(9, dtype=np.int64))
    with pytest.raises(TypeError, match="values"):
        gl.sort_pairs(x, np.arange(10, dtype=np.int16))
    with pytest.raises(TypeError, match="x"):
        gl.argsort(np.ones(3, dtype=np.complex64))


@pytest.mark.gpu
def test_mixed_placement_is_refused():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match="values"):
        gl.sort_pairs(gl.to_device(x), x)
    with pytest.raises(TypeError, match="CPU"):
        gl.sort(gl.to_device(x), variant="qsort")


def test_ladder_order_and_ids():
    """The numbering the notebook and docs/labs/sort.md cite."""
    for op in ("sort", "argsort", "sort_pairs"):
        assert [(v.id, v.name) for v in gl.variants(op)] == [
            (0, "bitonic"), (1, "lsd_radix"), (3, "merge_path"), (4, "onesweep"),
            (5, "quicksort"), (6, "quicksort_cdp"), (2, "cub"), (100, "qsort"),
            (101, "openmp_radix")]
    assert all("stable" in v.summary for v in gl.variants("sort"))


def test_the_onesweep_phase_probe_still_fits_the_kernel():
    """tools/probe/onesweep_phases.py instruments onesweep.cu at anchors in its text: each must
    still be there once, or the probe exits naming the one that moved."""
    with open(os.path.join(ROOT, "cuda", "sort", "onesweep.cu")) as f:
        text = probe_module("onesweep_phases").instrumented(f.read())
    assert text.count("STAMP(") == 7  # the macro and the six phases' stamps
    assert "onesweep_probe_report" in text


def test_the_onesweep_side_by_side_probe_refuses_what_it_cannot_build(capsys):
    """tools/probe/onesweep_ab.py names a source that is not a file before building anything."""
    with pytest.raises(SystemExit) as stop:
        probe_module("onesweep_ab").main(["--log2n", "10", "candidate=/no/such/onesweep.cu"])
    assert stop.value.code == 2
    assert "candidate=/no/such/onesweep.cu: not a name and a file" in capsys.readouterr().err
