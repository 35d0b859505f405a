/* The concepts lab's ladders (variants.c), for its bindings. */
#ifndef GL_CONCEPTS_VARIANTS_H
#define GL_CONCEPTS_VARIANTS_H

#include "csrc/core/registry.h"

extern const gl_ladder gl_ladder_divergence, gl_ladder_warp_reduce, gl_ladder_counter,
    gl_ladder_sin, gl_ladder_lookup;

#endif
