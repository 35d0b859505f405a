/* The saxpy lab's CPU variants. Plain C, no Python; 0 on success, -1 for an unknown variant or
 * dtype. */
#ifndef GL_SAXPY_CPU_H
#define GL_SAXPY_CPU_H

#include <stddef.h>

#include "cuda/core/gpulab_core.h" /* enum glc_dtype */

/* out = a*x + y. variant 100: serial loop; 101: OpenMP + SIMD. */
int glcpu_saxpy(int variant, int dtype, size_t n, double a, const void *x, const void *y,
                void *out);

/* C = A + B, row-major. variant 100: serial double loop. */
int glcpu_matadd(int variant, int dtype, size_t rows, size_t cols, const void *a, const void *b,
                 void *c);

#endif
