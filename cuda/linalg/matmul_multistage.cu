// Variant 12, multistage: the top FP32 SGEMM rung. It follows the structure of CUTLASS's SIMT
// sgemm for sm_80 (128 x 128 x 8 block tiles, 4-5 cp.async stages, warps of 32 x 64) and of
// siboehm's SGEMM_CUDA kernels 10-12; the code is our own. C[m x n] = A[m x k] B[k x n],
// row-major float32, FP32 FMAs only.
//
// What it changes from variant 8 (double_buffered), and why: an H100 run measured
// variant 8 at 32.9 TFLOP/s (0.65x cuBLAS) at 4096^3, and 36.9 with bm = 64 (two 128-thread
// blocks an SM instead of one 256-thread block) or bk = 16 (half the barriers per FMA): it waits
// on its barriers and on L2, with 8 warps an SM and one slice in flight. So:
//  - STAGES shared stages (2, 3 or 4) filled by cp.async: STAGES - 1 slices are in flight while
//    one is computed on, so a slice's L2 latency hides behind STAGES - 1 slices of FMAs;
//  - one barrier per slice instead of two: the copies into the stage read in the previous step
//    are issued after the barrier that ends that step's reads;
//  - the warps' operands double-buffered in registers: step kk + 1's shared loads are issued
//    before step kk's FMAs, and the next slice's first loads before the last step's FMAs (the
//    barrier sits between the two), so no FMA waits on a shared load;
//  - __launch_bounds__(threads, 2): two blocks an SM. WARPS = 8: 256 threads of 8 x 8 results
//    each, at most 128 registers, 16 warps an SM. WARPS = 4: 128 threads of 16 x 8 results
//    (warp tiles of 64 x 64: 6 shared loads per 128 FMAs instead of 4 per 64), 8 warps an SM.
//    The grid is the two philosophies: more warps to hide latency, or more work per warp.
//  - bm = 256 (8 warps only): cuBLAS's shape at 4096^3 on the H100 (ncu: 256 x 128 block tiles,
//    16 x 8 results a thread, 256 threads, one block an SM). The best 128-row configuration
//    reached 0.884x cuBLAS with 25% of its instructions not FFMAs and 80% issue efficiency, against
//    cuBLAS's 13% and 88%: 16 x 8 a thread halves the shared loads and address arithmetic per FMA
//    of 8 x 8, and halves the copies of B per result, at 8 warps an SM instead of 16 (one block
//    of up to 255 registers a thread). Measured slower than 128 rows: docs/labs/linalg.md.
//
// Layout. A block computes a BM x 128 tile of C (BM = 128 or 256). Its warps form (WARPS / 2) x
// 2 warp tiles of WM x 64 (WM = 32 for 128 rows at 8 warps, 64 for 128 at 4 and for 256 at 8);
// the 32 lanes of a warp form 4 rows x 8 columns, and
// lane (lr, lc) holds TM x 8 results as (TM / 4) x 2 sub-tiles of 4 x 4: rows lr * 4 + {0..3}
// + 16 h, columns lc * 4 + {0..3} + 32 h' of the warp tile (variant 7's layout, extended down).
// Per step of k a warp reads TM / 4 A float4s (each a broadcast to 8 lanes) and 2 B float4s (8
// distinct, 128 consecutive bytes): no bank conflicts. A is stored transposed (k-major, rows
// padded by 4 floats) through 4-byte cp.async copies, since a 16-byte copy cannot transpose; B
// as it is, through 16-byte copies when b is 16-byte aligned and n % 4 == 0, else 4-byte ones.
// Shared memory is dynamic: STAGES * BK * (BM + 4 + 128) * 4 bytes, up to 66560 at bm = 128, bk
// = 16 and 4 stages (99328 at bm = 256), past the 48 KiB static limit (the launch opts in).
//
// Any m, n, k: past k, and past n in B, elements are copied as zeros (cp.async with a source
// size of 0); A's rows past m are copied from row m - 1 (their results are never stored, and the
// copy's only guard is then k's, one test a slice); stores are guarded, and blocks loop over row
// tiles blockIdx.y, blockIdx.y + gridDim.y, ... (gridDim.y is capped at 65535). A whole tile
// (BM rows, 128 columns, B 16-byte aligned with n % 4 == 0) copies its whole slices of k in a
// loop of its own with none of those guards: 10% instructions besides the FFMAs there instead
// of 18% (the SASS; measured +4-7%, and the 4-warp tiles most). Registers, instruction counts
// and measurements: docs/labs/linalg.md.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuda/core/launch.cuh"
#include "matmul_blocked.h"
#include "sgemm_tiles.cuh"

namespace {

// Bits of the kernel's `vector` argument (A always takes 4-byte copies).
constexpr int multistage_vector_b = 1;  // b 16-byte aligned and n % 4 == 0: 16-byte copies of B
constexpr int multistage_vector_c = 2;  // c 16-byte aligned and n % 4 == 0: 16-byte stores of C

// 128-row tiles: two blocks an SM (at most 128 registers a thread at 8 warps); 256-row tiles
// (8 warps of 16 x 8 results): one block an SM, up to 255 registers a thread.
template <int BM>
constexpr int multistage_blocks_per_sm = BM == 128 ? 2 : 1;

template <int BM_, int WARPS, int BK, int STAGES>
struct multistage_shape {
  static constexpr int BM = BM_, BN = 128, THREADS = WARPS * 32;
  static constexpr int WARPS_N = 2, WM = BM / (WARPS / WARPS_N), WN = BN / WARPS_N;
  static constexpr int TM = WM / 4;   // rows of results a lane holds (8 or 16); 8 columns
  static constexpr int LDA = BM + 4;  // a transposed A row: 132 or 260 floats, 16-byte aligned,
                                      // and LDA % 32 == 4 spreads the copies of 8 k over the banks
  static constexpr int STAGE_FLOATS = BK * LDA + BK * BN;
  static constexpr unsigned STAGE_BYTES = STAGE_FLOATS * sizeof(float);
  static constexpr unsigned SHARED_BYTES = STAGES * STAGE_BYTES;
  static_assert(BM == 128 || (BM == 256 && WARPS == 8), "128 x 128 tiles, or 256 x 128 at 8 warps");
  static_assert(WN == 64 && (WM == 32 || WM == 64), "warp tiles of 32 x 64 or 64 x 64");
  static_assert(SHARED_BYTES <= 227 * 1024, "an SM's shared memory, 227 KiB a block");
  static_assert(BK % 2 == 0, "the register double buffer alternates within a slice");
  static_assert(STAGES >= 2, "at least one slice in flight");
};

// p moved by `bytes`. Stage offsets are counted in bytes so that a shared address is a
// thread's register plus the stage's offset (a uniform register) plus a constant, which LDS
// and LDGSTS take as they are ([R4+UR5+0x210]); counted in floats, each address cost an IADD3
// and a LEA a slice.
template <typename T>
__device__ __forceinline__ T *at(T *p, unsigned bytes) {
  using byte = typename std::conditional<std::is_const<T>::value, const char, char>::type;
  return reinterpret_cast<T *>(reinterpret_cast<byte *>(p) + bytes);
}

// A thread's operands for one step of k: TM A values and 8 B values at the warp layout's
// offsets, from a slice's row kk (a_k: &as[kk][wr + lr * 4], b_k: &bs[kk][wc + lc * 4]).
template <int TM>
__device__ __forceinline__ void load_fragments(const float *a_k, const float *b_k, float (&fa)[TM],
                                               float (&fb)[8]) {
#pragma unroll
  for (int h = 0; h < TM / 4; ++h) {
    const float4 v = *reinterpret_cast<const float4 *>(a_k + h * 16);
    fa[h * 4 + 0] = v.x, fa[h * 4 + 1] = v.y, fa[h * 4 + 2] = v.z, fa[h * 4 + 3] = v.w;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float4 v = *reinterpret_cast<const float4 *>(b_k + h * 32);
    fb[h * 4 + 0] = v.x, fb[h * 4 + 1] = v.y, fb[h * 4 + 2] = v.z, fb[h * 4 + 3] = v.w;
  }
}

template <int BM_, int WARPS, int BK, int STAGES>
__global__ void __launch_bounds__(WARPS * 32, multistage_blocks_per_sm<BM_>)
    sgemm_multistage(size_t m, size_t n, size_t k, const float *__restrict__ a,
                     const float *__restrict__ b, float *__restrict__ c, int vector) {
  using S = multistage_shape<BM_, WARPS, BK, STAGES>;
  constexpr int BM = S::BM, BN = S::BN, THREADS = S::THREADS, TM = S::TM, LDA = S::LDA;
  extern __shared__ __align__(16) float stages[];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wr = warp / S::WARPS_N * S::WM, wc = warp % S::WARPS_N * S::WN;
  const int lr = lane / 8, lc = lane % 8;
  // A: element (a_row + l * A_STEP, a_col) of the slice. B: the float4 at (b4_row + l * B4_STEP,
  // b4_col), as one 16-byte copy or as four 4-byte ones.
  constexpr int A_STEP = THREADS / BK, B4_STEP = THREADS / (BN / 4);
  static_assert(THREADS % BK == 0 && BM % A_STEP == 0 && BK % B4_STEP == 0,
                "whole copies per thread");
  const int a_row = tid / BK, a_col = tid % BK;
  const int b4_row = tid / (BN / 4), b4_col = tid % (BN / 4) * 4;
  const bool b_vector = vector & multistage_vector_b;
  // Offsets into A and B are 32-bit: glc_matmul refuses operands of 2^31 elements or more, so
  // every in-range offset fits, and a thread keeps one register per address instead of two
  // (at 8 warps the 128-register cap of two blocks an SM leaves 32 past the 64 results and 32
  // operands). Out-of-range copies read nothing (and name the base).
  // The row tiles' starts too: row0 < m < 2^31, and row0 + 65535 * 256 < 2^32.
  const unsigned m32 = static_cast<unsigned>(m), n32 = static_cast<unsigned>(n);
  const unsigned k32 = static_cast<unsigned>(k);
  const unsigned col0 = blockIdx.x * static_cast<unsigned>(BN);
  const int cols_in = extent(n32 - col0, BN);
  const unsigned k_tiles = k32 / BK + (k32 % BK != 0);
  const unsigned b4_offset = b4_row * n32 + col0 + b4_col;
  // A thread's places in stage 0 (a stage's are these moved by its offset, a multiple of
  // STAGE_BYTES): the destinations of its first copies of A and B, and its operands.
  float *const a_dst = stages + a_col * LDA + a_row;
  float *const b_dst = stages + BK * LDA + b4_row * BN + b4_col;
  const float *const a_frag = stages + wr + lr * 4;
  const float *const b_frag = stages + BK * LDA + wc + lc * 4;
  for (unsigned row0 = blockIdx.y * static_cast<unsigned>(BM); row0 < m32;
       row0 += gridDim.y * static_cast<unsigned>(BM)) {
    const int rows_in = extent(m32 - row0, BM);
    const unsigned a_offset = row0 * k32 + a_col;
    // Issues the copies of slice `tile` into stage s (nothing past the last slice) and commits
    // them as one group, an empty one past the end: every step commits one group, so "slice t
    // has landed" is always "at most STAGES - 2 groups pending".
    auto load = [&](unsigned s, unsigned tile) {
      if (tile < k_tiles) {
        float *as = at(stages, s), *bs = as + BK * LDA;
        const unsigned k0 = tile * BK;
        const int k_in = extent(k32 - k0, BK);
        // At most 4 copies' addresses stay live: more would cost registers that the 8-warp,
        // 16-deep slices do not have under the 128-register cap.
        // Rows past m are copied from row m - 1 (in range; their results are never stored), so
        // only k needs zeros, and its test is one per slice.
        const bool a_in = a_col < k_in;
        if (rows_in == BM) {
          // A whole row tile: a thread's rows are A_STEP apart, so one offset stepped by a
          // constant serves all its copies (3 instructions a copy instead of about 9; the
          // copies of A were most of the 25% of non-FMA instructions ncu counted at 4096^3).
          unsigned offset = a_in ? a_offset + a_row * k32 + k0 : 0u;
          const unsigned step = a_in ? A_STEP * k32 : 0u;
#pragma unroll
          for (int l = 0; l < BM / A_STEP; ++l, offset += step)
            cp_async4(as + a_col * LDA + a_row + l * A_STEP, a + offset, a_in);
        } else {
#pragma unroll 4
          for (int l = 0; l < BM / A_STEP; ++l) {
            const int r = a_row + l * A_STEP;
            const unsigned row = r < rows_in ? r : rows_in - 1;
            cp_async4(as + a_col * LDA + r, a_in ? a + (a_offset + row * k32 + k0) : a, a_in);
          }
        }
        if (b_vector) {
#pragma unroll
          for (int l = 0; l < BK / B4_STEP; ++l) {
            const int kk = b4_row + l * B4_STEP;
            const bool in = kk < k_in && b4_col < cols_in;
            cp_async16(bs + kk * BN + b4_col, in ? b + (b4_offset + (k0 + l * B4_STEP) * n32) : b,
                       in);
          }
        } else {
          // The same float4 places, element by element (each guarded on its own column).
#pragma unroll
          for (int l = 0; l < BK / B4_STEP; ++l) {
            const int kk = b4_row + l * B4_STEP;
            const unsigned row = b4_offset + (k0 + l * B4_STEP) * n32;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const bool in = kk < k_in && b4_col + j < cols_in;
              cp_async4(bs + kk * BN + b4_col + j, in ? b + (row + j) : b, in);
            }
          }
        }
      }
      cp_async_commit();
    };
    // The copies of a whole slice of a whole tile (all BM rows, BK columns of k, 128 columns of
    // B, B on the 16-byte grain): no guards, no selects, and two 32-bit offsets stepped once a
    // slice (oa for A, ob for B). A's copy l is one IMAD.WIDE from copy l - 1 (a_step, A_STEP
    // rows, stays in a register); B's are one each. In the SASS of <128, 8, 16, 2> this and the
    // stage offsets in bytes took the main loop from 189 instructions besides its 1024 FFMAs a
    // slice to 103 (docs/labs/linalg.md).
    const unsigned a_step = A_STEP * k32;
    auto load_whole = [&](unsigned s, unsigned oa, unsigned ob) {
      const float *pa = a + oa;
#pragma unroll
      for (int l = 0; l < BM / A_STEP; ++l)
        cp_async4(at(a_dst, s) + l * A_STEP, pa + static_cast<size_t>(a_step) * l, true);
#pragma unroll
      for (int l = 0; l < BK / B4_STEP; ++l)
        cp_async16(at(b_dst, s) + l * B4_STEP * BN, b + (ob + l * B4_STEP * n32), true);
      cp_async_commit();
    };
    auto fragments = [&](unsigned s, int kk, float(&fa)[TM], float(&fb)[8]) {
      load_fragments<TM>(at(a_frag, s) + kk * LDA, at(b_frag, s) + kk * BN, fa, fb);
    };
    constexpr unsigned LAST_STAGE = (STAGES - 1) * S::STAGE_BYTES;
    float acc[TM][8] = {};
    float fa[2][TM], fb[2][8];
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) load(s * S::STAGE_BYTES, s);
    cp_async_wait<STAGES - 2>();  // slice 0 has landed
    __syncthreads();
    fragments(0, 0, fa[0], fb[0]);
    unsigned read = 0;  // the stage of slice t (its offset in bytes); slice t + STAGES - 1 goes
                        // to the one before it
    // Step t: the copies of slice t + STAGES - 1 (copy(stage)), then slice t's FMAs; last: t
    // is the last slice.
    auto slice = [&](auto copy, bool last) {
      // That stage was last read in step t - 1, whose reads all came before the barrier at
      // its end (or, for t == 0, it is the one stage the prologue left empty).
      const unsigned next = STAGES == 2          ? read ^ S::STAGE_BYTES
                            : read == LAST_STAGE ? 0
                                                 : read + S::STAGE_BYTES;
      copy(STAGES == 2 ? next : read == 0 ? LAST_STAGE : read - S::STAGE_BYTES);
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        if (kk + 1 < BK) {
          fragments(read, kk + 1, fa[(kk + 1) % 2], fb[(kk + 1) % 2]);
        } else if (!last) {
          // Groups committed: STAGES - 1 + t + 1; slice t + 1 is the (t + 2)-th.
          cp_async_wait<STAGES - 2>();
          __syncthreads();  // slice t + 1 is visible; every read of stage `read - 1` is done
          fragments(next, 0, fa[0], fb[0]);  // BK is even: (kk + 1) % 2 == 0
        }
        outer_product(fa[kk % 2], fb[kk % 2], acc);
      }
      read = next;
    };
    unsigned t = 0;
    // A whole tile runs step t here while the slice it copies, t + STAGES - 1, is whole: at
    // 4096^3 every step but the last STAGES - 1 (which copy nothing). No step here computes the
    // last slice, so there is no test of `last` either: one branch a slice. The general loop
    // finishes every tile. The offsets are in range whenever a copy uses them (ob reaches at
    // most k * n < 2^31; where no whole slice is copied, its start may wrap, unused).
    if (rows_in == BM && cols_in == BN && b_vector) {
      const unsigned k_whole = k32 / BK;
      unsigned oa = a_offset + a_row * k32 + (STAGES - 1) * BK;
      unsigned ob = b4_offset + (STAGES - 1) * BK * n32;
      for (; t + STAGES - 1 < k_whole; ++t, oa += BK, ob += BK * n32)
        slice([&](unsigned s) { load_whole(s, oa, ob); }, false);
    }
    for (; t < k_tiles; ++t) slice([&](unsigned s) { load(s, t + STAGES - 1); }, t + 1 == k_tiles);
    store_warp_tile<TM>(c, n, row0, col0, rows_in, cols_in, wr, wc, lr, lc,
                        vector & multistage_vector_c, acc);
    // The next row tile's prologue refills stages this one read; only empty groups are pending.
    cp_async_wait<0>();
    __syncthreads();
  }
}

template <int BM, int WARPS, int BK, int STAGES>
int launch_multistage(size_t m, size_t n, size_t k, const float *a, const float *b, float *c,
                      cudaStream_t stream) {
  using S = multistage_shape<BM, WARPS, BK, STAGES>;
  auto *kernel = sgemm_multistage<BM, WARPS, BK, STAGES>;
  dim3 grid;
  if (!tile_grid(m, n, S::BM, S::BN, &grid))
    return glc_fail(cudaErrorInvalidValue, "sgemm_multistage(n too large)");
  bool supported = false;
  int code = has_cp_async(&supported);
  if (code) return code;
  if (!supported) return glc_fail(cudaErrorNotSupported, "sgemm_multistage(sm_80+)");
  // Past 48 KiB a block must opt in; and two blocks an SM need up to 2 x 65 KiB of the unified
  // L1/shared memory (one 256-row block up to 97 KiB), so ask for the largest shared carveout (the
  // kernel's only L1 traffic is A's 4-byte copies, each line read once).
  code = GLC_CUDA(cudaFuncSetAttribute, kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                  static_cast<int>(S::SHARED_BYTES));
  if (code) return code;
  code = GLC_CUDA(cudaFuncSetAttribute, kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                  static_cast<int>(cudaSharedmemCarveoutMaxShared));
  if (code) return code;
  const int vector = (glc_all_aligned(16, b) && n % 4 == 0 ? multistage_vector_b : 0) |
                     (glc_all_aligned(16, c) && n % 4 == 0 ? multistage_vector_c : 0);
  return glc_launch_shared(kernel, "sgemm_multistage", grid, dim3(S::THREADS), S::SHARED_BYTES,
                           stream, m, n, k, a, b, c, vector);
}

}  // namespace

int glc_matmul_multistage(const glc_matmul_tunables *t, size_t m, size_t n, size_t k,
                          const float *a, const float *b, float *c, cudaStream_t stream) {
  if (t == nullptr) return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  if (m == 0 || n == 0 || k == 0)
    return glc_fail(cudaErrorInvalidValue, "glc_matmul_multistage(m, n, k)");
  if (!glc_all_aligned(sizeof(float), a, b, c))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul_multistage(pointers)");
  // The eighteen (bm, warps, bk, stages) instantiations: 128-row tiles at 4 or 8 warps, 256-row
  // tiles at 8 (glc_matmul_blocked_resolve refuses 256 at 4 warps: 32 x 8 results a thread).
  switch (t->bm << 20 | t->warps << 16 | t->bk << 8 | t->stages) {
#define GLC_MULTISTAGE_CASE(BM, WARPS, BK, STAGES) \
  case BM << 20 | WARPS << 16 | BK << 8 | STAGES:  \
    return launch_multistage<BM, WARPS, BK, STAGES>(m, n, k, a, b, c, stream);
    GLC_MULTISTAGE_CASE(128, 8, 8, 2)
    GLC_MULTISTAGE_CASE(128, 8, 8, 3)
    GLC_MULTISTAGE_CASE(128, 8, 8, 4)
    GLC_MULTISTAGE_CASE(128, 8, 16, 2)
    GLC_MULTISTAGE_CASE(128, 8, 16, 3)
    GLC_MULTISTAGE_CASE(128, 8, 16, 4)
    GLC_MULTISTAGE_CASE(128, 4, 8, 2)
    GLC_MULTISTAGE_CASE(128, 4, 8, 3)
    GLC_MULTISTAGE_CASE(128, 4, 8, 4)
    GLC_MULTISTAGE_CASE(128, 4, 16, 2)
    GLC_MULTISTAGE_CASE(128, 4, 16, 3)
    GLC_MULTISTAGE_CASE(128, 4, 16, 4)
    GLC_MULTISTAGE_CASE(256, 8, 8, 2)
    GLC_MULTISTAGE_CASE(256, 8, 8, 3)
    GLC_MULTISTAGE_CASE(256, 8, 8, 4)
    GLC_MULTISTAGE_CASE(256, 8, 16, 2)
    GLC_MULTISTAGE_CASE(256, 8, 16, 3)
    GLC_MULTISTAGE_CASE(256, 8, 16, 4)
#undef GLC_MULTISTAGE_CASE
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
  }
}
