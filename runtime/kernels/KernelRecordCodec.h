// How a compiled kernel is stored in the kernel database: the problem's
// canonical signature (core::signature, whose sha256 is the problem id) and
// the kernel row's schedule JSON, which carries everything the runtime needs
// to launch it and to pack weights for it.
#pragma once

#include "runtime/kernels/KernelSet.h"
#include "tuning_db/Records.h"

namespace lowbit::kernels {

// The database row for a compiled kernel (cubin and PTX included); the id is
// left for the database to derive from the cubin.
db::KernelRecord kernelRecord(const KernelEntry &entry, const std::vector<char> &cubin,
                              const std::string &ptx, const std::string &sourceHash,
                              const std::string &compilerVersion);

// The launchable description of a database row; fails with a message naming
// the field when the row is incomplete or from an unknown encoding.
Expected<KernelEntry> kernelEntry(const db::KernelRecord &record);

} // namespace lowbit::kernels
