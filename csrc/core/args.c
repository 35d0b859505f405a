/* Argument checks shared by the ops: each message names the argument and what was expected. */
#include "args.h"

#include <string.h>

/* ml_dtypes' bfloat16 (its scalar type is named "ml_dtypes.bfloat16"), once seen or imported. */
static int bfloat16_typenum = NPY_NOTYPE;

static int is_bfloat16(PyArray_Descr *dtype) {
  if (dtype->type_num < NPY_USERDEF || PyDataType_ELSIZE(dtype) != 2) return 0;
  if (dtype->type_num == bfloat16_typenum) return 1;
  const char *name = dtype->typeobj ? dtype->typeobj->tp_name : "";
  if (strcmp(name, "ml_dtypes.bfloat16") != 0 && strcmp(name, "bfloat16") != 0) return 0;
  bfloat16_typenum = dtype->type_num;
  return 1;
}

int gl_bfloat16_typenum(void) {
  if (bfloat16_typenum != NPY_NOTYPE) return bfloat16_typenum;
  PyObject *module = PyImport_ImportModule("ml_dtypes");
  if (!module) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError,
                    "bfloat16 arrays need NumPy's bfloat16 from the ml_dtypes package (pip "
                    "install ml_dtypes, or gpulab[bfloat16]), which is not installed");
    return NPY_NOTYPE;
  }
  PyObject *type = PyObject_GetAttrString(module, "bfloat16");
  Py_DECREF(module);
  PyArray_Descr *descr = NULL;
  if (type && PyArray_DescrConverter(type, &descr) && is_bfloat16(descr)) {
    Py_DECREF(descr);
    Py_DECREF(type);
    return bfloat16_typenum;
  }
  Py_XDECREF(descr);
  Py_XDECREF(type);
  PyErr_Clear();
  PyErr_SetString(PyExc_TypeError, "ml_dtypes.bfloat16 is not a 2-byte NumPy dtype");
  return NPY_NOTYPE;
}

int gl_dtype_code(PyArray_Descr *dtype) {
  if (!PyArray_ISNBO(dtype->byteorder)) return -1;
  if (is_bfloat16(dtype)) return GLC_BF16;
  switch (dtype->type_num) {
    case NPY_FLOAT32:
      return GLC_F32;
    case NPY_FLOAT64:
      return GLC_F64;
    case NPY_INT32:
      return GLC_I32;
    case NPY_INT64:
      return GLC_I64;
    case NPY_UINT8:
      return GLC_U8;
    case NPY_INT8:
      return GLC_I8;
    case NPY_UINT16:
      return GLC_U16;
    case NPY_INT16:
      return GLC_I16;
    case NPY_UINT32:
      return GLC_U32;
    case NPY_HALF:
      return GLC_F16;
    default:
      return -1;
  }
}

static const char *const dtype_names[GL_DTYPE_COUNT] = {"float32", "float64", "int32",   "int64",
                                                        "uint8",   "int8",    "uint16",  "int16",
                                                        "uint32",  "float16", "bfloat16"};

const char *gl_dtype_name(int code) {
  return code >= 0 && code < GL_DTYPE_COUNT ? dtype_names[code] : "unknown";
}

int gl_dtype_typenum(int code) {
  static const int typenums[GL_DTYPE_COUNT] = {NPY_FLOAT32, NPY_FLOAT64, NPY_INT32,  NPY_INT64,
                                               NPY_UINT8,   NPY_INT8,    NPY_UINT16, NPY_INT16,
                                               NPY_UINT32,  NPY_HALF,    NPY_NOTYPE};
  if (code == GLC_BF16) return gl_bfloat16_typenum();
  return code >= 0 && code < GL_DTYPE_COUNT ? typenums[code] : NPY_NOTYPE;
}

int gl_check_dtype_in(PyArray_Descr *dtype, unsigned mask, const char *argname) {
  int code = gl_dtype_code(dtype);
  if (code >= 0 && (mask & GL_DT(code))) return 0;
  char allowed[128];
  size_t used = 0;
  for (int k = 0; k < GL_DTYPE_COUNT; k++)
    if (mask & GL_DT(k))
      used +=
          snprintf(allowed + used, sizeof allowed - used, "%s%s", used ? ", " : "", dtype_names[k]);
  PyErr_Format(PyExc_TypeError, "%s has dtype %S; expected one of: %s", argname, (PyObject *)dtype,
               allowed);
  return -1;
}

int gl_check_ndim(int ndim, int want, const char *argname) {
  if (want < 0 || ndim == want) return 0;
  PyErr_Format(PyExc_ValueError, "%s must be %d-D, got %d-D", argname, want, ndim);
  return -1;
}

int gl_check_host_array(PyObject *obj, const char *argname, int ndim, int writeable) {
  return gl_check_host_operand(obj, argname, ndim, writeable, 0, NULL);
}

int gl_check_host_operand(PyObject *obj, const char *argname, int ndim, int writeable,
                          int transposable, int *transposed) {
  if (transposed) *transposed = 0;
  if (!PyArray_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "%s must be a NumPy array or a device array, not %s", argname,
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  PyArrayObject *a = (PyArrayObject *)obj;
  if (gl_check_ndim(PyArray_NDIM(a), ndim, argname) < 0) return -1;
  if (transposable && PyArray_NDIM(a) == 2 && !PyArray_IS_C_CONTIGUOUS(a) &&
      PyArray_IS_F_CONTIGUOUS(a)) {
    *transposed = 1;
  } else if (!PyArray_IS_C_CONTIGUOUS(a)) {
    if (transposable)
      PyErr_Format(PyExc_ValueError,
                   "%s must be C-contiguous, or F-contiguous (a transposed view such as x.T); "
                   "pass numpy.ascontiguousarray(%s) to copy it",
                   argname, argname);
    else
      PyErr_Format(PyExc_ValueError,
                   "%s must be C-contiguous; pass numpy.ascontiguousarray(%s) to copy it", argname,
                   argname);
    return -1;
  }
  if (writeable && !PyArray_ISWRITEABLE(a)) {
    PyErr_Format(PyExc_ValueError, "%s is read-only", argname);
    return -1;
  }
  return 0;
}

PyObject *gl_shape_tuple(int ndim, const Py_ssize_t *shape) {
  PyObject *t = PyTuple_New(ndim);
  for (int i = 0; t && i < ndim; i++) {
    PyObject *n = PyLong_FromSsize_t(shape[i]);
    if (!n) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, i, n);
  }
  return t;
}

int gl_check_extent(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize, const char *argname) {
  Py_ssize_t bytes = itemsize > 0 ? itemsize : 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) {
      PyErr_Format(PyExc_ValueError, "%s has a negative dimension (%zd in axis %d)", argname,
                   shape[i], i);
      return -1;
    }
    if (shape[i] && bytes > PY_SSIZE_T_MAX / shape[i]) {
      PyErr_Format(PyExc_ValueError, "%s is too large: its bytes overflow", argname);
      return -1;
    }
    bytes = shape[i] ? bytes * shape[i] : bytes;
  }
  return 0;
}

int gl_check_same_shape(int ndim_a, const Py_ssize_t *shape_a, int ndim_b,
                        const Py_ssize_t *shape_b, const char *name_a, const char *name_b) {
  int same = ndim_a == ndim_b;
  for (int i = 0; same && i < ndim_a; i++) same = shape_a[i] == shape_b[i];
  if (same) return 0;
  PyObject *ta = gl_shape_tuple(ndim_a, shape_a), *tb = gl_shape_tuple(ndim_b, shape_b);
  if (ta && tb)
    PyErr_Format(PyExc_ValueError, "%s and %s must have the same shape, got %R and %R", name_a,
                 name_b, ta, tb);
  Py_XDECREF(ta);
  Py_XDECREF(tb);
  return -1;
}

int gl_shape_arg(PyObject *arg, int *ndim, Py_ssize_t *shape, Py_ssize_t *size) {
  PyObject *seq = PyLong_Check(arg) ? PyTuple_Pack(1, arg) : PySequence_Tuple(arg);
  if (!seq) {
    PyErr_Format(PyExc_TypeError, "shape must be an int or a sequence of ints");
    return -1;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  if (n > GL_MAX_NDIM) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError, "shape has %zd dimensions; at most %d are supported", n,
                 GL_MAX_NDIM);
    return -1;
  }
  *ndim = (int)n;
  *size = 1;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PyTuple_GET_ITEM(seq, i);
    Py_ssize_t v = PyLong_Check(item) ? PyLong_AsSsize_t(item) : -1;
    if (v < 0) {
      Py_DECREF(seq);
      if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "shape must hold non-negative ints, got %R", arg);
      }
      return -1;
    }
    shape[i] = v;
    if (v && *size > PY_SSIZE_T_MAX / v) {
      Py_DECREF(seq);
      PyErr_Format(PyExc_ValueError, "shape %R is too large", arg);
      return -1;
    }
    *size *= v;
  }
  Py_DECREF(seq);
  return 0;
}

int gl_real_arg(PyObject *obj, const char *argname, double *value) {
  if (!gl_is_real_scalar(obj)) {
    PyErr_Format(PyExc_TypeError, "%s must be a real number, not %s", argname,
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  *value = PyFloat_AsDouble(obj);
  if (*value != -1.0 || !PyErr_Occurred()) return 0;
  if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s is too large for a double, got %R", argname, obj);
  }
  return -1;
}

int gl_int64_arg(PyObject *obj, const char *argname, long long *value) {
  if (!PyIndex_Check(obj) || PyBool_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int, not %s", argname, Py_TYPE(obj)->tp_name);
    return -1;
  }
  PyObject *index = PyNumber_Index(obj);
  if (!index) return -1;
  int overflow = 0;
  *value = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (overflow) {
    PyErr_Format(PyExc_ValueError, "%s must fit in 64 bits, got %R", argname, obj);
    return -1;
  }
  return *value == -1 && PyErr_Occurred() ? -1 : 0;
}

int gl_is_real_scalar(PyObject *obj) {
  return PyFloat_Check(obj) || PyLong_Check(obj) || PyArray_IsScalar(obj, Integer) ||
         PyArray_IsScalar(obj, Floating) || PyArray_IsScalar(obj, Bool);
}
