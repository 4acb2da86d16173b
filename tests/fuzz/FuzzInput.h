// Reads typed fields off the front of a libFuzzer input, so one target can
// drive shapes and enums as well as bytes. Past the end every read is zero:
// a short input is still a valid (small) case.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace lowbit::fuzz {

class FuzzInput {
public:
  FuzzInput(const uint8_t *data, size_t size) : data_(data), size_(size) {}

  template <typename T> T take() {
    T value{};
    size_t n = sizeof(T) < size_ - at_ ? sizeof(T) : size_ - at_;
    std::memcpy(&value, data_ + at_, n);
    at_ += n;
    return value;
  }
  // What is left, as bytes.
  const uint8_t *rest() const { return data_ + at_; }
  size_t restSize() const { return size_ - at_; }
  std::string restText() const { return std::string(reinterpret_cast<const char *>(rest()), restSize()); }

private:
  const uint8_t *data_;
  size_t size_;
  size_t at_ = 0;
};

} // namespace lowbit::fuzz
