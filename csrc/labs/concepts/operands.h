/* Placement for the concepts lab's ops whose operands differ in dtype or shape, which the shared
 * elementwise and reduction drivers do not take: divergence (float32 x, int32 key), lookup (a
 * table and int32 indices) and warp_reduce (a (2, blocks) result). The same four ways as those
 * drivers: CPU on NumPy, CUDA on NumPy (copied in, run, copied out), CUDA on device arrays
 * (asynchronous on the stream, a DeviceArray out), and the refused one, CPU on device arrays.
 * Every operand is checked (type, placement, dtype, ndim, contiguity, then the op's own checks
 * across operands) before anything is allocated or launched. */
#ifndef GL_CONCEPTS_OPERANDS_H
#define GL_CONCEPTS_OPERANDS_H

#include "csrc/core/py.h"
#include "csrc/core/registry.h"
#include "cuda/core/gpulab_core.h"

#define CN_MAX_INPUTS 2

typedef struct {
  const char *name;
  unsigned dtypes; /* mask of GL_DT(glc_dtype) */
  int ndim;        /* required ndim, or -1 for any */
} cn_input;

typedef struct {
  const gl_variant *variant;
  int block;
  const void *in[CN_MAX_INPUTS]; /* host or device data, where the variant runs */
  int ndim[CN_MAX_INPUTS];
  const Py_ssize_t *shape[CN_MAX_INPUTS];
  size_t size[CN_MAX_INPUTS]; /* elements */
  /* the result: filled in by the op's shape_result */
  int out_ndim;
  Py_ssize_t out_shape[GL_MAX_NDIM];
  int out_type; /* NumPy type number */
  size_t out_size;
  void *out;
  glc_stream stream;  /* CUDA variants only */
  const void *params; /* the op's scalars */
} cn_call;

typedef struct {
  const gl_ladder *ladder;
  int n_inputs;
  cn_input inputs[CN_MAX_INPUTS];
  /* Checks the operands against each other (call->shape, call->size) and sets the result's
   * out_ndim, out_shape and out_type. Returns 0, or -1 with ValueError naming the argument. */
  int (*shape_result)(cn_call *call);
  /* Each returns 0, or a CUDA error code (cuda) / -1 (cpu). Called only for a non-empty result. */
  int (*run_cuda)(const cn_call *call);
  int (*run_cpu)(const cn_call *call);
} cn_op;

/* Runs op on inputs (op->n_inputs objects). variant, stream and block are the Python arguments as
 * given (None when omitted); params is passed through to the runners. */
PyObject *cn_run(const cn_op *op, PyObject *const *inputs, PyObject *variant, PyObject *stream,
                 PyObject *block, const void *params);

#endif
