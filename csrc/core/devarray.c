/* gpulab.DeviceArray: an n-d array in device memory, from the stream-ordered pool or borrowed
 * from another library. */
#include "devarray.h"

#include <stdint.h>

#include "args.h"
#include "device_memory.h"
#include "devarray_export.h"
#include "dlpack.h"
#include "errors.h"
#include "mirror.h"
#include "runtime.h"
#include "stream.h"
#include "transfer.h"

static void fill_c_strides(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize,
                           Py_ssize_t *strides) {
  Py_ssize_t stride = itemsize;
  for (int i = ndim - 1; i >= 0; i--) {
    strides[i] = stride;
    stride *= shape[i] ? shape[i] : 1;
  }
}

static gl_DeviceArrayObject *alloc_object(int ndim, const Py_ssize_t *shape, PyArray_Descr *dtype) {
  gl_DeviceArrayObject *a = PyObject_GC_New(gl_DeviceArrayObject, &gl_DeviceArrayType);
  if (!a) return NULL;
  a->ptr = NULL;
  a->ndim = ndim;
  a->size = 1;
  for (int i = 0; i < ndim; i++) {
    a->shape[i] = shape[i];
    a->size *= shape[i];
  }
  Py_INCREF(dtype);
  a->dtype = dtype;
  a->nbytes = a->size * PyDataType_ELSIZE(dtype);
  a->device = 0;
  a->readonly = 0;
  a->owns_memory = 0;
  a->mirror = NULL;
  a->mirror_tag = 0;
  a->stream = NULL;
  a->stream_keep = NULL;
  a->base = NULL;
  a->weakrefs = NULL;
  return a;
}

gl_DeviceArrayObject *gl_devarray_empty(int ndim, const Py_ssize_t *shape, PyArray_Descr *dtype,
                                        glc_stream stream, PyObject *stream_keep) {
  gl_DeviceArrayObject *a = alloc_object(ndim, shape, dtype);
  if (!a) return NULL;
  fill_c_strides(ndim, shape, PyDataType_ELSIZE(dtype), a->strides);
  int code = gl_device_alloc(&a->ptr, (size_t)a->nbytes, stream);
  if (code) {
    Py_DECREF(a);
    return (gl_DeviceArrayObject *)gl_raise_cuda(code);
  }
  a->owns_memory = 1;
  a->stream = stream;
  a->stream_keep = Py_XNewRef(stream_keep);
  PyObject_GC_Track(a);
  return a;
}

gl_DeviceArrayObject *gl_devarray_wrap(void *ptr, int ndim, const Py_ssize_t *shape,
                                       const Py_ssize_t *strides, PyArray_Descr *dtype, int device,
                                       int readonly, PyObject *base) {
  gl_DeviceArrayObject *a = alloc_object(ndim, shape, dtype);
  if (!a) return NULL;
  if (strides)
    for (int i = 0; i < ndim; i++) a->strides[i] = strides[i];
  else
    fill_c_strides(ndim, shape, PyDataType_ELSIZE(dtype), a->strides);
  a->ptr = ptr;
  a->device = device;
  a->readonly = readonly;
  a->stream = gl_library_stream();
  a->base = Py_XNewRef(base);
  PyObject_GC_Track(a);
  return a;
}

int gl_devarray_is_c_contiguous(const gl_DeviceArrayObject *a) {
  Py_ssize_t expected = PyDataType_ELSIZE(a->dtype);
  for (int i = a->ndim - 1; i >= 0; i--) {
    if (a->shape[i] != 1 && a->strides[i] != expected) return a->size == 0;
    expected *= a->shape[i];
  }
  return 1;
}

int gl_devarray_is_transposed(const gl_DeviceArrayObject *a) {
  if (a->ndim != 2 || gl_devarray_is_c_contiguous(a)) return 0;
  /* F-contiguous: the first dimension's elements adjacent, the second's a column apart */
  const Py_ssize_t itemsize = PyDataType_ELSIZE(a->dtype);
  return a->strides[0] == itemsize && a->strides[1] == a->shape[0] * itemsize;
}

int gl_check_device_array(gl_DeviceArrayObject *a, const char *argname, int ndim, int writeable) {
  return gl_check_device_operand(a, argname, ndim, writeable, 0, NULL);
}

int gl_check_device_operand(gl_DeviceArrayObject *a, const char *argname, int ndim, int writeable,
                            int transposable, int *transposed) {
  if (transposed) *transposed = 0;
  if (gl_check_ndim(a->ndim, ndim, argname) < 0) return -1;
  if (transposable && gl_devarray_is_transposed(a)) {
    *transposed = 1;
  } else if (!gl_devarray_is_c_contiguous(a)) {
    PyErr_Format(PyExc_ValueError,
                 transposable ? "%s must be C-contiguous on the device, or F-contiguous (a "
                                "transposed view such as x.T)"
                              : "%s must be C-contiguous on the device",
                 argname);
    return -1;
  }
  if (writeable && a->readonly) {
    PyErr_Format(PyExc_ValueError, "%s is read-only", argname);
    return -1;
  }
  /* Every kernel addresses whole elements; a view that starts inside one (a foreign array's
   * interface may say so) would fault, and that fault would end CUDA for the process. */
  const Py_ssize_t itemsize = PyDataType_ELSIZE(a->dtype);
  const uintptr_t ptr = (uintptr_t)a->ptr, size = (uintptr_t)itemsize;
  /* every dtype the ops take is a power of two: a mask, where a division would cost every call */
  if (a->size && itemsize > 1 && (size & (size - 1) ? ptr % size : ptr & (size - 1))) {
    PyErr_Format(PyExc_ValueError, "%s starts at %p, which is not aligned to its %zd-byte elements",
                 argname, a->ptr, itemsize);
    return -1;
  }
  return 0;
}

int gl_devarray_order_after(gl_DeviceArrayObject *a, glc_stream stream) {
  int code = gl_order_streams_on_device0(a->stream, stream);
  if (code) {
    gl_raise_cuda(code);
    return -1;
  }
  return 0;
}

void gl_devarray_set_mirror(gl_DeviceArrayObject *a, glc_scalar_mirror *mirror, unsigned tag) {
  gl_devarray_forget_mirror(a);
  a->mirror = mirror;
  a->mirror_tag = tag;
}

void gl_devarray_forget_mirror(gl_DeviceArrayObject *a) {
  if (!a->mirror) return;
  gl_mirror_release(a->mirror);
  a->mirror = NULL;
}

void gl_devarray_use(gl_DeviceArrayObject *a, glc_stream stream, PyObject *stream_keep) {
  if (a->stream == stream) return;
  a->stream = stream;
  Py_XSETREF(a->stream_keep, Py_XNewRef(stream_keep));
}

static int devarray_traverse(gl_DeviceArrayObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->base);
  Py_VISIT(self->stream_keep);
  return 0;
}

static int devarray_clear(gl_DeviceArrayObject *self) {
  Py_CLEAR(self->base);
  return 0;
}

static void devarray_dealloc(gl_DeviceArrayObject *self) {
  PyObject_GC_UnTrack(self);
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  /* Ordered on the last stream that used the array, so that pending kernels still see it.
   * A failure here (a dead context at exit) can't be reported from a destructor. */
  gl_devarray_forget_mirror(self);
  if (self->owns_memory && self->ptr) gl_device_free(self->ptr, (size_t)self->nbytes, self->stream);
  Py_CLEAR(self->base);
  Py_CLEAR(self->stream_keep);
  Py_CLEAR(self->dtype);
  PyObject_GC_Del(self);
}

static PyObject *devarray_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyErr_SetString(PyExc_TypeError,
                  "DeviceArray is made by gpulab.empty, zeros, to_device, as_device or "
                  "from_dlpack");
  return NULL;
}

static PyObject *devarray_get(gl_DeviceArrayObject *self, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"out", "stream", NULL};
  PyObject *out = Py_None, *stream_obj = Py_None, *keep = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:get", kwlist, &out, &stream_obj)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  if (!gl_devarray_is_c_contiguous(self))
    return PyErr_Format(PyExc_ValueError, "get() needs a C-contiguous device array");
  /* By default the copy is ordered after the work that last used the array. */
  glc_stream stream = self->stream;
  if (stream_obj != Py_None && gl_stream_arg(stream_obj, &stream, &keep) < 0) return NULL;
  Py_XDECREF(keep);
  PyArrayObject *host;
  const int fresh = out == Py_None;
  if (fresh) {
    Py_INCREF(self->dtype);
    host = (PyArrayObject *)PyArray_Empty(self->ndim, self->shape, self->dtype, 0);
    if (!host) return NULL;
  } else {
    if (gl_check_host_array(out, "out", self->ndim, 1) < 0) return NULL;
    host = (PyArrayObject *)out;
    if (!PyArray_EquivTypes(PyArray_DESCR(host), self->dtype))
      return PyErr_Format(PyExc_TypeError, "out has dtype %S; expected %S",
                          (PyObject *)PyArray_DESCR(host), (PyObject *)self->dtype);
    if (gl_check_same_shape(PyArray_NDIM(host), PyArray_SHAPE(host), self->ndim, self->shape, "out",
                            "the device array") < 0)
      return NULL;
    Py_INCREF(host);
  }
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = gl_d2h_result(PyArray_DATA(host), self->ptr, (size_t)self->nbytes, stream, fresh);
  Py_END_ALLOW_THREADS
  if (code) {
    Py_DECREF(host);
    return gl_raise_cuda(code);
  }
  return (PyObject *)host;
}

/* item(): the one element of a size-1 array as a Python scalar, after the work that last used
 * the array (like NumPy's and PyTorch's .item()). */
static PyObject *devarray_item(gl_DeviceArrayObject *self, PyObject *unused) {
  if (self->size != 1)
    return PyErr_Format(PyExc_ValueError,
                        "item() needs an array of exactly one element, this one has %zd",
                        self->size);
  if (gl_require_gpu(NULL) < 0) return NULL;
  _Alignas(16) char value[32];
  if ((size_t)self->nbytes > sizeof value)
    return PyErr_Format(PyExc_TypeError, "item() does not support dtype %S",
                        (PyObject *)self->dtype);
  if (!self->mirror ||
      !gl_mirror_read(self->mirror, self->mirror_tag, value, (size_t)self->nbytes)) {
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = gl_d2h(value, self->ptr, (size_t)self->nbytes, self->stream, GL_PATH_AUTO);
    Py_END_ALLOW_THREADS
    if (code) return gl_raise_cuda(code);
  }
  PyObject *scalar = PyArray_Scalar(value, self->dtype, NULL);
  if (!scalar) return NULL;
  PyObject *item = PyObject_CallMethod(scalar, "item", NULL);
  Py_DECREF(scalar);
  return item;
}

static PyObject *devarray_float(PyObject *self) {
  PyObject *item = devarray_item((gl_DeviceArrayObject *)self, NULL);
  PyObject *f = item ? PyNumber_Float(item) : NULL;
  Py_XDECREF(item);
  return f;
}

static PyObject *devarray_int(PyObject *self) {
  PyObject *item = devarray_item((gl_DeviceArrayObject *)self, NULL);
  PyObject *i = item ? PyNumber_Long(item) : NULL;
  Py_XDECREF(item);
  return i;
}

static Py_ssize_t devarray_len(gl_DeviceArrayObject *self) {
  if (self->ndim == 0) {
    PyErr_SetString(PyExc_TypeError, "len() of a 0-d device array");
    return -1;
  }
  return self->shape[0];
}

static PyObject *devarray_repr(gl_DeviceArrayObject *self) {
  PyObject *shape = gl_shape_tuple(self->ndim, self->shape);
  if (!shape) return NULL;
  PyObject *r = PyUnicode_FromFormat("gpulab.DeviceArray(shape=%R, dtype=%S, device=%d)", shape,
                                     (PyObject *)self->dtype, self->device);
  Py_DECREF(shape);
  return r;
}

static PyObject *get_shape(gl_DeviceArrayObject *s, void *c) {
  return gl_shape_tuple(s->ndim, s->shape);
}
static PyObject *get_strides(gl_DeviceArrayObject *s, void *c) {
  return gl_shape_tuple(s->ndim, s->strides);
}
static PyObject *get_dtype(gl_DeviceArrayObject *s, void *c) {
  return Py_NewRef((PyObject *)s->dtype);
}
static PyObject *get_size(gl_DeviceArrayObject *s, void *c) { return PyLong_FromSsize_t(s->size); }
static PyObject *get_nbytes(gl_DeviceArrayObject *s, void *c) {
  return PyLong_FromSsize_t(s->nbytes);
}
static PyObject *get_ndim(gl_DeviceArrayObject *s, void *c) { return PyLong_FromLong(s->ndim); }
static PyObject *get_itemsize(gl_DeviceArrayObject *s, void *c) {
  return PyLong_FromSsize_t(PyDataType_ELSIZE(s->dtype));
}
static PyObject *get_device(gl_DeviceArrayObject *s, void *c) { return PyLong_FromLong(s->device); }
static PyObject *get_ptr(gl_DeviceArrayObject *s, void *c) {
  gl_devarray_forget_mirror(s);
  return PyLong_FromVoidPtr(s->ptr);
}
static PyObject *get_readonly(gl_DeviceArrayObject *s, void *c) {
  return PyBool_FromLong(s->readonly);
}

static PyGetSetDef devarray_getset[] = {
    {"shape", (getter)get_shape, NULL, "Shape, as a tuple.", NULL},
    {"strides", (getter)get_strides, NULL, "Strides in bytes.", NULL},
    {"dtype", (getter)get_dtype, NULL, "NumPy dtype of the elements.", NULL},
    {"size", (getter)get_size, NULL, "Number of elements.", NULL},
    {"nbytes", (getter)get_nbytes, NULL, "Bytes of data.", NULL},
    {"ndim", (getter)get_ndim, NULL, "Number of dimensions.", NULL},
    {"itemsize", (getter)get_itemsize, NULL, "Bytes per element.", NULL},
    {"device", (getter)get_device, NULL, "CUDA device ordinal.", NULL},
    {"ptr", (getter)get_ptr, NULL, "Device pointer, as an int.", NULL},
    {"readonly", (getter)get_readonly, NULL, "True for read-only foreign memory.", NULL},
    {"__cuda_array_interface__", (getter)gl_devarray_cai, NULL,
     "The CUDA Array Interface, version 3.", NULL},
    {NULL}};

static PyMethodDef devarray_methods[] = {
    {"get", (PyCFunction)(void (*)(void))devarray_get, METH_VARARGS | METH_KEYWORDS,
     "get(out=None, stream=None): copy to a NumPy array (or into out) and wait for it. The copy "
     "is ordered on stream, by default the stream that last used this array."},
    {"item", (PyCFunction)devarray_item, METH_NOARGS,
     "item(): the element of a one-element array as a Python scalar (waits for it)."},
    {"__dlpack__", (PyCFunction)(void (*)(void))gl_devarray_dlpack, METH_VARARGS | METH_KEYWORDS,
     "DLPack export: __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)."},
    {"__dlpack_device__", (PyCFunction)gl_devarray_dlpack_device, METH_NOARGS,
     "(kDLCUDA, device ordinal)."},
    {NULL}};

static PySequenceMethods devarray_as_sequence = {.sq_length = (lenfunc)devarray_len};
static PyNumberMethods devarray_as_number = {.nb_float = devarray_float, .nb_int = devarray_int};

PyTypeObject gl_DeviceArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpulab.DeviceArray",
    .tp_basicsize = sizeof(gl_DeviceArrayObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An array in GPU memory. Exports __cuda_array_interface__ (v3) and DLPack.",
    .tp_new = devarray_new,
    .tp_dealloc = (destructor)devarray_dealloc,
    .tp_traverse = (traverseproc)devarray_traverse,
    .tp_clear = (inquiry)devarray_clear,
    .tp_weaklistoffset = offsetof(gl_DeviceArrayObject, weakrefs),
    .tp_getset = devarray_getset,
    .tp_methods = devarray_methods,
    .tp_as_sequence = &devarray_as_sequence,
    .tp_as_number = &devarray_as_number,
    .tp_repr = (reprfunc)devarray_repr,
};

int gl_devarray_init(PyObject *module) {
  if (PyType_Ready(&gl_DeviceArrayType) < 0) return -1;
  return PyModule_AddObjectRef(module, "DeviceArray", (PyObject *)&gl_DeviceArrayType);
}
