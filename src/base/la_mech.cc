// Names of the LA mechanisms (shared by the CLI, tests and messages).
#include "hanpu/la.h"

namespace hanpu {

std::string_view la_mech_name(LaMech m) { return m == LaMech::kGdn ? "gdn" : "kda"; }

std::optional<LaMech> parse_la_mech(std::string_view name) {
  if (name == "gdn") return LaMech::kGdn;
  if (name == "kda") return LaMech::kKda;
  return std::nullopt;
}

}  // namespace hanpu
