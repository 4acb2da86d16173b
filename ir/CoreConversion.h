// The dialect's problem and schedule as the core model (core/Problem.h,
// core/Schedule.h), so the verifier and lb-tile ask the one copy of the
// schedule rules (core/ScheduleRules.h) that the tuner asks too. This is the
// only place that maps IR types and attributes to the core model.
#pragma once

#include "core/Problem.h"
#include "core/Schedule.h"
#include "ir/LbAttrs.h"

#include "mlir/IR/Types.h"

namespace lowbit::lb {

core::Family coreFamily(KernelFamily family);
// The fields of `#lb.schedule`; `tile` has 3 sizes and `warps` 2 (the
// verifier checks that before it converts; other arities become sizes of 0,
// which checkScheduleStructure rejects).
core::Schedule coreSchedule(KernelFamily family, llvm::ArrayRef<int64_t> tile,
                            llvm::ArrayRef<int64_t> warps, int64_t stages, int64_t splitK,
                            int64_t clusterK = 1,
                            TileScheduler scheduler = TileScheduler::grid);
core::Schedule coreSchedule(ScheduleAttr schedule);

// A storage type as the formats library's descriptor: ui<N> and si<N>,
// !lb.int, f16 / bf16 / f32, f8E4M3FN, f8E5M2, !lb.float and !lb.lut with
// its table; signless integers and tables given at run time get the reason.
Expected<formats::DataFormat> dataFormat(mlir::Type type);
// The other way, for weight codes: ui<N> / si<N>, !lb.int for offsets and
// ternary, !lb.float for minifloats and !lb.lut with the table in the type.
Expected<mlir::Type> codeType(mlir::MLIRContext &context, const formats::DataFormat &format);

// x's element type in the core model (f16, bf16, si8, f8E4M3FN).
Expected<core::Activation> coreActivation(mlir::Type activation);

// An `lb.qmatmul`'s problem: W[n, k] of `code`, activations of
// `activation`, and the scheme of `quant` (with `zeros`, the zero points'
// element type, naming the format of quantized zero codes). Quantized
// activations (si8, f8E4M3FN) also need y's element type `output` and the
// type of their f32 scales `xScales` ([?] per token, [1] per tensor). Other
// activations, and codes the formats library cannot describe, get the reason.
Expected<core::Problem> coreProblem(int64_t n, int64_t k, mlir::Type activation, mlir::Type code,
                                    QuantAttr quant, mlir::Type zeros = {},
                                    mlir::Type output = {}, mlir::Type xScales = {});

} // namespace lowbit::lb
