/* The reduce lab's bindings: reduce, dot and norm2, reductions on the operands driver (scalar:
 * a NumPy scalar for NumPy arrays, a 0-d DeviceArray computed asynchronously for device arrays). */
#include "cpu.h"
#include "csrc/core/operands.h"
#include "cuda/reduce/mirrored.h"
#include "cuda/reduce/reduce.h"
#include "variants.h"

/* ---- reduce ---- */

static int reduce_outputs(gl_operands_call *c) {
  c->out_ndim[0] = 0;
  switch (c->dtype) {
    case GLC_F32:
      c->out_type[0] = NPY_FLOAT32;
      break;
    case GLC_F64:
      c->out_type[0] = NPY_FLOAT64;
      break;
    default:
      c->out_type[0] = c->mode == GLC_REDUCE_SUM ? NPY_INT64 : NPY_INT32;
  }
  return 0;
}

/* NumPy's rules: the sum of nothing is 0; min and max of nothing are undefined. */
static int reduce_empty(const gl_operands_call *c) {
  if (c->mode == GLC_REDUCE_SUM) return 0; /* the value starts zeroed */
  PyErr_Format(PyExc_ValueError, "zero-size array to reduction operation %s which has no identity",
               c->mode == GLC_REDUCE_MIN ? "minimum" : "maximum");
  return -1;
}

/* vec16_single_pass, the default: its last block also writes the value into a host mirror. */
#define REDUCE_MIRRORED_VARIANT 12

static int reduce_mirrors(const gl_operands_call *c) {
  return c->variant->id == REDUCE_MIRRORED_VARIANT;
}

static int reduce_cuda(const gl_operands_call *c) {
  const gl_operands_block *block = c->params;
  if (c->mirror)
    return glc_reduce_mirrored(c->variant->id, block->value, c->mode, c->dtype,
                               (size_t)c->in_size[0], c->in[0], c->out[0], c->mirror, c->mirror_tag,
                               c->stream);
  return glc_reduce(c->variant->id, block->value, c->mode, c->dtype, (size_t)c->in_size[0],
                    c->in[0], c->out[0], c->stream);
}

static int reduce_cpu(const gl_operands_call *c) {
  return glcpu_reduce(c->variant->id, c->mode, c->dtype, (size_t)c->in_size[0], c->in[0],
                      c->out[0]);
}

static const gl_operands_op reduce_op = {.ladder = &gl_ladder_reduce,
                                         .n_in = 1,
                                         .in = {{"x", -1, .flat = 1}},
                                         .dtypes = REDUCE_DTYPES,
                                         .n_out = 1,
                                         .configure = gl_operands_configure_block,
                                         .outputs = reduce_outputs,
                                         .run_cuda = reduce_cuda,
                                         .run_cpu = reduce_cpu,
                                         .alike = 1,
                                         .scalar = 1,
                                         .empty = reduce_empty,
                                         .mirrors = reduce_mirrors,
                                         .check_before_gpu = 1,
                                         .copy_misaligned = 1,
                                         .small_calls = 1};

/* reduce(x, op, variant, stream, block), all positional: the Python API fills them in. */
static PyObject *py_reduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) return PyErr_Format(PyExc_TypeError, "_core.reduce takes 5 positional arguments");
  gl_operands_block block = {args[4], 0};
  return gl_operands_run_mode(&reduce_op, args, args[1], args[2], args[3], &block);
}

/* ---- dot and norm2 ---- */

static int same_float_value(gl_operands_call *c) {
  c->out_ndim[0] = 0;
  c->out_type[0] = c->dtype == GLC_F32 ? NPY_FLOAT32 : NPY_FLOAT64;
  return 0;
}

static int zero_when_empty(const gl_operands_call *c) {
  (void)c; /* the value starts zeroed: the sum of no products, the norm of nothing */
  return 0;
}

static int dot_cuda(const gl_operands_call *c) {
  return glc_dot(c->dtype, (size_t)c->in_size[0], c->in[0], c->in[1], c->out[0], c->stream);
}

static int dot_cpu(const gl_operands_call *c) {
  return glcpu_dot(c->dtype, (size_t)c->in_size[0], c->in[0], c->in[1], c->out[0]);
}

static int norm2_cuda(const gl_operands_call *c) {
  return glc_norm2(c->dtype, (size_t)c->in_size[0], c->in[0], c->out[0], c->stream);
}

static int norm2_cpu(const gl_operands_call *c) {
  return glcpu_norm2(c->dtype, (size_t)c->in_size[0], c->in[0], c->out[0]);
}

static const gl_operands_op dot_op = {.ladder = &gl_ladder_dot,
                                      .n_in = 2,
                                      .in = {{"x", -1, .flat = 1}, {"y", -1, .flat = 1}},
                                      .dtypes = GL_FLOATS,
                                      .n_out = 1,
                                      .outputs = same_float_value,
                                      .run_cuda = dot_cuda,
                                      .run_cpu = dot_cpu,
                                      .alike = 1,
                                      .scalar = 1,
                                      .empty = zero_when_empty,
                                      .check_before_gpu = 1,
                                      .copy_misaligned = 1,
                                      .small_calls = 1};
static const gl_operands_op norm2_op = {.ladder = &gl_ladder_norm2,
                                        .n_in = 1,
                                        .in = {{"x", -1, .flat = 1}},
                                        .dtypes = GL_FLOATS,
                                        .n_out = 1,
                                        .outputs = same_float_value,
                                        .run_cuda = norm2_cuda,
                                        .run_cpu = norm2_cpu,
                                        .alike = 1,
                                        .scalar = 1,
                                        .empty = zero_when_empty,
                                        .check_before_gpu = 1,
                                        .copy_misaligned = 1,
                                        .small_calls = 1};

/* dot(x, y, variant, stream) and norm2(x, variant, stream), all positional. */
static PyObject *py_dot(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4) return PyErr_Format(PyExc_TypeError, "_core.dot takes 4 positional arguments");
  return gl_operands_run(&dot_op, args, args[2], args[3], NULL);
}

static PyObject *py_norm2(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3) return PyErr_Format(PyExc_TypeError, "_core.norm2 takes 3 positional arguments");
  return gl_operands_run(&norm2_op, args, args[1], args[2], NULL);
}

static PyMethodDef reduce_methods[] = {
    {"reduce", (PyCFunction)(void (*)(void))py_reduce, METH_FASTCALL,
     "reduce(x, op, variant, stream, block): sum, min or max of all of x."},
    {"dot", (PyCFunction)(void (*)(void))py_dot, METH_FASTCALL,
     "dot(x, y, variant, stream): sum of x*y."},
    {"norm2", (PyCFunction)(void (*)(void))py_norm2, METH_FASTCALL,
     "norm2(x, variant, stream): sqrt of the sum of x*x."},
    {NULL}};

static const gl_ladder *const reduce_ladders[] = {&gl_ladder_reduce, &gl_ladder_dot,
                                                  &gl_ladder_norm2, NULL};

const gl_lab gl_lab_module_reduce = {
    .name = "reduce", .ladders = reduce_ladders, .methods = reduce_methods};
