// The half-precision GEMM ladder's mma.sync rung (issue 34): C[m x n] = A[m x k] B[k x n] for
// row-major float16 or bfloat16 A and B, FP32 accumulation, C stored as the input type or as
// float32. It follows the structure of CUTLASS's sm_80 multistage tensor-op GEMM (128 x 128 x 32
// block tiles, 64 x 64 warp tiles of mma.sync.m16n8k16, ldmatrix from XOR-swizzled shared tiles,
// a cp.async pipeline); the code is our own.
//
// What it adds over the WMMA rungs: the warp's fragments are registers whose layout PTX documents
// (mma.sync's m16n8k16 A, B and C fragments), so they can be loaded with ldmatrix (one
// instruction loads four 8 x 8 matrices of 16-bit elements for the warp, with .trans transposing
// B's k x n rows into the column fragments mma wants) and stored by the epilogue straight from
// registers; the shared tiles are unpadded and swizzled; STAGES slices are in flight.
//
// Layout. A block computes a BM x 128 tile of C (BM = 64 or 128) with WARPS warps (4: 2 x 2, 8:
// 2 x 4) of WM x WN warp tiles (64 x 64 at the defaults: 4 x 8 mma tiles of 16 x 8, 128 FP32
// results a thread). A slice of k is 32 deep: two m16n8k16 steps. Shared memory holds STAGES
// stages of A's BM x 32 slice (rows of 64 bytes: 4 chunks of 16 bytes) and B's 32 x 128 slice
// (rows of 256 bytes: 16 chunks), no padding. The 16-byte chunk c of row r is stored at chunk
//   A: c ^ ((r / 2) % 4)       B: c ^ (r % 8)
// of its row. An ldmatrix phase reads 8 rows' chunks of one logical column, and a 128-byte
// wavefront of cp.async writes 8 consecutive chunks (2 A rows or half a B row): with the XOR both
// land on 8 different 16-byte bank groups, so neither conflicts (without it, A's 8 rows hit 2
// groups and B's 1: 4- and 8-way conflicts). Since the tile rows a thread or a lane touches are
// multiples of 8 apart, every swizzle is a per-thread constant, and each ldmatrix and cp.async
// address is a register plus the stage's offset plus an immediate.
//
// Any m, n, k: chunks past m, k or n are zero-filled (cp.async with a source size of 0); C's
// stores are guarded. Where a row of A (or B) is not 16-byte aligned (k, or n, not a multiple of
// 8, or an unaligned base) that operand is loaded element by element through registers into the
// same swizzled layout (correct, not fast). Blocks walk the tiles in groups of 8 row tiles (the
// grid is one-dimensional) so that the blocks resident at once share A's and B's panels in L2.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuda/core/launch.cuh"
#include "hgemm_mma.h"
#include "sgemm_tiles.cuh"

namespace {

// Bits of the kernel's `flags` argument.
constexpr int mma_vector_a = 1;  // a 16-byte aligned and k % 8 == 0: 16-byte cp.async of A
constexpr int mma_vector_b = 2;  // b 16-byte aligned and n % 8 == 0: 16-byte cp.async of B
constexpr int mma_vector_c = 4;  // c aligned to two elements and n even: paired stores of C

// Row tiles per group of the block raster.
constexpr size_t mma_group_rows = 8;

template <int BM_, int WARPS, int STAGES_>
struct mma_shape {
  static constexpr int BM = BM_, BN = 128, BK = 32, STAGES = STAGES_, THREADS = WARPS * 32;
  static constexpr int WARPS_N = WARPS == 4 ? 2 : 4, WARPS_M = WARPS / WARPS_N;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  static constexpr int MI = WM / 16, NI = WN / 8;  // m16 and n8 tiles of a warp tile
  // Bytes of a stage: A's BM rows of 64 bytes, then B's 32 rows of 256 bytes.
  static constexpr unsigned A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2;
  static constexpr unsigned STAGE_BYTES = A_BYTES + B_BYTES, SHARED_BYTES = STAGES * STAGE_BYTES;
  // Copies: thread tid takes A's chunk (tid / 4 + l * A_STEP, tid % 4) and B's chunk
  // (tid / 16 + l * B_STEP, tid % 16).
  static constexpr int A_STEP = THREADS / 4, A_COPIES = BM / A_STEP;
  static constexpr int B_STEP = THREADS / 16, B_COPIES = BK / B_STEP;
  static_assert(WARPS == 4 || WARPS == 8, "4 or 8 warps");
  static_assert(BM == 64 || BM == 128, "64- or 128-row tiles");
  static_assert(MI >= 1 && NI % 2 == 0, "whole ldmatrix.x4 loads of B (two n8 tiles each)");
  static_assert(A_COPIES >= 1 && A_STEP % 8 == 0 && B_STEP % 8 == 0,
                "a thread's copies are rows a multiple of 8 apart: one swizzle a thread");
  static_assert(STAGES >= 2 && SHARED_BYTES <= 227 * 1024, "2+ stages in an SM's shared memory");
};

__device__ __forceinline__ unsigned shared_address(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes from global src to shared dst; in_range false reads nothing and writes zeros (src
// must still be a valid address: callers pass the matrix's base).
__device__ __forceinline__ void cp_async16_zfill(unsigned dst, const void *src, bool in_range) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(in_range ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void store_shared16(unsigned dst, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

// The misaligned path: 8 consecutive 16-bit elements from p, of which the first `count` (0-8)
// are read and the rest are zeros.
__device__ __forceinline__ uint4 load8_guarded(const void *p, int count) {
  const unsigned short *q = static_cast<const unsigned short *>(p);
  unsigned w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const unsigned lo = 2 * j < count ? __ldg(q + 2 * j) : 0u;
    const unsigned hi = 2 * j + 1 < count ? __ldg(q + 2 * j + 1) : 0u;
    w[j] = lo | hi << 16;
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Four 8 x 8 matrices of 16-bit elements; lane l gives the address of row l % 8 of matrix l / 8
// and receives, of matrix i, row l / 4's elements 2 (l % 4) and 2 (l % 4) + 1 in r[i] (.trans:
// column l / 4's elements at rows 2 (l % 4) and 2 (l % 4) + 1).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned &r0, unsigned &r1, unsigned &r2,
                                                  unsigned &r3, unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(address));
}

// d += a b for one 16 x 8 x 16 tile: a holds A's fragment (rows g, g + 8; k 2t, 2t + 1, +8),
// b B's (k 2t, 2t + 1, +8; column g), d C's (rows g, g + 8; columns 2t, 2t + 1), where g = lane /
// 4 and t = lane % 4.
template <bool BF16>
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
  if constexpr (BF16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// The epilogue's conversions: two adjacent results (p aligned to two elements), or one.
__device__ __forceinline__ void store2(float *p, float x, float y) {
  *reinterpret_cast<float2 *>(p) = make_float2(x, y);
}
__device__ __forceinline__ void store2(__half *p, float x, float y) {
  *reinterpret_cast<__half2 *>(p) = __floats2half2_rn(x, y);
}
__device__ __forceinline__ void store2(__nv_bfloat16 *p, float x, float y) {
  *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(x, y);
}
__device__ __forceinline__ void store1(float *p, float x) { *p = x; }
__device__ __forceinline__ void store1(__half *p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store1(__nv_bfloat16 *p, float x) { *p = __float2bfloat16_rn(x); }

// min(left, 8) as an int; 0 when nothing is left.
__device__ __forceinline__ int left8(size_t end, size_t at) {
  return at >= end ? 0 : end - at >= 8 ? 8 : static_cast<int>(end - at);
}

// Blocks an SM: two, except for 128 x 128 tiles at 8 warps (64 x 32 warp tiles: 64 results and
// 48 fragment registers a thread), which spill under two blocks' cap of 128 registers a thread.
template <int BM, int WARPS>
constexpr int mma_blocks_per_sm = BM == 128 && WARPS == 8 ? 1 : 2;

// T: __half or __nv_bfloat16 (A and B); Out: T or float (C).
template <typename T, typename Out, int BM, int WARPS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32, (mma_blocks_per_sm<BM, WARPS>))
    hgemm_mma_kernel(size_t m, size_t n, size_t k, const T *__restrict__ a, const T *__restrict__ b,
                     Out *__restrict__ c, int flags) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using S = mma_shape<BM, WARPS, STAGES>;
  constexpr int BN = S::BN, BK = S::BK, MI = S::MI, NI = S::NI;
  constexpr bool BF16 = std::is_same<T, __nv_bfloat16>::value;
  extern __shared__ __align__(128) unsigned char shared[];
  const unsigned base = shared_address(shared);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / S::WARPS_N * S::WM, wn = warp % S::WARPS_N * S::WN;
  // A thread's copies: A's chunk (a_r + l * A_STEP, tid % 4), B's (b_r + l * B_STEP, tid % 16),
  // at these swizzled offsets in a stage plus l * A_STEP (B_STEP) rows.
  const int a_r = tid / 4, a_c = tid % 4 * 8, b_r = tid / 16, b_c = tid % 16 * 8;
  const unsigned a_store = a_r * 64 + ((tid % 4) ^ ((a_r >> 1) & 3)) * 16;
  const unsigned b_store = S::A_BYTES + b_r * 256 + ((tid % 16) ^ (b_r & 7)) * 16;
  // A lane's ldmatrix addresses: row lane % 16 of a 16-row block, logical chunk lane / 16 of a
  // 2-chunk (16-element) column. A: rows wm + mi * 16 + lane % 16, chunk 2 ks + lane / 16,
  // swizzled by ((lane % 16) / 2) % 4; step ks flips the chunk's bit 1 (byte offset bit 5). B:
  // rows 16 ks + lane % 16, chunk wn / 8 + 2 j + lane / 16 (two n8 tiles), swizzled by lane % 8;
  // pair j flips chunk bits 1-2 (byte offset bits 5-6). The XORs touch bits that the rows' parts
  // of the offsets (multiples of 64 and 256) leave clear.
  const unsigned a_frag0 = (wm + lane % 16) * 64 + ((lane / 16) ^ ((lane % 16) >> 1 & 3)) * 16;
  const unsigned a_frag[2] = {a_frag0, a_frag0 ^ 32u};
  unsigned b_frag[NI / 2];
#pragma unroll
  for (int j = 0; j < NI / 2; ++j)
    b_frag[j] = S::A_BYTES + ((lane % 16) * 256 + (((wn / 8) | (lane / 16)) ^ (lane & 7)) * 16 ^
                              static_cast<unsigned>(j * 32));
  const bool vector_a = flags & mma_vector_a, vector_b = flags & mma_vector_b;
  const size_t tiles_m = (m + BM - 1) / BM, tiles_n = (n + BN - 1) / BN;
  const size_t k_tiles = (k + BK - 1) / BK;
  const size_t a_step = static_cast<size_t>(S::A_STEP) * k;
  const size_t b_step = static_cast<size_t>(S::B_STEP) * n;
  for (size_t tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
    // Groups of mma_group_rows row tiles, walked column by column: consecutive blocks share B's
    // column panel, and the blocks of one wave a few of A's row panels.
    const size_t per_group = mma_group_rows * tiles_n, group = tile / per_group;
    const size_t first = group * mma_group_rows, in_group = tile - group * per_group;
    const size_t rows_g = tiles_m - first < mma_group_rows ? tiles_m - first : mma_group_rows;
    const size_t row0 = (first + in_group % rows_g) * BM, col0 = in_group / rows_g * BN;
    // Which of the thread's A rows lie inside A (bit l: row a_r + l * A_STEP).
    unsigned a_rows = 0;
#pragma unroll
    for (int l = 0; l < S::A_COPIES; ++l) a_rows |= (row0 + a_r + l * S::A_STEP < m ? 1u : 0u) << l;
    const T *const pa = a + (row0 + a_r) * k + a_c;                     // copy 0 at k0 = 0
    const T *const pb = b + static_cast<size_t>(b_r) * n + col0 + b_c;  // copy 0 at k0 = 0
    // Issues the copies of slice `kt` into the stage at byte offset `stage` and commits them as
    // one group (an empty one past the last slice), so that "slice t has landed" is always "at
    // most STAGES - 2 groups pending".
    auto load = [&](unsigned stage, size_t kt) {
      if (kt < k_tiles) {
        const size_t k0 = kt * BK;
        const unsigned sa = base + stage + a_store, sb = base + stage + b_store;
        if (vector_a) {
          const bool k_in = k0 + a_c < k;  // k % 8 == 0: the chunk is all in or all out
#pragma unroll
          for (int l = 0; l < S::A_COPIES; ++l) {
            const bool in = k_in && (a_rows >> l & 1);
            cp_async16_zfill(sa + l * S::A_STEP * 64, in ? pa + l * a_step + k0 : a, in);
          }
        } else {
          const int count = left8(k, k0 + a_c);
#pragma unroll
          for (int l = 0; l < S::A_COPIES; ++l) {
            const int in = a_rows >> l & 1 ? count : 0;
            store_shared16(sa + l * S::A_STEP * 64,
                           load8_guarded(in ? pa + l * a_step + k0 : a, in));
          }
        }
        if (vector_b) {
          const bool n_in = col0 + b_c < n;  // n % 8 == 0
#pragma unroll
          for (int l = 0; l < S::B_COPIES; ++l) {
            const bool in = n_in && k0 + b_r + l * S::B_STEP < k;
            cp_async16_zfill(sb + l * S::B_STEP * 256, in ? pb + l * b_step + k0 * n : b, in);
          }
        } else {
          const int count = left8(n, col0 + b_c);
#pragma unroll
          for (int l = 0; l < S::B_COPIES; ++l) {
            const int in = k0 + b_r + l * S::B_STEP < k ? count : 0;
            store_shared16(sb + l * S::B_STEP * 256,
                           load8_guarded(in ? pb + l * b_step + k0 * n : b, in));
          }
        }
      }
      cp_async_commit();
    };
    // Step ks (0 or 1) of the slice in the stage at byte offset `stage`: MI A fragments of 16 x
    // 16 and NI B fragments of 16 x 8.
    auto fragments = [&](unsigned stage, int ks, unsigned(&fa)[MI][4], unsigned(&fb)[NI][2]) {
      const unsigned s = base + stage;
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) ldmatrix_x4(fa[mi], s + a_frag[ks] + mi * 16 * 64);
#pragma unroll
      for (int j = 0; j < NI / 2; ++j)
        ldmatrix_x4_trans(fb[2 * j][0], fb[2 * j][1], fb[2 * j + 1][0], fb[2 * j + 1][1],
                          s + b_frag[j] + ks * 16 * 256);
    };
    float acc[MI][NI][4] = {};
    auto products = [&](const unsigned(&fa)[MI][4], const unsigned(&fb)[NI][2]) {
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          const int nj = mi % 2 ? NI - 1 - ni : ni;  // serpentine: reuse B's registers
          mma16816<BF16>(acc[mi][nj], fa[mi], fb[nj]);
        }
    };
    auto advance = [](unsigned stage) {
      return stage + S::STAGE_BYTES == S::SHARED_BYTES ? 0u : stage + S::STAGE_BYTES;
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) load(s * S::STAGE_BYTES, s);
    cp_async_wait<STAGES - 2>();  // slice 0 has landed
    __syncthreads();
    unsigned fa[2][MI][4], fb[2][NI][2];
    fragments(0, 0, fa[0], fb[0]);
    unsigned read = 0, write = (STAGES - 1) * S::STAGE_BYTES;
    for (size_t t = 0; t < k_tiles; ++t) {
      // The stage that slice t + STAGES - 1 goes to was last read in step t - 1, before the
      // barrier at its end (or, at t == 0, is the one the prologue left empty).
      load(write, t + STAGES - 1);
      fragments(read, 1, fa[1], fb[1]);
      products(fa[0], fb[0]);
      read = advance(read);
      write = advance(write);
      if (t + 1 < k_tiles) {
        // Groups committed: STAGES - 1 + t + 1; slice t + 1 is the (t + 2)-th.
        cp_async_wait<STAGES - 2>();
        __syncthreads();  // slice t + 1 is visible; every read of slice t's stage is done
        fragments(read, 0, fa[0], fb[0]);
      }
      products(fa[1], fb[1]);
    }
    // C: lane (g, t) of the warp holds rows g and g + 8, columns 2t and 2t + 1 of each 16 x 8.
    const bool vector_c = flags & mma_vector_c;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const size_t row = row0 + wm + mi * 16 + lane / 4 + h * 8;
        if (row >= m) continue;
        Out *const c_row = c + row * n;
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          const size_t col = col0 + wn + ni * 8 + lane % 4 * 2;
          const float x = acc[mi][ni][2 * h], y = acc[mi][ni][2 * h + 1];
          if (vector_c) {
            if (col < n) store2(c_row + col, x, y);  // n even: both in or both out
          } else {
            if (col < n) store1(c_row + col, x);
            if (col + 1 < n) store1(c_row + col + 1, y);
          }
        }
      }
    // The next tile's prologue refills stages this one read; only empty groups are pending.
    cp_async_wait<0>();
    __syncthreads();
  }
#endif
}

template <typename T, typename Out, int BM, int WARPS, int STAGES>
int launch_mma(size_t m, size_t n, size_t k, const void *a, const void *b, void *c, int flags,
               cudaStream_t stream) {
  using S = mma_shape<BM, WARPS, STAGES>;
  auto *kernel = hgemm_mma_kernel<T, Out, BM, WARPS, STAGES>;
  const size_t tiles = glc_blocks_to_cover(m, BM) * glc_blocks_to_cover(n, S::BN);
  const unsigned grid = static_cast<unsigned>(tiles < glc_max_grid_x ? tiles : glc_max_grid_x);
  // Past 48 KiB a block must opt in; two blocks an SM take up to 2 x 64 KiB of the unified
  // L1/shared memory, so ask for the largest shared carveout (the copies bypass L1).
  int code = GLC_CUDA(cudaFuncSetAttribute, kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                      static_cast<int>(S::SHARED_BYTES));
  if (code) return code;
  code = GLC_CUDA(cudaFuncSetAttribute, kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                  static_cast<int>(cudaSharedmemCarveoutMaxShared));
  if (code) return code;
  return glc_launch_shared(kernel, "hgemm_mma_kernel", dim3(grid), dim3(S::THREADS),
                           S::SHARED_BYTES, stream, m, n, k, static_cast<const T *>(a),
                           static_cast<const T *>(b), static_cast<Out *>(c), flags);
}

// The twelve (bm, warps, stages) instantiations for one (input, output) type pair.
template <typename T, typename Out>
int dispatch_mma(const glc_matmul_tunables &t, size_t m, size_t n, size_t k, const void *a,
                 const void *b, void *c, int flags, cudaStream_t stream) {
  switch (t.bm << 16 | t.warps << 8 | t.stages) {
#define GLC_HGEMM_MMA_CASE(BM, WARPS, STAGES) \
  case BM << 16 | WARPS << 8 | STAGES:        \
    return launch_mma<T, Out, BM, WARPS, STAGES>(m, n, k, a, b, c, flags, stream);
    GLC_HGEMM_MMA_CASE(128, 4, 2)
    GLC_HGEMM_MMA_CASE(128, 4, 3)
    GLC_HGEMM_MMA_CASE(128, 4, 4)
    GLC_HGEMM_MMA_CASE(128, 8, 2)
    GLC_HGEMM_MMA_CASE(128, 8, 3)
    GLC_HGEMM_MMA_CASE(128, 8, 4)
    GLC_HGEMM_MMA_CASE(64, 4, 2)
    GLC_HGEMM_MMA_CASE(64, 4, 3)
    GLC_HGEMM_MMA_CASE(64, 4, 4)
    GLC_HGEMM_MMA_CASE(64, 8, 2)
    GLC_HGEMM_MMA_CASE(64, 8, 3)
    GLC_HGEMM_MMA_CASE(64, 8, 4)
#undef GLC_HGEMM_MMA_CASE
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_hgemm(tunables)");
  }
}

// Fills a zero *value with fallback; true when the result is one of the allowed values.
bool resolve_one(int *value, int fallback, int allowed0, int allowed1, int allowed2 = -1) {
  if (*value == 0) *value = fallback;
  return *value == allowed0 || *value == allowed1 || *value == allowed2;
}

}  // namespace

extern "C" int glc_hgemm_mma_resolve(const glc_matmul_tunables *in, glc_matmul_tunables *out) {
  if (out == nullptr) return glc_fail(cudaErrorInvalidValue, "glc_hgemm(tunables)");
  glc_matmul_tunables t = in ? *in : glc_matmul_tunables{};
  const bool bm = resolve_one(&t.bm, GLC_HGEMM_MMA_DEFAULT_BM, 64, 128);
  const bool bn = resolve_one(&t.bn, GLC_HGEMM_MMA_DEFAULT_BN, 128, 128);
  const bool bk = resolve_one(&t.bk, GLC_HGEMM_MMA_DEFAULT_BK, 32, 32);
  const bool warps = resolve_one(&t.warps, GLC_HGEMM_MMA_DEFAULT_WARPS, 4, 8);
  const bool stages = resolve_one(&t.stages, GLC_HGEMM_MMA_DEFAULT_STAGES, 2, 3, 4);
  *out = t;
  const bool ok = bm && bn && bk && warps && stages && t.tile == 0 && t.tm == 0 && t.tn == 0;
  return ok ? cudaSuccess : glc_fail(cudaErrorInvalidValue, "glc_hgemm(tunables)");
}

extern "C" int glc_hgemm_mma(const glc_matmul_tunables *tunables, int dtype, int out_dtype,
                             size_t m, size_t n, size_t k, const void *a, const void *b, void *c,
                             glc_stream stream) {
  glc_matmul_tunables t;
  int code = glc_hgemm_mma_resolve(tunables, &t);
  if (code) return code;
  if (dtype != GLC_F16 && dtype != GLC_BF16)
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm(dtype)");
  if (out_dtype != dtype && out_dtype != GLC_F32)
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm(out_dtype)");
  if (m == 0 || n == 0) return cudaSuccess;
  const size_t out_bytes = out_dtype == GLC_F32 ? 4 : 2;
  if (m > SIZE_MAX / n / out_bytes) return glc_fail(cudaErrorInvalidValue, "glc_hgemm(sizes)");
  if (!glc_all_aligned(out_bytes, c) || (k && !glc_all_aligned(2, a, b)))
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm(alignment)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // k == 0: an empty sum, C = 0 (zero bits are 0.0 in all three types), with no kernel
  if (k == 0) return glc_memset_async(c, 0, m * n * out_bytes, stream);
  bool supported = false;
  code = has_cp_async(&supported);
  if (code) return code;
  if (!supported) return glc_fail(cudaErrorNotSupported, "hgemm_mma_kernel(sm_80+)");
  const int flags = (glc_all_aligned(16, a) && k % 8 == 0 ? mma_vector_a : 0) |
                    (glc_all_aligned(16, b) && n % 8 == 0 ? mma_vector_b : 0) |
                    (glc_all_aligned(2 * out_bytes, c) && n % 2 == 0 ? mma_vector_c : 0);
  const bool to_f32 = out_dtype == GLC_F32;
  if (dtype == GLC_F16)
    return to_f32 ? dispatch_mma<__half, float>(t, m, n, k, a, b, c, flags, s)
                  : dispatch_mma<__half, __half>(t, m, n, k, a, b, c, flags, s);
  return to_f32 ? dispatch_mma<__nv_bfloat16, float>(t, m, n, k, a, b, c, flags, s)
                : dispatch_mma<__nv_bfloat16, __nv_bfloat16>(t, m, n, k, a, b, c, flags, s);
}
