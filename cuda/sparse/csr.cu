// SpMV variants 0-2 and 8 on the CSR arrays themselves, and the lab's entry point glc_spmv.
//
// Byte model (docs/labs/sparse.md): a CSR SpMV reads indptr (rows + 1 indices), indices and data
// (nnz each) once, x at least once (cols elements; more where rows gather the same x from DRAM
// again), and writes y (rows elements).
#include <climits>

#include "kernels.cuh"
#include "merge_path.cuh"

namespace {

// S3's kernel: thread i walks row i. A warp's 32 rows start far apart in indices/data, so its
// loads are uncoalesced unless rows are very short; one long row holds its warp.
template <typename I, typename T>
__global__ void spmv_csr_scalar(long long rows, const I *indptr, const I *indices, const T *data,
                                const T *x, T *y) {
  const long long row = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  T sum = 0;
  for (I k = indptr[row]; k < indptr[row + 1]; k++) sum += data[k] * x[indices[k]];
  y[row] = sum;
}

// One warp per row: lane j takes nonzeros j, j + 32, ... (coalesced along the row), then a
// shuffle tree. Rows shorter than 32 leave lanes idle.
template <typename I, typename T>
__global__ void spmv_csr_vector(long long rows, const I *indptr, const I *indices, const T *data,
                                const T *x, T *y) {
  const long long row = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // whole warps leave together: rows * 32 threads, warps aligned
  T sum = 0;
  const I end = indptr[row + 1];
  for (I k = indptr[row] + lane; k < end; k += 32) sum += data[k] * x[indices[k]];
  sum = warp_sum(sum);
  if (lane == 0) y[row] = sum;
}

// Merge path (merge_path.cuh): equal shares of rows plus nonzeros per thread; a row cut by a
// share's edge is added with atomicAdd into y, which the launcher zeroes first.
template <typename I, typename T>
__global__ void spmv_csr_merge_path(long long rows, long long nnz, const I *indptr,
                                    const I *indices, const T *data, const T *x, T *y) {
  const long long thread = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  merge_path_share(thread, rows, nnz, indptr, indices, data, x,
                   [&](long long i, T sum, bool whole) {
                     if (whole)
                       y[i] = sum;
                     else
                       atomicAdd(&y[i], sum);
                   });
}

// A group of L lanes per row (L a power of two, 2..32; a warp holds 32 / L rows): lane j of the
// group takes nonzeros j, j + L, ... like csr_vector's warp, but without csr_vector's idle lanes at
// a mean row length of 5-15 (the power-law matrix runs every kernel of ours at ~0.85 ms, ~650 GB/s,
// cuSPARSE at 0.571 ms: docs/labs/sparse.md). Each pass takes kGatherUnroll strided nonzeros per
// lane and issues all their index and value loads, then all their x gathers, before any FMA: up to
// kGatherUnroll gathers of x in flight per lane where the other kernels have one (col[j] then
// x[col[j]] is two dependent loads). Loads past the row's end are predicated off, so a short row
// costs one pass and a long row (thousands of nonzeros) just loops. The sum is a shuffle tree over
// the group's own lanes (its mask, width L); lane 0 writes y, so an empty row writes 0. Sums in T,
// like the other CSR kernels. No spills on sm_90 (-Xptxas -v).
template <int L, typename I, typename T>
__global__ void spmv_csr_subwarp(long long rows, const I *indptr, const I *indices, const T *data,
                                 const T *x, T *y) {
  static_assert(L >= 2 && L <= 32 && (L & (L - 1)) == 0, "L: a power of two in 2..32");
  const long long row = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / L;
  const int lane = threadIdx.x % L;
  // blockDim.x is a multiple of 32, so a group never straddles a warp or a block, and its lanes
  // share `row`: a group past the last row leaves whole, and no shuffle waits on it.
  if (row >= rows) return;
  const unsigned group_mask =
      L == 32 ? 0xffffffffu : ((1u << L) - 1u) << (threadIdx.x % 32 / L * L);
  const I end = indptr[row + 1];
  T sum = strided_sum<L, I>(indptr[row] + lane, end, indices, data, x);
#pragma unroll
  for (int offset = L / 2; offset > 0; offset /= 2)
    sum += __shfl_down_sync(group_mask, sum, offset, L);
  if (lane == 0) y[row] = sum;
}

// csr_subwarp's lanes per row when a caller of glc_spmv passes lanes 0 (gl.spmv passes its
// own choice, gpulab/labs/sparse.py's subwarp_lanes: the same rule on the nonzero-weighted mean
// row length, from statistics computed once per matrix; the plain mean picked 8 lanes for the
// power-law matrix, where most nonzeros lie in rows of ~40). Here: the power of two
// nearest to half the mean row length (geometrically: the smallest L in 2..32 with 2 sqrt(2) L >=
// mean), so that each lane of a row's group takes about two of its entries. On the H100
// (benchmarks/results/sparse_lab.json) the 5-point Laplacian (mean 5) ran in 0.371 ms at L = 2,
// 0.499 at 4 and 0.884 at 8, and the power-law matrix (mean 15) in 0.704, 0.651, 0.619, 0.618 and
// 0.865 ms at L = 2 to 32: short rows want few lanes (a group's idle lanes cost as much as its busy
// ones), long ones enough lanes to keep their loads in flight. This picks 2 and 8 for them (the
// rule before, the smallest power of two >= the mean, picked 8 and 16). L = 2 up to mean 5, 4 up to
// 11, 8 up to 22, 16 up to 45, 32 past that.
inline int subwarp_lanes(long long rows, long long nnz) {
  if (rows <= 0) return 2;
  long long mean = (nnz + rows - 1) / rows;
  if (mean > 1024) mean = 1024;  // 32 lanes from 46 on; keeps mean * mean small
  int lanes = 2;
  while (lanes < 32 && 8ll * lanes * lanes < mean * mean) lanes *= 2;
  return lanes;
}

template <int L, typename I, typename T>
int launch_subwarp(const SpmvCall<I, T> &c) {
  const unsigned grid = spmv_grid(static_cast<size_t>(c.rows) * L, c.block);
  if (!grid) return glc_fail(cudaErrorInvalidConfiguration, "glc_spmv(too many rows)");
  return glc_launch(spmv_csr_subwarp<L, I, T>, "spmv_csr_subwarp", grid, c.block, c.stream, c.rows,
                    c.indptr, c.indices, c.data, c.x, c.y);
}

template <typename I, typename T>
int spmv_csr_subwarp_variant(const SpmvCall<I, T> &c) {
  switch (c.lanes ? c.lanes : subwarp_lanes(c.rows, c.nnz)) {
    case 2:
      return launch_subwarp<2, I, T>(c);
    case 4:
      return launch_subwarp<4, I, T>(c);
    case 8:
      return launch_subwarp<8, I, T>(c);
    case 16:
      return launch_subwarp<16, I, T>(c);
    case 32:
      return launch_subwarp<32, I, T>(c);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_spmv(lanes)");
  }
}

}  // namespace

int spmv_subwarp_lanes(long long rows, long long nnz) { return subwarp_lanes(rows, nnz); }

template <typename I, typename T>
int spmv_csr_family(int variant, const SpmvCall<I, T> &c) {
  const int block = c.block;
  if (variant == GLC_SPMV_CSR_SCALAR) {
    const unsigned grid = spmv_grid(static_cast<size_t>(c.rows), block);
    if (!grid) return glc_fail(cudaErrorInvalidConfiguration, "glc_spmv(too many rows)");
    return glc_launch(spmv_csr_scalar<I, T>, "spmv_csr_scalar", grid, block, c.stream, c.rows,
                      c.indptr, c.indices, c.data, c.x, c.y);
  }
  if (variant == GLC_SPMV_CSR_VECTOR) {
    const unsigned grid = spmv_grid(static_cast<size_t>(c.rows) * 32, block);
    if (!grid) return glc_fail(cudaErrorInvalidConfiguration, "glc_spmv(too many rows)");
    return glc_launch(spmv_csr_vector<I, T>, "spmv_csr_vector", grid, block, c.stream, c.rows,
                      c.indptr, c.indices, c.data, c.x, c.y);
  }
  if (variant == GLC_SPMV_CSR_SUBWARP) return spmv_csr_subwarp_variant<I, T>(c);
  const size_t items = static_cast<size_t>(c.rows + c.nnz);
  const unsigned grid = spmv_grid(items / kMergeItems + 1, block);
  if (!grid) return glc_fail(cudaErrorInvalidConfiguration, "glc_spmv(too many nonzeros)");
  int code = glc_memset_async(c.y, 0, static_cast<size_t>(c.rows) * sizeof(T), c.stream);
  if (code) return code;
  return glc_launch(spmv_csr_merge_path<I, T>, "spmv_csr_merge_path", grid, block, c.stream, c.rows,
                    c.nnz, c.indptr, c.indices, c.data, c.x, c.y);
}

// cg.cu's variant 0 and its A x0 call the merge path through this family.
template int spmv_csr_family<int, float>(int, const SpmvCall<int, float> &);
template int spmv_csr_family<int, double>(int, const SpmvCall<int, double> &);
template int spmv_csr_family<long long, float>(int, const SpmvCall<long long, float> &);
template int spmv_csr_family<long long, double>(int, const SpmvCall<long long, double> &);

namespace {

template <typename I, typename T>
int run(int variant, int block, int lanes, const glc_csr *a, const void *x, void *y,
        cudaStream_t stream) {
  const SpmvCall<I, T> c = {static_cast<long long>(a->rows),
                            static_cast<long long>(a->cols),
                            static_cast<long long>(a->nnz),
                            static_cast<long long>(a->max_row),
                            static_cast<const I *>(a->indptr),
                            static_cast<const I *>(a->indices),
                            static_cast<const T *>(a->data),
                            static_cast<const T *>(x),
                            static_cast<T *>(y),
                            block,
                            stream,
                            lanes,
                            static_cast<const I *>(a->column_order)};
  if (variant == GLC_SPMV_CSR_HYBRID) return spmv_csr_hybrid<I, T>(c);
  if (variant == GLC_SPMV_CSR_HUB_SORTED) return spmv_csr_hub_sorted<I, T>(c);
  if (variant <= GLC_SPMV_CSR_MERGE_PATH || variant == GLC_SPMV_CSR_SUBWARP)
    return spmv_csr_family<I, T>(variant, c);
  return spmv_format_family<I, T>(variant, c);
}

template <typename I>
int run_index(int variant, int block, int lanes, const glc_csr *a, const void *x, void *y,
              cudaStream_t stream) {
  return a->dtype == GLC_F64 ? run<I, double>(variant, block, lanes, a, x, y, stream)
                             : run<I, float>(variant, block, lanes, a, x, y, stream);
}

}  // namespace

// The checks glc_spmv and glc_spmm share: the matrix's dtypes and sizes, the block, and the
// alignment of its arrays (where it has entries). names: "glc_spmv(a)" and the like, per entry.
int sparse_check(const SparseNames &names, const glc_csr *a, int *block) {
  if (a == nullptr) return glc_fail(cudaErrorInvalidValue, names.a);
  if (a->dtype != GLC_F32 && a->dtype != GLC_F64)
    return glc_fail(cudaErrorInvalidValue, names.dtype);
  if (a->index_dtype != GLC_I32 && a->index_dtype != GLC_I64)
    return glc_fail(cudaErrorInvalidValue, names.index_dtype);
  if (*block == 0) *block = 256;
  if (*block < 32 || *block > 1024 || (*block & (*block - 1)) != 0)
    return glc_fail(cudaErrorInvalidValue, names.block);
  const size_t index_bytes = a->index_dtype == GLC_I64 ? 8 : 4;
  if (index_bytes == 4 && (a->nnz > INT_MAX || a->rows >= INT_MAX || a->cols > INT_MAX))
    return glc_fail(cudaErrorInvalidValue, names.int32);
  if (a->max_row > a->nnz || (a->nnz && (a->rows == 0 || a->cols == 0)))
    return glc_fail(cudaErrorInvalidValue, names.sizes);
  if (a->nnz && !glc_all_aligned(index_bytes, a->indptr, a->indices))
    return glc_fail(cudaErrorInvalidValue, names.index_arrays);
  if (a->nnz && !glc_all_aligned(a->dtype == GLC_F64 ? 8 : 4, a->data))
    return glc_fail(cudaErrorInvalidValue, names.data);
  return cudaSuccess;
}

extern "C" int glc_spmv(int variant, int block, int lanes, const glc_csr *a, const void *x, void *y,
                        glc_stream stream) {
  switch (variant) {
    case GLC_SPMV_CSR_SCALAR:
    case GLC_SPMV_CSR_VECTOR:
    case GLC_SPMV_CSR_MERGE_PATH:
    case GLC_SPMV_ELL_COLUMN_MAJOR:
    case GLC_SPMV_ELL_ROW_MAJOR:
    case GLC_SPMV_SELL:
    case GLC_SPMV_COO:
    case GLC_SPMV_CUSPARSE:
    case GLC_SPMV_CSR_SUBWARP:
    case GLC_SPMV_CSR_HYBRID:
    case GLC_SPMV_CSR_HUB_SORTED:
      break;
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_spmv(variant)");
  }
  static const SparseNames names = {"glc_spmv(a)",
                                    "glc_spmv(dtype)",
                                    "glc_spmv(index_dtype)",
                                    "glc_spmv(block)",
                                    "glc_spmv(int32 indices past 2^31 - 1)",
                                    "glc_spmv(a: sizes)",
                                    "glc_spmv(a: index arrays)",
                                    "glc_spmv(a.data)"};
  if (lanes && ((variant != GLC_SPMV_CSR_SUBWARP && variant != GLC_SPMV_CSR_HYBRID &&
                 variant != GLC_SPMV_CSR_HUB_SORTED) ||
                lanes < 2 || lanes > 32 || (lanes & (lanes - 1))))
    return glc_fail(cudaErrorInvalidValue, "glc_spmv(lanes)");
  int code = sparse_check(names, a, &block);
  if (code || a->rows == 0) return code;
  const size_t value_bytes = a->dtype == GLC_F64 ? 8 : 4;
  if (!glc_all_aligned(value_bytes, y)) return glc_fail(cudaErrorInvalidValue, "glc_spmv(y)");
  if (a->nnz == 0) return glc_memset_async(y, 0, a->rows * value_bytes, stream);
  if (!glc_all_aligned(value_bytes, x)) return glc_fail(cudaErrorInvalidValue, "glc_spmv(x)");
  if (variant == GLC_SPMV_CSR_HUB_SORTED &&
      (a->column_order == nullptr ||
       !glc_all_aligned(a->index_dtype == GLC_I64 ? 8 : 4, a->column_order)))
    return glc_fail(cudaErrorInvalidValue, "glc_spmv(a.column_order)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (variant == GLC_SPMV_CUSPARSE) return glc_cusparse_spmv(a, x, y, s);
  return a->index_dtype == GLC_I64 ? run_index<long long>(variant, block, lanes, a, x, y, s)
                                   : run_index<int>(variant, block, lanes, a, x, y, s);
}
