"""sweep()'s guards: a keyword nobody takes is a TypeError that names it (not an empty
result), and a grid whose every point was skipped warns why."""

import importlib
import warnings

import numpy as np
import pytest

import gpulab as gl
from references.saxpy import saxpy_inputs

# gl.sweep is the function; the module holds the warning's class
sweep_module = importlib.import_module("gpulab.sweep")


@pytest.fixture(scope="module")
def saxpy_args():
    return saxpy_inputs(1000, np.float32)


@pytest.fixture(scope="module")
def cpu_ids():
    return [v.id for v in gl.variants("saxpy") if v.backend == "cpu"]


def test_a_misspelt_keyword_is_a_type_error_naming_it(saxpy_args):
    with pytest.raises(TypeError) as caught:
        gl.sweep(gl.saxpy, *saxpy_args, blcok=[64, 128], progress=False)
    text = str(caught.value)
    assert "'blcok'" in text and "did you mean 'block'" in text
    # the valid ones, by kind: the op's arguments, its tunables, bench's options
    for word in ("variant", "stream", "block", "repeat", "warmup", "budget_s"):
        assert word in text
    # the positional arguments already given are not offered again
    assert "arguments: variant" in text


def test_a_misspelt_scalar_keyword_is_refused_too(saxpy_args, cpu_ids):
    with pytest.raises(TypeError, match="'repaet'.*did you mean 'repeat'"):
        gl.sweep(gl.saxpy, *saxpy_args, variant=cpu_ids, repaet=2, progress=False)


def test_tunables_of_an_op_that_takes_them_as_keywords():
    """matmul(A, B, variant, stream, out_dtype, **tunables): its variants' tunables are its
    keywords."""
    tunables = {t for v in gl.variants("matmul") for t in v.tunables}
    assert tunables
    A = np.ones((8, 8), np.float32)
    with pytest.raises(TypeError) as caught:
        gl.sweep(gl.matmul, A, A, tiel=[8], progress=False)
    assert "tunables: " in str(caught.value)
    assert all(t in str(caught.value) for t in tunables)
    valid = sweep_module.valid_keywords(gl.matmul, 2)
    assert set(valid["tunables"]) == tunables
    assert valid["arguments"] == ["variant", "stream", "out_dtype"]


def test_every_point_skipped_warns_why(saxpy_args, cpu_ids):
    with pytest.warns(sweep_module.SweepSkippedWarning) as caught:
        res = gl.sweep(gl.saxpy, *saxpy_args, variant=cpu_ids, block=[64], repeat=1, warmup=0,
                       progress=False)
    assert res == [] and len(res.skipped) == len(cpu_ids)
    [warning] = caught
    text = str(warning.message)
    assert issubclass(warning.category, UserWarning)
    assert f"all {len(cpu_ids)} combinations were skipped" in text
    for _, why in res.skipped:  # each reason, counted
        assert f"1 x {why}" in text
    assert warning.filename == __file__  # points at the caller's line


def test_the_warning_counts_a_shared_reason_once():
    skipped = [({"n": i}, "n: too large") for i in range(5)] + [({"n": 9}, "n: odd")]
    assert sweep_module._skip_summary(skipped) == "5 x n: too large; 1 x n: odd"
    many = [({}, f"reason {i}") for i in range(6)]
    assert sweep_module._skip_summary(many).endswith("... and 3 other reasons (see .skipped)")


def test_no_warning_when_something_ran(saxpy_args, cpu_ids):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = gl.sweep(gl.saxpy, *saxpy_args, variant=cpu_ids, repeat=1, warmup=0,
                       progress=False)
    assert len(res) == len(cpu_ids)


def test_sweep_of_a_plain_callable():
    """bench() takes any callable, so sweep() does: its keywords come from its signature."""
    a = np.random.default_rng(0).random(2000)
    res = gl.sweep(np.sort, a, kind=["quicksort", "stable"], budget_s=0.05, progress=False)
    assert [r.params["kind"] for r in res] == ["quicksort", "stable"]
    assert all(r.op == "sort" and r.variant is None for r in res)
    with pytest.raises(TypeError, match="'knd'.*did you mean 'kind'"):
        gl.sweep(np.sort, a, knd=["stable"], progress=False)
    # a callable that takes any keyword cannot be checked: nothing is refused up front
    assert sweep_module.valid_keywords(lambda **kw: None, 0)["arguments"] is None
