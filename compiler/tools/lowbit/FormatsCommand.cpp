#include "compiler/tools/lowbit/Command.h"

#include "core/FormatListing.h"

#include <CLI/CLI.hpp>

#include <iostream>

namespace lowbit::cli {

void addFormatsCommand(CLI::App &app) {
  CLI::App *formats = app.add_subcommand(
      "formats",
      "list every weight format and scheme: bits per weight, and the archs kernels exist for");
  formats->callback([] {
    std::cout << core::formatListing();
    setExitCode(0);
  });
}

} // namespace lowbit::cli
