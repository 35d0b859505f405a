/* Python's ways to make device arrays and to move data: to_device, empty, zeros, and each
 * transfer path on its own (_h2d, _d2h) for benchmarks/transfer_paths.py. */
#include "arrays.h"

#include "args.h"
#include "devarray.h"
#include "errors.h"
#include "interop.h"
#include "runtime.h"
#include "stream.h"
#include "transfer.h"

static int numeric_dtype(PyArray_Descr *dtype, const char *argname) {
  if (PyTypeNum_ISNUMBER(dtype->type_num) || dtype->type_num == NPY_BOOL ||
      gl_dtype_code(dtype) == GLC_BF16)
    return 0;
  PyErr_Format(PyExc_TypeError, "%s: dtype %S can't live on the device (numbers and bool only)",
               argname, (PyObject *)dtype);
  return -1;
}

/* A C-contiguous, aligned, native-byte-order NumPy array for obj (a new reference). */
static PyArrayObject *host_array_for_transfer(PyObject *obj) {
  PyArrayObject *host =
      (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
  if (!host) return NULL;
  if (numeric_dtype(PyArray_DESCR(host), "arr") < 0) {
    Py_DECREF(host);
    return NULL;
  }
  if (!PyArray_ISNBO(PyArray_DESCR(host)->byteorder)) {
    PyArray_Descr *native = PyArray_DescrNewByteorder(PyArray_DESCR(host), NPY_NATIVE);
    if (!native) {
      Py_DECREF(host);
      return NULL;
    }
    /* PyArray_FromArray steals the descriptor. */
    Py_SETREF(host, (PyArrayObject *)PyArray_FromArray(host, native, NPY_ARRAY_C_CONTIGUOUS));
  }
  return host;
}

static PyObject *py_to_device(PyObject *module, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"arr", "stream", NULL};
  PyObject *obj, *stream_obj = Py_None, *keep = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:to_device", kwlist, &obj, &stream_obj))
    return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  glc_stream stream;
  if (gl_stream_arg(stream_obj, &stream, &keep) < 0) return NULL;
  gl_DeviceArrayObject *dev = NULL;
  if (gl_is_device_operand(obj)) {
    dev = gl_as_device_array(obj, "arr", stream);
  } else {
    PyArrayObject *host = host_array_for_transfer(obj);
    if (host)
      dev = gl_devarray_empty(PyArray_NDIM(host), PyArray_SHAPE(host), PyArray_DESCR(host), stream,
                              keep);
    if (dev) {
      int code;
      Py_BEGIN_ALLOW_THREADS
      code = gl_h2d(dev->ptr, PyArray_DATA(host), (size_t)dev->nbytes, stream, GL_PATH_AUTO);
      Py_END_ALLOW_THREADS
      if (code) {
        Py_CLEAR(dev);
        gl_raise_cuda(code);
      }
    }
    Py_XDECREF(host);
  }
  Py_XDECREF(keep);
  return (PyObject *)dev;
}

static PyObject *make_array(PyObject *args, PyObject *kwargs, const char *fname, int zero) {
  static char *kwlist[] = {"shape", "dtype", "stream", NULL};
  PyObject *shape_obj, *stream_obj = Py_None, *keep = NULL;
  PyArray_Descr *dtype = NULL;
  char format[32];
  snprintf(format, sizeof format, "O|O&O:%s", fname);
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, kwlist, &shape_obj,
                                   PyArray_DescrConverter2, &dtype, &stream_obj))
    return NULL;
  if (!dtype) dtype = PyArray_DescrFromType(NPY_FLOAT32);
  int ndim;
  Py_ssize_t shape[GL_MAX_NDIM], size;
  gl_DeviceArrayObject *a = NULL;
  glc_stream stream;
  if (numeric_dtype(dtype, "dtype") == 0 && gl_shape_arg(shape_obj, &ndim, shape, &size) == 0 &&
      gl_require_gpu(NULL) == 0 && gl_stream_arg(stream_obj, &stream, &keep) == 0) {
    a = gl_devarray_empty(ndim, shape, dtype, stream, keep);
    int code = (a && zero) ? glc_memset_async(a->ptr, 0, (size_t)a->nbytes, stream) : 0;
    if (code) {
      Py_CLEAR(a);
      gl_raise_cuda(code);
    }
  }
  Py_XDECREF(keep);
  Py_DECREF(dtype);
  return (PyObject *)a;
}

static PyObject *py_empty(PyObject *m, PyObject *args, PyObject *kw) {
  return make_array(args, kw, "empty", 0);
}

static PyObject *py_zeros(PyObject *m, PyObject *args, PyObject *kw) {
  return make_array(args, kw, "zeros", 1);
}

static PyObject *py_copy_between(PyObject *args, PyObject *kwargs, int to_device) {
  static char *kwlist[] = {"dst", "src", "path", "stream", NULL};
  PyObject *dst, *src, *path_obj, *stream_obj = Py_None, *keep = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|O", kwlist, &dst, &src, &path_obj,
                                   &stream_obj))
    return NULL;
  int path;
  glc_stream stream;
  if (gl_copy_path_arg(path_obj, &path) < 0 || gl_require_gpu(NULL) < 0 ||
      gl_stream_arg(stream_obj, &stream, &keep) < 0)
    return NULL;
  Py_XDECREF(keep);
  PyObject *host = to_device ? src : dst, *dev = to_device ? dst : src;
  if (!gl_DeviceArray_Check(dev))
    return PyErr_Format(PyExc_TypeError, "%s must be a gpulab.DeviceArray",
                        to_device ? "dst" : "src");
  if (gl_check_host_array(host, to_device ? "src" : "dst", -1, !to_device) < 0) return NULL;
  gl_DeviceArrayObject *d = (gl_DeviceArrayObject *)dev;
  gl_devarray_forget_mirror(d);
  if ((size_t)PyArray_NBYTES((PyArrayObject *)host) != (size_t)d->nbytes)
    return PyErr_Format(PyExc_ValueError, "dst and src differ in size");
  void *h = PyArray_DATA((PyArrayObject *)host);
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = to_device ? gl_h2d(d->ptr, h, (size_t)d->nbytes, stream, path)
                   : gl_d2h(h, d->ptr, (size_t)d->nbytes, stream, path);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

static PyObject *py_h2d(PyObject *m, PyObject *a, PyObject *k) { return py_copy_between(a, k, 1); }
static PyObject *py_d2h(PyObject *m, PyObject *a, PyObject *k) { return py_copy_between(a, k, 0); }

PyMethodDef gl_arrays_methods[] = {
    {"to_device", (PyCFunction)(void (*)(void))py_to_device, METH_VARARGS | METH_KEYWORDS,
     "to_device(arr, stream=None): copy a NumPy array to the GPU."},
    {"empty", (PyCFunction)(void (*)(void))py_empty, METH_VARARGS | METH_KEYWORDS,
     "empty(shape, dtype=float32, stream=None): uninitialised device array."},
    {"zeros", (PyCFunction)(void (*)(void))py_zeros, METH_VARARGS | METH_KEYWORDS,
     "zeros(shape, dtype=float32, stream=None): zero-filled device array."},
    {"_h2d", (PyCFunction)(void (*)(void))py_h2d, METH_VARARGS | METH_KEYWORDS,
     "_h2d(dst, src, path, stream=None): host to device through one named path."},
    {"_d2h", (PyCFunction)(void (*)(void))py_d2h, METH_VARARGS | METH_KEYWORDS,
     "_d2h(dst, src, path, stream=None): device to host through one named path; waits."},
    {NULL}};
