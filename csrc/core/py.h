/* Python and NumPy, as every file of the binding includes them. NumPy's C API is one table per
 * extension: module.c defines GL_MODULE_MAIN and imports it, every other file uses it. */
#ifndef GL_PY_H
#define GL_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL gpulab_ARRAY_API
#ifndef GL_MODULE_MAIN
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

/* The most dimensions an array of gpulab's may have. */
#define GL_MAX_NDIM 32

#endif
