// Lookup codes lut<bits, table>: the code indexes a table of 2^bits values.
// Built in: nf4 (the QLoRA NormalFloat table) and fp4 (the OCP e2m1 values as
// a table, for kernels that decode FP4 by lookup); users supply their own.
#pragma once

#include "core/formats/Rounding.h"
#include "core/support/Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::formats {

struct LutFormat {
  int bits = 4;
  std::string name;
  std::vector<double> table;
};

Status validateLutFormat(const LutFormat &format);
// The nearest table entry; ties go to the lower code. Values beyond the
// table's extremes by more than half the outermost gap are errors unless
// onOverflow saturates.
Expected<uint32_t> encodeLut(const LutFormat &format, double value,
                             Rounding rounding = Rounding::NearestEven,
                             OnOverflow onOverflow = OnOverflow::Error);

const std::vector<double> &nf4Table();
const std::vector<double> &fp4Table();

} // namespace lowbit::formats
