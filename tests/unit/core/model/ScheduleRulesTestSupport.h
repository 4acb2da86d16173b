// What the schedule-rule tests share: a problem of one code type and one
// schedule of each family.
#pragma once

#include "core/ScheduleRules.h"

namespace lowbit::core {

inline Problem problem(const formats::DataFormat &code, int64_t n = 4096, int64_t k = 4096) {
  Problem p;
  p.n = n;
  p.k = k;
  p.code = code;
  return p;
}

inline const Schedule kGemv{Family::Gemv, 1, 4, 1024, 1, 4, 1, 1};
inline const Schedule kMma{Family::Mma, 16, 64, 128, 1, 1, 4, 1};
inline const Schedule kGemvTiled{Family::GemvTiled, 1, 64, 128, 1, 1, 1, 8};
inline const Schedule kMmaSplitK{Family::Mma, 16, 64, 128, 1, 1, 2, 8};
inline const Schedule kDequant{Family::Dequant, 1, 64, 128, 1, 1, 1, 8};
inline const Schedule kWgmma{Family::Wgmma, 64, 512, 64, 1, 8, 8, 1};

} // namespace lowbit::core
