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

Expected<core::Problem> KernelProblem::coreProblem() const {
  Type zeroType = zeros ? cast<MemRefType>(zeros.getType()).getElementType() : Type();
  Type xScaleType = xScales ? xScales.getType() : Type();
  return lb::coreProblem(n, k, activation, code, quant, zeroType, output, xScaleType);
}

LogicalResult checkSchedule(const KernelProblem &p) {
  lb::QMatmulOp source = p.source;
  core::Schedule schedule = lb::coreSchedule(p.schedule);
  Expected<core::Problem> problem = p.coreProblem();
  // What the core model cannot express, no family can compute.
  if (!problem)
    return source.emitOpError(core::scheduleSubject(schedule)) << ": " << problem.error();
  if (Status fits = core::checkSchedule(*problem, schedule); !fits)
    return source.emitOpError(fits.error());
  return success();
}

} // namespace lowbit::passes
