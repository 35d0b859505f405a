/* The scan lab's ladders (variants.c), for its bindings. */
#ifndef GL_SCAN_VARIANTS_H
#define GL_SCAN_VARIANTS_H

#include "csrc/core/registry.h"

/* What the lab takes: float32, float64, int32 and int64. */
#define SCAN_DTYPES (GL_FLOATS | GL_DT(GLC_I32) | GL_DT(GLC_I64))

extern const gl_ladder gl_ladder_scan, gl_ladder_compact, gl_ladder_nonzero;

#endif
