"""The sparse lab: y = A x for a sparse matrix in CSR, by the ladder of formats S3 describes (CSR,
ELL, SELL-C-sigma, COO) and cuSPARSE; C = A B for a dense row-major B; the format advice of S3
section 11.3; and the test matrices, all made in code.

    A = gl.CSR(scipy_matrix)                 # CSR, CSC or COO from scipy.sparse, converted
    A = gl.CSR(indptr, indices, data, shape) # or the three arrays (int32/int64, float32/float64)
    A = gl.CSR(cupy_csr_matrix)              # CuPy's arrays on the device, not copied
    y = gl.spmv(A, x)                        # NumPy in, NumPy out; device x: DeviceArray out
    C = gl.spmm(A, B)                        # B dense, row-major (cols x k)
    res = gl.cg(A, b, M="jacobi")            # conjugate gradients: res.x, res.iterations, ...
    gl.sparse_format_advice(A)               # row statistics and the format S3's rule picks
    gl.sparse.poisson2d(64), gl.sparse.poisson3d(16), gl.sparse.banded(1000, (-2, 0, 3)),
    gl.sparse.powerlaw(10000, 12, seed=0)

Host matrices are checked and canonicalized on construction as scipy's sum_duplicates does:
columns sorted within each row, duplicate entries summed (explicit zeros kept). Device matrices
(CuPy's, or DeviceArrays) are taken as they are, without a copy: their dtypes, ranks and lengths
are checked, and indptr (copied to the host once, for the row statistics) must start at 0,
never decrease and end at nnz; their columns are trusted to lie in range, as the device views
of the rest of gpulab are trusted. Every
variant sums what a row holds, in any order, so unsorted or repeated columns give the same
product. scipy is optional: only CSR(scipy matrix) and the tests
import it.
"""

import operator
from typing import NamedTuple, Optional

import numpy as np

from .. import _core
from .. import peers as _peers
from .._op import Cost, op

EXPORTS = ("CSR", "spmv", "spmm", "cg", "CgResult", "sparse_format_advice")

_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_VALUE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_INT32_MAX = np.iinfo(np.int32).max


def _is_device(a):
    return isinstance(a, _core.DeviceArray) or hasattr(a, "__cuda_array_interface__")


def _index_dtype(indptr, indices, nnz):
    """int64 when either array is int64 or nnz passes int32; int32 otherwise."""
    wide = np.dtype(np.int64) in (np.dtype(indptr.dtype), np.dtype(indices.dtype))
    return np.dtype(np.int64) if wide or nnz > _INT32_MAX else np.dtype(np.int32)


class CSR:
    """A sparse matrix in compressed sparse row form: `indptr` (rows + 1 offsets), `indices`
    (column of each nonzero) and `data` (its value), NumPy arrays or, for a matrix on the
    device, gpulab DeviceArrays; `shape` (rows, cols). Built from

      - a scipy.sparse matrix or array in CSR, CSC or COO form (converted to CSR);
      - a CuPy sparse matrix (cupyx.scipy.sparse): its arrays are used in place, no copy;
      - indptr, indices, data[, shape] (NumPy or device arrays), or one tuple of them.

    Indices are int32 or int64 (indptr and indices are given one dtype, the wider; int64 when
    nnz passes 2^31 - 1); data float32 or float64 (integers and bools become float64). Host
    arrays are checked (indptr starts at 0, never decreases and ends at nnz; columns lie in
    0..cols-1) and canonicalized: sorted columns, duplicates summed. shape defaults to
    (len(indptr) - 1, max column + 1)."""

    def __init__(self, *args, shape=None):
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        if len(args) == 4 and shape is None:
            args, shape = args[:3], args[3]
        if len(args) == 1:
            self._from_matrix(args[0], shape)
        elif len(args) == 3:
            self._from_arrays(*args, shape)
        else:
            raise TypeError("CSR takes a sparse matrix or (indptr, indices, data[, shape]), got "
                            f"{len(args)} arguments")
        self._device = None
        self._stats = self._max_row = None

    # ---- construction

    def _from_matrix(self, m, shape):
        module = type(m).__module__
        if module.startswith("cupyx"):
            if m.format != "csr":
                m = m.tocsr()
            self._from_arrays(m.indptr, m.indices, m.data, shape or m.shape)
            return
        if not module.startswith("scipy"):
            raise TypeError(f"A must be a scipy.sparse or CuPy sparse matrix, or (indptr, indices, "
                            f"data[, shape]), not {type(m).__name__}")
        if m.format != "csr":
            m = m.tocsr()
        self._from_arrays(m.indptr, m.indices, m.data, shape or m.shape)

    def _from_arrays(self, indptr, indices, data, shape):
        device = [_is_device(a) for a in (indptr, indices, data)]
        if any(device) and not all(device):
            raise TypeError("indptr, indices and data must be all NumPy or all device arrays")
        if all(device):
            self._from_device(indptr, indices, data, shape)
        else:
            self._from_host(np.asarray(indptr), np.asarray(indices), np.asarray(data), shape)

    def _from_device(self, indptr, indices, data, shape):
        arrays = [a if isinstance(a, _core.DeviceArray) else _as_device(a)
                  for a in (indptr, indices, data)]
        for name, a in zip(("indptr", "indices", "data"), arrays):
            if a.ndim != 1:
                raise ValueError(f"{name} must be 1-D, got {a.ndim} dimensions")
        indptr, indices, data = arrays
        for name, a in (("indptr", indptr), ("indices", indices)):
            if np.dtype(a.dtype) not in _INDEX_DTYPES:
                raise TypeError(f"{name} must be int32 or int64, got {a.dtype}")
        if np.dtype(indptr.dtype) != np.dtype(indices.dtype):
            raise TypeError(f"indices must have indptr's dtype {indptr.dtype}, got {indices.dtype}")
        if np.dtype(data.dtype) not in _VALUE_DTYPES:
            raise TypeError(f"data must be float32 or float64, got {data.dtype}")
        if shape is None:
            raise ValueError("shape is needed for a matrix on the device")
        self.indptr, self.indices, self.data = indptr, indices, data
        self.shape = self._check_shape(shape, indptr.shape[0], indices.shape[0], data.shape[0])

    def _from_host(self, indptr, indices, data, shape):
        for name, a in (("indptr", indptr), ("indices", indices), ("data", data)):
            if a.ndim != 1:
                raise ValueError(f"{name} must be 1-D, got {a.ndim} dimensions")
        for name, a in (("indptr", indptr), ("indices", indices)):
            if a.dtype.kind not in "iu":
                raise TypeError(f"{name} must hold integers, got {a.dtype}")
        if data.dtype not in _VALUE_DTYPES:
            if data.dtype.kind not in "biu":
                raise TypeError(f"data must be float32 or float64, got {data.dtype}")
            data = data.astype(np.float64)
        if indices.shape[0] != data.shape[0]:
            raise ValueError(f"indices ({indices.shape[0]}) and data ({data.shape[0]}) must have "
                             "one entry per nonzero")
        if indptr.shape[0] < 1:
            raise ValueError("indptr must have rows + 1 >= 1 elements, got 0")
        nnz = data.shape[0]
        if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0):
            raise ValueError(f"indptr must start at 0, never decrease and end at nnz ({nnz})")
        if shape is None:
            shape = (indptr.shape[0] - 1, int(indices.max()) + 1 if nnz else 0)
        shape = self._check_shape(shape, indptr.shape[0], nnz, nnz)
        if nnz and (indices.min() < 0 or indices.max() >= shape[1]):
            raise ValueError(f"indices must lie in 0..{shape[1] - 1} (the matrix has {shape[1]} "
                             "columns)")
        index = _index_dtype(indptr, indices, nnz)
        rows = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(indptr))
        cols = indices.astype(np.int64)
        order = np.lexsort((cols, rows))
        rows, cols, data = rows[order], cols[order], data[order]
        if nnz:
            first = np.ones(nnz, bool)
            first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
            starts = np.flatnonzero(first)
            data = np.add.reduceat(data, starts)
            rows, cols = rows[starts], cols[starts]
        counts = np.bincount(rows, minlength=shape[0]) if shape[0] else np.zeros(0, np.int64)
        self.indptr = np.concatenate(([0], np.cumsum(counts))).astype(index)
        self.indices = np.ascontiguousarray(cols.astype(index))
        self.data = np.ascontiguousarray(data)
        self.shape = shape

    @staticmethod
    def _check_shape(shape, n_indptr, n_indices, n_data):
        try:
            rows, cols = (int(s) for s in shape)
        except (TypeError, ValueError):
            raise ValueError(f"shape must be (rows, cols), got {shape!r}") from None
        if rows != n_indptr - 1 or cols < 0:
            raise ValueError(f"shape {(rows, cols)} does not fit indptr of {n_indptr} elements "
                             f"(rows + 1)")
        if n_indices != n_data:
            raise ValueError(f"indices ({n_indices}) and data ({n_data}) must have one entry per "
                             "nonzero")
        return rows, cols

    # ---- properties

    @property
    def nnz(self):
        return int(self.data.shape[0])

    @property
    def dtype(self):
        return np.dtype(self.data.dtype)

    @property
    def index_dtype(self):
        return np.dtype(self.indptr.dtype)

    @property
    def on_device(self):
        return isinstance(self.data, _core.DeviceArray)

    @property
    def nbytes(self):
        return (self.index_dtype.itemsize * (self.shape[0] + 1 + self.nnz)
                + self.dtype.itemsize * self.nnz)

    def row_lengths(self):
        """Nonzeros per row, a NumPy int64 array (one copy of indptr to the host for a matrix
        on the device, made once and kept: 8 (rows + 1) bytes)."""
        if self._stats is None:
            indptr = np.asarray(self.indptr.get() if self.on_device else self.indptr)
            lengths = np.diff(indptr.astype(np.int64))
            # host matrices were checked on construction; this checks a device one's offsets
            if indptr[0] != 0 or indptr[-1] != self.nnz or np.any(lengths < 0):
                raise ValueError(f"indptr must start at 0, never decrease and end at nnz "
                                 f"({self.nnz})")
            self._stats = lengths
        return self._stats

    @property
    def max_row(self):
        # every spmv call passes it: kept, since a max over the rows costs milliseconds at 2^24
        # rows, which the events around the call would count (docs/labs/sparse.md)
        if self._max_row is None:
            lengths = self.row_lengths()
            self._max_row = int(lengths.max()) if lengths.size else 0
        return self._max_row

    def astype(self, dtype):
        """This matrix with its values in dtype (float32 or float64), the same index arrays;
        self when they are in dtype already."""
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self
        if dtype not in _VALUE_DTYPES:
            raise TypeError(f"dtype must be float32 or float64, got {dtype}")
        data = self.data.get() if self.on_device else self.data
        out = CSR(self.indptr.get() if self.on_device else self.indptr,
                  self.indices.get() if self.on_device else self.indices,
                  np.asarray(data).astype(dtype), shape=self.shape)
        return out.to_device() if self.on_device else out

    def to_device(self, stream=None):
        """This matrix with its arrays on the device (kept on the CSR after the first call: the
        copy costs nbytes of device memory), or self when it is there already."""
        if self.on_device:
            return self
        if self._device is None:
            from .. import to_device
            d = CSR.__new__(CSR)
            d.indptr, d.indices, d.data = (to_device(a, stream=stream)
                                           for a in (self.indptr, self.indices, self.data))
            d.shape, d._device = self.shape, None
            d._stats, d._max_row = self._stats, self._max_row
            self._device = d
        return self._device

    def toarray(self):
        """The dense NumPy matrix (host matrices; a device one is copied back first)."""
        indptr, indices, data = (a.get() if self.on_device else a
                                 for a in (self.indptr, self.indices, self.data))
        out = np.zeros(self.shape, np.dtype(data.dtype))
        rows = np.repeat(np.arange(self.shape[0]), np.diff(np.asarray(indptr).astype(np.int64)))
        np.add.at(out, (rows, np.asarray(indices)), data)
        return out

    def __repr__(self):
        where = "device" if self.on_device else "host"
        return (f"CSR(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype}, "
                f"index_dtype={self.index_dtype}, {where})")


def _as_device(a):
    from .. import as_device
    return as_device(a)


def _as_csr(A):
    return A if isinstance(A, CSR) else CSR(A)


# ---------------------------------------------------------------- matrices made in code


def _from_coo(rows, cols, vals, shape, dtype):
    order = np.lexsort((cols, rows))
    counts = np.bincount(rows, minlength=shape[0])
    indptr = np.concatenate(([0], np.cumsum(counts)))
    index = np.int64 if rows.size > _INT32_MAX else np.int32
    return CSR(indptr.astype(index), cols[order].astype(index), vals[order].astype(dtype),
               shape=shape)


def _stencil(n, dims, dtype, shift=0.0):
    """The (2 dims + 1)-point Laplacian of an n^dims grid, Dirichlet boundaries: 2 dims + shift
    on the diagonal, -1 for each neighbour inside the grid."""
    size = n ** dims
    idx = np.arange(size, dtype=np.int64)
    coords = np.unravel_index(idx, (n,) * dims)
    rows, cols, vals = [idx], [idx], [np.full(size, 2.0 * dims + shift)]
    stride = 1
    for axis in reversed(range(dims)):
        c = coords[axis]
        for step in (-1, 1):
            inside = (c + step >= 0) & (c + step < n)
            rows.append(idx[inside])
            cols.append(idx[inside] + step * stride)
            vals.append(np.full(int(inside.sum()), -1.0))
        stride *= n
    return _from_coo(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals),
                     (size, size), dtype)


def poisson2d(n, dtype=np.float64, shift=0.0):
    """The 5-point Laplacian of an n x n grid: n^2 rows, at most 5 nonzeros each; shift is added
    to the diagonal (A + shift I: symmetric positive definite, its condition number at most
    (8 + shift) / shift for shift > 0)."""
    return _stencil(int(n), 2, dtype, float(shift))


def poisson3d(n, dtype=np.float64, shift=0.0):
    """The 7-point Laplacian of an n x n x n grid: n^3 rows, at most 7 nonzeros each; shift is
    added to the diagonal."""
    return _stencil(int(n), 3, dtype, float(shift))


def banded(n, offsets, dtype=np.float64, seed=0):
    """An n x n matrix with nonzeros on the given diagonals (0 the main one, k > 0 above it),
    random normal values (never zero) from seed."""
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    for k in sorted(set(int(o) for o in offsets)):
        r = np.arange(max(0, -k), min(n, n - k), dtype=np.int64)
        rows.append(r)
        cols.append(r + k)
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    vals = rng.standard_normal(rows.size)
    vals[vals == 0] = 0.5
    return _from_coo(rows, cols, vals, (n, n), dtype)


def powerlaw(rows, mean_nnz, seed=0, cols=None, sigma=1.0, dtype=np.float64):
    """rows x cols (cols = rows by default) with lognormal row lengths of mean about mean_nnz
    (log-space sigma `sigma`: a long tail of heavy rows), distinct random columns per row and
    normal values, from seed."""
    rows = int(rows)
    cols = rows if cols is None else int(cols)
    rng = np.random.default_rng(seed)
    mu = np.log(max(mean_nnz, 1e-9)) - sigma * sigma / 2
    lengths = np.minimum(np.rint(rng.lognormal(mu, sigma, rows)).astype(np.int64), cols)
    total = int(lengths.sum())
    r = np.repeat(np.arange(rows, dtype=np.int64), lengths)
    c = rng.integers(0, max(cols, 1), total, dtype=np.int64)
    vals = rng.standard_normal(total)
    vals[vals == 0] = 0.5
    return _from_coo(r, c, vals, (rows, cols), dtype)  # repeated columns are summed


# ---------------------------------------------------------------- format advice

# S3 section 11.3 says ELL when std/mean of the row lengths is "small"; 0.5 is our reading.
ELL_MAX_CV = 0.5


def sparse_format_advice(A):
    """The row statistics of A (nonzeros per row: mean, std, max, p90) and the format S3's rule
    (section 11.3) picks: ELL when rows are alike (std / mean <= ELL_MAX_CV), CSR when their
    lengths vary. Returns a dict with those, the ELL padding fraction at width max (the slots
    ELL would waste), "format" ("ell" or "csr") and "reason"."""
    A = _as_csr(A)
    lengths = A.row_lengths()
    rows = lengths.size
    if rows == 0 or A.nnz == 0:
        return {"rows": rows, "nnz": A.nnz, "mean": 0.0, "std": 0.0, "max": 0, "p90": 0.0,
                "cv": 0.0, "ell_padding": 0.0, "format": "csr",
                "reason": "no nonzeros: there is no row length to choose a format from"}
    mean, std = float(lengths.mean()), float(lengths.std())
    mx, p90 = int(lengths.max()), float(np.percentile(lengths, 90))
    cv = std / mean
    padding = 1.0 - mean / mx
    if cv <= ELL_MAX_CV:
        fmt = "ell"
        reason = (f"rows are alike (std/mean = {cv:.2f} <= {ELL_MAX_CV}): ELL's uniform loops "
                  f"cost {padding:.0%} padding at width {mx} (p90 {p90:g})")
    else:
        fmt = "csr"
        reason = (f"row lengths vary (std/mean = {cv:.2f} > {ELL_MAX_CV}; max {mx} against "
                  f"mean {mean:.1f}): ELL would pad {padding:.0%} of its slots, CSR reads only "
                  "the nonzeros")
    return {"rows": rows, "nnz": A.nnz, "mean": mean, "std": std, "max": mx, "p90": p90,
            "cv": cv, "ell_padding": padding, "format": fmt, "reason": reason}


# ---------------------------------------------------------------- spmv

# What each variant reads and writes beyond CSR SpMV's least traffic (docs/labs/sparse.md): the
# in-call conversions read the CSR arrays and write their format, which the product then reads
# instead of indptr/indices/data.
_ELL = (3, 4)
_SELL, _COO = 5, 6


def spmv_bytes(A, variant_id=None):
    """The bytes the variant moves for y = A x, under the lab's byte model (docs/labs/sparse.md):
    CSR variants read indptr, indices and data once, x once and write y; ELL and SELL also write
    then read their padded arrays (ELL: rows x max_row slots of an index and a value), COO its row
    array (nnz indices)."""
    A = _as_csr(A)
    rows, cols = A.shape
    i, v, nnz = A.index_dtype.itemsize, A.dtype.itemsize, A.nnz
    base = i * (rows + 1 + nnz) + v * (nnz + cols + rows)
    if variant_id in _ELL:
        return base + 2 * rows * A.max_row * (i + v)
    if variant_id == _SELL:
        lengths = A.row_lengths()
        pad = -len(lengths) % 256
        sorted_windows = -np.sort(-np.concatenate((lengths, np.zeros(pad, np.int64))).reshape(
            -1, 256), axis=1)
        slots = int(32 * sorted_windows[:, ::32].sum()) if sorted_windows.size else 0
        return base + 2 * slots * (i + v) + 8 * len(lengths)
    if variant_id == _COO:
        return base + 2 * i * nnz
    return base


def _spmv_cost(A, x, variant=None, **_):
    return Cost(bytes=spmv_bytes(A, variant), flops=2 * _as_csr(A).nnz)


def _spmv_example(n, rng):
    """A power-law matrix of about n nonzeros (rows of lognormal length, mean 8) and x."""
    rows = max(1, n // 8)
    seed = int(rng.integers(0, 2**31))
    A = powerlaw(rows, 8, seed=seed, cols=rows + 3, dtype=np.float32)
    return A, rng.standard_normal(A.shape[1]).astype(np.float32)


def _cupy_matrix(A):
    """A's device arrays as a CuPy csr_matrix, without a copy (the peers' operand)."""
    import cupyx.scipy.sparse as cs
    A = _as_csr(A).to_device()
    return cs.csr_matrix((_peers.as_peer("cupy", A.data), _peers.as_peer("cupy", A.indices),
                          _peers.as_peer("cupy", A.indptr)), shape=A.shape)


def _torch_matrix(A):
    """A's device arrays as a torch sparse CSR tensor, without a copy."""
    import torch
    A = _as_csr(A).to_device()
    return torch.sparse_csr_tensor(_peers.as_peer("torch", A.indptr),
                                   _peers.as_peer("torch", A.indices),
                                   _peers.as_peer("torch", A.data), size=A.shape)


def _cupy_spmv(A, x, **_):
    m, cx = _cupy_matrix(A), _peers.as_peer("cupy", x)
    return lambda: m @ cx


def _torch_spmv(A, x, **_):
    import torch
    t, tx = _torch_matrix(A), _peers.as_peer("torch", x)
    return lambda: torch.mv(t, tx)


@op("spmv", cost=_spmv_cost, size=lambda A, *a, **_: _as_csr(A).nnz, example=_spmv_example,
    demo_size={"gpu": 1 << 26, "cpu": 1 << 22},
    peers={"cupy": _cupy_spmv, "torch": _torch_spmv})
def spmv(A, x, variant=None, block=None, stream=None, lanes=None):
    """y = A @ x for a sparse matrix A (a CSR, or anything CSR() takes) and a vector x of
    A.shape[1] elements of A's dtype; y has A.shape[0] elements.

    NumPy x (and a host A): NumPy y. A device x: A's arrays go to the device (kept on A, see
    CSR.to_device) and y is a DeviceArray, computed asynchronously on `stream`.
    `variant`: None (the best where it runs), an id or a name from ``gl.variants("spmv")``.
    `block`: threads per block of the CUDA variants 0-6 and 8; `lanes`: lanes per row of
    csr_subwarp (8), 2, 4, 8, 16 or 32 (None or 0: from the mean row length). Each y[i] lies
    within the bound of tests/references/sparse.py of the float64 product (the parallel variants
    reassociate)."""
    A = _as_csr(A)
    if _is_device(x) and not A.on_device:
        A = A.to_device(stream=stream)
    return _core.spmv(A.data, A.indices, A.indptr, x, variant, stream, A.shape[1], A.max_row,
                      block, lanes)


# ---------------------------------------------------------------- spmm


def spmm_bytes(A, k):
    """The bytes of C = A B (B of k columns) under the lab's byte model (docs/labs/sparse.md): A's
    arrays once, B once (cols x k values) and C written once (rows x k values)."""
    A = _as_csr(A)
    rows, cols = A.shape
    i, v = A.index_dtype.itemsize, A.dtype.itemsize
    return i * (rows + 1 + A.nnz) + v * (A.nnz + cols * k + rows * k)


def _spmm_cost(A, B, **_):
    k = int(B.shape[1])
    return Cost(bytes=spmm_bytes(A, k), flops=2 * _as_csr(A).nnz * k)


def _spmm_example(n, rng):
    """A power-law matrix of about n / 8 nonzeros (mean 8 a row) and B of 8 columns: about n
    multiply-adds."""
    rows = max(1, n // 64)
    seed = int(rng.integers(0, 2**31))
    A = powerlaw(rows, 8, seed=seed, cols=rows + 3, dtype=np.float32)
    return A, rng.standard_normal((A.shape[1], 8)).astype(np.float32)


def _cupy_spmm(A, B, **_):
    m, cb = _cupy_matrix(A), _peers.as_peer("cupy", B)
    return lambda: m @ cb


def _torch_spmm(A, B, **_):
    import torch
    t, tb = _torch_matrix(A), _peers.as_peer("torch", B)
    return lambda: torch.mm(t, tb)


@op("spmm", cost=_spmm_cost, size=lambda A, *a, **_: _as_csr(A).nnz, example=_spmm_example,
    demo_size={"gpu": 1 << 26, "cpu": 1 << 22},
    peers={"cupy": _cupy_spmm, "torch": _torch_spmm})
def spmm(A, B, variant=None, block=None, stream=None):
    """C = A @ B for a sparse matrix A (a CSR, or anything CSR() takes) and a dense, C-contiguous
    (A.shape[1], k) matrix B of A's dtype; C is (A.shape[0], k), row-major.

    NumPy B (and a host A): NumPy C. A device B: A's arrays go to the device (kept on A) and C
    is a DeviceArray, computed asynchronously on `stream`. `variant`: None (the best where it
    runs), an id or a name from ``gl.variants("spmm")``. `block`: threads per block of the CUDA
    variants 0-1. Each C[i, j] lies within the bound of tests/references/sparse.py."""
    A = _as_csr(A)
    if _is_device(B) and not A.on_device:
        A = A.to_device(stream=stream)
    return _core.spmm(A.data, A.indices, A.indptr, B, variant, stream, A.shape[1], A.max_row,
                      block)


# ---------------------------------------------------------------- cg


class CgResult(NamedTuple):
    """What gl.cg returns. x: the solution (NumPy for NumPy b, a DeviceArray for a device b);
    iterations: the iterations done; residuals: ||r||_2 (NumPy float64) at iteration 0, at every
    check_every-th iteration and at the last; converged: ||r|| <= max(rtol ||b||, atol);
    breakdown: p.Ap was zero or not finite (A not positive definite), which stopped the solve;
    phases: with phases=True, the milliseconds spent in the operator, the reductions and the
    vector updates, summed over the iterations (None otherwise; zeros from the CPU variant,
    which does not time its phases)."""
    x: object
    iterations: int
    residuals: np.ndarray
    converged: bool
    breakdown: bool
    phases: Optional[dict]


PHASES = ("operator", "reductions", "updates")


_CG_DIA = 4  # cuda/sparse/sparse.h's GLC_CG_DIA_FUSED


def dia_offsets(A):
    """The distinct diagonals of A, as sorted offsets col - row of its stored entries (from the
    host's copy of the index arrays): the DIA layout cg's dia_fused builds holds one array of
    A.shape[0] values per offset."""
    A = _as_csr(A)
    indptr = np.asarray(A.indptr.get() if A.on_device else A.indptr, np.int64)
    indices = np.asarray(A.indices.get() if A.on_device else A.indices, np.int64)
    rows = np.repeat(np.arange(A.shape[0], dtype=np.int64), np.diff(indptr))
    return np.unique(indices - rows)


def cg_iteration_bytes(A, jacobi=False, variant=None):
    """The bytes one CG iteration must move at least, under the lab's byte model
    (docs/labs/sparse.md): the SpMV's (spmv_bytes), and 8 vector passes of n values -- x and r read
    and written, p read twice and written once, Ap read once (p.Ap fused into the SpMV, r.r into r's
    update) -- plus 3 with Jacobi (its inverse diagonal read, z written and read). For variant
    dia_fused (4, or its name), what its two passes move: its k diagonals of n values and 9 vector
    passes (z, p', x read and p, x, Ap written with the SpMV; r, Ap read and r written), plus 2 with
    Jacobi (dinv read, z written)."""
    A = _as_csr(A)
    n, v = A.shape[0], A.dtype.itemsize
    if variant in (_CG_DIA, "dia_fused"):
        return v * n * (len(dia_offsets(A)) + 9 + (2 if jacobi else 0))
    return spmv_bytes(A) + v * n * (8 + (3 if jacobi else 0))


_CG_INT_MAX = 2**62


def _cg_int(name, value, minimum):
    """value as an int in minimum..2^62 (TypeError for a non-integer, ValueError out of range)."""
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if not minimum <= value <= _CG_INT_MAX:
        raise ValueError(f"{name} must lie in {minimum}..2^62, got {value}")
    return value


def _cg_tolerance(name, value):
    """value as a float >= 0 (TypeError for a non-number, ValueError for a negative, NaN or
    overflowing one)."""
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"{name} is too large for a float64") from None
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}") from None
    if not value >= 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def _cg_maxiter(A, maxiter):
    return 10 * _as_csr(A).shape[0] if maxiter is None else _cg_int("maxiter", maxiter, 0)


def _cg_cost(A, b, x0=None, rtol=1e-5, atol=0.0, maxiter=None, M="jacobi", variant=None, **_):
    A = _as_csr(A)
    k = _cg_maxiter(A, maxiter)
    return Cost(bytes=k * cg_iteration_bytes(A, M == "jacobi", variant),
                flops=k * (2 * A.nnz + 12 * A.shape[0]))


# The example's iterations: rtol = atol = 0, so every variant runs all of them.
CG_EXAMPLE_ITERATIONS = 12


def _cg_example(n, rng):
    """poisson2d(sqrt(n)) + 4 I in float32 (condition number at most 3) and a random b, with
    rtol = atol = 0 and a fixed maxiter: each variant runs the same iterations."""
    m = max(1, int(np.sqrt(n)))
    A = poisson2d(m, dtype=np.float32, shift=4.0)
    b = rng.standard_normal(A.shape[0]).astype(np.float32)
    return A, b, None, 0.0, 0.0, CG_EXAMPLE_ITERATIONS


def _cupy_cg(A, b, x0=None, rtol=1e-5, atol=0.0, maxiter=None, M="jacobi", **_):
    """cupyx.scipy.sparse.linalg.cg on the same device arrays, with the Jacobi preconditioner as a
    LinearOperator where M="jacobi"."""
    import cupy
    import cupyx.scipy.sparse.linalg as csl
    m, cb = _cupy_matrix(A), _peers.as_peer("cupy", b)
    k = _cg_maxiter(A, maxiter)
    pre = None
    if M == "jacobi":
        inv = 1.0 / m.diagonal()
        pre = csl.LinearOperator(m.shape, matvec=lambda v: inv * v, dtype=m.dtype)
    try:  # CuPy 13 names the relative tolerance tol; later ones rtol
        csl.cg(m, cb, rtol=rtol, atol=atol, maxiter=1, M=pre)
        kw = {"rtol": rtol}
    except TypeError:
        kw = {"tol": rtol}
    cupy.cuda.get_current_stream().synchronize()
    return lambda: csl.cg(m, cb, atol=atol, maxiter=k, M=pre, **kw)


@op("cg", cost=_cg_cost, size=lambda A, *a, **_: _as_csr(A).nnz, example=_cg_example,
    demo_size={"gpu": 1 << 24, "cpu": 1 << 18}, peers={"cupy": _cupy_cg})
def cg(A, b, x0=None, rtol=1e-5, atol=0.0, maxiter=None, M="jacobi", variant=None,
       check_every=1, phases=False, block=None, stream=None):
    """Conjugate gradients on A x = b for a symmetric positive definite sparse A (a CSR, or
    anything CSR() takes; square) and b of A.shape[0] elements of A's dtype, from x0 (None:
    zeros). Stops when ||r||_2 <= max(rtol ||b||_2, atol), as scipy.sparse.linalg.cg does, tested
    after every iteration, or after maxiter iterations (None: 10 n, scipy's default). M:
    "jacobi" (the preconditioner diag(A); a zero diagonal is a ValueError) or None. Returns a
    CgResult (x, iterations, residuals, converged, breakdown, phases).

    NumPy b (and a host A): x is NumPy. A device b: A's arrays go to the device (kept on A) and
    x is a DeviceArray; the call returns when the solve is over (the stopping test needs the
    device's residual). check_every: how often the residual norm comes back to the host (the
    history's spacing; the device variants read it one check behind their launches). phases=True
    times the operator, the reductions and the vector updates with CUDA events around their
    launches: the events do not synchronize the phases, but each timed iteration ends with a
    wait for its last event, so the total is slower than an untimed solve. `variant`: None (the
    best where it runs), an id or a name from ``gl.variants("cg")``; `block`: threads per block
    of the CUDA variants. Variant dia_fused stores A by its diagonals (gl.sparse.dia_offsets) and
    refuses, with a ValueError, a matrix of more than 32 diagonals or one whose diagonals would
    take more bytes than its CSR arrays."""
    A = _as_csr(A)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square for cg, got {A.shape[0]} x {A.shape[1]}")
    if not (M is None or (isinstance(M, str) and M == "jacobi")):
        raise ValueError(f"M must be 'jacobi' or None, got {M!r}")
    k = _cg_maxiter(A, maxiter)
    check_every = _cg_int("check_every", check_every, 1)
    rtol, atol = _cg_tolerance("rtol", rtol), _cg_tolerance("atol", atol)
    device = _is_device(b)
    if device and not A.on_device:
        A = A.to_device(stream=stream)
    if x0 is None:
        x0 = (_core.empty(0, dtype=A.dtype, stream=stream) if device
              else np.empty(0, dtype=A.dtype))
    x, residuals, iterations, converged, breakdown, ms = _core.cg(
        A.data, A.indices, A.indptr, b, x0, variant, stream, A.shape[1], A.max_row, block,
        rtol, atol, k, check_every, M == "jacobi", bool(phases))
    return CgResult(x, int(iterations), residuals, bool(converged), bool(breakdown),
                    dict(zip(PHASES, ms)) if ms is not None else None)


# ---------------------------------------------------------------- cuSPARSE's choice


def cusparse_spmm_algorithm(A, k, stream=None):
    """The cuSPARSE algorithm that spmm's variant cusparse runs for A and a B of k columns, by
    the name cuSPARSE documents ("CUSPARSE_SPMM_ALG_DEFAULT" or "CUSPARSE_SPMM_CSR_ALG1" to
    "CUSPARSE_SPMM_CSR_ALG3"), or None for a matrix without nonzeros (the variant writes zeros
    without cuSPARSE). The variant chooses on its first call for a matrix and k, by timing each
    algorithm on the device; this makes one such call, with A's device copy (kept on A, as spmm
    keeps it) and a random B, and returns what it chose. k: an integer >= 1."""
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"k must be an integer, got {type(k).__name__}") from None
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    A = _as_csr(A).to_device(stream=stream)
    rng = np.random.default_rng(0)
    B = _core.to_device(rng.standard_normal((A.shape[1], k)).astype(A.dtype), stream=stream)
    spmm(A, B, variant="cusparse", stream=stream)
    return _core.cusparse_spmm_algorithm(A.data, A.indices, A.indptr, B, stream, A.shape[1],
                                         A.max_row)
