// The compact vocabulary and merge tables answer as the standard maps they replace, on random
// tables with duplicates, empty strings, unindexed ids and absent keys.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/token_table.h"

namespace hanpu::model {
namespace {

std::string random_token(std::mt19937_64& rng) {
  const int len = static_cast<int>(rng() % 6);  // short: duplicates and empties are common
  std::string s;
  for (int i = 0; i < len; ++i) s.push_back(static_cast<char>('a' + rng() % 4));
  return s;
}

TEST(TokenTable, FindsWhatAMapOfLastIdsFinds) {
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 20; ++trial) {
    const int n = static_cast<int>(rng() % 3000);
    std::vector<std::string> tokens(n);
    std::vector<bool> unindexed(n);
    std::map<std::string, int> expect;
    for (int id = 0; id < n; ++id) {
      tokens[id] = random_token(rng);
      unindexed[id] = rng() % 10 == 0;
      if (!tokens[id].empty() && !unindexed[id]) expect[tokens[id]] = id;
    }
    const TokenTable table(tokens, unindexed);
    ASSERT_EQ(table.size(), n);
    for (int id = 0; id < n; ++id) EXPECT_EQ(table.at(id), tokens[id]);
    for (int probe = 0; probe < 500; ++probe) {
      const std::string s = random_token(rng);
      const auto it = expect.find(s);
      const std::optional<int> got = table.find(s);
      if (it == expect.end()) {
        EXPECT_FALSE(got) << "'" << s << "'";
      } else {
        ASSERT_TRUE(got) << "'" << s << "'";
        EXPECT_EQ(*got, it->second);
      }
    }
  }
  EXPECT_FALSE(TokenTable().find("a"));
  EXPECT_EQ(TokenTable().size(), 0);
}

TEST(MergeTable, FirstInsertionWinsAndAbsentPairsAreNotFound) {
  std::mt19937_64 rng(std::random_device{}());
  MergeTable table;
  EXPECT_EQ(table.find(0, 0), nullptr);
  std::map<std::pair<int, int>, MergeTable::Merge> expect;
  for (int rank = 0; rank < 20000; ++rank) {
    const int a = static_cast<int>(rng() % 300), b = static_cast<int>(rng() % 300);
    const MergeTable::Merge m{rank, static_cast<int32_t>(rng() % 100000)};
    table.insert(a, b, m);
    expect.emplace(std::pair{a, b}, m);
  }
  for (int a = 0; a < 300; ++a) {
    for (int b = 0; b < 300; ++b) {
      const auto it = expect.find({a, b});
      const MergeTable::Merge* got = table.find(a, b);
      if (it == expect.end()) {
        EXPECT_EQ(got, nullptr);
      } else {
        ASSERT_NE(got, nullptr);
        EXPECT_EQ(got->rank, it->second.rank);
        EXPECT_EQ(got->merged, it->second.merged);
      }
    }
  }
}

}  // namespace
}  // namespace hanpu::model
