/* The saxpy lab (LABS.md section 1): saxpy and S0's first 2-D launch, matadd. This file holds the
 * lab's variant tables and its bindings. */
#include "../cpu/gpulab_cpu.h"
#include "../elementwise.h"

static const gl_variant saxpy_variants[] = {
    {0,
     "one_per_thread",
     GL_BACKEND_CUDA,
     "One thread per element with a bounds check; grid = ceil(n / block).",
     "S0 SAXPY; S4 first kernels",
     GL_FLOATS,
     GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {1,
     "grid_stride",
     GL_BACKEND_CUDA,
     "Grid-stride loop over one resident wave of blocks, so any n runs on a fixed grid.",
     "S3 grid-stride loops",
     GL_FLOATS,
     GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {2,
     "vec16_tiles",
     GL_BACKEND_CUDA,
     "16-byte vectors (float4/double2), 4 per thread loaded before any store, one contiguous "
     "tile per block; a grid-stride loop over tiles covers any n.",
     "S3 vectorized memory access",
     GL_FLOATS,
     GL_BEST | GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {100,
     "serial",
     GL_BACKEND_CPU,
     "A plain loop on one core (gcc may SIMD-vectorize it).",
     "S0 CPU SAXPY",
     GL_FLOATS,
     GL_DETERMINISTIC,
     {{0}}},
    {101,
     "openmp_simd",
     GL_BACKEND_CPU,
     "OpenMP threads over 'omp simd' loops.",
     "S0/S2 OpenMP",
     GL_FLOATS,
     GL_BEST | GL_DETERMINISTIC,
     {{0}}},
};

const gl_lab gl_lab_saxpy = {"saxpy", saxpy_variants,
                             sizeof saxpy_variants / sizeof *saxpy_variants};

static const gl_variant matadd_variants[] = {
    {0,
     "grid_2d_16x16",
     GL_BACKEND_CUDA,
     "A 2-D grid of 16x16 blocks, x over columns and y over rows.",
     "S0 first 2-D launch",
     GL_FLOATS,
     GL_BEST | GL_DETERMINISTIC,
     {{0}}},
    {100,
     "serial",
     GL_BACKEND_CPU,
     "Row-major double loop on one core.",
     "S0 CPU matadd",
     GL_FLOATS,
     GL_BEST | GL_DETERMINISTIC,
     {{0}}},
};

const gl_lab gl_lab_matadd = {"matadd", matadd_variants,
                              sizeof matadd_variants / sizeof *matadd_variants};

/* ---- saxpy ---- */

static int saxpy_cuda(const gl_ew_call *c) {
  return glc_saxpy(c->variant->id, c->block, c->dtype, c->size, *(const double *)c->params,
                   c->in[0], c->in[1], c->out, c->stream);
}

static int saxpy_cpu(const gl_ew_call *c) {
  return glcpu_saxpy(c->variant->id, c->dtype, c->size, *(const double *)c->params, c->in[0],
                     c->in[1], c->out);
}

static const gl_ew_op saxpy_op = {&gl_lab_saxpy, 2,          {"x", "y"}, 1,
                                  GL_FLOATS,     saxpy_cuda, saxpy_cpu};

/* saxpy(a, x, y, variant, out, stream, block), all positional: the Python API fills them in. */
static PyObject *py_saxpy(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 7) return PyErr_Format(PyExc_TypeError, "_core.saxpy takes 7 positional arguments");
  if (!gl_is_real_scalar(args[0]))
    return PyErr_Format(PyExc_TypeError, "a must be a real number, not %s",
                        Py_TYPE(args[0])->tp_name);
  double a = PyFloat_AsDouble(args[0]);
  if (a == -1.0 && PyErr_Occurred()) return NULL;
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

static const gl_ew_op matadd_op = {&gl_lab_matadd, 2,           {"A", "B"}, 2,
                                   GL_FLOATS,      matadd_cuda, matadd_cpu};

/* matadd(A, B, variant, out, stream), all positional. */
static PyObject *py_matadd(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) return PyErr_Format(PyExc_TypeError, "_core.matadd takes 5 positional arguments");
  return gl_ew_run(&matadd_op, args, args[2], args[3], args[4], Py_None, NULL);
}

PyMethodDef gl_saxpy_lab_methods[] = {
    {"saxpy", (PyCFunction)(void (*)(void))py_saxpy, METH_FASTCALL,
     "saxpy(a, x, y, variant, out, stream, block): out = a*x + y."},
    {"matadd", (PyCFunction)(void (*)(void))py_matadd, METH_FASTCALL,
     "matadd(A, B, variant, out, stream): C = A + B for 2-D arrays."},
    {NULL}};
