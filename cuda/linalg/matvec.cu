// Matvec variants 0-4: y = A x for a row-major M x N matrix, S2's CUDA ladder (task 3) from a
// thread per row to a block per row, then a bandwidth-tuned kernel and cuBLAS's GEMV. Matvec
// reads each element of A once and does two flops with it: every rung is bound by memory, and
// the ladder is about reading A at the full bandwidth (docs/labs/linalg.md).
#include "cublas.cuh"
#include "cuda/core/dtype_dispatch.cuh"
#include "cuda/core/launch.cuh"
#include "cuda/core/vec16.cuh"
#include "linalg.h"

namespace {

// The sum of v over the warp, in every lane.
template <typename T>
__device__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Variant 0, S2's first kernel: one thread per row, walking its row alone. At a given step the
// 32 threads of a warp read 32 elements N apart, 32 separate transactions, and only the first
// 4 or 8 bytes of each 32-byte sector are used before the next step: uncoalesced.
template <typename T>
__global__ void matvec_thread_per_row(const T *a, const T *x, T *y, size_t m, size_t n) {
  const size_t row = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (row >= m) return;
  const T *r = a + row * n;
  T sum = 0;
  for (size_t j = 0; j < n; ++j) sum += r[j] * x[j];
  y[row] = sum;
}

// Variant 1, S2's warp per row: the 32 lanes read 32 consecutive elements of the row (one
// coalesced 128- or 256-byte access), each keeps a partial sum, and the shuffle tree adds them.
template <typename T>
__global__ void matvec_warp_per_row(const T *a, const T *x, T *y, size_t m, size_t n) {
  const size_t row = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  if (row >= m) return;  // whole warps leave together: the shuffle below has all 32 lanes
  const T *r = a + row * n;
  T sum = 0;
  for (size_t j = lane; j < n; j += 32) sum += r[j] * x[j];
  sum = warp_sum(sum);
  if (lane == 0) y[row] = sum;
}

// The block's sum of v, in thread 0: warp sums, then the first warp adds them (S2's several
// warps per row). partial holds one value per warp.
template <typename T>
__device__ T block_sum(T v, T *partial) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = 0;
  if (warp == 0) {
    v = lane < warps ? partial[lane] : T(0);
    v = warp_sum(v);
  }
  return v;
}

// Variant 2, S2's block per row: all the block's warps on one row, so that a long row is read
// by block threads at once (more bytes in flight per row than one warp keeps).
template <typename T>
__global__ void matvec_block_per_row(const T *a, const T *x, T *y, size_t m, size_t n) {
  __shared__ T partial[32];
  const size_t row = blockIdx.x;
  const T *r = a + row * n;
  T sum = 0;
  for (size_t j = threadIdx.x; j < n; j += blockDim.x) sum += r[j] * x[j];
  sum = block_sum(sum, partial);
  if (threadIdx.x == 0) y[row] = sum;
}

// The dot product of two 16-byte vectors.
__device__ __forceinline__ float dot16(float4 a, float4 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
__device__ __forceinline__ double dot16(double2 a, double2 b) { return a.x * b.x + a.y * b.y; }

// Variant 3, bandwidth-tuned: a block per row as variant 2, with 16-byte loads of A and x
// (LDG.128: a quarter of the load instructions of variant 2 for float) and A read through the
// streaming path (__ldcs: A is touched once and must not evict x from L2). Four vectors in
// flight per thread before the first add, so that each SM has enough bytes outstanding to
// cover the latency. vectors: 1 when every row starts 16-byte aligned (A and x aligned, N a
// multiple of the vector width); otherwise the scalar loop of variant 2.
template <typename T>
__global__ void matvec_vectorized(const T *a, const T *x, T *y, size_t m, size_t n, int vectors) {
  using V = typename glc_vec16<T>::type;
  constexpr int width = glc_vec16<T>::lanes;
  constexpr int unroll = 4;
  __shared__ T partial[32];
  const size_t row = blockIdx.x;
  const T *r = a + row * n;
  T sum = 0;
  size_t done = 0;
  if (vectors) {
    const V *rv = reinterpret_cast<const V *>(r);
    const V *xv = reinterpret_cast<const V *>(x);
    const size_t nv = n / width, stride = blockDim.x;
    size_t j = threadIdx.x;
    for (; j + (unroll - 1) * stride < nv; j += unroll * stride) {
      V av[unroll], bv[unroll];
#pragma unroll
      for (int u = 0; u < unroll; ++u) {
        av[u] = __ldcs(rv + j + u * stride);
        bv[u] = __ldg(xv + j + u * stride);
      }
#pragma unroll
      for (int u = 0; u < unroll; ++u) sum += dot16(av[u], bv[u]);
    }
    for (; j < nv; j += stride) sum += dot16(__ldcs(rv + j), __ldg(xv + j));
    done = nv * width;
  }
  for (size_t j = done + threadIdx.x; j < n; j += blockDim.x) sum += r[j] * x[j];
  sum = block_sum(sum, partial);
  if (threadIdx.x == 0) y[row] = sum;
}

template <typename T>
int launch(int variant, int block, size_t m, size_t n, const T *a, const T *x, T *y,
           cudaStream_t s) {
  if (n == 0) return glc_memset_async(y, 0, m * sizeof(T), s);
  switch (variant) {
    case GLC_MATVEC_THREAD_PER_ROW:
      return glc_launch(matvec_thread_per_row<T>, "matvec_thread_per_row",
                        dim3(static_cast<unsigned>(glc_blocks_to_cover(m, block))), dim3(block), s,
                        a, x, y, m, n);
    case GLC_MATVEC_WARP_PER_ROW:
      return glc_launch(matvec_warp_per_row<T>, "matvec_warp_per_row",
                        dim3(static_cast<unsigned>(glc_blocks_to_cover(m, block / 32))),
                        dim3(block), s, a, x, y, m, n);
    case GLC_MATVEC_BLOCK_PER_ROW:
      return glc_launch(matvec_block_per_row<T>, "matvec_block_per_row",
                        dim3(static_cast<unsigned>(m)), dim3(block), s, a, x, y, m, n);
    default: {
      const int vectors = glc_all_aligned(16, a, x) && n % glc_vec16<T>::lanes == 0;
      return glc_launch(matvec_vectorized<T>, "matvec_vectorized", dim3(static_cast<unsigned>(m)),
                        dim3(block), s, a, x, y, m, n, vectors);
    }
  }
}

}  // namespace

extern "C" int glc_matvec(int variant, int block, int dtype, size_t m, size_t n, const void *a,
                          const void *x, void *y, glc_stream stream) {
  if (variant < GLC_MATVEC_THREAD_PER_ROW || variant > GLC_MATVEC_CUBLAS)
    return glc_fail(cudaErrorInvalidValue, "glc_matvec(variant)");
  if (variant != GLC_MATVEC_CUBLAS && (block < 32 || block > 1024 || (block & (block - 1)) != 0))
    return glc_fail(cudaErrorInvalidValue, "glc_matvec(block)");
  if (dtype != GLC_F32 && dtype != GLC_F64)
    return glc_fail(cudaErrorInvalidValue, "glc_matvec(dtype)");
  // one block per row (variants 2-3), a thread or warp per row (0-1): the grid's x limit
  if (m > glc_max_grid_x) return glc_fail(cudaErrorInvalidValue, "glc_matvec(m)");
  if (m == 0) return cudaSuccess;
  const size_t element = dtype == GLC_F64 ? sizeof(double) : sizeof(float);
  if (!glc_all_aligned(element, y) || (n && !glc_all_aligned(element, a, x)))
    return glc_fail(cudaErrorInvalidValue, "glc_matvec(alignment)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (variant == GLC_MATVEC_CUBLAS)
    return n == 0 ? glc_memset_async(y, 0, m * element, stream)
                  : glc_cublas_gemv(dtype, m, n, a, x, y, s);
  return glc_dispatch_floating(dtype, "glc_matvec(dtype)", [&](auto zero) {
    using T = decltype(zero);
    return launch(variant, block, m, n, static_cast<const T *>(a), static_cast<const T *>(x),
                  static_cast<T *>(y), s);
  });
}
