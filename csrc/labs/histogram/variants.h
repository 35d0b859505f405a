/* The histogram lab's ladders (variants.c), for its bindings. */
#ifndef GL_HISTOGRAM_VARIANTS_H
#define GL_HISTOGRAM_VARIANTS_H

#include "csrc/core/registry.h"

/* What histogram takes: float32 and float64 (np.histogram's binning) and the integer types of
 * the bincount-like path. */
#define HISTOGRAM_INT_DTYPES \
  (GL_DT(GLC_U8) | GL_DT(GLC_I8) | GL_DT(GLC_U16) | GL_DT(GLC_I16) | GL_DT(GLC_I32))
#define HISTOGRAM_DTYPES (GL_FLOATS | HISTOGRAM_INT_DTYPES)
/* What histogram_rgb takes: uint8 images and float32 images in [0, 1). */
#define HISTOGRAM_RGB_DTYPES (GL_DT(GLC_U8) | GL_DT(GLC_F32))

extern const gl_ladder gl_ladder_histogram, gl_ladder_histogram_rgb;

#endif
