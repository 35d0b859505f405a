"""matadd (C = A + B, 2-D) against a float64 NumPy reference, over every variant of the registry."""

import numpy as np
import pytest

import gpulab as gl
from conftest import DTYPES, poisoned, variant_params
from references.saxpy import assert_matadd_close, matadd_inputs

DTYPE_IDS = [np.dtype(d).name for d in DTYPES]
SHAPES = [(0, 0), (0, 7), (7, 0), (1, 1), (2, 3), (17, 33), (32, 32), (33, 31), (1000, 1003),
          (1, 100003), (100003, 1)]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("v", variant_params("matadd"))
def test_numpy_in_numpy_out(v, shape, dtype):
    assert np.dtype(dtype).name in v.dtypes
    A, B = matadd_inputs(shape, dtype)
    A0, B0 = A.copy(), B.copy()
    out = poisoned(shape, dtype)
    assert gl.matadd(A, B, variant=v.id, out=out) is out
    assert_matadd_close(out, A, B)
    assert_matadd_close(gl.matadd(A, B, variant=v.name), A, B)
    np.testing.assert_array_equal(A, A0)
    np.testing.assert_array_equal(B, B0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("v", variant_params("matadd", backend="cuda"))
def test_device_in_device_out(v, shape, dtype):
    A, B = matadd_inputs(shape, dtype)
    dA, dB = gl.to_device(A), gl.to_device(B)
    dout = gl.to_device(poisoned(shape, dtype))
    assert gl.matadd(dA, dB, variant=v.id, out=dout) is dout
    assert_matadd_close(dout.get(), A, B)
    fresh = gl.matadd(dA, dB, variant=v.name)
    assert isinstance(fresh, gl.DeviceArray) and fresh.shape == shape
    assert_matadd_close(fresh.get(), A, B)


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("matadd", backend="cuda"))
def test_user_stream(v):
    stream = gl.Stream()
    A, B = matadd_inputs((1000, 1003), np.float32)
    dout = gl.to_device(poisoned(A.shape, A.dtype), stream=stream)
    gl.matadd(gl.to_device(A, stream=stream), gl.to_device(B, stream=stream), variant=v.id,
              out=dout, stream=stream)
    stream.synchronize()
    assert_matadd_close(dout.get(), A, B)
    out = poisoned(A.shape, A.dtype)
    gl.matadd(A, B, variant=v.id, out=out, stream=stream)
    assert_matadd_close(out, A, B)


@pytest.mark.parametrize("v", variant_params("matadd"))
def test_in_place(v):
    A, B = matadd_inputs((17, 33), np.float64)
    A0, B0 = A.copy(), B.copy()
    assert gl.matadd(A, B, variant=v.id, out=A) is A
    assert_matadd_close(A, A0, B0)
