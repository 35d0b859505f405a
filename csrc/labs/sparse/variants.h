/* The sparse lab's ladders (variants.c), for its bindings. */
#ifndef GL_SPARSE_VARIANTS_H
#define GL_SPARSE_VARIANTS_H

#include "csrc/core/registry.h"

#define GL_INDEX_DTYPES (GL_DT(GLC_I32) | GL_DT(GLC_I64))

extern const gl_ladder gl_ladder_spmv, gl_ladder_spmm, gl_ladder_cg;

#endif
