// Variants 4-6: register blocking, the FP32 SGEMM rungs after the shared tiles (variants 2-3),
// seeded by siboehm's SGEMM_CUDA walk (kernels 4-6) and the CUTLASS notes on thread tiles; the
// code is our own. C[m x n] = A[m x k] B[k x n], row-major float32, FP32 FMAs only (no tensor
// cores, no TF32). Each block computes a bm x bn tile of C, stepping through k by bk: it stages
// the bm x bk slice of A and the bk x bn slice of B in shared memory, and each thread keeps its
// results in registers.
//  4 register_1d: 64 x 64 tiles, bk = 8; a thread computes tm results of one column, so each B
//    value read from shared memory feeds tm FMAs (the shared tiles' rung reads two values per
//    FMA).
//  5 register_2d: bm x bn tiles (64 or 128 each), bk 8 or 16; a thread computes an 8 x 8 block,
//    so the 16 values it reads from shared memory per step of k feed 64 FMAs.
//  6 vectorized: variant 5 with 16-byte global loads and stores, and A stored transposed in
//    shared memory so that a thread reads its 8 A values (and its 8 B values) as two 16-byte
//    loads each.
// Rows of C tiles: gridDim.y is capped at 65535 and each block loops over the row tiles
// blockIdx.y, blockIdx.y + gridDim.y, ..., so any m works. Columns: gridDim.x = ceil(n / bn)
// must stay under 2^31, i.e. n < 2^37 (n * 4 bytes is past any device memory long before).
// Indices that can pass 2^31 are size_t. Out-of-range elements load as zero; stores are guarded.
// Registers, occupancy and the H100's measurements: docs/labs/linalg.md.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/core/launch.cuh"
#include "matmul_blocked.h"
#include "sgemm_tiles.cuh"

namespace {

// Variant 4. Each thread owns column tx of the tile and rows ty * TM .. ty * TM + TM - 1. Per
// step of k it reads one B value and TM A values from shared memory for TM FMAs: the B value is
// reused TM times from a register, where variants 2-3 read two shared values per FMA. A is
// stored transposed (as[kk][row]) so a thread's TM values are contiguous (one or two 16-byte
// shared loads, the same address for the whole warp: a broadcast); the 4-float padding makes the
// transposing stores conflict-free (bank = 4 * kk + row). Predicted: about 2.5x variant 3, with
// the shared loads per FMA down from 2 to (1 + TM / 4) / TM.
template <int TM>
__global__ void __launch_bounds__(64 * 64 / TM, 1)
    sgemm_register_1d(size_t m, size_t n, size_t k, const float *__restrict__ a,
                      const float *__restrict__ b, float *__restrict__ c) {
  constexpr int BM = 64, BN = 64, BK = 8, PAD = 4;
  constexpr int THREADS = BM * BN / TM;
  static_assert(THREADS >= BM * BK && BM * BK == BK * BN, "one element of each slice a loader");
  __shared__ __align__(16) float as[BK][BM + PAD];
  __shared__ __align__(16) float bs[BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % BN;  // the column of C this thread computes
  const int ty = tid / BN;  // its group of TM rows
  // Threads below BM * BK = 512 load one element of each slice: A's at (tid / BK, tid % BK),
  // B's at (tid / BN, tid % BN).
  const bool loader = tid < BM * BK;
  const int a_row = tid / BK, a_col = tid % BK;
  const int b_row = tid / BN % BK, b_col = tid % BN;
  const size_t col0 = static_cast<size_t>(blockIdx.x) * BN;
  const int cols_in = extent(n - col0, BN);  // columns of C here
  for (size_t row0 = static_cast<size_t>(blockIdx.y) * BM; row0 < m;
       row0 += static_cast<size_t>(gridDim.y) * BM) {
    const int rows_in = extent(m - row0, BM);
    const float *pa = a + (row0 + a_row) * k + a_col;                     // advanced by BK
    const float *pb = b + static_cast<size_t>(b_row) * n + col0 + b_col;  // by BK rows
    float acc[TM] = {};
    for (size_t k0 = 0; k0 < k; k0 += BK, pa += BK, pb += BK * n) {
      const int k_in = extent(k - k0, BK);
      if (loader) {
        as[a_col][a_row] = a_row < rows_in && a_col < k_in ? *pa : 0.0f;
        bs[b_row][b_col] = b_row < k_in && b_col < cols_in ? *pb : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        const float bv = bs[kk][tx];
#pragma unroll
        for (int i = 0; i < TM; ++i) acc[i] = fmaf(as[kk][ty * TM + i], bv, acc[i]);
      }
      __syncthreads();  // the next slice overwrites as and bs
    }
    if (tx < cols_in) {
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const int r = ty * TM + i;
        if (r < rows_in) c[(row0 + r) * n + col0 + tx] = acc[i];
      }
    }
  }
}

// Writes a thread's TM x TN results of variants 5-6, rows ty * TM + i and columns tx * TN + j
// of the tile at (row0, col0) with rows_in x cols_in inside C: as float4s when vector (c 16-byte
// aligned and n % 4 == 0, so a float4 is wholly inside or wholly outside), else element by
// element.
template <int TM, int TN>
__device__ __forceinline__ void store_thread_tile(float *c, size_t n, size_t row0, size_t col0,
                                                  int rows_in, int cols_in, int ty, int tx,
                                                  bool vector, const float (&acc)[TM][TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = ty * TM + i;
    if (r >= rows_in) break;
    float *c_row = c + (row0 + r) * n + col0;
#pragma unroll
    for (int q = 0; q < TN; q += 4) {
      const int col = tx * TN + q;
      if (vector) {
        if (col < cols_in)
          *reinterpret_cast<float4 *>(c_row + col) =
              make_float4(acc[i][q], acc[i][q + 1], acc[i][q + 2], acc[i][q + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < cols_in) c_row[col + j] = acc[i][q + j];
      }
    }
  }
}

// Variant 5. 8 x 8 results per thread (threads = BM * BN / 64): per step of k a thread reads 8
// A values and 8 B values from shared memory into registers and does their 64 products (an
// outer product), 4 FMAs per shared load where variant 4 (TM = 8) has 8 / 3. The bigger tile
// also halves the global (L2) traffic per FMA at 128 x 128 against 64 x 64. Loads stay scalar
// and A stays row-major in shared memory (as[row][kk]); a warp's shared reads have 2- to 4-way
// bank conflicts (its lanes' A rows sit 8 * bk floats apart, their B columns 8 floats apart).
// Variant 6 removes the scalar loads. Predicted: about 2x variant 4.
template <int BM, int BN, int BK>
__global__ void __launch_bounds__((BM * BN) / 64, 1)
    sgemm_register_2d(size_t m, size_t n, size_t k, const float *__restrict__ a,
                      const float *__restrict__ b, float *__restrict__ c) {
  constexpr int TM = 8, TN = 8;
  constexpr int THREADS = BM * BN / (TM * TN);
  static_assert(BM * BK % THREADS == 0 && BK * BN % THREADS == 0, "whole loads per thread");
  __shared__ float as[BM][BK];
  __shared__ float bs[BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN);  // columns tx * 8 .. tx * 8 + 7 of the tile
  const int ty = tid / (BN / TN);  // rows ty * 8 .. ty * 8 + 7
  // Each thread loads column a_col of A's slice at rows a_row + l * A_STEP, and column b_col of
  // B's slice at rows b_row + l * B_STEP: one pointer per operand, advanced along k.
  constexpr int A_STEP = THREADS / BK, B_STEP = THREADS / BN;
  const int a_row = tid / BK, a_col = tid % BK;
  const int b_row = tid / BN, b_col = tid % BN;
  const size_t col0 = static_cast<size_t>(blockIdx.x) * BN;
  const int cols_in = extent(n - col0, BN);  // columns of C here
  const bool b_col_in = b_col < cols_in;
  const size_t a_stride = A_STEP * k, b_stride = B_STEP * n;
  for (size_t row0 = static_cast<size_t>(blockIdx.y) * BM; row0 < m;
       row0 += static_cast<size_t>(gridDim.y) * BM) {
    const int rows_in = extent(m - row0, BM);
    const float *pa = a + (row0 + a_row) * k + a_col;
    const float *pb = b + static_cast<size_t>(b_row) * n + col0 + b_col;
    float acc[TM][TN] = {};
    for (size_t k0 = 0; k0 < k; k0 += BK, pa += BK, pb += BK * n) {
      const int k_in = extent(k - k0, BK);
      const bool a_col_in = a_col < k_in;
#pragma unroll
      for (int l = 0; l < BM / A_STEP; ++l) {
        const int r = a_row + l * A_STEP;
        as[r][a_col] = a_col_in && r < rows_in ? pa[l * a_stride] : 0.0f;
      }
#pragma unroll
      for (int l = 0; l < BK / B_STEP; ++l) {
        const int kk = b_row + l * B_STEP;
        bs[kk][b_col] = b_col_in && kk < k_in ? pb[l * b_stride] : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        float ra[TM], rb[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) ra[i] = as[ty * TM + i][kk];
#pragma unroll
        for (int j = 0; j < TN; ++j) rb[j] = bs[kk][tx * TN + j];
        outer_product(ra, rb, acc);
      }
      __syncthreads();
    }
    store_thread_tile(c, n, row0, col0, rows_in, cols_in, ty, tx, false, acc);
  }
}

// Bits of sgemm_vectorized's `vector` argument: which operands take 16-byte accesses.
constexpr int vector_a = 1;  // a 16-byte aligned and k % 4 == 0: every A row starts aligned
constexpr int vector_b = 2;  // b 16-byte aligned and n % 4 == 0
constexpr int vector_c = 4;  // c 16-byte aligned and n % 4 == 0

// Variant 6. Variant 5's tiles and thread blocks, with 16-byte accesses: global loads of A and
// B as float4 (a quarter of the load instructions; with k % 4 == 0 and n % 4 == 0 a float4 is
// wholly in range or wholly out, since the tiles start at multiples of 4), float4 stores of C,
// and A transposed into shared memory (as[kk][row], padded by 4 floats) so that a thread's 8 A
// values, like its 8 B values, are two 16-byte shared loads: 4 shared load instructions per
// step of k instead of 16. Shapes or pointers that do not allow 16 bytes take the scalar,
// element-guarded path of the same kernel for that operand (a uniform branch). Predicted:
// about 1.15x variant 5 at 4096^3, from fewer load instructions between the FMAs.
// The loads and the loop around them are sgemm_float4_slices (sgemm_tiles.cuh), which variant 7
// shares; this kernel gives it the thread tile's reads and stores.
template <int BM, int BN, int BK>
__global__ void __launch_bounds__((BM * BN) / 64, 1)
    sgemm_vectorized(size_t m, size_t n, size_t k, const float *__restrict__ a,
                     const float *__restrict__ b, float *__restrict__ c, int vector) {
  constexpr int TM = 8, TN = 8, PAD = 4;
  constexpr int THREADS = BM * BN / (TM * TN);
  static_assert(BM * BK % (4 * THREADS) == 0 && BK * BN % (4 * THREADS) == 0, "whole float4s");
  __shared__ __align__(16) float as[BK][BM + PAD];
  __shared__ __align__(16) float bs[BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN);
  const int ty = tid / (BN / TN);
  sgemm_float4_slices<BM, BN, BK, THREADS>(
      m, n, k, a, b, vector & vector_a, vector & vector_b, as, bs,
      [&](const float(&as_k)[BM + PAD], const float(&bs_k)[BN], float(&acc)[TM][TN]) {
        float ra[TM], rb[TN];
#pragma unroll
        for (int q = 0; q < TM; q += 4) {
          const float4 v = *reinterpret_cast<const float4 *>(&as_k[ty * TM + q]);
          ra[q] = v.x, ra[q + 1] = v.y, ra[q + 2] = v.z, ra[q + 3] = v.w;
        }
#pragma unroll
        for (int q = 0; q < TN; q += 4) {
          const float4 v = *reinterpret_cast<const float4 *>(&bs_k[tx * TN + q]);
          rb[q] = v.x, rb[q + 1] = v.y, rb[q + 2] = v.z, rb[q + 3] = v.w;
        }
        outer_product(ra, rb, acc);
      },
      [&](size_t row0, size_t col0, int rows_in, int cols_in, const float(&acc)[TM][TN]) {
        store_thread_tile(c, n, row0, col0, rows_in, cols_in, ty, tx, vector & vector_c, acc);
      });
}

int launch_register_1d(int tm, size_t m, size_t n, size_t k, const float *a, const float *b,
                       float *c, cudaStream_t stream) {
  dim3 grid;
  if (!tile_grid(m, n, 64, 64, &grid))
    return glc_fail(cudaErrorInvalidValue, "sgemm_register_1d(n too large)");
  switch (tm) {
    case 4:
      return glc_launch(sgemm_register_1d<4>, "sgemm_register_1d", grid, dim3(64 * 64 / 4), stream,
                        m, n, k, a, b, c);
    case 8:
      return glc_launch(sgemm_register_1d<8>, "sgemm_register_1d", grid, dim3(64 * 64 / 8), stream,
                        m, n, k, a, b, c);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  }
}

template <int BM, int BN, int BK>
int launch_2d(int variant, size_t m, size_t n, size_t k, const float *a, const float *b, float *c,
              cudaStream_t stream) {
  dim3 grid;
  const dim3 block(BM * BN / 64);
  if (variant == GLC_MATMUL_REGISTER_2D) {
    if (!tile_grid(m, n, BM, BN, &grid))
      return glc_fail(cudaErrorInvalidValue, "sgemm_register_2d(n too large)");
    return glc_launch(sgemm_register_2d<BM, BN, BK>, "sgemm_register_2d", grid, block, stream, m, n,
                      k, a, b, c);
  }
  if (!tile_grid(m, n, BM, BN, &grid))
    return glc_fail(cudaErrorInvalidValue, "sgemm_vectorized(n too large)");
  const int vector = (glc_all_aligned(16, a) && k % 4 == 0 ? vector_a : 0) |
                     (glc_all_aligned(16, b) && n % 4 == 0 ? vector_b : 0) |
                     (glc_all_aligned(16, c) && n % 4 == 0 ? vector_c : 0);
  return glc_launch(sgemm_vectorized<BM, BN, BK>, "sgemm_vectorized", grid, block, stream, m, n, k,
                    a, b, c, vector);
}

// The eight (bm, bn, bk) instantiations of variants 5-6.
int dispatch_2d(int variant, const glc_matmul_tunables *t, size_t m, size_t n, size_t k,
                const float *a, const float *b, float *c, cudaStream_t stream) {
  if ((t->bm != 64 && t->bm != 128) || (t->bn != 64 && t->bn != 128) || (t->bk != 8 && t->bk != 16))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  switch (t->bm << 16 | t->bn << 8 | t->bk) {
    case 64 << 16 | 64 << 8 | 8:
      return launch_2d<64, 64, 8>(variant, m, n, k, a, b, c, stream);
    case 64 << 16 | 64 << 8 | 16:
      return launch_2d<64, 64, 16>(variant, m, n, k, a, b, c, stream);
    case 64 << 16 | 128 << 8 | 8:
      return launch_2d<64, 128, 8>(variant, m, n, k, a, b, c, stream);
    case 64 << 16 | 128 << 8 | 16:
      return launch_2d<64, 128, 16>(variant, m, n, k, a, b, c, stream);
    case 128 << 16 | 64 << 8 | 8:
      return launch_2d<128, 64, 8>(variant, m, n, k, a, b, c, stream);
    case 128 << 16 | 64 << 8 | 16:
      return launch_2d<128, 64, 16>(variant, m, n, k, a, b, c, stream);
    case 128 << 16 | 128 << 8 | 8:
      return launch_2d<128, 128, 8>(variant, m, n, k, a, b, c, stream);
    case 128 << 16 | 128 << 8 | 16:
      return launch_2d<128, 128, 16>(variant, m, n, k, a, b, c, stream);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  }
}

}  // namespace

int glc_matmul_register(int variant, const glc_matmul_tunables *t, size_t m, size_t n, size_t k,
                        const float *a, const float *b, float *c, cudaStream_t stream) {
  if (t == nullptr) return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  if (m == 0 || n == 0 || k == 0)
    return glc_fail(cudaErrorInvalidValue, "glc_matmul_register(m, n, k)");
  if (!glc_all_aligned(sizeof(float), a, b, c))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul_register(pointers)");
  switch (variant) {
    case GLC_MATMUL_REGISTER_1D:
      return launch_register_1d(t->tm, m, n, k, a, b, c, stream);
    case GLC_MATMUL_REGISTER_2D:
    case GLC_MATMUL_VECTORIZED:
      return dispatch_2d(variant, t, m, n, k, a, b, c, stream);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_matmul_register(variant)");
  }
}
