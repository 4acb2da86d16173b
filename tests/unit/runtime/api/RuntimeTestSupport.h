// Kernel databases built by hand for the runtime tests: real tuning_db files
// whose kernels carry fake (but well-formed) cubins and PTX, so plan building
// is tested end to end without a GPU or the compiler.
#pragma once

#include "lowbit/lowbit.h"
#include "runtime/kernels/KernelSet.h"
#include "tuning_db/Database.h"
#include "tuning_db/Fingerprint.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::api::testing {

class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

// The W4A16 problem of the host example: 4096 x 4096, f16, uint4, g128.
kernels::ProblemDesc w4a16Problem(int64_t n = 4096, int64_t k = 4096);
// The same weights with s8 activations, f32 scales of `scale` and f32 y.
kernels::ProblemDesc w4a8Problem(int64_t n = 4096, int64_t k = 4096,
                                 core::ActivationScale scale = core::ActivationScale::PerToken);
// The same problem as a caller fills lowbit_problem (struct_size set, the
// rest zeroed).
lowbit_problem w4a16Abi(int64_t n = 4096, int64_t k = 4096,
                        lowbit_zero_mode zero = LOWBIT_ZERO_NONE);

// Two 4-bit layouts that both tile 1 x 32 codes; they differ in the order.
extern const char *const kLayoutA;
extern const char *const kLayoutB;

struct FakeKernel {
  std::string tag; // makes the cubin (and so the id) unique
  std::string arch = "sm_90a";
  std::string family = "gemv";
  std::string layout = kLayoutA;
  int64_t rowsPerBlock = 1;
  bool withPtx = true;
  bool corruptCubin = false;
  int64_t dynamicSharedBytes = 0;
  // Static shared memory: the entry's ptxas figure and, as
  // "static_shared=N" in the cubin's tag and the PTX, what the fake driver
  // reports for the loaded function (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).
  int staticSharedBytes = 0;
  // The schedule's tile scheduler when not grid ("persistent", "stream_k").
  std::string scheduler = "";
};

// A cubin-shaped image: an ELF64 little-endian header for EM_CUDA, then `tag`.
std::vector<char> fakeCubin(const std::string &tag);

// Adds the problem (if needed) and the kernel; returns the kernel id.
std::string addKernel(db::Database &database, const kernels::ProblemDesc &problem,
                      const FakeKernel &kernel);

db::Database openOrDie(const std::string &path);

// lowbit_context_create on device 0 with `systemDbPath` alone.
lowbit_status createContext(const std::string &systemDbPath, lowbit_context **out);

// Host memory standing in for the fake driver's device memory.
inline uintptr_t address(const void *p) {
  return reinterpret_cast<uintptr_t>(p);
}
// A 16-byte aligned view into a vector with room to spare.
template <typename T> T *aligned16(std::vector<T> &buffer) {
  return buffer.data() + (16 - address(buffer.data()) % 16) % 16 / sizeof(T);
}

db::DeviceFingerprint h100();   // cc 9.0, 132 SMs
db::DeviceFingerprint a100();   // cc 8.0, 108 SMs
db::DeviceFingerprint future(); // cc 12.0: no cubin fits, only PTX

} // namespace lowbit::api::testing
