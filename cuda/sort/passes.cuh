// Internal to cuda/sort/: the buffers of the LSD radix sorts' passes (radix.cu, onesweep.cu).
// Needs GlcDeviceBuffer and GLC_TRY: cuda/core/resources.cuh's, or the host emulation's
// (tools/emulate/sort_host.cpp), included first.
#ifndef GPULAB_SORT_PASSES_CUH
#define GPULAB_SORT_PASSES_CUH

#include "families.cuh"

// The buffers of an LSD radix sort's passes, which alternate between spare buffers of its own and
// the outputs, so that the last pass (of an even number) lands on the outputs. argsort returns no
// keys: they are sorted all the same, into a buffer of ours. (onesweep.cu takes the spares and
// outputs alone: it skips passes, and its device-side routes say which pass writes which.)
template <typename Key, typename Value, bool HasValues>
struct glc_sort_passes {
  GlcDeviceBuffer key_spare, key_result, value_spare;
  Key *keys_out = nullptr;
  Value *values_out = nullptr;

  int allocate(const glc_sort_call &call) {
    keys_out = static_cast<Key *>(call.keys_out);
    values_out = static_cast<Value *>(call.values_out);
    int code = key_spare.allocate(call.n * sizeof(Key), call.stream);
    if (keys_out == nullptr) {
      GLC_TRY(code, key_result.allocate(call.n * sizeof(Key), call.stream));
      keys_out = key_result.as<Key>();
    }
    if (HasValues) GLC_TRY(code, value_spare.allocate(call.n * sizeof(Value), call.stream));
    return code;
  }
  bool to_outputs(int pass, int passes) const { return (passes - 1 - pass) % 2 == 0; }
  Key *keys_to(int pass, int passes) const {
    return to_outputs(pass, passes) ? keys_out : key_spare.as<Key>();
  }
  Value *values_to(int pass, int passes) const {
    return to_outputs(pass, passes) ? values_out : value_spare.as<Value>();
  }
};

#endif
