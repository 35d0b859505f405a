// Variant 13, wmma: the first rung of the half-precision GEMM ladder (issue 34). C = A B for
// float16 or bfloat16 A and B, products on the tensor cores through nvcuda::wmma's
// 16 x 16 x 16 fragments with FP32 accumulators (S4's API, as the CUDA C++ Programming Guide's
// warp matrix functions have it), C rounded once to float16/bfloat16 or kept in float32.
//
// What it does: a block of 8 warps computes a bm x bn tile of C (hgemm_tiles.cuh), stepping
// through k by bk. Each step copies A's bm x bk slice and B's bk x bn slice into padded shared
// tiles through registers (16-byte chunks where the operands allow, zeros past the edges), waits
// at a barrier, lets every warp load its fragments from shared memory and multiply, and waits
// again before the next copy. Nothing overlaps the copies with the products: the tensor cores
// idle while the slices load. That is this rung's lesson; variant 14 overlaps them.
//
// What WMMA cannot do on Hopper: its fragments are mma.sync underneath (sm_80's HMMA), with no
// wgmma (the warpgroup MMA that reads B, and A, straight from shared memory) and no TMA; so no
// WMMA kernel approaches cuBLAS on an H100/H200. Tunables: bm, bn (64, 128), bk (16, 32).
// Row tiles past gridDim.y's 65535 are looped over in the kernel. Needs sm_80.
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

template <typename T, int BM, int BN, int BK>
__global__ void __launch_bounds__(hgemm_threads)
    hgemm_wmma(size_t m, size_t n, size_t k, const T *__restrict__ a, const T *__restrict__ b,
               void *__restrict__ c, int flags) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  using S = hgemm_shape<BM, BN, BK>;
  __shared__ __align__(128) T as[S::A_ELEMS];
  __shared__ __align__(128) T bs[S::B_ELEMS];
  __shared__ __align__(128) float staging[hgemm_threads / 32][16 * 16];
  const int warp = threadIdx.x / 32;
  const int wr = warp / hgemm_warps_n * S::WM, wc = warp % hgemm_warps_n * S::WN;
  const auto *a16 = reinterpret_cast<const uint16_t *>(a);
  const auto *b16 = reinterpret_cast<const uint16_t *>(b);
  const size_t col0 = static_cast<size_t>(blockIdx.x) * BN;
  const int cols_in = extent(n - col0, BN);
  for (size_t row0 = static_cast<size_t>(blockIdx.y) * BM; row0 < m;
       row0 += static_cast<size_t>(gridDim.y) * BM) {
    const int rows_in = extent(m - row0, BM);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[S::FM][S::FN];
#pragma unroll
    for (int i = 0; i < S::FM; ++i)
#pragma unroll
      for (int j = 0; j < S::FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    for (size_t k0 = 0; k0 < k; k0 += BK) {
      const int k_in = extent(k - k0, BK);
      load_tile_sync<BM, BK, S::LDA>(reinterpret_cast<uint16_t *>(as), a16 + row0 * k + k0, k,
                                     rows_in, k_in, flags & hgemm_vector_a);
      load_tile_sync<BK, BN, S::LDB>(reinterpret_cast<uint16_t *>(bs), b16 + k0 * n + col0, n, k_in,
                                     cols_in, flags & hgemm_vector_b);
      __syncthreads();  // the slices are in shared memory for every warp
      mma_slice<T, S>(as, bs, wr, wc, acc);
      __syncthreads();  // every warp is done with them before the next copy
    }
    const bool vector = flags & hgemm_vector_c;
    if (flags & hgemm_out_f32)
      store_warp_tile<float, S>(acc, staging[warp], c, n, row0, col0, rows_in, cols_in, wr, wc,
                                vector);
    else
      store_warp_tile<T, S>(acc, staging[warp], c, n, row0, col0, rows_in, cols_in, wr, wc, vector);
  }
#endif
}

template <typename T, int BM, int BN, int BK>
int launch(size_t m, size_t n, size_t k, const void *a, const void *b, void *c, int flags,
           cudaStream_t stream) {
  dim3 grid;
  if (!tile_grid(m, n, BM, BN, &grid))
    return glc_fail(cudaErrorInvalidValue, "hgemm_wmma(n too large)");
  return glc_launch(hgemm_wmma<T, BM, BN, BK>, "hgemm_wmma", grid, dim3(hgemm_threads), stream, m,
                    n, k, static_cast<const T *>(a), static_cast<const T *>(b), c, flags);
}

template <typename T, int BM, int BN>
int launch_bk(int bk, size_t m, size_t n, size_t k, const void *a, const void *b, void *c,
              int flags, cudaStream_t stream) {
  return bk == 16 ? launch<T, BM, BN, 16>(m, n, k, a, b, c, flags, stream)
                  : launch<T, BM, BN, 32>(m, n, k, a, b, c, flags, stream);
}

template <typename T>
int launch_type(const glc_matmul_tunables *t, size_t m, size_t n, size_t k, const void *a,
                const void *b, void *c, int flags, cudaStream_t stream) {
  if (t->bm == 64)
    return t->bn == 64 ? launch_bk<T, 64, 64>(t->bk, m, n, k, a, b, c, flags, stream)
                       : launch_bk<T, 64, 128>(t->bk, m, n, k, a, b, c, flags, stream);
  return t->bn == 64 ? launch_bk<T, 128, 64>(t->bk, m, n, k, a, b, c, flags, stream)
                     : launch_bk<T, 128, 128>(t->bk, m, n, k, a, b, c, flags, stream);
}

}  // namespace

int glc_hgemm_wmma(const glc_matmul_tunables *t, int dtype, int out_dtype, size_t m, size_t n,
                   size_t k, const void *a, const void *b, void *c, glc_stream stream) {
  int code = hgemm_require_sm80("hgemm_wmma(sm_80+)");
  if (code) return code;
  const int flags = hgemm_flags(out_dtype, k, n, a, b, c);
  const auto s = static_cast<cudaStream_t>(stream);
  return dtype == GLC_BF16 ? launch_type<__nv_bfloat16>(t, m, n, k, a, b, c, flags, s)
                           : launch_type<__half>(t, m, n, k, a, b, c, flags, s);
}
