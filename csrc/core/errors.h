/* CudaError, NoDeviceError and OutOfMemoryError: every CUDA failure reaches Python as one of
 * these. A loop stopped by Ctrl-C (GLC_INTERRUPTED) reaches it as the signal handler's
 * exception instead. */
#ifndef GL_ERRORS_H
#define GL_ERRORS_H

#include "py.h"

extern PyObject *gl_CudaError;
extern PyObject *gl_NoDeviceError;
extern PyObject *gl_OutOfMemoryError;
/* Adds the exceptions to module, and sets up interrupt.h's check. */
int gl_errors_init(PyObject *module);
/* Raises CudaError for a failed glc_* call, OutOfMemoryError for cudaErrorMemoryAllocation
 * (for GLC_INTERRUPTED: leaves the handler's exception, see interrupt.h); always returns
 * NULL. */
PyObject *gl_raise_cuda(int code);
/* bytes in binary units, e.g. "139.2 GiB" (a double: a padded size may pass size_t). */
void gl_format_bytes(char *text, size_t size, double bytes);
/* Raises NoDeviceError for the reason the GPU could not start, naming op's CPU variants when op
 * is not NULL; always returns NULL. */
PyObject *gl_raise_no_device(int code, const char *op);

#endif
