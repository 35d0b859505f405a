/* Inside the linalg lab: the register-blocked SGEMM rungs (variants 4-8, 10 and 12,
 * cuda/linalg/matmul_register.cu, matmul_warp.cu, matmul_tf32.cu, matmul_multistage.cu) as
 * glc_matmul's dispatch calls them. float32 only; t holds resolved tunables (no zeros); returns a
 * CUDA error code. */
#ifndef GPULAB_CUDA_LINALG_MATMUL_BLOCKED_H
#define GPULAB_CUDA_LINALG_MATMUL_BLOCKED_H

#include <cuda_runtime.h>
#include <stddef.h>

#include "linalg.h"

int glc_matmul_register(int variant, const glc_matmul_tunables *t, size_t m, size_t n, size_t k,
                        const float *a, const float *b, float *c, cudaStream_t stream);
int glc_matmul_warp(int variant, const glc_matmul_tunables *t, size_t m, size_t n, size_t k,
                    const float *a, const float *b, float *c, cudaStream_t stream);
int glc_matmul_multistage(const glc_matmul_tunables *t, size_t m, size_t n, size_t k,
                          const float *a, const float *b, float *c, cudaStream_t stream);
int glc_matmul_tf32(const glc_matmul_tunables *t, size_t m, size_t n, size_t k, const float *a,
                    const float *b, float *c, cudaStream_t stream);
/* The tunables each of these variants accepts, and their defaults (for the table and checks):
 * fills *t's zeros with the defaults; returns 0, or cudaErrorInvalidValue naming nothing when
 * a value is not one the variant compiles (the binding refuses those earlier with ValueError). */
int glc_matmul_blocked_resolve(int variant, glc_matmul_tunables *t);

#endif
