// Compact vocabulary and merge tables (see token_table.h). Written here because the standard
// containers cost a node per entry and no Debian library offers a flat string index.
#include "model/token_table.h"

#include <functional>
#include <stdexcept>

namespace hanpu::model {

namespace {

size_t power_of_two_at_least(size_t n) {
  size_t p = 16;
  while (p < n) p *= 2;
  return p;
}

// A 64-bit mix (splitmix64's finaliser), so keys that differ in few bits spread over slots.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

TokenTable::TokenTable(const std::vector<std::string>& tokens, const std::vector<bool>& unindexed) {
  size_t bytes = 0;
  for (const std::string& t : tokens) bytes += t.size();
  if (bytes > UINT32_MAX) throw std::length_error("vocabulary over 4 GB");
  arena_.reserve(bytes);
  offsets_.reserve(tokens.size() + 1);
  for (const std::string& t : tokens) {
    arena_ += t;
    offsets_.push_back(static_cast<uint32_t>(arena_.size()));
  }
  slots_.assign(power_of_two_at_least(2 * tokens.size()), -1);
  for (int id = 0; id < size(); ++id) {
    const std::string_view t = at(id);
    const bool skip = static_cast<size_t>(id) < unindexed.size() && unindexed[id];
    if (!t.empty() && !skip) slots_[slot_of(t)] = id;  // a later id replaces an earlier equal one
  }
}

size_t TokenTable::slot_of(std::string_view token) const {
  const size_t mask = slots_.size() - 1;
  size_t s = std::hash<std::string_view>()(token) & mask;
  while (slots_[s] >= 0 && at(slots_[s]) != token) s = (s + 1) & mask;
  return s;
}

std::optional<int> TokenTable::find(std::string_view token) const {
  if (token.empty() || slots_.empty()) return std::nullopt;
  const int32_t id = slots_[slot_of(token)];
  if (id < 0) return std::nullopt;
  return id;
}

size_t MergeTable::slot_of(int32_t left, int32_t right) const {
  const size_t mask = slots_.size() - 1;
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  size_t s = mix(key) & mask;
  while (slots_[s] >= 0) {
    const Entry& e = entries_[static_cast<size_t>(slots_[s])];
    if (e.left == left && e.right == right) break;
    s = (s + 1) & mask;
  }
  return s;
}

void MergeTable::rehash(size_t slots) {
  slots_.assign(slots, -1);
  for (size_t i = 0; i < entries_.size(); ++i)
    slots_[slot_of(entries_[i].left, entries_[i].right)] = static_cast<int32_t>(i);
}

void MergeTable::insert(int32_t left, int32_t right, Merge m) {
  if (2 * (entries_.size() + 1) > slots_.size())
    rehash(power_of_two_at_least(2 * (entries_.size() + 1)));
  const size_t s = slot_of(left, right);
  if (slots_[s] >= 0) return;
  if (entries_.size() >= static_cast<size_t>(INT32_MAX))
    throw std::length_error("merges over 2^31");
  slots_[s] = static_cast<int32_t>(entries_.size());
  entries_.push_back({left, right, m});
}

const MergeTable::Merge* MergeTable::find(int32_t left, int32_t right) const {
  if (slots_.empty()) return nullptr;
  const int32_t i = slots_[slot_of(left, right)];
  return i < 0 ? nullptr : &entries_[static_cast<size_t>(i)].m;
}

}  // namespace hanpu::model
