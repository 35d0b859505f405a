/* gpulab.Stream and gpulab.Event: thin owners of CUDA streams and events. */
#include "stream.h"

#include <stdint.h>
#include <structmember.h>

#include "errors.h"
#include "runtime.h"

/* ---------------- Stream ---------------- */

static PyObject *stream_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"non_blocking", "priority", NULL};
  int non_blocking = 1, priority = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pi:Stream", kwlist, &non_blocking, &priority))
    return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  int least = 0, greatest = 0;
  int code = glc_stream_priority_range(&least, &greatest);
  if (code) return gl_raise_cuda(code);
  /* CUDA counts priorities downwards: greatest is the most negative. */
  if (priority > least || priority < greatest)
    return PyErr_Format(PyExc_ValueError,
                        "priority must lie in [%d, %d] on this device (lower is more urgent), "
                        "got %d",
                        greatest, least, priority);
  gl_StreamObject *self = (gl_StreamObject *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  code = glc_stream_create(&self->handle, non_blocking, priority);
  if (code) {
    Py_DECREF(self);
    return gl_raise_cuda(code);
  }
  self->owned = 1;
  self->non_blocking = non_blocking;
  self->priority = priority;
  return (PyObject *)self;
}

static void stream_dealloc(gl_StreamObject *self) {
  if (self->owned && self->handle) glc_stream_destroy(self->handle);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *stream_synchronize(gl_StreamObject *self, PyObject *unused) {
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_stream_synchronize(self->handle);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

static PyObject *stream_query(gl_StreamObject *self, PyObject *unused) {
  int code = glc_stream_query(self->handle);
  if (code == 600) Py_RETURN_FALSE; /* cudaErrorNotReady */
  if (code) return gl_raise_cuda(code);
  Py_RETURN_TRUE;
}

static PyObject *stream_wait_event(gl_StreamObject *self, PyObject *event) {
  if (!PyObject_TypeCheck(event, &gl_EventType))
    return PyErr_Format(PyExc_TypeError, "event must be a gpulab.Event, not %s",
                        Py_TYPE(event)->tp_name);
  int code = glc_stream_wait_event(self->handle, ((gl_EventObject *)event)->handle);
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

static PyObject *stream_handle(gl_StreamObject *self, void *closure) {
  return PyLong_FromVoidPtr(self->handle);
}

static PyObject *stream_cuda_stream_protocol(gl_StreamObject *self, PyObject *unused) {
  return Py_BuildValue("(iN)", 0, PyLong_FromVoidPtr(self->handle));
}

static PyObject *stream_repr(gl_StreamObject *self) {
  return PyUnicode_FromFormat("gpulab.Stream(handle=%p, non_blocking=%s, priority=%d)",
                              self->handle, self->non_blocking ? "True" : "False", self->priority);
}

static PyMethodDef stream_methods[] = {
    {"synchronize", (PyCFunction)stream_synchronize, METH_NOARGS,
     "Wait (without the GIL) until all work queued on this stream is done."},
    {"query", (PyCFunction)stream_query, METH_NOARGS, "True when all queued work is done."},
    {"wait_event", (PyCFunction)stream_wait_event, METH_O,
     "Make later work on this stream wait until the event has happened (cudaStreamWaitEvent)."},
    {"__cuda_stream__", (PyCFunction)stream_cuda_stream_protocol, METH_NOARGS,
     "The CUDA stream protocol: (version, handle)."},
    {NULL}};

static PyGetSetDef stream_getset[] = {
    {"handle", (getter)stream_handle, NULL, "The cudaStream_t as an int.", NULL},
    {"cuda_stream", (getter)stream_handle, NULL, "Alias of handle, as PyTorch names it.", NULL},
    {NULL}};

static PyMemberDef stream_members[] = {
    {"non_blocking", T_INT, offsetof(gl_StreamObject, non_blocking), READONLY,
     "True when the stream does not synchronise with the legacy default stream."},
    {"priority", T_INT, offsetof(gl_StreamObject, priority), READONLY,
     "CUDA priority; lower is more urgent."},
    {NULL}};

PyTypeObject gl_StreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpulab.Stream",
    .tp_basicsize = sizeof(gl_StreamObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Stream(non_blocking=True, priority=0): a CUDA stream. Every op takes stream=.",
    .tp_new = stream_new,
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
    .tp_members = stream_members,
    .tp_repr = (reprfunc)stream_repr,
};

/* ---------------- Event ---------------- */

static PyObject *event_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"timing", NULL};
  int timing = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:Event", kwlist, &timing)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  gl_EventObject *self = (gl_EventObject *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  int code = glc_event_create(&self->handle, timing);
  if (code) {
    Py_DECREF(self);
    return gl_raise_cuda(code);
  }
  self->timing = timing;
  return (PyObject *)self;
}

static void event_dealloc(gl_EventObject *self) {
  if (self->handle) glc_event_destroy(self->handle);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *event_record(gl_EventObject *self, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"stream", NULL};
  PyObject *stream_obj = Py_None, *keep = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:record", kwlist, &stream_obj)) return NULL;
  glc_stream stream;
  if (gl_stream_arg(stream_obj, &stream, &keep) < 0) return NULL;
  Py_XDECREF(keep);
  int code = glc_event_record(self->handle, stream);
  if (code) return gl_raise_cuda(code);
  Py_INCREF(self);
  return (PyObject *)self;
}

static PyObject *event_synchronize(gl_EventObject *self, PyObject *unused) {
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_event_synchronize(self->handle);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

static PyObject *event_query(gl_EventObject *self, PyObject *unused) {
  int code = glc_event_query(self->handle);
  if (code == 600) Py_RETURN_FALSE;
  if (code) return gl_raise_cuda(code);
  Py_RETURN_TRUE;
}

static PyMethodDef event_methods[] = {
    {"record", (PyCFunction)(void (*)(void))event_record, METH_VARARGS | METH_KEYWORDS,
     "record(stream=None): record the event on stream (default: the library's); returns self."},
    {"synchronize", (PyCFunction)event_synchronize, METH_NOARGS,
     "Wait (without the GIL) until the event has happened."},
    {"query", (PyCFunction)event_query, METH_NOARGS, "True when the event has happened."},
    {NULL}};

static PyObject *event_handle(gl_EventObject *self, void *closure) {
  return PyLong_FromVoidPtr(self->handle);
}

static PyGetSetDef event_getset[] = {
    {"handle", (getter)event_handle, NULL, "The cudaEvent_t as an int.", NULL}, {NULL}};

PyTypeObject gl_EventType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpulab.Event",
    .tp_basicsize = sizeof(gl_EventObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Event(timing=True): a CUDA event; see record(), synchronize() and elapsed_ms().",
    .tp_new = event_new,
    .tp_dealloc = (destructor)event_dealloc,
    .tp_methods = event_methods,
    .tp_getset = event_getset,
};

static PyObject *py_elapsed_ms(PyObject *module, PyObject *args) {
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "O!O!:elapsed_ms", &gl_EventType, &a, &gl_EventType, &b)) return NULL;
  if (!((gl_EventObject *)a)->timing || !((gl_EventObject *)b)->timing)
    return PyErr_Format(PyExc_ValueError, "elapsed_ms needs events created with timing=True");
  float ms = 0;
  int code =
      glc_event_elapsed_ms(&ms, ((gl_EventObject *)a)->handle, ((gl_EventObject *)b)->handle);
  if (code) return gl_raise_cuda(code);
  return PyFloat_FromDouble(ms);
}

/* Every public entry checks for a GPU before it reads stream=, so without this the parsing of
 * stream= could not be tested on machines without one (CI). */
static PyObject *py_stream_handle(PyObject *module, PyObject *arg) {
  glc_stream stream;
  PyObject *keep = NULL;
  if (gl_stream_arg(arg, &stream, &keep) < 0) return NULL;
  Py_XDECREF(keep);
  return PyLong_FromVoidPtr(stream);
}

static PyMethodDef stream_module_methods[] = {
    {"elapsed_ms", py_elapsed_ms, METH_VARARGS,
     "elapsed_ms(start, end): milliseconds between two recorded events."},
    {"_stream_handle", py_stream_handle, METH_O,
     "_stream_handle(stream): the cudaStream_t that stream= resolves to, as an int; raises what "
     "an op would for a bad stream=. For tests."},
    {NULL}};

/* ---------------- stream= arguments ---------------- */

/* Linux maps user space below 2**47 on x86-64 and arm64 (higher only for a process that asks
 * for it), so no cudaStream_t pointer lies above; the special handles 0, 1 and 2 lie below. */
#define GL_USER_ADDRESS_LIMIT (1ULL << 47)

int gl_stream_handle_arg(PyObject *handle, const char *argname, glc_stream *stream) {
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(handle, &overflow);
  if (value == -1 && PyErr_Occurred()) return -1;
  if (overflow == 0 && value >= 0 && (unsigned long long)value < GL_USER_ADDRESS_LIMIT) {
    *stream = (glc_stream)(uintptr_t)value;
    return 0;
  }
  PyErr_Format(PyExc_ValueError,
               "%s is %R, which can't be a CUDA stream handle: an int stream must be 0 (the "
               "legacy default stream), 1 (cudaStreamLegacy), 2 (cudaStreamPerThread) or a "
               "cudaStream_t pointer below 2**47, and is trusted as one, as CuPy and PyTorch do",
               argname, handle);
  return -1;
}

int gl_stream_arg(PyObject *arg, glc_stream *stream, PyObject **keep) {
  *keep = NULL;
  if (arg == Py_None) {
    *stream = gl_library_stream();
    return 0;
  }
  if (PyObject_TypeCheck(arg, &gl_StreamType)) {
    *stream = ((gl_StreamObject *)arg)->handle;
    *keep = Py_NewRef(arg);
    return 0;
  }
  if (PyLong_Check(arg)) return gl_stream_handle_arg(arg, "stream", stream);
  const char *argname = "stream.cuda_stream"; /* PyTorch */
  PyObject *handle = PyObject_GetAttrString(arg, "cuda_stream");
  if (!handle) {
    PyErr_Clear();
    argname = "stream.ptr"; /* CuPy */
    handle = PyObject_GetAttrString(arg, "ptr");
  }
  if (!handle || !PyLong_Check(handle)) {
    PyErr_Clear();
    Py_XDECREF(handle);
    PyErr_Format(PyExc_TypeError,
                 "stream must be None, a gpulab.Stream, an int handle (trusted as a "
                 "cudaStream_t) or a CuPy/PyTorch stream, not %s",
                 Py_TYPE(arg)->tp_name);
    return -1;
  }
  int rc = gl_stream_handle_arg(handle, argname, stream);
  Py_DECREF(handle);
  if (rc == 0) *keep = Py_NewRef(arg);
  return rc;
}

int gl_stream_init(PyObject *module) {
  if (PyType_Ready(&gl_StreamType) < 0 || PyType_Ready(&gl_EventType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Stream", (PyObject *)&gl_StreamType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Event", (PyObject *)&gl_EventType) < 0) return -1;
  return PyModule_AddFunctions(module, stream_module_methods);
}
