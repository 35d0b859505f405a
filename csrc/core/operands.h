/* Operand placement for ops of several arrays in and out, written once (STYLE.md: placement was
 * written per lab). The four ways every op of gpulab runs (DESIGN.md): a CPU variant on NumPy
 * arrays (run on the host, the GIL released for large calls); a CUDA variant on NumPy arrays
 * (copied to the device, run, the outputs copied back and waited for); a CUDA variant on device
 * arrays (asynchronous on the stream, DeviceArrays out); and the refused one, a CPU variant on
 * device arrays. Inputs are all NumPy or all device arrays (a mix is refused). Every operand is
 * checked -- type, placement, ndim, contiguity, dtype, alignment -- and the outputs' shapes
 * worked out before anything is allocated or launched; messages name the argument (TypeError for
 * a wrong type or dtype, ValueError for a wrong shape). The histogram, scan and concepts labs
 * and the elementwise and reduction drivers still have their own copies (a later change moves
 * them here). */
#ifndef GL_OPERANDS_H
#define GL_OPERANDS_H

#include "cuda/core/gpulab_core.h"
#include "py.h"
#include "registry.h"

#define GL_OPERANDS_MAX 4

typedef struct {
  const char *name; /* the argument's name in messages */
  int ndim;         /* required ndim */
  /* 0: the input shares the first input's dtype (the op's data). Otherwise the input has a dtype
   * of its own, one of these (the sparse lab's index arrays: int32 or int64 beside float data),
   * recorded in the call's in_dtype; the first input never has one. */
  unsigned dtypes;
} gl_operand;

/* One call, as the op's callbacks see it. */
typedef struct {
  const gl_variant *variant;
  int dtype;                     /* the inputs' enum glc_dtype (they share one) */
  int itemsize;                  /* bytes of one input element */
  int in_dtype[GL_OPERANDS_MAX]; /* each input's enum glc_dtype (its own, or dtype) */
  int in_ndim[GL_OPERANDS_MAX];  /* each input's ndim (the operand's own ndim may be -1: any) */
  Py_ssize_t shape[GL_OPERANDS_MAX][GL_MAX_NDIM];
  const void *in[GL_OPERANDS_MAX]; /* host or device memory: where the variant runs */
  /* Set by the op's outputs callback: */
  int out_ndim[GL_OPERANDS_MAX];
  Py_ssize_t out_shape[GL_OPERANDS_MAX][GL_MAX_NDIM];
  int out_type[GL_OPERANDS_MAX]; /* NumPy type numbers */
  void *out[GL_OPERANDS_MAX];
  glc_stream stream; /* CUDA variants only */
  void *params;      /* the op's own, as gl_operands_run got them (configure may fill them) */
} gl_operands_call;

typedef struct {
  const gl_ladder *ladder;
  int n_in;
  gl_operand in[GL_OPERANDS_MAX];
  unsigned dtypes; /* the inputs' dtype, one of these and of the variant's */
  int n_out;
  /* Once the variant is known, before any array is looked at: the tunables, resolved into the
   * op's params. 0, or -1 with an exception set. NULL: the op has none. */
  int (*configure)(gl_operands_call *call);
  /* From the inputs' shapes and dtype: each output's ndim, shape and type; ValueError (naming
   * the arguments) for shapes that do not fit together. 0, or -1 raised. */
  int (*outputs)(gl_operands_call *call);
  /* Run for every call, empty ones too. run_cuda returns 0 or a CUDA error code; run_cpu 0 or
   * -1. */
  int (*run_cuda)(const gl_operands_call *call);
  int (*run_cpu)(const gl_operands_call *call);
} gl_operands_op;

/* Runs op on inputs (op->n_in objects) with the Python arguments variant and stream (None when
 * omitted); params reach the callbacks. Returns the output (a tuple when op->n_out > 1), or
 * NULL with an exception set. */
PyObject *gl_operands_run(const gl_operands_op *op, PyObject *const *inputs, PyObject *variant,
                          PyObject *stream, void *params);

#endif
