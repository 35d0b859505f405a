// SpMM, C = A B with A in CSR and B dense (row-major, k columns): variants 0-1, and the entry
// point glc_spmm.
//
// Byte model (docs/labs/sparse.md): A's arrays once, B once (cols x k values; rows of B that
// several rows of A use are assumed to come from L2 after the first), C written once.
#include "kernels.cuh"

namespace {

// S3's SpMM: block r computes row r of C, its threads striding over the k columns. Every thread
// reads the row's entries (the same addresses across the block: broadcasts), then B's row
// indices[e] along j, coalesced; the loop is repeated for k > blockDim.x.
template <typename I, typename T>
__global__ void spmm_row_per_block(long long rows, long long k, const I *indptr, const I *indices,
                                   const T *data, const T *b, T *c) {
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const I begin = indptr[row], end = indptr[row + 1];
  for (long long j = threadIdx.x; j < k; j += blockDim.x) {
    T sum = 0;
    for (I e = begin; e < end; e++) sum += data[e] * b[static_cast<long long>(indices[e]) * k + j];
    c[row * k + j] = sum;
  }
}

constexpr int kTile = 4;  // the register tile: columns of C per thread

// Register-tiled: thread t computes kTile consecutive columns of one row of C in registers, so
// each of A's entries (its column and value) is loaded once for kTile products instead of once
// per column, and the threads of a row read kTile-wide runs of B's row. Threads are laid out
// row after row (groups = ceil(k / kTile) per row), so small k packs several rows per warp.
template <typename I, typename T>
__global__ void spmm_register_tiled(long long rows, long long k, const I *indptr, const I *indices,
                                    const T *data, const T *b, T *c) {
  const long long groups = (k + kTile - 1) / kTile;
  const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const long long row = t / groups;
  if (row >= rows) return;
  const long long j0 = (t % groups) * kTile;
  T sum[kTile] = {};
  const I end = indptr[row + 1];
  for (I e = indptr[row]; e < end; e++) {
    const T a = data[e];
    const T *b_row = b + static_cast<long long>(indices[e]) * k;
#pragma unroll
    for (int q = 0; q < kTile; q++)
      if (j0 + q < k) sum[q] += a * b_row[j0 + q];
  }
#pragma unroll
  for (int q = 0; q < kTile; q++)
    if (j0 + q < k) c[row * k + j0 + q] = sum[q];
}

template <typename I, typename T>
int spmm_run(int variant, int block, const glc_csr *a, long long k, const void *b, void *c,
             cudaStream_t s) {
  const long long rows = static_cast<long long>(a->rows);
  const I *indptr = static_cast<const I *>(a->indptr),
          *indices = static_cast<const I *>(a->indices);
  const T *data = static_cast<const T *>(a->data), *bb = static_cast<const T *>(b);
  if (variant == GLC_SPMM_ROW_PER_BLOCK) {
    if (a->rows > glc_max_grid_x) return glc_fail(cudaErrorInvalidConfiguration, "glc_spmm(rows)");
    return glc_launch(spmm_row_per_block<I, T>, "spmm_row_per_block",
                      static_cast<unsigned>(a->rows), block, s, rows, k, indptr, indices, data, bb,
                      static_cast<T *>(c));
  }
  const size_t groups = static_cast<size_t>((k + kTile - 1) / kTile);
  const unsigned grid = spmv_grid(a->rows * groups, block);
  if (!grid) return glc_fail(cudaErrorInvalidConfiguration, "glc_spmm(too large)");
  return glc_launch(spmm_register_tiled<I, T>, "spmm_register_tiled", grid, block, s, rows, k,
                    indptr, indices, data, bb, static_cast<T *>(c));
}

template <typename I>
int spmm_index(int variant, int block, const glc_csr *a, long long k, const void *b, void *c,
               cudaStream_t s) {
  return a->dtype == GLC_F64 ? spmm_run<I, double>(variant, block, a, k, b, c, s)
                             : spmm_run<I, float>(variant, block, a, k, b, c, s);
}

}  // namespace

extern "C" int glc_spmm(int variant, int block, const glc_csr *a, size_t k, const void *b, void *c,
                        glc_stream stream) {
  if (variant != GLC_SPMM_ROW_PER_BLOCK && variant != GLC_SPMM_REGISTER_TILED &&
      variant != GLC_SPMM_CUSPARSE)
    return glc_fail(cudaErrorInvalidValue, "glc_spmm(variant)");
  static const SparseNames names = {"glc_spmm(a)",
                                    "glc_spmm(dtype)",
                                    "glc_spmm(index_dtype)",
                                    "glc_spmm(block)",
                                    "glc_spmm(int32 indices past 2^31 - 1)",
                                    "glc_spmm(a: sizes)",
                                    "glc_spmm(a: index arrays)",
                                    "glc_spmm(a.data)"};
  int code = sparse_check(names, a, &block);
  if (code || a->rows == 0 || k == 0) return code;
  const size_t value_bytes = a->dtype == GLC_F64 ? 8 : 4;
  if (!glc_all_aligned(value_bytes, c)) return glc_fail(cudaErrorInvalidValue, "glc_spmm(c)");
  if (a->nnz == 0) return glc_memset_async(c, 0, a->rows * k * value_bytes, stream);
  if (!glc_all_aligned(value_bytes, b)) return glc_fail(cudaErrorInvalidValue, "glc_spmm(b)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (variant == GLC_SPMM_CUSPARSE) return glc_cusparse_spmm(a, k, b, c, s);
  const long long kk = static_cast<long long>(k);
  return a->index_dtype == GLC_I64 ? spmm_index<long long>(variant, block, a, kk, b, c, s)
                                   : spmm_index<int>(variant, block, a, kk, b, c, s);
}
