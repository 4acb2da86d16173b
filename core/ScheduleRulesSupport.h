// What the schedule-rule files (ScheduleRules.cpp, WgmmaRules.cpp,
// QuantizedActivationRules.cpp) share: saturating sizes, the "<subject>: <why>" rejection, and the rules
// for quantized activations, which ScheduleRules.cpp's code check calls.
#pragma once

#include "core/ScheduleRules.h"

#include <string>

namespace lowbit::core::rules {

// The mma's n8 side: a split-K mma computes W·xᵀ, so x's rows come in 8s.
constexpr int64_t kMmaFragmentN = 8;

std::string str(int64_t v);
// Saturating at INT64_MAX, so an absurd schedule is too big, never wrapped.
int64_t mul(int64_t a, int64_t b);
int64_t add(int64_t a, int64_t b);
// "<scheduleSubject(s)>: <why>".
Status reject(const Schedule &s, const std::string &why);
bool isGrouped(const Problem &p);

// The code's own rules (decodable, its words fit the tile), the quant's tail
// (groups against tile K) and whole 64 x 32 layout tiles a block.
Status checkCode(const Problem &p, const Schedule &s);
Status checkQuantTail(const Problem &p, const Schedule &s);
Status checkWholeBlockTiles(const Problem &p, const Schedule &s);
// Two-level scales whose kernels keep the most live per subtile.
bool heavyTwoLevel(const Problem &p);
// sub_code zero values (no zero codes) decoded to bf16: the heaviest zero
// point a bf16 subtile subtracts.
bool bf16ZeroValues(const Problem &p);

// The wgmma family's rules (WgmmaRules.cpp).
Status checkWgmma(const Problem &p, const Schedule &s);

// The rules for s8 and e4m3 activations (QuantizedActivationRules.cpp).
Status checkQuantizedActivation(const Problem &p, const Schedule &s);

} // namespace lowbit::core::rules
