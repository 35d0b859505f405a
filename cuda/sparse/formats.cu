// SpMV variants 3-6: the CSR matrix converted, inside the call and on the stream, into ELL
// (two layouts), SELL-C-sigma or COO, then multiplied. The converted arrays live in
// stream-ordered scratch freed at the end of the call: nothing is cached on the matrix, so each
// call pays for its conversion (it reads the CSR arrays once and writes the format), and the
// benchmark's byte model counts both (docs/labs/sparse.md).
//
// Padding slots hold the column -1 and the value 0 and are skipped: 0 * x[0] would turn an inf
// or NaN of x[0] into a NaN that no other format produces.
#include <cstdint>

#include "cuda/core/resources.cuh"
#include "kernels.cuh"

namespace {

constexpr int kSliceRows = 32;      // SELL's C: one warp's rows per slice
constexpr int kSortWindow = 256;    // SELL's sigma: rows sorted by length within windows of 256
constexpr int kScanThreads = 1024;  // the one block that scans the slices' sizes

// ELL: row i's nonzeros in slots 0..length-1 of `width`, the rest padding. Column-major puts
// slot k of row i at k * rows + i, so a warp's 32 rows read 32 consecutive elements; row-major
// (S3's drawing) at i * width + k, a warp's loads width elements apart.
template <typename I, typename T>
__global__ void ell_fill(long long rows, long long width, bool column_major, const I *indptr,
                         const I *indices, const T *data, I *ell_cols, T *ell_vals) {
  const long long row = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  const long long begin = indptr[row], length = indptr[row + 1] - begin;
  for (long long k = 0; k < width; k++) {
    const size_t slot =
        column_major ? static_cast<size_t>(k * rows + row) : static_cast<size_t>(row * width + k);
    ell_cols[slot] = k < length ? indices[begin + k] : I(-1);
    ell_vals[slot] = k < length ? data[begin + k] : T(0);
  }
}

template <typename I, typename T>
__global__ void spmv_ell(long long rows, long long width, bool column_major, const I *ell_cols,
                         const T *ell_vals, const T *x, T *y) {
  const long long row = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  T sum = 0;
  for (long long k = 0; k < width; k++) {
    const size_t slot =
        column_major ? static_cast<size_t>(k * rows + row) : static_cast<size_t>(row * width + k);
    const I col = ell_cols[slot];
    if (col >= 0) sum += ell_vals[slot] * x[col];
  }
  y[row] = sum;
}

// SELL-C-sigma, step 1: within each window of kSortWindow rows, each row's rank by length
// (longest first, ties by row), found by comparing with every row of the window through shared
// memory; perm[window + rank] = row. Positions past the last row get -1. One block per window.
template <typename I>
__global__ void sell_sort_window(long long rows, const I *indptr, long long *perm) {
  __shared__ long long lengths[kSortWindow];
  const long long base = blockIdx.x * static_cast<long long>(kSortWindow);
  const long long row = base + threadIdx.x;
  lengths[threadIdx.x] = row < rows ? static_cast<long long>(indptr[row + 1] - indptr[row]) : -1;
  __syncthreads();
  if (row >= rows) {
    perm[row] = -1;
    return;
  }
  const long long mine = lengths[threadIdx.x];
  int rank = 0;
  for (int q = 0; q < kSortWindow; q++) {
    const long long other = lengths[q];
    rank += other > mine || (other == mine && q < static_cast<int>(threadIdx.x));
  }
  perm[base + rank] = row;
}

// Step 2: slice s's size, kSliceRows times its first (longest) row's length.
template <typename I>
__global__ void sell_slice_sizes(long long slices, const I *indptr, const long long *perm,
                                 long long *sizes) {
  const long long s = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (s >= slices) return;
  const long long row = perm[s * kSliceRows];
  sizes[s] = row < 0 ? 0 : kSliceRows * static_cast<long long>(indptr[row + 1] - indptr[row]);
}

// Step 3: offsets[s] = sizes[0] + ... + sizes[s - 1], offsets[slices] the total, in one block:
// each thread sums a run of slices, the block scans the runs' totals in shared memory
// (Hillis-Steele, a barrier between reading and writing each step), then each thread writes its
// run's offsets.
__global__ void sell_scan_sizes(long long slices, const long long *sizes, long long *offsets) {
  __shared__ long long totals[kScanThreads];
  const long long per = (slices + kScanThreads - 1) / kScanThreads;
  const long long begin = threadIdx.x * per;
  const long long end = begin + per < slices ? begin + per : slices;
  long long total = 0;
  for (long long s = begin; s < end; s++) total += sizes[s];
  totals[threadIdx.x] = total;
  __syncthreads();
  for (int offset = 1; offset < kScanThreads; offset *= 2) {
    const long long add = threadIdx.x >= offset ? totals[threadIdx.x - offset] : 0;
    __syncthreads();
    totals[threadIdx.x] += add;
    __syncthreads();
  }
  long long running = totals[threadIdx.x] - total;  // exclusive
  for (long long s = begin; s < end; s++) {
    offsets[s] = running;
    running += sizes[s];
  }
  if (threadIdx.x == kScanThreads - 1) offsets[slices] = totals[threadIdx.x];
}

// Step 4: slot k of position p (row perm[p], lane p % C of slice p / C) at
// offsets[slice] + k * C + lane: column-major within the slice.
template <typename I, typename T>
__global__ void sell_fill(long long positions, const I *indptr, const I *indices, const T *data,
                          const long long *perm, const long long *offsets, I *sell_cols,
                          T *sell_vals) {
  const long long p = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (p >= positions) return;
  const long long slice = p / kSliceRows, lane = p % kSliceRows;
  const long long width = (offsets[slice + 1] - offsets[slice]) / kSliceRows;
  const long long row = perm[p];
  const long long begin = row < 0 ? 0 : indptr[row];
  const long long length = row < 0 ? 0 : indptr[row + 1] - begin;
  for (long long k = 0; k < width; k++) {
    const size_t slot = static_cast<size_t>(offsets[slice] + k * kSliceRows + lane);
    sell_cols[slot] = k < length ? indices[begin + k] : I(-1);
    sell_vals[slot] = k < length ? data[begin + k] : T(0);
  }
}

template <typename I, typename T>
__global__ void spmv_sell(long long positions, const long long *perm, const long long *offsets,
                          const I *sell_cols, const T *sell_vals, const T *x, T *y) {
  const long long p = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (p >= positions) return;
  const long long row = perm[p];
  if (row < 0) return;
  const long long slice = p / kSliceRows, lane = p % kSliceRows;
  const long long width = (offsets[slice + 1] - offsets[slice]) / kSliceRows;
  T sum = 0;
  for (long long k = 0; k < width; k++) {
    const size_t slot = static_cast<size_t>(offsets[slice] + k * kSliceRows + lane);
    const I col = sell_cols[slot];
    if (col >= 0) sum += sell_vals[slot] * x[col];
  }
  y[row] = sum;
}

// Slots of padded_rows x width, with room for an index and a value each, when their bytes fit in
// size_t; 0 otherwise. The binding refuses such a size before the call (csrc/labs/sparse/
// sparse.c); this keeps a direct caller of glc_spmv from allocating a wrapped-around size.
template <typename I, typename T>
size_t padded_slots(size_t padded_rows, size_t width) {
  const size_t most = SIZE_MAX / (sizeof(I) + sizeof(T));
  if (width && padded_rows > most / width) return 0;
  return padded_rows * width;
}

// COO: each nonzero's row, written by its row's thread.
template <typename I>
__global__ void coo_rows(long long rows, const I *indptr, I *coo_row) {
  const long long row = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  for (I k = indptr[row]; k < indptr[row + 1]; k++) coo_row[k] = static_cast<I>(row);
}

// A thread per nonzero; each warp adds its products by a segmented inclusive scan over runs of
// equal rows (rows are sorted: a run is contiguous), and each run's last lane adds the run's
// sum into y with atomicAdd (y zeroed first; a row that spans warps gets one add from each).
template <typename I, typename T>
__global__ void spmv_coo_segmented(long long nnz, const I *coo_row, const I *indices, const T *data,
                                   const T *x, T *y) {
  const long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int lane = threadIdx.x % 32;
  const bool live = k < nnz;
  T v = live ? data[k] * x[indices[k]] : T(0);
  const long long row = live ? static_cast<long long>(coo_row[k]) : -1;
  for (int offset = 1; offset < 32; offset *= 2) {
    const T up = __shfl_up_sync(0xffffffffu, v, offset);
    const long long up_row = __shfl_up_sync(0xffffffffu, row, offset);
    if (lane >= offset && up_row == row) v += up;
  }
  const long long next_row = __shfl_down_sync(0xffffffffu, row, 1);
  if (live && (lane == 31 || next_row != row)) atomicAdd(&y[row], v);
}

template <typename I, typename T>
int spmv_ell_variant(bool column_major, const SpmvCall<I, T> &c) {
  const unsigned grid = spmv_grid(static_cast<size_t>(c.rows), c.block);
  if (!grid) return glc_fail(cudaErrorInvalidConfiguration, "glc_spmv(too many rows)");
  const size_t slots =
      padded_slots<I, T>(static_cast<size_t>(c.rows), static_cast<size_t>(c.max_row));
  if (!slots && c.rows && c.max_row) return glc_fail(cudaErrorMemoryAllocation, "glc_spmv(ELL)");
  GlcDeviceBuffer cols, vals;
  int code = cols.allocate(slots * sizeof(I), c.stream);
  GLC_TRY(code, vals.allocate(slots * sizeof(T), c.stream));
  GLC_TRY(code, glc_launch(ell_fill<I, T>, "ell_fill", grid, c.block, c.stream, c.rows, c.max_row,
                           column_major, c.indptr, c.indices, c.data, cols.as<I>(), vals.as<T>()));
  GLC_TRY(code, glc_launch(spmv_ell<I, T>, "spmv_ell", grid, c.block, c.stream, c.rows, c.max_row,
                           column_major, cols.as<const I>(), vals.as<const T>(), c.x, c.y));
  return code;
}

// Scratch: perm (positions), sizes and offsets (slices + 1) and, since the total stays on the
// device, columns and values at ELL's bound (positions x max_row); only the slices' own widths
// are written and read.
template <typename I, typename T>
int spmv_sell_variant(const SpmvCall<I, T> &c) {
  const long long windows = (c.rows + kSortWindow - 1) / kSortWindow;
  const long long positions = windows * kSortWindow, slices = positions / kSliceRows;
  const unsigned grid = spmv_grid(static_cast<size_t>(positions), c.block);
  if (!grid) return glc_fail(cudaErrorInvalidConfiguration, "glc_spmv(too many rows)");
  const size_t slots =
      padded_slots<I, T>(static_cast<size_t>(positions), static_cast<size_t>(c.max_row));
  if (!slots && c.max_row) return glc_fail(cudaErrorMemoryAllocation, "glc_spmv(SELL)");
  GlcDeviceBuffer perm, sizes, offsets, cols, vals;
  int code = perm.allocate(static_cast<size_t>(positions) * sizeof(long long), c.stream);
  GLC_TRY(code, sizes.allocate(static_cast<size_t>(slices) * sizeof(long long), c.stream));
  GLC_TRY(code, offsets.allocate(static_cast<size_t>(slices + 1) * sizeof(long long), c.stream));
  GLC_TRY(code, cols.allocate(slots * sizeof(I), c.stream));
  GLC_TRY(code, vals.allocate(slots * sizeof(T), c.stream));
  GLC_TRY(code, glc_launch(sell_sort_window<I>, "sell_sort_window", static_cast<unsigned>(windows),
                           kSortWindow, c.stream, c.rows, c.indptr, perm.as<long long>()));
  GLC_TRY(code, glc_launch(sell_slice_sizes<I>, "sell_slice_sizes",
                           spmv_grid(static_cast<size_t>(slices), c.block), c.block, c.stream,
                           slices, c.indptr, perm.as<const long long>(), sizes.as<long long>()));
  GLC_TRY(code, glc_launch(sell_scan_sizes, "sell_scan_sizes", 1, kScanThreads, c.stream, slices,
                           sizes.as<const long long>(), offsets.as<long long>()));
  GLC_TRY(code, glc_launch(sell_fill<I, T>, "sell_fill", grid, c.block, c.stream, positions,
                           c.indptr, c.indices, c.data, perm.as<const long long>(),
                           offsets.as<const long long>(), cols.as<I>(), vals.as<T>()));
  GLC_TRY(code, glc_launch(spmv_sell<I, T>, "spmv_sell", grid, c.block, c.stream, positions,
                           perm.as<const long long>(), offsets.as<const long long>(),
                           cols.as<const I>(), vals.as<const T>(), c.x, c.y));
  return code;
}

template <typename I, typename T>
int spmv_coo_variant(const SpmvCall<I, T> &c) {
  const unsigned row_grid = spmv_grid(static_cast<size_t>(c.rows), c.block);
  const unsigned grid = spmv_grid(static_cast<size_t>(c.nnz), c.block);
  if (!grid || !row_grid) return glc_fail(cudaErrorInvalidConfiguration, "glc_spmv(too large)");
  GlcDeviceBuffer rows;
  int code = rows.allocate(static_cast<size_t>(c.nnz) * sizeof(I), c.stream);
  GLC_TRY(code, glc_memset_async(c.y, 0, static_cast<size_t>(c.rows) * sizeof(T), c.stream));
  GLC_TRY(code, glc_launch(coo_rows<I>, "coo_rows", row_grid, c.block, c.stream, c.rows, c.indptr,
                           rows.as<I>()));
  GLC_TRY(code, glc_launch(spmv_coo_segmented<I, T>, "spmv_coo_segmented", grid, c.block, c.stream,
                           c.nnz, rows.as<const I>(), c.indices, c.data, c.x, c.y));
  return code;
}

}  // namespace

template <typename I, typename T>
int spmv_format_family(int variant, const SpmvCall<I, T> &c) {
  switch (variant) {
    case GLC_SPMV_ELL_COLUMN_MAJOR:
      return spmv_ell_variant(true, c);
    case GLC_SPMV_ELL_ROW_MAJOR:
      return spmv_ell_variant(false, c);
    case GLC_SPMV_SELL:
      return spmv_sell_variant(c);
    case GLC_SPMV_COO:
      return spmv_coo_variant(c);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_spmv(variant)");
  }
}

template int spmv_format_family<int, float>(int, const SpmvCall<int, float> &);
template int spmv_format_family<int, double>(int, const SpmvCall<int, double> &);
template int spmv_format_family<long long, float>(int, const SpmvCall<long long, float> &);
template int spmv_format_family<long long, double>(int, const SpmvCall<long long, double> &);
