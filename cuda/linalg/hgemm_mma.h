/* The half-precision GEMM ladder's mma.sync rung (cuda/linalg/hgemm_mma.cu): C = A B on the tensor
 * cores through mma.sync.m16n8k16, ldmatrix and swizzled shared tiles, as glc_hgemm's dispatch
 * calls it. Returns a CUDA error code, as cuda/core/gpulab_core.h says. */
#ifndef GPULAB_CUDA_LINALG_HGEMM_MMA_H
#define GPULAB_CUDA_LINALG_HGEMM_MMA_H

#include <stddef.h>

#include "linalg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tunables it compiles, and their defaults (glc_hgemm_mma_resolve fills zeros with these):
 * bm in {64, 128}, bn = 128, bk = 32, warps in {4, 8}, stages in {2, 3, 4}. */
#define GLC_HGEMM_MMA_DEFAULT_BM 128
#define GLC_HGEMM_MMA_DEFAULT_BN 128
#define GLC_HGEMM_MMA_DEFAULT_BK 32
#define GLC_HGEMM_MMA_DEFAULT_WARPS 4
#define GLC_HGEMM_MMA_DEFAULT_STAGES 3

/* *out = *in (null: all zeros) with its zeros filled by the defaults above; returns 0, or
 * cudaErrorInvalidValue when a value is not one the rung compiles or tile, tm or tn is set (the
 * binding refuses those earlier with ValueError). */
GLC_API int glc_hgemm_mma_resolve(const glc_matmul_tunables *in, glc_matmul_tunables *out);

/* C[m x n] = A[m x k] B[k x n], row-major and contiguous; A and B both GLC_F16 or both GLC_BF16,
 * FP32 accumulation, C stored as out_dtype (dtype or GLC_F32). t: the tunables (null or zeros:
 * defaults). Any m, n, k: m or n == 0 launches nothing, k == 0 gives zeros; any row length (16-byte
 * copies where rows allow them, element copies elsewhere). Needs sm_80 or newer. */
GLC_API int glc_hgemm_mma(const glc_matmul_tunables *t, int dtype, int out_dtype, size_t m,
                          size_t n, size_t k, const void *a, const void *b, void *c,
                          glc_stream stream);

#ifdef __cplusplus
}
#endif

#endif
