// SHA-256 (FIPS 180-4). Kernel ids are the SHA-256 of the cubin and problem and
// device ids the SHA-256 of their canonical strings; this keeps tuning_db free
// of a crypto dependency on GPU hosts.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::db {

class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  std::array<uint8_t, 32> finish();

private:
  void compress(const uint8_t *block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t totalBytes_ = 0;
};

std::string sha256Hex(const void *data, size_t size);
std::string sha256Hex(const std::string &data);
std::string sha256Hex(const std::vector<uint8_t> &data);

// True for 64 lowercase hex digits, the form every id in the database has.
bool isSha256Hex(const std::string &text);

} // namespace lowbit::db
