/* The stencil lab's bindings: the stencil and the Jacobi solver, on the shared operand placement
 * (csrc/core/operands.h). Shapes, weights and arguments are checked here, before anything is
 * allocated or launched. */
#include <math.h>

#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/devarray.h"
#include "csrc/core/errors.h"
#include "csrc/core/interop.h"
#include "csrc/core/runtime.h"
#include "csrc/core/stream.h"
#include "csrc/core/operands.h"
#include "cuda/stencil/stencil.h"
#include "variants.h"

static int same_type(int dtype) { return dtype == GLC_F64 ? NPY_FLOAT64 : NPY_FLOAT32; }

/* ---- stencil ---- */

typedef struct {
  PyArrayObject *weights; /* float64, C-contiguous (gpulab/labs/stencil.py makes it so) */
  int boundary;
  PyObject *bx, *by, *rows;
  int bx_value, by_value; /* 0: the variant picks by the grid's dimension */
  int rows_value;         /* variant 4's star kernel: rows a thread owns */
  glc_stencil_problem problem;
} stencil_params;

static int stencil_configure(gl_operands_call *c) {
  stencil_params *p = c->params;
  if (gl_resolve_tunable(c->variant, "bx", p->bx, &p->bx_value) < 0 ||
      gl_resolve_tunable(c->variant, "by", p->by, &p->by_value) < 0 ||
      gl_resolve_tunable(c->variant, "rows", p->rows, &p->rows_value) < 0)
    return -1;
  if (p->bx == Py_None) p->bx_value = 0;
  if (p->by == Py_None) p->by_value = 0;
  if (p->bx_value * p->by_value > 1024) {
    PyErr_Format(PyExc_ValueError, "bx * by must be <= 1024 threads, got %d x %d", p->bx_value,
                 p->by_value);
    return -1;
  }
  return 0;
}

/* Shared memory a launch of variants 1 and 2 asks for, as cuda/stencil/tiles.cu and
 * streaming.cu size it (their defaults where bx or by is 0). */
static size_t stencil_shared_bytes(int variant, const glc_stencil_problem *p, int bx, int by,
                                   int itemsize) {
  const size_t nz = p->n[0], ny = p->n[1];
  const size_t rz = p->r[0], ry = p->r[1], rx = p->r[2];
  if (variant == GLC_STENCIL_SHARED_TILES) {
    bx = glc_stencil_block_side(bx, ny == 1 ? 256 : 32, by ? by : 1);
    by = glc_stencil_block_side(by, ny == 1 ? 1 : 8, bx);
    int bz = nz > 1 ? 4 : 1;
    while (bz > 1 && bx * by * bz > 1024) bz /= 2;
    return (size_t)itemsize * (bx + 2 * rx) * (by + 2 * ry) * (bz + 2 * rz);
  }
  if (variant != GLC_STENCIL_STREAMING) return 0;
  if (nz == 1 && ny == 1 && rz == 0 && ry == 0) /* 1D: 8 outputs per thread */
    return (size_t)itemsize * ((size_t)(bx ? bx : 128) * 8 + 2 * rx);
  if (nz == 1 && rz == 0) /* 2D: marched along y, one-row planes */
    return (size_t)itemsize * ((bx ? bx : 128) + 2 * rx) * (2 * ry + 1);
  bx = glc_stencil_block_side(bx, ny == 1 ? 128 : 32, ny != 1 && by ? by : 1);
  by = ny == 1 ? 1 : glc_stencil_block_side(by, 8, bx);
  return (size_t)itemsize * (bx + 2 * rx) * (by + 2 * ry) * (2 * rz + 1);
}

/* Hopper's largest shared memory per block (227 KiB, opted into). */
#define STENCIL_SHARED_LIMIT (227 * 1024)

static int stencil_outputs(gl_operands_call *c) {
  stencil_params *p = c->params;
  const int ndim = c->in_ndim[0];
  if (ndim < 1 || ndim > 3) {
    PyErr_Format(PyExc_ValueError, "u must be 1-D, 2-D or 3-D, got %d-D", ndim);
    return -1;
  }
  PyArrayObject *w = p->weights;
  if (PyArray_NDIM(w) != ndim) {
    PyErr_Format(PyExc_ValueError, "weights must be %d-D like u, got %d-D", ndim, PyArray_NDIM(w));
    return -1;
  }
  const Py_ssize_t width = PyArray_DIM(w, 0);
  for (int d = 0; d < ndim; d++)
    if (PyArray_DIM(w, d) != width || width % 2 == 0 || width < 3 ||
        width > 2 * GLC_STENCIL_MAX_RADIUS + 1) {
      PyErr_Format(PyExc_ValueError,
                   "weights must be 2r+1 long along every axis, radius r in 1..%d; axis %d is %zd",
                   GLC_STENCIL_MAX_RADIUS, d, PyArray_DIM(w, d));
      return -1;
    }
  if (ndim == 1 && p->by_value > 1) {
    PyErr_Format(PyExc_ValueError, "by: a 1-D grid is one row; pass by=None or 1, got %d",
                 p->by_value);
    return -1;
  }
  const int r = (int)(width / 2);
  for (int a = 0; a < 3; a++) {
    const int d = a - (3 - ndim); /* u's axis for grid axis a (z, y, x), or < 0 */
    p->problem.n[a] = d >= 0 ? (size_t)c->shape[0][d] : 1;
    p->problem.r[a] = d >= 0 ? r : 0;
    if (p->problem.n[a] >= ((size_t)1 << 31)) {
      PyErr_Format(PyExc_ValueError, "u: every axis must be below 2^31 cells");
      return -1;
    }
  }
  p->problem.boundary = p->boundary;
  const size_t shared =
      stencil_shared_bytes(c->variant->id, &p->problem, p->bx_value, p->by_value, c->itemsize);
  if (c->variant->backend == GL_BACKEND_CUDA && shared > STENCIL_SHARED_LIMIT) {
    PyErr_Format(PyExc_ValueError,
                 "bx, by: variant %d (%s) would need %zu bytes of shared memory for this radius "
                 "and block (at most %d); pick a smaller bx or by",
                 c->variant->id, c->variant->name, shared, STENCIL_SHARED_LIMIT);
    return -1;
  }
  p->problem.weights = (const double *)PyArray_DATA(w);
  c->out_ndim[0] = ndim;
  for (int d = 0; d < ndim; d++) c->out_shape[0][d] = c->shape[0][d];
  c->out_type[0] = same_type(c->dtype);
  return 0;
}

static int stencil_cuda(const gl_operands_call *c) {
  const stencil_params *p = c->params;
  return glc_stencil(c->variant->id, p->bx_value, p->by_value, p->rows_value, c->dtype, &p->problem,
                     c->in[0], c->out[0], c->stream);
}

static int stencil_cpu(const gl_operands_call *c) {
  const stencil_params *p = c->params;
  return glcpu_stencil(c->variant->id, c->dtype, &p->problem, c->in[0], c->out[0]);
}

static const gl_operands_op stencil_op = {.ladder = &gl_ladder_stencil,
                                          .n_in = 1,
                                          .in = {{"u", -1}},
                                          .dtypes = GL_FLOATS,
                                          .n_out = 1,
                                          .configure = stencil_configure,
                                          .outputs = stencil_outputs,
                                          .run_cuda = stencil_cuda,
                                          .run_cpu = stencil_cpu};

/* stencil(u, weights, boundary, variant, stream, bx, by, rows), all positional; weights a float64
 * C-contiguous NumPy array, boundary an enum glc_boundary. */
static PyObject *py_stencil(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 8)
    return PyErr_Format(PyExc_TypeError, "_core.stencil takes 8 positional arguments");
  if (!PyArray_Check(args[1]) || PyArray_TYPE((PyArrayObject *)args[1]) != NPY_FLOAT64 ||
      !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)args[1]))
    return PyErr_Format(PyExc_TypeError, "weights must be a C-contiguous float64 NumPy array");
  const long boundary = PyLong_AsLong(args[2]);
  if (boundary == -1 && PyErr_Occurred()) return NULL;
  if (boundary < GLC_BOUNDARY_ZERO || boundary > GLC_BOUNDARY_FIXED)
    return PyErr_Format(PyExc_ValueError, "boundary: unknown policy %ld", boundary);
  stencil_params p = {
      (PyArrayObject *)args[1], (int)boundary, args[5], args[6], args[7], 0, 0, 0, {{0}}};
  return gl_operands_run(&stencil_op, args, args[3], args[4], &p);
}

/* ---- jacobi ---- */

typedef struct {
  double h, tol;
  size_t max_sweeps, check_every;
  PyObject *depth;
  int depth_value;
  PyArrayObject *residuals; /* float64, capacity entries */
  size_t shape[3];
  glc_jacobi_result result;
} jacobi_params;

static int jacobi_configure(gl_operands_call *c) {
  jacobi_params *p = c->params;
  return gl_resolve_tunable(c->variant, "depth", p->depth, &p->depth_value);
}

static int jacobi_outputs(gl_operands_call *c) {
  jacobi_params *p = c->params;
  const int ndim = c->in_ndim[0];
  if (ndim != 2 && ndim != 3) {
    PyErr_Format(PyExc_ValueError, "f must be 2-D or 3-D, got %d-D", ndim);
    return -1;
  }
  if (c->in_ndim[1] != ndim) {
    PyErr_Format(PyExc_ValueError, "u0 must have f's shape (%d-D), got %d-D", ndim, c->in_ndim[1]);
    return -1;
  }
  for (int d = 0; d < ndim; d++) {
    if (c->shape[1][d] != c->shape[0][d]) {
      PyErr_Format(PyExc_ValueError, "u0 must have f's shape; they differ along axis %d (%zd, %zd)",
                   d, c->shape[1][d], c->shape[0][d]);
      return -1;
    }
    if ((size_t)c->shape[0][d] >= ((size_t)1 << 31)) {
      PyErr_Format(PyExc_ValueError, "f: every axis must be below 2^31 cells");
      return -1;
    }
    p->shape[d] = (size_t)c->shape[0][d];
  }
  if (c->variant->id == GLC_JACOBI_TEMPORAL && ndim != 2) {
    PyErr_Format(PyExc_ValueError,
                 "variant %d (%s) of jacobi blocks 2-D grids only; pick 'fused' for 3-D",
                 c->variant->id, c->variant->name);
    return -1;
  }
  c->out_ndim[0] = ndim;
  for (int d = 0; d < ndim; d++) c->out_shape[0][d] = c->shape[0][d];
  c->out_type[0] = same_type(c->dtype);
  return 0;
}

static int jacobi_cuda(const gl_operands_call *c) {
  jacobi_params *p = c->params;
  return glc_jacobi(c->variant->id, p->depth_value, c->dtype, c->in_ndim[0], p->shape, p->h,
                    p->max_sweeps, p->tol, p->check_every, c->in[0], c->in[1], c->out[0],
                    PyArray_DATA(p->residuals), (size_t)PyArray_SIZE(p->residuals), &p->result,
                    c->stream);
}

static int jacobi_cpu(const gl_operands_call *c) {
  jacobi_params *p = c->params;
  return glcpu_jacobi(c->variant->id, c->dtype, c->in_ndim[0], p->shape, p->h, p->max_sweeps,
                      p->tol, p->check_every, c->in[0], c->in[1], c->out[0],
                      PyArray_DATA(p->residuals), (size_t)PyArray_SIZE(p->residuals), &p->result);
}

static const gl_operands_op jacobi_op = {.ladder = &gl_ladder_jacobi,
                                         .n_in = 2,
                                         .in = {{"f", -1}, {"u0", -1}},
                                         .dtypes = GL_FLOATS,
                                         .n_out = 1,
                                         .configure = jacobi_configure,
                                         .outputs = jacobi_outputs,
                                         .run_cuda = jacobi_cuda,
                                         .run_cpu = jacobi_cpu};

static int size_arg(PyObject *obj, const char *name, size_t low, size_t *value) {
  const unsigned long long v = PyLong_AsUnsignedLongLong(obj);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
  if (v < low) {
    PyErr_Format(PyExc_ValueError, "%s must be >= %zu, got %llu", name, low, v);
    return -1;
  }
  *value = (size_t)v;
  return 0;
}

/* jacobi(f, u0, h, max_sweeps, tol, check_every, variant, stream, depth), all positional; tol a
 * float (<= 0: none). Returns (u, residuals, sweeps, checks, converged); residuals holds the
 * first `checks` entries of a float64 array of ceil(max_sweeps / check_every). */
static PyObject *py_jacobi(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 9) return PyErr_Format(PyExc_TypeError, "_core.jacobi takes 9 positional arguments");
  jacobi_params p = {0};
  p.h = PyFloat_AsDouble(args[2]);
  if (p.h == -1.0 && PyErr_Occurred()) return NULL;
  if (!(p.h > 0) || p.h == HUGE_VAL)
    return PyErr_Format(PyExc_ValueError, "h must be a positive finite spacing, got %R", args[2]);
  p.tol = PyFloat_AsDouble(args[4]);
  if (p.tol == -1.0 && PyErr_Occurred()) return NULL;
  if (size_arg(args[3], "iters", 0, &p.max_sweeps) < 0 ||
      size_arg(args[5], "check_every", 1, &p.check_every) < 0)
    return NULL;
  p.depth = args[8];
  const npy_intp capacity =
      (npy_intp)(p.max_sweeps / p.check_every + (p.max_sweeps % p.check_every != 0));
  p.residuals = (PyArrayObject *)PyArray_ZEROS(1, &capacity, NPY_FLOAT64, 0);
  if (!p.residuals) return NULL;
  PyObject *u = gl_operands_run(&jacobi_op, args, args[6], args[7], &p);
  PyObject *out =
      u ? Py_BuildValue("(NOnnO)", u, p.residuals, (Py_ssize_t)p.result.sweeps,
                        (Py_ssize_t)p.result.checks, p.result.converged ? Py_True : Py_False)
        : NULL;
  Py_DECREF(p.residuals);
  return out;
}

/* ---- one sweep over a slab's rows (the multi-GPU C ABI, for tests) ---- */

/* _jacobi_sweep_slab(u, u_new, f, begin, end, h2, residual): glc_jacobi_sweep2d_rows (2-D) or
 * glc_jacobi_sweep3d_planes (3-D) on device arrays of one shape and dtype, on the library's
 * stream; residual None or a 1-element device array of that dtype. For the tests of the ABI that
 * another lab sweeps its slabs with. */
static PyObject *py_jacobi_sweep_slab(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 7)
    return PyErr_Format(PyExc_TypeError, "_core._jacobi_sweep_slab takes 7 positional arguments");
  if (gl_require_gpu("_jacobi_sweep_slab") < 0) return NULL;
  static const char *names[] = {"u", "u_new", "f", "residual"};
  const int which[] = {0, 1, 2, 6};
  glc_stream stream = NULL;
  PyObject *keep = NULL;
  if (gl_stream_arg(Py_None, &stream, &keep) < 0) return NULL;
  gl_DeviceArrayObject *a[4] = {NULL};
  int ok = 1, count = args[6] == Py_None ? 3 : 4;
  for (int i = 0; ok && i < count; i++) {
    a[i] = gl_as_device_array(args[which[i]], names[i], stream);
    ok = a[i] && gl_check_device_array(a[i], names[i], i == 3 ? 1 : -1, i == 1 || i == 3) == 0;
  }
  const unsigned long long begin = ok ? PyLong_AsUnsignedLongLong(args[3]) : 0;
  const unsigned long long end = ok && !PyErr_Occurred() ? PyLong_AsUnsignedLongLong(args[4]) : 0;
  const double h2 = ok && !PyErr_Occurred() ? PyFloat_AsDouble(args[5]) : 0;
  ok = ok && !PyErr_Occurred();
  int dtype = ok ? gl_dtype_code(a[0]->dtype) : -1;
  if (ok && ((a[0]->ndim != 2 && a[0]->ndim != 3) || (dtype != GLC_F32 && dtype != GLC_F64))) {
    PyErr_Format(PyExc_ValueError, "u must be a 2-D or 3-D float32 or float64 device array");
    ok = 0;
  }
  for (int i = 1; ok && i < count; i++) {
    int same = gl_dtype_code(a[i]->dtype) == dtype &&
               (i == 3 ? a[i]->shape[0] == 1 : a[i]->ndim == a[0]->ndim);
    for (int d = 0; same && i < 3 && d < a[0]->ndim; d++) same = a[i]->shape[d] == a[0]->shape[d];
    if (!same) {
      PyErr_Format(PyExc_ValueError, "%s must match u's dtype and shape (residual: 1 element)",
                   names[i]);
      ok = 0;
    }
  }
  if (ok) {
    const Py_ssize_t *n = a[0]->shape;
    void *res = count == 4 ? a[3]->ptr : NULL;
    int code =
        a[0]->ndim == 2
            ? glc_jacobi_sweep2d_rows(dtype, a[0]->ptr, a[1]->ptr, a[2]->ptr, (size_t)n[0],
                                      (size_t)n[1], begin, end, h2, res, stream)
            : glc_jacobi_sweep3d_planes(dtype, a[0]->ptr, a[1]->ptr, a[2]->ptr, (size_t)n[0],
                                        (size_t)n[1], (size_t)n[2], begin, end, h2, res, stream);
    if (code) ok = gl_raise_cuda(code) != NULL;
    for (int i = 0; ok && i < count; i++) gl_devarray_use(a[i], stream, keep);
  }
  for (int i = 0; i < 4; i++) Py_XDECREF(a[i]);
  Py_XDECREF(keep);
  if (!ok) return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef stencil_methods[] = {
    {"stencil", (PyCFunction)(void (*)(void))py_stencil, METH_FASTCALL,
     "stencil(u, weights, boundary, variant, stream, bx, by, rows): the weights correlated with "
     "u."},
    {"jacobi", (PyCFunction)(void (*)(void))py_jacobi, METH_FASTCALL,
     "jacobi(f, u0, h, max_sweeps, tol, check_every, variant, stream, depth): Jacobi sweeps of "
     "-laplace(u) = f; (u, residuals, sweeps, checks, converged)."},
    {"_jacobi_sweep_slab", (PyCFunction)(void (*)(void))py_jacobi_sweep_slab, METH_FASTCALL,
     "_jacobi_sweep_slab(u, u_new, f, begin, end, h2, residual): one sweep over rows (2-D) or "
     "planes (3-D) [begin, end) through the multi-GPU C ABI (tests)."},
    {NULL}};

static const gl_ladder *const stencil_ladders[] = {&gl_ladder_stencil, &gl_ladder_jacobi, NULL};

const gl_lab gl_lab_module_stencil = {
    .name = "stencil", .ladders = stencil_ladders, .methods = stencil_methods};
