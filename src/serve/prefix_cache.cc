#include "serve/prefix_cache.h"

#include <algorithm>

namespace hanpu::serve {

std::unique_ptr<Sequence> PrefixCache::resume(const std::vector<int>& prompt, int64_t* cached) {
  std::lock_guard<std::mutex> lock(mu_);
  *cached = 0;
  Entry* best = nullptr;
  for (Entry& e : entries_) {
    const std::vector<int>& t = e.sequence->tokens();
    if (t.size() < prompt.size() && static_cast<int64_t>(t.size()) > *cached &&
        std::equal(t.begin(), t.end(), prompt.begin())) {
      best = &e;
      *cached = static_cast<int64_t>(t.size());
    }
  }
  if (best == nullptr) return nullptr;
  std::unique_ptr<Sequence> copy = engine_->copy_sequence(*best->sequence);
  if (copy == nullptr) {
    *cached = 0;
    return nullptr;
  }
  best->used = ++clock_;
  ++hits_;
  return copy;
}

void PrefixCache::account(const Entry& e, bool add) {
  bytes_ += add ? e.own_bytes : -e.own_bytes;
  for (const void* id : e.shared) {
    auto it = blocks_.find(id);
    if (add) {
      if (it->second.entries++ == 0) bytes_ += it->second.bytes;
    } else if (--it->second.entries == 0) {
      bytes_ -= it->second.bytes;
      blocks_.erase(it);
    }
  }
}

void PrefixCache::insert(std::unique_ptr<Sequence> sequence) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry entry;
  int64_t all = 0;  // its whole size, shared blocks too
  entry.own_bytes = sequence->bytes([&](const void* id, int64_t b) {
    entry.shared.push_back(id);
    all += b;
    blocks_.try_emplace(id, Block{b, 0});
  });
  all += entry.own_bytes;
  if (all > max_bytes_) {
    for (const void* id : entry.shared) {
      if (blocks_[id].entries == 0) blocks_.erase(id);
    }
    return;
  }
  entry.sequence = std::move(sequence);
  entry.used = ++clock_;
  account(entry, true);
  bool replaced = false;
  for (Entry& e : entries_) {
    if (e.sequence->tokens() == entry.sequence->tokens()) {
      account(e, false);
      e = std::move(entry);
      replaced = true;
      break;
    }
  }
  if (!replaced) entries_.push_back(std::move(entry));
  while (bytes_ > max_bytes_ && !entries_.empty()) {
    auto lru = std::min_element(entries_.begin(), entries_.end(),
                                [](const Entry& a, const Entry& c) { return a.used < c.used; });
    account(*lru, false);
    entries_.erase(lru);
  }
}

bool PrefixCache::holds(const std::vector<int>& tokens) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.sequence->tokens() == tokens; });
}

int64_t PrefixCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

int64_t PrefixCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

int64_t PrefixCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(entries_.size());
}

std::vector<int64_t> checkpoint_offsets(const std::vector<int>& prompt, int64_t cached,
                                        const std::vector<int>& end_tokens, int64_t every) {
  std::vector<int64_t> out;
  const auto n = static_cast<int64_t>(prompt.size());
  for (int64_t at = cached + 1; at <= n; ++at) {
    const bool message_end =
        std::find(end_tokens.begin(), end_tokens.end(), prompt[at - 1]) != end_tokens.end();
    if (message_end || (every > 0 && at % every == 0) || at == n) out.push_back(at - cached);
  }
  return out;
}

}  // namespace hanpu::serve
