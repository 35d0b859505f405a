/* The saxpy lab's bindings: saxpy and S0's first 2-D launch, matadd, on the shared elementwise
 * driver. */
#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/elementwise.h"
#include "cuda/saxpy/saxpy.h"
#include "variants.h"

/* ---- saxpy ---- */

static int saxpy_cuda(const gl_ew_call *c) {
  return glc_saxpy(c->variant->id, c->block, c->dtype, c->size, *(const double *)c->params,
                   c->in[0], c->in[1], c->out, c->stream);
}

static int saxpy_cpu(const gl_ew_call *c) {
  return glcpu_saxpy(c->variant->id, c->dtype, c->size, *(const double *)c->params, c->in[0],
                     c->in[1], c->out);
}

static const gl_ew_op saxpy_op = {&gl_ladder_saxpy, 2,          {"x", "y"}, 1,
                                  GL_FLOATS,        saxpy_cuda, saxpy_cpu};

/* saxpy(a, x, y, variant, out, stream, block), all positional: the Python API fills them in. */
static PyObject *py_saxpy(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 7) return PyErr_Format(PyExc_TypeError, "_core.saxpy takes 7 positional arguments");
  double a;
  if (gl_real_arg(args[0], "a", &a) < 0) return NULL;
  return gl_ew_run(&saxpy_op, args + 1, args[3], args[4], args[5], args[6], &a);
}

/* ---- matadd ---- */

static int matadd_cuda(const gl_ew_call *c) {
  return glc_matadd(c->variant->id, c->dtype, (size_t)c->shape[0], (size_t)c->shape[1], c->in[0],
                    c->in[1], c->out, c->stream);
}

static int matadd_cpu(const gl_ew_call *c) {
  return glcpu_matadd(c->variant->id, c->dtype, (size_t)c->shape[0], (size_t)c->shape[1], c->in[0],
                      c->in[1], c->out);
}

static const gl_ew_op matadd_op = {&gl_ladder_matadd, 2,           {"A", "B"}, 2,
                                   GL_FLOATS,         matadd_cuda, matadd_cpu};

/* matadd(A, B, variant, out, stream), all positional. */
static PyObject *py_matadd(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) return PyErr_Format(PyExc_TypeError, "_core.matadd takes 5 positional arguments");
  return gl_ew_run(&matadd_op, args, args[2], args[3], args[4], Py_None, NULL);
}

static PyMethodDef saxpy_methods[] = {
    {"saxpy", (PyCFunction)(void (*)(void))py_saxpy, METH_FASTCALL,
     "saxpy(a, x, y, variant, out, stream, block): out = a*x + y."},
    {"matadd", (PyCFunction)(void (*)(void))py_matadd, METH_FASTCALL,
     "matadd(A, B, variant, out, stream): C = A + B for 2-D arrays."},
    {NULL}};

static const gl_ladder *const saxpy_ladders[] = {&gl_ladder_saxpy, &gl_ladder_matadd, NULL};

const gl_lab gl_lab_module_saxpy = {
    .name = "saxpy", .ladders = saxpy_ladders, .methods = saxpy_methods};
