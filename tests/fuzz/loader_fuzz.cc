// libFuzzer target for the checkpoint header parsers: any bytes must parse or fail with a
// Status, never crash, hang or read out of bounds (run under ASan + UBSan). Built twice, as
// safetensors_fuzz and gguf_fuzz (HANPU_FUZZ_GGUF), so each starts from its own seed files.
#include <cstddef>
#include <cstdint>

#include "model/gguf.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hanpu::model::WeightStore store;
#ifdef HANPU_FUZZ_GGUF
  hanpu::model::GgufMetadata meta;
  (void)hanpu::model::parse_gguf(data, size, "fuzz.gguf", &meta, &store);
#else
  (void)hanpu::model::parse_safetensors(data, size, "fuzz.safetensors", &store);
#endif
  // Whatever parsed must lie inside the input.
  for (const auto& [name, t] : store.tensors()) {
    const uint64_t bytes = static_cast<uint64_t>(hanpu::shape_numel(t.shape)) * hanpu::dtype_size(t.dtype);
    if (t.file_offset + bytes > size) __builtin_trap();
  }
  return 0;
}
