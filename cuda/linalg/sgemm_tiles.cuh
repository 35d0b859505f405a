// What the register-blocked SGEMM rungs share (matmul_register.cu: variants 4-6, matmul_warp.cu:
// 7-8, matmul_tf32.cu: 10), written once here: the tile extents and the grid of tiles; the
// outer product of a thread's operands; variants 6-7's guarded 16-byte slice loads through
// registers (A stored transposed in shared memory) and the main loop around them; and the
// cp.async wrappers of variants 8 and 10. Everything is in an anonymous namespace and inlined
// (or a template on the tile constants), so each .cu that includes this gets its own copy: no
// ODR clash, and the kernels compile to what they did when each file had its own.
#ifndef GPULAB_CUDA_LINALG_SGEMM_TILES_CUH
#define GPULAB_CUDA_LINALG_SGEMM_TILES_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "cuda/core/launch.cuh"

namespace {

// The largest gridDim.y; row tiles past it are looped over inside the kernels.
constexpr size_t max_grid_y = 65535;

// min(left, tile) as an int: how much of a tile lies inside the matrix.
__device__ __forceinline__ int extent(size_t left, int tile) {
  return left < static_cast<size_t>(tile) ? static_cast<int>(left) : tile;
}

// Grid of column tiles (x) by row tiles (y, capped); false when n needs more than gridDim.x can
// hold.
bool tile_grid(size_t m, size_t n, int bm, int bn, dim3 *grid) {
  const size_t cols = glc_blocks_to_cover(n, bn);
  const size_t rows = glc_blocks_to_cover(m, bm);
  if (cols > glc_max_grid_x) return false;
  *grid = dim3(static_cast<unsigned>(cols), static_cast<unsigned>(std::min(rows, max_grid_y)));
  return true;
}

// acc[i][j] += ra[i] * rb[j]: one step of k of a thread's TM x TN results.
template <int TM, int TN>
__device__ __forceinline__ void outer_product(const float (&ra)[TM], const float (&rb)[TN],
                                              float (&acc)[TM][TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
}

// Variants 6-7: the float4s of A's BM x BK slice that one thread loads, at column a_col and rows
// a_row + l * A_STEP (pa points at the first, a_stride is A_STEP rows of A), stored transposed
// (as[a_col + i][row]). With vector (a 16-byte aligned, k % 4 == 0) each is one 16-byte load,
// wholly in range or wholly out since the slices start at multiples of 4; else element-guarded
// scalar loads. Out-of-range elements are zeros.
template <int BM, int A_STEP, int BK, int LD>
__device__ __forceinline__ void load_a_slice4_transposed(float (&as)[BK][LD], const float *pa,
                                                         size_t a_stride, int a_row, int a_col,
                                                         int rows_in, int k_in, bool vector) {
#pragma unroll
  for (int l = 0; l < BM / A_STEP; ++l) {
    const int r = a_row + l * A_STEP;
    const float *p = pa + l * a_stride;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r < rows_in) {
      if (vector) {
        if (a_col < k_in) v = *reinterpret_cast<const float4 *>(p);
      } else {
        if (a_col < k_in) v.x = p[0];
        if (a_col + 1 < k_in) v.y = p[1];
        if (a_col + 2 < k_in) v.z = p[2];
        if (a_col + 3 < k_in) v.w = p[3];
      }
    }
    as[a_col + 0][r] = v.x;
    as[a_col + 1][r] = v.y;
    as[a_col + 2][r] = v.z;
    as[a_col + 3][r] = v.w;
  }
}

// Variants 6-7: the float4s of B's BK x BN slice that one thread loads, at column b_col and rows
// b_row + l * B_STEP (pb points at the first, b_stride is B_STEP rows of B), stored as they are.
// vector: b 16-byte aligned and n % 4 == 0.
template <int BK, int B_STEP, int BN>
__device__ __forceinline__ void load_b_slice4(float (&bs)[BK][BN], const float *pb, size_t b_stride,
                                              int b_row, int b_col, int k_in, int cols_in,
                                              bool vector) {
#pragma unroll
  for (int l = 0; l < BK / B_STEP; ++l) {
    const int kk = b_row + l * B_STEP;
    const float *p = pb + l * b_stride;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (kk < k_in) {
      if (vector) {
        if (b_col < cols_in) v = *reinterpret_cast<const float4 *>(p);
      } else {
        if (b_col < cols_in) v.x = p[0];
        if (b_col + 1 < cols_in) v.y = p[1];
        if (b_col + 2 < cols_in) v.z = p[2];
        if (b_col + 3 < cols_in) v.w = p[3];
      }
    }
    *reinterpret_cast<float4 *>(&bs[kk][b_col]) = v;
  }
}

// The loop of variants 6-7 around those loads: THREADS threads of a block walk its row tiles of
// C (blockIdx.y, blockIdx.y + gridDim.y, ...; column tile blockIdx.x), and for each step through
// k by BK load the two slices into as and bs, then call step(as[kk], bs[kk], acc) for each kk of
// the slice; after the last slice, store(row0, col0, rows_in, cols_in, acc) writes the thread's
// 8 x 8 results. vector_a, vector_b: the operands that take 16-byte loads.
template <int BM, int BN, int BK, int THREADS, int LDA, typename Step, typename Store>
__device__ __forceinline__ void sgemm_float4_slices(size_t m, size_t n, size_t k, const float *a,
                                                    const float *b, bool vector_a, bool vector_b,
                                                    float (&as)[BK][LDA], float (&bs)[BK][BN],
                                                    Step step, Store store) {
  const int tid = threadIdx.x;
  // Each thread loads the float4 at column a_col of A's slice, rows a_row + l * A_STEP, and the
  // float4 at column b_col of B's slice, rows b_row + l * B_STEP.
  constexpr int A_STEP = THREADS / (BK / 4), B_STEP = THREADS / (BN / 4);
  const int a_row = tid / (BK / 4), a_col = tid % (BK / 4) * 4;
  const int b_row = tid / (BN / 4), b_col = tid % (BN / 4) * 4;
  const size_t col0 = static_cast<size_t>(blockIdx.x) * BN;
  const int cols_in = extent(n - col0, BN);
  const size_t a_stride = A_STEP * k, b_stride = B_STEP * n;
  for (size_t row0 = static_cast<size_t>(blockIdx.y) * BM; row0 < m;
       row0 += static_cast<size_t>(gridDim.y) * BM) {
    const int rows_in = extent(m - row0, BM);
    const float *pa = a + (row0 + a_row) * k + a_col;
    const float *pb = b + static_cast<size_t>(b_row) * n + col0 + b_col;
    float acc[8][8] = {};
    for (size_t k0 = 0; k0 < k; k0 += BK, pa += BK, pb += BK * n) {
      const int k_in = extent(k - k0, BK);
      load_a_slice4_transposed<BM, A_STEP>(as, pa, a_stride, a_row, a_col, rows_in, k_in, vector_a);
      load_b_slice4<BK, B_STEP>(bs, pb, b_stride, b_row, b_col, k_in, cols_in, vector_b);
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) step(as[kk], bs[kk], acc);
      __syncthreads();  // the next slice overwrites as and bs
    }
    store(row0, col0, rows_in, cols_in, acc);
  }
}

// Variants 7, 8 and 12: writes a thread's TM x 8 results of the warp layout (4 x 8 lanes, TM / 4
// x 2 sub-tiles of 4 x 4): result (i, j) is C's row row0 + wr + (i / 4) * 16 + lr * 4 + i % 4,
// column col0 + wc + (j / 4) * 32 + lc * 4 + j % 4. rows_in, cols_in: the tile's extent.
// vector: c 16-byte aligned and n % 4 == 0.
template <int TM>
__device__ __forceinline__ void store_warp_tile(float *c, size_t n, size_t row0, size_t col0,
                                                int rows_in, int cols_in, int wr, int wc, int lr,
                                                int lc, bool vector, const float (&acc)[TM][8]) {
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = wr + (i / 4) * 16 + lr * 4 + i % 4;
    if (r >= rows_in) continue;
    float *c_row = c + (row0 + r) * n + col0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = wc + h * 32 + lc * 4;
      if (vector) {
        // n % 4 == 0 and col0 % 4 == 0: the float4 is wholly inside or wholly outside.
        if (col < cols_in)
          *reinterpret_cast<float4 *>(c_row + col) =
              make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < cols_in) c_row[col + j] = acc[i][h * 4 + j];
      }
    }
  }
}

// 1 when the current device runs cp.async (compute capability 8.0 or newer): variants 8 and 12.
inline int has_cp_async(bool *yes) {
  int device = 0, major = 0;
  int code = GLC_CUDA(cudaGetDevice, &device);
  if (code) return code;
  code = GLC_CUDA(cudaDeviceGetAttribute, &major, cudaDevAttrComputeCapabilityMajor, device);
  *yes = major >= 8;
  return code;
}

// cp.async (sm_80+): a copy from global to shared memory that does not pass through registers
// and that the thread does not wait for until cp.async.wait_group. src_bytes 0 reads nothing and
// fills the destination with zeros (the guard for out-of-range elements; src must still be a
// valid address, so callers pass the matrix's base).
__device__ __forceinline__ void cp_async4(float *dst, const float *src, bool in_range) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src),
               "r"(in_range ? 4 : 0)
               : "memory");
#endif
}

__device__ __forceinline__ void cp_async16(float *dst, const float *src, bool in_range) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
               "r"(in_range ? 16 : 0)
               : "memory");
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
#endif
}

}  // namespace

#endif
