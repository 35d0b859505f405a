/* The linalg lab's CPU variants (cuda/linalg/linalg.h's ids from 100): S2's matvec ladder, the
 * matmul ladder of S0 and S2, and a blocked transpose. Plain C; row-major, C-contiguous operands;
 * dtype GLC_F32 or GLC_F64 (transpose: element_bytes 4 or 8). Each returns 0, or -1 for an id or
 * dtype it does not know. */
#ifndef GL_LINALG_CPU_H
#define GL_LINALG_CPU_H

#include <stddef.h>

/* y[m] = A[m x n] x[n]. */
int glcpu_matvec(int variant, int dtype, size_t m, size_t n, const void *a, const void *x, void *y);
/* C[m x n] = A[m x k] B[k x n]. */
int glcpu_matmul(int variant, int dtype, size_t m, size_t n, size_t k, const void *a, const void *b,
                 void *c);
/* C[m x n] = A[m x k] B[k x n] for float16 or bfloat16 A and B (dtype GLC_F16, GLC_BF16), summed
 * in float32; C of out_dtype, dtype or GLC_F32. Variant 103 (blocked_openmp) only. 0, -1, or
 * GLCPU_NO_MEMORY when its float32 copies could not be allocated. */
#define GLCPU_NO_MEMORY (-3) /* the binding's GL_CPU_NO_MEMORY */
int glcpu_hgemm(int variant, int dtype, int out_dtype, size_t m, size_t n, size_t k, const void *a,
                const void *b, void *c);
/* out[cols x rows] = A[rows x cols].T. */
int glcpu_transpose(int variant, int element_bytes, size_t rows, size_t cols, const void *a,
                    void *out);

#endif
