// The body of `lowbit compile`, exported from liblowbit_compiler.so so that
// the `lowbit` binary itself links no LLVM (see tools/lowbit/CompileCommand.cpp).
#include "compiler/KernelSetCompiler.h"

#include <CLI/CLI.hpp>

#include <iostream>

extern "C" __attribute__((visibility("default"))) int
lowbit_compile_main(int argc, const char *const *argv) {
  CLI::App app{"lowbit compile: compile a kernel set from a spec"};
  std::string specPath, output;
  bool builtin = false;
  std::vector<std::string> archs;
  app.add_option("spec", specPath, "kernel-set spec (TOML)");
  app.add_flag("--builtin", builtin,
               "use the built-in spec (Llama-3-8B linear layers, W4A16 g128)");
  app.add_option("-o,--output", output, "kernel database (*.db) or directory")->required();
  app.add_option("--arch", archs, "only these archs (default: the spec's)");
  std::vector<std::string> schedules;
  app.add_option("--schedule", schedules,
                 "only these schedules, as #lb.schedule<...> (default: the built-in set)");
  int jobs = 0;
  app.add_option("-j,--jobs", jobs, "NVRTC threads (default: one per hardware thread)")
      ->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    return app.exit(error);
  }
  if (builtin == !specPath.empty()) {
    std::cerr << "lowbit compile: give either a spec file or --builtin\n";
    return 2;
  }

  lowbit::Expected<lowbit::spec::KernelSetSpec> spec =
      builtin ? lowbit::spec::parseKernelSetSpec(
                    lowbit::spec::builtinKernelSetSpecText(), "<builtin>")
              : lowbit::spec::loadKernelSetSpec(specPath);
  if (!spec.ok()) {
    std::cerr << "lowbit compile: " << spec.error() << "\n";
    return 1;
  }
  if (!archs.empty())
    spec->archs = archs;

  lowbit::compiler::KernelSetOptions options;
  options.output = output;
  options.schedules = schedules;
  options.jobs = jobs;
  lowbit::Expected<lowbit::compiler::KernelSetReport> report =
      lowbit::compiler::compileKernelSet(*spec, options, std::cerr);
  if (!report.ok()) {
    std::cerr << "lowbit compile: " << report.error() << "\n";
    return 1;
  }
  lowbit::compiler::printKernelSetReport(*report, std::cout);
  return report->failures() == 0 ? 0 : 1;
}
