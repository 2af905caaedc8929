// Suggestions for mistyped commands and flags (see suggest.h). The edit distance is written here:
// a dozen lines, and no Debian library of ours offers one.
#include "suggest.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace hanpu::cli {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(s->get_name());
  return names;
}

}  // namespace

std::string closest_name(const std::string& typed, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, typed.size() / 3) + 1;
  for (const std::string& n : names) {
    const size_t d = edit_distance(typed, n);
    if (d < best_distance) best = n, best_distance = d;
  }
  return best;
}

int check_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return 0;
  const std::vector<std::string> names = subcommand_names(app);
  if (std::find(names.begin(), names.end(), argv[1]) != names.end()) return 0;
  const std::string near = closest_name(argv[1], names);
  std::fprintf(stderr, "error: '%s' is not a hanpu command%s; the commands are: %s\n", argv[1],
               near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near).c_str(),
               fmt::format("{}", fmt::join(names, ", ")).c_str());
  return 2;
}

void suggest_flags(const CLI::App& app, int argc, char** argv) {
  // The deepest subcommand that was parsed owns the flags.
  const CLI::App* owner = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* s : owner->get_subcommands()) {
      owner = s;
      deeper = true;
      break;
    }
  }
  std::vector<std::string> known;
  for (const CLI::Option* opt : owner->get_options()) {
    for (const std::string& l : opt->get_lnames()) known.push_back("--" + l);
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), arg) != known.end()) continue;
    const std::string near = closest_name(arg, known);
    if (!near.empty()) std::fprintf(stderr, "%s: did you mean %s?\n", arg.c_str(), near.c_str());
  }
}

}  // namespace hanpu::cli
