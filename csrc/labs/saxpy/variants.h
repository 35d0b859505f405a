/* The saxpy lab's ladders (variants.c), for its bindings. */
#ifndef GL_SAXPY_VARIANTS_H
#define GL_SAXPY_VARIANTS_H

#include "csrc/core/registry.h"

extern const gl_ladder gl_ladder_saxpy, gl_ladder_matadd;

#endif
