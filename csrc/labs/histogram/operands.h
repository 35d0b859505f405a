/* Placement for the histogram lab's ops: one array in (any dtype of the op's mask), an int64
 * array of counts out, in the four ways the shared drivers use: CPU on NumPy, CUDA on NumPy
 * (copied in, counted, counts copied out), CUDA on device arrays (asynchronous on the stream, a
 * DeviceArray of counts out), and the refused one, CPU on device arrays. The operand is checked
 * (type, placement, dtype, ndim, contiguity, alignment) before anything is allocated or
 * launched. */
#ifndef GL_HISTOGRAM_OPERANDS_H
#define GL_HISTOGRAM_OPERANDS_H

#include "csrc/core/py.h"
#include "csrc/core/registry.h"
#include "cuda/core/gpulab_core.h"

typedef struct {
  const gl_variant *variant;
  int block;
  int dtype;         /* enum glc_dtype of the input */
  size_t n;          /* input elements */
  const void *x;     /* where the variant runs */
  long long *counts; /* where the variant runs */
  glc_stream stream; /* CUDA variants only */
  const void *params;
} hg_call;

typedef struct {
  const gl_ladder *ladder;
  const char *arg;     /* the input's name in messages */
  unsigned dtypes;     /* mask of GL_DT(glc_dtype) */
  int ndim;            /* required ndim, or -1 for any */
  Py_ssize_t last_dim; /* required last dimension, or 0 for any */
  /* Each returns 0, or a CUDA error code (cuda) / -1 (cpu). Called for every call, n == 0 too:
   * they write the counts. */
  int (*run_cuda)(const hg_call *call);
  int (*run_cpu)(const hg_call *call);
} hg_op;

/* Runs op on x; the counts have shape out_shape (out_ndim dimensions). variant, stream and block
 * are the Python arguments as given (None when omitted); params is passed to the runners. */
PyObject *hg_run(const hg_op *op, PyObject *x, int out_ndim, const Py_ssize_t *out_shape,
                 PyObject *variant, PyObject *stream, PyObject *block, const void *params);

/* The input of a call checked as hg_run checks it, for calls that return no counts (the data
 * range): *call gets variant, dtype, n, x (host or device), stream. *keep and *device receive
 * references to release (NULL when none). Returns 0 or -1 with an exception set. */
int hg_prepare(const hg_op *op, PyObject *x, PyObject *variant, PyObject *stream, hg_call *call,
               PyObject **keep, PyObject **device);

#endif
