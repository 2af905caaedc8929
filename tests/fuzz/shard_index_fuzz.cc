// libFuzzer target for model.safetensors.index.json, the map of a sharded checkpoint: any
// bytes must load the shards it names from its own folder (the fixture's model.safetensors is
// there) or fail with a Status — never crash, leave the folder, or load a tensor the map does
// not place (run under ASan + UBSan). Seeded with an index of the fixture's tensors.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_scratch.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool linked = [] {
    const std::string shard = hanpu::fuzz::scratch_dir() + "/model.safetensors";
    return symlink(HANPU_FIXTURES_DIR "/models/qwen35-tiny/model.safetensors", shard.c_str()) == 0;
  }();
  if (!linked) __builtin_trap();
  hanpu::fuzz::write_scratch("model.safetensors.index.json", data, size);
  hanpu::model::WeightStore store;
  if (!hanpu::model::load_safetensors(hanpu::fuzz::scratch_dir(), &store).ok()) return 0;
  for (const auto& [name, t] : store.tensors()) {
    if (t.file != hanpu::fuzz::scratch_dir() + "/model.safetensors")
      __builtin_trap();  // only the folder's shard
  }
  return 0;
}
