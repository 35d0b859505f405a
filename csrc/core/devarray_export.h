/* DeviceArray's side of interop: the CUDA Array Interface (v3) and DLPack export. */
#ifndef GL_DEVARRAY_EXPORT_H
#define GL_DEVARRAY_EXPORT_H

#include "devarray.h"

PyObject *gl_devarray_cai(gl_DeviceArrayObject *self, void *closure);
PyObject *gl_devarray_dlpack(gl_DeviceArrayObject *self, PyObject *args, PyObject *kwargs);
PyObject *gl_devarray_dlpack_device(gl_DeviceArrayObject *self, PyObject *unused);

#endif
