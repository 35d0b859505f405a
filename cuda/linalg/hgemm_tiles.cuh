// What the WMMA rungs of the half-precision GEMM (variants 13 and 14, hgemm_wmma.cu and
// hgemm_wmma_multistage.cu) share: the block's shape, the guarded copies of a tile of A or B into
// shared memory (through registers, or by cp.async), the warp's products on one slice of k, and
// the epilogue that rounds the FP32 sums to the output's dtype. Anonymous namespace and inline,
// as sgemm_tiles.cuh: each .cu that includes it gets its own copy.
//
// The block: 256 threads, 8 warps as 2 rows x 4 columns, each warp a (BM / 2) x (BN / 4) tile of
// C in 16 x 16 FP32 accumulator fragments. Shared tiles are row-major with rows padded by 8
// elements (16 bytes): A's BM x (BK + 8), B's BK x (BN + 8). A fragment load's 8 rows of 16 bytes
// then start 80, 48, 272 or 144 bytes apart, each in 4 banks no other row uses; and every
// fragment pointer stays 32-byte aligned, as load_matrix_sync requires.
//
// The operands move as raw 2-byte words (float16 and bfloat16 alike: +0 is 0x0000 in both), in
// chunks of 8 (16 bytes). A chunk is one 16-byte access where the operand is 16-byte aligned and
// its rows a multiple of 8 elements (k % 8 for A, n % 8 for B): a chunk then lies wholly inside
// the matrix or wholly outside, and outside it is zeros. Elsewhere each element is guarded alone.
#ifndef GPULAB_CUDA_LINALG_HGEMM_TILES_CUH
#define GPULAB_CUDA_LINALG_HGEMM_TILES_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstddef>
#include <cstdint>

#include "cuda/core/gpulab_core.h"
#include "sgemm_tiles.cuh"

namespace {

constexpr int hgemm_threads = 256;
constexpr int hgemm_warps_n = 4;  // warps along N; 2 along M

// Bits of the kernels' `flags` argument.
constexpr int hgemm_vector_a = 1;  // 16-byte chunks of A: a 16-byte aligned, k % 8 == 0
constexpr int hgemm_vector_b = 2;  // of B: b 16-byte aligned, n % 8 == 0
constexpr int hgemm_vector_c = 4;  // 16-byte stores of C: c 16-byte aligned, n % 8 == 0
constexpr int hgemm_out_f32 = 8;   // C is float32, not the operands' dtype

template <int BM_, int BN_, int BK_>
struct hgemm_shape {
  static constexpr int BM = BM_, BN = BN_, BK = BK_;
  static constexpr int WM = BM / 2, WN = BN / hgemm_warps_n;  // the warp tile
  static constexpr int FM = WM / 16, FN = WN / 16;            // its fragments
  static constexpr int LDA = BK + 8, LDB = BN + 8;            // padded shared rows (elements)
  static constexpr int A_ELEMS = BM * LDA, B_ELEMS = BK * LDB;
  static constexpr int STAGE_BYTES = 2 * (A_ELEMS + B_ELEMS);
  static constexpr int STAGING_BYTES = hgemm_threads / 32 * 16 * 16 * 4;  // a 16 x 16 square a warp
  static_assert(FM >= 1 && FN >= 1 && BK % 16 == 0, "tile too small for 16 x 16 x 16 fragments");
};

// ROWS x COLS elements of a row-major matrix (row stride ld elements; g: the tile's first
// element) into s (row stride LD), through registers: rows_in x cols_in of the tile lie inside
// the matrix, the rest is zero-filled.
template <int ROWS, int COLS, int LD>
__device__ __forceinline__ void load_tile_sync(uint16_t *s, const uint16_t *g, size_t ld,
                                               int rows_in, int cols_in, bool vector) {
  constexpr int PER_ROW = COLS / 8, CHUNKS = ROWS * PER_ROW;
#pragma unroll
  for (int l = 0; l < (CHUNKS + hgemm_threads - 1) / hgemm_threads; ++l) {
    const int q = static_cast<int>(threadIdx.x) + l * hgemm_threads;
    if (CHUNKS % hgemm_threads != 0 && q >= CHUNKS) break;
    const int r = q / PER_ROW, col = q % PER_ROW * 8;
    union {
      uint4 v;
      uint16_t e[8];
    } chunk;
    chunk.v = make_uint4(0, 0, 0, 0);
    if (r < rows_in) {
      const uint16_t *p = g + r * ld + col;
      if (vector) {
        if (col < cols_in) chunk.v = *reinterpret_cast<const uint4 *>(p);
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j)
          if (col + j < cols_in) chunk.e[j] = p[j];
      }
    }
    *reinterpret_cast<uint4 *>(s + r * LD + col) = chunk.v;
  }
}

// load_tile_sync's tile by 16-byte cp.async copies (the vector case only), not waited for:
// sgemm_tiles.cuh's cp_async16, whose src-size 0 zero-fills the chunks outside the matrix (base:
// a valid address for them).
template <int ROWS, int COLS, int LD>
__device__ __forceinline__ void load_tile_async(uint16_t *s, const uint16_t *g, size_t ld,
                                                int rows_in, int cols_in, const uint16_t *base) {
  constexpr int PER_ROW = COLS / 8, CHUNKS = ROWS * PER_ROW;
#pragma unroll
  for (int l = 0; l < (CHUNKS + hgemm_threads - 1) / hgemm_threads; ++l) {
    const int q = static_cast<int>(threadIdx.x) + l * hgemm_threads;
    if (CHUNKS % hgemm_threads != 0 && q >= CHUNKS) break;
    const int r = q / PER_ROW, col = q % PER_ROW * 8;
    const bool in = r < rows_in && col < cols_in;
    cp_async16(reinterpret_cast<float *>(s + r * LD + col),
               reinterpret_cast<const float *>(in ? g + r * ld + col : base), in);
  }
}

// The warp's products over one BK slice in shared memory: acc[i][j] += A's rows wr + 16 i by
// B's columns wc + 16 j.
template <typename T, typename S>
__device__ __forceinline__ void mma_slice(
    const T *as, const T *bs, int wr, int wc,
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[S::FM][S::FN]) {
  using namespace nvcuda;
#pragma unroll
  for (int kk = 0; kk < S::BK; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[S::FM];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[S::FN];
#pragma unroll
    for (int i = 0; i < S::FM; ++i)
      wmma::load_matrix_sync(fa[i], as + (wr + i * 16) * S::LDA + kk, S::LDA);
#pragma unroll
    for (int j = 0; j < S::FN; ++j)
      wmma::load_matrix_sync(fb[j], bs + kk * S::LDB + wc + j * 16, S::LDB);
#pragma unroll
    for (int i = 0; i < S::FM; ++i)
#pragma unroll
      for (int j = 0; j < S::FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
  }
}

// FP32 to the output's element, rounded to nearest even.
template <typename TO>
__device__ __forceinline__ TO to_out(float x);
template <>
__device__ __forceinline__ float to_out<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half to_out<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 to_out<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// The warp's fragments to C (elements TO): each through the warp's 16 x 16 FP32 square in
// shared memory, then lane l writes 8 consecutive elements of the square's row l / 2, one or two
// 16-byte stores where vector (C's rows a multiple of 8 elements: the 8 lie wholly inside or
// outside), else element by element; rows_in x cols_in of the block tile lie inside C.
template <typename TO, typename S>
__device__ __forceinline__ void store_warp_tile(
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[S::FM][S::FN],
    float *square, void *c, size_t n, size_t row0, size_t col0, int rows_in, int cols_in, int wr,
    int wc, bool vector) {
  using namespace nvcuda;
  const int lane = threadIdx.x % 32, r = lane / 2, c8 = lane % 2 * 8;
#pragma unroll
  for (int i = 0; i < S::FM; ++i)
#pragma unroll
    for (int j = 0; j < S::FN; ++j) {
      wmma::store_matrix_sync(square, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int tr = wr + i * 16 + r, tc = wc + j * 16 + c8;
      if (tr < rows_in) {
        const float *v = square + r * 16 + c8;
        TO *out = static_cast<TO *>(c) + (row0 + tr) * n + col0 + tc;
        if (vector) {
          if (tc < cols_in) {
            union {
              uint4 u[sizeof(TO) / 2];
              TO e[8];
            } chunk;
#pragma unroll
            for (int e = 0; e < 8; ++e) chunk.e[e] = to_out<TO>(v[e]);
#pragma unroll
            for (int h = 0; h < static_cast<int>(sizeof(TO)) / 2; ++h)
              reinterpret_cast<uint4 *>(out)[h] = chunk.u[h];
          }
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e)
            if (tc + e < cols_in) out[e] = to_out<TO>(v[e]);
        }
      }
      __syncwarp();  // the square is rewritten by the next fragment
    }
}

// The flags every launch computes from its operands.
inline int hgemm_flags(int out_dtype, size_t k, size_t n, const void *a, const void *b,
                       const void *c) {
  return (glc_all_aligned(16, a) && k % 8 == 0 ? hgemm_vector_a : 0) |
         (glc_all_aligned(16, b) && n % 8 == 0 ? hgemm_vector_b : 0) |
         (glc_all_aligned(16, c) && n % 8 == 0 ? hgemm_vector_c : 0) |
         (out_dtype == GLC_F32 ? hgemm_out_f32 : 0);
}

// cudaErrorNotSupported before sm_80 (bfloat16 WMMA and cp.async need it).
inline int hgemm_require_sm80(const char *what) {
  bool yes = false;
  int code = has_cp_async(&yes);
  if (code) return code;
  return yes ? cudaSuccess : glc_fail(cudaErrorNotSupported, what);
}

}  // namespace

#endif
