/* The sparse lab's bindings: spmv, spmm and cg on the shared operand placement
 * (csrc/core/operands.h), the CSR matrix as its three arrays (data, indices, indptr: the index
 * arrays int32 or int64, their own dtype beside the data's). gpulab/labs/sparse.py's gl.CSR checks
 * the arrays' contents (offsets, column range) once, on construction; here the shapes and dtypes
 * are checked, before anything is allocated or launched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/devarray.h"
#include "csrc/core/device_memory.h"
#include "csrc/core/errors.h"
#include "csrc/core/interop.h"
#include "csrc/core/operands.h"
#include "csrc/core/runtime.h"
#include "csrc/core/stream.h"
#include "csrc/core/transfer.h"
#include "cuda/sparse/sparse.h"
#include "variants.h"

typedef struct {
  PyObject *block;
  int block_value;
  Py_ssize_t cols, max_row;
  /* cg only */
  glc_cg_options cg;
  glc_cg_result result;
  /* spmv only: csr_subwarp's lanes per row (NULL: the op has no lanes argument) */
  PyObject *lanes;
  int lanes_value;
  /* spmv only: csr_hub_sorted's column order (a DeviceArray, or NULL) and the stream's owner */
  PyObject *column_order, *stream_keep;
} spmv_params;

static int spmv_configure(gl_operands_call *c) {
  spmv_params *p = c->params;
  if (p->lanes && gl_resolve_tunable(c->variant, "lanes", p->lanes, &p->lanes_value) < 0) return -1;
  return gl_resolve_tunable(c->variant, "block", p->block, &p->block_value);
}

/* The CSR arrays (inputs 0-2) against each other and the params. 0, or -1 raised. */
static int check_csr(const gl_operands_call *c) {
  const spmv_params *p = c->params;
  const Py_ssize_t nnz = c->shape[0][0];
  if (c->in_dtype[1] != c->in_dtype[2]) {
    PyErr_Format(PyExc_TypeError, "indices must have indptr's dtype %s, got %s",
                 gl_dtype_name(c->in_dtype[2]), gl_dtype_name(c->in_dtype[1]));
    return -1;
  }
  if (c->shape[1][0] != nnz) {
    PyErr_Format(PyExc_ValueError, "indices must have one entry per value of data (%zd), got %zd",
                 nnz, c->shape[1][0]);
    return -1;
  }
  if (c->shape[2][0] < 1) {
    PyErr_SetString(PyExc_ValueError, "indptr must have rows + 1 >= 1 elements, got 0");
    return -1;
  }
  if (p->cols < 0 || (nnz > 0 && p->cols == 0)) {
    PyErr_Format(PyExc_ValueError, "cols must be >= 1 for a matrix with nonzeros, got %zd",
                 p->cols);
    return -1;
  }
  if (p->max_row < 0 || p->max_row > nnz) {
    PyErr_Format(PyExc_ValueError, "max_row must lie in 0..nnz (%zd), got %zd", nnz, p->max_row);
    return -1;
  }
  return 0;
}

/* SELL's C and sigma (cuda/sparse/formats.cu): slices of 32 rows, sorted in windows of 256. */
#define SELL_SLICE_ROWS 32
#define SELL_WINDOW_ROWS 256

/* The variants that convert A inside the call (cuda/sparse/formats.cu) allocate their format's
 * arrays on the device; one that the device cannot hold is refused here, before the call
 * allocates anything (ELL pads every row to the longest: a graph with a hub row of 10^5 entries
 * asks for terabytes). The sizes are the ones formats.cu allocates, counted in doubles, which a
 * padded size past size_t cannot overflow. 0, or -1 raised. */
static int check_conversion(const gl_operands_call *c) {
  const spmv_params *p = c->params;
  if (c->variant->backend != GL_BACKEND_CUDA) return 0;
  const double rows = (double)(c->shape[2][0] - 1), width = (double)p->max_row;
  const double nnz = (double)c->shape[0][0];
  const int index_bytes = c->in_dtype[2] == GLC_I64 ? 8 : 4, slot_bytes = index_bytes + c->itemsize;
  char what[128], detail[384];
  double needed;
  switch (c->variant->id) {
    case GLC_SPMV_ELL_COLUMN_MAJOR:
    case GLC_SPMV_ELL_ROW_MAJOR:
      needed = rows * width * slot_bytes;
      snprintf(detail, sizeof detail,
               "rows %.0f x width %zd slots of %d bytes, every row padded to the longest", rows,
               p->max_row, slot_bytes);
      snprintf(what, sizeof what, "ELL (spmv variant '%s')", c->variant->name);
      break;
    case GLC_SPMV_SELL: {
      /* columns and values at ELL's bound over the padded positions (the slices' total stays on
       * the device), the row order, and the slices' sizes and offsets */
      const Py_ssize_t windows = (c->shape[2][0] - 1 + SELL_WINDOW_ROWS - 1) / SELL_WINDOW_ROWS;
      const double positions = (double)windows * SELL_WINDOW_ROWS;
      const double slices = positions / SELL_SLICE_ROWS;
      needed = positions * width * slot_bytes + 8 * (positions + 2 * slices + 1);
      snprintf(detail, sizeof detail,
               "%.0f row positions x width %zd slots of %d bytes, every slice's width bounded by "
               "the longest row's since the slices' sizes stay on the device, and 8-byte row "
               "order and slice offsets",
               positions, p->max_row, slot_bytes);
      snprintf(what, sizeof what, "SELL-C-sigma (spmv variant '%s')", c->variant->name);
      break;
    }
    case GLC_SPMV_COO:
      needed = nnz * index_bytes;
      snprintf(detail, sizeof detail, "a row index of %d bytes for each of %.0f nonzeros",
               index_bytes, nnz);
      snprintf(what, sizeof what, "COO (spmv variant '%s')", c->variant->name);
      break;
    default:
      return 0;
  }
  return gl_check_workspace(what, needed, detail);
}

/* csr_hub_sorted's column order: a C-contiguous DeviceArray on device 0 of cols + nnz entries
 * of the indices' dtype, which only that variant takes. 0, or -1 raised. */
static int check_column_order(const gl_operands_call *c) {
  const spmv_params *p = c->params;
  const int hub_sorted =
      c->variant->backend == GL_BACKEND_CUDA && c->variant->id == GLC_SPMV_CSR_HUB_SORTED;
  if (!p->column_order) {
    if (!hub_sorted) return 0;
    PyErr_SetString(PyExc_ValueError,
                    "spmv variant 'csr_hub_sorted' needs the matrix's column order: call it "
                    "through gl.spmv, which computes the order once and keeps it on the gl.CSR");
    return -1;
  }
  if (!hub_sorted) {
    PyErr_Format(PyExc_ValueError, "column_order is for spmv variant 'csr_hub_sorted', not '%s'",
                 c->variant->name);
    return -1;
  }
  const Py_ssize_t expected = p->cols + c->shape[0][0];
  gl_DeviceArrayObject *o = (gl_DeviceArrayObject *)p->column_order;
  if (!gl_DeviceArray_Check(p->column_order) || o->device != 0 || o->ndim != 1 ||
      !gl_devarray_is_c_contiguous(o) || gl_dtype_code(o->dtype) != c->in_dtype[1] ||
      o->size != expected) {
    PyErr_Format(PyExc_ValueError,
                 "column_order must be a contiguous 1-D DeviceArray on device 0 of %zd %s "
                 "entries (the matrix's cols + nnz), as CSR.column_order() makes it",
                 expected, gl_dtype_name(c->in_dtype[1]));
    return -1;
  }
  return 0;
}

static int spmv_outputs(gl_operands_call *c) {
  const spmv_params *p = c->params;
  if (check_csr(c) < 0) return -1;
  if (check_column_order(c) < 0) return -1;
  if (c->shape[3][0] != p->cols) {
    PyErr_Format(PyExc_ValueError, "x must have A's %zd columns, got %zd elements", p->cols,
                 c->shape[3][0]);
    return -1;
  }
  if (check_conversion(c) < 0) return -1;
  c->out_ndim[0] = 1;
  c->out_shape[0][0] = c->shape[2][0] - 1;
  c->out_type[0] = c->dtype == GLC_F64 ? NPY_FLOAT64 : NPY_FLOAT32;
  return 0;
}

static int spmm_outputs(gl_operands_call *c) {
  const spmv_params *p = c->params;
  if (check_csr(c) < 0) return -1;
  if (c->shape[3][0] != p->cols) {
    PyErr_Format(PyExc_ValueError, "B must have A's %zd columns as its rows, got %zd rows", p->cols,
                 c->shape[3][0]);
    return -1;
  }
  c->out_ndim[0] = 2;
  c->out_shape[0][0] = c->shape[2][0] - 1;
  c->out_shape[0][1] = c->shape[3][1];
  c->out_type[0] = c->dtype == GLC_F64 ? NPY_FLOAT64 : NPY_FLOAT32;
  return 0;
}

static glc_csr csr_of(const gl_operands_call *c) {
  const spmv_params *p = c->params;
  return (glc_csr){.rows = (size_t)c->shape[2][0] - 1,
                   .cols = (size_t)p->cols,
                   .nnz = (size_t)c->shape[0][0],
                   .max_row = (size_t)p->max_row,
                   .index_dtype = c->in_dtype[2],
                   .dtype = c->dtype,
                   .indptr = c->in[2],
                   .indices = c->in[1],
                   .data = c->in[0]};
}

static int spmv_cuda(const gl_operands_call *c) {
  const spmv_params *p = c->params;
  glc_csr a = csr_of(c);
  gl_DeviceArrayObject *order = (gl_DeviceArrayObject *)p->column_order;
  if (order) a.column_order = order->ptr;
  const int code =
      glc_spmv(c->variant->id, p->block_value, p->lanes_value, &a, c->in[3], c->out[0], c->stream);
  /* its free is ordered after this call's kernels, as the operands' are */
  if (order) gl_devarray_use(order, c->stream, p->stream_keep);
  return code;
}

static int spmv_cpu(const gl_operands_call *c) {
  const glc_csr a = csr_of(c);
  return glcpu_spmv(c->variant->id, &a, c->in[3], c->out[0]);
}

static int spmm_cuda(const gl_operands_call *c) {
  const spmv_params *p = c->params;
  const glc_csr a = csr_of(c);
  return glc_spmm(c->variant->id, p->block_value, &a, (size_t)c->shape[3][1], c->in[3], c->out[0],
                  c->stream);
}

static int spmm_cpu(const gl_operands_call *c) {
  const glc_csr a = csr_of(c);
  return glcpu_spmm(c->variant->id, &a, (size_t)c->shape[3][1], c->in[3], c->out[0]);
}

/* cg: x of A's rows from b (A square) and x0 (b's length, or empty for zeros). */
static int cg_outputs(gl_operands_call *c) {
  const spmv_params *p = c->params;
  if (check_csr(c) < 0) return -1;
  const Py_ssize_t rows = c->shape[2][0] - 1;
  if (rows != p->cols) {
    PyErr_Format(PyExc_ValueError, "A must be square for cg, got %zd x %zd", rows, p->cols);
    return -1;
  }
  if (c->shape[3][0] != rows) {
    PyErr_Format(PyExc_ValueError, "b must have A's %zd rows, got %zd elements", rows,
                 c->shape[3][0]);
    return -1;
  }
  if (c->shape[4][0] != rows && c->shape[4][0] != 0) {
    PyErr_Format(PyExc_ValueError, "x0 must have A's %zd rows, got %zd elements", rows,
                 c->shape[4][0]);
    return -1;
  }
  c->out_ndim[0] = 1;
  c->out_shape[0][0] = rows;
  c->out_type[0] = c->dtype == GLC_F64 ? NPY_FLOAT64 : NPY_FLOAT32;
  return 0;
}

static int cg_cuda(const gl_operands_call *c) {
  spmv_params *p = c->params;
  const glc_csr a = csr_of(c);
  return glc_cg(c->variant->id, p->block_value, &a, c->in[3], c->shape[4][0] ? c->in[4] : NULL,
                c->out[0], &p->cg, &p->result, c->stream);
}

static int cg_cpu(const gl_operands_call *c) {
  spmv_params *p = c->params;
  const glc_csr a = csr_of(c);
  return glcpu_cg(c->variant->id, &a, c->in[3], c->shape[4][0] ? c->in[4] : NULL, c->out[0], &p->cg,
                  &p->result);
}

static const gl_operands_op cg_op = {.ladder = &gl_ladder_cg,
                                     .n_in = 5,
                                     .in = {{"data", 1},
                                            {"indices", 1, GL_INDEX_DTYPES},
                                            {"indptr", 1, GL_INDEX_DTYPES},
                                            {"b", 1},
                                            {"x0", 1}},
                                     .dtypes = GL_FLOATS,
                                     .n_out = 1,
                                     .configure = spmv_configure,
                                     .outputs = cg_outputs,
                                     .run_cuda = cg_cuda,
                                     .run_cpu = cg_cpu};

static const gl_operands_op spmm_op = {
    .ladder = &gl_ladder_spmm,
    .n_in = 4,
    .in = {{"data", 1}, {"indices", 1, GL_INDEX_DTYPES}, {"indptr", 1, GL_INDEX_DTYPES}, {"B", 2}},
    .dtypes = GL_FLOATS,
    .n_out = 1,
    .configure = spmv_configure,
    .outputs = spmm_outputs,
    .run_cuda = spmm_cuda,
    .run_cpu = spmm_cpu};

static const gl_operands_op spmv_op = {
    .ladder = &gl_ladder_spmv,
    .n_in = 4,
    .in = {{"data", 1}, {"indices", 1, GL_INDEX_DTYPES}, {"indptr", 1, GL_INDEX_DTYPES}, {"x", 1}},
    .dtypes = GL_FLOATS,
    .n_out = 1,
    .configure = spmv_configure,
    .outputs = spmv_outputs,
    .run_cuda = spmv_cuda,
    .run_cpu = spmv_cpu};

/* op(data, indices, indptr, x or B, variant, stream, cols, max_row, block[, lanes[,
 * column_order]]), all positional: spmv takes lanes (csr_subwarp's tunable) and, for
 * csr_hub_sorted, the matrix's column order; spmm takes neither. */
static PyObject *run_op(const gl_operands_op *op, PyObject *const *args, Py_ssize_t nargs,
                        int takes_lanes) {
  if (nargs != 9 + takes_lanes && !(takes_lanes && nargs == 11))
    return PyErr_Format(PyExc_TypeError, "_core.%s takes %d positional arguments", op->ladder->op,
                        9 + takes_lanes);
  spmv_params p = {args[8], 0, PyLong_AsSsize_t(args[6]), PyLong_AsSsize_t(args[7])};
  if (PyErr_Occurred()) return NULL;
  p.lanes = takes_lanes ? args[9] : NULL;
  if (nargs == 11 && args[10] != Py_None) {
    glc_stream stream;
    p.column_order = args[10];
    if (gl_stream_arg(args[5], &stream, &p.stream_keep) < 0) return NULL;
  }
  PyObject *result = gl_operands_run(op, args, args[4], args[5], &p);
  Py_XDECREF(p.stream_keep);
  return result;
}

static PyObject *py_spmv(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  return run_op(&spmv_op, args, nargs, 1);
}

static PyObject *py_spmm(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  return run_op(&spmm_op, args, nargs, 0);
}

/* cg(data, indices, indptr, b, x0, variant, stream, cols, max_row, block, rtol, atol, maxiter,
 * check_every, jacobi, phases) -> (x, residuals, iterations, converged, breakdown, phase_ms or
 * None). The residual history is a host buffer of maxiter / check_every + 2 entries (its pages
 * untouched past the ones written), copied into a NumPy array of the entries written. */
static PyObject *py_cg(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 16) return PyErr_Format(PyExc_TypeError, "_core.cg takes 16 positional arguments");
  spmv_params p = {args[9], 0, PyLong_AsSsize_t(args[7]), PyLong_AsSsize_t(args[8])};
  p.cg.rtol = PyFloat_AsDouble(args[10]);
  p.cg.atol = PyFloat_AsDouble(args[11]);
  p.cg.maxiter = PyLong_AsLongLong(args[12]);
  p.cg.check_every = PyLong_AsLongLong(args[13]);
  p.cg.jacobi = PyObject_IsTrue(args[14]);
  p.cg.phases = PyObject_IsTrue(args[15]);
  if (PyErr_Occurred()) return NULL;
  if (p.cg.maxiter < 0 || p.cg.check_every < 1 || !(p.cg.rtol >= 0) || !(p.cg.atol >= 0))
    return PyErr_Format(PyExc_ValueError,
                        "cg needs maxiter >= 0, check_every >= 1, rtol >= 0 and atol >= 0");
  p.result.capacity = (size_t)(p.cg.maxiter / p.cg.check_every) + 2;
  p.result.residuals = malloc(p.result.capacity * sizeof(double));
  if (p.result.residuals == NULL) return PyErr_NoMemory();
  PyObject *x = gl_operands_run(&cg_op, args, args[5], args[6], &p);
  PyObject *out = NULL;
  if (x != NULL && p.result.dia_refused) {
    if (p.result.diagonals > GLC_CG_DIA_MAX_DIAGONALS)
      PyErr_Format(PyExc_ValueError,
                   "cg variant 'dia_fused' stores A by its diagonals, at most %d of them, but A "
                   "has more (use variant 'fused')",
                   GLC_CG_DIA_MAX_DIAGONALS);
    else
      PyErr_Format(PyExc_ValueError,
                   "cg variant 'dia_fused' stores A by its diagonals: A's %lld diagonals of %zd "
                   "rows would take more bytes than its CSR arrays (use variant 'fused')",
                   p.result.diagonals, p.cols);
  } else if (x != NULL && p.result.zero_diagonal_row >= 0) {
    PyErr_Format(PyExc_ValueError,
                 "M='jacobi' needs a nonzero diagonal, but A[%lld, %lld] is zero (use M=None)",
                 p.result.zero_diagonal_row, p.result.zero_diagonal_row);
  } else if (x != NULL) {
    npy_intp count = (npy_intp)p.result.count;
    PyObject *residuals = PyArray_SimpleNew(1, &count, NPY_FLOAT64);
    if (residuals) {
      memcpy(PyArray_DATA((PyArrayObject *)residuals), p.result.residuals,
             p.result.count * sizeof(double));
      PyObject *phases = p.cg.phases ? Py_BuildValue("(ddd)", p.result.phase_ms[0],
                                                     p.result.phase_ms[1], p.result.phase_ms[2])
                                     : Py_NewRef(Py_None);
      if (phases)
        out = Py_BuildValue("(ONLiiN)", x, residuals, (long long)p.result.iterations,
                            p.result.converged, p.result.breakdown, phases);
      else
        Py_DECREF(residuals);
    }
  }
  Py_XDECREF(x);
  free(p.result.residuals);
  return out;
}

/* ---- matrix analysis on the device (cuda/sparse/stats.cu) */

/* A 1-D int32/int64 device array argument as a DeviceArray ordered on stream (a new reference),
 * or NULL raised; *dtype receives its glc dtype. */
static gl_DeviceArrayObject *device_index_array(PyObject *obj, const char *name, glc_stream stream,
                                                int *dtype) {
  gl_DeviceArrayObject *a = gl_as_device_array(obj, name, stream);
  if (!a) return NULL;
  if (gl_check_device_array(a, name, 1, 0) < 0) {
    Py_DECREF(a);
    return NULL;
  }
  *dtype = gl_dtype_code(a->dtype);
  if (*dtype != GLC_I32 && *dtype != GLC_I64) {
    PyErr_Format(PyExc_TypeError, "%s must be int32 or int64, got %s", name,
                 *dtype >= 0 ? gl_dtype_name(*dtype) : "another dtype");
    Py_DECREF(a);
    return NULL;
  }
  return a;
}

/* csr_stats(indptr, stream) -> (first, last, max_row, empty_rows, decreasing_rows, sum_squares)
 * of the device array indptr (rows + 1 offsets, rows >= 0): one kernel and one copy of a few
 * numbers; the call waits for them. */
static PyObject *py_csr_stats(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 2)
    return PyErr_Format(PyExc_TypeError, "_core.csr_stats takes 2 positional arguments");
  glc_stream stream;
  PyObject *keep = NULL, *out = NULL;
  if (gl_require_gpu("csr_stats") < 0 || gl_stream_arg(args[1], &stream, &keep) < 0) return NULL;
  int dtype;
  gl_DeviceArrayObject *indptr = device_index_array(args[0], "indptr", stream, &dtype);
  if (indptr && indptr->size < 1) {
    PyErr_SetString(PyExc_ValueError, "indptr must have rows + 1 >= 1 elements, got 0");
  } else if (indptr) {
    const glc_csr a = {
        .rows = (size_t)indptr->size - 1, .index_dtype = dtype, .indptr = indptr->ptr};
    glc_csr_row_stats st;
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = glc_csr_stats(&a, &st, stream);
    Py_END_ALLOW_THREADS
    gl_devarray_use(indptr, stream, keep);
    if (code)
      gl_raise_cuda(code);
    else
      out = Py_BuildValue("(LLKKKd)", st.first, st.last, st.max_row, st.empty_rows,
                          st.decreasing_rows, st.sum_squares);
  }
  Py_XDECREF(indptr);
  Py_XDECREF(keep);
  return out;
}

/* csr_diagonals(indptr, indices, stream) -> the distinct offsets col - row of the device CSR
 * arrays, or GLC_CG_DIA_MAX_DIAGONALS + 1 for more (cg's dia_fused limit). indptr is trusted
 * to have been checked (csr_stats): its offsets index indices. */
static PyObject *py_csr_diagonals(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3)
    return PyErr_Format(PyExc_TypeError, "_core.csr_diagonals takes 3 positional arguments");
  glc_stream stream;
  PyObject *keep = NULL, *out = NULL;
  if (gl_require_gpu("csr_diagonals") < 0 || gl_stream_arg(args[2], &stream, &keep) < 0)
    return NULL;
  int dtype = -1, indices_dtype = -1;
  gl_DeviceArrayObject *indptr = device_index_array(args[0], "indptr", stream, &dtype);
  gl_DeviceArrayObject *indices =
      indptr ? device_index_array(args[1], "indices", stream, &indices_dtype) : NULL;
  if (indices && indices_dtype != dtype) {
    PyErr_Format(PyExc_TypeError, "indices must have indptr's dtype %s, got %s",
                 gl_dtype_name(dtype), gl_dtype_name(indices_dtype));
  } else if (indices && indptr->size < 1) {
    PyErr_SetString(PyExc_ValueError, "indptr must have rows + 1 >= 1 elements, got 0");
  } else if (indices) {
    const glc_csr a = {.rows = (size_t)indptr->size - 1,
                       .nnz = (size_t)indices->size,
                       .index_dtype = dtype,
                       .indptr = indptr->ptr,
                       .indices = indices->ptr};
    long long count = 0;
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = glc_csr_diagonals(&a, &count, stream);
    Py_END_ALLOW_THREADS
    gl_devarray_use(indptr, stream, keep);
    gl_devarray_use(indices, stream, keep);
    if (code)
      gl_raise_cuda(code);
    else
      out = PyLong_FromLongLong(count);
  }
  Py_XDECREF(indices);
  Py_XDECREF(indptr);
  Py_XDECREF(keep);
  return out;
}

/* csr_hub_order(indices, cols, top, stream) -> (order, top_nonzeros): csr_hub_sorted's column
 * order of a device matrix with these indices and cols columns (a DeviceArray of cols + nnz
 * entries of the indices' dtype: new_to_old, then the relabelled indices) and the nonzeros of
 * its `top` most used columns. The order and the workspace are checked against free device
 * memory before anything is allocated; the call waits for the count. */
static PyObject *py_csr_hub_order(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4)
    return PyErr_Format(PyExc_TypeError, "_core.csr_hub_order takes 4 positional arguments");
  const Py_ssize_t cols = PyLong_AsSsize_t(args[1]), top = PyLong_AsSsize_t(args[2]);
  if (PyErr_Occurred()) return NULL;
  if (cols < 0 || top < 1)
    return PyErr_Format(PyExc_ValueError, "cols must be >= 0 and top >= 1, got %zd and %zd", cols,
                        top);
  glc_stream stream;
  PyObject *keep = NULL, *out = NULL;
  if (gl_require_gpu("csr_hub_order") < 0 || gl_stream_arg(args[3], &stream, &keep) < 0)
    return NULL;
  int dtype;
  gl_DeviceArrayObject *indices = device_index_array(args[0], "indices", stream, &dtype);
  gl_DeviceArrayObject *order = NULL;
  if (!indices) goto done;
  const Py_ssize_t nnz = indices->size;
  if (dtype == GLC_I32 && (cols > INT32_MAX || nnz > INT32_MAX)) {
    PyErr_SetString(PyExc_ValueError, "int32 indices past 2^31 - 1");
    goto done;
  }
  const double ib = dtype == GLC_I64 ? 8.0 : 4.0;
  /* the order itself, then the counts (twice, sorted), the ids, the inverse and CUB's sort
   * scratch (about another set of keys and values) */
  const double kept = ((double)cols + (double)nnz) * ib;
  const double scratch = (double)cols * (2 * 8.0 + 2 * ib + 8.0 + ib) + (1 << 20);
  char detail[256];
  snprintf(detail, sizeof detail,
           "%.0f bytes kept on the matrix (%zd columns and %zd nonzeros of %.0f bytes) and %.0f "
           "of workspace (column counts, their sort and its scratch)",
           kept, cols, nnz, ib, scratch);
  if (gl_check_workspace("csr_hub_sorted's column order", kept + scratch, detail) < 0) goto done;
  PyArray_Descr *descr = PyArray_DescrFromType(dtype == GLC_I64 ? NPY_INT64 : NPY_INT32);
  if (!descr) goto done;
  const Py_ssize_t length = cols + nnz;
  order = gl_devarray_empty(1, &length, descr, stream, keep);
  Py_DECREF(descr);
  if (!order) goto done;
  const glc_csr a = {
      .cols = (size_t)cols, .nnz = (size_t)nnz, .index_dtype = dtype, .indices = indices->ptr};
  unsigned long long top_nonzeros = 0;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_csr_hub_order(&a, order->ptr, (size_t)top, &top_nonzeros, stream);
  Py_END_ALLOW_THREADS
  gl_devarray_use(indices, stream, keep);
  if (code)
    gl_raise_cuda(code);
  else
    out = Py_BuildValue("(OK)", (PyObject *)order, top_nonzeros);
done:
  Py_XDECREF(order);
  Py_XDECREF(indices);
  Py_XDECREF(keep);
  return out;
}

static int rmat_u64_arg(PyObject *obj, const char *name, unsigned long long max,
                        unsigned long long *value) {
  if (!PyLong_Check(obj) || PyBool_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int, got %s", name, Py_TYPE(obj)->tp_name);
    return -1;
  }
  *value = PyLong_AsUnsignedLongLong(obj);
  if (PyErr_Occurred() || *value > max) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s must lie in 0..%llu", name, max);
    return -1;
  }
  return 0;
}

/* rmat(scale, edges, t_ab, t_a, t_c, edge_key, perm_key, dtype, stream) -> (indptr, indices,
 * data) DeviceArrays on stream: gl.sparse.rmat's device path. The workspace and the largest
 * outputs (every edge distinct) are checked against free device memory before anything is
 * allocated; the call waits once, for the number of distinct edges, which sizes the outputs. */
static PyObject *py_rmat(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 9) return PyErr_Format(PyExc_TypeError, "_core.rmat takes 9 positional arguments");
  glc_rmat p = {0};
  unsigned long long scale = 0;
  const unsigned long long threshold_max = 1ull << 32;
  if (rmat_u64_arg(args[0], "scale", 31, &scale) < 0 ||
      rmat_u64_arg(args[1], "edges", 1ull << 48, &p.edges) < 0 ||
      rmat_u64_arg(args[2], "t_ab", threshold_max, &p.t_ab) < 0 ||
      rmat_u64_arg(args[3], "t_a", threshold_max, &p.t_a) < 0 ||
      rmat_u64_arg(args[4], "t_c", threshold_max, &p.t_c) < 0 ||
      rmat_u64_arg(args[5], "edge_key", ~0ull, &p.edge_key) < 0 ||
      rmat_u64_arg(args[6], "perm_key", ~0ull, &p.perm_key) < 0)
    return NULL;
  p.scale = (int)scale;
  if (p.scale < 1 || p.edges < 1)
    return PyErr_Format(PyExc_ValueError, "rmat needs scale in 1..31 and edges >= 1");
  PyArray_Descr *descr = NULL;
  if (!PyArray_DescrConverter(args[7], &descr)) return NULL;
  const int dtype = gl_dtype_code(descr);
  if (dtype != GLC_F32 && dtype != GLC_F64) {
    Py_DECREF(descr);
    return PyErr_Format(PyExc_TypeError, "dtype must be float32 or float64");
  }
  PyObject *keep = NULL, *result = NULL;
  gl_DeviceArrayObject *out[3] = {NULL, NULL, NULL};
  void *workspace = NULL;
  size_t workspace_bytes = 0, available = 0;
  glc_stream stream = NULL;
  if (gl_stream_arg(args[8], &stream, &keep) < 0 || gl_require_gpu(NULL) < 0) goto done;
  const size_t rows = (size_t)1 << p.scale;
  /* the index dtype is known only once the edges are merged: the widest is reserved */
  const size_t index_bytes = p.edges > INT32_MAX ? 8 : 4, value_bytes = dtype == GLC_F64 ? 8 : 4;
  const size_t csr_bytes = (size_t)p.edges * (index_bytes + value_bytes) + (rows + 1) * index_bytes;
  /* the key arrays and counts alone first (20 bytes an edge): CUB is asked for its scratch
   * only for sizes that may fit */
  int code = gl_device_available(&available);
  workspace_bytes = (size_t)p.edges * 20;
  if (!code && workspace_bytes + csr_bytes <= available)
    code = glc_rmat_workspace_bytes(&p, &workspace_bytes);
  if (code) {
    gl_raise_cuda(code);
    goto done;
  }
  char detail[256];
  snprintf(detail, sizeof detail,
           "%llu edges at scale %d: %zu bytes of workspace, two key arrays, the counts and CUB's "
           "scratch, and at most %zu for the CSR arrays",
           p.edges, p.scale, workspace_bytes, csr_bytes);
  if (gl_check_workspace("rmat", (double)workspace_bytes + (double)csr_bytes, detail) < 0)
    goto done;
  glc_rmat_merged merged;
  unsigned long long nnz = 0;
  code = gl_device_alloc(&workspace, workspace_bytes, stream);
  if (code) workspace = NULL;
  if (!code) code = glc_rmat_edges(&p, workspace, workspace_bytes, &merged, stream);
  if (!code) {
    Py_BEGIN_ALLOW_THREADS
    code = gl_d2h(&nnz, merged.count, sizeof nnz, stream, GL_PATH_AUTO);
    Py_END_ALLOW_THREADS
  }
  if (!code && nnz > p.edges) {
    PyErr_Format(PyExc_RuntimeError, "rmat merged %llu edges into %llu entries", p.edges, nnz);
    goto done;
  }
  if (code) {
    gl_raise_cuda(code);
    goto done;
  }
  const int index_dtype = nnz > INT32_MAX ? GLC_I64 : GLC_I32;
  PyArray_Descr *index_descr =
      PyArray_DescrFromType(index_dtype == GLC_I64 ? NPY_INT64 : NPY_INT32);
  if (!index_descr) goto done;
  const Py_ssize_t lengths[3] = {(Py_ssize_t)rows + 1, (Py_ssize_t)nnz, (Py_ssize_t)nnz};
  for (int i = 0; i < 3; i++) {
    out[i] = gl_devarray_empty(1, &lengths[i], i < 2 ? index_descr : descr, stream, keep);
    if (!out[i]) break;
  }
  Py_DECREF(index_descr);
  if (!out[2]) goto done;
  code = glc_rmat_csr(&p, &merged, (size_t)nnz, index_dtype, dtype, out[0]->ptr, out[1]->ptr,
                      out[2]->ptr, stream);
  if (code) {
    gl_raise_cuda(code);
    goto done;
  }
  result = PyTuple_Pack(3, (PyObject *)out[0], (PyObject *)out[1], (PyObject *)out[2]);
done:
  if (workspace) gl_device_free(workspace, workspace_bytes, stream);
  for (int i = 0; i < 3; i++) Py_XDECREF(out[i]);
  Py_XDECREF(keep);
  Py_DECREF(descr);
  return result;
}

static PyMethodDef sparse_methods[] = {
    {"spmv", (PyCFunction)(void (*)(void))py_spmv, METH_FASTCALL,
     "spmv(data, indices, indptr, x, variant, stream, cols, max_row, block, lanes[, "
     "column_order]): y = A x for the CSR matrix (data, indices, indptr) of cols columns whose "
     "longest row has max_row nonzeros; column_order: csr_hub_sorted's (csr_hub_order)."},
    {"spmm", (PyCFunction)(void (*)(void))py_spmm, METH_FASTCALL,
     "spmm(data, indices, indptr, B, variant, stream, cols, max_row, block): C = A B for the "
     "CSR matrix A and a row-major dense B of cols rows."},
    {"cg", (PyCFunction)(void (*)(void))py_cg, METH_FASTCALL,
     "cg(data, indices, indptr, b, x0, variant, stream, cols, max_row, block, rtol, atol, "
     "maxiter, check_every, jacobi, phases): conjugate gradients on A x = b from x0 (empty: "
     "zeros); (x, residual norms, iterations, converged, breakdown, phase ms or None)."},
    {"csr_stats", (PyCFunction)(void (*)(void))py_csr_stats, METH_FASTCALL,
     "csr_stats(indptr, stream): (indptr[0], indptr[rows], max_row, empty_rows, decreasing_rows, "
     "sum of squared row lengths) of a device indptr, computed on the device."},
    {"csr_diagonals", (PyCFunction)(void (*)(void))py_csr_diagonals, METH_FASTCALL,
     "csr_diagonals(indptr, indices, stream): the distinct diagonals col - row of a device CSR "
     "matrix, or 33 for more than 32, counted on the device."},
    {"csr_hub_order", (PyCFunction)(void (*)(void))py_csr_hub_order, METH_FASTCALL,
     "csr_hub_order(indices, cols, top, stream) -> (order, top_nonzeros): csr_hub_sorted's "
     "column order (new_to_old, then the relabelled indices) and the nonzeros of the top most "
     "used columns, computed on the device."},
    {"rmat", (PyCFunction)(void (*)(void))py_rmat, METH_FASTCALL,
     "rmat(scale, edges, t_ab, t_a, t_c, edge_key, perm_key, dtype, stream) -> (indptr, "
     "indices, data): gl.sparse.rmat's CSR arrays, built on the device."},
    {NULL}};

static const gl_ladder *const sparse_ladders[] = {&gl_ladder_spmv, &gl_ladder_spmm, &gl_ladder_cg,
                                                  NULL};

const gl_lab gl_lab_module_sparse = {
    .name = "sparse", .ladders = sparse_ladders, .methods = sparse_methods};
