// llama-perplexity's log-probability file (--kl-divergence-base), in llama.cpp's format so
// files pass between the two programs:
//   "_logits_", int32 context, int32 vocab, int32 chunks, int32 tokens[chunks * context],
//   then for each chunk, for each scored position (context/2 .. context-2), one record of
//   nv = 2 * ((vocab + 1) / 2) + 4 uint16: f32 scale, f32 min log-prob, then per vocabulary
//   entry a 16-bit code c with log p = scale * c + min log-prob (c = 0 for anything 16 nats
//   or more below the top logit).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "hanpu/status.h"

namespace hanpu::model {

// uint16 words of one position's record.
int64_t logprob_record_words(int vocab);

// llama.cpp's encoding of one position's log-softmax of `logits` into `record`.
void encode_logprobs(const float* logits, int vocab, uint16_t* record);

// Writes a log-probability file: the header and tokens at open, records chunk by chunk; the
// file appears at `path` on finish() only (a failed or abandoned run leaves none).
class LogprobWriter {
 public:
  ~LogprobWriter();
  Status open(const std::string& path, int context, int vocab, int chunks, const int* tokens);
  Status write(const uint16_t* words, size_t n);
  Status finish();

 private:
  std::string path_, tmp_;
  std::ofstream out_;
  bool finished_ = false;
};

// Reads one, checking it whole before anything is used: the magic, a context of 3 tokens or
// more, the vocabulary equal to `vocab`, the size exactly what the header implies, every
// token id inside the vocabulary.
class LogprobReader {
 public:
  Status open(const std::string& path, int vocab);
  int context() const { return context_; }
  int chunks() const { return chunks_; }
  const std::vector<int>& tokens() const { return tokens_; }
  // The next chunk's records (scored positions x logprob_record_words), each checked to have
  // a finite scale >= 0 and a finite min log-prob.
  Status read_chunk(int chunk, std::vector<uint16_t>* records);

 private:
  std::string path_;
  std::ifstream in_;
  int context_ = 0, vocab_ = 0, chunks_ = 0;
  std::vector<int> tokens_;
};

}  // namespace hanpu::model
