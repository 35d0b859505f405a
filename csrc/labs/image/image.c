/* The image lab's bindings: filter2d, gaussian and box (one ladder of variants;
 * gpulab/labs/image.py turns each op's arguments into weights) and mandelbrot, on the shared
 * operand placement (csrc/core/operands.h). Weights, shapes and what each variant can do are
 * checked here, before anything is allocated or launched. */
#include <string.h>

#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/operands.h"
#include "cuda/image/image.h"
#include "variants.h"

/* The largest image side: every variant's grid fits it (filter_rows_shared's 2 rows a block). */
#define IMAGE_MAX_SIDE 65536

static const char *const mode_names[] = {"reflect", "nearest", "constant", "wrap", "mirror"};

/* ---- filters ---- */

typedef struct {
  PyObject *w2d, *wy, *wx; /* float32 NumPy arrays, or None (see py_filter) */
  int mode;
  int has_direct; /* w2d given: the direct variants can run */
  glc_filter_kernel kernel;
} filter_params;

/* A C-contiguous float32 NumPy array of ndim dimensions and at most max_size elements, copied
 * into dst; returns its element count, or -1 raised. */
static Py_ssize_t read_weights(PyObject *obj, const char *name, int ndim, Py_ssize_t max_size,
                               float *dst, Py_ssize_t *shape) {
  if (!PyArray_Check(obj) || PyArray_TYPE((PyArrayObject *)obj) != NPY_FLOAT32 ||
      PyArray_NDIM((PyArrayObject *)obj) != ndim ||
      !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)obj)) {
    PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous %d-D float32 NumPy array", name, ndim);
    return -1;
  }
  PyArrayObject *a = (PyArrayObject *)obj;
  const Py_ssize_t size = PyArray_SIZE(a);
  if (size < 1 || size > max_size) {
    PyErr_Format(PyExc_ValueError, "%s: %zd taps; between 1 and %zd", name, size, max_size);
    return -1;
  }
  memcpy(dst, PyArray_DATA(a), (size_t)size * sizeof(float));
  for (int d = 0; d < ndim; d++) shape[d] = PyArray_DIM(a, d);
  return size;
}

static int filter_configure(gl_operands_call *c) {
  filter_params *p = c->params;
  glc_filter_kernel *k = &p->kernel;
  Py_ssize_t shape[2];
  if (p->mode < GLC_MODE_REFLECT || p->mode > GLC_MODE_MIRROR) {
    PyErr_Format(PyExc_ValueError, "mode: %d is not a boundary mode", p->mode);
    return -1;
  }
  k->separable = p->wy != Py_None;
  if (k->separable) {
    if (read_weights(p->wy, "kernel's row factor", 1, GLC_FILTER_MAX_TAPS, k->wy, shape) < 0)
      return -1;
    k->kh = (int)shape[0];
    if (read_weights(p->wx, "kernel's column factor", 1, GLC_FILTER_MAX_TAPS, k->wx, shape) < 0)
      return -1;
    k->kw = (int)shape[0];
  }
  p->has_direct = p->w2d != Py_None;
  if (p->has_direct) {
    if (read_weights(p->w2d, "kernel", 2, GLC_FILTER_MAX_TAPS_2D, k->w2d, shape) < 0) return -1;
    if (k->separable && (shape[0] != k->kh || shape[1] != k->kw)) {
      PyErr_Format(PyExc_ValueError, "kernel is %zd x %zd but its factors have %d and %d taps",
                   shape[0], shape[1], k->kh, k->kw);
      return -1;
    }
    k->kh = (int)shape[0];
    k->kw = (int)shape[1];
  }
  if (!k->separable && !p->has_direct) {
    PyErr_SetString(PyExc_ValueError, "kernel: no weights given");
    return -1;
  }
  const gl_variant *v = c->variant;
  const int separable_only = v->id == GLC_FILTER_SHARED || v->id == GLC_FILTER_FUSED;
  const int direct_only = v->id == GLC_FILTER_GLOBAL || v->id == GLC_FILTER_TEXTURE;
  if (separable_only && !k->separable) {
    PyErr_Format(PyExc_ValueError,
                 "kernel: variant %d (%s) takes separable kernels (rank 1) only, and this one is "
                 "not; use global, texture or openmp",
                 v->id, v->name);
    return -1;
  }
  if (direct_only && !p->has_direct) {
    PyErr_Format(PyExc_ValueError,
                 "kernel: variant %d (%s) applies the 2-D kernel directly, at most %d taps, and "
                 "this one has %d x %d; use shared_separable or fused_separable",
                 v->id, v->name, GLC_FILTER_MAX_TAPS_2D, k->kh, k->kw);
    return -1;
  }
  if (v->id == GLC_FILTER_TEXTURE && p->mode == GLC_MODE_MIRROR) {
    PyErr_Format(PyExc_ValueError,
                 "mode: variant %d (%s) has no texture address mode for 'mirror' (the edge "
                 "pixel not repeated); texture modes: reflect, nearest, constant, wrap",
                 v->id, v->name);
    return -1;
  }
  return 0;
}

static int filter_outputs(gl_operands_call *c) {
  const filter_params *p = c->params;
  const int ndim = c->in_ndim[0];
  if (ndim != 2 && ndim != 3) {
    PyErr_Format(PyExc_ValueError, "img must be (H, W) or (H, W, C), got %d-D", ndim);
    return -1;
  }
  const Py_ssize_t h = c->shape[0][0], w = c->shape[0][1],
                   channels = ndim == 3 ? c->shape[0][2] : 1;
  if (h > IMAGE_MAX_SIDE || w > IMAGE_MAX_SIDE) {
    PyErr_Format(PyExc_ValueError, "img is %zd x %zd; at most %d pixels a side", h, w,
                 IMAGE_MAX_SIDE);
    return -1;
  }
  if (channels < 1 || channels > 4) {
    PyErr_Format(PyExc_ValueError, "img has %zd channels; 1 to 4", channels);
    return -1;
  }
  if (c->variant->id == GLC_FILTER_TEXTURE && channels != 1) {
    PyErr_Format(PyExc_ValueError,
                 "img: variant %d (%s) filters one channel (its texture holds scalars), and img "
                 "has %zd",
                 c->variant->id, c->variant->name, channels);
    return -1;
  }
  (void)p;
  c->out_ndim[0] = ndim;
  for (int d = 0; d < ndim; d++) c->out_shape[0][d] = c->shape[0][d];
  c->out_type[0] = c->dtype == GLC_U8 ? NPY_UINT8 : NPY_FLOAT32;
  return 0;
}

static int channels_of(const gl_operands_call *c) {
  return c->in_ndim[0] == 3 ? (int)c->shape[0][2] : 1;
}

static int filter_cuda(const gl_operands_call *c) {
  const filter_params *p = c->params;
  return glc_filter(c->variant->id, c->dtype, (size_t)c->shape[0][0], (size_t)c->shape[0][1],
                    channels_of(c), &p->kernel, p->mode, c->in[0], c->out[0], c->stream);
}

static int filter_cpu(const gl_operands_call *c) {
  const filter_params *p = c->params;
  return glcpu_filter(c->variant->id, c->dtype, (size_t)c->shape[0][0], (size_t)c->shape[0][1],
                      channels_of(c), &p->kernel, p->mode, c->in[0], c->out[0]);
}

#define FILTER_OP(LADDER)                                                                   \
  {                                                                                         \
    .ladder = &LADDER, .n_in = 1, .in = {{"img", -1}}, .dtypes = FILTER_DTYPES, .n_out = 1, \
    .configure = filter_configure, .outputs = filter_outputs, .run_cuda = filter_cuda,      \
    .run_cpu = filter_cpu                                                                   \
  }

static const gl_operands_op filter_ops[] = {
    FILTER_OP(gl_ladder_filter2d), FILTER_OP(gl_ladder_gaussian), FILTER_OP(gl_ladder_box)};

/* name(img, variant, stream, w2d, wy, wx, mode), all positional: w2d the 2-D kernel as float32
 * (None when it has more taps than the direct variants take), wy and wx its factors (None for a
 * kernel that is not separable), mode an index of mode_names. */
static PyObject *run_filter(const gl_operands_op *op, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 7)
    return PyErr_Format(PyExc_TypeError, "_core.%s takes 7 positional arguments", op->ladder->op);
  filter_params p = {args[3], args[4], args[5], 0, 0, {0}};
  p.mode = (int)PyLong_AsLong(args[6]);
  if (p.mode == -1 && PyErr_Occurred()) return NULL;
  if ((args[4] == Py_None) != (args[5] == Py_None))
    return PyErr_Format(PyExc_ValueError, "kernel: both factors or neither");
  return gl_operands_run(op, args, args[1], args[2], &p);
}

static PyObject *py_filter2d(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  return run_filter(&filter_ops[0], args, nargs);
}
static PyObject *py_gaussian(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  return run_filter(&filter_ops[1], args, nargs);
}
static PyObject *py_box(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  return run_filter(&filter_ops[2], args, nargs);
}

/* ---- mandelbrot ---- */

typedef struct {
  long width, height, max_iter;
} mandelbrot_params;

static int mandelbrot_outputs(gl_operands_call *c) {
  const mandelbrot_params *p = c->params;
  if (c->shape[0][0] != 2 || c->shape[1][0] != 2) {
    PyErr_Format(PyExc_ValueError, "xlim and ylim must have 2 values each, got %zd and %zd",
                 c->shape[0][0], c->shape[1][0]);
    return -1;
  }
  if (p->width < 0 || p->height < 0 || p->width > IMAGE_MAX_SIDE || p->height > IMAGE_MAX_SIDE) {
    PyErr_Format(PyExc_ValueError, "width and height must lie in 0..%d, got %ld and %ld",
                 IMAGE_MAX_SIDE, p->width, p->height);
    return -1;
  }
  if (p->max_iter < 1 || p->max_iter > 0x7fffffffL) {
    PyErr_Format(PyExc_ValueError, "max_iter must be at least 1, got %ld", p->max_iter);
    return -1;
  }
  c->out_ndim[0] = 2;
  c->out_shape[0][0] = p->height;
  c->out_shape[0][1] = p->width;
  c->out_type[0] = NPY_INT32;
  return 0;
}

static int mandelbrot_cuda(const gl_operands_call *c) {
  const mandelbrot_params *p = c->params;
  return glc_mandelbrot(c->variant->id, (int)p->width, (int)p->height, c->in[0], c->in[1],
                        (int)p->max_iter, c->out[0], c->stream);
}

static int mandelbrot_cpu(const gl_operands_call *c) {
  const mandelbrot_params *p = c->params;
  return glcpu_mandelbrot(c->variant->id, (int)p->width, (int)p->height, c->in[0], c->in[1],
                          (int)p->max_iter, c->out[0]);
}

static const gl_operands_op mandelbrot_op = {.ladder = &gl_ladder_mandelbrot,
                                             .n_in = 2,
                                             .in = {{"xlim", 1}, {"ylim", 1}},
                                             .dtypes = GL_DT(GLC_F64),
                                             .n_out = 1,
                                             .outputs = mandelbrot_outputs,
                                             .run_cuda = mandelbrot_cuda,
                                             .run_cpu = mandelbrot_cpu};

/* mandelbrot(xlim, ylim, variant, stream, width, height, max_iter), all positional. */
static PyObject *py_mandelbrot(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 7)
    return PyErr_Format(PyExc_TypeError, "_core.mandelbrot takes 7 positional arguments");
  mandelbrot_params p;
  p.width = PyLong_AsLong(args[4]);
  p.height = PyLong_AsLong(args[5]);
  p.max_iter = PyLong_AsLong(args[6]);
  if (PyErr_Occurred()) return NULL;
  return gl_operands_run(&mandelbrot_op, args, args[2], args[3], &p);
}

static PyObject *py_filter_modes(PyObject *m, PyObject *unused) {
  PyObject *t = PyTuple_New(GL_COUNT_OF(mode_names));
  for (int i = 0; t && i < GL_COUNT_OF(mode_names); i++)
    PyTuple_SET_ITEM(t, i, PyUnicode_FromString(mode_names[i]));
  return t;
}

static PyMethodDef image_methods[] = {
    {"filter2d", (PyCFunction)(void (*)(void))py_filter2d, METH_FASTCALL,
     "filter2d(img, variant, stream, w2d, wy, wx, mode): the correlation of img with a kernel."},
    {"gaussian", (PyCFunction)(void (*)(void))py_gaussian, METH_FASTCALL,
     "gaussian(img, variant, stream, w2d, wy, wx, mode): filter2d with Gaussian weights."},
    {"box", (PyCFunction)(void (*)(void))py_box, METH_FASTCALL,
     "box(img, variant, stream, w2d, wy, wx, mode): filter2d with uniform weights."},
    {"mandelbrot", (PyCFunction)(void (*)(void))py_mandelbrot, METH_FASTCALL,
     "mandelbrot(xlim, ylim, variant, stream, width, height, max_iter): the dwell map."},
    {"filter_modes", py_filter_modes, METH_NOARGS,
     "filter_modes(): the boundary modes, in the order of their numbers."},
    {NULL}};

static const gl_ladder *const image_ladders[] = {&gl_ladder_filter2d, &gl_ladder_gaussian,
                                                 &gl_ladder_box, &gl_ladder_mandelbrot, NULL};

const gl_lab gl_lab_module_image = {
    .name = "image", .ladders = image_ladders, .methods = image_methods};
