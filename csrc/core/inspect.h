/* The kernel facts behind gl.inspect, for Python: the launches one call makes, and each
 * kernel's compiled resources and occupancy. */
#ifndef GL_INSPECT_H
#define GL_INSPECT_H

#include "py.h"

extern PyMethodDef gl_inspect_methods[];

#endif
