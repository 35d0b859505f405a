// Matmul variants 0-3 and the entry of the whole SGEMM ladder: C = A B for row-major float32
// (S3 2.3 and 4.2, the usual ladder's first rungs). Each thread computes one element of C;
// what changes from rung to rung is where the operands come from. The register-blocked rungs
// (4-8, 10, 12) live in matmul_register.cu, matmul_warp.cu, matmul_tf32.cu and
// matmul_multistage.cu (matmul_blocked.h);
// cuBLAS (9, 11) in cublas.cu; TF32 on Hopper's wgmma (19, 21) in hgemm_wgmma.cu, beside the half
// types' rungs whose kernel it shares. Every kernel takes any M, N, K: loads past the edge read
// zeros, stores past it are skipped. Operands given transposed (glc_matmul's layout): cuBLAS
// and tf32 read them in place; every other rung reads row-major copies (matmul_layout.cuh).
#include <climits>

#include "cublas.cuh"
#include "cuda/core/launch.cuh"
#include "hgemm_wgmma.h"
#include "linalg.h"
#include "matmul_blocked.h"
#include "matmul_layout.cuh"

namespace {

// C[row][col] of one thread, when it lies inside C.
__device__ void dot_one(const float *a, const float *b, float *c, int m, int n, int k, int row,
                        int col) {
  if (row >= m || col >= n) return;
  float sum = 0.0f;
  for (int p = 0; p < k; ++p)
    sum += a[static_cast<size_t>(row) * k + p] * b[static_cast<size_t>(p) * n + col];
  c[static_cast<size_t>(row) * n + col] = sum;
}

// Variant 0, naive: threadIdx.x runs along M, so the 32 threads of a warp hold 32 rows: each
// step reads 32 elements of A K apart (32 sectors for 128 useful bytes) and writes C N apart.
// B[p][col] is the same address for the warp (a broadcast).
__global__ void sgemm_naive(const float *a, const float *b, float *c, int m, int n, int k) {
  dot_one(a, b, c, m, n, k, blockIdx.x * blockDim.x + threadIdx.x,
          blockIdx.y * blockDim.y + threadIdx.y);
}

// Variant 1, coalesced: the same loop with threadIdx.x along N. A warp now reads 32 consecutive
// elements of a row of B (one 128-byte line) and writes 32 consecutive elements of C; A[row][p]
// becomes the broadcast.
__global__ void sgemm_coalesced(const float *a, const float *b, float *c, int m, int n, int k) {
  dot_one(a, b, c, m, n, k, blockIdx.y * blockDim.y + threadIdx.y,
          blockIdx.x * blockDim.x + threadIdx.x);
}

// Variants 2 and 3: TILE x TILE blocks stage a TILE x TILE tile of A and one of B in shared
// memory, so that each element loaded from global memory is used TILE times instead of once
// (S3 4.2). Thread (tx, ty) loads A[row][k0 + tx] and B[k0 + ty][col], both coalesced along a
// row. A's tile is stored transposed, k-major (as_t[p][r]), the layout the register-blocked
// rungs read it in: a warp's stores then walk a column of as_t, TILE + PAD words apart. With
// PAD = 0 (variant 2) a column of a 32-wide tile lies in one bank, a 32-way conflict on every
// store of A; PAD = 1 (variant 3) makes a row TILE + 1 words long and spreads the column over
// all 32 banks. Elements past the edge are loaded as zeros, so the inner loop needs no guard.
template <int TILE, int PAD>
__device__ void tiled_product(const float *a, const float *b, float *c, int m, int n, int k) {
  __shared__ float as_t[TILE][TILE + PAD];
  __shared__ float bs[TILE][TILE + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float sum = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    const int a_col = k0 + tx, b_row = k0 + ty;
    as_t[tx][ty] = row < m && a_col < k ? a[static_cast<size_t>(row) * k + a_col] : 0.0f;
    bs[ty][tx] = b_row < k && col < n ? b[static_cast<size_t>(b_row) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < TILE; ++p) sum += as_t[p][ty] * bs[p][tx];
    __syncthreads();  // the next tile overwrites what this one read
  }
  if (row < m && col < n) c[static_cast<size_t>(row) * n + col] = sum;
}

// Variant 2, shared tiles (A's tile stored with the bank conflicts above).
template <int TILE>
__global__ void sgemm_shared_tiles(const float *a, const float *b, float *c, int m, int n, int k) {
  tiled_product<TILE, 0>(a, b, c, m, n, k);
}

// Variant 3, padded tiles: the same with one word of padding per row, conflict-free.
template <int TILE>
__global__ void sgemm_padded_tiles(const float *a, const float *b, float *c, int m, int n, int k) {
  tiled_product<TILE, 1>(a, b, c, m, n, k);
}

template <int TILE>
int launch_simple(int variant, int m, int n, int k, const float *a, const float *b, float *c,
                  cudaStream_t s) {
  const dim3 block(TILE, TILE);
  const unsigned along_m = static_cast<unsigned>((m + TILE - 1) / TILE);
  const unsigned along_n = static_cast<unsigned>((n + TILE - 1) / TILE);
  const unsigned along_y = variant == GLC_MATMUL_NAIVE ? along_n : along_m;
  if (along_y > 65535u) return glc_fail(cudaErrorInvalidValue, "glc_matmul(grid y past 65535)");
  switch (variant) {
    case GLC_MATMUL_NAIVE:
      return glc_launch(sgemm_naive, "sgemm_naive", dim3(along_m, along_n), block, s, a, b, c, m, n,
                        k);
    case GLC_MATMUL_COALESCED:
      return glc_launch(sgemm_coalesced, "sgemm_coalesced", dim3(along_n, along_m), block, s, a, b,
                        c, m, n, k);
    case GLC_MATMUL_SHARED_TILES:
      return glc_launch(sgemm_shared_tiles<TILE>, "sgemm_shared_tiles", dim3(along_n, along_m),
                        block, s, a, b, c, m, n, k);
    default:
      return glc_launch(sgemm_padded_tiles<TILE>, "sgemm_padded_tiles", dim3(along_n, along_m),
                        block, s, a, b, c, m, n, k);
  }
}

int matmul_simple(int variant, int tile, int m, int n, int k, const float *a, const float *b,
                  float *c, cudaStream_t s) {
  switch (tile) {
    case 8:
      return launch_simple<8>(variant, m, n, k, a, b, c, s);
    case 16:
      return launch_simple<16>(variant, m, n, k, a, b, c, s);
    case 32:
      return launch_simple<32>(variant, m, n, k, a, b, c, s);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_matmul(tile)");
  }
}

bool is_float32_only(int variant) {
  return variant != GLC_MATMUL_CUBLAS;  // the CUDA ladder is float32; cuBLAS takes float64 too
}

}  // namespace

extern "C" int glc_matmul(int variant, const glc_matmul_tunables *tunables, int dtype, int layout,
                          size_t m, size_t n, size_t k, const void *a, const void *b, void *c,
                          glc_stream stream) {
  glc_matmul_tunables t = tunables ? *tunables : glc_matmul_tunables{};
  if (layout & ~(GLC_MATMUL_A_T | GLC_MATMUL_B_T))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul(layout)");
  switch (variant) {
    case GLC_MATMUL_NAIVE:
    case GLC_MATMUL_COALESCED:
    case GLC_MATMUL_SHARED_TILES:
    case GLC_MATMUL_PADDED_TILES:
      if (t.tile == 0) t.tile = 32;
      if (t.tile != 8 && t.tile != 16 && t.tile != 32)
        return glc_fail(cudaErrorInvalidValue, "glc_matmul(tile)");
      break;
    case GLC_MATMUL_REGISTER_1D:
    case GLC_MATMUL_REGISTER_2D:
    case GLC_MATMUL_VECTORIZED:
    case GLC_MATMUL_WARP_TILING:
    case GLC_MATMUL_DOUBLE_BUFFERED:
    case GLC_MATMUL_TF32_WMMA:
    case GLC_MATMUL_MULTISTAGE:
      if (glc_matmul_blocked_resolve(variant, &t) != 0)
        return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
      break;
    case GLC_MATMUL_CUBLAS:
    case GLC_MATMUL_CUBLAS_TF32:
      break;
    case GLC_MATMUL_TF32:
    case GLC_MATMUL_TF32_CLUSTER:
      if (glc_hgemm_wgmma_resolve(&t, &t) != 0)
        return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
      break;
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_matmul(variant)");
  }
  if (dtype != GLC_F32 && (dtype != GLC_F64 || is_float32_only(variant)))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul(dtype)");
  // the kernels index with int: every dimension, and each operand's element count, must fit (an
  // operand given transposed has the same count, and its row-major copy is indexed alike)
  const size_t most = static_cast<size_t>(INT_MAX);
  if (m > most || n > most || k > most || (m && k > most / m) || (k && n > most / k) ||
      (m && n > most / m))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul(sizes past 2^31 elements)");
  if (m == 0 || n == 0) return cudaSuccess;
  const size_t element = dtype == GLC_F64 ? sizeof(double) : sizeof(float);
  if (!glc_all_aligned(element, c) || (k && !glc_all_aligned(element, a, b)))
    return glc_fail(cudaErrorInvalidValue, "glc_matmul(alignment)");
  // k == 0: an empty sum, C = 0, with no kernel and no library call
  if (k == 0) return glc_memset_async(c, 0, m * n * element, stream);
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  auto *fc = static_cast<float *>(c);
  // the rungs that read the operands as they lie, transposed or not
  switch (variant) {
    case GLC_MATMUL_CUBLAS:
      return glc_cublas_gemm(dtype, false, layout, m, n, k, a, b, c, s);
    case GLC_MATMUL_CUBLAS_TF32:
      return glc_cublas_gemm(dtype, true, layout, m, n, k, a, b, c, s);
    case GLC_MATMUL_TF32:
    case GLC_MATMUL_TF32_CLUSTER:
      // Where the TMA can take A and B as they lie (glc_sgemm_tma_describes: k % 4 == 0, k
      // within the transpose's grid, the operands it reads in place 16-byte aligned); elsewhere
      // the other TF32 tensor-core rung, tf32_wmma, at its defaults, on row-major operands below.
      if (glc_sgemm_tma_describes(layout, k, a, b))
        return (variant == GLC_MATMUL_TF32 ? glc_sgemm_wgmma_tf32 : glc_sgemm_wgmma_tf32_cluster)(
            &t, layout, m, n, k, static_cast<const float *>(a), static_cast<const float *>(b), fc,
            stream);
      t = glc_matmul_tunables{};
      if (glc_matmul_blocked_resolve(GLC_MATMUL_TF32_WMMA, &t) != 0)
        return glc_fail(cudaErrorInvalidValue, "glc_matmul(tunables)");
      break;
    default:
      break;
  }
  // every other rung reads row-major operands: those given transposed are copied so first
  GlcRowMajorOperands rows;
  int code = glc_matmul_row_major(layout, static_cast<int>(element), m, n, k, a, b, stream, &rows);
  if (code) return code;
  const auto *fa = static_cast<const float *>(rows.a);
  const auto *fb = static_cast<const float *>(rows.b);
  switch (variant) {
    case GLC_MATMUL_REGISTER_1D:
    case GLC_MATMUL_REGISTER_2D:
    case GLC_MATMUL_VECTORIZED:
      return glc_matmul_register(variant, &t, m, n, k, fa, fb, fc, s);
    case GLC_MATMUL_WARP_TILING:
    case GLC_MATMUL_DOUBLE_BUFFERED:
      return glc_matmul_warp(variant, &t, m, n, k, fa, fb, fc, s);
    case GLC_MATMUL_TF32_WMMA:
    case GLC_MATMUL_TF32:  // the fallback of tf32 and tf32_cluster: t holds tf32_wmma's defaults
    case GLC_MATMUL_TF32_CLUSTER:
      return glc_matmul_tf32(&t, m, n, k, fa, fb, fc, s);
    case GLC_MATMUL_MULTISTAGE:
      return glc_matmul_multistage(&t, m, n, k, fa, fb, fc, s);
    default:
      return matmul_simple(variant, t.tile, static_cast<int>(m), static_cast<int>(n),
                           static_cast<int>(k), fa, fb, fc, s);
  }
}
