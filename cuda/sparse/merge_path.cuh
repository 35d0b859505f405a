// Internal to cuda/sparse/: one thread's share of a merge-path SpMV (csr.cu's
// spmv_csr_merge_path, and cg.cu's operator, which adds a dot product to it).
#ifndef GPULAB_CUDA_SPARSE_MERGE_PATH_CUH
#define GPULAB_CUDA_SPARSE_MERGE_PATH_CUH

constexpr int kMergeItems = 8;  // merge-path items (row ends + nonzeros) per thread

// Merge path (Merrill and Garland): the rows' ends (indptr[1..rows]) and the nonzeros 0..nnz-1
// are merged into one path of rows + nnz items, cut into equal shares; share `thread` starts
// where a binary search along its diagonal says, so every thread does the same work whatever the
// row lengths. emit(row, sum, whole) receives each row's part of the share: whole when the share
// both starts and ends the row (the caller stores it), otherwise a part the caller must add
// atomically into a zeroed y. A share past the path's end emits nothing.
template <typename I, typename T, typename Emit>
__device__ __forceinline__ void merge_path_share(long long thread, long long rows, long long nnz,
                                                 const I *indptr, const I *indices, const T *data,
                                                 const T *x, Emit emit) {
  const long long items = rows + nnz;
  const long long begin = thread * kMergeItems;
  if (begin >= items) return;
  const long long end = begin + kMergeItems < items ? begin + kMergeItems : items;
  // The diagonal's crossing: the most rows i (with j = begin - i nonzeros) such that row ends
  // before nonzero j's position come first in the merge (ties: the row end first).
  long long lo = begin > nnz ? begin - nnz : 0, hi = begin < rows ? begin : rows;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (static_cast<long long>(indptr[mid + 1]) <= begin - 1 - mid)
      lo = mid + 1;
    else
      hi = mid;
  }
  long long i = lo, j = begin - lo;
  const long long first_row = i;
  const bool first_started_here = i < rows && static_cast<long long>(indptr[i]) == j;
  long long row_begin = j;  // where this thread's part of row i started
  T sum = 0;
  for (long long item = begin; item < end; item++) {
    if (i < rows && static_cast<long long>(indptr[i + 1]) <= j) {  // row i ends here
      emit(i, sum, !(i == first_row && !first_started_here));
      sum = 0;
      i++;
      row_begin = j;
    } else {
      sum += data[j] * x[indices[j]];
      j++;
    }
  }
  if (i < rows && j > row_begin) emit(i, sum, false);  // a row this share left unfinished
}

#endif
