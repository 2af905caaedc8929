// `hanpu perplexity --kl-divergence` (see kl_report.h): llama-perplexity's statistics, its
// formulas (mean and its standard error, the covariance of the two log-perplexities,
// percentiles by linear interpolation between sorted values).
#include "kl_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_output.h"

namespace hanpu::cli {

namespace {

// The mean of count values from their sum and sum of squares, and its standard error.
std::pair<double, double> mean_and_error(double sum, double sum2, int64_t count) {
  if (count < 1) return {0, 0};
  const double n = static_cast<double>(count), f = sum / n, var = sum2 / n - f * f;
  return {f, var > 0 && count > 10 ? std::sqrt(var / (n - 1)) : 0.0};
}

double covariance(double a, double b, double ab, int64_t count) {
  if (count < 10) return 0;
  const double n = static_cast<double>(count);
  return (ab / n - (a / n) * (b / n)) / (n - 1);
}

double percentile(const std::vector<float>& sorted, double fraction) {
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  double p = fraction * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(p);
  p -= static_cast<double>(i);
  return (1 - p) * sorted[i] + p * sorted[std::min(i + 1, sorted.size() - 1)];
}

double median(const std::vector<float>& sorted) {
  const size_t n = sorted.size();
  return n % 2 == 0 ? 0.5 * (sorted[n / 2] + sorted[n / 2 - 1]) : sorted[n / 2];
}

struct Summary {
  std::pair<double, double> log_ppl, log_ppl_base, kld, p_diff;
  double log_ppl_cov = 0, ratio = 0, ratio_error = 0, rms_p_diff = 0, rms_p_diff_error = 0;
  double same_top = 0, same_top_error = 0;
};

Summary summarize(const KlDivergenceStats& s) {
  Summary m;
  m.log_ppl = mean_and_error(s.q.nll_sum, s.q.nll2_sum, s.count);
  m.log_ppl_base = mean_and_error(s.nll_base_sum, s.nll_base2_sum, s.count);
  m.log_ppl_cov = covariance(s.q.nll_sum, s.nll_base_sum, s.nll_nll_base_sum, s.count);
  m.ratio = m.log_ppl.first - m.log_ppl_base.first;
  m.ratio_error = std::sqrt(std::max(0.0, m.log_ppl.second * m.log_ppl.second +
                                              m.log_ppl_base.second * m.log_ppl_base.second -
                                              2.0 * m.log_ppl_cov));
  m.kld = mean_and_error(s.kld_sum, s.kld2_sum, s.count);
  m.p_diff = mean_and_error(s.p_diff_sum, s.p_diff2_sum, s.count);
  const auto mse = mean_and_error(s.p_diff2_sum, s.p_diff4_sum, s.count);
  m.rms_p_diff = std::sqrt(mse.first);
  m.rms_p_diff_error = m.rms_p_diff > 0 ? 0.5 / m.rms_p_diff * mse.second : 0;
  m.same_top = s.count > 0 ? static_cast<double>(s.same_top) / static_cast<double>(s.count) : 0;
  m.same_top_error =
      s.count > 1 ? std::sqrt(m.same_top * (1 - m.same_top) / static_cast<double>(s.count - 1)) : 0;
  return m;
}

}  // namespace

int run_kl_divergence(const Engine& engine, const PerplexityCmdOptions& o) {
  bool header = false;
  const auto on_chunk = [&](const KlDivergenceStats& s) {
    if (o.json) return;
    if (!header) {
      note(
          "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence         "
          "     "
          "Δp RMS            Same top p\n");
      header = true;
    }
    const Summary m = summarize(s);
    const double ppl = std::exp(m.log_ppl.first);
    note(
        "{:4}    {:9.4f} ± {:9.4f}    {:10.5f} ± {:10.5f}    {:10.5f} ± {:10.5f}    {:6.3f} ± "
        "{:6.3f} %    "
        "{:6.3f} ± {:6.3f} %\n",
        s.q.chunks, ppl, ppl * m.log_ppl.second, m.ratio, m.ratio_error, m.kld.first, m.kld.second,
        100 * m.rms_p_diff, 100 * m.rms_p_diff_error, 100 * m.same_top, 100 * m.same_top_error);
  };
  PerplexityOptions run = o.run;
  KlDivergenceStats s;
  const Status st = engine.kl_divergence(o.kl_base, run, on_chunk, &s);
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 1;
  }
  if (s.count < 2) {
    std::fprintf(stderr, "error: %lld scored tokens are too few for statistics\n",
                 static_cast<long long>(s.count));
    return 1;
  }
  const Summary m = summarize(s);
  std::vector<float> kld = s.kld, p_diff = s.p_diff;
  std::sort(kld.begin(), kld.end());
  std::sort(p_diff.begin(), p_diff.end());
  const double ppl = std::exp(m.log_ppl.first), ppl_base = std::exp(m.log_ppl_base.first);
  if (o.json) {
    const nlohmann::json j{{"chunks", s.q.chunks},
                           {"scored_tokens", s.count},
                           {"ppl", ppl},
                           {"ppl_base", ppl_base},
                           {"ln_ppl_ratio", m.ratio},
                           {"ln_ppl_ratio_error", m.ratio_error},
                           {"kld_mean", m.kld.first},
                           {"kld_mean_error", m.kld.second},
                           {"kld_median", median(kld)},
                           {"kld_99", percentile(kld, 0.99)},
                           {"kld_max", kld.back()},
                           {"p_diff_mean", m.p_diff.first},
                           {"p_diff_rms", m.rms_p_diff},
                           {"same_top", m.same_top},
                           {"ms", s.q.ms}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("====== Perplexity statistics ======\n");
  std::printf("Mean PPL(Q)                   : %10.6f ± %10.6f\n", ppl, ppl * m.log_ppl.second);
  std::printf("Mean PPL(base)                : %10.6f ± %10.6f\n", ppl_base,
              ppl_base * m.log_ppl_base.second);
  const double denom = m.log_ppl.second * m.log_ppl_base.second;
  std::printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n",
              denom > 0 ? 100.0 * m.log_ppl_cov / denom : 100.0);
  std::printf("Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", m.ratio, m.ratio_error);
  std::printf("Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", std::exp(m.ratio),
              std::exp(m.ratio) * m.ratio_error);
  std::printf("\n====== KL divergence statistics ======\n");
  std::printf("Mean    KLD: %10.6f ± %10.6f\n", m.kld.first, m.kld.second);
  std::printf("Maximum KLD: %10.6f\n", kld.back());
  for (const double f : {0.999, 0.99, 0.95, 0.90})
    std::printf("%4.1f%%   KLD: %10.6f\n", 100 * f, percentile(kld, f));
  std::printf("Median  KLD: %10.6f\n", median(kld));
  for (const double f : {0.10, 0.05, 0.01, 0.001})
    std::printf("%4.1f%%   KLD: %10.6f\n", 100 * f, percentile(kld, f));
  std::printf("Minimum KLD: %10.6f\n", kld.front());
  std::printf("\n====== Token probability statistics ======\n");
  std::printf("Mean    Δp: %6.3f ± %5.3f %%\n", 100 * m.p_diff.first, 100 * m.p_diff.second);
  std::printf("Maximum Δp: %6.3f%%\n", 100.0 * p_diff.back());
  for (const double f : {0.999, 0.99, 0.95, 0.90, 0.75})
    std::printf("%4.1f%%   Δp: %6.3f%%\n", 100 * f, 100 * percentile(p_diff, f));
  std::printf("Median  Δp: %6.3f%%\n", 100 * median(p_diff));
  for (const double f : {0.25, 0.10, 0.05, 0.01, 0.001})
    std::printf("%4.1f%%   Δp: %6.3f%%\n", 100 * f, 100 * percentile(p_diff, f));
  std::printf("Minimum Δp: %6.3f%%\n", 100.0 * p_diff.front());
  std::printf("RMS Δp    : %6.3f ± %5.3f %%\n", 100 * m.rms_p_diff, 100 * m.rms_p_diff_error);
  std::printf("Same top p: %6.3f ± %5.3f %%\n", 100 * m.same_top, 100 * m.same_top_error);
  return 0;
}

}  // namespace hanpu::cli
