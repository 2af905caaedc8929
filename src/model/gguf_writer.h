// Writes a GGUF file (version 3; the layout gguf.h describes) that llama.cpp loads: the
// metadata with the types it was read with, tensor infos, then each tensor's bytes at the
// next multiple of general.alignment. The file appears whole or not at all: it is written
// beside the target under a temporary name and renamed into place only once complete.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hanpu/status.h"
#include "model/gguf.h"

namespace hanpu::model {

struct GgufTensorOut {
  std::string name;
  // Row-major, outermost first; written innermost first, outer dimensions of 1 left out as
  // ggml's writer leaves them ([1, n] is stored as [n]).
  std::vector<int64_t> shape;
  uint32_t ggml_type = 0;  // 0 F32, 1 F16, 30 BF16, or a block type's id
  uint64_t bytes = 0;      // of its data
  // Fills `bytes` bytes at `dst`; an error stops the write and no file is left behind.
  std::function<Status(uint8_t* dst)> fill;
};

// Writes `meta` and `tensors` (in this order) to `path`. `on_tensor(i)` is called after
// tensor i is written, for progress.
Status write_gguf(const std::string& path, const GgufMetadata& meta,
                  const std::vector<GgufTensorOut>& tensors,
                  const std::function<void(size_t)>& on_tensor = {});

}  // namespace hanpu::model
