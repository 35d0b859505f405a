// Mandelbrot variants 0 and 2 and the entry point glc_mandelbrot. Variant 0 spends a thread on
// every pixel; variant 2 is Mariani-Silver (S4 section 1.8) with the recursion unrolled by the
// host: each level's squares sit in a device array, and the host launches one kernel per level
// whose blocks take one square each, fill it, evaluate it or append its sub-squares to the next
// level's array. Nothing comes back to the host between levels: each level's grid is as large as
// the level could be, and the blocks past the count that the level before wrote return at once
// (docs/labs/image.md).
#include "mandelbrot.cuh"

namespace {

// One thread per pixel, in 32 x 8 blocks: neighbouring pixels have similar dwells, so a warp's
// lanes mostly leave the loop together.
__global__ void mandelbrot_per_pixel(const double *xlim, const double *ylim, int width, int height,
                                     int max_iter, int *dwell) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col >= width || row >= height) return;
  const glc_view v = glc_read_view(xlim, ylim, width, height, max_iter);
  dwell[static_cast<size_t>(row) * width + col] = glc_dwell(v, row, col);
}

// One level of the queue. Level 0's squares are the grid (block (bx, by) takes the square at
// (bx, by) kMsInitial); later levels' are the first *count entries of squares. A square whose
// border is uniform is filled; one at the last level is evaluated pixel by pixel; any other
// appends its kMsSubdiv^2 sub-squares (those inside the image) to next.
__global__ void mandelbrot_queue_level(const double *xlim, const double *ylim, int width,
                                       int height, int max_iter, int *dwell, int side,
                                       const int2 *squares, const int *count, int2 *next,
                                       int *next_count, int last) {
  int2 sq;
  if (squares == nullptr) {
    sq = make_int2(blockIdx.x * side, blockIdx.y * side);
  } else {
    if (static_cast<int>(blockIdx.x) >= *count) return;
    sq = squares[blockIdx.x];
  }
  __shared__ glc_ms_shared scratch;
  const glc_view v = glc_read_view(xlim, ylim, width, height, max_iter);
  const int common = glc_ms_border_dwell(v, sq.x, sq.y, side, scratch);
  if (common >= 0 || last) {
    glc_ms_fill(v, dwell, sq.x, sq.y, side, common);
    return;
  }
  const int child = side / kMsSubdiv;
  if (threadIdx.x < kMsSubdiv * kMsSubdiv) {
    const int cx = sq.x + (threadIdx.x % kMsSubdiv) * child;
    const int cy = sq.y + (threadIdx.x / kMsSubdiv) * child;
    if (cx < width && cy < height) next[atomicAdd(next_count, 1)] = make_int2(cx, cy);
  }
}

// The levels' sides: kMsInitial, divided by kMsSubdiv down to kMsMinSize.
int queue_levels() {
  int levels = 1;
  for (int side = kMsInitial; side > kMsMinSize; side /= kMsSubdiv) levels++;
  return levels;
}

int mandelbrot_queue(int width, int height, const double *xlim, const double *ylim, int max_iter,
                     int *dwell, cudaStream_t stream) {
  const int levels = queue_levels();
  const size_t gx = glc_blocks_to_cover(width, kMsInitial);
  const size_t gy = glc_blocks_to_cover(height, kMsInitial);
  // level l holds at most gx gy 16^l squares; two arrays serve alternate levels
  size_t most = gx * gy;
  for (int l = 1; l < levels; l++) most *= kMsSubdiv * kMsSubdiv;
  void *scratch = nullptr;
  const size_t counts_bytes = 256;  // a count per level, the arrays after them 256-aligned
  int code = GLC_CUDA(cudaMallocAsync, &scratch, counts_bytes + 2 * most * sizeof(int2), stream);
  if (code) return code;
  int *counts = static_cast<int *>(scratch);
  int2 *arrays[2] = {reinterpret_cast<int2 *>(static_cast<char *>(scratch) + counts_bytes),
                     reinterpret_cast<int2 *>(static_cast<char *>(scratch) + counts_bytes) + most};
  code = GLC_CUDA(cudaMemsetAsync, counts, 0, levels * sizeof(int), stream);
  size_t capacity = gx * gy;
  int side = kMsInitial;
  for (int l = 0; l < levels && !code; l++) {
    const dim3 grid = l == 0 ? dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy))
                             : dim3(static_cast<unsigned>(capacity));
    const int2 *squares = l == 0 ? nullptr : arrays[(l - 1) % 2];
    const int *count = l == 0 ? nullptr : counts + l - 1;
    code = glc_launch(mandelbrot_queue_level, "mandelbrot_queue_level", grid, dim3(kMsThreads),
                      stream, xlim, ylim, width, height, max_iter, dwell, side, squares, count,
                      arrays[l % 2], counts + l, static_cast<int>(l == levels - 1));
    capacity *= kMsSubdiv * kMsSubdiv;
    side /= kMsSubdiv;
  }
  const int freed = GLC_CUDA(cudaFreeAsync, scratch, stream);
  return code ? code : freed;
}

}  // namespace

int glc_mandelbrot(int variant, int width, int height, const double *xlim, const double *ylim,
                   int max_iter, int *dwell, glc_stream stream) {
  if (width < 0 || height < 0 || width > 65536 || height > 65536 || max_iter < 1)
    return glc_fail(cudaErrorInvalidValue, "glc_mandelbrot");
  if (width == 0 || height == 0) return cudaSuccess;
  if (!glc_all_aligned(sizeof(double), xlim, ylim) || !glc_all_aligned(sizeof(int), dwell))
    return glc_fail(cudaErrorInvalidValue, "glc_mandelbrot");
  auto s = static_cast<cudaStream_t>(stream);
  switch (variant) {
    case GLC_MANDELBROT_PIXEL: {
      const dim3 block(32, 8);
      const dim3 grid(static_cast<unsigned>(glc_blocks_to_cover(width, 32)),
                      static_cast<unsigned>(glc_blocks_to_cover(height, 8)));
      return glc_launch(mandelbrot_per_pixel, "mandelbrot_per_pixel", grid, block, s, xlim, ylim,
                        width, height, max_iter, dwell);
    }
    case GLC_MANDELBROT_DYNAMIC:
      return glc_mandelbrot_dynamic(width, height, xlim, ylim, max_iter, dwell, s);
    case GLC_MANDELBROT_QUEUE:
      return mandelbrot_queue(width, height, xlim, ylim, max_iter, dwell, s);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_mandelbrot");
  }
}
