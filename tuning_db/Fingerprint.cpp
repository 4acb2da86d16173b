#include "tuning_db/Fingerprint.h"

#include "runtime/cuda/Driver.h"
#include "tuning_db/Sha256.h"

#include <cctype>
#include <fstream>
#include <sstream>

namespace lowbit::db {
namespace {

// '|' and '=' separate fields, so they (and the escape itself) are escaped in
// free-text values to keep the key unambiguous.
std::string escapeKeyValue(const std::string &value) {
  std::string out;
  for (char c : value) {
    if (c == '%' || c == '|' || c == '=') {
      static const char kHex[] = "0123456789ABCDEF";
      out.push_back('%');
      out.push_back(kHex[(unsigned char)c >> 4]);
      out.push_back(kHex[(unsigned char)c & 15]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The NVIDIA kernel module version. The driver API has no call for it (only
// NVML does, which we do not want to depend on), and /proc is where the
// module publishes it. Only the version token is read, nothing else.
std::string readKernelModuleVersion() {
  std::ifstream file("/proc/driver/nvidia/version");
  std::string line;
  if (!file || !std::getline(file, line))
    return "unknown";
  const std::string marker = "Kernel Module";
  size_t at = line.find(marker);
  if (at == std::string::npos)
    return "unknown";
  std::istringstream rest(line.substr(at + marker.size()));
  std::string token;
  while (rest >> token) {
    bool versionLike = !token.empty() && std::isdigit((unsigned char)token[0]);
    for (char c : token)
      versionLike = versionLike && (std::isdigit((unsigned char)c) || c == '.');
    if (versionLike)
      return token;
  }
  return "unknown";
}

} // namespace

std::string DeviceFingerprint::canonicalKey() const {
  std::ostringstream key;
  key << "lowbit-device-v1"
      << "|name=" << escapeKeyValue(name) << "|cc=" << ccMajor << "." << ccMinor
      << "|sms=" << smCount << "|l2=" << l2Bytes
      << "|smem_optin=" << sharedMemPerBlockOptinBytes << "|memclk_khz=" << memoryClockKhz
      << "|bus_bits=" << memoryBusWidthBits << "|driver=" << escapeKeyValue(driverVersion)
      << "|cuda=" << cudaVersion;
  return key.str();
}

std::string DeviceFingerprint::id() const { return sha256Hex(canonicalKey()); }

Expected<DeviceFingerprint> readFingerprint(int ordinal) {
  std::string whyNot;
  const cuda::DriverApi *api = cuda::loadDriver(&whyNot);
  if (!api)
    return makeError("cannot read the device fingerprint: " + whyNot);

  auto fail = [&](const std::string &what, CUresult result) {
    return makeError("cannot read the fingerprint of CUDA device " + std::to_string(ordinal) +
                     ": " + what + " failed: " + cuda::describe(*api, result));
  };

  int count = 0;
  if (CUresult r = api->cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return fail("cuDeviceGetCount", r);
  if (ordinal < 0 || ordinal >= count)
    return makeError("cannot read the fingerprint of CUDA device " + std::to_string(ordinal) +
                     ": the driver reports " + std::to_string(count) + " device(s)");
  CUdevice device = 0;
  if (CUresult r = api->cuDeviceGet(&device, ordinal); r != CUDA_SUCCESS)
    return fail("cuDeviceGet", r);

  DeviceFingerprint fp;
  char name[256] = {};
  if (CUresult r = api->cuDeviceGetName(name, sizeof(name) - 1, device); r != CUDA_SUCCESS)
    return fail("cuDeviceGetName", r);
  fp.name = name;

  struct Attribute {
    CUdevice_attribute attribute;
    const char *what;
    int value = 0;
  };
  Attribute attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major"},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor"},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count"},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size"},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory per block"},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock"},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "memory bus width"},
  };
  for (Attribute &a : attributes)
    if (CUresult r = api->cuDeviceGetAttribute(&a.value, a.attribute, device); r != CUDA_SUCCESS)
      return fail(std::string("cuDeviceGetAttribute(") + a.what + ")", r);
  fp.ccMajor = attributes[0].value;
  fp.ccMinor = attributes[1].value;
  fp.smCount = attributes[2].value;
  fp.l2Bytes = attributes[3].value;
  fp.sharedMemPerBlockOptinBytes = attributes[4].value;
  fp.memoryClockKhz = attributes[5].value;
  fp.memoryBusWidthBits = attributes[6].value;

  if (CUresult r = api->cuDriverGetVersion(&fp.cudaVersion); r != CUDA_SUCCESS)
    return fail("cuDriverGetVersion", r);
  fp.driverVersion = readKernelModuleVersion();

  CUuuid uuid{};
  if (CUresult r = api->cuDeviceGetUuid(&uuid, device); r != CUDA_SUCCESS)
    return fail("cuDeviceGetUuid", r);
  static const char kHex[] = "0123456789abcdef";
  for (char byte : uuid.bytes) {
    fp.uuid.push_back(kHex[(unsigned char)byte >> 4]);
    fp.uuid.push_back(kHex[(unsigned char)byte & 15]);
  }
  return fp;
}

} // namespace lowbit::db
