/* The registry: every lab (csrc/labs/labs.def), the ladder of variants of each of its ops, and
 * its Python functions. One ladder per op feeds the dispatch, gl.variants(), the docs and the
 * tests. */
#ifndef GL_REGISTRY_H
#define GL_REGISTRY_H

#include "args.h" /* GL_DT, GL_FLOATS */
#include "py.h"

typedef enum { GL_BACKEND_CUDA = 0, GL_BACKEND_CPU = 1 } gl_backend;

/* Variant flags. */
#define GL_BEST (1u << 0)          /* the one variant=None picks on its backend */
#define GL_DETERMINISTIC (1u << 1) /* bit-identical results from run to run */
/* A deliberate data race, kept so that it can be seen (the concepts lab's demos): its results vary
 * from run to run and lie only within bounds; the sanitizer runs that must come out clean skip it,
 * and its lab's driver shows that racecheck reports it where it can see it (shared memory). */
#define GL_RACY (1u << 2)
/* Every variant computes its op (the registry-driven tests hold each to the op's reference): a
 * ceiling an op is measured against is a reference line (gl.ceilings()), never a variant. */
/* variant=None's pick on its backend for the dtypes it takes that the backend's GL_BEST variant
 * does not (matmul's float16 and bfloat16, on the tensor cores): one such variant per dtype. */
#define GL_BEST_FOR_DTYPES (1u << 3)
/* Launches kernels from the device (CUDA dynamic parallelism). compute-sanitizer's initcheck,
 * racecheck and synccheck do not follow such launches (they warn and count the warning as an
 * error); memcheck does, so the sanitizer drivers give these variants to memcheck alone. */
#define GL_DEVICE_LAUNCHES (1u << 4)

#define GL_MAX_TUNABLES 4
#define GL_MAX_TUNABLE_VALUES 16
#define GL_MAX_MODES 4

typedef struct {
  const char *name;                  /* e.g. "block" */
  int values[GL_MAX_TUNABLE_VALUES]; /* allowed values, 0-terminated */
  /* one of values, or 0: the variant chooses the value in each call from its operands (spmv's
   * csr_subwarp picks its lanes from the mean row length); a call may then also pass 0 */
  int default_value;
} gl_tunable;

typedef struct {
  int id;
  const char *name;
  gl_backend backend;
  const char *summary;
  const char *seed;
  unsigned dtypes; /* mask of GL_DT(glc_dtype) */
  unsigned flags;
  gl_tunable tunables[GL_MAX_TUNABLES];
  /* For labs with modes (reduce's sum/min/max): the dtypes each mode supports, in the lab's
   * mode order. All zero: every mode supports `dtypes`. */
  unsigned mode_dtypes[GL_MAX_MODES];
  /* CUDA variants: the names of the functions in cuda/<lab>/ that it launches, space-separated,
   * in parentheses those that only some calls launch ("(histogram_data_range) ..."): gl.inspect
   * shows their source; on the GPU a test checks them against the launches. */
  const char *kernels;
  /* A variant that calls a library (CUB, cuBLAS) instead of launching kernels of ours: which
   * call; `kernels` then names our function that makes it. */
  const char *library;
} gl_variant;

/* The ladder of one op: its variants, in ladder order. */
typedef struct {
  const char *op;
  const gl_variant *variants;
  int count;
  /* The op's modes (NULL-terminated, e.g. "sum", "min", "max") and the argument that picks one;
   * NULL for an op without modes. */
  const char *const *modes;
  const char *mode_arg;
} gl_ladder;

/* The block sizes every CUDA variant that takes a block accepts unless it says otherwise. */
#define GL_BLOCKS_POW2 \
  { 32, 64, 128, 256, 512, 1024, 0 }

#define GL_COUNT_OF(array) ((int)(sizeof(array) / sizeof *(array)))

/* What a lab's binding (csrc/labs/<name>/) gives the module, as gl_lab_module_<name>: its name,
 * which is also its Python module's (gpulab/labs/<name>.py), the ladders of its ops
 * (NULL-terminated; NULL for a lab of measurements without ladders) and its Python functions. */
typedef struct {
  const char *name;
  const gl_ladder *const *ladders;
  PyMethodDef *methods;
} gl_lab;

/* Every lab, in labs.def's order; NULL-terminated (registry.c). */
extern const gl_lab *const gl_labs[];
/* The ladder of op, or NULL. */
const gl_ladder *gl_ladder_find(const char *op);

/* Resolves a variant= argument (None, int id or str name) for op. gpu says where the op runs
 * when variant is None. Returns the variant, or NULL with ValueError/TypeError set. */
const gl_variant *gl_resolve_variant(const gl_ladder *ladder, PyObject *variant, int gpu);

/* For a variant that variant=None picked (best): the ladder's GL_BEST_FOR_DTYPES variant of its
 * backend that takes dtype (enum glc_dtype) when best does not, else best. */
const gl_variant *gl_best_for_dtype(const gl_ladder *ladder, const gl_variant *best, int dtype);

/* Resolves a tunable argument (None or int) against the variant's allowed values. Returns 0 and
 * sets *value, or -1 with ValueError set. A variant without the tunable accepts only None
 * (*value is then 0). */
int gl_resolve_tunable(const gl_variant *v, const char *name, PyObject *arg, int *value);

/* Resolves the mode argument (a str) of lab to its index; ValueError names the known modes. */
int gl_resolve_mode(const gl_ladder *ladder, PyObject *arg, int *mode);

/* 0 when variant v supports mode and dtype (enum glc_dtype); otherwise raises ValueError that
 * says what v does support, and returns -1. */
int gl_check_mode_support(const gl_ladder *ladder, const gl_variant *v, int mode, int dtype);

/* Writes "100 serial, 101 openmp_simd" for the CPU variants of op. */
void gl_registry_cpu_list(const char *op, char *buf, size_t size);

/* Python: variants() (every variant of every op, as dicts) and labs() (the labs' names). */
extern PyMethodDef gl_registry_methods[];

#endif
