/* What export (devarray_export.c) and import (interop.c) of device arrays share: dtypes in the
 * CUDA Array Interface's and DLPack's terms, and the ordering of a producer's stream before a
 * consumer's. */
#ifndef GL_DLPACK_H
#define GL_DLPACK_H

#include "cuda/core/gpulab_core.h"
#include "dlpack_abi.h"
#include "py.h"

/* A numeric or bool NumPy dtype from a typestr ('<f4', ...), or NULL with TypeError set. */
PyArray_Descr *gl_descr_from_typestr(PyObject *typestr);
int gl_dl_dtype_from_descr(PyArray_Descr *d, gl_DLDataType *out);
PyArray_Descr *gl_descr_from_dl(gl_DLDataType t);
/* Makes work later queued on consumer wait for what is queued on producer now. */
int gl_order_streams(glc_stream producer, glc_stream consumer);
/* The same for two streams of device 0, where the ops run, with one event made once for every
 * call (a wait takes the state its record captured, and the GIL keeps a record and its wait
 * together): no event made and destroyed per operand. */
int gl_order_streams_on_device0(glc_stream producer, glc_stream consumer);

#endif
