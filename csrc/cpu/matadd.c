/* C = A + B, row-major, on the host: the serial baseline (variant 100). */
#include "gpulab_cpu.h"

#define DEFINE_MATADD_SERIAL(type, suffix)                                                   \
  static void matadd_serial_##suffix(size_t rows, size_t cols, const type *a, const type *b, \
                                     type *c) {                                              \
    for (size_t row = 0; row < rows; ++row) {                                                \
      const size_t row_start = row * cols;                                                   \
      for (size_t col = 0; col < cols; ++col)                                                \
        c[row_start + col] = a[row_start + col] + b[row_start + col];                        \
    }                                                                                        \
  }

DEFINE_MATADD_SERIAL(float, f32)
DEFINE_MATADD_SERIAL(double, f64)

int glcpu_matadd(int variant, int dtype, size_t rows, size_t cols, const void *a, const void *b,
                 void *c) {
  if (variant != 100) return -1;
  switch (dtype) {
    case GLC_F32:
      matadd_serial_f32(rows, cols, a, b, c);
      return 0;
    case GLC_F64:
      matadd_serial_f64(rows, cols, a, b, c);
      return 0;
    default:
      return -1;
  }
}
