/* The stencil lab's ladders (variants.c), for its bindings. */
#ifndef GL_STENCIL_VARIANTS_H
#define GL_STENCIL_VARIANTS_H

#include "csrc/core/registry.h"

extern const gl_ladder gl_ladder_stencil, gl_ladder_jacobi;

#endif
