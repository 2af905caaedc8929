// A hanpu subcommand as main.cc lists it: its path ("bench la"), one line of help, and how it
// adds its flags and runs. Each command lives in a file of its own with an options struct,
// an add_*_options and a run_* function; command_from binds the three into the list's entry.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace hanpu::cli {

// Adds the command's flags to its CLI11 subcommand and returns what runs it once parsed.
using CommandSetup = std::function<std::function<int()>(CLI::App&)>;

struct Command {
  std::string path;     // words from the top: "run", "bench la"
  std::string summary;  // the help line
  CommandSetup setup;
};

template <typename Options, void (*Add)(CLI::App&, Options&), int (*Run)(const Options&)>
CommandSetup command_from() {
  return [](CLI::App& app) -> std::function<int()> {
    auto options = std::make_shared<Options>();
    Add(app, *options);
    return [options] { return Run(*options); };
  };
}

}  // namespace hanpu::cli
