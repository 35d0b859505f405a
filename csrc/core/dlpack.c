/* What the export and the import of device arrays share: dtypes between NumPy, the CUDA Array
 * Interface and DLPack, and the ordering of a producer's stream before a consumer's. */
#include "dlpack.h"

#include "args.h"

PyArray_Descr *gl_descr_from_typestr(PyObject *typestr) {
  /* Every foreign operand names its type this way: a typestr parsed once is looked up after. */
  static PyObject *parsed;
  if (!parsed && !(parsed = PyDict_New())) return NULL;
  PyArray_Descr *descr = PyUnicode_CheckExact(typestr)
                             ? (PyArray_Descr *)PyDict_GetItemWithError(parsed, typestr)
                             : NULL;
  if (descr) return (PyArray_Descr *)Py_NewRef(descr);
  if (PyErr_Occurred() || !PyArray_DescrConverter(typestr, &descr)) return NULL;
  if (!(PyTypeNum_ISNUMBER(descr->type_num) || descr->type_num == NPY_BOOL)) {
    PyErr_Format(PyExc_TypeError, "unsupported element type %R", typestr);
    Py_DECREF(descr);
    return NULL;
  }
  if (PyUnicode_CheckExact(typestr) && PyDict_GET_SIZE(parsed) < 64 &&
      PyDict_SetItem(parsed, typestr, (PyObject *)descr) < 0)
    PyErr_Clear(); /* not cached: parsed again next time */
  return descr;
}

int gl_dl_dtype_from_descr(PyArray_Descr *d, gl_DLDataType *out) {
  out->bits = (uint8_t)(PyDataType_ELSIZE(d) * 8);
  out->lanes = 1;
  if (gl_dtype_code(d) == GLC_BF16) { /* ml_dtypes' bfloat16, a user type of kind 'V' */
    out->code = GL_DL_BFLOAT;
    return 0;
  }
  switch (d->kind) {
    case 'b':
      out->code = GL_DL_BOOL;
      return 0;
    case 'i':
      out->code = GL_DL_INT;
      return 0;
    case 'u':
      out->code = GL_DL_UINT;
      return 0;
    case 'f':
      out->code = GL_DL_FLOAT;
      return 0;
    case 'c':
      out->code = GL_DL_COMPLEX;
      return 0;
  }
  PyErr_Format(PyExc_BufferError, "dtype %S has no DLPack equivalent", (PyObject *)d);
  return -1;
}

PyArray_Descr *gl_descr_from_dl(gl_DLDataType t) {
  char kind;
  switch (t.code) {
    case GL_DL_BOOL:
      kind = '?';
      break;
    case GL_DL_INT:
      kind = 'i';
      break;
    case GL_DL_UINT:
      kind = 'u';
      break;
    case GL_DL_FLOAT:
      kind = 'f';
      break;
    case GL_DL_COMPLEX:
      kind = 'c';
      break;
    case GL_DL_BFLOAT: /* PyTorch exports its bfloat16 this way only (no CAI typestr for it) */
      if (t.lanes != 1 || t.bits != 16)
        return PyErr_Format(PyExc_BufferError,
                            "DLPack bfloat16 with %d lanes of %d bits is not supported", t.lanes,
                            t.bits),
               NULL;
      if (gl_bfloat16_typenum() == NPY_NOTYPE) return NULL;
      return PyArray_DescrFromType(gl_bfloat16_typenum());
    default:
      return PyErr_Format(PyExc_BufferError, "DLPack dtype code %d is not supported", t.code), NULL;
  }
  if (t.lanes != 1 || t.bits % 8)
    return PyErr_Format(PyExc_BufferError, "DLPack dtype with %d lanes of %d bits is not supported",
                        t.lanes, t.bits),
           NULL;
  char spec[16];
  if (kind == '?')
    snprintf(spec, sizeof spec, "?");
  else
    snprintf(spec, sizeof spec, "=%c%d", kind, t.bits / 8);
  PyObject *s = PyUnicode_FromString(spec);
  PyArray_Descr *d = s ? gl_descr_from_typestr(s) : NULL;
  Py_XDECREF(s);
  return d;
}

int gl_order_streams(glc_stream producer, glc_stream consumer) {
  if (producer == consumer) return 0;
  glc_event event;
  int code = glc_event_create(&event, 0);
  if (code) return code;
  code = glc_event_record(event, producer);
  if (!code) code = glc_stream_wait_event(consumer, event);
  /* Destroying an event with a pending wait is allowed: CUDA releases it when done. */
  glc_event_destroy(event);
  return code;
}

int gl_order_streams_on_device0(glc_stream producer, glc_stream consumer) {
  if (producer == consumer) return 0;
  static glc_event event = NULL;
  int code = event ? 0 : glc_event_create(&event, 0);
  if (!code) code = glc_event_record(event, producer);
  if (!code) code = glc_stream_wait_event(consumer, event);
  return code;
}
