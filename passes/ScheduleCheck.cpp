// lb-tile's check before a family builds a kernel: the problem and schedule
// of the lb.qmatmul as the core model, asked of the schedule rules that the
// verifier and the tuner ask too (core/ScheduleRules.h). Its diagnostic is
// the rules' message, so the tuner's reason for skipping a schedule reads
// the same as the compiler's error.
#include "core/ScheduleRules.h"
#include "ir/CoreConversion.h"
#include "passes/TileFamilies.h"

using namespace mlir;

namespace lowbit::passes {

LogicalResult checkSchedule(const KernelProblem &p) {
  lb::QMatmulOp source = p.source;
  core::Schedule schedule = lb::coreSchedule(p.schedule);
  Type zeros = p.zeros ? cast<MemRefType>(p.zeros.getType()).getElementType() : Type();
  Type xScales = p.xScales ? p.xScales.getType() : Type();
  Expected<core::Problem> problem =
      lb::coreProblem(p.n, p.k, p.activation, p.code, p.quant, zeros, p.output, xScales);
  // What the core model cannot express, no family can compute.
  if (!problem)
    return source.emitOpError(core::scheduleSubject(schedule)) << ": " << problem.error();
  if (Status fits = core::checkSchedule(*problem, schedule); !fits)
    return source.emitOpError(fits.error());
  return success();
}

} // namespace lowbit::passes
