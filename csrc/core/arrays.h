/* Python's ways to make and move device arrays: to_device, empty, zeros, as_device,
 * from_dlpack, and the transfer paths one at a time for benchmarks (_h2d, _d2h). */
#ifndef GL_ARRAYS_H
#define GL_ARRAYS_H

#include "py.h"

extern PyMethodDef gl_arrays_methods[];

#endif
