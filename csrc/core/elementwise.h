/* The shared driver of ops whose output has the shape and dtype of their inputs (saxpy,
 * matadd, ...): it classifies the operands, checks them, resolves the variant and runs it where
 * the operands live. */
#ifndef GL_ELEMENTWISE_H
#define GL_ELEMENTWISE_H

#include "cuda/core/gpulab_core.h"
#include "py.h"
#include "registry.h"

#define GL_EW_MAX_INPUTS 4

typedef struct {
  const gl_variant *variant;
  int block;
  int dtype; /* enum glc_dtype */
  int ndim;
  const Py_ssize_t *shape;
  size_t size;
  const void *in[GL_EW_MAX_INPUTS];
  void *out;
  glc_stream stream;  /* CUDA variants only */
  const void *params; /* the op's scalars */
} gl_ew_call;

typedef struct {
  const gl_ladder *ladder;
  int n_inputs;
  const char *input_names[GL_EW_MAX_INPUTS];
  int ndim;        /* required ndim, or -1 for any */
  unsigned dtypes; /* mask of GL_DT(glc_dtype) */
  /* Each returns 0, or a CUDA error code (cuda) / -1 (cpu). */
  int (*run_cuda)(const gl_ew_call *call);
  int (*run_cpu)(const gl_ew_call *call);
} gl_ew_op;

/* Runs op on inputs (n_inputs objects). variant, out, stream and block are the Python arguments
 * as given (None when omitted). params is passed through to the runners. */
PyObject *gl_ew_run(const gl_ew_op *op, PyObject *const *inputs, PyObject *variant, PyObject *out,
                    PyObject *stream, PyObject *block, const void *params);

#endif
