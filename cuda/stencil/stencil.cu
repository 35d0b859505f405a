// The stencil op's entry point: checks the problem, compacts the weights into taps (only the
// nonzero ones are read: laplace7 is 7 taps of a 27-cell cube), uploads them to the stream's
// pool for the call, and hands the launch to the variant's family.
#include <cstring>
#include <vector>

#include "cuda/core/dtype_dispatch.cuh"
#include "cuda/core/launch.cuh"
#include "cuda/stencil/grid.cuh"

namespace {

// Taps and the scratch that holds them for one call, freed on the same stream after it.
template <typename T>
class taps_upload {
 public:
  explicit taps_upload(cudaStream_t stream) : stream_(stream) {}
  taps_upload(const taps_upload &) = delete;
  taps_upload &operator=(const taps_upload &) = delete;
  ~taps_upload() {
    if (ptr_) cudaFreeAsync(ptr_, stream_);
  }

  // swap_zy: variant 2 marches a 2D grid along y, as a (ny, 1, nx) grid: its taps' dy become dz.
  int build(const glc_stencil_problem &p, const glc_grid3 &g, bool swap_zy, glc_taps<T> *taps) {
    const int wz = 2 * p.r[0] + 1, wy = 2 * p.r[1] + 1, wx = 2 * p.r[2] + 1;
    std::vector<T> weights;
    std::vector<int> offsets;
    std::vector<long long> linear;
    for (int a = 0; a < wz; ++a)
      for (int b = 0; b < wy; ++b)
        for (int c = 0; c < wx; ++c) {
          double w = p.weights[(static_cast<size_t>(a) * wy + b) * wx + c];
          if (w == 0.0) continue;
          int dz = a - p.r[0], dy = b - p.r[1], dx = c - p.r[2];
          if (swap_zy) std::swap(dz, dy);
          weights.push_back(static_cast<T>(w));
          offsets.insert(offsets.end(), {dz, dy, dx});
          linear.push_back((static_cast<long long>(dz) * g.ny + dy) * g.nx + dx);
        }
    const size_t count = weights.size();
    taps->count = static_cast<int>(count);
    if (count == 0) return cudaSuccess;  // all-zero weights: out is zeros (fixed: edges copied)
    // linear first (8-byte aligned), then the weights, then the offsets
    const size_t linear_bytes = count * sizeof(long long), weight_bytes = count * sizeof(T);
    const size_t bytes = linear_bytes + weight_bytes + offsets.size() * sizeof(int);
    host_.resize(bytes);
    std::memcpy(host_.data(), linear.data(), linear_bytes);
    std::memcpy(host_.data() + linear_bytes, weights.data(), weight_bytes);
    std::memcpy(host_.data() + linear_bytes + weight_bytes, offsets.data(),
                offsets.size() * sizeof(int));
    int code = GLC_CUDA(cudaMallocAsync, &ptr_, bytes, stream_);
    if (code != cudaSuccess) return code;
    // pageable source: the call returns once the bytes are staged, so host_ may go
    code = GLC_CUDA(cudaMemcpyAsync, ptr_, host_.data(), bytes, cudaMemcpyHostToDevice, stream_);
    char *base = static_cast<char *>(ptr_);
    taps->linear = reinterpret_cast<const long long *>(base);
    taps->weights = reinterpret_cast<const T *>(base + linear_bytes);
    taps->offsets = reinterpret_cast<const int *>(base + linear_bytes + weight_bytes);
    return code;
  }

 private:
  cudaStream_t stream_;
  void *ptr_ = nullptr;
  std::vector<char> host_;
};

// Zeros where every weight is zero; under fixed, the shell cells still copy u (split does it).
template <typename T>
int run(int variant, const glc_stencil_launch<T> &l, const T *u, T *out) {
  switch (variant) {
    case GLC_STENCIL_NAIVE:
      return glc_stencil_naive(l, u, out);
    case GLC_STENCIL_SHARED_TILES:
      return glc_stencil_tiles(l, u, out);
    case GLC_STENCIL_STREAMING:
      return glc_stencil_streaming(l, u, out);
    case GLC_STENCIL_SPLIT:
      return glc_stencil_split(l, u, out, false);
    case GLC_STENCIL_HOPPER:
      return glc_stencil_split(l, u, out, true);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_stencil (unknown variant)");
  }
}

bool planar(const glc_stencil_problem &p) { return p.n[0] == 1 && p.r[0] == 0 && p.r[1] > 0; }

}  // namespace

extern "C" int glc_stencil(int variant, int block_x, int block_y, int rows, int dtype,
                           const glc_stencil_problem *p, const void *u, void *out,
                           glc_stream stream) {
  if (p == nullptr || p->weights == nullptr || p->boundary < GLC_BOUNDARY_ZERO ||
      p->boundary > GLC_BOUNDARY_FIXED)
    return glc_fail(cudaErrorInvalidValue, "glc_stencil (problem)");
  for (int a = 0; a < 3; ++a)
    if (p->n[a] >= (size_t{1} << 31) || p->r[a] < 0 || p->r[a] > GLC_STENCIL_MAX_RADIUS)
      return glc_fail(cudaErrorInvalidValue, "glc_stencil (shape or radius)");
  if (block_x < 0 || block_x > 1024 || block_y < 0 || block_y > 1024)
    return glc_fail(cudaErrorInvalidValue, "glc_stencil (block)");
  if (rows != 0 && rows != 1 && rows != 2 && rows != 4)
    return glc_fail(cudaErrorInvalidValue, "glc_stencil (rows)");
  if (p->n[0] * p->n[1] * p->n[2] == 0) return cudaSuccess;
  return glc_dispatch_floating(dtype, "glc_stencil (dtype)", [&](auto zero) {
    using T = decltype(zero);
    if (!glc_all_aligned(sizeof(T), static_cast<const T *>(u), static_cast<const T *>(out)))
      return glc_fail(cudaErrorInvalidValue, "glc_stencil (pointers)");
    glc_stencil_launch<T> l{};
    l.grid = {static_cast<int>(p->n[0]),
              static_cast<int>(p->n[1]),
              static_cast<int>(p->n[2]),
              p->r[0],
              p->r[1],
              p->r[2],
              p->boundary};
    const bool swap = variant == GLC_STENCIL_STREAMING && planar(*p);
    if (swap) {  // (1, ny, nx) marched along y as (ny, 1, nx)
      std::swap(l.grid.nz, l.grid.ny);
      std::swap(l.grid.rz, l.grid.ry);
    }
    l.dense = p->weights;
    l.block_x = block_x;
    l.block_y = block_y;
    l.rows = rows ? rows : 1;
    l.stream = static_cast<cudaStream_t>(stream);
    taps_upload<T> upload(l.stream);
    if (glc_stencil_needs_taps(variant, l, static_cast<const T *>(u),
                               static_cast<const T *>(out))) {
      const int code = upload.build(*p, l.grid, swap, &l.taps);
      if (code != cudaSuccess) return code;
    }
    return run(variant, l, static_cast<const T *>(u), static_cast<T *>(out));
  });
}
