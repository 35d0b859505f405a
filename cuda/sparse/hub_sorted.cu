// SpMV variant 10, csr_hub_sorted: csr_hybrid on columns relabelled by use. A power-law graph's
// gathers of x are spread over its whole length (labels permuted), yet a few columns take most
// of them (R-MAT scale 22: half the nonzeros in 32K of 4M columns). Once per matrix,
// glc_csr_hub_order numbers the columns by descending count (ties by column), so that the most
// used values of x share sectors and stay in L1; every call gathers x into that order (one pass
// over cols) and runs csr_hybrid's kernels on the relabelled indices. The order is kept by the
// caller: new_to_old (cols entries) followed by the relabelled indices (nnz entries), in the
// matrix's index dtype.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <climits>

#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "kernels.cuh"

namespace {

constexpr int kHubBlock = 256;
constexpr unsigned kHubMaxBlocks = 4096;  // grid-stride passes over nnz

unsigned stride_grid(size_t n) {
  return static_cast<unsigned>(
      std::min<size_t>(std::max<size_t>(1, glc_blocks_to_cover(n, kHubBlock)), kHubMaxBlocks));
}

// A column outside 0..cols-1 (a device matrix's indices are not range-checked) is not counted:
// the counts are written, and no write may leave them.
template <typename I>
__global__ void hub_count_columns(const I *indices, long long nnz, long long cols,
                                  unsigned long long *counts) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < nnz;
       k += stride) {
    const long long col = static_cast<long long>(indices[k]);
    if (col >= 0 && col < cols) atomicAdd(&counts[col], 1ull);
  }
}

template <typename I>
__global__ void hub_iota(I *ids, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += stride)
    ids[i] = static_cast<I>(i);
}

template <typename I>
__global__ void hub_invert(const I *new_to_old, long long n, I *old_to_new) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += stride)
    old_to_new[new_to_old[i]] = static_cast<I>(i);
}

template <typename I>
__global__ void hub_relabel(const I *indices, long long nnz, long long cols, const I *old_to_new,
                            I *out) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < nnz;
       k += stride) {
    const long long col = static_cast<long long>(indices[k]);
    out[k] = col >= 0 && col < cols ? old_to_new[col] : indices[k];
  }
}

// x_sorted[i] = x[new_to_old[i]]: the one pass over x each call adds.
template <typename I, typename T>
__global__ void hub_gather_x(const T *x, const I *new_to_old, long long cols, T *x_sorted) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < cols;
       i += stride)
    x_sorted[i] = x[new_to_old[i]];
}

template <typename I>
int hub_order(const glc_csr *a, I *order, size_t top, unsigned long long *top_nonzeros,
              cudaStream_t s) {
  const long long cols = static_cast<long long>(a->cols), nnz = static_cast<long long>(a->nnz);
  *top_nonzeros = 0;
  if (cols == 0) return cudaSuccess;
  const I *indices = static_cast<const I *>(a->indices);
  GlcDeviceBuffer counts, sorted, ids, old_to_new, sum, scratch;
  int code = counts.allocate(cols * sizeof(unsigned long long), s);
  GLC_TRY(code, sorted.allocate(cols * sizeof(unsigned long long), s));
  GLC_TRY(code, ids.allocate(cols * sizeof(I), s));
  GLC_TRY(code, old_to_new.allocate(cols * sizeof(I), s));
  GLC_TRY(code, sum.allocate(sizeof(unsigned long long), s));
  if (code) return code;
  // counts need only as many key bits as nnz has: fewer radix passes
  int bits = 1;
  while (bits < 64 && (static_cast<unsigned long long>(nnz) >> bits) != 0) ++bits;
  const long long top_items = std::min<long long>(cols, static_cast<long long>(top));
  size_t sort_bytes = 0, sum_bytes = 0;
  GLC_TRY(code, GLC_CUDA(cub::DeviceRadixSort::SortPairsDescending, nullptr, sort_bytes,
                         counts.as<unsigned long long>(), sorted.as<unsigned long long>(),
                         ids.as<I>(), order, cols, 0, bits, s));
  if (top_items)
    GLC_TRY(code,
            GLC_CUDA(cub::DeviceReduce::Sum, nullptr, sum_bytes, sorted.as<unsigned long long>(),
                     sum.as<unsigned long long>(), top_items, s));
  GLC_TRY(code, scratch.allocate(std::max(sort_bytes, sum_bytes), s));
  GLC_TRY(code, glc_memset_async(counts.ptr, 0, cols * sizeof(unsigned long long), s));
  if (nnz)
    GLC_TRY(code, glc_launch(hub_count_columns<I>, "hub_count_columns", stride_grid(nnz), kHubBlock,
                             s, indices, nnz, cols, counts.as<unsigned long long>()));
  GLC_TRY(code,
          glc_launch(hub_iota<I>, "hub_iota", stride_grid(cols), kHubBlock, s, ids.as<I>(), cols));
  GLC_TRY(code, GLC_CUDA(cub::DeviceRadixSort::SortPairsDescending, scratch.ptr, sort_bytes,
                         counts.as<unsigned long long>(), sorted.as<unsigned long long>(),
                         ids.as<I>(), order, cols, 0, bits, s));
  GLC_TRY(code, glc_launch(hub_invert<I>, "hub_invert", stride_grid(cols), kHubBlock, s,
                           static_cast<const I *>(order), cols, old_to_new.as<I>()));
  if (nnz)
    GLC_TRY(code, glc_launch(hub_relabel<I>, "hub_relabel", stride_grid(nnz), kHubBlock, s, indices,
                             nnz, cols, old_to_new.as<const I>(), order + cols));
  if (top_items) {  // top = 0: no column, no nonzeros (*top_nonzeros stays 0)
    GLC_TRY(code,
            GLC_CUDA(cub::DeviceReduce::Sum, scratch.ptr, sum_bytes,
                     sorted.as<unsigned long long>(), sum.as<unsigned long long>(), top_items, s));
    GLC_TRY(code, glc_memcpy_async(top_nonzeros, sum.ptr, sizeof(unsigned long long), s));
  }
  GLC_TRY(code, glc_stream_synchronize(s));
  return code;
}

}  // namespace

template <typename I, typename T>
int spmv_csr_hub_sorted(const SpmvCall<I, T> &c) {
  GlcDeviceBuffer x_sorted;
  int code = x_sorted.allocate(static_cast<size_t>(c.cols) * sizeof(T), c.stream);
  GLC_TRY(code, glc_launch(hub_gather_x<I, T>, "hub_gather_x", stride_grid(c.cols), kHubBlock,
                           c.stream, c.x, c.column_order, c.cols, x_sorted.as<T>()));
  if (code) return code;
  SpmvCall<I, T> sorted = c;
  sorted.indices = c.column_order + c.cols;
  sorted.x = x_sorted.as<const T>();
  return spmv_csr_hybrid<I, T>(sorted);
}

template int spmv_csr_hub_sorted<int, float>(const SpmvCall<int, float> &);
template int spmv_csr_hub_sorted<int, double>(const SpmvCall<int, double> &);
template int spmv_csr_hub_sorted<long long, float>(const SpmvCall<long long, float> &);
template int spmv_csr_hub_sorted<long long, double>(const SpmvCall<long long, double> &);

extern "C" int glc_csr_hub_order(const glc_csr *a, void *order, size_t top,
                                 unsigned long long *top_nonzeros, glc_stream stream) {
  if (a == nullptr || top_nonzeros == nullptr)
    return glc_fail(cudaErrorInvalidValue, "glc_csr_hub_order(arguments)");
  *top_nonzeros = 0;
  if (a->cols == 0 && a->nnz == 0) return cudaSuccess;  // an empty order: nothing to write
  if (order == nullptr) return glc_fail(cudaErrorInvalidValue, "glc_csr_hub_order(order)");
  if (a->index_dtype != GLC_I32 && a->index_dtype != GLC_I64)
    return glc_fail(cudaErrorInvalidValue, "glc_csr_hub_order(a.index_dtype)");
  const size_t index_bytes = a->index_dtype == GLC_I64 ? 8 : 4;
  if (index_bytes == 4 && (a->nnz > INT_MAX || a->cols > INT_MAX))
    return glc_fail(cudaErrorInvalidValue, "glc_csr_hub_order(int32 indices past 2^31 - 1)");
  if (!glc_all_aligned(index_bytes, order) || (a->nnz && !glc_all_aligned(index_bytes, a->indices)))
    return glc_fail(cudaErrorInvalidValue, "glc_csr_hub_order(index arrays)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  return a->index_dtype == GLC_I64
             ? hub_order<long long>(a, static_cast<long long *>(order), top, top_nonzeros, s)
             : hub_order<int>(a, static_cast<int *>(order), top, top_nonzeros, s);
}
