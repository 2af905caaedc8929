// The server's prefix cache: sequences checkpointed at token prefixes (the end of a prompt,
// of a reply, of each chat message, every N tokens of a long prompt), so that a request whose
// tokens start with one resumes from it and prefills only the rest. Exact: a resumed sequence
// holds the very states the prefix left (GenerateOptions::checkpoints). Least recently used
// entries go first when the bytes pass the budget. Checkpoints of one chat share their KV rows
// (Sequence::bytes): a shared block is counted once, for as long as an entry holds it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "hanpu/engine.h"

namespace hanpu::serve {

class PrefixCache {
 public:
  PrefixCache(const Engine* engine, int64_t max_bytes) : engine_(engine), max_bytes_(max_bytes) {}
  // A copy of the longest cached sequence whose tokens are a proper prefix of `prompt` (at
  // least one token is left to prefill), and its length in *cached; null (0) if none.
  std::unique_ptr<Sequence> resume(const std::vector<int>& prompt, int64_t* cached);
  // Keeps `sequence` (in place of one holding the same tokens), evicting the least recently
  // used beyond the budget; one larger than the whole budget is dropped.
  void insert(std::unique_ptr<Sequence> sequence);
  // Whether an entry holds exactly `tokens`.
  bool holds(const std::vector<int>& tokens) const;
  int64_t bytes() const;
  int64_t hits() const;
  int64_t entries() const;

 private:
  struct Entry {
    std::unique_ptr<Sequence> sequence;
    int64_t own_bytes = 0;            // what it holds alone
    std::vector<const void*> shared;  // the shared blocks it holds
    uint64_t used = 0;                // the clock at its last insert or hit
  };
  struct Block {
    int64_t bytes = 0;
    int entries = 0;  // holding it
  };
  // Counts e's memory in bytes_ (add) or takes it out.
  void account(const Entry& e, bool add);
  std::unordered_map<const void*, Block> blocks_;
  const Engine* engine_;
  int64_t max_bytes_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  int64_t bytes_ = 0, hits_ = 0;
  uint64_t clock_ = 0;
};

// Where a prompt's checkpoints go: after each end-of-turn token (a chat message's end), every
// `every` tokens (0: none), and at its end; offsets past `cached` (the resumed prefix), relative
// to it, as GenerateOptions::checkpoints takes them.
std::vector<int64_t> checkpoint_offsets(const std::vector<int>& prompt, int64_t cached,
                                        const std::vector<int>& end_tokens, int64_t every);

}  // namespace hanpu::serve
