// Flag ranges and value sets (see flag_checks.h).
#include "flag_checks.h"

#include <string>
#include <vector>

#include "hanpu/attn.h"
#include "hanpu/la.h"
#include "base/quant_quantize.h"
#include "cpu/nn/projection_kernels.h"
#include "hanpu/machine.h"

namespace hanpu::cli {

namespace {

template <class Table>
std::vector<std::string> names_of(const Table& table) {
  std::vector<std::string> out;
  for (const auto& x : table) out.emplace_back(x.name);
  return out;
}

}  // namespace

CLI::Validator thread_range() { return CLI::Range(0, kMaxThreads); }
CLI::Validator token_range(int lo) { return CLI::Range(lo, kMaxTokensFlag); }
CLI::Validator shape_range(int lo) { return CLI::Range(lo, 4096); }
CLI::Validator repeat_range() { return CLI::Range(1, 1000); }
CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& v) {
        return v.find('-') != std::string::npos ? std::string("must be 0 or more, got ") + v : "";
      },
      "UINT");
}
CLI::Validator file_or_stdin() {
  return CLI::Validator(
      [](std::string& v) { return v == "-" ? std::string() : CLI::ExistingFile(v); }, "FILE|-");
}
CLI::Validator la_strategy_names() { return CLI::IsMember(names_of(la_strategies())); }
CLI::Validator placement_names() { return CLI::IsMember(names_of(attn_placements())); }
CLI::Validator storage_names() {
  return CLI::IsMember(std::vector<std::string>{"auto", "f32", "bf16", "f16"});
}
CLI::Validator weight_names() {
  std::vector<std::string> names = {"auto", "f32", "bf16", "f16"};
  for (const std::string& q : quantizable_type_names()) names.push_back(q);
  return CLI::IsMember(names);
}
CLI::Validator projection_names() {
  return CLI::Validator(
      [](std::string& v) {
        cpu::ProjectionKernel k;
        const Status st = cpu::parse_usable_projection_kernel(v, &k);
        return st.ok() ? std::string() : st.message();
      },
      "KERNEL");
}
CLI::Validator attn_product_names() {
  return CLI::IsMember(std::vector<std::string>{"auto", "f32", "bf16"});
}

}  // namespace hanpu::cli
