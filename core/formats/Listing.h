// The text `lowbit formats` prints: every element format and every built-in
// scheme, with bits per weight (metadata included) and compute types.
#pragma once

#include <string>

namespace lowbit::formats {

std::string formatListing();

} // namespace lowbit::formats
