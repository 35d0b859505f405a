/* CudaError and NoDeviceError: every CUDA failure reaches Python as one of these. */
#ifndef GL_ERRORS_H
#define GL_ERRORS_H

#include "py.h"

extern PyObject *gl_CudaError;
extern PyObject *gl_NoDeviceError;
int gl_errors_init(PyObject *module);
/* Raises CudaError for a failed glc_* call; always returns NULL. */
PyObject *gl_raise_cuda(int code);
/* Raises NoDeviceError for the reason the GPU could not start, naming op's CPU variants when op
 * is not NULL; always returns NULL. */
PyObject *gl_raise_no_device(int code, const char *op);

#endif
