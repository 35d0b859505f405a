"""The sparse lab: y = A x for a sparse matrix in CSR, by the ladder of formats S3 describes (CSR,
ELL, SELL-C-sigma, COO) and cuSPARSE; C = A B for a dense row-major B; the format advice of S3
section 11.3; and the test matrices, all made in code.

    A = gl.CSR(scipy_matrix)                 # CSR, CSC or COO from scipy.sparse, converted
    A = gl.CSR(indptr, indices, data, shape) # or the three arrays (int32/int64, float32/float64)
    A = gl.CSR(cupy_csr_matrix)              # CuPy's arrays on the device, not copied
    y = gl.spmv(A, x)                        # NumPy in, NumPy out; device x: DeviceArray out
    y = gl.spmv(cupy_csr_matrix, x)          # the gl.CSR made from it is cached on the matrix
    C = gl.spmm(A, B)                        # B dense, row-major (cols x k)
    res = gl.cg(A, b, M="jacobi")            # conjugate gradients: res.x, res.iterations, ...
    gl.sparse_format_advice(A)               # row statistics and the format S3's rule picks
    gl.sparse.default_variant("spmv", A)     # the rung variant=None runs on the device, and why
    gl.sparse.poisson2d(64), gl.sparse.poisson3d(16), gl.sparse.banded(1000, (-2, 0, 3)),
    gl.sparse.powerlaw(10000, 12, seed=0), gl.sparse.rmat(16, 16, 0.57, 0.19, 0.19, seed=0)

Host matrices are checked and canonicalized on construction as scipy's sum_duplicates does:
columns sorted within each row, duplicate entries summed (explicit zeros kept); arrays already
in that form are copied in one pass, without the sort. Device matrices
(CuPy's, or DeviceArrays) are taken as they are, without a copy: their dtypes, ranks and lengths
are checked, and indptr (analysed on the device once, for the row statistics) must start at 0,
never decrease and end at nnz; their columns are trusted to lie in range, as the device views
of the rest of gpulab are trusted.

A scipy or CuPy matrix passed to spmv, spmm or cg is converted once: the gl.CSR made from it
(with its statistics and chosen variants) is kept on the matrix object, as an attribute
_gpulab_csr, and used again while the matrix holds the same arrays (the same objects at the same
addresses, of the same shapes and dtypes). For a CuPy matrix that CSR views its arrays; for a
scipy matrix it is the canonicalized host copy, whose memory stays held until the scipy matrix is
garbage collected. Values changed in place inside the same arrays are seen by a CuPy matrix's CSR
but not by a scipy matrix's copy: pass gl.CSR(m) to convert it anew. Every
variant sums what a row holds, in any order, so unsorted or repeated columns give the same
product. scipy is optional: only CSR(scipy matrix) and the tests
import it.
"""

import functools
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


class RowStats(NamedTuple):
    """A CSR matrix's row statistics, as the choice of variant reads them: rows, nnz, the
    longest row's nonzeros, the rows without any, and the sum of the squared row lengths (exact
    up to 2^53). The same numbers from the device kernel (cuda/sparse/stats.cu) and from NumPy
    (host_row_stats)."""
    rows: int
    nnz: int
    max_row: int
    empty_rows: int
    sum_squares: float

    @property
    def mean(self):
        """Nonzeros per row."""
        return self.nnz / self.rows if self.rows else 0.0

    @property
    def cv(self):
        """The spread of the row lengths: their standard deviation over their mean (0 without
        nonzeros)."""
        if not self.nnz:
            return 0.0
        variance = max(self.sum_squares / self.rows - self.mean ** 2, 0.0)
        return variance ** 0.5 / self.mean

    @property
    def weighted_mean(self):
        """The mean length of the row a nonzero lies in (sum of squared lengths over nnz): the
        row length where the work is. mean (1 + cv^2); far above mean when a few long rows hold
        much of the matrix."""
        return self.sum_squares / self.nnz if self.nnz else 0.0


def host_row_stats(indptr):
    """RowStats of a host indptr (rows + 1 offsets, checked on construction), with NumPy."""
    lengths = np.diff(np.asarray(indptr).astype(np.int64))
    widths = lengths.astype(np.float64)
    longest = int(lengths.max()) if lengths.size else 0
    return RowStats(int(lengths.size), int(lengths.sum()), longest,
                    int(np.count_nonzero(lengths == 0)), float(np.dot(widths, widths)))


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
        self._lengths = self._row_stats = self._diagonals = self._column_order = None
        self._choices = {}

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
        if _canonical(indptr, indices):  # one pass, where sorting 64 M entries takes half a minute
            self.indptr = np.array(indptr, dtype=index)
            self.indices = np.array(indices, dtype=index)
            self.data = np.array(data)
            self.shape = shape
            return
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
        on the device, made once and kept: 8 (rows + 1) bytes). For the format advice and the
        byte models; spmv, spmm and cg read row_stats() instead, which never copies indptr."""
        if self._lengths is None:
            indptr = np.asarray(self.indptr.get() if self.on_device else self.indptr)
            lengths = np.diff(indptr.astype(np.int64))
            # host matrices were checked on construction; this checks a device one's offsets
            if indptr[0] != 0 or indptr[-1] != self.nnz or np.any(lengths < 0):
                raise ValueError(f"indptr must start at 0, never decrease and end at nnz "
                                 f"({self.nnz})")
            self._lengths = lengths
        return self._lengths

    def row_stats(self, stream=None):
        """The row statistics the choice of variant reads (a RowStats), computed once and kept:
        on the device for a device matrix (one kernel over indptr, a few numbers copied back,
        on `stream`), with NumPy for a host one. A device indptr that does not start at 0,
        decreases or does not end at nnz is a ValueError here."""
        if self._row_stats is None:
            if self.on_device:
                first, last, longest, empty, decreasing, squares = _core.csr_stats(self.indptr,
                                                                                   stream)
                if first != 0 or last != self.nnz or decreasing:
                    raise ValueError(f"indptr must start at 0, never decrease and end at nnz "
                                     f"({self.nnz})")
                self._row_stats = RowStats(self.shape[0], self.nnz, int(longest), int(empty),
                                           float(squares))
            else:
                self._row_stats = host_row_stats(self.indptr)
        return self._row_stats

    @property
    def max_row(self):
        # every spmv call passes it: kept (row_stats), since a max over the rows costs
        # milliseconds at 2^24 rows, which the events around the call would count
        return self.row_stats().max_row

    def diagonals(self, stream=None):
        """The distinct diagonals (offsets col - row) of A, or GLC_CG_DIA_MAX_DIAGONALS + 1 (33)
        for more: counted on the device for a device matrix (dia_fused's own first pass), from
        the host arrays otherwise; computed once and kept."""
        if self._diagonals is None:
            if self.on_device:
                self.row_stats(stream)  # checks indptr before a kernel follows its offsets
                self._diagonals = int(_core.csr_diagonals(self.indptr, self.indices, stream))
            else:
                self._diagonals = min(len(dia_offsets(self)), CG_DIA_MAX_DIAGONALS + 1)
        return self._diagonals

    def column_order(self, stream=None):
        """csr_hub_sorted's relabelling of this device matrix, computed on the device once and
        kept: (order, share), order a DeviceArray of cols + nnz entries of the index dtype (the
        columns by descending nonzero count, ties by column, then the indices relabelled) and
        share the fraction of the nonzeros in the HUB_COLUMNS most used columns. A ValueError
        naming the bytes needed and free where the device cannot hold it, before anything is
        allocated."""
        if not self.on_device:
            raise ValueError("column_order is computed on the device: call to_device() first")
        if self._column_order is None:
            order, top = _core.csr_hub_order(self.indices, self.shape[1], HUB_COLUMNS, stream)
            self._column_order = (order, top / self.nnz if self.nnz else 0.0)
        return self._column_order

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
            # the same matrix: its statistics and choices hold on the device too
            d._lengths, d._row_stats = self._lengths, self._row_stats
            d._diagonals, d._choices = self._diagonals, self._choices
            d._column_order = None
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


def _canonical(indptr, indices):
    """Whether every row's columns strictly increase (sorted, no duplicates): the form the CSR
    keeps, which the host conversion then only copies. indptr is checked already."""
    nnz = indices.shape[0]
    if nnz < 2:
        return True
    ok = indices[1:] > indices[:-1]
    starts = np.asarray(indptr[1:-1], np.int64)  # a row's first entry may be below the last
    starts = starts[(starts > 0) & (starts < nnz)]
    ok[starts - 1] = True
    return bool(ok.all())


def _as_device(a):
    from .. import as_device
    return as_device(a)


_CACHE_ATTRIBUTE = "_gpulab_csr"
_MATRIX_ARRAYS = {"csr": ("data", "indices", "indptr"), "csc": ("data", "indices", "indptr"),
                  "coo": ("data", "row", "col")}


def _address(a):
    """Where array a's data starts (a CuPy or NumPy array; other arrays: by their interface)."""
    if isinstance(a, np.ndarray):
        return a.ctypes.data
    memory = getattr(a, "data", None)
    if hasattr(memory, "ptr"):  # CuPy's MemoryPointer
        return memory.ptr
    interface = getattr(a, "__cuda_array_interface__", None) or a.__array_interface__
    return interface["data"][0]


def _matrix_key(m):
    """What identifies a scipy or CuPy matrix's arrays for the conversion cache: its format,
    shape and, per array, its id, address, length and dtype; None for another object (or a
    format the cache does not follow)."""
    module = type(m).__module__
    if not module.startswith(("scipy", "cupyx")):
        return None
    names = _MATRIX_ARRAYS.get(getattr(m, "format", None))
    if names is None:
        return None
    arrays = [getattr(m, n) for n in names]
    return (m.format, tuple(m.shape),
            tuple((id(a), _address(a), a.shape, a.dtype.str) for a in arrays))


def _as_csr(A):
    """A as a CSR: itself, or the CSR made from a scipy or CuPy matrix, kept on the matrix (see
    the module's docstring) so that a matrix passed again is not converted or analysed again."""
    if isinstance(A, CSR):
        return A
    key = _matrix_key(A)
    if key is not None:
        cached = getattr(A, _CACHE_ATTRIBUTE, None)
        if cached is not None and cached[0] == key:
            return cached[1]
    csr = CSR(A)
    if key is not None:
        try:
            setattr(A, _CACHE_ATTRIBUTE, (key, csr))
        except (AttributeError, TypeError):  # a class with __slots__: converted at every call
            pass
    return csr


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


# R-MAT's hashes (splitmix64's constants): one 64-bit draw per edge and level, the same integers
# on the host and in cuda/sparse/rmat.cu, so that both paths give the same matrix for a seed.
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_U64 = (1 << 64) - 1
RMAT_FEISTEL_ROUNDS = 4  # cuda/sparse/sparse.h's GLC_RMAT_FEISTEL_ROUNDS
RMAT_MAX_EDGES = 1 << 48  # far past any device's memory; keeps edge * 32 + level in 64 bits


def _mix64_int(z):
    """splitmix64's finalizer on one Python int of 64 bits (the seed's keys)."""
    z = ((z ^ (z >> 30)) * _MIX1) & _U64
    z = ((z ^ (z >> 27)) * _MIX2) & _U64
    return z ^ (z >> 31)


def _mix64(z, out=None, tmp=None):
    """splitmix64's finalizer on a uint64 array (products wrap, as in C), into out (a new array
    by default; tmp: scratch of z's shape), in place to spare the host path's allocations."""
    out = np.empty_like(z) if out is None else out
    tmp = np.empty_like(z) if tmp is None else tmp
    np.right_shift(z, np.uint64(30), out=tmp)
    np.bitwise_xor(z, tmp, out=out)
    out *= np.uint64(_MIX1)
    for shift, factor in ((27, _MIX2), (31, None)):
        np.right_shift(out, np.uint64(shift), out=tmp)
        out ^= tmp
        if factor:
            out *= np.uint64(factor)
    return out


def _feistel(x, scale, key):
    """A bijection of [0, 2^scale) (uint64 array x): RMAT_FEISTEL_ROUNDS Feistel rounds on the
    low and high halves of the bits (floor and ceil of scale / 2, swapping each round, so odd
    scales are exact too), each half mixed with a hash of the other."""
    lo_bits, hi_bits = scale // 2, scale - scale // 2
    for r in range(RMAT_FEISTEL_ROUNDS):
        lo = x & np.uint64((1 << lo_bits) - 1)
        hi = x >> np.uint64(lo_bits)
        f = _mix64(np.uint64((key + r * _GOLDEN) & _U64) ^ lo)
        x = (lo << np.uint64(hi_bits)) | ((hi ^ f) & np.uint64((1 << hi_bits) - 1))
        lo_bits, hi_bits = hi_bits, lo_bits
    return x


def _rmat_threshold(p):
    """p as a 32-bit threshold t: a draw r of 32 bits is below t with probability t / 2^32."""
    return int(round(min(max(p, 0.0), 1.0) * 2.0**32))


def _rmat_args(scale, edge_factor, a, b, c, seed, dtype):
    try:
        scale, edge_factor, seed = (operator.index(v) for v in (scale, edge_factor, seed))
    except TypeError:
        raise TypeError("scale, edge_factor and seed must be integers, got "
                        f"{type(scale).__name__}, {type(edge_factor).__name__} and "
                        f"{type(seed).__name__}") from None
    if not 1 <= scale <= 31:
        raise ValueError(f"scale must lie in 1..31 (2^scale vertices, int32 labels), got {scale}")
    if edge_factor < 1 or edge_factor << scale > RMAT_MAX_EDGES:
        raise ValueError(f"edge_factor must be >= 1 and edge_factor * 2^scale <= 2^48, got "
                         f"{edge_factor}")
    if not 0 <= seed <= _U64:
        raise ValueError(f"seed must lie in 0..2^64 - 1, got {seed}")
    probs = []
    for name, p in (("a", a), ("b", b), ("c", c)):
        if not isinstance(p, (int, float, np.integer, np.floating)) or isinstance(p, bool):
            raise TypeError(f"{name} must be a real number, got {type(p).__name__}")
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {p}")
        probs.append(p)
    a, b, c = probs
    if a + b + c > 1.0 + 1e-12:
        raise ValueError(f"a + b + c must be <= 1 (d = 1 - a - b - c), got {a + b + c}")
    dtype = np.dtype(dtype)
    if dtype not in _VALUE_DTYPES:
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    # Graph500's two draws a level: the row bit is 1 with probability c + d, then the column
    # bit is 1 with probability b / (a + b) in the top half, d / (c + d) in the bottom one
    ab, cd = a + b, max(0.0, 1.0 - a - b)
    thresholds = (_rmat_threshold(ab), _rmat_threshold(a / ab if ab > 0 else 1.0),
                  _rmat_threshold(c / cd if cd > 0 else 1.0))
    keys = (_mix64_int((seed + _GOLDEN) & _U64), _mix64_int((seed + 2 * _GOLDEN) & _U64))
    return scale, edge_factor << scale, thresholds, keys, dtype


def _rmat_host(scale, edges, thresholds, keys, dtype):
    """The CSR arrays of rmat on the host: every edge drawn level by level (vectorized over the
    edges), labels permuted, keys row * 2^scale + col sorted and their repeats counted."""
    t_ab, t_a, t_c = (np.uint64(t) for t in thresholds)
    edge_key, perm_key = keys
    n = 1 << scale
    counter = (np.arange(edges, dtype=np.uint64) * np.uint64(32) + np.uint64(1)) * np.uint64(
        _GOLDEN) + np.uint64(edge_key)
    rows = np.zeros(edges, np.uint64)
    cols = np.zeros(edges, np.uint64)
    h, tmp, bit = (np.empty(edges, np.uint64) for _ in range(3))
    down, right = np.empty(edges, bool), np.empty(edges, bool)
    for level in range(scale):
        _mix64(counter, h, tmp)
        np.greater_equal(np.right_shift(h, np.uint64(32), out=tmp), t_ab, out=down)
        np.bitwise_and(h, np.uint64(0xFFFFFFFF), out=h)
        np.greater_equal(h, np.where(down, t_c, t_a), out=right)
        for flags, labels in ((down, rows), (right, cols)):
            np.left_shift(flags, np.uint64(level), out=bit, dtype=np.uint64)
            labels |= bit
        counter += np.uint64(_GOLDEN)
    del counter, h, tmp, bit, down, right
    perm = _feistel(np.arange(n, dtype=np.uint64), scale, perm_key)
    edge_keys = (perm[rows] << np.uint64(scale)) | perm[cols]
    del rows, cols
    unique, counts = np.unique(edge_keys, return_counts=True)
    index = np.int64 if unique.size > _INT32_MAX else np.int32
    indptr = np.searchsorted(unique, np.arange(n + 1, dtype=np.uint64) << np.uint64(scale))
    return (indptr.astype(index), (unique & np.uint64(n - 1)).astype(index),
            counts.astype(dtype))


def rmat(scale, edge_factor=16, a=0.57, b=0.19, c=0.19, seed=0, dtype=np.float32, device=True,
         stream=None):
    """The Graph500 R-MAT (Kronecker) graph of n = 2^scale vertices and edge_factor * n edges,
    as an n x n CSR of dtype (float32 or float64) and int32 indices (int64 past 2^31 - 1 stored
    entries).

    Each edge picks its row and column bit by bit, scale times: the quadrant (top-left,
    top-right, bottom-left, bottom-right) with probabilities a, b, c and d = 1 - a - b - c, as
    the Graph500 specification's generator does (its defaults 0.57, 0.19, 0.19). The vertex
    labels are then permuted by a random bijection of [0, n) (rows and columns alike, from
    seed), so that the hubs do not all sit at the low labels. Repeated edges are summed, as
    SpMV on Graph500's edge list (which keeps them) would: each entry counts its edges, and the
    values sum to edge_factor * n. Self-loops are kept.

    device=True (the default) builds it on the GPU, where there is one, and returns a CSR whose
    arrays are DeviceArrays, made on `stream`; device=False, or no GPU, builds it with NumPy and
    returns a host CSR. Both draw the same numbers (a counter-based hash of seed, edge and
    level), so a seed gives the same matrix on both. On the GPU, more temporary device memory
    than is free (about 28 bytes an edge in float32) is a ValueError before anything runs."""
    scale, edges, thresholds, keys, dtype = _rmat_args(scale, edge_factor, a, b, c, seed, dtype)
    n = 1 << scale
    if device and _core.cuda_available():
        arrays = _core.rmat(scale, edges, *thresholds, *keys, dtype, stream)
    else:
        arrays = _rmat_host(scale, edges, thresholds, keys, dtype)
    return CSR(*arrays, shape=(n, n))


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


# ---------------------------------------------------------------- defaults on the device

# The rules variant=None follows on the device, from RowStats (docs/labs/sparse.md, "Defaults",
# has the figures behind each constant). Host matrices with NumPy operands keep the C default
# (openmp; serial for cg), which the figures do not contest.

# csr_scalar, a thread per row: 1.00 of the copy rate on the 5-point Laplacian (rows of 5,
# cv 0.006), 1.24x csr_subwarp's best there. A row longer than 16 holds its warp's 31 other
# threads (and reads 16 entries apart from theirs): 16 is our bound for "short".
SCALAR_MAX_ROW = 16
SCALAR_MAX_CV = ELL_MAX_CV
# csr_subwarp leaves a row to one group of `lanes` lanes, 6 strided loads each a pass
# (kGatherUnroll, cuda/sparse/kernels.cuh), so the longest row takes max_row / (6 lanes) passes
# of two dependent loads (~1.2 us each under load), while the whole matrix streams at ~100
# nonzeros a ns (the power-law figures). Where that row would take more than half the stream's
# time, one group holds the kernel's end: merge path, which cuts rows into equal shares, is the
# default. Half the stream's time in passes: nnz / (2 x 100 x 1200) passes of 6 lanes entries,
# i.e. max_row x 40000 > nnz x lanes (60000 when a pass took 4 loads). On R-MAT
# (Graph500, 2^22 rows, mean 16, longest ~10^5) this picks merge path (0.70x cuSPARSE measured,
# where csr_subwarp at 8 lanes ran 0.26x); on the power-law matrix (longest 1348) csr_subwarp.
SUBWARP_STRAGGLER_RATIO = 40000
# csr_hub_sorted, csr_hybrid on columns numbered by use: on R-MAT scale 22 (half its nonzeros in
# the 32K most used of 4M columns) it ran 0.52 ms against csr_hybrid's 0.58, for a column order
# of cols + nnz indices kept on the matrix. The rule takes it where csr_hybrid would run, the
# matrix has at least 8 x HUB_COLUMNS columns (below, x is a few MB that stay in L2 anyway) and
# a quarter of the nonzeros fall in the HUB_COLUMNS most used columns; the bounds are readings
# of that one graph, not measured edges.
HUB_COLUMNS = 32768
HUB_MIN_COLUMNS = 8 * HUB_COLUMNS
HUB_MIN_SHARE = 0.25
CG_DIA_MAX_DIAGONALS = 32  # cuda/sparse/sparse.h's GLC_CG_DIA_MAX_DIAGONALS


class Choice(NamedTuple):
    """The variant a default rule picks: its name, csr_subwarp's lanes (None for the other
    variants) and why, in words."""
    variant: str
    lanes: Optional[int]
    reason: str


def subwarp_lanes(stats):
    """csr_subwarp's and csr_hybrid's lanes per row for a matrix of these RowStats: the power of
    two in 2..32 nearest half its mean row length (the smallest L with 2 sqrt(2) L >= the mean,
    rounded up), the rule cuda/sparse/csr.cu applies for lanes=0. On the H200 it beat the
    nonzero-weighted mean (sum of squares / nnz), which picks more lanes on skewed matrices: 8
    lanes ran the lab's power-law matrix (mean 15, weighted mean 40.9) in 0.556 ms against 0.580
    at 16, and the R-MAT graph (mean 16) through csr_hybrid in 0.600 against 0.646 at 16 and 0.846
    at 32 (docs/labs/sparse.md)."""
    mean = -(-stats.nnz // stats.rows) if stats.rows else 0
    lanes = 2
    while lanes < 32 and 8 * lanes * lanes < mean * mean:
        lanes *= 2
    return lanes


# csr_hybrid's chunk (cuda/sparse/hybrid.cu's kHybridChunk): rows past it go to whole blocks
HYBRID_CHUNK = 2048


def spmv_default(stats):
    """The Choice of spmv's variant=None on the device for a matrix of these RowStats: csr_scalar
    for short regular rows, else csr_subwarp with subwarp_lanes, unless its longest row would
    hold the kernel's end (SUBWARP_STRAGGLER_RATIO), then csr_hybrid, whose blocks share the
    rows past HYBRID_CHUNK nonzeros (csr_merge_path where no row is that long). Never cuSPARSE: the
    default is one of gpulab's own kernels."""
    if stats.nnz == 0:
        return Choice("csr_scalar", None, "no nonzeros: every rung writes zeros")
    if stats.cv <= SCALAR_MAX_CV and stats.max_row <= SCALAR_MAX_ROW:
        return Choice("csr_scalar", None,
                      f"short regular rows (max {stats.max_row} <= {SCALAR_MAX_ROW}, cv "
                      f"{stats.cv:.2f} <= {SCALAR_MAX_CV}): a thread per row streams them at "
                      "the copy rate")
    lanes = subwarp_lanes(stats)
    if stats.max_row * SUBWARP_STRAGGLER_RATIO > stats.nnz * lanes:
        if stats.max_row > HYBRID_CHUNK:
            return Choice("csr_hybrid", lanes,
                          f"the longest row ({stats.max_row} of {stats.nnz} nonzeros) would hold "
                          f"one group of {lanes} lanes past the rest of the matrix: csr_hybrid "
                          f"cuts rows past {HYBRID_CHUNK} nonzeros into chunks a block each")
        return Choice("csr_merge_path", None,
                      f"the longest row ({stats.max_row} of {stats.nnz} nonzeros) would hold "
                      f"one group of {lanes} lanes past the rest of the matrix: merge path "
                      "shares it among threads")
    return Choice("csr_subwarp", lanes,
                  f"rows vary (cv {stats.cv:.2f}, max {stats.max_row}): {lanes} lanes a row, "
                  f"about half the mean row length {stats.mean:.1f}")


def hub_sorted_default(choice, cols, share):
    """The Choice of spmv's variant=None once spmv_default chose `choice` for a matrix of `cols`
    columns whose HUB_COLUMNS most used columns hold `share` of its nonzeros (None: the column
    order was not computed): csr_hub_sorted, with csr_hybrid's lanes, where csr_hybrid was chosen,
    cols >= HUB_MIN_COLUMNS and share >= HUB_MIN_SHARE; `choice` otherwise."""
    if choice.variant != "csr_hybrid" or cols < HUB_MIN_COLUMNS or share is None \
            or share < HUB_MIN_SHARE:
        return choice
    return Choice("csr_hub_sorted", choice.lanes,
                  f"{choice.reason}; {share:.0%} of the nonzeros fall in the {HUB_COLUMNS} most "
                  f"used of {cols} columns: csr_hybrid on columns numbered by use (the order "
                  "kept on the matrix), so that those values of x share sectors")


def spmm_default(stats, k=None):
    """The Choice of spmm's variant=None on the device: register_tiled, the fastest rung at
    k = 8 and 32 on both of the lab's matrices (6.8x / 2.6x cuSPARSE SpMM on the Laplacian,
    1.4x / 1.03x row_per_block on the power-law matrix); neither the matrix nor k changes it."""
    return Choice("register_tiled", None,
                  "4 columns of C a thread in registers: the fastest rung at k = 8 and 32 on "
                  "the Laplacian and the power-law matrix")


def cg_default(stats, diagonals, index_bytes, value_bytes):
    """The Choice of cg's variant=None on the device: dia_fused where it accepts A (at most 32
    diagonals, its DIA arrays of diagonals x rows values no larger than the CSR arrays: the
    test cuda/sparse/dia.cuh applies), fused otherwise. dia_fused ran 0.55x fused's time an
    iteration on the Laplacian (0.719 against 1.301 ms; 0.802 against 1.404 with Jacobi)."""
    rows = stats.rows
    dia = diagonals * rows * value_bytes
    csr = stats.nnz * (value_bytes + index_bytes) + (rows + 1) * index_bytes
    if diagonals <= CG_DIA_MAX_DIAGONALS and dia <= csr:
        return Choice("dia_fused", None,
                      f"{diagonals} diagonals: DIA holds {dia} bytes against CSR's {csr}, no "
                      "indices read, 2 passes an iteration")
    if diagonals > CG_DIA_MAX_DIAGONALS:
        why = f"more than {CG_DIA_MAX_DIAGONALS} diagonals"
    else:
        why = f"{diagonals} diagonals would take {dia} bytes against CSR's {csr}"
    return Choice("fused", None, f"{why}: CSR with fused passes")


_DEFAULT_OPS = ("spmv", "spmm", "cg")


def _choice(A, op, stream=None):
    """The Choice for op on A (a CSR), worked out once and kept on A: no host work after the
    first call (the statistics and the diagonal count are kept too)."""
    choice = A._choices.get(op)
    if choice is None:
        stats = A.row_stats(stream)
        if op == "spmv":
            choice = _hub_sorted_choice(A, spmv_default(stats), stream)
        elif op == "spmm":
            choice = spmm_default(stats)
        else:
            choice = cg_default(stats, A.diagonals(stream), A.index_dtype.itemsize,
                                A.dtype.itemsize)
        A._choices[op] = choice
    return choice


def _hub_sorted_choice(A, choice, stream):
    """hub_sorted_default for A, computing A's column order only where the rule could take it;
    an order the device cannot hold leaves csr_hybrid, and one the rule does not take is
    dropped (its memory freed)."""
    cols = A.shape[1]
    if not A.on_device or choice.variant != "csr_hybrid" or cols < HUB_MIN_COLUMNS:
        return choice
    try:
        share = A.column_order(stream)[1]
    except ValueError as e:
        return choice._replace(reason=f"{choice.reason} (csr_hub_sorted's column order would "
                                      f"not fit: {e})")
    chosen = hub_sorted_default(choice, cols, share)
    if chosen.variant != "csr_hub_sorted":
        A._column_order = None
    return chosen


def default_variant(op, A):
    """The variant op ("spmv", "spmm" or "cg") runs for A when variant=None and the operands are
    on the device, as a dict: "variant" (its name), "lanes" (csr_subwarp's, else None) and
    "reason". On host arrays the C default runs instead (openmp; serial for cg). Reads A's
    statistics (computed once, where A lives) and keeps the choice on A."""
    if op not in _DEFAULT_OPS:
        raise ValueError(f"op must be one of {', '.join(_DEFAULT_OPS)}, got {op!r}")
    A = _as_csr(A)
    if op == "cg" and A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square for cg, got {A.shape[0]} x {A.shape[1]}")
    return _choice(A, op)._asdict()


@functools.lru_cache(maxsize=1)
def _lanes_variants():
    """The ids and names of the spmv variants with a lanes tunable, from the variant table."""
    from ..registry import variants
    return frozenset(x for v in variants("spmv") if "lanes" in v.tunables for x in (v.id, v.name))


def _takes_lanes(variant):
    return variant in _lanes_variants()


# ---------------------------------------------------------------- spmv

# What each variant reads and writes beyond CSR SpMV's least traffic (docs/labs/sparse.md): the
# in-call conversions read the CSR arrays and write their format, which the product then reads
# instead of indptr/indices/data.
_ELL = (3, 4)
_SELL, _COO = 5, 6
_HUB_SORTED = (10, "csr_hub_sorted")


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
    if variant_id in _HUB_SORTED:  # x gathered into the order: new_to_old and x read, x' written
        return base + cols * (i + 2 * v)
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
    `variant`: an id or a name from ``gl.variants("spmv")``, or None: on the device, the rung
    spmv_default picks from A's row statistics, which hub_sorted_default may turn to
    csr_hub_sorted from A's column use (gl.sparse.default_variant("spmv", A) says which and
    why), on the host the C default (openmp). `block`: threads per block of the CUDA
    variants 0-6 and 8-10; `lanes`: lanes per row of csr_subwarp (8), csr_hybrid (9) and
    csr_hub_sorted (10), 2, 4, 8, 16 or 32 (None: subwarp_lanes of A's statistics; 0: the C
    rule, from the mean row length). The statistics are computed once per matrix, where it
    lives, and kept, as is csr_hub_sorted's column order (CSR.column_order), which that variant
    reads on the device even for NumPy operands (A's device copy, y copied back). Each y[i]
    lies within the bound of tests/references/sparse.py of the float64 product (the parallel
    variants reassociate)."""
    A = _as_csr(A)
    if not A.on_device and _is_device(x):
        A = A.to_device(stream=stream)
    if A.on_device and variant is None:
        choice = _choice(A, "spmv", stream)
        variant, lanes = choice.variant, choice.lanes if lanes is None else lanes
    elif lanes is None and _takes_lanes(variant):
        # the same lanes wherever the operands are: the same kernel, the same sums
        lanes = subwarp_lanes(A.row_stats(stream))
    # csr_hub_sorted reads A's column order, which lives on the device: NumPy operands run on
    # A's device copy (kept on A) and get a NumPy y back. Without a GPU the call below gives
    # every CUDA variant's refusal, which lists the CPU ones.
    order, fetch = (), False
    if variant in _HUB_SORTED:
        from .. import cuda_available, to_device
        if cuda_available():
            if not A.on_device:
                A, x = A.to_device(stream=stream), to_device(np.asarray(x), stream=stream)
                fetch = True
            order = (A.column_order(stream)[0],)
    y = _core.spmv(A.data, A.indices, A.indptr, x, variant, stream, A.shape[1],
                   A.row_stats(stream).max_row, block, lanes, *order)
    return y.get() if fetch else y


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
    is a DeviceArray, computed asynchronously on `stream`. `variant`: an id or a name from
    ``gl.variants("spmm")``, or None: on the device spmm_default's (register_tiled), on the host
    the C default (openmp). `block`: threads per block of the CUDA variants 0-1. Each C[i, j]
    lies within the bound of tests/references/sparse.py."""
    A = _as_csr(A)
    if not A.on_device and _is_device(B):
        A = A.to_device(stream=stream)
    if A.on_device and variant is None:
        variant = _choice(A, "spmm", stream).variant
    return _core.spmm(A.data, A.indices, A.indptr, B, variant, stream, A.shape[1],
                      A.row_stats(stream).max_row, block)


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

    def get(self):
        """The same result with x copied to the host (as JacobiResult.get)."""
        return self._replace(x=self.x.get()) if hasattr(self.x, "get") else self


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
    wait for its last event, so the total is slower than an untimed solve. `variant`: an id or a
    name from ``gl.variants("cg")``, or None: on the device cg_default's (dia_fused where it
    accepts A, its diagonals counted on the device once and kept; fused otherwise), on the host
    the C default (serial); `block`: threads per block of the CUDA variants. Variant dia_fused
    stores A by its diagonals (gl.sparse.dia_offsets) and refuses, with a ValueError, a matrix
    of more than 32 diagonals or one whose diagonals would take more bytes than its CSR
    arrays."""
    A = _as_csr(A)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square for cg, got {A.shape[0]} x {A.shape[1]}")
    if not (M is None or (isinstance(M, str) and M == "jacobi")):
        raise ValueError(f"M must be 'jacobi' or None, got {M!r}")
    k = _cg_maxiter(A, maxiter)
    check_every = _cg_int("check_every", check_every, 1)
    rtol, atol = _cg_tolerance("rtol", rtol), _cg_tolerance("atol", atol)
    device = A.on_device or _is_device(b)
    if device and not A.on_device:
        A = A.to_device(stream=stream)
    if device and variant is None:
        variant = _choice(A, "cg", stream).variant
    if x0 is None:
        x0 = (_core.empty(0, dtype=A.dtype, stream=stream) if device
              else np.empty(0, dtype=A.dtype))
    x, residuals, iterations, converged, breakdown, ms = _core.cg(
        A.data, A.indices, A.indptr, b, x0, variant, stream, A.shape[1],
        A.row_stats(stream).max_row, block,
        rtol, atol, k, check_every, M == "jacobi", bool(phases))
    return CgResult(x, int(iterations), residuals, bool(converged), bool(breakdown),
                    dict(zip(PHASES, ms)) if ms is not None else None)
