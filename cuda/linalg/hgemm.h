/* The linalg lab's half-precision GEMM ladder (issue 34, "the Hopper GEMM ladder"): C = A B for
 * float16 or bfloat16 operands on the tensor cores, accumulated in FP32. Operands in device
 * memory: A m x k, B k x n (row-major and contiguous, or given transposed: glc_hgemm's layout),
 * C m x n row-major of out_dtype, which is dtype (C rounded to nearest from the FP32 sums) or
 * GLC_F32. Any m, n, k >= 0: a kernel handles the tiles' tails
 * itself (zero-filled loads, guarded stores); k == 0 gives zeros. Each rung is a launcher
 * glc_hgemm_<rung> in its own file, of glc_hgemm_launcher's signature, with t's tunables
 * resolved (no zeros) by glc_hgemm_resolve; glc_hgemm checks the arguments and dispatches on
 * the variant id (cuda/linalg/linalg.h's enum glc_matmul_variant). Every function returns a
 * CUDA error code. */
#ifndef GPULAB_CUDA_LINALG_HGEMM_H
#define GPULAB_CUDA_LINALG_HGEMM_H

#include <stddef.h>

#include "cuda/core/gpulab_core.h"
#include "linalg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The WMMA rungs' defaults (variants 13 and 14), which glc_hgemm_resolve fills in and the
 * ladder's table shows. Not yet measured on the H200. */
#define GLC_WMMA_DEFAULT_BM 128
#define GLC_WMMA_DEFAULT_BN 128
#define GLC_WMMA_DEFAULT_BK 32
#define GLC_WMMA_DEFAULT_STAGES 3

/* C[m x n] = A[m x k] B[k x n]; dtype GLC_F16 or GLC_BF16, out_dtype dtype or GLC_F32. A and B
 * lie as layout says (linalg.h's glc_matmul_layout bits), C row-major: cuBLASLt (16) takes any
 * layout as its op flags, the wgmma rungs (17, 18, 20) any that glc_hgemm_tma_describes; the
 * WMMA and mma.sync rungs (and the wgmma rungs' mma.sync fallback) read row-major operands,
 * copied there first on the stream (glc_matmul_row_major, matmul_layout.cuh). */
GLC_API int glc_hgemm(int variant, const glc_matmul_tunables *t, int dtype, int out_dtype,
                      int layout, size_t m, size_t n, size_t k, const void *a, const void *b,
                      void *c, glc_stream stream);

/* Fills *t's zeros with the variant's defaults; 0 when every value is one the variant compiles,
 * else cudaErrorInvalidValue (the binding refuses those earlier, naming the tunable). */
GLC_API int glc_hgemm_resolve(int variant, glc_matmul_tunables *t);

#ifdef __cplusplus
}

/* A rung's launcher: m, n, k >= 1, pointers aligned to their elements, t resolved. */
typedef int glc_hgemm_launcher(const glc_matmul_tunables *t, int dtype, int out_dtype, size_t m,
                               size_t n, size_t k, const void *a, const void *b, void *c,
                               glc_stream stream);
glc_hgemm_launcher glc_hgemm_wmma;            /* 13, hgemm_wmma.cu */
glc_hgemm_launcher glc_hgemm_wmma_multistage; /* 14, hgemm_wmma.cu */
/* 16, cublaslt.cu: a launcher that also takes the operands' layout (glc_matmul_layout), given to
 * cuBLASLt as its operations, so that it reads transposed operands in place. */
int glc_hgemm_cublaslt(const glc_matmul_tunables *t, int dtype, int out_dtype, int layout, size_t m,
                       size_t n, size_t k, const void *a, const void *b, void *c,
                       glc_stream stream);
#endif

#endif
