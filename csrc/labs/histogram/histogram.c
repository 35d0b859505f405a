/* The histogram lab's bindings: histogram, its data range for range=None, and histogram_rgb, on the
 * core's placement (csrc/core/operands.h). The NumPy semantics (the range, the edges, the dtype
 * rules of the float binning) are worked out in gpulab/labs/histogram.py; these functions take the
 * resulting numbers. */
#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/errors.h"
#include "csrc/core/operands.h"
#include "cuda/histogram/histogram.h"
#include "variants.h"

/* The counts: out_ndim dimensions of out_shape, int64. */
typedef struct {
  gl_operands_block block;
  int out_ndim;
  Py_ssize_t out_shape[2];
} counts_params;

typedef struct {
  counts_params counts;
  long long lo;
  int bins;
  const glc_float_bins *float_bins; /* NULL for integer data */
} histogram_params;

static int is_floating(int dtype) { return dtype == GLC_F32 || dtype == GLC_F64; }

static int counts_outputs(gl_operands_call *c) {
  const counts_params *p = c->params;
  c->out_ndim[0] = p->out_ndim;
  for (int d = 0; d < p->out_ndim; d++) c->out_shape[0][d] = p->out_shape[d];
  c->out_type[0] = NPY_INT64;
  return 0;
}

static int histogram_cuda(const gl_operands_call *c) {
  const histogram_params *p = c->params;
  return glc_histogram(c->variant->id, p->counts.block.value, c->dtype, (size_t)c->in_size[0],
                       c->in[0], p->lo, p->bins, p->float_bins, c->out[0], c->stream);
}

static int histogram_cpu(const gl_operands_call *c) {
  const histogram_params *p = c->params;
  return glcpu_histogram(c->variant->id, c->dtype, (size_t)c->in_size[0], c->in[0], p->lo, p->bins,
                         p->float_bins, c->out[0]);
}

/* Run for every call, empty x too: the run writes the counts. */
static const gl_operands_op histogram_op = {.ladder = &gl_ladder_histogram,
                                            .n_in = 1,
                                            .in = {{"x", -1, .flat = 1}},
                                            .dtypes = HISTOGRAM_DTYPES,
                                            .n_out = 1,
                                            .configure = gl_operands_configure_block,
                                            .outputs = counts_outputs,
                                            .run_cuda = histogram_cuda,
                                            .run_cpu = histogram_cpu};

/* float_params: (lo_keep, hi_keep, lo_diff, denom, bin_f64, div_f64, edges) with edges a
 * C-contiguous NumPy array of bins + 1 values of the bin type. */
static int parse_float_params(PyObject *t, int bins, glc_float_bins *fb) {
  PyObject *edges;
  if (!PyTuple_Check(t) || !PyArg_ParseTuple(t, "ddddiiO", &fb->lo_keep, &fb->hi_keep, &fb->lo_diff,
                                             &fb->denom, &fb->bin_f64, &fb->div_f64, &edges)) {
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_SetString(PyExc_TypeError,
                      "float_params must be (lo_keep, hi_keep, lo_diff, denom, bin_f64, div_f64, "
                      "edges)");
    }
    return -1;
  }
  if (gl_check_host_array(edges, "edges", 1, 0) < 0) return -1;
  PyArrayObject *e = (PyArrayObject *)edges;
  const int want = fb->bin_f64 ? NPY_FLOAT64 : NPY_FLOAT32;
  if (PyArray_TYPE(e) != want || !PyArray_ISNBO(PyArray_DESCR(e)->byteorder) ||
      PyArray_DIM(e, 0) != (npy_intp)bins + 1) {
    PyErr_Format(PyExc_ValueError, "edges must hold bins + 1 = %d %s values", bins + 1,
                 fb->bin_f64 ? "float64" : "float32");
    return -1;
  }
  if (!(fb->denom > 0) || (fb->bin_f64 && !fb->div_f64)) {
    PyErr_SetString(PyExc_ValueError,
                    "float_params: denom must be > 0, and float64 bins divide "
                    "in float64");
    return -1;
  }
  fb->edges = PyArray_DATA(e);
  return 0;
}

/* histogram(x, bins, lo, float_params, variant, stream, block), all positional. */
static PyObject *py_histogram(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 7)
    return PyErr_Format(PyExc_TypeError, "_core.histogram takes 7 positional arguments");
  long long bins, lo;
  if (gl_int64_arg(args[1], "bins", &bins) < 0 || gl_int64_arg(args[2], "lo", &lo) < 0) return NULL;
  if (bins < 1 || bins > GLC_HISTOGRAM_MAX_BINS)
    return PyErr_Format(PyExc_ValueError, "bins must be in [1, %d], got %lld",
                        GLC_HISTOGRAM_MAX_BINS, bins);
  glc_float_bins fb = {0};
  histogram_params p = {{{args[6], 0}, 1, {(Py_ssize_t)bins}}, lo, (int)bins, NULL};
  if (args[3] != Py_None) {
    if (parse_float_params(args[3], (int)bins, &fb) < 0) return NULL;
    p.float_bins = &fb;
  }
  /* The dtype decides which binning applies: check it against the parameters given. */
  PyObject *x = args[0];
  PyArray_Descr *dtype = PyArray_Check(x) ? PyArray_DESCR((PyArrayObject *)x) : NULL;
  const int code = dtype ? gl_dtype_code(dtype) : -1;
  /* a dtype the op does not take (float16) is refused by the dtype check, naming it */
  if (code >= 0 && (HISTOGRAM_DTYPES & GL_DT(code)) && is_floating(code) != (p.float_bins != NULL))
    return PyErr_Format(PyExc_ValueError, "float_params: %s for %s data",
                        p.float_bins ? "given" : "missing",
                        is_floating(code) ? "float" : "integer");
  return gl_operands_run(&histogram_op, &x, args[4], args[5], &p);
}

/* histogram_data_range(x, variant, stream): (lo, hi, has_nan) of float data, n >= 1, computed
 * where the data is: on the device for device arrays (a CUDA variant), on the host for NumPy
 * arrays whatever the variant (their data is in host memory until the counting call copies it,
 * and a kernel must never be handed a host pointer). */
static PyObject *py_histogram_data_range(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3)
    return PyErr_Format(PyExc_TypeError, "_core.histogram_data_range takes 3 positional arguments");
  static const gl_operands_op range_op = {
      .ladder = &gl_ladder_histogram, .n_in = 1, .in = {{"x", -1, .flat = 1}}, .dtypes = GL_FLOATS};
  gl_operands_call c = {0};
  gl_operands_hold hold;
  PyObject *result = NULL;
  int device;
  if (gl_operands_open(&range_op, args, args[1], args[2], &c, &hold, &device) == 0) {
    double lo = 0, hi = 0;
    int has_nan = 0, code;
    const size_t n = (size_t)c.in_size[0];
    if (n == 0) {
      PyErr_SetString(PyExc_ValueError, "x is empty: it has no data range");
    } else if (device) {
      Py_BEGIN_ALLOW_THREADS
      code = glc_histogram_data_range(c.dtype, n, c.in[0], &lo, &hi, &has_nan, c.stream);
      Py_END_ALLOW_THREADS
      if (code)
        gl_raise_cuda(code);
      else
        result = Py_BuildValue("(ddO)", lo, hi, has_nan ? Py_True : Py_False);
    } else {
      Py_BEGIN_ALLOW_THREADS
      code = glcpu_histogram_data_range(c.dtype, n, c.in[0], &lo, &hi, &has_nan);
      Py_END_ALLOW_THREADS
      if (code)
        PyErr_SetString(PyExc_RuntimeError, "histogram_data_range failed on the CPU");
      else
        result = Py_BuildValue("(ddO)", lo, hi, has_nan ? Py_True : Py_False);
    }
  }
  gl_operands_close(&hold);
  return result;
}

/* ---- histogram_rgb ---- */

static int rgb_cuda(const gl_operands_call *c) {
  const counts_params *p = c->params;
  return glc_histogram_rgb(c->variant->id, p->block.value, c->dtype, (size_t)c->in_size[0] / 3,
                           c->in[0], c->out[0], c->stream);
}

static int rgb_cpu(const gl_operands_call *c) {
  return glcpu_histogram_rgb(c->dtype, (size_t)c->in_size[0] / 3, c->in[0], c->out[0]);
}

static const gl_operands_op rgb_op = {.ladder = &gl_ladder_histogram_rgb,
                                      .n_in = 1,
                                      .in = {{"img", 3, .last_dim = 3}},
                                      .dtypes = HISTOGRAM_RGB_DTYPES,
                                      .n_out = 1,
                                      .configure = gl_operands_configure_block,
                                      .outputs = counts_outputs,
                                      .run_cuda = rgb_cuda,
                                      .run_cpu = rgb_cpu};

/* histogram_rgb(img, variant, stream, block), all positional. */
static PyObject *py_histogram_rgb(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4)
    return PyErr_Format(PyExc_TypeError, "_core.histogram_rgb takes 4 positional arguments");
  counts_params p = {{args[3], 0}, 2, {3, GLC_HISTOGRAM_RGB_BINS}};
  return gl_operands_run(&rgb_op, args, args[1], args[2], &p);
}

static PyObject *py_constants(PyObject *m, PyObject *unused) {
  return Py_BuildValue("{s:i,s:i}", "max_bins", GLC_HISTOGRAM_MAX_BINS, "rgb_bins",
                       GLC_HISTOGRAM_RGB_BINS);
}

static PyMethodDef histogram_methods[] = {
    {"histogram", (PyCFunction)(void (*)(void))py_histogram, METH_FASTCALL,
     "histogram(x, bins, lo, float_params, variant, stream, block): int64 counts."},
    {"histogram_data_range", (PyCFunction)(void (*)(void))py_histogram_data_range, METH_FASTCALL,
     "histogram_data_range(x, variant, stream): (min, max, has_nan) of float data."},
    {"histogram_rgb", (PyCFunction)(void (*)(void))py_histogram_rgb, METH_FASTCALL,
     "histogram_rgb(img, variant, stream, block): (3, 256) int64 per-channel counts."},
    {"_histogram_constants", py_constants, METH_NOARGS,
     "The histogram lab's limits: max_bins, rgb_bins."},
    {NULL}};

static const gl_ladder *const histogram_ladders[] = {&gl_ladder_histogram, &gl_ladder_histogram_rgb,
                                                     NULL};

const gl_lab gl_lab_module_histogram = {
    .name = "histogram", .ladders = histogram_ladders, .methods = histogram_methods};
