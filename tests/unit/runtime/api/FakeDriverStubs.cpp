// Weak `CUDA_SUCCESS` stubs for every entry point Driver.h resolves, under
// the (versioned) symbol names cuda.h maps them to; FakeDriver.cpp's strong
// definitions replace the ones the runtime's device path really uses. Kept
// in their own file: a weak and a strong definition cannot share one object.
#include "runtime/cuda/Driver.h"

#define LOWBIT_FAKE_STRINGIFY2(x) #x
#define LOWBIT_FAKE_STRINGIFY(x) LOWBIT_FAKE_STRINGIFY2(x)
#define LOWBIT_FAKE_CAT2(a, b) a##b
#define LOWBIT_FAKE_CAT(a, b) LOWBIT_FAKE_CAT2(a, b)
// A weak `int f(void)` under the (versioned) symbol name cuda.h maps `name` to.
#define LOWBIT_FAKE_STUB(name) LOWBIT_FAKE_STUB_AT(name, __COUNTER__)
#define LOWBIT_FAKE_STUB_AT(name, n)                                                       \
  extern "C" __attribute__((weak, visibility("default"))) int LOWBIT_FAKE_CAT(             \
      lowbitFakeStub, n)(void) __asm__(LOWBIT_FAKE_STRINGIFY(name));                        \
  extern "C" int LOWBIT_FAKE_CAT(lowbitFakeStub, n)(void) { return 0; }
LOWBIT_CUDA_DRIVER_FUNCTIONS(LOWBIT_FAKE_STUB)

