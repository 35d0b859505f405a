/* The n-body lab's ladder (variants.c), for its bindings. */
#ifndef GL_NBODY_VARIANTS_H
#define GL_NBODY_VARIANTS_H

#include "csrc/core/registry.h"

extern const gl_ladder gl_ladder_nbody;

#endif
