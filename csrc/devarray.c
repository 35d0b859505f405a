/* gpulab.DeviceArray: an n-d array in device memory, from the stream-ordered pool or borrowed
 * from another library. */
#include "gl.h"

static void fill_c_strides(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize,
                           Py_ssize_t *strides) {
  Py_ssize_t stride = itemsize;
  for (int i = ndim - 1; i >= 0; i--) {
    strides[i] = stride;
    stride *= shape[i] ? shape[i] : 1;
  }
}

/* Recently freed small blocks of the library's stream, handed to the next allocation of the
 * same size class on that stream without a CUDA call. Stream order makes the reuse safe, as in
 * CUDA's own pool; skipping cudaMallocAsync and cudaFreeAsync saves about 1 us of a 4-5 us
 * asynchronous call (benchmarks/NOTES.md). Only the library's stream, which lives as long as
 * the process: a user stream's handle could be reused by a new stream after it is destroyed.
 * The GIL guards the cache. */
#define BLOCK_CACHE_SLOTS 16
#define BLOCK_CACHE_MAX_BYTES (1u << 20)
#define BLOCK_CACHE_GRAIN 512

static struct {
  void *ptr[BLOCK_CACHE_SLOTS];
  size_t bytes[BLOCK_CACHE_SLOTS];
  int count;
  size_t total;
} block_cache;

static size_t block_class(size_t bytes) {
  return (bytes + BLOCK_CACHE_GRAIN - 1) / BLOCK_CACHE_GRAIN * BLOCK_CACHE_GRAIN;
}

static int device_alloc(void **ptr, size_t bytes, glc_stream stream) {
  size_t cls = block_class(bytes);
  if (bytes && cls <= BLOCK_CACHE_MAX_BYTES && stream == gl_library_stream()) {
    for (int i = block_cache.count - 1; i >= 0; i--) {
      if (block_cache.bytes[i] != cls) continue;
      *ptr = block_cache.ptr[i];
      block_cache.total -= cls;
      block_cache.count--;
      block_cache.ptr[i] = block_cache.ptr[block_cache.count];
      block_cache.bytes[i] = block_cache.bytes[block_cache.count];
      return 0;
    }
  }
  return glc_malloc_async(ptr, cls <= BLOCK_CACHE_MAX_BYTES ? cls : bytes, stream);
}

static void device_free(void *ptr, size_t bytes, glc_stream stream) {
  size_t cls = block_class(bytes);
  if (cls <= BLOCK_CACHE_MAX_BYTES && stream == gl_library_stream() &&
      block_cache.count < BLOCK_CACHE_SLOTS) {
    block_cache.ptr[block_cache.count] = ptr;
    block_cache.bytes[block_cache.count++] = cls;
    block_cache.total += cls;
    return;
  }
  glc_free_async(ptr, stream);
}

size_t gl_block_cache_bytes(void) { return block_cache.total; }

void gl_block_cache_trim(void) {
  while (block_cache.count > 0) {
    block_cache.count--;
    glc_free_async(block_cache.ptr[block_cache.count], gl_library_stream());
  }
  block_cache.total = 0;
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
  int code = device_alloc(&a->ptr, (size_t)a->nbytes, stream);
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
  if (self->owns_memory && self->ptr) device_free(self->ptr, (size_t)self->nbytes, self->stream);
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

/* ---- host <-> device ---- */

static int numeric_dtype(PyArray_Descr *dtype, const char *argname) {
  if (PyTypeNum_ISNUMBER(dtype->type_num) || dtype->type_num == NPY_BOOL) return 0;
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
      Py_BEGIN_ALLOW_THREADS code =
          gl_h2d(dev->ptr, PyArray_DATA(host), (size_t)dev->nbytes, stream, GL_PATH_AUTO);
      Py_END_ALLOW_THREADS if (code) {
        Py_CLEAR(dev);
        gl_raise_cuda(code);
      }
    }
    Py_XDECREF(host);
  }
  Py_XDECREF(keep);
  return (PyObject *)dev;
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
  if (out == Py_None) {
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
  Py_BEGIN_ALLOW_THREADS code =
      gl_d2h(PyArray_DATA(host), self->ptr, (size_t)self->nbytes, stream, GL_PATH_AUTO);
  Py_END_ALLOW_THREADS if (code) {
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
  int code;
  Py_BEGIN_ALLOW_THREADS code =
      gl_d2h(value, self->ptr, (size_t)self->nbytes, self->stream, GL_PATH_AUTO);
  Py_END_ALLOW_THREADS if (code) return gl_raise_cuda(code);
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
static PyObject *get_ptr(gl_DeviceArrayObject *s, void *c) { return PyLong_FromVoidPtr(s->ptr); }
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

static PyMethodDef devarray_module_methods[] = {
    {"to_device", (PyCFunction)(void (*)(void))py_to_device, METH_VARARGS | METH_KEYWORDS,
     "to_device(arr, stream=None): copy a NumPy array to the GPU."},
    {"empty", (PyCFunction)(void (*)(void))py_empty, METH_VARARGS | METH_KEYWORDS,
     "empty(shape, dtype=float32, stream=None): uninitialised device array."},
    {"zeros", (PyCFunction)(void (*)(void))py_zeros, METH_VARARGS | METH_KEYWORDS,
     "zeros(shape, dtype=float32, stream=None): zero-filled device array."},
    {NULL}};

int gl_devarray_init(PyObject *module) {
  if (PyType_Ready(&gl_DeviceArrayType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "DeviceArray", (PyObject *)&gl_DeviceArrayType) < 0) return -1;
  return PyModule_AddFunctions(module, devarray_module_methods);
}
