/* The reduce lab's ladders (variants.c), for its bindings. */
#ifndef GL_REDUCE_VARIANTS_H
#define GL_REDUCE_VARIANTS_H

#include "csrc/core/registry.h"

/* What reduce takes: float32, float64 and int32. */
#define REDUCE_DTYPES (GL_FLOATS | GL_DT(GLC_I32))

extern const gl_ladder gl_ladder_reduce, gl_ladder_dot, gl_ladder_norm2;

#endif
