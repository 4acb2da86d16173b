// Checked arithmetic on sizes: shapes, element counts and byte sizes that come
// from files and API arguments.
//
// A product of two such values that wraps past 2^63 can land on a small
// number, which then passes every comparison with a buffer's real size and
// lets a loop bounded by the unwrapped shape run past the buffer (issue 19).
// So every product of untrusted sizes goes through these functions, which
// reject (never clamp) a negative operand or a result that does not fit in
// int64_t, with a message naming what was being computed and its operands.
#pragma once

#include "core/support/Expected.h"

#include <cstdint>
#include <initializer_list>
#include <new>
#include <string>

namespace lowbit {

namespace detail {

inline bool stored(bool overflows, int64_t result, int64_t *out) {
  if (!overflows && out)
    *out = result;
  return overflows;
}

} // namespace detail

// True when a * b (a + b) does not fit in int64_t; otherwise the result is
// stored in `out` when given. Signed operands are allowed here; the checked*
// functions below add the sizes' sign check.
inline bool mulOverflows(int64_t a, int64_t b, int64_t *out = nullptr) {
  int64_t result = 0;
  const bool overflows = __builtin_mul_overflow(a, b, &result);
  return detail::stored(overflows, result, out);
}

inline bool addOverflows(int64_t a, int64_t b, int64_t *out = nullptr) {
  int64_t result = 0;
  const bool overflows = __builtin_add_overflow(a, b, &result);
  return detail::stored(overflows, result, out);
}

namespace detail {

inline std::string joined(std::initializer_list<int64_t> operands, const char *op) {
  std::string text;
  for (int64_t value : operands)
    text += (text.empty() ? "" : op) + std::to_string(value);
  return text;
}

inline Status checkSizes(std::initializer_list<int64_t> operands, const std::string &what) {
  for (int64_t value : operands)
    if (value < 0)
      return makeError(what + ": " + std::to_string(value) + " is negative, not a size");
  return Status::success();
}

} // namespace detail

// The product of non-negative sizes, e.g.
//   checkedProduct({rows, cols}, "GGUF tensor element count rows * cols")
// whose error reads "GGUF tensor element count rows * cols: 274177 *
// 2152973481943072 does not fit in a 64-bit size".
inline Expected<int64_t> checkedProduct(std::initializer_list<int64_t> factors,
                                        const std::string &what) {
  if (Status status = detail::checkSizes(factors, what); !status)
    return makeError(status.error());
  int64_t product = 1;
  for (int64_t factor : factors)
    if (mulOverflows(product, factor, &product))
      return makeError(what + ": " + detail::joined(factors, " * ") +
                       " does not fit in a 64-bit size");
  return product;
}

inline Expected<int64_t> checkedMul(int64_t a, int64_t b, const std::string &what) {
  return checkedProduct({a, b}, what);
}

// The sum of non-negative sizes (a byte offset plus a length, for instance).
inline Expected<int64_t> checkedAdd(int64_t a, int64_t b, const std::string &what) {
  if (Status status = detail::checkSizes({a, b}, what); !status)
    return makeError(status.error());
  int64_t sum = 0;
  if (addOverflows(a, b, &sum))
    return makeError(what + ": " + detail::joined({a, b}, " + ") +
                     " does not fit in a 64-bit size");
  return sum;
}

// Runs `body` (returning an Expected or a Status) and turns a std::bad_alloc
// escaping it into an error: APIs that promise not to throw allocate buffers
// whose sizes come from their inputs, and a size that passed every check can
// still be more than the machine has.
template <typename Body>
auto catchingBadAlloc(const std::string &what, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return makeError(what + ": out of memory");
  }
}

} // namespace lowbit
