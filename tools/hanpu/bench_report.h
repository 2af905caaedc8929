// How a benchmark prints its rows, as llama-bench does: a markdown table by default, or
// `-o csv|json|jsonl`. Every row carries the build commit, the CPU's name and the real thread
// count, so a table pasted elsewhere still says where it came from. Columns are declared once;
// a row is a JSON object holding at least those keys (json/jsonl print all of its keys).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace hanpu::cli {

enum class ReportFormat { kMarkdown, kCsv, kJson, kJsonl };

std::optional<ReportFormat> parse_report_format(const std::string& name);

// Adds `-o,--output FORMAT` (md, csv, json, jsonl) and `--json` (the same as -o jsonl).
struct ReportFlags {
  std::string output = "md";
  bool json = false;
  ReportFormat format() const;  // after parsing
};
void add_report_flags(CLI::App& app, ReportFlags& flags);
// What the kernel benchmarks (la, attn, linear) share: --threads, --repeats and the report flags.
void add_kernel_bench_flags(CLI::App& app, int& threads, int& repeats, ReportFlags& report);

// The CPU's model name (/proc/cpuinfo; "unknown" elsewhere).
std::string cpu_model_name();

struct ReportColumn {
  std::string key;     // the row's JSON key
  std::string header;  // the markdown / csv header
};

class BenchReport {
 public:
  // threads: the number the benchmark really ran on (0 resolved).
  BenchReport(ReportFormat format, std::vector<ReportColumn> columns, int threads);
  ~BenchReport();  // prints what json format gathered

  // A row; build, cpu and threads are added to it. Markdown and csv print at once (the header
  // before the first row), jsonl one line a row, json gathers the rows into one object.
  void add(nlohmann::json row);
  // Prints the json object now (the destructor does it otherwise).
  void finish();
  // Markdown or csv: a table of the declared columns (a benchmark may print a row per test
  // there, as llama-bench does, and one object per configuration in json).
  bool tabular() const {
    return format_ == ReportFormat::kMarkdown || format_ == ReportFormat::kCsv;
  }

 private:
  ReportFormat format_;
  std::vector<ReportColumn> columns_;
  int threads_;
  std::string cpu_;
  bool header_done_ = false, finished_ = false;
  nlohmann::json rows_ = nlohmann::json::array();
};

// A kernel benchmark's timing of a row: median_ms, stddev_ms, gflops, pct_peak and peak_gflops
// in every format, and the table's "median ms ± sd", "GFLOP/s" and "% peak" cells
// (timing_columns) when `tabular`.
void add_timing(nlohmann::json& row, double median_ms, double stddev_ms, double gflops,
                double pct_peak, double peak_gflops, bool tabular, int decimals = 2);
std::vector<ReportColumn> timing_columns();

// Columns whose header is their key.
std::vector<ReportColumn> columns_named(std::initializer_list<const char*> keys);
// A kernel benchmark's table: `leading` (header = key), the timing cells, then `trailing`.
std::vector<ReportColumn> kernel_columns(std::initializer_list<const char*> leading,
                                         const std::vector<ReportColumn>& trailing);

// "123.45 ± 6.78": a rate with its standard deviation over the runs, as llama-bench prints it.
std::string with_stddev(double mean, double stddev, int decimals = 2);
// Mean and sample standard deviation of v (0 for fewer than 2 values).
double mean_of(const std::vector<double>& v);
double stddev_of(const std::vector<double>& v);

}  // namespace hanpu::cli
