// What the host emulations of the sparse lab's SpMV kernels (subwarp_host.cpp, hybrid_host.cpp)
// share: a CSR matrix of given row lengths with random columns (repeats allowed) and values, its
// arrays followed by kEmuPad NaN entries (indices by 0s), y NaN and a marker past its end; and the
// check of y against a float64 product within 2 (n + 1) eps sum |a x| per row (n the row's
// length), with the marker past y untouched; and the suite of one lanes value over the four type
// pairs.
#ifndef GPULAB_TOOLS_EMULATE_EMU_SPMV_H
#define GPULAB_TOOLS_EMULATE_EMU_SPMV_H
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

constexpr int kEmuPad = 64;  // NaN (or 0 index) entries after every array

template <typename I, typename T>
struct EmuCsr {
  long long rows, nnz = 0, max_row = 0;
  std::vector<I> indptr, indices;
  std::vector<T> data, x, y;

  EmuCsr(const std::vector<long long> &lengths, long long cols, std::mt19937 &rng)
      : rows(static_cast<long long>(lengths.size())), indptr(rows + 1 + kEmuPad, I(0)) {
    for (long long i = 0; i < rows; i++) {
      indptr[i + 1] = indptr[i] + static_cast<I>(lengths[i]);
      if (lengths[i] > max_row) max_row = lengths[i];
    }
    nnz = indptr[rows];
    indices.assign(nnz + kEmuPad, I(0));
    data.assign(nnz + kEmuPad, T(NAN));
    x.assign(cols + kEmuPad, T(NAN));
    y.assign(rows + kEmuPad, T(NAN));
    std::uniform_int_distribution<long long> col(0, cols - 1);
    std::uniform_real_distribution<double> value(-1.0, 1.0);
    for (long long k = 0; k < nnz; k++) {
      indices[k] = static_cast<I>(col(rng));
      data[k] = static_cast<T>(value(rng));
    }
    for (long long j = 0; j < cols; j++) x[j] = static_cast<T>(value(rng));
    for (long long i = rows; i < rows + kEmuPad; i++) y[i] = T(12345);
  }

  // Rows of y outside the bound, and entries past y written, each reported (the first 3) with
  // label (the lanes, the matrix and the block) in front.
  long wrong_rows(const char *label) const {
    long wrong = 0;
    for (long long i = 0; i < rows; i++) {
      double want = 0, scale = 0;
      for (I k = indptr[i]; k < indptr[i + 1]; k++) {
        want += static_cast<double>(data[k]) * static_cast<double>(x[indices[k]]);
        scale += std::fabs(static_cast<double>(data[k]) * static_cast<double>(x[indices[k]]));
      }
      const double eps = sizeof(T) == 4 ? 0x1p-24 : 0x1p-53;
      const double bound = 2.0 * static_cast<double>(indptr[i + 1] - indptr[i] + 1) * eps * scale;
      if (!(std::fabs(static_cast<double>(y[i]) - want) <= bound) && wrong++ < 3)
        fprintf(stderr, "%s: row %lld (length %lld) gave %g, want %g\n", label, i,
                static_cast<long long>(indptr[i + 1] - indptr[i]), static_cast<double>(y[i]), want);
    }
    for (long long i = rows; i < rows + kEmuPad; i++)
      if (y[i] != T(12345) && wrong++ < 3)
        fprintf(stderr, "%s: y written past its end at %lld\n", label, i);
    return wrong;
  }
};

// Each host's matrices for one lanes value and one index and value type: the failed checks.
template <int L, typename I, typename T>
int suite_types(std::mt19937 &rng);

// One lanes value over int32 and int64 indices and float32 and float64 values, its line printed.
template <int L>
int suite() {
  std::mt19937 rng(L);
  int failed = suite_types<L, int, float>(rng) + suite_types<L, int, double>(rng) +
               suite_types<L, long long, float>(rng) + suite_types<L, long long, double>(rng);
  printf("lanes %2d: %s\n", L, failed ? "FAILED" : "ok");
  return failed;
}

#endif
