/* The sort lab's ladders (variants.c), for its bindings. */
#ifndef GL_SORT_VARIANTS_H
#define GL_SORT_VARIANTS_H

#include "csrc/core/registry.h"

/* The keys the lab sorts: int32, uint32, int64, float32 and float64. */
#define SORT_DTYPES (GL_FLOATS | GL_DT(GLC_I32) | GL_DT(GLC_U32) | GL_DT(GLC_I64))

extern const gl_ladder gl_ladder_sort, gl_ladder_argsort, gl_ladder_sort_pairs;

#endif
