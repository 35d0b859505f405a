/* The image lab's ladders (variants.c), for its bindings. */
#ifndef GL_IMAGE_VARIANTS_H
#define GL_IMAGE_VARIANTS_H

#include "csrc/core/registry.h"

/* the filters take float32 and uint8 images */
#define FILTER_DTYPES (GL_DT(GLC_F32) | GL_DT(GLC_U8))

/* filter2d, gaussian and box share one ladder of variants (the filter's weights are all that
 * differs); mandelbrot has its own. */
extern const gl_ladder gl_ladder_filter2d, gl_ladder_gaussian, gl_ladder_box, gl_ladder_mandelbrot;

#endif
