/* The reduce lab's CPU variants, and the CPU path of dot and norm2. Plain C, no Python; 0 on
 * success, -1 for an unknown variant, op or dtype. */
#ifndef GL_REDUCE_CPU_H
#define GL_REDUCE_CPU_H

#include <stddef.h>

#include "cuda/reduce/reduce.h" /* enum glc_dtype, enum glc_reduce_op */

/* *result = op(x) (enum glc_reduce_op) over n elements. variant 100: serial, 101: pairwise,
 * 102: Kahan (float sums only), 103: OpenMP + SIMD. result is int64 for int32 sums, else the
 * input's type. n == 0 is only defined for sums (0). */
int glcpu_reduce(int variant, int op, int dtype, size_t n, const void *x, void *result);

/* sum x*y and sqrt(sum x*x) with float64 accumulation, OpenMP + SIMD; result in the input's
 * type (GLC_F32 or GLC_F64). */
int glcpu_dot(int dtype, size_t n, const void *x, const void *y, void *result);
int glcpu_norm2(int dtype, size_t n, const void *x, void *result);

#endif
