// `hanpu quantize` (see quantize_cmd.h).
#include "quantize_cmd.h"

#include <chrono>
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "hanpu/quantize.h"
#include "hanpu/tensor.h"

namespace hanpu::cli {

void add_quantize_options(CLI::App& app, QuantizeOptions& o) {
  app.add_option("input", o.in,
                 "a Hugging Face checkpoint folder (config.json, safetensors, tokenizer.json), "
                 "or an F32, F16 or BF16 GGUF (as convert_hf_to_gguf.py writes)")
      ->required()
      ->check(CLI::ExistingPath);
  app.add_option("output", o.out, "the quantized GGUF to write")->required();
  app.add_option("type,--type", o.type,
                 fmt::format("the mix, as llama-quantize names it: {}",
                             fmt::join(quantize_file_type_names(), ", ")))
      ->required()
      ->check(CLI::IsMember(quantize_file_type_names(), CLI::ignore_case));
  app.add_flag("--json", o.json, "stdout: the summary as one JSON object");
  add_verbosity_flags(app, o.verbosity);
}

int run_quantize(const QuantizeOptions& o) {
  apply_verbosity(o.verbosity);
  constexpr double kMiB = 1024.0 * 1024.0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto on_tensor = [](const QuantizedTensorReport& r) {
    note("[{:4}/{:4}] {:<36} {:<16} {:>5} -> {:<6} {:9.2f} MiB -> {:8.2f} MiB\n", r.index + 1,
         r.count, r.name, shape_str(r.shape), r.from, r.to, r.bytes_in / kMiB, r.bytes_out / kMiB);
  };
  QuantizeSummary s;
  const Status st = quantize_model(o.in, o.out, o.type, on_tensor, &s);
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.json) {
    const nlohmann::json j{{"input", o.in},
                           {"output", o.out},
                           {"type", o.type},
                           {"tensors", s.tensors},
                           {"quantized", s.quantized},
                           {"bytes_in", s.bytes_in},
                           {"bytes_out", s.bytes_out},
                           {"seconds", secs}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  const double bpw =
      s.elements > 0 ? 8.0 * static_cast<double>(s.bytes_out) / static_cast<double>(s.elements) : 0;
  std::printf(
      "%s: %zu tensors (%zu quantized), %.2f MiB -> %.2f MiB (%.2f bits per weight), %.1f s\n",
      o.out.c_str(), s.tensors, s.quantized, s.bytes_in / kMiB, s.bytes_out / kMiB, bpw, secs);
  return 0;
}

}  // namespace hanpu::cli
