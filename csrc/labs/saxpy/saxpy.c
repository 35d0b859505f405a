/* The saxpy lab's bindings: saxpy and S0's first 2-D launch, matadd, elementwise ops on the
 * operands driver. */
#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/operands.h"
#include "cuda/saxpy/saxpy.h"
#include "variants.h"

/* ---- saxpy ---- */

typedef struct {
  gl_operands_block block;
  double a;
} saxpy_params;

static int saxpy_cuda(const gl_operands_call *c) {
  const saxpy_params *p = c->params;
  return glc_saxpy(c->variant->id, p->block.value, c->dtype, (size_t)c->in_size[0], p->a, c->in[0],
                   c->in[1], c->out[0], c->stream);
}

static int saxpy_cpu(const gl_operands_call *c) {
  const saxpy_params *p = c->params;
  return glcpu_saxpy(c->variant->id, c->dtype, (size_t)c->in_size[0], p->a, c->in[0], c->in[1],
                     c->out[0]);
}

static const gl_operands_op saxpy_op = {.ladder = &gl_ladder_saxpy,
                                        .n_in = 2,
                                        .in = {{"x", 1}, {"y", 1}},
                                        .dtypes = GL_FLOATS,
                                        .n_out = 1,
                                        .configure = gl_operands_configure_block,
                                        .outputs = gl_operands_outputs_like_first,
                                        .run_cuda = saxpy_cuda,
                                        .run_cpu = saxpy_cpu,
                                        .alike = 1,
                                        .skip_empty = 1,
                                        .check_before_gpu = 1,
                                        .copy_misaligned = 1,
                                        .small_calls = 1};

/* saxpy(a, x, y, variant, out, stream, block), all positional: the Python API fills them in. */
static PyObject *py_saxpy(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 7) return PyErr_Format(PyExc_TypeError, "_core.saxpy takes 7 positional arguments");
  saxpy_params p = {{args[6], 0}, 0.0};
  if (gl_real_arg(args[0], "a", &p.a) < 0) return NULL;
  return gl_operands_run_out(&saxpy_op, args + 1, args[4], args[3], args[5], &p);
}

/* ---- matadd ---- */

static int matadd_cuda(const gl_operands_call *c) {
  return glc_matadd(c->variant->id, c->dtype, (size_t)c->shape[0][0], (size_t)c->shape[0][1],
                    c->in[0], c->in[1], c->out[0], c->stream);
}

static int matadd_cpu(const gl_operands_call *c) {
  return glcpu_matadd(c->variant->id, c->dtype, (size_t)c->shape[0][0], (size_t)c->shape[0][1],
                      c->in[0], c->in[1], c->out[0]);
}

static const gl_operands_op matadd_op = {.ladder = &gl_ladder_matadd,
                                         .n_in = 2,
                                         .in = {{"A", 2}, {"B", 2}},
                                         .dtypes = GL_FLOATS,
                                         .n_out = 1,
                                         .outputs = gl_operands_outputs_like_first,
                                         .run_cuda = matadd_cuda,
                                         .run_cpu = matadd_cpu,
                                         .alike = 1,
                                         .skip_empty = 1,
                                         .check_before_gpu = 1,
                                         .copy_misaligned = 1,
                                         .small_calls = 1};

/* matadd(A, B, variant, out, stream), all positional. */
static PyObject *py_matadd(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) return PyErr_Format(PyExc_TypeError, "_core.matadd takes 5 positional arguments");
  return gl_operands_run_out(&matadd_op, args, args[3], args[2], args[4], NULL);
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
