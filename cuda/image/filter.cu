// The filter entry point: the dispatch of glc_filter over the variants of filter_*.cu.
#include "filter.cuh"

int glc_filter(int variant, int dtype, size_t h, size_t w, int channels,
               const glc_filter_kernel *kernel, int mode, const void *img, void *out,
               glc_stream stream) {
  if (dtype != GLC_F32 && dtype != GLC_U8) return glc_fail(cudaErrorInvalidValue, "glc_filter");
  if (channels < 1 || channels > 4 || h > 65536 || w > 65536 || mode < GLC_MODE_REFLECT ||
      mode > GLC_MODE_MIRROR)
    return glc_fail(cudaErrorInvalidValue, "glc_filter");
  if (h == 0 || w == 0) return cudaSuccess;
  const size_t bytes = dtype == GLC_U8 ? 1 : 4;
  if (!glc_all_aligned(bytes, img, out)) return glc_fail(cudaErrorInvalidValue, "glc_filter");
  const int rows = static_cast<int>(h), cols = static_cast<int>(w);
  auto s = static_cast<cudaStream_t>(stream);
  switch (variant) {
    case GLC_FILTER_GLOBAL:
      return glc_filter_global(dtype, rows, cols, channels, kernel, mode, img, out, s);
    case GLC_FILTER_TEXTURE:
      return glc_filter_texture(dtype, rows, cols, channels, kernel, mode, img, out, s);
    case GLC_FILTER_SHARED:
      return glc_filter_shared(dtype, rows, cols, channels, kernel, mode, img, out, s);
    case GLC_FILTER_FUSED:
      return glc_filter_fused(dtype, rows, cols, channels, kernel, mode, img, out, s);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_filter");
  }
}
