/* The linalg lab's bindings: matvec, matmul and transpose, on the shared operand placement
 * (csrc/core/operands.h), and the tensor-core ceiling that gl.ceilings() measures. Shapes are
 * checked here, before anything is allocated or launched. */
#include <string.h>

#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/errors.h"
#include "csrc/core/operands.h"
#include "csrc/core/runtime.h"
#include "csrc/core/stream.h"
#include "cuda/linalg/hgemm.h"
#include "cuda/linalg/hgemm_wgmma_peak.h"
#include "cuda/linalg/linalg.h"
#include "variants.h"

static int same_type(int dtype) { return dtype == GLC_F64 ? NPY_FLOAT64 : NPY_FLOAT32; }

/* ---- matvec ---- */

typedef struct {
  PyObject *block;
  int block_value;
} matvec_params;

static int matvec_configure(gl_operands_call *c) {
  matvec_params *p = c->params;
  return gl_resolve_tunable(c->variant, "block", p->block, &p->block_value);
}

static int matvec_outputs(gl_operands_call *c) {
  const Py_ssize_t m = c->shape[0][0], n = c->shape[0][1];
  if (c->shape[1][0] != n) {
    PyErr_Format(PyExc_ValueError, "x must have A's %zd columns (A is %zd x %zd), got %zd elements",
                 n, m, n, c->shape[1][0]);
    return -1;
  }
  c->out_ndim[0] = 1;
  c->out_shape[0][0] = m;
  c->out_type[0] = same_type(c->dtype);
  return 0;
}

static int matvec_cuda(const gl_operands_call *c) {
  const matvec_params *p = c->params;
  return glc_matvec(c->variant->id, p->block_value, c->dtype, (size_t)c->shape[0][0],
                    (size_t)c->shape[0][1], c->in[0], c->in[1], c->out[0], c->stream);
}

static int matvec_cpu(const gl_operands_call *c) {
  return glcpu_matvec(c->variant->id, c->dtype, (size_t)c->shape[0][0], (size_t)c->shape[0][1],
                      c->in[0], c->in[1], c->out[0]);
}

static const gl_operands_op matvec_op = {.ladder = &gl_ladder_matvec,
                                         .n_in = 2,
                                         .in = {{"A", 2}, {"x", 1}},
                                         .dtypes = GL_FLOATS,
                                         .n_out = 1,
                                         .configure = matvec_configure,
                                         .outputs = matvec_outputs,
                                         .run_cuda = matvec_cuda,
                                         .run_cpu = matvec_cpu};

/* matvec(A, x, variant, stream, block), all positional. */
static PyObject *py_matvec(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) return PyErr_Format(PyExc_TypeError, "_core.matvec takes 5 positional arguments");
  matvec_params p = {args[4], 0};
  return gl_operands_run(&matvec_op, args, args[2], args[3], &p);
}

/* ---- matmul ---- */

typedef struct {
  PyObject *tunables; /* a dict of the keyword tunables */
  glc_matmul_tunables values;
  int out_dtype; /* enum glc_dtype of C: -1 (out_dtype=None, the inputs'), or GLC_F32 */
} matmul_params;

/* Every key of the tunables dict must be one of the variant's tunables; each of those resolves
 * against the values its table row allows (ValueError naming the tunable otherwise). */
static int matmul_configure(gl_operands_call *c) {
  matmul_params *p = c->params;
  const gl_variant *v = c->variant;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(p->tunables, &pos, &key, &value)) {
    const char *name = PyUnicode_AsUTF8(key);
    if (!name) return -1;
    int known = 0;
    for (int i = 0; i < GL_MAX_TUNABLES; i++)
      known |= v->tunables[i].name && strcmp(v->tunables[i].name, name) == 0;
    if (!known && value != Py_None) {
      PyErr_Format(PyExc_ValueError, "%s: variant %d (%s) of matmul has no '%s' tunable", name,
                   v->id, v->name, name);
      return -1;
    }
  }
  struct {
    const char *name;
    int *slot;
  } slots[] = {{"tile", &p->values.tile},   {"bm", &p->values.bm},        {"bn", &p->values.bn},
               {"bk", &p->values.bk},       {"tm", &p->values.tm},        {"tn", &p->values.tn},
               {"warps", &p->values.warps}, {"stages", &p->values.stages}};
  for (int i = 0; i < GL_COUNT_OF(slots); i++) {
    PyObject *arg = PyDict_GetItemString(p->tunables, slots[i].name);
    if (gl_resolve_tunable(v, slots[i].name, arg ? arg : Py_None, slots[i].slot) < 0) return -1;
  }
  /* Each value is in the table row, but not every pair compiles: refused here as a ValueError
   * before anything runs, as glc_matmul_blocked_resolve would refuse it after. */
  if (v->id == GLC_MATMUL_MULTISTAGE && p->values.bm == 256 && p->values.warps != 8) {
    PyErr_Format(PyExc_ValueError,
                 "bm: variant %d (%s) of matmul takes bm=256 with warps=8 only, not warps=%d "
                 "(%d warps would hold %d x 8 results a thread, past 255 registers)",
                 v->id, v->name, p->values.warps, p->values.warps,
                 256 * 128 / 8 / 32 / p->values.warps);
    return -1;
  }
  if ((v->id == GLC_MATMUL_WGMMA || v->id == GLC_MATMUL_WGMMA_WS || v->id == GLC_MATMUL_TF32 ||
       v->id == GLC_MATMUL_WGMMA_CLUSTER || v->id == GLC_MATMUL_TF32_CLUSTER) &&
      p->values.bn == 256 && p->values.stages == 5) {
    PyErr_Format(PyExc_ValueError,
                 "stages: variant %d (%s) of matmul takes at most 4 stages at bn=256 (5 stages of "
                 "48 KiB are more shared memory than an SM has)",
                 v->id, v->name);
    return -1;
  }
  return 0;
}

/* float16 and bfloat16 go to the tensor-core ladder (cuda/linalg/hgemm.h) */
static int is_half(int dtype) { return dtype == GLC_F16 || dtype == GLC_BF16; }

/* C: A's rows by B's columns, of the inputs' dtype, or for float16 and bfloat16 of out_dtype */
static int matmul_outputs(gl_operands_call *c) {
  const Py_ssize_t m = c->shape[0][0], k = c->shape[0][1], n = c->shape[1][1];
  if (c->shape[1][0] != k) {
    PyErr_Format(PyExc_ValueError,
                 "B must have as many rows as A has columns: A is %zd x %zd, B is %zd x %zd", m, k,
                 c->shape[1][0], n);
    return -1;
  }
  matmul_params *p = c->params;
  const int half = is_half(c->dtype);
  if (p->out_dtype >= 0 && p->out_dtype != c->dtype && !(half && p->out_dtype == GLC_F32)) {
    PyErr_Format(PyExc_ValueError, "out_dtype: %s products are %s (out_dtype=None)%s, not %s",
                 gl_dtype_name(c->dtype), gl_dtype_name(c->dtype), half ? " or float32" : "",
                 gl_dtype_name(p->out_dtype));
    return -1;
  }
  if (p->out_dtype < 0) p->out_dtype = c->dtype;
  c->out_ndim[0] = 2;
  c->out_shape[0][0] = m;
  c->out_shape[0][1] = n;
  c->out_type[0] = half ? gl_dtype_typenum(p->out_dtype) : same_type(c->dtype);
  return c->out_type[0] == NPY_NOTYPE ? -1 : 0;
}

/* How A and B lie (cuda/linalg/linalg.h's glc_matmul_layout): each operand given as a transposed
 * view (F-contiguous) is the storage of its transpose, which the dispatch reads in place where
 * the rung can and copies to row-major on the device where it cannot. The shapes are the
 * views': A m x k, B k x n either way. */
static int matmul_layout(const gl_operands_call *c) {
  return (c->in_transposed[0] ? GLC_MATMUL_A_T : 0) | (c->in_transposed[1] ? GLC_MATMUL_B_T : 0);
}

static int matmul_cuda(const gl_operands_call *c) {
  const matmul_params *p = c->params;
  const size_t m = (size_t)c->shape[0][0], n = (size_t)c->shape[1][1], k = (size_t)c->shape[0][1];
  const int layout = matmul_layout(c);
  if (is_half(c->dtype))
    return glc_hgemm(c->variant->id, &p->values, c->dtype, p->out_dtype, layout, m, n, k, c->in[0],
                     c->in[1], c->out[0], c->stream);
  return glc_matmul(c->variant->id, &p->values, c->dtype, layout, m, n, k, c->in[0], c->in[1],
                    c->out[0], c->stream);
}

/* The CPU ladder reads row-major operands only: the operand layer hands it C-order copies of
 * transposed NumPy inputs (operands.h, transposable), so its layout is always 0. */
static int matmul_cpu(const gl_operands_call *c) {
  const matmul_params *p = c->params;
  const size_t m = (size_t)c->shape[0][0], n = (size_t)c->shape[1][1], k = (size_t)c->shape[0][1];
  if (is_half(c->dtype))
    return glcpu_hgemm(c->variant->id, c->dtype, p->out_dtype, m, n, k, c->in[0], c->in[1],
                       c->out[0]);
  return glcpu_matmul(c->variant->id, c->dtype, m, n, k, c->in[0], c->in[1], c->out[0]);
}

static const gl_operands_op matmul_op = {
    .ladder = &gl_ladder_matmul,
    .n_in = 2,
    .in = {{"A", 2, .transposable = 1}, {"B", 2, .transposable = 1}},
    .dtypes = GL_FLOATS | GL_HALVES,
    .n_out = 1,
    .configure = matmul_configure,
    .outputs = matmul_outputs,
    .run_cuda = matmul_cuda,
    .run_cpu = matmul_cpu};

/* matmul(A, B, variant, stream, tunables, out_dtype), all positional; tunables a dict, out_dtype
 * None or a NumPy dtype. */
static PyObject *py_matmul(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 6) return PyErr_Format(PyExc_TypeError, "_core.matmul takes 6 positional arguments");
  if (!PyDict_Check(args[4]))
    return PyErr_Format(PyExc_TypeError, "tunables must be a dict, not %s",
                        Py_TYPE(args[4])->tp_name);
  matmul_params p = {args[4], {0}, -1};
  if (args[5] != Py_None) {
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrConverter(args[5], &descr)) return NULL;
    p.out_dtype = gl_dtype_code(descr);
    if (p.out_dtype < 0 || !(GL_DT(p.out_dtype) & (GL_FLOATS | GL_HALVES))) {
      PyErr_Format(PyExc_TypeError, "out_dtype must be None or a dtype matmul computes, not %S",
                   (PyObject *)descr);
      Py_DECREF(descr);
      return NULL;
    }
    Py_DECREF(descr);
  }
  return gl_operands_run(&matmul_op, args, args[2], args[3], &p);
}

/* ---- transpose ---- */

typedef struct {
  PyObject *tile;
  int tile_value;
} transpose_params;

static int transpose_configure(gl_operands_call *c) {
  transpose_params *p = c->params;
  return gl_resolve_tunable(c->variant, "tile", p->tile, &p->tile_value);
}

static int transpose_outputs(gl_operands_call *c) {
  static const int types[] = {NPY_FLOAT32, NPY_FLOAT64, NPY_INT32, NPY_INT64};
  c->out_ndim[0] = 2;
  c->out_shape[0][0] = c->shape[0][1];
  c->out_shape[0][1] = c->shape[0][0];
  c->out_type[0] = types[c->dtype];
  return 0;
}

static int transpose_cuda(const gl_operands_call *c) {
  const transpose_params *p = c->params;
  return glc_transpose(c->variant->id, p->tile_value, c->itemsize, (size_t)c->shape[0][0],
                       (size_t)c->shape[0][1], c->in[0], c->out[0], c->stream);
}

static int transpose_cpu(const gl_operands_call *c) {
  return glcpu_transpose(c->variant->id, c->itemsize, (size_t)c->shape[0][0],
                         (size_t)c->shape[0][1], c->in[0], c->out[0]);
}

static const gl_operands_op transpose_op = {.ladder = &gl_ladder_transpose,
                                            .n_in = 1,
                                            .in = {{"A", 2}},
                                            .dtypes = TRANSPOSE_DTYPES,
                                            .n_out = 1,
                                            .configure = transpose_configure,
                                            .outputs = transpose_outputs,
                                            .run_cuda = transpose_cuda,
                                            .run_cpu = transpose_cpu};

/* transpose(A, variant, stream, tile), all positional. */
static PyObject *py_transpose(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4)
    return PyErr_Format(PyExc_TypeError, "_core.transpose takes 4 positional arguments");
  transpose_params p = {args[3], 0};
  return gl_operands_run(&transpose_op, args, args[1], args[2], &p);
}

/* ---- the tensor-core ceiling ---- */

/* _tensor_peak(dtype, warpgroups=0, slices=0, repeats=0, stream=None) -> (GFLOP/s, ms): the
 * dense tensor-core rate for dtype 'float16', 'bfloat16' or 'tf32' (glc_tensor_peak; zeros take
 * its defaults), and the median launch time. gpulab/ceilings.py calls it; a device or build
 * without sm_90a's wgmma raises CudaError cudaErrorNotSupported. */
static PyObject *py_tensor_peak(PyObject *m, PyObject *args) {
  const char *name;
  int warpgroups = 0, slices = 0, repeats = 0;
  PyObject *stream_obj = Py_None, *keep = NULL;
  if (!PyArg_ParseTuple(args, "s|iiiO:_tensor_peak", &name, &warpgroups, &slices, &repeats,
                        &stream_obj))
    return NULL;
  int dtype;
  if (strcmp(name, "float16") == 0)
    dtype = GLC_F16;
  else if (strcmp(name, "bfloat16") == 0)
    dtype = GLC_BF16;
  else if (strcmp(name, "tf32") == 0)
    dtype = GLC_F32;
  else
    return PyErr_Format(PyExc_ValueError, "dtype must be 'float16', 'bfloat16' or 'tf32', got '%s'",
                        name);
  if (warpgroups < 0 || warpgroups > GLC_TENSOR_PEAK_MAX_WARPGROUPS)
    return PyErr_Format(PyExc_ValueError, "warpgroups must be in 1..%d (0: %d), got %d",
                        GLC_TENSOR_PEAK_MAX_WARPGROUPS, GLC_TENSOR_PEAK_DEFAULT_WARPGROUPS,
                        warpgroups);
  if (slices < 0) return PyErr_Format(PyExc_ValueError, "slices must be >= 0, got %d", slices);
  if (repeats < 0 || repeats > GLC_TENSOR_PEAK_MAX_REPEATS)
    return PyErr_Format(PyExc_ValueError, "repeats must be in 0..%d, got %d",
                        GLC_TENSOR_PEAK_MAX_REPEATS, repeats);
  if (gl_require_gpu(NULL) < 0) return NULL;
  glc_stream stream;
  if (gl_stream_arg(stream_obj, &stream, &keep) < 0) return NULL;
  double gflops = 0, ms = 0;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_tensor_peak(dtype, warpgroups, slices, repeats, &gflops, &ms, stream);
  Py_END_ALLOW_THREADS
  Py_XDECREF(keep);
  if (code) return gl_raise_cuda(code);
  return Py_BuildValue("(dd)", gflops, ms);
}

static PyMethodDef linalg_methods[] = {
    {"matvec", (PyCFunction)(void (*)(void))py_matvec, METH_FASTCALL,
     "matvec(A, x, variant, stream, block): y = A x."},
    {"matmul", (PyCFunction)(void (*)(void))py_matmul, METH_FASTCALL,
     "matmul(A, B, variant, stream, tunables, out_dtype): C = A B; tunables a dict (tile, bm, bn, "
     "bk, tm, warps, stages); out_dtype None or float32 (for float16 and bfloat16 A and B)."},
    {"transpose", (PyCFunction)(void (*)(void))py_transpose, METH_FASTCALL,
     "transpose(A, variant, stream, tile): a C-contiguous copy of A.T."},
    {"_tensor_peak", py_tensor_peak, METH_VARARGS,
     "_tensor_peak(dtype, warpgroups=0, slices=0, repeats=0, stream=None) -> (GFLOP/s, ms): the "
     "dense tensor-core rate ('float16', 'bfloat16' or 'tf32'; wgmma, sm_90a only)."},
    {NULL}};

static const gl_ladder *const linalg_ladders[] = {&gl_ladder_matvec, &gl_ladder_matmul,
                                                  &gl_ladder_transpose, NULL};

const gl_lab gl_lab_module_linalg = {
    .name = "linalg", .ladders = linalg_ladders, .methods = linalg_methods};
