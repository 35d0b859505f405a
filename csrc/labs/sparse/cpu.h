/* The sparse lab's CPU variants (cuda/sparse/sparse.h's ids from 100): CSR SpMV and SpMM, and CG,
 * serial and over OpenMP threads. Plain C on host arrays described by a glc_csr. Each returns 0, or
 * -1 for an id or dtype it does not know. */
#ifndef GL_SPARSE_CPU_H
#define GL_SPARSE_CPU_H

#include "cuda/sparse/sparse.h"

/* y[rows] = A x[cols]. */
int glcpu_spmv(int variant, const glc_csr *a, const void *x, void *y);
/* C[rows x k] = A B[cols x k], row-major. */
int glcpu_spmm(int variant, const glc_csr *a, size_t k, const void *b, void *c);

/* Conjugate gradients, variant 100 (glc_cg's contract, on host arrays); also GLC_INTERRUPTED
 * (Ctrl-C, cuda/core/interrupt.h), x then holds a partial solve. */
int glcpu_cg(int variant, const glc_csr *a, const void *b, const void *x0, void *x,
             const glc_cg_options *o, glc_cg_result *res);

#endif
