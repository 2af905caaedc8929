// libFuzzer target for the checkpoint header parsers: any bytes must parse or fail with a
// Status, never crash, hang or read out of bounds (run under ASan + UBSan). Built twice, as
// safetensors_fuzz and gguf_fuzz (HANPU_FUZZ_GGUF), so each starts from its own seed files;
// the GGUF one also builds the tokenizer and chat template a parsed header carries, and the
// model config and weight table, the whole path a --model x.gguf takes before the weights are
// converted: a config that passes must be bounded (model_config.h) and its table's shapes
// must be what the store holds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/gguf_config.h"
#include "model/gguf_tokenizer.h"
#include "model/safetensors.h"
#include "model/weight_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hanpu::model::WeightStore store;
#ifdef HANPU_FUZZ_GGUF
  hanpu::model::GgufMetadata meta;
  if (hanpu::model::parse_gguf(data, size, "fuzz.gguf", &meta, &store).ok()) {
    hanpu::model::Tokenizer tok;
    if (hanpu::model::gguf_tokenizer(meta, "fuzz.gguf", &tok).ok()) {
      std::vector<int> ids;
      if (tok.encode("<|im_start|>user\nHello, world! 123<|im_end|>", &ids).ok()) {
        for (int id : ids) {
          if (id < 0 || id >= tok.vocab_size()) __builtin_trap();
        }
      }
      std::string chat_template, bos, eos;
      hanpu::model::gguf_chat_template(meta, tok, &chat_template, &bos, &eos);
    }
    hanpu::model::ModelConfig c;
    if (hanpu::model::gguf_model_config(meta, store, "fuzz.gguf", &c).ok()) {
      if (!hanpu::model::validate_model_config(c, "again").ok()) __builtin_trap();
      const auto table = hanpu::model::gguf_weight_table(c);
      if (hanpu::model::check_weight_table(table, store).ok()) {
        for (const auto& e : table) {
          if (store.find(e.name) == nullptr || store.find(e.name)->shape != e.shape)
            __builtin_trap();
        }
      }
    }
  }
#else
  (void)hanpu::model::parse_safetensors(data, size, "fuzz.safetensors", &store);
#endif
  // Whatever parsed must lie inside the input.
  for (const auto& [name, t] : store.tensors()) {
    const uint64_t bytes =
        static_cast<uint64_t>(hanpu::shape_numel(t.shape)) * hanpu::dtype_size(t.dtype);
    if (t.file_offset + bytes > size) __builtin_trap();
  }
  return 0;
}
