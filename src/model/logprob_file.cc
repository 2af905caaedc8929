// llama-perplexity's log-probability file (see logprob_file.h). The encoding is llama.cpp's
// (tools/perplexity), f32 where it uses f32, so a file either program writes reads the same
// in the other.
#include "model/logprob_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "base/quant_quantize.h"

namespace hanpu::model {

namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
constexpr int64_t kHeaderBytes = 8 + 3 * 4;

int64_t scored_per_chunk(int context) { return context - 1 - context / 2; }

}  // namespace

int64_t logprob_record_words(int vocab) { return 2 * ((static_cast<int64_t>(vocab) + 1) / 2) + 4; }

void encode_logprobs(const float* logits, int vocab, uint16_t* record) {
  float max_logit = logits[0], min_logit = logits[0];
  for (int i = 1; i < vocab; ++i) {
    max_logit = std::max(max_logit, logits[i]);
    min_logit = std::min(min_logit, logits[i]);
  }
  min_logit = std::max(min_logit, max_logit - 16);
  double sum_exp = 0.0;
  for (int i = 0; i < vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));
  const float min_log_prob = min_logit - max_logit - log_sum_exp;
  const float scale = (max_logit - min_logit) / 65535.f;
  std::memcpy(record, &scale, 4);
  std::memcpy(record + 2, &min_log_prob, 4);
  uint16_t* codes = record + 4;
  if (scale != 0) {
    const float inv_scale = 1 / scale;
    for (int i = 0; i < vocab; ++i)
      codes[i] = logits[i] > min_logit
                     ? static_cast<uint16_t>(ggml_nearest_int(inv_scale * (logits[i] - min_logit)))
                     : 0;
  } else {
    std::fill_n(codes, vocab, uint16_t{0});
  }
  if (vocab % 2 != 0) codes[vocab] = 0;  // the record's padding word
}

LogprobWriter::~LogprobWriter() {
  if (!tmp_.empty() && !finished_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
  }
}

Status LogprobWriter::open(const std::string& path, int context, int vocab, int chunks,
                           const int* tokens) {
  path_ = path;
  tmp_ = path + ".partial";
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_)
    return Status::Error(fmt::format("{}: cannot create ({})", tmp_, std::strerror(errno)));
  const int32_t header[3] = {context, vocab, chunks};
  out_.write(kMagic, sizeof(kMagic));
  out_.write(reinterpret_cast<const char*>(header), sizeof(header));
  out_.write(reinterpret_cast<const char*>(tokens),
             static_cast<std::streamsize>(static_cast<size_t>(context) * chunks * sizeof(int32_t)));
  if (!out_) return Status::Error(fmt::format("{}: write failed", tmp_));
  return Status::Ok();
}

Status LogprobWriter::write(const uint16_t* words, size_t n) {
  out_.write(reinterpret_cast<const char*>(words),
             static_cast<std::streamsize>(n * sizeof(uint16_t)));
  if (!out_) return Status::Error(fmt::format("{}: write failed", tmp_));
  return Status::Ok();
}

Status LogprobWriter::finish() {
  out_.close();
  if (!out_) return Status::Error(fmt::format("{}: write failed", tmp_));
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec)
    return Status::Error(
        fmt::format("{}: cannot move the finished file into place ({})", path_, ec.message()));
  finished_ = true;
  return Status::Ok();
}

Status LogprobReader::open(const std::string& path, int vocab) {
  path_ = path;
  vocab_ = vocab;
  const auto bad = [&](const std::string& why) {
    return Status::Error(
        fmt::format("{}: not a log-probability file hanpu can use: {}", path, why));
  };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return bad("not a regular file");
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return bad(ec.message());
  in_.open(path, std::ios::binary);
  if (!in_) return bad(std::strerror(errno));
  char magic[8];
  int32_t header[3];
  in_.read(magic, sizeof(magic));
  in_.read(reinterpret_cast<char*>(header), sizeof(header));
  if (!in_ || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0)
    return bad("it does not start with \"_logits_\" and its three counts (offset 0)");
  context_ = header[0];
  chunks_ = header[2];
  if (context_ < 3)
    return bad(fmt::format("context {} (offset 8) scores nothing (at least 3)", context_));
  if (header[1] != vocab)
    return bad(
        fmt::format("its vocabulary has {} tokens (offset 12), this model's {}", header[1], vocab));
  if (chunks_ < 1) return bad(fmt::format("chunk count {} (offset 16)", chunks_));
  // Every count is a positive int32, so these products fit 64 bits with room to spare.
  const uint64_t token_bytes =
      4ull * static_cast<uint64_t>(context_) * static_cast<uint64_t>(chunks_);
  const uint64_t record_bytes = 2ull * static_cast<uint64_t>(logprob_record_words(vocab)) *
                                static_cast<uint64_t>(scored_per_chunk(context_)) *
                                static_cast<uint64_t>(chunks_);
  const uint64_t want = kHeaderBytes + token_bytes + record_bytes;
  if (size != want)
    return bad(fmt::format("{} bytes where context {}, vocabulary {} and {} chunks make {}", size,
                           context_, vocab, chunks_, want));
  tokens_.resize(static_cast<size_t>(context_) * static_cast<size_t>(chunks_));
  in_.read(reinterpret_cast<char*>(tokens_.data()), static_cast<std::streamsize>(token_bytes));
  if (!in_) return bad("it ends inside its tokens");
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i] < 0 || tokens_[i] >= vocab)
      return bad(fmt::format("token {} (offset {}) is id {}, outside the vocabulary", i,
                             kHeaderBytes + 4 * i, tokens_[i]));
  }
  return Status::Ok();
}

Status LogprobReader::read_chunk(int chunk, std::vector<uint16_t>* records) {
  const int64_t words = logprob_record_words(vocab_), rows = scored_per_chunk(context_);
  records->resize(static_cast<size_t>(words * rows));
  in_.read(reinterpret_cast<char*>(records->data()),
           static_cast<std::streamsize>(records->size() * 2));
  if (!in_) return Status::Error(fmt::format("{}: read failed in chunk {}", path_, chunk + 1));
  for (int64_t r = 0; r < rows; ++r) {
    float scale, min_log_prob;
    std::memcpy(&scale, records->data() + r * words, 4);
    std::memcpy(&min_log_prob, records->data() + r * words + 2, 4);
    if (!std::isfinite(scale) || scale < 0 || !std::isfinite(min_log_prob))
      return Status::Error(
          fmt::format("{}: chunk {}, scored position {}: scale {} and min log-prob {} are not "
                      "a finite scale >= 0 and a finite log-probability",
                      path_, chunk + 1, r, scale, min_log_prob));
  }
  return Status::Ok();
}

}  // namespace hanpu::model
