#include "compiler/tools/lowbit/Command.h"

#include "core/formats/Listing.h"

#include <CLI/CLI.hpp>

#include <iostream>

namespace lowbit::cli {

void addFormatsCommand(CLI::App &app) {
  CLI::App *formats = app.add_subcommand(
      "formats", "list every weight format and scheme, with bits per weight");
  formats->callback([] {
    std::cout << formats::formatListing();
    setExitCode(0);
  });
}

} // namespace lowbit::cli
