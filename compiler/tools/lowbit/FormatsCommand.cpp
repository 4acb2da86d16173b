#include "compiler/tools/lowbit/Command.h"

#include "core/FormatListing.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace lowbit::cli {

void addFormatsCommand(CLI::App &app) {
  CLI::App *formats = app.add_subcommand(
      "formats",
      "list every weight format and scheme: bits per weight, and the archs kernels exist for");
  auto snr = std::make_shared<bool>(false);
  formats->add_flag("--snr", *snr,
                    "instead, each scheme's bits per weight and quantize -> dequantize SNR on a "
                    "seeded Gaussian matrix");
  formats->callback([snr] {
    std::cout << (*snr ? core::formatQualityListing() : core::formatListing());
    setExitCode(0);
  });
}

} // namespace lowbit::cli
