// Benchmark output (see bench_report.h).
#include "bench_report.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "flag_checks.h"
#include "hanpu/version.h"

namespace hanpu::cli {

std::optional<ReportFormat> parse_report_format(const std::string& name) {
  if (name == "md") return ReportFormat::kMarkdown;
  if (name == "csv") return ReportFormat::kCsv;
  if (name == "json") return ReportFormat::kJson;
  if (name == "jsonl") return ReportFormat::kJsonl;
  return std::nullopt;
}

ReportFormat ReportFlags::format() const {
  return json ? ReportFormat::kJsonl
              : parse_report_format(output).value_or(ReportFormat::kMarkdown);
}

void add_report_flags(CLI::App& app, ReportFlags& flags) {
  auto* output =
      app.add_option("-o,--output", flags.output,
                     "md (a markdown table), csv, json (one object), jsonl (an object a row)")
          ->capture_default_str()
          ->check(CLI::IsMember({"md", "csv", "json", "jsonl"}));
  app.add_flag("--json", flags.json, "the same as -o jsonl (progress on stderr)")->excludes(output);
}

void add_kernel_bench_flags(CLI::App& app, int& threads, int& repeats, ReportFlags& report) {
  app.add_option("--threads", threads, "worker threads (0: HANPU_THREADS or all cores)")
      ->capture_default_str()
      ->check(thread_range());
  app.add_option("--repeats", repeats, "timed runs per row (median reported)")
      ->capture_default_str()
      ->check(repeat_range());
  add_report_flags(app, report);
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

BenchReport::BenchReport(ReportFormat format, std::vector<ReportColumn> columns, int threads)
    : format_(format), columns_(std::move(columns)), threads_(threads), cpu_(cpu_model_name()) {
  // csv carries the build and the CPU on every row; markdown names them under the table, as
  // llama-bench does.
  if (format_ == ReportFormat::kCsv) {
    columns_.push_back({"build_commit", "build_commit"});
    columns_.push_back({"cpu", "cpu"});
  }
}

BenchReport::~BenchReport() { finish(); }

namespace {

// A cell: strings as they are, numbers as JSON writes them.
std::string cell(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  return v.dump();
}

std::string csv_quoted(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

void BenchReport::add(nlohmann::json row) {
  row["build_commit"] = HANPU_COMMIT;
  row["cpu"] = cpu_;
  row["threads"] = threads_;
  switch (format_) {
    case ReportFormat::kJsonl:
      std::printf("%s\n",
                  row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      break;
    case ReportFormat::kJson:
      rows_.push_back(std::move(row));
      break;
    case ReportFormat::kCsv:
    case ReportFormat::kMarkdown: {
      const bool md = format_ == ReportFormat::kMarkdown;
      // md: "| a | b |"; csv: "a,b" with quoting where a cell needs it.
      const auto line = [&](const std::vector<std::string>& cells) {
        std::string out;
        for (size_t i = 0; i < cells.size(); ++i) {
          out += md ? "| " + cells[i] + " " : (i ? "," : "") + csv_quoted(cells[i]);
        }
        std::printf("%s\n", (md ? out + "|" : out).c_str());
      };
      if (!header_done_) {
        std::vector<std::string> head, rule;
        for (const ReportColumn& c : columns_) {
          head.push_back(c.header);
          rule.push_back("---:");
        }
        line(head);
        if (md) line(rule);
        header_done_ = true;
      }
      std::vector<std::string> cells;
      for (const ReportColumn& c : columns_)
        cells.push_back(row.contains(c.key) ? cell(row[c.key]) : "");
      line(cells);
      break;
    }
  }
  std::fflush(stdout);
}

void BenchReport::finish() {
  if (finished_) return;
  finished_ = true;
  if (format_ == ReportFormat::kMarkdown && header_done_) {
    std::printf("\nbuild: %s, CPU: %s, %d threads\n", HANPU_COMMIT, cpu_.c_str(), threads_);
    std::fflush(stdout);
  }
  if (format_ != ReportFormat::kJson) return;
  const nlohmann::json all{
      {"build_commit", HANPU_COMMIT}, {"cpu", cpu_}, {"threads", threads_}, {"rows", rows_}};
  std::printf("%s\n", all.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (const double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double stddev_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double s = 0;
  for (const double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

void add_timing(nlohmann::json& row, double median_ms, double stddev_ms, double gflops,
                double pct_peak, double peak_gflops, bool tabular, int decimals) {
  row["median_ms"] = median_ms;
  row["stddev_ms"] = stddev_ms;
  row["gflops"] = gflops;
  row["pct_peak"] = pct_peak;
  row["peak_gflops"] = peak_gflops;
  if (tabular) {
    row["ms"] = with_stddev(median_ms, stddev_ms, decimals);
    row["gflops_text"] = fmt::format("{:.1f}", gflops);
    row["pct_peak_text"] = fmt::format("{:.1f}%", pct_peak);
  }
}

std::vector<ReportColumn> columns_named(std::initializer_list<const char*> keys) {
  std::vector<ReportColumn> out;
  for (const char* k : keys) out.push_back({k, k});
  return out;
}

std::vector<ReportColumn> kernel_columns(std::initializer_list<const char*> leading,
                                         const std::vector<ReportColumn>& trailing) {
  std::vector<ReportColumn> out = columns_named(leading);
  for (const ReportColumn& t : timing_columns()) out.push_back(t);
  out.insert(out.end(), trailing.begin(), trailing.end());
  return out;
}

std::vector<ReportColumn> timing_columns() {
  return {{"ms", "median ms ± sd"}, {"gflops_text", "GFLOP/s"}, {"pct_peak_text", "% peak"}};
}

std::string with_stddev(double mean, double stddev, int decimals) {
  return fmt::format("{:.{}f} ± {:.{}f}", mean, decimals, stddev, decimals);
}

}  // namespace hanpu::cli
