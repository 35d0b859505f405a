/* The reduce lab's bindings: reduce, dot and norm2 on the shared reduction driver. */
#include "cpu.h"
#include "csrc/core/reduction.h"
#include "cuda/reduce/reduce.h"
#include "variants.h"

/* ---- reduce ---- */

static int reduce_result_type(int dtype, int mode) {
  switch (dtype) {
    case GLC_F32:
      return NPY_FLOAT32;
    case GLC_F64:
      return NPY_FLOAT64;
    default:
      return mode == GLC_REDUCE_SUM ? NPY_INT64 : NPY_INT32;
  }
}

/* NumPy's rules: the sum of nothing is 0; min and max of nothing are undefined. */
static int reduce_empty(const gl_rd_call *c) {
  if (c->mode == GLC_REDUCE_SUM) return 0; /* the value slot starts zeroed */
  PyErr_Format(PyExc_ValueError, "zero-size array to reduction operation %s which has no identity",
               c->mode == GLC_REDUCE_MIN ? "minimum" : "maximum");
  return -1;
}

static int reduce_cuda(const gl_rd_call *c) {
  return glc_reduce(c->variant->id, c->block, c->mode, c->dtype, c->size, c->in[0], c->result,
                    c->stream);
}

static int reduce_cpu(const gl_rd_call *c) {
  return glcpu_reduce(c->variant->id, c->mode, c->dtype, c->size, c->in[0], c->result);
}

static const gl_rd_op reduce_op = {
    &gl_ladder_reduce, 1,           {"x"},     REDUCE_DTYPES, reduce_result_type,
    reduce_empty,      reduce_cuda, reduce_cpu};

/* reduce(x, op, variant, stream, block), all positional: the Python API fills them in. */
static PyObject *py_reduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) return PyErr_Format(PyExc_TypeError, "_core.reduce takes 5 positional arguments");
  return gl_rd_run(&reduce_op, args, args[1], args[2], args[3], args[4]);
}

/* ---- dot and norm2 ---- */

static int same_float_type(int dtype, int mode) {
  (void)mode;
  return dtype == GLC_F32 ? NPY_FLOAT32 : NPY_FLOAT64;
}

static int zero_when_empty(const gl_rd_call *c) {
  (void)c; /* the value slot starts zeroed: the sum of no products, the norm of nothing */
  return 0;
}

static int dot_cuda(const gl_rd_call *c) {
  return glc_dot(c->dtype, c->size, c->in[0], c->in[1], c->result, c->stream);
}

static int dot_cpu(const gl_rd_call *c) {
  return glcpu_dot(c->dtype, c->size, c->in[0], c->in[1], c->result);
}

static int norm2_cuda(const gl_rd_call *c) {
  return glc_norm2(c->dtype, c->size, c->in[0], c->result, c->stream);
}

static int norm2_cpu(const gl_rd_call *c) {
  return glcpu_norm2(c->dtype, c->size, c->in[0], c->result);
}

static const gl_rd_op dot_op = {&gl_ladder_dot,  2,        {"x", "y"}, GL_FLOATS, same_float_type,
                                zero_when_empty, dot_cuda, dot_cpu};
static const gl_rd_op norm2_op = {
    &gl_ladder_norm2, 1, {"x"}, GL_FLOATS, same_float_type, zero_when_empty, norm2_cuda, norm2_cpu};

/* dot(x, y, variant, stream) and norm2(x, variant, stream), all positional. */
static PyObject *py_dot(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4) return PyErr_Format(PyExc_TypeError, "_core.dot takes 4 positional arguments");
  return gl_rd_run(&dot_op, args, Py_None, args[2], args[3], Py_None);
}

static PyObject *py_norm2(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3) return PyErr_Format(PyExc_TypeError, "_core.norm2 takes 3 positional arguments");
  return gl_rd_run(&norm2_op, args, Py_None, args[1], args[2], Py_None);
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
