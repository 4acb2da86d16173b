// Device fingerprints: what identifies a GPU configuration for tuning.
//
// Every field comes from a driver attribute, never from the product name:
// names change with driver releases and board partners, attributes do not.
#pragma once

#include "core/support/Expected.h"

#include <cstdint>
#include <string>

namespace lowbit::db {

struct DeviceFingerprint {
  std::string name;  // as the driver reports it; informational and a tie-breaker only
  int ccMajor = 0;
  int ccMinor = 0;
  int smCount = 0;
  int64_t l2Bytes = 0;
  int64_t sharedMemPerBlockOptinBytes = 0;
  int64_t memoryClockKhz = 0;
  int memoryBusWidthBits = 0;
  std::string driverVersion; // kernel-module version such as "580.95.05", or "unknown"
  int cudaVersion = 0;       // cuDriverGetVersion: 13000 for CUDA 13.0
  std::string uuid;          // 32 lowercase hex digits; not part of the key

  // 10 * major + minor, e.g. 90 for sm_90.
  int computeCapability() const { return ccMajor * 10 + ccMinor; }

  // A stable, versioned string of every field that may change performance.
  // The UUID is left out on purpose: two boards of one model in one host (or
  // in a fleet) should share their tuning. The driver version is kept in,
  // since a driver update can change timings; after one, the lookup falls
  // back to the "same compute capability and SM count" tier, which still
  // finds the old entry.
  std::string canonicalKey() const;
  // sha256 hex of canonicalKey(): the `devices.id` column.
  std::string id() const;
};

// Reads the fingerprint of CUDA device `ordinal` through the driver loaded by
// dlopen. Fails with a clear message when there is no driver or no such device.
Expected<DeviceFingerprint> readFingerprint(int ordinal = 0);

} // namespace lowbit::db
