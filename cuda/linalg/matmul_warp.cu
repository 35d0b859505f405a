// Variants 7-8: warp tiling and cp.async double buffering, the last FP32 SGEMM rungs, seeded by
// siboehm's SGEMM_CUDA (kernel 10, warptiling), the CUTLASS GEMM notes (block tile -> warp tile
// -> thread tile, 4 x 4 sub-tiles spread across the warp tile) and NVIDIA's cp.async docs; the
// code is our own. C[m x n] = A[m x k] B[k x n], row-major float32, FP32 FMAs only.
//
// Both kernels share one layout. A block of bm * bn / 64 threads computes a bm x bn tile of C
// (bm, bn in {64, 128}; bk in {8, 16}). Its warps tile it in warp tiles of 32 rows x 64 columns,
// (bm / 32) x (bn / 64) warps, warp w at rows (w / (bn / 64)) * 32 and columns (w % (bn / 64)) *
// 64. The 32 lanes of a warp form 4 rows x 8 columns; lane (lr, lc) computes 8 x 8 results as
// 2 x 2 sub-tiles of 4 x 4: rows lr * 4 + {0..3} and 16 + lr * 4 + {0..3}, columns lc * 4 +
// {0..3} and 32 + lc * 4 + {0..3} of the warp tile. So per step of k a warp reads 4 distinct
// A float4s (each a broadcast to 8 lanes) and 8 consecutive B float4s (128 bytes) from shared
// memory: no bank conflicts, where variant 6's lanes read B float4s 32 bytes apart (2-way). A
// warp's stores of C cover whole 128-byte row segments.
//
// Rows of C tiles: gridDim.y is capped at 65535 and each block loops over the row tiles
// blockIdx.y, blockIdx.y + gridDim.y, ..., so any m works. Columns: gridDim.x = ceil(n / bn)
// must stay under 2^31 (n < 2^37). Out-of-range elements load as zero; stores are guarded.
// Registers, occupancy and the H100's measurements: docs/labs/linalg.md.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/core/launch.cuh"
#include "matmul_blocked.h"
#include "sgemm_tiles.cuh"

namespace {

constexpr int warp_tile_m = 32, warp_tile_n = 64;
constexpr int a_pad = 4;  // floats of padding on each transposed A row in shared memory

// Bits of the kernels' `vector` argument: which operands take 16-byte accesses.
constexpr int vector_a = 1;  // a 16-byte aligned and k % 4 == 0: every A row starts aligned
constexpr int vector_b = 2;  // b 16-byte aligned and n % 4 == 0
constexpr int vector_c = 4;  // c 16-byte aligned and n % 4 == 0

// One step of k for one thread: its 8 A values and 8 B values (two float4s each, at the warp
// layout's offsets) and their 64 products.
template <int BM, int BN>
__device__ __forceinline__ void warp_tile_step(const float (&as)[BM + a_pad], const float (&bs)[BN],
                                               int wr, int wc, int lr, int lc, float (&acc)[8][8]) {
  float ra[8], rb[8];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float4 va = *reinterpret_cast<const float4 *>(&as[wr + h * 16 + lr * 4]);
    ra[h * 4 + 0] = va.x, ra[h * 4 + 1] = va.y, ra[h * 4 + 2] = va.z, ra[h * 4 + 3] = va.w;
    const float4 vb = *reinterpret_cast<const float4 *>(&bs[wc + h * 32 + lc * 4]);
    rb[h * 4 + 0] = vb.x, rb[h * 4 + 1] = vb.y, rb[h * 4 + 2] = vb.z, rb[h * 4 + 3] = vb.w;
  }
  outer_product(ra, rb, acc);
}

// Variant 7. Variant 6's loads (16-byte global loads through registers, A stored transposed in
// shared memory) and tiles, with the thread tiles laid out by warp (the file's opening comment):
// the B reads lose their 2-way bank conflict, A reads stay broadcasts, and C's stores become
// whole 128-byte segments per row. Each 8-thread group of a warp reads one 32 x 64 warp tile's
// slices, so the shared traffic per FMA is the same as variant 6 but is served in one pass per
// instruction. Predicted: about 1.1x variant 6 (the shared loads were the stall after the FMAs).
// The loads and the loop are variant 6's own code, sgemm_float4_slices in sgemm_tiles.cuh.
template <int BM, int BN, int BK>
__global__ void __launch_bounds__((BM * BN) / 64, 1)
    sgemm_warp_tiling(size_t m, size_t n, size_t k, const float *__restrict__ a,
                      const float *__restrict__ b, float *__restrict__ c, int vector) {
  constexpr int THREADS = BM * BN / 64;
  constexpr int WARPS_N = BN / warp_tile_n;
  static_assert(BM % warp_tile_m == 0 && BN % warp_tile_n == 0, "whole warp tiles");
  static_assert(BM * BK % (4 * THREADS) == 0 && BK * BN % (4 * THREADS) == 0, "whole float4s");
  __shared__ __align__(16) float as[BK][BM + a_pad];
  __shared__ __align__(16) float bs[BK][BN];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wr = warp / WARPS_N * warp_tile_m, wc = warp % WARPS_N * warp_tile_n;
  const int lr = lane / 8, lc = lane % 8;
  sgemm_float4_slices<BM, BN, BK, THREADS>(
      m, n, k, a, b, vector & vector_a, vector & vector_b, as, bs,
      [&](const float(&as_k)[BM + a_pad], const float(&bs_k)[BN], float(&acc)[8][8]) {
        warp_tile_step<BM, BN>(as_k, bs_k, wr, wc, lr, lc, acc);
      },
      [&](size_t row0, size_t col0, int rows_in, int cols_in, const float(&acc)[8][8]) {
        store_warp_tile<8>(c, n, row0, col0, rows_in, cols_in, wr, wc, lr, lc, vector & vector_c,
                           acc);
      });
}

// Variant 8. Variant 7's tiles and warp layout, with two shared stages filled by cp.async: while
// the warps compute on slice t, the copies of slice t + 1 are in flight, so the global (L2)
// latency hides behind the FMAs instead of behind a barrier, and no registers hold staged loads.
// cp.async cannot transpose a 16-byte chunk, so A comes in as 4-byte copies, each to its
// transposed place (as[kk][row]); B comes in as 16-byte copies when b is 16-byte aligned and
// n % 4 == 0, else as 4-byte copies. One barrier per slice after the wait, and one before a
// stage is refilled. Needs sm_80 (the host refuses older devices). Predicted: about 1.1x
// variant 7 at 4096^3, up to ~0.85-0.9x cuBLAS.
template <int BM, int BN, int BK>
__global__ void __launch_bounds__((BM * BN) / 64, 1)
    sgemm_double_buffered(size_t m, size_t n, size_t k, const float *__restrict__ a,
                          const float *__restrict__ b, float *__restrict__ c, int vector) {
  constexpr int THREADS = BM * BN / 64;
  constexpr int WARPS_N = BN / warp_tile_n;
  static_assert(BM % warp_tile_m == 0 && BN % warp_tile_n == 0, "whole warp tiles");
  static_assert(THREADS % BK == 0 && BK * BN % (4 * THREADS) == 0 && THREADS % BN == 0,
                "whole copies per thread");
  __shared__ __align__(16) float as[2][BK][BM + a_pad];
  __shared__ __align__(16) float bs[2][BK][BN];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wr = warp / WARPS_N * warp_tile_m, wc = warp % WARPS_N * warp_tile_n;
  const int lr = lane / 8, lc = lane % 8;
  // A: element (a_row + l * A_STEP, a_col) of the slice. B: the float4 at (b4_row + l * B4_STEP,
  // b4_col), or on the scalar path the element at (b1_row + l * B1_STEP, b1_col).
  constexpr int A_STEP = THREADS / BK;
  constexpr int B4_STEP = THREADS / (BN / 4), B1_STEP = THREADS / BN;
  const int a_row = tid / BK, a_col = tid % BK;
  const int b4_row = tid / (BN / 4), b4_col = tid % (BN / 4) * 4;
  const int b1_row = tid / BN, b1_col = tid % BN;
  const bool b_vector = vector & vector_b;
  const size_t col0 = static_cast<size_t>(blockIdx.x) * BN;
  const int cols_in = extent(n - col0, BN);
  const size_t k_tiles = k / BK + (k % BK != 0);
  for (size_t row0 = static_cast<size_t>(blockIdx.y) * BM; row0 < m;
       row0 += static_cast<size_t>(gridDim.y) * BM) {
    const int rows_in = extent(m - row0, BM);
    const float *a_base = a + (row0 + a_row) * k + a_col;
    const float *b4_base = b + static_cast<size_t>(b4_row) * n + col0 + b4_col;
    const float *b1_base = b + static_cast<size_t>(b1_row) * n + col0 + b1_col;
    // Issues the copies of slice `tile` into stage s, and commits them as one group.
    auto load = [&](int s, size_t tile) {
      const size_t k0 = tile * BK;
      const int k_in = extent(k - k0, BK);
#pragma unroll
      for (int l = 0; l < BM / A_STEP; ++l) {
        const int r = a_row + l * A_STEP;
        const bool in = r < rows_in && a_col < k_in;
        cp_async4(&as[s][a_col][r], in ? a_base + static_cast<size_t>(l * A_STEP) * k + k0 : a, in);
      }
      if (b_vector) {
#pragma unroll
        for (int l = 0; l < BK / B4_STEP; ++l) {
          const int kk = b4_row + l * B4_STEP;
          const bool in = kk < k_in && b4_col < cols_in;
          cp_async16(&bs[s][kk][b4_col], in ? b4_base + (k0 + l * B4_STEP) * n : b, in);
        }
      } else {
#pragma unroll
        for (int l = 0; l < BK / B1_STEP; ++l) {
          const int kk = b1_row + l * B1_STEP;
          const bool in = kk < k_in && b1_col < cols_in;
          cp_async4(&bs[s][kk][b1_col], in ? b1_base + (k0 + l * B1_STEP) * n : b, in);
        }
      }
      cp_async_commit();
    };
    float acc[8][8] = {};
    load(0, 0);
    for (size_t t = 0; t < k_tiles; ++t) {
      const int s = static_cast<int>(t & 1);
      if (t + 1 < k_tiles) {
        load(s ^ 1, t + 1);  // stage s ^ 1 was last read in step t - 1, before its barrier
        cp_async_wait<1>();  // slice t has landed; slice t + 1 may still be in flight
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();  // every thread's copies of slice t are visible
#pragma unroll
      for (int kk = 0; kk < BK; ++kk)
        warp_tile_step<BM, BN>(as[s][kk], bs[s][kk], wr, wc, lr, lc, acc);
      __syncthreads();  // stage s is refilled in step t + 1
    }
    store_warp_tile<8>(c, n, row0, col0, rows_in, cols_in, wr, wc, lr, lc, vector & vector_c, acc);
  }
}

template <int BM, int BN, int BK>
int launch_warp(int variant, size_t m, size_t n, size_t k, const float *a, const float *b, float *c,
                cudaStream_t stream) {
  const dim3 block(BM * BN / 64);
  const int vector = (glc_all_aligned(16, a) && k % 4 == 0 ? vector_a : 0) |
                     (glc_all_aligned(16, b) && n % 4 == 0 ? vector_b : 0) |
                     (glc_all_aligned(16, c) && n % 4 == 0 ? vector_c : 0);
  dim3 grid;
  if (variant == GLC_MATMUL_WARP_TILING) {
    if (!tile_grid(m, n, BM, BN, &grid))
      return glc_fail(cudaErrorInvalidValue, "sgemm_warp_tiling(n too large)");
    return glc_launch(sgemm_warp_tiling<BM, BN, BK>, "sgemm_warp_tiling", grid, block, stream, m, n,
                      k, a, b, c, vector);
  }
  if (!tile_grid(m, n, BM, BN, &grid))
    return glc_fail(cudaErrorInvalidValue, "sgemm_double_buffered(n too large)");
  bool supported = false;
  int code = has_cp_async(&supported);
  if (code) return code;
  if (!supported) return glc_fail(cudaErrorNotSupported, "sgemm_double_buffered(sm_80+)");
  return glc_launch(sgemm_double_buffered<BM, BN, BK>, "sgemm_double_buffered", grid, block, stream,
                    m, n, k, a, b, c, vector);
}

}  // namespace

int glc_matmul_warp(int variant, const glc_matmul_tunables *t, size_t m, size_t n, size_t k,
                    const float *a, const float *b, float *c, cudaStream_t stream) {
  if (t == nullptr) return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  if (variant != GLC_MATMUL_WARP_TILING && variant != GLC_MATMUL_DOUBLE_BUFFERED)
    return glc_fail(cudaErrorInvalidValue, "glc_matmul_warp(variant)");
  if (m == 0 || n == 0 || k == 0)
    return glc_fail(cudaErrorInvalidValue, "glc_matmul_warp(m, n, k)");
  if (!glc_all_aligned(sizeof(float), a, b, c))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul_warp(pointers)");
  // The eight (bm, bn, bk) instantiations.
  if ((t->bm != 64 && t->bm != 128) || (t->bn != 64 && t->bn != 128) || (t->bk != 8 && t->bk != 16))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  switch (t->bm << 16 | t->bn << 8 | t->bk) {
    case 64 << 16 | 64 << 8 | 8:
      return launch_warp<64, 64, 8>(variant, m, n, k, a, b, c, stream);
    case 64 << 16 | 64 << 8 | 16:
      return launch_warp<64, 64, 16>(variant, m, n, k, a, b, c, stream);
    case 64 << 16 | 128 << 8 | 8:
      return launch_warp<64, 128, 8>(variant, m, n, k, a, b, c, stream);
    case 64 << 16 | 128 << 8 | 16:
      return launch_warp<64, 128, 16>(variant, m, n, k, a, b, c, stream);
    case 128 << 16 | 64 << 8 | 8:
      return launch_warp<128, 64, 8>(variant, m, n, k, a, b, c, stream);
    case 128 << 16 | 64 << 8 | 16:
      return launch_warp<128, 64, 16>(variant, m, n, k, a, b, c, stream);
    case 128 << 16 | 128 << 8 | 8:
      return launch_warp<128, 128, 8>(variant, m, n, k, a, b, c, stream);
    case 128 << 16 | 128 << 8 | 16:
      return launch_warp<128, 128, 16>(variant, m, n, k, a, b, c, stream);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  }
}
