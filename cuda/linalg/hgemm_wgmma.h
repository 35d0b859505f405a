/* The half-precision GEMM ladder's Hopper rungs (cuda/linalg/hgemm_wgmma.cu): C = A B on the
 * tensor cores through wgmma.mma_async, with A and B loaded by the TMA into 128-byte-swizzled
 * shared stages, as glc_hgemm's dispatch calls them. A and B are read in place whichever way
 * they lie (glc_matmul_layout: wgmma reads 16-bit operands K- or MN-major). Rung 3
 * (glc_hgemm_wgmma): two warpgroups that both issue wgmma, one thread of them the TMA loads, a
 * block barrier a k slice. Rung 4 (glc_hgemm_wgmma_ws): warp-specialized (a producer warpgroup, two
 * consumer warpgroups, full and empty mbarriers a stage) and persistent over the tiles. Returns a
 * CUDA error code, as cuda/core/gpulab_core.h says.
 *
 * Both need a device of compute capability 9.0 and this file's sm_90a build; elsewhere they
 * return cudaErrorNotSupported. They also return cudaErrorNotSupported, naming
 * "glc_hgemm_wgmma(A's and B's rows % 8, 16-byte aligned A and B)", where the TMA cannot describe
 * the operands (glc_hgemm_tma_describes): the dispatch asks that first and runs the mma.sync rung
 * (glc_hgemm_mma, any shape) instead.
 *
 * The same file runs matmul's float32 rungs `tf32` (glc_sgemm_wgmma_tf32, issue 34's rung 6) and
 * `tf32_cluster` (glc_sgemm_wgmma_tf32_cluster): rung 4's and rung 5's kernels on float
 * operands rounded to TF32 by the tensor cores, glc_matmul's dispatch calling them; where they
 * cannot run, that dispatch runs tf32_wmma's kernel. */
#ifndef GPULAB_CUDA_LINALG_HGEMM_WGMMA_H
#define GPULAB_CUDA_LINALG_HGEMM_WGMMA_H

#include <stddef.h>
#include <stdint.h>

#include "linalg.h"

/* Whether the TMA can describe A (m x k) and B (k x n) of 2-byte elements lying as layout says
 * (cuda/linalg/linalg.h's glc_matmul_layout bits): rows of a multiple of 16 bytes (A's rows are
 * k elements, or m for GLC_MATMUL_A_T; B's are n, or k for GLC_MATMUL_B_T) and 16-byte aligned
 * bases. */
static inline int glc_hgemm_tma_describes(int layout, size_t m, size_t n, size_t k, const void *a,
                                          const void *b) {
  const size_t a_row = layout & GLC_MATMUL_A_T ? m : k, b_row = layout & GLC_MATMUL_B_T ? k : n;
  return a_row % 8 == 0 && b_row % 8 == 0 && (uintptr_t)a % 16 == 0 && (uintptr_t)b % 16 == 0;
}

/* The TF32 rungs' k limit: an operand that is not K-major (B as it lies, or A given as A^T) is
 * transposed by glc_transpose's wide rung, whose grid has one row of blocks a 64 rows of its
 * input (k rows either way), at most 65535. */
#define GLC_SGEMM_WGMMA_MAX_K ((size_t)65535 * 64)

/* Whether the TF32 rungs can run float32 A and B lying as layout says: wgmma takes 32-bit
 * operands K-major only, so A as it lies (rows of k) and B given as B^T (rows of k) are read in
 * place through the TMA, which needs rows of a multiple of 16 bytes (k % 4 == 0) and a 16-byte
 * aligned base; A given as A^T and B as it lies are first transposed into aligned workspaces
 * (k within the transpose's grid). */
static inline int glc_sgemm_tma_describes(int layout, size_t k, const void *a, const void *b) {
  return k % 4 == 0 && k <= GLC_SGEMM_WGMMA_MAX_K &&
         ((layout & GLC_MATMUL_A_T) || (uintptr_t)a % 16 == 0) &&
         (!(layout & GLC_MATMUL_B_T) || (uintptr_t)b % 16 == 0);
}

#ifdef __cplusplus
extern "C" {
#endif

/* The tunables they compile, and their defaults (glc_hgemm_wgmma_resolve fills zeros with
 * these): bm = 128 (two warpgroups of 64 rows), bn in {128, 256} (wgmma's n), bk = 64 (one
 * 128-byte swizzled row of k: 64 halves; the TF32 rung's is the same row, 32 floats), warps = 8
 * (the consumer warps; rung 4 adds a producer warpgroup), stages in {3, 4, 5} (at bn = 256 a
 * stage is 48 KiB: 3 or 4). */
#define GLC_HGEMM_WGMMA_DEFAULT_BM 128
#define GLC_HGEMM_WGMMA_DEFAULT_BN 256
#define GLC_HGEMM_WGMMA_DEFAULT_BK 64
#define GLC_HGEMM_WGMMA_DEFAULT_WARPS 8
#define GLC_HGEMM_WGMMA_DEFAULT_STAGES 4

/* *out = *in (null: all zeros) with its zeros filled by the defaults above; returns 0, or
 * cudaErrorInvalidValue when a value is not one the rungs compile (or bn = 256 with 5 stages)
 * or tile, tm or tn is set. */
GLC_API int glc_hgemm_wgmma_resolve(const glc_matmul_tunables *in, glc_matmul_tunables *out);

/* C[m x n] = A[m x k] B[k x n], C row-major and contiguous, A and B lying as layout says
 * (glc_matmul_layout bits: each row-major, or given as its transpose's storage, read in place);
 * A and B both GLC_F16 or both GLC_BF16,
 * FP32 accumulation, C stored as out_dtype (dtype or GLC_F32). t: the tunables (null or zeros:
 * defaults). m or n == 0 launches nothing, k == 0 gives zeros; otherwise A's rows (k elements,
 * or m for A^T) and B's (n, or k for B^T) a multiple of 8 and 16-byte aligned A and B (m, n and
 * k tails need no multiple of the tile), else cudaErrorNotSupported (see above). */
GLC_API int glc_hgemm_wgmma(const glc_matmul_tunables *t, int dtype, int out_dtype, int layout,
                            size_t m, size_t n, size_t k, const void *a, const void *b, void *c,
                            glc_stream stream);
GLC_API int glc_hgemm_wgmma_ws(const glc_matmul_tunables *t, int dtype, int out_dtype, int layout,
                               size_t m, size_t n, size_t k, const void *a, const void *b, void *c,
                               glc_stream stream);
/* Rung 5 (glc_hgemm_wgmma_cluster): rung 4's warp specialization in clusters of two blocks along
 * m that share B's tile through TMA multicast, persistent over 256 x bn cluster tiles in the
 * grouped order, C stored through shared memory by the TMA (where C and its rows are 16-byte
 * aligned; else from registers). The same tunables and shape rule; cudaErrorNotSupported, naming
 * "hgemm_wgmma_cluster_kernel(clusters of 2)", where the device places no cluster of two. */
GLC_API int glc_hgemm_wgmma_cluster(const glc_matmul_tunables *t, int dtype, int out_dtype,
                                    int layout, size_t m, size_t n, size_t k, const void *a,
                                    const void *b, void *c, glc_stream stream);

/* C[m x n] = A[m x k] B[k x n] for contiguous float32 A, B and C (row-major; A and B lying as
 * layout says) on rung 4's kernel (hgemm_wgmma_ws_kernel, float operands) through
 * wgmma.m64nNk8.f32.tf32.tf32: the tensor cores read each float's top 19 bits (TF32: 10
 * mantissa bits, the rest ignored: truncation), FP32 accumulation. wgmma takes 32-bit operands
 * K-major only, so B as it lies and A given as A^T are first transposed (one read and one write
 * of each) into workspaces from the stream-ordered pool, freed on the stream after the kernel;
 * A as it lies and B given as B^T are read in place. t: the tunables of glc_hgemm_wgmma_resolve
 * (bn 128 or 256, stages 3-5, not 5 at bn = 256; the stage bytes are the halves' own: 32 floats
 * of k a 128-byte row). m or n == 0 launches nothing, k == 0 gives zeros; otherwise it needs
 * glc_sgemm_tma_describes(layout, k, a, b) (any m and n), else cudaErrorNotSupported naming
 * "glc_sgemm_wgmma_tf32(k % 4, k <= 4194240, 16-byte aligned A and B^T read in place)":
 * glc_matmul's dispatch asks first and runs the tf32_wmma rung for those. Needs compute
 * capability 9.0 and this file's sm_90a build, as above. */
GLC_API int glc_sgemm_wgmma_tf32(const glc_matmul_tunables *t, int layout, size_t m, size_t n,
                                 size_t k, const float *a, const float *b, float *c,
                                 glc_stream stream);
/* The same on rung 5's kernel (hgemm_wgmma_cluster_kernel, float operands): clusters of two
 * blocks sharing B^T's tile by multicast, C stored by the TMA where it is 16-byte aligned and
 * n % 4 == 0. The same tunables, checks, workspaces and errors (named
 * "glc_sgemm_wgmma_tf32_cluster(...)"), and "hgemm_wgmma_cluster_kernel(clusters of 2)" as
 * rung 5's. */
GLC_API int glc_sgemm_wgmma_tf32_cluster(const glc_matmul_tunables *t, int layout, size_t m,
                                         size_t n, size_t k, const float *a, const float *b,
                                         float *c, glc_stream stream);

#ifdef __cplusplus
}
#endif

#endif
