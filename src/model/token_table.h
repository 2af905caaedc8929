// A vocabulary's strings in compact form: every token's bytes in one arena, looked up by id
// through offsets and by string through an open-addressing index of ids. A 250k-token
// vocabulary held as std::string per id and an unordered_map from string to id took about
// 22 MB of heap (a node and often a heap string per token); this takes about 5.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hanpu::model {

class TokenTable {
 public:
  // Ids 0..n-1 in order. Empty strings hold their id (an unused id) but are never found, nor
  // are the ids `unindexed` marks (a tokenizer's added tokens, matched another way). At most
  // 4 GiB of token bytes (offsets are 32-bit; Tokenizer::build refuses more by name, so the
  // std::length_error thrown here is never reached from a file).
  explicit TokenTable(const std::vector<std::string>& tokens = {},
                      const std::vector<bool>& unindexed = {});

  int size() const { return static_cast<int>(offsets_.size()) - 1; }
  std::string_view at(int id) const {
    return std::string_view(arena_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  // The id of `token`: the last id holding it when several do; nullopt if none.
  std::optional<int> find(std::string_view token) const;

 private:
  size_t slot_of(std::string_view token) const;  // its slot, or the empty one it would take

  std::string arena_;
  std::vector<uint32_t> offsets_ = {0};  // [size() + 1]
  std::vector<int32_t> slots_;           // ids, -1 empty; a power of two, at most half full
};

// BPE merges by rank: (left id, right id) -> (rank, merged id): the merges in one array and
// an open-addressing index of them (the unordered_map it replaces spent about 40 bytes a
// merge; this spends 16 plus at most 16 of index).
class MergeTable {
 public:
  struct Merge {
    int32_t rank, merged;
  };
  // The first insertion of a pair wins (a repeated merge keeps its lower rank).
  void insert(int32_t left, int32_t right, Merge m);
  const Merge* find(int32_t left, int32_t right) const;

 private:
  struct Entry {
    int32_t left, right;
    Merge m;
  };
  size_t slot_of(int32_t left, int32_t right) const;  // its slot, or the empty one it would take
  void rehash(size_t slots);

  std::vector<Entry> entries_;
  std::vector<int32_t>
      slots_;  // indices into entries_, -1 empty; a power of two, at most half full
};

}  // namespace hanpu::model
