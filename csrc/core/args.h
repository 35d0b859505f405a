/* Argument checks shared by the ops: each message names the argument and what was expected. */
#ifndef GL_ARGS_H
#define GL_ARGS_H

#include "cuda/core/gpulab_core.h" /* enum glc_dtype */
#include "py.h"

/* dtype masks, by enum glc_dtype */
#define GL_DT(code) (1u << (code))
#define GL_FLOATS (GL_DT(GLC_F32) | GL_DT(GLC_F64))
/* float16 and bfloat16: the tensor-core GEMM's operands (matmul), no other op's */
#define GL_HALVES (GL_DT(GLC_F16) | GL_DT(GLC_BF16))

/* enum glc_dtype of a NumPy dtype, or -1; the name of a code ("float32", ...) and its NumPy type
 * number. bfloat16 is ml_dtypes' NumPy dtype, a user type whose number NumPy gives it at run
 * time: gl_dtype_typenum(GLC_BF16) imports ml_dtypes, and is NPY_NOTYPE with TypeError set where
 * it is not installed (gl_bfloat16_typenum). */
int gl_dtype_code(PyArray_Descr *dtype);
const char *gl_dtype_name(int code);
int gl_dtype_typenum(int code);
int gl_bfloat16_typenum(void);
#define GL_DTYPE_COUNT 11
/* Checks a NumPy array argument; messages name the argument. ndim -1: any. Returns 0 or -1 with
 * an error. */
int gl_check_host_array(PyObject *obj, const char *argname, int ndim, int writeable);
/* gl_check_host_array for an operand that may also be given transposed: with transposable set, a
 * 2-D array that is F-contiguous but not C-contiguous (x.T of a C-contiguous x: strides
 * (itemsize, shape[0] itemsize)) is taken too, and *transposed says so (0 for a C-contiguous
 * one; an array of both, with a dimension of 1 or empty, counts as C-contiguous). Any other
 * layout is refused as gl_check_host_array refuses it. */
int gl_check_host_operand(PyObject *obj, const char *argname, int ndim, int writeable,
                          int transposable, int *transposed);
/* Raises ValueError when a and b differ in shape; names both arguments. */
int gl_check_same_shape(int ndim_a, const Py_ssize_t *shape_a, int ndim_b,
                        const Py_ssize_t *shape_b, const char *name_a, const char *name_b);
int gl_check_dtype_in(PyArray_Descr *dtype, unsigned dtype_mask, const char *argname);
/* ValueError unless ndim is want (want -1: any). */
int gl_check_ndim(int ndim, int want, const char *argname);
PyObject *gl_shape_tuple(int ndim, const Py_ssize_t *shape);
/* ValueError naming the argument unless every dimension is >= 0 and the bytes of the whole
 * array fit a Py_ssize_t: what a foreign array's interface says is checked before it is used. */
int gl_check_extent(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize, const char *argname);
/* A Python or NumPy real scalar (int, float, bool), not complex, not an array. */
int gl_is_real_scalar(PyObject *obj);
/* *value = a real scalar argument as a double: TypeError for anything else, ValueError naming the
 * argument for an int too large for a double. Returns 0 or -1. */
int gl_real_arg(PyObject *obj, const char *argname, double *value);
/* *value = an int argument as a long long: TypeError for anything else (bool too), ValueError
 * naming the argument outside 64 bits. Returns 0 or -1. */
int gl_int64_arg(PyObject *obj, const char *argname, long long *value);
/* Parses a shape argument (int or sequence of ints). */
int gl_shape_arg(PyObject *arg, int *ndim, Py_ssize_t *shape, Py_ssize_t *size);

#endif
