/* The sparse lab's bindings (LABS.md section 9, issue 14): spmv and spmm on the shared operand
 * placement (csrc/core/operands.h), the CSR matrix as its three arrays (data, indices, indptr: the
 * index arrays int32 or int64, their own dtype beside the data's). gpulab/labs/sparse.py's gl.CSR
 * checks the arrays' contents (offsets, column range) once, on construction; here the shapes and
 * dtypes are checked, before anything is allocated or launched. */
#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/operands.h"
#include "cuda/sparse/sparse.h"
#include "variants.h"

typedef struct {
  PyObject *block;
  int block_value;
  Py_ssize_t cols, max_row;
} spmv_params;

static int spmv_configure(gl_operands_call *c) {
  spmv_params *p = c->params;
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
  return glc_spmv(c->variant->id, p->block_value, &a, c->in[3], c->out[0], c->stream);
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

/* op(data, indices, indptr, x or B, variant, stream, cols, max_row, block), all positional. */
static PyObject *run_op(const gl_operands_op *op, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 9)
    return PyErr_Format(PyExc_TypeError, "_core.%s takes 9 positional arguments", op->ladder->op);
  spmv_params p = {args[8], 0, PyLong_AsSsize_t(args[6]), PyLong_AsSsize_t(args[7])};
  if (PyErr_Occurred()) return NULL;
  return gl_operands_run(op, args, args[4], args[5], &p);
}

static PyObject *py_spmv(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  return run_op(&spmv_op, args, nargs);
}

static PyObject *py_spmm(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  return run_op(&spmm_op, args, nargs);
}

static PyMethodDef sparse_methods[] = {
    {"spmv", (PyCFunction)(void (*)(void))py_spmv, METH_FASTCALL,
     "spmv(data, indices, indptr, x, variant, stream, cols, max_row, block): y = A x for the CSR "
     "matrix (data, indices, indptr) of cols columns whose longest row has max_row nonzeros."},
    {"spmm", (PyCFunction)(void (*)(void))py_spmm, METH_FASTCALL,
     "spmm(data, indices, indptr, B, variant, stream, cols, max_row, block): C = A B for the "
     "CSR matrix A and a row-major dense B of cols rows."},
    {NULL}};

static const gl_ladder *const sparse_ladders[] = {&gl_ladder_spmv, &gl_ladder_spmm, NULL};

const gl_lab gl_lab_module_sparse = {
    .name = "sparse", .ladders = sparse_ladders, .methods = sparse_methods};
