/* Device arrays of other libraries (CuPy, PyTorch, Numba) as gpulab.DeviceArray views: the CUDA
 * Array Interface (v3) and DLPack import, and the classification of operands. */
#ifndef GL_INTEROP_H
#define GL_INTEROP_H

#include "devarray.h"

/* 1 for a gpulab.DeviceArray or an object that exports CUDA memory (CAI v3, DLPack on a CUDA
 * device), 0 otherwise. Never raises. */
int gl_is_device_operand(PyObject *obj);
/* A new reference to a DeviceArray for obj (itself, or a zero-copy view). Foreign data is made
 * ready on stream before it is used. */
gl_DeviceArrayObject *gl_as_device_array(PyObject *obj, const char *argname, glc_stream stream);
/* Around the imports of one call's operands: a second operand from the same CuPy or torch stream
 * is then ordered by the first's event. Nothing else may run between the two. */
void gl_import_operands_begin(void);
void gl_import_operands_end(void);
/* gl.multi's import: as gl_as_device_array, but obj may live on any device (the view's device
 * says which) and nothing is ordered on a stream: the caller waits for that device first. */
gl_DeviceArrayObject *gl_as_device_array_anywhere(PyObject *obj, const char *argname);
/* Whether the n operands are device arrays (*on_device = 1) or NumPy arrays (0). TypeError for
 * anything else, ValueError for a mix; messages use names. */
int gl_classify_operands(int n, PyObject *const *inputs, const char *const *names, int *on_device);

/* Python: from_dlpack, as_device. */
extern PyMethodDef gl_interop_methods[];

#endif
