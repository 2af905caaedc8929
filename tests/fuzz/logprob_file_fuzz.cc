// libFuzzer target for llama-perplexity's log-probability files (--kl-divergence-base), which
// a user may take from another program or machine: any bytes must open against the tiny
// fixture's vocabulary of 384 and read chunk by chunk (tokens inside the vocabulary, every
// record's scale and min log-prob finite) or fail with a Status, never crash, read out of
// bounds or allocate more than the file holds (run under ASan + UBSan). Seeded with a file
// the release build's `hanpu perplexity` saved (scripts/fuzz_loaders).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_scratch.h"
#include "model/logprob_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr int kVocab = 384;
  const std::string path = hanpu::fuzz::write_scratch("logprobs", data, size);
  hanpu::model::LogprobReader reader;
  if (!reader.open(path, kVocab).ok()) return 0;
  for (int id : reader.tokens()) {
    if (id < 0 || id >= kVocab) __builtin_trap();
  }
  if (reader.tokens().size() != static_cast<size_t>(reader.context()) * reader.chunks())
    __builtin_trap();
  const int64_t words = hanpu::model::logprob_record_words(kVocab);
  std::vector<uint16_t> records;
  for (int c = 0; c < reader.chunks(); ++c) {
    if (!reader.read_chunk(c, &records).ok()) return 0;
    for (size_t r = 0; r < records.size(); r += static_cast<size_t>(words)) {
      float scale, min_log_prob;
      std::memcpy(&scale, records.data() + r, 4);
      std::memcpy(&min_log_prob, records.data() + r + 2, 4);
      if (!std::isfinite(scale) || scale < 0 || !std::isfinite(min_log_prob)) __builtin_trap();
    }
  }
  return 0;
}
