/* The stencil lab's CPU variants (cuda/stencil/stencil.h's ids from 100): the stencil, serial
 * and over OpenMP threads with SIMD lanes along x, and the serial Jacobi solver. Plain C on host
 * arrays; dtype GLC_F32 or GLC_F64. Each returns 0, or -1 for an id, dtype or problem it does not
 * take; the solver also GLC_INTERRUPTED (Ctrl-C, cuda/core/interrupt.h). */
#ifndef GL_STENCIL_CPU_H
#define GL_STENCIL_CPU_H

#include "cuda/stencil/stencil.h"

int glcpu_stencil(int variant, int dtype, const glc_stencil_problem *problem, const void *u,
                  void *out);
/* glc_jacobi's contract on host arrays. */
int glcpu_jacobi(int variant, int dtype, int ndim, const size_t *shape, double h, size_t max_sweeps,
                 double tol, size_t check_every, const void *f, const void *u0, void *u,
                 double *residuals, size_t capacity, glc_jacobi_result *result);

#endif
