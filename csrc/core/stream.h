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
/* Resolves a stream= argument without calling CUDA: None (the library stream), a
 * gpulab.Stream, an int handle, or an object with .cuda_stream (PyTorch) or .ptr (CuPy) holding
 * one. Ints below 0 or from 2**47 up (past the user address space of x86-64 and arm64) are
 * refused with a ValueError that names stream. Any other int is trusted as a cudaStream_t, as
 * CuPy and PyTorch do: 0 (legacy default stream), 1 (cudaStreamLegacy), 2
 * (cudaStreamPerThread) or a pointer, where a wild one still crashes inside CUDA. A trusted
 * stream must outlive the arrays used on it: an array's memory is freed ordered on the last
 * stream that used it. *keep receives a new reference to the object that keeps the stream
 * alive, or NULL. Returns 0, or -1 with TypeError or ValueError set. */
int gl_stream_arg(PyObject *arg, glc_stream *stream, PyObject **keep);
/* An int stream handle (handle is a Python int) by the same rule, for handles that arrive by
 * other ways, such as the stream of a __cuda_array_interface__; the ValueError names argname.
 * Returns 0, or -1 with an exception set. */
int gl_stream_handle_arg(PyObject *handle, const char *argname, glc_stream *stream);

#endif
