// Each `lowbit` subcommand lives in its own file and registers itself on the
// CLI11 app through one of these functions, so the subcommands stay apart.
// A subcommand's callback records its exit code with setExitCode.
#pragma once

namespace CLI {
class App;
}

namespace lowbit::cli {

void addCompileCommand(CLI::App &app);
void addFormatsCommand(CLI::App &app);
void addImportCommand(CLI::App &app);
void addDbCommand(CLI::App &app);
void addBenchCommand(CLI::App &app);
void addTuneCommand(CLI::App &app);

void setExitCode(int code);
int exitCode();

} // namespace lowbit::cli
