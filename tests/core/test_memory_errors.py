"""Device memory that runs out: OutOfMemoryError (a MemoryError and a CudaError) after gpulab has
released what it keeps for reuse and tried once more, and the calls that would convert an operand
into a format the device cannot hold, refused with a ValueError before they allocate anything."""

import re

import numpy as np
import pytest

import gpulab as gl

TIB = 1 << 40


def test_out_of_memory_error_is_a_memory_error_and_a_cuda_error():
    assert gl.OutOfMemoryError is gl._core.OutOfMemoryError
    assert "OutOfMemoryError" in gl.__all__
    assert issubclass(gl.OutOfMemoryError, MemoryError)
    assert issubclass(gl.OutOfMemoryError, gl.CudaError)
    assert not issubclass(gl.OutOfMemoryError, gl.NoDeviceError)
    with pytest.raises(MemoryError):
        raise gl.OutOfMemoryError("out of device memory")
    assert "requested" in gl.OutOfMemoryError.__doc__


# ---------------------------------------------------------------- refusal before allocating

HUB_ROWS, HUB_LENGTH = 1 << 22, 1 << 20


@pytest.fixture(scope="module")
def hub_matrix():
    """2^22 rows, the first with 2^20 nonzeros and the rest empty: 8 MiB of CSR arrays whose ELL
    (every row padded to the longest) would take 2^42 slots of 8 bytes, 32 TiB."""
    indptr = np.full(HUB_ROWS + 1, HUB_LENGTH, np.int32)
    indptr[0] = 0
    indices = np.arange(HUB_LENGTH, dtype=np.int32)
    data = np.ones(HUB_LENGTH, np.float32)
    return gl.CSR(indptr, indices, data, shape=(HUB_ROWS, HUB_LENGTH))


def pool_state():
    gl.synchronize()
    usage = gl.pool_usage()
    return usage["used"] + usage["cached"], usage["reserved"]


@pytest.mark.gpu
@pytest.mark.parametrize("where", ["host", "device"])
@pytest.mark.parametrize("variant", ["ell_column_major", "ell_row_major", "sell_c_sigma"])
def test_padded_format_past_the_device_is_refused_before_allocating(hub_matrix, variant, where):
    A = hub_matrix.to_device() if where == "device" else hub_matrix
    x = np.ones(HUB_LENGTH, np.float32)
    if where == "device":
        x = gl.to_device(x)
    assert A.max_row == HUB_LENGTH  # the row statistics, computed before the count starts
    before = pool_state()
    with pytest.raises(ValueError) as e:
        gl.spmv(A, x, variant=variant)
    assert pool_state() == before  # nothing allocated, not even y
    text = str(e.value)
    m = re.search(r"needs ([\d.]+) TiB \((.*)\); ([\d.]+) (bytes|KiB|MiB|GiB|TiB) free on the "
                  r"device", text)
    assert m, text
    assert float(m.group(1)) == pytest.approx(32.0, abs=0.05)  # 2^22 x 2^20 slots of 8 bytes
    assert str(HUB_ROWS) in m.group(2) and str(HUB_LENGTH) in m.group(2)
    assert variant in text
    free_bytes = float(m.group(3)) * {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
                                      "TiB": TIB}[m.group(4)]
    total = gl.device_info()["total_memory"]
    assert 0 < free_bytes <= total * 1.001


@pytest.mark.gpu
def test_a_conversion_that_fits_still_runs(hub_matrix):
    """COO needs a row index per nonzero (4 MiB here): the check lets it through."""
    x = np.ones(HUB_LENGTH, np.float32)  # every partial sum an integer below 2^24: exact
    y = gl.spmv(hub_matrix, x, variant="coo_segmented")
    assert y.shape == (HUB_ROWS,)
    assert y[0] == HUB_LENGTH
    assert not np.any(y[1:])


# ---------------------------------------------------------------- OutOfMemoryError


@pytest.mark.gpu
def test_allocation_past_the_device_raises_out_of_memory_then_the_next_call_works():
    size = 1 << 45  # 32 TiB
    with pytest.raises(gl.OutOfMemoryError) as e:
        gl.empty(size, dtype=np.uint8)
    err = e.value
    assert isinstance(err, MemoryError) and isinstance(err, gl.CudaError)
    assert err.name == "cudaErrorMemoryAllocation" and err.sticky is False
    assert err.requested == size
    assert isinstance(err.free, int) and 0 < err.free <= gl.device_info()["total_memory"]
    assert "32.0 TiB" in str(err) and str(size) in str(err) and "free on the device" in str(err)
    # an allocation failure is not sticky, and gpulab leaves no pending error behind
    x = np.arange(1000, dtype=np.float32)
    assert float(gl.reduce(x)) == 499500.0
    np.testing.assert_array_equal(gl.to_device(x).get(), x)


@pytest.mark.gpu
def test_a_failed_allocation_first_releases_what_gpulab_keeps():
    """Before its retry, a failed allocation hands the block cache and the pool's unused memory
    back to the driver: after the failure both are empty."""
    gl.release_memory()
    live = gl.pool_usage()["reserved"]  # chunks of arrays still alive elsewhere
    blocks = [gl.empty(1 << 18, np.float32) for _ in range(8)]  # 1 MiB each, the library's stream
    big = gl.empty(64 << 20, np.float32)  # 256 MiB
    del blocks, big
    gl.synchronize()
    usage = gl.pool_usage()
    assert usage["cached"] >= 8 << 20 and usage["reserved"] >= 256 << 20
    with pytest.raises(gl.OutOfMemoryError):
        gl.empty(1 << 45, dtype=np.uint8)
    usage = gl.pool_usage()
    assert usage["cached"] == 0
    assert usage["reserved"] <= live


@pytest.mark.gpu
def test_memory_the_pool_keeps_for_another_stream_serves_a_larger_allocation():
    """60% of the free memory freed on a user stream stays in the pool, reserved; an allocation
    of 70% then fits only once that is handed back to the driver (the release before the
    retry; a driver that released it by itself would pass this too)."""
    gl.release_memory()
    with pytest.raises(gl.OutOfMemoryError) as e:
        gl.empty(1 << 45, dtype=np.uint8)
    free_bytes = e.value.free
    stream = gl.Stream()
    first = gl.empty(int(free_bytes * 0.6), dtype=np.uint8, stream=stream)
    del first
    stream.synchronize()
    assert gl.pool_usage()["reserved"] >= free_bytes * 0.6
    second = gl.empty(int(free_bytes * 0.7), dtype=np.uint8)
    assert second.nbytes == int(free_bytes * 0.7)
    del second
    gl.release_memory()
