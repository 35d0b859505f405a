/* Lookup and Python view of the variant tables. */
#include "registry.h"

#include <string.h>

#define GL_LAB(name) extern const gl_lab gl_lab_module_##name;
#include "csrc/labs/labs.def"
#undef GL_LAB

const gl_lab *const gl_labs[] = {
#define GL_LAB(name) &gl_lab_module_##name,
#include "csrc/labs/labs.def"
#undef GL_LAB
    NULL};

const gl_ladder *gl_ladder_find(const char *op) {
  for (int i = 0; gl_labs[i]; i++)
    for (int k = 0; gl_labs[i]->ladders && gl_labs[i]->ladders[k]; k++)
      if (strcmp(gl_labs[i]->ladders[k]->op, op) == 0) return gl_labs[i]->ladders[k];
  return NULL;
}

static void variant_list(const gl_ladder *ladder, int only_cpu, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < ladder->count && used < size; i++) {
    const gl_variant *v = &ladder->variants[i];
    if (only_cpu && v->backend != GL_BACKEND_CPU) continue;
    used += snprintf(buf + used, size - used, "%s%d %s", used ? ", " : "", v->id, v->name);
  }
}

void gl_registry_cpu_list(const char *op, char *buf, size_t size) {
  const gl_ladder *ladder = gl_ladder_find(op);
  if (ladder)
    variant_list(ladder, 1, buf, size);
  else if (size)
    buf[0] = '\0';
}

const gl_variant *gl_resolve_variant(const gl_ladder *ladder, PyObject *variant, int gpu) {
  if (variant == Py_None) {
    gl_backend want = gpu ? GL_BACKEND_CUDA : GL_BACKEND_CPU;
    for (int i = 0; i < ladder->count; i++)
      if (ladder->variants[i].backend == want && (ladder->variants[i].flags & GL_BEST))
        return &ladder->variants[i];
    PyErr_Format(PyExc_ValueError, "%s has no default %s variant", ladder->op,
                 gpu ? "CUDA" : "CPU");
    return NULL;
  }
  if (PyIndex_Check(variant) && !PyBool_Check(variant)) { /* int, numpy integer */
    Py_ssize_t id = PyNumber_AsSsize_t(variant, NULL);
    if (id == -1 && PyErr_Occurred()) return NULL;
    for (int i = 0; i < ladder->count; i++)
      if (ladder->variants[i].id == id) return &ladder->variants[i];
  } else if (PyUnicode_Check(variant)) {
    const char *name = PyUnicode_AsUTF8(variant);
    if (!name) return NULL;
    for (int i = 0; i < ladder->count; i++)
      if (strcmp(ladder->variants[i].name, name) == 0) return &ladder->variants[i];
  } else {
    PyErr_Format(PyExc_TypeError, "variant must be None, an int id or a str name, not %s",
                 Py_TYPE(variant)->tp_name);
    return NULL;
  }
  char known[1024];
  variant_list(ladder, 0, known, sizeof known);
  PyErr_Format(PyExc_ValueError, "variant: %s has no variant %R; known: %s", ladder->op, variant,
               known);
  return NULL;
}

const gl_variant *gl_best_for_dtype(const gl_ladder *ladder, const gl_variant *best, int dtype) {
  if (dtype < 0 || (best->dtypes & GL_DT(dtype))) return best;
  for (int i = 0; i < ladder->count; i++) {
    const gl_variant *v = &ladder->variants[i];
    if (v->backend == best->backend && (v->flags & GL_BEST_FOR_DTYPES) &&
        (v->dtypes & GL_DT(dtype)))
      return v;
  }
  return best;
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
  if (wanted == 0 && t->default_value == 0) { /* the variant's own choice, as None gives */
    *value = 0;
    return 0;
  }
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

int gl_resolve_mode(const gl_ladder *ladder, PyObject *arg, int *mode) {
  char known[256];
  size_t used = 0;
  known[0] = '\0';
  const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
  if (PyUnicode_Check(arg) && !name) return -1;
  for (int k = 0; ladder->modes[k]; k++) {
    if (name && strcmp(name, ladder->modes[k]) == 0) {
      *mode = k;
      return 0;
    }
    used += snprintf(known + used, sizeof known - used, "%s'%s'", k ? ", " : "", ladder->modes[k]);
  }
  if (!PyUnicode_Check(arg))
    PyErr_Format(PyExc_TypeError, "%s must be a str (%s), not %s", ladder->mode_arg, known,
                 Py_TYPE(arg)->tp_name);
  else
    PyErr_Format(PyExc_ValueError, "%s: %s has no %s %R; known: %s", ladder->mode_arg, ladder->op,
                 ladder->mode_arg, arg, known);
  return -1;
}

static unsigned mode_dtype_mask(const gl_variant *v, int mode) {
  for (int k = 0; k < GL_MAX_MODES; k++)
    if (v->mode_dtypes[k]) return v->mode_dtypes[mode];
  return v->dtypes;
}

static size_t dtype_list(unsigned mask, char *buf, size_t size) {
  size_t used = 0;
  for (int k = 0; k < GL_DTYPE_COUNT && used < size; k++)
    if (mask & (1u << k))
      used += snprintf(buf + used, size - used, "%s%s", used ? ", " : "", gl_dtype_name(k));
  return used;
}

int gl_check_mode_support(const gl_ladder *ladder, const gl_variant *v, int mode, int dtype) {
  if (dtype >= 0 && (mode_dtype_mask(v, mode) & GL_DT(dtype))) return 0;
  char supported[512];
  size_t used = 0;
  supported[0] = '\0';
  for (int k = 0; ladder->modes[k] && used < sizeof supported; k++) {
    unsigned mask = mode_dtype_mask(v, k);
    if (!mask) continue;
    used += snprintf(supported + used, sizeof supported - used, "%s%s of ", used ? "; " : "",
                     ladder->modes[k]);
    if (used < sizeof supported)
      used += dtype_list(mask, supported + used, sizeof supported - used);
  }
  PyErr_Format(PyExc_ValueError, "variant %d (%s) of %s cannot do %s=%s on %s; it supports: %s",
               v->id, v->name, ladder->op, ladder->mode_arg, ladder->modes[mode],
               dtype >= 0 ? gl_dtype_name(dtype) : "this dtype", supported);
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
  for (int k = 0; list && k < GL_DTYPE_COUNT; k++) {
    if (!(mask & (1u << k))) continue;
    PyObject *s = PyUnicode_FromString(gl_dtype_name(k));
    if (!s || PyList_Append(list, s) < 0) Py_CLEAR(list);
    Py_XDECREF(s);
  }
  return list;
}

/* {mode: [dtypes]} for an op with modes, else {}. */
static PyObject *support_dict(const gl_ladder *ladder, const gl_variant *v) {
  PyObject *d = PyDict_New();
  for (int k = 0; d && ladder->modes && ladder->modes[k]; k++) {
    PyObject *dtypes = dtypes_list(mode_dtype_mask(v, k));
    if (!dtypes || PyDict_SetItemString(d, ladder->modes[k], dtypes) < 0) Py_CLEAR(d);
    Py_XDECREF(dtypes);
  }
  return d;
}

static PyObject *variant_dict(const gl_lab *lab, const gl_ladder *ladder, const gl_variant *v) {
  PyObject *tunables = tunables_dict(v);
  PyObject *dtypes = dtypes_list(v->dtypes);
  PyObject *support = support_dict(ladder, v);
  if (!tunables || !dtypes || !support) {
    Py_XDECREF(tunables);
    Py_XDECREF(dtypes);
    Py_XDECREF(support);
    return NULL;
  }
  return Py_BuildValue("{s:s,s:s,s:i,s:s,s:s,s:s,s:s,s:N,s:N,s:N,s:O,s:O,s:O,s:O,s:O,s:z,s:z}",
                       "lab", lab->name, "op", ladder->op, "id", v->id, "name", v->name, "backend",
                       v->backend == GL_BACKEND_CUDA ? "cuda" : "cpu", "summary", v->summary,
                       "seed", v->seed, "tunables", tunables, "dtypes", dtypes, "support", support,
                       "best", (v->flags & GL_BEST) ? Py_True : Py_False, "best_for_dtypes",
                       (v->flags & GL_BEST_FOR_DTYPES) ? Py_True : Py_False, "deterministic",
                       (v->flags & GL_DETERMINISTIC) ? Py_True : Py_False, "racy",
                       (v->flags & GL_RACY) ? Py_True : Py_False, "device_launches",
                       (v->flags & GL_DEVICE_LAUNCHES) ? Py_True : Py_False, "kernels", v->kernels,
                       "library", v->library);
}

static PyObject *py_variants(PyObject *module, PyObject *unused) {
  PyObject *out = PyList_New(0);
  for (int i = 0; out && gl_labs[i]; i++) {
    for (int k = 0; out && gl_labs[i]->ladders && gl_labs[i]->ladders[k]; k++) {
      const gl_ladder *ladder = gl_labs[i]->ladders[k];
      for (int v = 0; out && v < ladder->count; v++) {
        PyObject *d = variant_dict(gl_labs[i], ladder, &ladder->variants[v]);
        if (!d || PyList_Append(out, d) < 0) Py_CLEAR(out);
        Py_XDECREF(d);
      }
    }
  }
  return out;
}

static PyObject *py_labs(PyObject *module, PyObject *unused) {
  PyObject *out = PyList_New(0);
  for (int i = 0; out && gl_labs[i]; i++) {
    PyObject *name = PyUnicode_FromString(gl_labs[i]->name);
    if (!name || PyList_Append(out, name) < 0) Py_CLEAR(out);
    Py_XDECREF(name);
  }
  return out;
}

PyMethodDef gl_registry_methods[] = {
    {"variants", py_variants, METH_NOARGS, "Every variant of every op, as dicts."},
    {"labs", py_labs, METH_NOARGS, "The labs' names, in the registry's order (labs.def)."},
    {NULL}};
