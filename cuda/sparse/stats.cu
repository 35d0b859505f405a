// Matrix analysis on the device: the row statistics and the diagonal count gl.CSR's choice of
// variant reads (gpulab/labs/sparse.py), computed where the matrix lives so that the call path
// never copies indptr (8 (rows + 1) bytes, 134 MB at 2^24 rows) to the host. Each entry point
// sends back a few numbers in one small copy.
#include <algorithm>

#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "dia.cuh"
#include "kernels.cuh"

namespace {

constexpr int kStatsBlock = 256;
constexpr unsigned kStatsMaxBlocks = 1024;  // grid-stride: about a wave on an H100

// A thread per row, striding over the grid; each warp's partials are combined by shuffles and
// added into *out by its lane 0 (the counts are integers, so the double sum of squares is
// exact, in any order, up to 2^53).
template <typename I>
__global__ void csr_stats(long long rows, const I *indptr, glc_csr_row_stats *out) {
  unsigned long long longest = 0, empty = 0, decreasing = 0;
  double squares = 0;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long row = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; row < rows;
       row += stride) {
    const long long length =
        static_cast<long long>(indptr[row + 1]) - static_cast<long long>(indptr[row]);
    if (length < 0) {
      decreasing++;
      continue;
    }
    const unsigned long long n = static_cast<unsigned long long>(length);
    longest = max(longest, n);
    empty += n == 0;
    squares += static_cast<double>(length) * static_cast<double>(length);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    longest = max(longest, __shfl_xor_sync(0xffffffffu, longest, offset));
    empty += __shfl_xor_sync(0xffffffffu, empty, offset);
    decreasing += __shfl_xor_sync(0xffffffffu, decreasing, offset);
    squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  }
  if (threadIdx.x % 32 == 0) {
    if (longest) atomicMax(&out->max_row, longest);
    if (empty) atomicAdd(&out->empty_rows, empty);
    if (decreasing) atomicAdd(&out->decreasing_rows, decreasing);
    if (squares != 0) atomicAdd(&out->sum_squares, squares);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    out->first = static_cast<long long>(indptr[0]);
    out->last = static_cast<long long>(indptr[rows]);
  }
}

template <typename I>
int stats(const glc_csr *a, glc_csr_row_stats *result, cudaStream_t stream) {
  const size_t cover = std::max<size_t>(1, glc_blocks_to_cover(a->rows, kStatsBlock));
  const unsigned grid = static_cast<unsigned>(std::min<size_t>(cover, kStatsMaxBlocks));
  GlcDeviceBuffer buffer;
  int code = buffer.allocate(sizeof(glc_csr_row_stats), stream);
  GLC_TRY(code, glc_memset_async(buffer.ptr, 0, sizeof(glc_csr_row_stats), stream));
  GLC_TRY(code, glc_launch(csr_stats<I>, "csr_stats", grid, kStatsBlock, stream,
                           static_cast<long long>(a->rows), static_cast<const I *>(a->indptr),
                           buffer.as<glc_csr_row_stats>()));
  GLC_TRY(code, glc_memcpy_async(result, buffer.ptr, sizeof(glc_csr_row_stats), stream));
  GLC_TRY(code, glc_stream_synchronize(stream));
  return code;
}

// dia.cuh's pass 1 alone: the offsets' table, of which only the count and overflow come back.
template <typename I>
int diagonals(const glc_csr *a, long long *count, cudaStream_t stream) {
  if (a->rows == 0 || a->nnz == 0) {
    *count = 0;
    return cudaSuccess;
  }
  const size_t cover = glc_blocks_to_cover(a->rows, kStatsBlock);
  const unsigned grid = static_cast<unsigned>(std::min<size_t>(cover, kDiaFindBlocks));
  GlcDeviceBuffer table;
  DiaTable found = {};
  int code = table.allocate(sizeof(DiaTable), stream);
  GLC_TRY(code, glc_memset_async(table.ptr, 0, sizeof(DiaTable), stream));
  GLC_TRY(code, glc_launch(dia_find_offsets<I>, "dia_find_offsets", grid, kStatsBlock, stream,
                           static_cast<long long>(a->rows), static_cast<const I *>(a->indptr),
                           static_cast<const I *>(a->indices), table.as<DiaTable>()));
  GLC_TRY(code, glc_memcpy_async(&found, table.ptr, sizeof found, stream));
  GLC_TRY(code, glc_stream_synchronize(stream));
  if (code) return code;
  const bool too_many = found.overflow || found.count > kDiaMaxDiagonals;
  *count = too_many ? kDiaMaxDiagonals + 1 : found.count;
  return cudaSuccess;
}

// What both entry points check: the matrix, its index dtype and the alignment of what they read.
int check(const glc_csr *a, const void *out, bool reads_indices, const char *name_a,
          const char *name_arrays) {
  if (a == nullptr || out == nullptr) return glc_fail(cudaErrorInvalidValue, name_a);
  if (a->index_dtype != GLC_I32 && a->index_dtype != GLC_I64)
    return glc_fail(cudaErrorInvalidValue, name_a);
  const size_t index_bytes = a->index_dtype == GLC_I64 ? 8 : 4;
  if (!glc_all_aligned(index_bytes, a->indptr) ||
      (reads_indices && a->nnz && !glc_all_aligned(index_bytes, a->indices)))
    return glc_fail(cudaErrorInvalidValue, name_arrays);
  return cudaSuccess;
}

}  // namespace

extern "C" int glc_csr_stats(const glc_csr *a, glc_csr_row_stats *stats_out, glc_stream stream) {
  int code = check(a, stats_out, false, "glc_csr_stats(a)", "glc_csr_stats(a.indptr)");
  if (code) return code;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  return a->index_dtype == GLC_I64 ? stats<long long>(a, stats_out, s)
                                   : stats<int>(a, stats_out, s);
}

extern "C" int glc_csr_diagonals(const glc_csr *a, long long *count, glc_stream stream) {
  int code = check(a, count, true, "glc_csr_diagonals(a)", "glc_csr_diagonals(a: index arrays)");
  if (code) return code;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  return a->index_dtype == GLC_I64 ? diagonals<long long>(a, count, s)
                                   : diagonals<int>(a, count, s);
}
