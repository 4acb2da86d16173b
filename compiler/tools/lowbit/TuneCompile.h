// `lowbit tune`'s compile half: each problem's best-ranked candidate
// schedules compiled into the kernel database through the compiler plugin,
// and the candidates the compiler recorded as failed.
#pragma once

#include "compiler/tools/lowbit/CompilerPlugin.h"
#include "compiler/tuner/CostModel.h"
#include "runtime/kernels/KernelSet.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

namespace lowbit::cli {

// Compiles each problem with its own schedule list: the default schedules
// and the cost model's first `maxCandidates` others (0: all) of the
// schedules the search space accepts (its wgmma schedules with each of
// `wgmmaSchedulers`). A
// candidate that fails to compile is recorded as failed in `database` by the
// compiler, and the others are compiled all the same. Returns the number of
// problems whose every candidate compiled.
int compileCandidates(CompileMain compileMain, const std::vector<kernels::ProblemDesc> &problems,
                      const std::string &arch, const std::vector<int64_t> &mPoints,
                      const tuner::DeviceModel &model, int64_t maxCandidates,
                      const std::vector<core::TileScheduler> &wgmmaSchedulers,
                      const std::string &database);

// Prints "lowbit tune: recorded as failed: ..." for every candidate of
// `problems` on `arch` that `database` records as failed to compile; returns
// how many, or -1 (with the reason printed) when the database cannot be read.
int printCompileFailures(const std::string &database,
                         const std::vector<kernels::ProblemDesc> &problems,
                         const std::string &arch, std::ostream &out);

// Prints "lowbit tune: NAME: no ARCH candidate is in DB ..." for every
// problem with no kernel for `arch` in `database` (no schedule fits, every
// candidate failed, or nothing could be written: then every problem); returns
// how many, or -1 when the database cannot be queried. `lowbit tune --compile-only` fails when
// any is missing: it once exited 0 having stored nothing.
int printProblemsWithoutCandidates(const std::string &database,
                                   const std::vector<kernels::ProblemDesc> &problems,
                                   const std::string &arch, std::ostream &out);

// Problems compiled by a background thread (lowbit tune with the compiler
// and the GPU on one machine): `compiled` counts the problems done, in order;
// `measuring` is the problem the GPU measures now (1-based, 0: none), for the
// log. Its destructor waits for the thread, so every return of lowbit tune,
// early ones included, does.
struct BackgroundCompile {
  std::thread thread;
  std::mutex mutex;
  std::condition_variable changed;
  size_t compiled = 0;
  std::atomic<size_t> measuring{0};
  ~BackgroundCompile() {
    if (thread.joinable())
      thread.join();
  }
};

// What lowbit tune's compile half needs of its arguments.
struct TuneCompileOptions {
  std::string db, arch;
  std::vector<int64_t> mPoints;
  tuner::DeviceModel model;
  int64_t maxCandidates = 32;
  std::vector<core::TileScheduler> schedulers;
  bool compileOnly = false, noPtx = false;
};

// Compiles the candidates of `problems` into options.db through the compiler
// plugin. With the GPU on this machine too (not compileOnly) and more than
// one problem, it compiles the first problem now and the others on
// background.thread, and sets `overlapped`. Without the plugin it notes that
// the candidates already in the database are measured, or, compileOnly,
// fails. With noPtx the problems' PTX is dropped afterwards. Returns lowbit
// tune's exit code so far (0: go on); `options` and `problems` must outlive
// `background`.
int compileForTune(const std::vector<kernels::ProblemDesc> &problems,
                   const TuneCompileOptions &options, BackgroundCompile &background,
                   bool &overlapped);

// --compile-only's last word: the problems without candidates and the
// candidates recorded as failed; the exit code (1 when a problem has none).
int reportCompileOnly(const std::string &database,
                      const std::vector<kernels::ProblemDesc> &problems, const std::string &arch);

} // namespace lowbit::cli
