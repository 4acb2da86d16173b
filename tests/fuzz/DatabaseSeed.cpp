// Writes the database fuzz target's seed: a real database (schema, one
// device, one problem, two kernels with cubins and PTX, a dispatch table),
// checkpointed into one file so the fuzzer mutates all of it.
#include "tuning_db/Database.h"

#include <cstdio>
#include <string>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.db\n", argv[0]);
    return 2;
  }
  using namespace lowbit::db;
  auto database = Database::open(argv[1]);
  if (!database) {
    std::fprintf(stderr, "%s\n", database.error().c_str());
    return 1;
  }
  DeviceFingerprint device;
  device.name = "NVIDIA H200";
  device.ccMajor = 9;
  device.smCount = 132;
  device.l2Bytes = 60 << 20;
  device.driverVersion = "580.159.04";
  device.cudaVersion = 13000;
  auto problem = database->putProblem("lowbit.qmatmul.v1;n=64;k=128;act=f16;weight=uint4;"
                                      "scale=f16;granularity=group;group=32;zero=none");
  if (!database->putDevice(device) || !problem) {
    std::fprintf(stderr, "could not write the seed\n");
    return 1;
  }
  std::vector<std::string> ids;
  for (const char *family : {"gemv", "mma"}) {
    KernelRecord kernel;
    kernel.problemId = *problem;
    kernel.arch = "sm_90a";
    kernel.family = family;
    kernel.entry = std::string("seed__") + family;
    kernel.scheduleJson = "{}";
    kernel.weightLayoutId = "0123456789abcdef";
    kernel.cubin.assign(64, static_cast<uint8_t>(family[0]));
    kernel.ptx = ".version 8.0";
    kernel.launch.blockX = 128;
    kernel.launch.gridRule = "ceil(N/64),1,1";
    auto id = database->putKernel(kernel);
    if (!id) {
      std::fprintf(stderr, "%s\n", id.error().c_str());
      return 1;
    }
    ids.push_back(*id);
  }
  if (!database->setDispatch(*problem, device.id(), {{1, 9, ids[0]}, {9, std::nullopt, ids[1]}})) {
    std::fprintf(stderr, "could not write the dispatch table\n");
    return 1;
  }
  return 0;
}
