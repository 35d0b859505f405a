// Variant 10: tf32_wmma, SGEMM on the tensor cores through nvcuda::wmma with TF32 inputs and
// FP32 accumulation, seeded by NVIDIA's CUDA C++ Programming Guide (warp matrix functions,
// m16n16k8 with precision::tf32) and its cp.async pipeline notes; the code is our own. Its peer
// is cuBLAS with TF32 tensor-op math (variant 11). C[m x n] = A[m x k] B[k x n], row-major
// float32 in and out; each product's inputs are rounded to TF32 (10 explicit mantissa bits,
// up to 2^-11 relative error each) with wmma::__float_to_tf32, so a product can be off by about
// 2^-10 relative and a comparison with FP32 results needs a TF32 tolerance.
//
// The layout: a block of 256 threads (8 warps) computes a 128 x 128 tile of C, stepping through
// k by 16 (two m16n16k8 steps). Its warps form 2 rows x 4 columns of 64 x 32 warp tiles; each
// warp holds 4 x 2 accumulator fragments of 16 x 16. The 128 x 16 slice of A and the 16 x 128
// slice of B come into shared memory by cp.async, double-buffered as in variant 8 (16-byte
// copies when the operand is 16-byte aligned with rows of a multiple of 4 floats, else 4-byte
// copies; out-of-range elements are zero-filled). The shared rows are padded (A by 4 floats, B
// by 8) so that a fragment load's 32 lanes hit 32 different banks if wmma lays fragments out as
// mma.m16n8k8 does (wmma does not document its layout; a profile will tell). Full tiles store their
// fragments straight to C; edge tiles (or a C that is not 32-byte aligned, or n % 4 != 0) go
// through a 16 x 16 staging square per warp and guarded stores.
//
// Rows of C tiles: gridDim.y is capped at 65535 and each block loops over the row tiles, so any
// m works; gridDim.x = ceil(n / 128) must stay under 2^31. Needs sm_80 (the host refuses older
// devices). The H100's measurements: docs/labs/linalg.md.
#include <cuda_runtime.h>
#include <mma.h>

#include <climits>
#include <cstddef>
#include <cstdint>

#include "cuda/core/launch.cuh"
#include "matmul_blocked.h"
#include "sgemm_tiles.cuh"

namespace {

constexpr int tf32_bm = 128, tf32_bn = 128, tf32_bk = 16, tf32_threads = 256;
constexpr int tf32_a_ld = tf32_bk + 4;  // padded shared row lengths (floats)
constexpr int tf32_b_ld = tf32_bn + 8;

// Bits of the kernel's `vector` argument.
constexpr int vector_a = 1;  // a 16-byte aligned and k % 4 == 0: 16-byte copies of A
constexpr int vector_b = 2;  // b 16-byte aligned and n % 4 == 0: 16-byte copies of B
constexpr int direct_c = 4;  // c 32-byte aligned, n % 4 == 0, n < 2^32: fragments store to C

// Over the FP32 rungs: the products run on the tensor cores, one m16n16k8 mma_sync doing 2048
// multiply-adds for a warp where an FFMA does 32, at TF32 input precision. Predicted: several
// times variant 8, but well under cuBLAS TF32: the fragments come from shared memory through
// plain loads (no ldmatrix, no wgmma), and one block of 8 warps per SM.
__global__ void __launch_bounds__(tf32_threads, 1)
    sgemm_tf32_wmma(size_t m, size_t n, size_t k, const float *__restrict__ a,
                    const float *__restrict__ b, float *__restrict__ c, int vector) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  constexpr int BM = tf32_bm, BN = tf32_bn, BK = tf32_bk, THREADS = tf32_threads;
  constexpr int tf32_wm = 64, tf32_wn = 32;            // warp tile: 2 x 4 warps
  constexpr int FM = tf32_wm / 16, FN = tf32_wn / 16;  // fragments per warp tile
  __shared__ __align__(128) float as[2][BM][tf32_a_ld];
  __shared__ __align__(128) float bs[2][BK][tf32_b_ld];
  __shared__ __align__(128) float staging[THREADS / 32][16 * 16];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wr = warp / (BN / tf32_wn) * tf32_wm, wc = warp % (BN / tf32_wn) * tf32_wn;
  // Copy coordinates. A: float4 (a4_row + l * 64, a4_col) or element (a1_row + l * 16, a1_col)
  // of the 128 x 16 slice; B: float4 (b4_row + l * 8, b4_col) or element (b1_row + l * 2,
  // b1_col) of the 16 x 128 slice.
  constexpr int A4_STEP = THREADS / (BK / 4), A1_STEP = THREADS / BK;
  constexpr int B4_STEP = THREADS / (BN / 4), B1_STEP = THREADS / BN;
  const int a4_row = tid / (BK / 4), a4_col = tid % (BK / 4) * 4;
  const int a1_row = tid / BK, a1_col = tid % BK;
  const int b4_row = tid / (BN / 4), b4_col = tid % (BN / 4) * 4;
  const int b1_row = tid / BN, b1_col = tid % BN;
  const bool a_vector = vector & vector_a, b_vector = vector & vector_b;
  const size_t col0 = static_cast<size_t>(blockIdx.x) * BN;
  const int cols_in = extent(n - col0, BN);
  const size_t k_tiles = k / BK + (k % BK != 0);
  for (size_t row0 = static_cast<size_t>(blockIdx.y) * BM; row0 < m;
       row0 += static_cast<size_t>(gridDim.y) * BM) {
    const int rows_in = extent(m - row0, BM);
    auto load = [&](int s, size_t tile) {
      const size_t k0 = tile * BK;
      const int k_in = extent(k - k0, BK);
      if (a_vector) {
#pragma unroll
        for (int l = 0; l < BM / A4_STEP; ++l) {
          const int r = a4_row + l * A4_STEP;
          const bool in = r < rows_in && a4_col < k_in;  // k % 4 == 0: all 4 or none
          cp_async16(&as[s][r][a4_col], in ? a + (row0 + r) * k + k0 + a4_col : a, in);
        }
      } else {
#pragma unroll
        for (int l = 0; l < BM / A1_STEP; ++l) {
          const int r = a1_row + l * A1_STEP;
          const bool in = r < rows_in && a1_col < k_in;
          cp_async4(&as[s][r][a1_col], in ? a + (row0 + r) * k + k0 + a1_col : a, in);
        }
      }
      if (b_vector) {
#pragma unroll
        for (int l = 0; l < BK / B4_STEP; ++l) {
          const int kk = b4_row + l * B4_STEP;
          const bool in = kk < k_in && b4_col < cols_in;  // n % 4 == 0: all 4 or none
          cp_async16(&bs[s][kk][b4_col], in ? b + (k0 + kk) * n + col0 + b4_col : b, in);
        }
      } else {
#pragma unroll
        for (int l = 0; l < BK / B1_STEP; ++l) {
          const int kk = b1_row + l * B1_STEP;
          const bool in = kk < k_in && b1_col < cols_in;
          cp_async4(&bs[s][kk][b1_col], in ? b + (k0 + kk) * n + col0 + b1_col : b, in);
        }
      }
      cp_async_commit();
    };
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    load(0, 0);
    for (size_t t = 0; t < k_tiles; ++t) {
      const int s = static_cast<int>(t & 1);
      if (t + 1 < k_tiles) {
        load(s ^ 1, t + 1);  // stage s ^ 1 was last read in step t - 1, before its barrier
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();  // slice t is in shared memory for every warp
#pragma unroll
      for (int kk = 0; kk < BK; kk += 8) {
        wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa[FM];
        wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb[FN];
#pragma unroll
        for (int i = 0; i < FM; ++i) {
          wmma::load_matrix_sync(fa[i], &as[s][wr + i * 16][kk], tf32_a_ld);
#pragma unroll
          for (int e = 0; e < fa[i].num_elements; ++e)
            fa[i].x[e] = wmma::__float_to_tf32(fa[i].x[e]);
        }
#pragma unroll
        for (int j = 0; j < FN; ++j) {
          wmma::load_matrix_sync(fb[j], &bs[s][kk][wc + j * 16], tf32_b_ld);
#pragma unroll
          for (int e = 0; e < fb[j].num_elements; ++e)
            fb[j].x[e] = wmma::__float_to_tf32(fb[j].x[e]);
        }
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
          for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
      __syncthreads();  // stage s is refilled in step t + 1
    }
    if ((vector & direct_c) && rows_in == BM && cols_in == BN) {
      // Each fragment's pointer is 32-byte aligned: rows a multiple of 16 apart (16 * n * 4
      // bytes), columns a multiple of 16 floats.
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
          wmma::store_matrix_sync(c + (row0 + wr + i * 16) * n + col0 + wc + j * 16, acc[i][j],
                                  static_cast<unsigned>(n), wmma::mem_row_major);
    } else {
      float *square = staging[warp];
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) {
          wmma::store_matrix_sync(square, acc[i][j], 16, wmma::mem_row_major);
          __syncwarp();
          for (int e = lane; e < 16 * 16; e += 32) {
            const int r = wr + i * 16 + e / 16, col = wc + j * 16 + e % 16;
            if (r < rows_in && col < cols_in) c[(row0 + r) * n + col0 + col] = square[e];
          }
          __syncwarp();  // the square is rewritten by the next fragment
        }
    }
  }
#endif
}

}  // namespace

int glc_matmul_tf32(const glc_matmul_tunables *t, size_t m, size_t n, size_t k, const float *a,
                    const float *b, float *c, cudaStream_t stream) {
  (void)t;  // no tunables: glc_matmul_blocked_resolve refuses any that are set
  if (m == 0 || n == 0 || k == 0)
    return glc_fail(cudaErrorInvalidValue, "glc_matmul_tf32(m, n, k)");
  if (!glc_all_aligned(sizeof(float), a, b, c))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul_tf32(pointers)");
  dim3 grid;
  if (!tile_grid(m, n, tf32_bm, tf32_bn, &grid))
    return glc_fail(cudaErrorInvalidValue, "sgemm_tf32_wmma(n too large)");
  int device = 0, major = 0;
  int code = GLC_CUDA(cudaGetDevice, &device);
  if (code) return code;
  code = GLC_CUDA(cudaDeviceGetAttribute, &major, cudaDevAttrComputeCapabilityMajor, device);
  if (code) return code;
  if (major < 8) return glc_fail(cudaErrorNotSupported, "sgemm_tf32_wmma(sm_80+)");
  const int vector = (glc_all_aligned(16, a) && k % 4 == 0 ? vector_a : 0) |
                     (glc_all_aligned(16, b) && n % 4 == 0 ? vector_b : 0) |
                     (glc_all_aligned(32, c) && n % 4 == 0 && n <= UINT_MAX ? direct_c : 0);
  return glc_launch(sgemm_tf32_wmma, "sgemm_tf32_wmma", grid, dim3(tf32_threads), stream, m, n, k,
                    a, b, c, vector);
}
