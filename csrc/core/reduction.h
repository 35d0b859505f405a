/* The shared driver of ops that reduce whole arrays to one value (reduce, dot, norm2): it
 * classifies the operands, checks them, resolves the variant and runs it where the operands
 * live. NumPy in: a NumPy scalar out. Device arrays in: a 0-d DeviceArray, computed
 * asynchronously on the stream. */
#ifndef GL_REDUCTION_H
#define GL_REDUCTION_H

#include "cuda/core/gpulab_core.h"
#include "py.h"
#include "registry.h"

#define GL_RD_MAX_INPUTS 2

typedef struct {
  const gl_variant *variant;
  int block;
  int mode; /* the lab's mode (reduce: enum glc_reduce_op), 0 for labs without modes */
  int dtype;
  size_t size;
  const void *in[GL_RD_MAX_INPUTS];
  void *result;      /* one value of the result dtype: device, mapped or host memory */
  glc_stream stream; /* CUDA variants only */
} gl_rd_call;

typedef struct {
  const gl_ladder *ladder;
  int n_inputs;
  const char *input_names[GL_RD_MAX_INPUTS];
  unsigned dtypes; /* mask of GL_DT(glc_dtype) */
  /* The NumPy type number of the result for an input dtype (enum glc_dtype) and mode. */
  int (*result_type)(int dtype, int mode);
  /* The value of an empty input, written to call->result; -1 with an exception set when the
   * reduction of nothing is undefined. */
  int (*empty)(const gl_rd_call *call);
  /* Each returns 0, or a CUDA error code (cuda) / -1 (cpu). */
  int (*run_cuda)(const gl_rd_call *call);
  int (*run_cpu)(const gl_rd_call *call);
} gl_rd_op;

/* Runs op on inputs (n_inputs objects). mode, variant, stream and block are the Python
 * arguments (mode is ignored by labs without modes; None for the other three when omitted). */
PyObject *gl_rd_run(const gl_rd_op *op, PyObject *const *inputs, PyObject *mode, PyObject *variant,
                    PyObject *stream, PyObject *block);

#endif
