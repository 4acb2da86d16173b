#include "compiler/tools/lowbit/Command.h"

namespace lowbit::cli {
namespace {
int currentExitCode = 0;
}

void setExitCode(int code) { currentExitCode = code; }
int exitCode() { return currentExitCode; }

} // namespace lowbit::cli
