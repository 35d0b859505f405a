/* gpulab.Stream and gpulab.Event, and the stream= argument of every op. */
#ifndef GL_STREAM_H
#define GL_STREAM_H

#include "cuda/core/gpulab_core.h"
#include "py.h"

typedef struct {
  PyObject_HEAD glc_stream handle;
  int owned;
  int non_blocking;
  int priority;
} gl_StreamObject;

typedef struct {
  PyObject_HEAD glc_event handle;
  int timing;
} gl_EventObject;

extern PyTypeObject gl_StreamType;
extern PyTypeObject gl_EventType;
int gl_stream_init(PyObject *module);
/* Resolves a stream= argument: None (the library stream), a gpulab.Stream, an int handle, or
 * an object with .cuda_stream (PyTorch) or .ptr (CuPy). *keep receives a new reference to the
 * object that keeps the stream alive, or NULL. Returns 0, or -1 with TypeError or ValueError
 * set. */
int gl_stream_arg(PyObject *arg, glc_stream *stream, PyObject **keep);

#endif
