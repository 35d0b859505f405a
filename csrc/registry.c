/* Lookup and Python view of the variant tables. */
#include "registry.h"

#include <string.h>

#include "gl.h"

extern const gl_lab gl_lab_saxpy;
extern const gl_lab gl_lab_matadd;
extern const gl_lab gl_lab_reduce;
extern const gl_lab gl_lab_dot;
extern const gl_lab gl_lab_norm2;
extern const gl_lab gl_lab_nbody;

const gl_lab *const gl_labs[] = {
    &gl_lab_saxpy, &gl_lab_matadd, &gl_lab_reduce, &gl_lab_dot, &gl_lab_norm2, &gl_lab_nbody, NULL};

static const char *const dtype_names[] = {"float32", "float64", "int32", "int64"};

const gl_lab *gl_lab_find(const char *op) {
  for (int i = 0; gl_labs[i]; i++)
    if (strcmp(gl_labs[i]->op, op) == 0) return gl_labs[i];
  return NULL;
}

static void variant_list(const gl_lab *lab, int only_cpu, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < lab->count && used < size; i++) {
    const gl_variant *v = &lab->variants[i];
    if (only_cpu && v->backend != GL_BACKEND_CPU) continue;
    used += snprintf(buf + used, size - used, "%s%d %s", used ? ", " : "", v->id, v->name);
  }
}

void gl_registry_cpu_list(const char *op, char *buf, size_t size) {
  const gl_lab *lab = gl_lab_find(op);
  if (lab)
    variant_list(lab, 1, buf, size);
  else if (size)
    buf[0] = '\0';
}

const gl_variant *gl_resolve_variant(const gl_lab *lab, PyObject *variant, int gpu) {
  if (variant == Py_None) {
    gl_backend want = gpu ? GL_BACKEND_CUDA : GL_BACKEND_CPU;
    for (int i = 0; i < lab->count; i++)
      if (lab->variants[i].backend == want && (lab->variants[i].flags & GL_BEST))
        return &lab->variants[i];
    PyErr_Format(PyExc_ValueError, "%s has no default %s variant", lab->op, gpu ? "CUDA" : "CPU");
    return NULL;
  }
  if (PyIndex_Check(variant) && !PyBool_Check(variant)) { /* int, numpy integer */
    Py_ssize_t id = PyNumber_AsSsize_t(variant, NULL);
    if (id == -1 && PyErr_Occurred()) return NULL;
    for (int i = 0; i < lab->count; i++)
      if (lab->variants[i].id == id) return &lab->variants[i];
  } else if (PyUnicode_Check(variant)) {
    const char *name = PyUnicode_AsUTF8(variant);
    if (!name) return NULL;
    for (int i = 0; i < lab->count; i++)
      if (strcmp(lab->variants[i].name, name) == 0) return &lab->variants[i];
  } else {
    PyErr_Format(PyExc_TypeError, "variant must be None, an int id or a str name, not %s",
                 Py_TYPE(variant)->tp_name);
    return NULL;
  }
  char known[1024];
  variant_list(lab, 0, known, sizeof known);
  PyErr_Format(PyExc_ValueError, "variant: %s has no variant %R; known: %s", lab->op, variant,
               known);
  return NULL;
}

static const gl_tunable *find_tunable(const gl_variant *v, const char *name) {
  for (int i = 0; i < GL_MAX_TUNABLES; i++)
    if (v->tunables[i].name && strcmp(v->tunables[i].name, name) == 0) return &v->tunables[i];
  return NULL;
}

int gl_resolve_tunable(const gl_variant *v, const char *name, PyObject *arg, int *value) {
  const gl_tunable *t = find_tunable(v, name);
  if (arg == Py_None) {
    *value = t ? t->default_value : 0;
    return 0;
  }
  if (!t) {
    PyErr_Format(PyExc_ValueError, "%s: variant %d (%s) has no '%s' tunable; pass %s=None", name,
                 v->id, v->name, name, name);
    return -1;
  }
  if (!PyIndex_Check(arg) || PyBool_Check(arg)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int, not %s", name, Py_TYPE(arg)->tp_name);
    return -1;
  }
  Py_ssize_t wanted = PyNumber_AsSsize_t(arg, NULL);
  if (wanted == -1 && PyErr_Occurred()) return -1;
  char allowed[256];
  size_t used = 0;
  for (int i = 0; i < GL_MAX_TUNABLE_VALUES && t->values[i]; i++) {
    if (t->values[i] == wanted) {
      *value = (int)wanted;
      return 0;
    }
    used += snprintf(allowed + used, sizeof allowed - used, "%s%d", i ? ", " : "", t->values[i]);
  }
  PyErr_Format(PyExc_ValueError, "%s=%zd is out of range for variant %d (%s); allowed: %s", name,
               wanted, v->id, v->name, allowed);
  return -1;
}

int gl_resolve_mode(const gl_lab *lab, PyObject *arg, int *mode) {
  char known[256];
  size_t used = 0;
  known[0] = '\0';
  const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
  if (PyUnicode_Check(arg) && !name) return -1;
  for (int k = 0; lab->modes[k]; k++) {
    if (name && strcmp(name, lab->modes[k]) == 0) {
      *mode = k;
      return 0;
    }
    used += snprintf(known + used, sizeof known - used, "%s'%s'", k ? ", " : "", lab->modes[k]);
  }
  if (!PyUnicode_Check(arg))
    PyErr_Format(PyExc_TypeError, "%s must be a str (%s), not %s", lab->mode_arg, known,
                 Py_TYPE(arg)->tp_name);
  else
    PyErr_Format(PyExc_ValueError, "%s: %s has no %s %R; known: %s", lab->mode_arg, lab->op,
                 lab->mode_arg, arg, known);
  return -1;
}

static unsigned mode_dtype_mask(const gl_variant *v, int mode) {
  for (int k = 0; k < GL_MAX_MODES; k++)
    if (v->mode_dtypes[k]) return v->mode_dtypes[mode];
  return v->dtypes;
}

static size_t dtype_list(unsigned mask, char *buf, size_t size) {
  size_t used = 0;
  for (unsigned k = 0; k < sizeof dtype_names / sizeof *dtype_names && used < size; k++)
    if (mask & (1u << k))
      used += snprintf(buf + used, size - used, "%s%s", used ? ", " : "", dtype_names[k]);
  return used;
}

int gl_check_mode_support(const gl_lab *lab, const gl_variant *v, int mode, int dtype) {
  if (dtype >= 0 && (mode_dtype_mask(v, mode) & GL_DT(dtype))) return 0;
  char supported[512];
  size_t used = 0;
  supported[0] = '\0';
  for (int k = 0; lab->modes[k] && used < sizeof supported; k++) {
    unsigned mask = mode_dtype_mask(v, k);
    if (!mask) continue;
    used += snprintf(supported + used, sizeof supported - used, "%s%s of ", used ? "; " : "",
                     lab->modes[k]);
    if (used < sizeof supported)
      used += dtype_list(mask, supported + used, sizeof supported - used);
  }
  PyErr_Format(PyExc_ValueError, "variant %d (%s) of %s cannot do %s=%s on %s; it supports: %s",
               v->id, v->name, lab->op, lab->mode_arg, lab->modes[mode],
               dtype >= 0 ? dtype_names[dtype] : "this dtype", supported);
  return -1;
}

static PyObject *tunables_dict(const gl_variant *v) {
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < GL_MAX_TUNABLES; i++) {
    const gl_tunable *t = &v->tunables[i];
    if (!t->name) continue;
    PyObject *values = PyList_New(0);
    for (int k = 0; values && k < GL_MAX_TUNABLE_VALUES && t->values[k]; k++) {
      PyObject *x = PyLong_FromLong(t->values[k]);
      if (!x || PyList_Append(values, x) < 0) Py_CLEAR(values);
      Py_XDECREF(x);
    }
    PyObject *entry =
        values ? Py_BuildValue("{s:N,s:i}", "values", values, "default", t->default_value) : NULL;
    if (!entry || PyDict_SetItemString(d, t->name, entry) < 0) Py_CLEAR(d);
    Py_XDECREF(entry);
  }
  return d;
}

static PyObject *dtypes_list(unsigned mask) {
  PyObject *list = PyList_New(0);
  for (unsigned k = 0; list && k < sizeof dtype_names / sizeof *dtype_names; k++) {
    if (!(mask & (1u << k))) continue;
    PyObject *s = PyUnicode_FromString(dtype_names[k]);
    if (!s || PyList_Append(list, s) < 0) Py_CLEAR(list);
    Py_XDECREF(s);
  }
  return list;
}

/* {mode: [dtypes]} for a lab with modes, else {}. */
static PyObject *support_dict(const gl_lab *lab, const gl_variant *v) {
  PyObject *d = PyDict_New();
  for (int k = 0; d && lab->modes && lab->modes[k]; k++) {
    PyObject *dtypes = dtypes_list(mode_dtype_mask(v, k));
    if (!dtypes || PyDict_SetItemString(d, lab->modes[k], dtypes) < 0) Py_CLEAR(d);
    Py_XDECREF(dtypes);
  }
  return d;
}

static PyObject *variant_dict(const gl_lab *lab, const gl_variant *v) {
  PyObject *tunables = tunables_dict(v);
  PyObject *dtypes = dtypes_list(v->dtypes);
  PyObject *support = support_dict(lab, v);
  if (!tunables || !dtypes || !support) {
    Py_XDECREF(tunables);
    Py_XDECREF(dtypes);
    Py_XDECREF(support);
    return NULL;
  }
  return Py_BuildValue("{s:s,s:i,s:s,s:s,s:s,s:s,s:N,s:N,s:N,s:O,s:O}", "op", lab->op, "id", v->id,
                       "name", v->name, "backend", v->backend == GL_BACKEND_CUDA ? "cuda" : "cpu",
                       "summary", v->summary, "seed", v->seed, "tunables", tunables, "dtypes",
                       dtypes, "support", support, "best",
                       (v->flags & GL_BEST) ? Py_True : Py_False, "deterministic",
                       (v->flags & GL_DETERMINISTIC) ? Py_True : Py_False);
}

PyObject *gl_py_variants(PyObject *module, PyObject *unused) {
  PyObject *out = PyList_New(0);
  for (int i = 0; out && gl_labs[i]; i++) {
    for (int k = 0; k < gl_labs[i]->count; k++) {
      PyObject *d = variant_dict(gl_labs[i], &gl_labs[i]->variants[k]);
      if (!d || PyList_Append(out, d) < 0) Py_CLEAR(out);
      Py_XDECREF(d);
      if (!out) break;
    }
  }
  return out;
}
