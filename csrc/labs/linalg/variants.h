/* The linalg lab's ladders (variants.c), for its bindings. */
#ifndef GL_LINALG_VARIANTS_H
#define GL_LINALG_VARIANTS_H

#include "csrc/core/registry.h"

/* transpose moves 4- and 8-byte elements of any of these */
#define TRANSPOSE_DTYPES (GL_FLOATS | GL_DT(GLC_I32) | GL_DT(GLC_I64))

extern const gl_ladder gl_ladder_matvec, gl_ladder_matmul, gl_ladder_transpose;

#endif
