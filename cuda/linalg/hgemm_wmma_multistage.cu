// Variant 14, wmma_multistage: variant 13's block, warps and fragments (hgemm_tiles.cuh), with
// the slices of A and B copied by cp.async into a ring of `stages` shared buffers (2, 3 or 4),
// so that the copies of slices t + 1 .. t + stages - 1 are in flight while the warps multiply
// slice t: one barrier a slice instead of two, and the tensor cores no longer wait for every
// load. Seeded by the CUDA C++ Programming Guide's cp.async pipeline notes and CUTLASS's
// multistage mainloop (sm_80); the code is our own.
//
// The copies are 16-byte cp.async.cg (L2 only) where the operand is 16-byte aligned with rows of
// a multiple of 8 elements, zero-filled past the edges by cp.async's src-size 0; an operand that
// is not (k or n odd, a view one element in) is copied element by element through registers into
// the same ring, in program order before the barrier that publishes its slice. Each slice is one
// commit group (empty past the last slice, so that the count stays fixed), and slice t is waited
// for with cp.async.wait_group stages - 2 before the barrier that opens step t: that barrier also
// says every warp is done with the buffer the step then refills (slice t - 1's).
//
// Tunables: bm, bn (64, 128), bk (16, 32), stages (2, 3, 4); the shared ring is stages x
// 2 (bm (bk + 8) + bk (bn + 8)) bytes (74 KiB at 128, 128, 32, 4), dynamic. The epilogue's FP32
// squares reuse the ring. Needs sm_80.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstddef>
#include <cstdint>

#include "cuda/core/launch.cuh"
#include "hgemm.h"
#include "hgemm_tiles.cuh"

namespace {

template <typename T, int BM, int BN, int BK, int STAGES>
__global__ void __launch_bounds__(hgemm_threads, 1)
    hgemm_wmma_multistage(size_t m, size_t n, size_t k, const T *__restrict__ a,
                          const T *__restrict__ b, void *__restrict__ c, int flags) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  using S = hgemm_shape<BM, BN, BK>;
  static_assert(STAGES * S::STAGE_BYTES >= S::STAGING_BYTES, "the epilogue reuses the ring");
  extern __shared__ __align__(128) unsigned char ring[];
  const int warp = threadIdx.x / 32;
  const int wr = warp / hgemm_warps_n * S::WM, wc = warp % hgemm_warps_n * S::WN;
  const auto *a16 = reinterpret_cast<const uint16_t *>(a);
  const auto *b16 = reinterpret_cast<const uint16_t *>(b);
  const bool vector_a = flags & hgemm_vector_a, vector_b = flags & hgemm_vector_b;
  const size_t col0 = static_cast<size_t>(blockIdx.x) * BN;
  const int cols_in = extent(n - col0, BN);
  const size_t k_tiles = k / BK + (k % BK != 0);
  auto a_stage = [&](unsigned s) { return reinterpret_cast<T *>(ring + s * S::STAGE_BYTES); };
  for (size_t row0 = static_cast<size_t>(blockIdx.y) * BM; row0 < m;
       row0 += static_cast<size_t>(gridDim.y) * BM) {
    const int rows_in = extent(m - row0, BM);
    // Slice `tile` into buffer s, as one commit group (empty past the last slice).
    auto load = [&](unsigned s, size_t tile) {
      if (tile < k_tiles) {
        const size_t k0 = tile * BK;
        const int k_in = extent(k - k0, BK);
        auto *as = reinterpret_cast<uint16_t *>(a_stage(s));
        uint16_t *bs = as + S::A_ELEMS;
        const uint16_t *ga = a16 + row0 * k + k0, *gb = b16 + k0 * n + col0;
        if (vector_a)
          load_tile_async<BM, BK, S::LDA>(as, ga, k, rows_in, k_in, a16);
        else
          load_tile_sync<BM, BK, S::LDA>(as, ga, k, rows_in, k_in, false);
        if (vector_b)
          load_tile_async<BK, BN, S::LDB>(bs, gb, n, k_in, cols_in, b16);
        else
          load_tile_sync<BK, BN, S::LDB>(bs, gb, n, k_in, cols_in, false);
      }
      cp_async_commit();
    };
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[S::FM][S::FN];
#pragma unroll
    for (int i = 0; i < S::FM; ++i)
#pragma unroll
      for (int j = 0; j < S::FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) load(s, s);
    for (size_t t = 0; t < k_tiles; ++t) {
      cp_async_wait<STAGES - 2>();  // this thread's copies of slice t have landed
      __syncthreads();              // everyone's; and everyone is done with slice t - 1's buffer
      load(static_cast<unsigned>((t + STAGES - 1) % STAGES), t + STAGES - 1);
      const T *as = a_stage(static_cast<unsigned>(t % STAGES));
      mma_slice<T, S>(as, as + S::A_ELEMS, wr, wc, acc);
    }
    cp_async_wait<0>();  // only empty groups are left; the ring becomes the epilogue's squares
    __syncthreads();
    float *square = reinterpret_cast<float *>(ring) + warp * 16 * 16;
    const bool vector = flags & hgemm_vector_c;
    if (flags & hgemm_out_f32)
      store_warp_tile<float, S>(acc, square, c, n, row0, col0, rows_in, cols_in, wr, wc, vector);
    else
      store_warp_tile<T, S>(acc, square, c, n, row0, col0, rows_in, cols_in, wr, wc, vector);
    __syncthreads();  // the next row tile's copies overwrite the squares
  }
#endif
}

template <typename T, int BM, int BN, int BK, int STAGES>
int launch(size_t m, size_t n, size_t k, const void *a, const void *b, void *c, int flags,
           cudaStream_t stream) {
  using S = hgemm_shape<BM, BN, BK>;
  constexpr int shared = STAGES * S::STAGE_BYTES;
  dim3 grid;
  if (!tile_grid(m, n, BM, BN, &grid))
    return glc_fail(cudaErrorInvalidValue, "hgemm_wmma_multistage(n too large)");
  auto kernel = hgemm_wmma_multistage<T, BM, BN, BK, STAGES>;
  int code =
      GLC_CUDA(cudaFuncSetAttribute, kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  if (code) return code;
  return glc_launch_shared(kernel, "hgemm_wmma_multistage", grid, dim3(hgemm_threads), shared,
                           stream, m, n, k, static_cast<const T *>(a), static_cast<const T *>(b), c,
                           flags);
}

template <typename T, int BM, int BN, int BK>
int launch_stages(int stages, size_t m, size_t n, size_t k, const void *a, const void *b, void *c,
                  int flags, cudaStream_t s) {
  switch (stages) {
    case 2:
      return launch<T, BM, BN, BK, 2>(m, n, k, a, b, c, flags, s);
    case 3:
      return launch<T, BM, BN, BK, 3>(m, n, k, a, b, c, flags, s);
    default:
      return launch<T, BM, BN, BK, 4>(m, n, k, a, b, c, flags, s);
  }
}

template <typename T, int BM, int BN>
int launch_bk(const glc_matmul_tunables *t, size_t m, size_t n, size_t k, const void *a,
              const void *b, void *c, int flags, cudaStream_t s) {
  return t->bk == 16 ? launch_stages<T, BM, BN, 16>(t->stages, m, n, k, a, b, c, flags, s)
                     : launch_stages<T, BM, BN, 32>(t->stages, m, n, k, a, b, c, flags, s);
}

template <typename T>
int launch_type(const glc_matmul_tunables *t, size_t m, size_t n, size_t k, const void *a,
                const void *b, void *c, int flags, cudaStream_t s) {
  if (t->bm == 64)
    return t->bn == 64 ? launch_bk<T, 64, 64>(t, m, n, k, a, b, c, flags, s)
                       : launch_bk<T, 64, 128>(t, m, n, k, a, b, c, flags, s);
  return t->bn == 64 ? launch_bk<T, 128, 64>(t, m, n, k, a, b, c, flags, s)
                     : launch_bk<T, 128, 128>(t, m, n, k, a, b, c, flags, s);
}

}  // namespace

int glc_hgemm_wmma_multistage(const glc_matmul_tunables *t, int dtype, int out_dtype, size_t m,
                              size_t n, size_t k, const void *a, const void *b, void *c,
                              glc_stream stream) {
  int code = hgemm_require_sm80("hgemm_wmma_multistage(sm_80+)");
  if (code) return code;
  const int flags = hgemm_flags(out_dtype, k, n, a, b, c);
  const auto s = static_cast<cudaStream_t>(stream);
  return dtype == GLC_BF16 ? launch_type<__nv_bfloat16>(t, m, n, k, a, b, c, flags, s)
                           : launch_type<__half>(t, m, n, k, a, b, c, flags, s);
}
