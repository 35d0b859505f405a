// Internal to cuda/sparse/: what the SpMV families share -- the call in one struct, the
// families' launchers (csr.cu, formats.cu, cusparse.cu), the warp sum and the strided gather sum.
#ifndef GPULAB_CUDA_SPARSE_KERNELS_CUH
#define GPULAB_CUDA_SPARSE_KERNELS_CUH

#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/core/errors.cuh"
#include "cuda/core/launch.cuh"
#include "sparse.h"

// One SpMV on typed pointers: I the index type (int or long long), T the value type.
template <typename I, typename T>
struct SpmvCall {
  long long rows, cols, nnz, max_row;
  const I *indptr, *indices;
  const T *data, *x;
  T *y;
  int block;
  cudaStream_t stream;
  int lanes;  // csr_subwarp's lanes per row: 0 (from the mean row length) or 2..32; last, so
              // that the calls that never run it (cg.cu) leave it 0
  const I *column_order;  // csr_hub_sorted's: new_to_old (cols) then the relabelled indices
};

// The grid of `threads` threads in blocks of `block`, or 0 when it would pass gridDim.x's limit.
inline unsigned spmv_grid(size_t threads, int block) {
  const size_t blocks = glc_blocks_to_cover(threads, block);
  return blocks > glc_max_grid_x ? 0u : static_cast<unsigned>(blocks);
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Gathers of x in flight a thread in csr_subwarp's and csr_hybrid's sums (strided_sum). On one
// H200, R-MAT scale 22 (the default, csr_hub_sorted, against cuSPARSE in the same process): 4 ran
// 0.99x, 6 1.08x, 8 0.94x.
constexpr int kGatherUnroll = 6;

// Sum of data[k] * x[indices[k]] over k = first, first + Step, ... below end: each pass takes
// kGatherUnroll strided entries, their index and value loads first, then their gathers of x, then
// the FMAs: up to kGatherUnroll gathers in flight a thread where a plain loop has one (col, then
// x[col], are two dependent loads). Loads past end are predicated off.
template <int Step, typename K, typename I, typename T>
__device__ __forceinline__ T strided_sum(K first, K end, const I *indices, const T *data,
                                         const T *x) {
  T sum = 0;
  for (K k = first; k < end; k += kGatherUnroll * Step) {
    I col[kGatherUnroll];
    T value[kGatherUnroll], xs[kGatherUnroll];
#pragma unroll
    for (int u = 0; u < kGatherUnroll; u++) {
      const bool in_range = k + u * Step < end;
      col[u] = in_range ? indices[k + u * Step] : I(0);
      value[u] = in_range ? data[k + u * Step] : T(0);
    }
#pragma unroll
    for (int u = 0; u < kGatherUnroll; u++) xs[u] = k + u * Step < end ? x[col[u]] : T(0);
#pragma unroll
    for (int u = 0; u < kGatherUnroll; u++) sum += value[u] * xs[u];
  }
  return sum;
}

// The failed-call names of one entry point's checks (sparse_check, csr.cu).
struct SparseNames {
  const char *a, *dtype, *index_dtype, *block, *int32, *sizes, *index_arrays, *data;
};
int sparse_check(const SparseNames &names, const glc_csr *a, int *block);

template <typename I, typename T>
int spmv_csr_family(int variant, const SpmvCall<I, T> &c);  // variants 0-2 and 8 (csr.cu)
template <typename I, typename T>
int spmv_csr_hybrid(const SpmvCall<I, T> &c);  // variant 9 (hybrid.cu)
template <typename I, typename T>
int spmv_csr_hub_sorted(const SpmvCall<I, T> &c);  // variant 10 (hub_sorted.cu)
// csr_subwarp's lanes per row from the mean row length, the default of variants 8 and 9 (csr.cu)
int spmv_subwarp_lanes(long long rows, long long nnz);
template <typename I, typename T>
int spmv_format_family(int variant, const SpmvCall<I, T> &c);  // variants 3-6 (formats.cu)
// spmv variant 7 and spmm variant 2 (cusparse.cu): cusparseSpMV and cusparseSpMM (row-major B
// and C of k columns) on the CSR arrays as given; index_dtype and dtype as in glc_csr.
int glc_cusparse_spmv(const glc_csr *a, const void *x, void *y, cudaStream_t stream);
int glc_cusparse_spmm(const glc_csr *a, size_t k, const void *b, void *c, cudaStream_t stream);

#endif
