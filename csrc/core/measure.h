/* The primitives behind gl.ceilings() and gl.bench(), and the pool's accounting, for Python. */
#ifndef GL_MEASURE_H
#define GL_MEASURE_H

#include "py.h"

extern PyMethodDef gl_measure_methods[];

#endif
