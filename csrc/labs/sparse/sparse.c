/* The sparse lab's bindings: spmv, spmm and cg on the shared operand placement
 * (csrc/core/operands.h), the CSR matrix as its three arrays (data, indices, indptr: the index
 * arrays int32 or int64, their own dtype beside the data's). gpulab/labs/sparse.py's gl.CSR checks
 * the arrays' contents (offsets, column range) once, on construction; here the shapes and dtypes
 * are checked, before anything is allocated or launched. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/errors.h"
#include "csrc/core/operands.h"
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

static int spmv_outputs(gl_operands_call *c) {
  const spmv_params *p = c->params;
  if (check_csr(c) < 0) return -1;
  if (c->shape[3][0] != p->cols) {
    PyErr_Format(PyExc_ValueError, "x must have A's %zd columns, got %zd elements", p->cols,
                 c->shape[3][0]);
    return -1;
  }
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
  const glc_csr a = csr_of(c);
  return glc_spmv(c->variant->id, p->block_value, p->lanes_value, &a, c->in[3], c->out[0],
                  c->stream);
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

/* op(data, indices, indptr, x or B, variant, stream, cols, max_row, block[, lanes]), all
 * positional: spmv takes lanes (csr_subwarp's tunable), spmm does not. */
static PyObject *run_op(const gl_operands_op *op, PyObject *const *args, Py_ssize_t nargs,
                        int takes_lanes) {
  if (nargs != 9 + takes_lanes)
    return PyErr_Format(PyExc_TypeError, "_core.%s takes %d positional arguments", op->ladder->op,
                        9 + takes_lanes);
  spmv_params p = {args[8], 0, PyLong_AsSsize_t(args[6]), PyLong_AsSsize_t(args[7])};
  if (PyErr_Occurred()) return NULL;
  p.lanes = takes_lanes ? args[9] : NULL;
  return gl_operands_run(op, args, args[4], args[5], &p);
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

/* cusparse_spmm_algorithm(data, indices, indptr, B, stream, cols, max_row) -> the documented name
 * of the cuSPARSE algorithm that spmm's variant cusparse chose for these device arrays and B's
 * column count, or None where no call has chosen one. The operands are checked as spmm checks
 * them; nothing runs. */
static PyObject *py_cusparse_spmm_algorithm(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 7)
    return PyErr_Format(PyExc_TypeError,
                        "_core.cusparse_spmm_algorithm takes 7 positional arguments");
  spmv_params p = {Py_None, 0, PyLong_AsSsize_t(args[5]), PyLong_AsSsize_t(args[6])};
  if (PyErr_Occurred()) return NULL;
  PyObject *variant = PyLong_FromLong(GLC_SPMM_CUSPARSE);
  if (variant == NULL) return NULL;
  gl_operands_call c = {.params = &p}; /* spmv_configure reads the params during the open */
  gl_operands_hold hold;
  PyObject *result = NULL;
  int device = 0;
  if (gl_operands_open(&spmm_op, args, variant, args[4], &c, &hold, &device) == 0) {
    if (!device) {
      PyErr_SetString(PyExc_TypeError,
                      "cusparse_spmm_algorithm takes A's and B's device arrays, got NumPy arrays");
    } else if (spmm_outputs(&c) == 0) {
      const glc_csr a = csr_of(&c);
      const char *name = NULL;
      const int code = glc_cusparse_spmm_algorithm(&a, (size_t)c.shape[3][1], &name);
      if (code)
        gl_raise_cuda(code);
      else
        result = name ? PyUnicode_FromString(name) : Py_NewRef(Py_None);
    }
  }
  gl_operands_close(&hold);
  Py_DECREF(variant);
  return result;
}

static PyMethodDef sparse_methods[] = {
    {"spmv", (PyCFunction)(void (*)(void))py_spmv, METH_FASTCALL,
     "spmv(data, indices, indptr, x, variant, stream, cols, max_row, block, lanes): y = A x for "
     "the CSR "
     "matrix (data, indices, indptr) of cols columns whose longest row has max_row nonzeros."},
    {"spmm", (PyCFunction)(void (*)(void))py_spmm, METH_FASTCALL,
     "spmm(data, indices, indptr, B, variant, stream, cols, max_row, block): C = A B for the "
     "CSR matrix A and a row-major dense B of cols rows."},
    {"cg", (PyCFunction)(void (*)(void))py_cg, METH_FASTCALL,
     "cg(data, indices, indptr, b, x0, variant, stream, cols, max_row, block, rtol, atol, "
     "maxiter, check_every, jacobi, phases): conjugate gradients on A x = b from x0 (empty: "
     "zeros); (x, residual norms, iterations, converged, breakdown, phase ms or None)."},
    {"cusparse_spmm_algorithm", (PyCFunction)(void (*)(void))py_cusparse_spmm_algorithm,
     METH_FASTCALL,
     "cusparse_spmm_algorithm(data, indices, indptr, B, stream, cols, max_row): the cuSPARSE "
     "algorithm spmm's variant cusparse chose for these device arrays, or None."},
    {NULL}};

static const gl_ladder *const sparse_ladders[] = {&gl_ladder_spmv, &gl_ladder_spmm, &gl_ladder_cg,
                                                  NULL};

const gl_lab gl_lab_module_sparse = {
    .name = "sparse", .ladders = sparse_ladders, .methods = sparse_methods};
