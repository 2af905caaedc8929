// The KDA hybrids' forget gates and grouped expert router against vectors computed by
// transformers' own modules (scripts/make_kda_vectors.py: tests/fixtures/kda/vectors.json),
// plus their defining properties on fresh random inputs: Ling's bounded gate stays inside
// (bound, 0), Kimi Linear's is never clipped, the router only picks from the best groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/rng.h"
#include "fixtures.h"
#include "model/grouped_router.h"
#include "model/kda_gates.h"

namespace hanpu::model {
namespace {

using nlohmann::json;

json vectors() {
  return json::parse(testing::read_text(std::string(HANPU_FIXTURES_DIR) + "/kda/vectors.json"));
}

TEST(KdaGate, MatchesTransformersForBothModels) {
  const json v = vectors();
  ASSERT_EQ(v["gates"].size(), 3u);
  for (const json& c : v["gates"]) {
    const int T = c["T"], H = c["H"], K = c["K"];
    const auto f = c["f"].get<std::vector<float>>();
    auto a = c["A_log"].get<std::vector<float>>();
    for (float& x : a) x = std::exp(x);
    const auto dt = c["dt_bias"].get<std::vector<float>>();
    const auto want = c["g"].get<std::vector<float>>();
    const float bound = c["lower_bound"].is_null() ? std::numeric_limits<float>::quiet_NaN()
                                                   : c["lower_bound"].get<float>();
    std::vector<float> g(want.size() + 1, std::nanf(""));
    kda_forget_gate(f.data(), T, H, K, a.data(), dt.data(), bound, g.data());
    EXPECT_TRUE(std::isnan(g.back())) << "wrote past g";
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(g[i], want[i], 1e-5 + 1e-6 * std::fabs(want[i]))
          << c["name"].get<std::string>() << " element " << i << " f " << f[i];
    }
  }
}

TEST(KdaGate, BoundedStaysInsideUnboundedIsNotClipped) {
  Rng rng(0x6a7e ^ static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()));
  const int T = 5, H = 3, K = 7;
  std::vector<float> f(T * H * K), a(H), dt(H * K), g(T * H * K);
  for (float& x : f) x = static_cast<float>(rng.normal() * 30);
  for (float& x : a) x = std::exp(static_cast<float>(rng.uniform(0, 3)));
  for (float& x : dt) x = static_cast<float>(rng.normal());
  kda_forget_gate(f.data(), T, H, K, a.data(), dt.data(), -5.0f, g.data());
  for (float x : g) EXPECT_TRUE(x >= -5.0f && x <= 0.0f) << x;
  kda_forget_gate(f.data(), T, H, K, a.data(), dt.data(), std::nanf(""), g.data());
  float lowest = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double x = double(f[i]) + dt[i % (H * K)];
    const double sp = x > 20 ? x : std::log1p(std::exp(x));
    const double want = -double(a[(i / K) % H]) * sp;
    EXPECT_NEAR(g[i], want, 1e-5 * (1 + std::fabs(want))) << i;
    lowest = std::min(lowest, g[i]);
  }
  EXPECT_LT(lowest, -20.0f) << "Kimi Linear's gate reaches far past any bound on these inputs";
}

TEST(GroupedRouter, MatchesTransformers) {
  const json v = vectors();
  ASSERT_EQ(v["routers"].size(), 2u);
  for (const json& c : v["routers"]) {
    const int E = c["experts"], top_k = c["top_k"], rows = c["rows"];
    GroupedRouter r;
    r.groups = c["groups"];
    r.topk_groups = c["topk_groups"];
    r.routed_scaling = c["routed_scaling"];
    const auto logits = c["logits"].get<std::vector<float>>();
    const auto bias = c["bias"].get<std::vector<float>>();
    const auto want_ids = c["ids"].get<std::vector<int>>();
    const auto want_w = c["weights"].get<std::vector<float>>();
    for (int t = 0; t < rows; ++t) {
      std::vector<int> ids(top_k + 1, -7);
      std::vector<float> w(top_k + 1, std::nanf(""));
      route_grouped(logits.data() + t * E, bias.data(), E, top_k, r, c["norm_topk_prob"],
                    ids.data(), w.data());
      EXPECT_EQ(ids[top_k], -7) << "wrote past ids";
      // transformers' topk is unsorted: compare expert -> weight maps.
      std::map<int, float> got, want;
      for (int i = 0; i < top_k; ++i) {
        got[ids[i]] = w[i];
        want[want_ids[t * top_k + i]] = want_w[t * top_k + i];
      }
      ASSERT_EQ(got.size(), want.size()) << "row " << t;
      for (const auto& [id, weight] : want) {
        ASSERT_EQ(got.count(id), 1u) << "row " << t << " missing expert " << id;
        EXPECT_NEAR(got[id], weight, 1e-6 * (1 + std::fabs(weight)))
            << "row " << t << " expert " << id;
      }
    }
  }
}

// On fresh random logits: every chosen expert lies in one of the topk_groups best groups (by
// their best two scores plus bias), no unchosen expert of those groups beats a chosen one,
// and the weights are the chosen sigmoid scores, renormalised and scaled.
TEST(GroupedRouter, ChoosesWithinTheBestGroups) {
  Rng rng(0x40e7 ^ static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()));
  const int E = 24, top_k = 5;
  GroupedRouter r;
  r.groups = 6;
  r.topk_groups = 3;
  r.routed_scaling = 1.5f;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> l(E), b(E);
    for (float& x : l) x = static_cast<float>(rng.normal() * 3);
    for (float& x : b) x = static_cast<float>(rng.normal() * 0.2);
    std::vector<int> ids(top_k);
    std::vector<float> w(top_k);
    route_grouped(l.data(), b.data(), E, top_k, r, true, ids.data(), w.data());
    std::vector<double> s(E), c(E), gs(r.groups);
    for (int e = 0; e < E; ++e) {
      s[e] = 1 / (1 + std::exp(-double(l[e])));
      c[e] = s[e] + b[e];
    }
    for (int gi = 0; gi < r.groups; ++gi) {
      std::vector<double> v(c.begin() + gi * 4, c.begin() + gi * 4 + 4);
      std::sort(v.rbegin(), v.rend());
      gs[gi] = v[0] + v[1];
    }
    std::vector<int> order(r.groups);
    for (int i = 0; i < r.groups; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int x, int y) { return gs[x] > gs[y]; });
    const std::vector<int> best(order.begin(), order.begin() + r.topk_groups);
    double sum = 0;
    for (int id : ids) sum += s[id];
    for (int i = 0; i < top_k; ++i) {
      ASSERT_NE(std::find(best.begin(), best.end(), ids[i] / 4), best.end()) << "trial " << trial;
      EXPECT_NEAR(w[i], s[ids[i]] / sum * 1.5, 1e-5);
      for (int gi : best) {
        for (int e = gi * 4; e < gi * 4 + 4; ++e) {
          if (std::find(ids.begin(), ids.end(), e) == ids.end()) {
            ASSERT_LE(c[e], c[ids[i]] + 1e-6) << "trial " << trial << ": expert " << e;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace hanpu::model
