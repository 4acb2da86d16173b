// Rounding and overflow policies shared by every encoder in the format layer.
#pragma once

namespace lowbit::formats {

enum class Rounding {
  // Ties go to the code whose value is "even" (lowest bit of the code clear for
  // minifloats, even integer for integers), as IEEE 754 and torch.round do.
  NearestEven,
  // The smallest representable value >= x. Quantizers round scales this way so
  // that no weight can land outside the element range afterwards.
  TowardPositive,
};

enum class OnOverflow {
  // A value beyond the largest finite value is an error: nothing is clamped
  // silently.
  Error,
  // Clamp to the largest finite value of the right sign. Only the MX and NVFP4
  // scale-selection rules ask for this, because their specifications do.
  Saturate,
};

} // namespace lowbit::formats
