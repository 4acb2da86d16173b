#include "compiler/measure/BenchFixture.h"

#include "core/Schedule.h"

#include "core/layout/WeightLayout.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>

namespace lowbit::measure {
namespace {

Error driverError(const cuda::DriverApi &api, const std::string &what, CUresult r) {
  return makeError(what + ": " + cuda::describe(api, r));
}

// Launches per graph: a whole number of passes over the rotation and at
// least 32, so launch gaps average out. A launch that already takes more
// than a millisecond (gemv far past its M range, in a sweep) has no gaps
// worth averaging: one pass keeps its measurement from eating GPU time.
int graphLaunches(int copies, double singleLaunchUs = 0) {
  if (singleLaunchUs > 1000)
    return copies;
  return copies * std::max(1, (32 + copies - 1) / copies);
}

// A random byte as an e4m3fn code: the two NaN codes (S.1111.111) become
// ±448, so every code is a number.
uint8_t finiteE4M3(uint8_t byte) { return (byte & 0x7F) == 0x7F ? byte ^ 1 : byte; }

// -2.000 .. 2.000 in steps of 0.001.
constexpr int kActivationValues = 4001;

// s8 activations are codes in [-127, 127] times an f32 scale: per tensor
// 1/64, per token (1 + row mod 5) / 128, so rows differ and every scale is
// exact. Either way x spans about the f16 fixture's [-2, 2].
double tokenScale(core::ActivationScale scale, int64_t row) {
  if (scale == core::ActivationScale::PerTensor)
    return 1. / 64;
  return static_cast<double>(1 + row % 5) / 128;
}

// The relative error a kernel may have: the f64 reference is exact up to y's
// rounding for s8 activations (their products sum exactly in s32), and for
// f16 and bf16 activations as the compute dtype allows (defaultTolerance).
double toleranceFor(const core::Problem &p) {
  if (!core::isQuantized(p.activation))
    return defaultTolerance(p.activation);
  // The fp8 tensor cores add their f32 sums with fewer mantissa bits than
  // f32 has: f32 y is held to f16's tolerance.
  if (p.activation == core::Activation::E4M3 && core::outputType(p) == core::Output::F32)
    return defaultTolerance(core::Activation::F16);
  switch (core::outputType(p)) {
  case core::Output::F16: return defaultTolerance(core::Activation::F16);
  case core::Output::BF16: return defaultTolerance(core::Activation::BF16);
  case core::Output::F32: return 1e-5;
  }
  return 0;
}

int rotationCopies(size_t rotationBytes, size_t perCopy) {
  return static_cast<int>(std::max<size_t>(2, (rotationBytes + perCopy - 1) / perCopy));
}

} // namespace

Expected<std::unique_ptr<LoadedKernel>> LoadedKernel::load(const cuda::DriverApi &api,
                                                           const kernels::KernelEntry &entry,
                                                           const std::vector<char> &cubin) {
  std::unique_ptr<LoadedKernel> kernel(new LoadedKernel(api, entry));
  if (CUresult r = api.cuModuleLoadDataEx(&kernel->module_, cubin.data(), 0, nullptr, nullptr);
      r != CUDA_SUCCESS) {
    kernel->module_ = nullptr;
    return driverError(api, "load " + entry.name, r);
  }
  if (CUresult r = api.cuModuleGetFunction(&kernel->function_, kernel->module_, entry.name.c_str());
      r != CUDA_SUCCESS)
    return driverError(api, "find " + entry.name, r);
  return kernel;
}

LoadedKernel::~LoadedKernel() {
  if (module_)
    api_.cuModuleUnload(module_);
}

Expected<std::unique_ptr<BenchFixture>> BenchFixture::create(const cuda::DriverApi &api,
                                                             const kernels::ProblemDesc &p,
                                                             const FixtureOptions &options) {
  // Host data: the problem's weights quantized by the formats library, the
  // same for every kernel; each weight layout gets its own packing and
  // rotation (rotationFor).
  ProblemInputOptions inputOptions;
  inputOptions.seed = options.seed;
  Expected<ProblemInputs> inputs = makeProblemInputs(p, inputOptions);
  if (!inputs.ok())
    return makeError(inputs.error());
  std::unique_ptr<BenchFixture> f(new BenchFixture(api, p, options));
  f->inputs_ = std::move(*inputs);
  if (f->options_.tolerance <= 0)
    f->options_.tolerance = toleranceFor(p);
  // Activations are drawn from kActivationValues evenly spaced values in
  // [-2, 2]; their bits are computed once, because converting every element
  // of a 4096 x 28672 x would cost more CPU time than timing the kernel.
  if (!core::isQuantized(p.activation)) {
    f->activationBits_.resize(kActivationValues);
    for (int i = 0; i < kActivationValues; ++i)
      f->activationBits_[static_cast<size_t>(i)] =
          activationBits(static_cast<double>(i - kActivationValues / 2) / 1000., p.activation);
  }
  f->perCopy_ = static_cast<size_t>(p.n * p.k * p.codeBits() / 8) + f->inputs_.scales.size() +
                f->inputs_.zeros.size();
  return f;
}

Expected<DeviceMemory> BenchFixture::upload(const std::vector<uint8_t> &bytes, const char *what) {
  Expected<DeviceMemory> memory = DeviceMemory::allocate(api_, bytes.size());
  if (!memory.ok())
    return makeError(memory.error());
  if (CUresult r = api_.cuMemcpyHtoD(memory->get(), bytes.data(), bytes.size());
      r != CUDA_SUCCESS)
    return driverError(api_, std::string("upload ") + what, r);
  return memory;
}

Expected<const BenchFixture::Rotation *> BenchFixture::rotationFor(const std::string &layoutText) {
  auto found = rotations_.find(layoutText);
  if (found != rotations_.end())
    return &found->second;
  Expected<layout::WeightLayout> layout = layout::parseWeightLayout(layoutText);
  if (!layout.ok())
    return makeError(problem_.name + ": " + layout.error());
  Expected<std::vector<uint8_t>> packed = inputs_.packed(*layout);
  if (!packed.ok())
    return makeError(packed.error());
  perCopy_ = packed->size() + inputs_.scales.size() + inputs_.zeros.size();
  Rotation rotation;
  rotation.copies = rotationCopies(options_.rotationBytes, perCopy_);
  for (int c = 0; c < rotation.copies; ++c) {
    Expected<DeviceMemory> w = upload(*packed, "weights");
    Expected<DeviceMemory> s = upload(inputs_.scales, "scales");
    if (!w.ok() || !s.ok())
      return makeError(w.ok() ? s.error() : w.error());
    rotation.weights.push_back(std::move(*w));
    rotation.scales.push_back(std::move(*s));
    if (!problem_.scheme.hasZeros())
      continue;
    Expected<DeviceMemory> z = upload(inputs_.zeros, "zeros");
    if (!z.ok())
      return makeError(z.error());
    rotation.zeros.push_back(std::move(*z));
  }
  return &(rotations_[layoutText] = std::move(rotation));
}

Status BenchFixture::ensureRows(int64_t m) {
  if (m <= rowCapacity_)
    return {};
  // Grown to the next power of two so a sweep over rising M reallocates a
  // few times, not at every point.
  int64_t rows = 1;
  while (rows < m)
    rows *= 2;
  x_ = DeviceMemory();
  y_ = DeviceMemory();
  Expected<DeviceMemory> x = DeviceMemory::allocate(
      api_, static_cast<size_t>(rows * problem_.k * core::activationBytes(problem_.activation)));
  // s8 problems' y also takes cuBLASLt's s32 baseline output.
  const int yBytes = core::activationBytes(problem_.activation) == 1
                         ? 4
                         : core::outputBytes(core::outputType(problem_));
  Expected<DeviceMemory> y =
      DeviceMemory::allocate(api_, static_cast<size_t>(rows * problem_.n * yBytes));
  if (!x.ok() || !y.ok())
    return makeError(x.ok() ? y.error() : x.error());
  x_ = std::move(*x);
  y_ = std::move(*y);
  if (problem_.activationScale != core::ActivationScale::None) {
    std::vector<float> scales(static_cast<size_t>(rows));
    for (int64_t row = 0; row < rows; ++row)
      scales[static_cast<size_t>(row)] =
          static_cast<float>(tokenScale(problem_.activationScale, row));
    xScales_ = DeviceMemory();
    Expected<DeviceMemory> memory = DeviceMemory::allocate(api_, scales.size() * 4);
    if (!memory.ok())
      return makeError(memory.error());
    if (CUresult r = api_.cuMemcpyHtoD(memory->get(), scales.data(), scales.size() * 4);
        r != CUDA_SUCCESS)
      return driverError(api_, "upload x_scales", r);
    xScales_ = std::move(*memory);
  }
  rowCapacity_ = rows;
  return {};
}

double BenchFixture::activationAt(const std::vector<uint8_t> &x, int64_t row,
                                  int64_t index) const {
  const size_t at = static_cast<size_t>(row * problem_.k + index);
  if (problem_.activation == core::Activation::S8)
    return static_cast<int8_t>(x[at]) * tokenScale(problem_.activationScale, row);
  if (problem_.activation == core::Activation::E4M3)
    return formats::DataFormat::e4m3fn().decode(x[at]) * tokenScale(problem_.activationScale, row);
  uint16_t bits;
  std::memcpy(&bits, x.data() + 2 * at, 2);
  return activationValue(bits, problem_.activation);
}

double BenchFixture::checkRows(const std::vector<uint8_t> &x, const std::vector<uint8_t> &yRows,
                               int64_t m) const {
  const int64_t k = problem_.k;
  // Rows 0 and M - 1 catch both ends of the M tiling; the reference columns
  // (every 7th) keep the check cheap next to the timing while still crossing
  // every N tile.
  const int64_t rows[2] = {0, m - 1};
  std::vector<double> xRows(static_cast<size_t>(2 * k));
  for (int which = 0; which < 2; ++which)
    for (int64_t kk = 0; kk < k; ++kk)
      xRows[static_cast<size_t>(which * k + kk)] = activationAt(x, rows[which], kk);
  std::vector<double> y(static_cast<size_t>(2 * problem_.n));
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = outputValue(yRows, i, core::outputType(problem_));
  return relativeError(inputs_, xRows, y, 2);
}

void BenchFixture::bindArgs(LaunchArgs &args, const kernels::LaunchShape &shape,
                            const Rotation &rotation, int copy, int64_t m) const {
  core::KernelParameterValues &v = args.values;
  v.x = x_.get();
  v.xScales = xScales_.get();
  v.w = rotation.weights[static_cast<size_t>(copy)].get();
  v.scales = rotation.scales[static_cast<size_t>(copy)].get();
  if (!rotation.zeros.empty())
    v.zeros = rotation.zeros[static_cast<size_t>(copy)].get();
  v.y = y_.get();
  v.rows = m;
  v.workspace = workspace_.get();
  int i = 0;
  for (core::KernelArgument argument : core::kernelArguments(problem_, shape.schedule))
    args.params[i++] = v.address(argument);
}

Expected<std::vector<uint8_t>> BenchFixture::uploadRandomRows(int64_t m) {
  const size_t count = static_cast<size_t>(m * problem_.k);
  std::vector<uint8_t> x(count * static_cast<size_t>(core::activationBytes(problem_.activation)));
  if (problem_.activation == core::Activation::S8) {
    // Eight codes in [-127, 127] per 64 random bits (256 mod 255: a bias of
    // one part in 255 towards -127, irrelevant for test data).
    for (size_t i = 0; i < count; i += 8) {
      uint64_t r = randomBits(seed_);
      for (size_t j = 0; j < 8 && i + j < count; ++j)
        x[i + j] = static_cast<uint8_t>(static_cast<int>((r >> (8 * j)) & 0xFF) % 255 - 127);
    }
  } else if (problem_.activation == core::Activation::E4M3) {
    for (size_t i = 0; i < count; i += 8) {
      uint64_t r = randomBits(seed_);
      for (size_t j = 0; j < 8 && i + j < count; ++j)
        x[i + j] = finiteE4M3(static_cast<uint8_t>(r >> (8 * j)));
    }
  } else {
    // Four values per 64 random bits; 65536 mod 4001 leaves a bias of a few
    // parts in ten thousand, irrelevant for test data.
    for (size_t i = 0; i < count; i += 4) {
      uint64_t r = randomBits(seed_);
      for (size_t j = 0; j < 4 && i + j < count; ++j) {
        uint16_t bits =
            activationBits_[static_cast<size_t>(((r >> (16 * j)) & 0xFFFF) % kActivationValues)];
        std::memcpy(x.data() + 2 * (i + j), &bits, 2);
      }
    }
  }
  if (CUresult r = api_.cuMemcpyHtoD(x_.get(), x.data(), x.size()); r != CUDA_SUCCESS)
    return driverError(api_, "upload x", r);
  return x;
}

Expected<KernelTiming> BenchFixture::measure(const kernels::KernelEntry &entry,
                                             CUfunction function, int64_t m) {
  Expected<kernels::LaunchShape> shape = kernels::launchShape(entry, m, options_.smCount);
  if (!shape.ok())
    return makeError(entry.name + ": " + shape.error());
  Expected<const Rotation *> rotation = rotationFor(entry.weightLayout);
  if (!rotation.ok())
    return makeError(rotation.error());
  if (Status s = ensureRows(m); !s.ok())
    return makeError(s.error());
  const Rotation &rot = **rotation;
  // Fresh activations for every call: a kernel that happens to be right on
  // one input (or reads a stale y) must not pass on it.
  Expected<std::vector<uint8_t>> fresh = uploadRandomRows(m);
  if (!fresh.ok())
    return makeError(fresh.error());
  const std::vector<uint8_t> &x = *fresh;
  // Per call, not per module: KernelMeasurer's cached module may have been
  // loaded for another entry, and this entry's launch is what must fit.
  if (CUresult r = cuda::allowDynamicSharedBytes(api_, function, shape->dynamicSharedBytes);
      r != CUDA_SUCCESS)
    return driverError(api_,
                       "opt " + entry.name + " in to " +
                           std::to_string(shape->dynamicSharedBytes) +
                           " bytes of dynamic shared memory",
                       r);
  const bool dense = entry.family == core::familyName(core::Family::Dequant);
  if (dense) {
    if (!options_.cublas)
      return makeError(entry.name + ": the dense path needs cuBLASLt, which is not loaded");
    if (!denseWeights_.get()) {
      Expected<DeviceMemory> buffer =
          DeviceMemory::allocate(api_, static_cast<size_t>(problem_.n * problem_.k * 2));
      if (!buffer.ok())
        return makeError("the dense path's weights: " + buffer.error());
      denseWeights_ = std::move(*buffer);
    }
  }
  if (static_cast<size_t>(shape->workspaceBytes) > workspaceCapacity_) {
    workspace_ = DeviceMemory();
    Expected<DeviceMemory> buffer =
        DeviceMemory::allocate(api_, static_cast<size_t>(shape->workspaceBytes));
    if (!buffer.ok())
      return makeError(entry.name + ": the stream-K workspace: " + buffer.error());
    workspace_ = std::move(*buffer);
    workspaceCapacity_ = static_cast<size_t>(shape->workspaceBytes);
  }
  auto launch = [&](int copy, CUstream stream) {
    LaunchArgs args;
    bindArgs(args, *shape, rot, copy, m);
    if (dense)
      args.values.y = denseWeights_.get();
    // Stream-K's flags start clear, on the launch's own stream (timed with it).
    if (shape->flagBytes > 0)
      if (CUresult r =
              api_.cuMemsetD32Async(workspace_.get() + static_cast<CUdeviceptr>(shape->flagOffset),
                                    0, static_cast<size_t>(shape->flagBytes / 4), stream);
          r != CUDA_SUCCESS)
        return r;
    CUresult r = api_.cuLaunchKernel(function, shape->grid[0], shape->grid[1], shape->grid[2],
                                     shape->block, 1, 1, shape->dynamicSharedBytes, stream,
                                     args.params, nullptr);
    if (r != CUDA_SUCCESS || !dense)
      return r;
    return options_.cublas->gemm(Cublas::gemmType(problem_.activation), m, problem_.n,
                                 problem_.k, x_.get(), denseWeights_.get(), y_.get(), stream);
  };
  // Correctness first, on a poisoned y so unwritten outputs read as NaN.
  const size_t rowBytes =
      static_cast<size_t>(problem_.n * core::outputBytes(core::outputType(problem_)));
  if (CUresult r = api_.cuMemsetD8(y_.get(), 0xFF, static_cast<size_t>(m) * rowBytes);
      r != CUDA_SUCCESS)
    return driverError(api_, "poison y", r);
  if (CUresult r = launch(0, nullptr); r != CUDA_SUCCESS)
    return dense && r == CUDA_ERROR_UNKNOWN
               ? makeError(entry.name + ": cuBLASLt: " + options_.cublas->lastError())
               : driverError(api_, "launch " + entry.name, r);
  if (CUresult r = api_.cuCtxSynchronize(); r != CUDA_SUCCESS)
    return driverError(api_, "run " + entry.name, r);
  // Only the two checked rows come back: all of y is up to 235 MB at M = 4096.
  std::vector<uint8_t> y(2 * rowBytes);
  for (int64_t which = 0; which < 2; ++which)
    if (CUresult r = api_.cuMemcpyDtoH(y.data() + static_cast<size_t>(which) * rowBytes,
                                       y_.get() + static_cast<size_t>(which * (m - 1)) * rowBytes,
                                       rowBytes);
        r != CUDA_SUCCESS)
      return driverError(api_, "download y", r);
  KernelTiming result;
  result.relativeError = checkRows(x, y, m);
  result.passed = result.relativeError <= options_.tolerance;
  if (!result.passed)
    return result;
  // Wall time of one warm launch (the first may include lazy module
  // loading), only to size the graph below.
  Expected<double> singleUs = wallMicroseconds([&] { return launch(1 % rot.copies, nullptr); });
  if (!singleUs.ok())
    return makeError(entry.name + ": " + singleUs.error());
  Expected<Timing> timing =
      timeGraph(api_, graphLaunches(rot.copies, *singleUs), std::max(7, options_.replays),
                [&](int i, CUstream s) { return launch(i % rot.copies, s); });
  if (!timing.ok())
    return makeError(entry.name + ": " + timing.error());
  result.timing = *timing;
  return result;
}

Expected<Timing> BenchFixture::cublasTiming(const Cublas &cublas, int64_t m) {
  // s8 activations are measured against cuBLASLt's int8 gemm (s32 out, on
  // s8 weights), e4m3 ones against its fp8 gemm (bf16 out), whose M is
  // padded to a multiple of 16 (as PERF.md's peer: cuBLASLt's fp8 kernels
  // want 16-row multiples).
  if (problem_.activation == core::Activation::E4M3)
    m = (m + 15) / 16 * 16;
  if (Status s = ensureRows(m); !s.ok())
    return makeError(s.error());
  if (dense_.empty()) {
    // Dense f16/bf16 weights for cuBLAS, random, rotated like the packed ones.
    // Values in [-0.125, 0.125] in 2001 steps, converted once (as for x).
    // s8 and e4m3 weights are random bytes (e4m3 ones never NaN).
    const bool integer = core::activationBytes(problem_.activation) == 1;
    std::vector<uint16_t> values(2001);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = activationBits(static_cast<double>(static_cast<int64_t>(i) - 1000) / 8000.,
                                 problem_.activation);
    std::vector<uint16_t> host(static_cast<size_t>(problem_.n * problem_.k));
    for (size_t i = 0; i < host.size(); i += 4) {
      uint64_t r = randomBits(seed_);
      for (size_t j = 0; j < 4 && i + j < host.size(); ++j)
        host[i + j] = integer ? static_cast<uint16_t>(r >> (16 * j))
                              : values[((r >> (16 * j)) & 0xFFFF) % values.size()];
    }
    // As bytes, the same random bits hold two weights each.
    size_t bytes = host.size() * (integer ? 1 : 2);
    if (problem_.activation == core::Activation::E4M3) {
      auto *raw = reinterpret_cast<uint8_t *>(host.data());
      for (size_t i = 0; i < bytes; ++i)
        raw[i] = finiteE4M3(raw[i]);
    }
    int copies = rotationCopies(options_.rotationBytes, bytes);
    for (int c = 0; c < copies; ++c) {
      Expected<DeviceMemory> d = DeviceMemory::allocate(api_, bytes);
      if (!d.ok()) {
        dense_.clear();
        return makeError(d.error());
      }
      if (CUresult r = api_.cuMemcpyHtoD(d->get(), host.data(), bytes); r != CUDA_SUCCESS) {
        dense_.clear();
        return driverError(api_, "upload dense weights", r);
      }
      dense_.push_back(std::move(*d));
    }
  }
  // Random activations (never zeros, never stale garbage that may hold NaNs).
  if (Expected<std::vector<uint8_t>> x = uploadRandomRows(m); !x.ok())
    return makeError(x.error());
  const int copies = static_cast<int>(dense_.size());
  auto gemm = [&](int i, CUstream s) {
    return cublas.gemm(Cublas::gemmType(problem_.activation), m, problem_.n, problem_.k, x_.get(), dense_[i % copies].get(),
                       y_.get(), s);
  };
  // A failed gemm is only CUDA_ERROR_UNKNOWN to the driver-side helpers;
  // cuBLASLt's own reason (call and status) is what a reader needs.
  auto cublasError = [&](const std::string &fallback) {
    std::string why = cublas.lastError();
    return makeError("cuBLAS: " + (why.empty() ? fallback : why));
  };
  // One warm call sizes the graph, as for lowbit's kernels (measure()).
  Expected<double> singleUs = wallMicroseconds([&] { return gemm(0, nullptr); });
  if (!singleUs.ok())
    return cublasError(singleUs.error());
  Expected<Timing> timing =
      timeGraph(api_, graphLaunches(copies, *singleUs), std::max(7, options_.replays), gemm);
  if (!timing.ok())
    return cublasError(timing.error());
  return timing;
}

Expected<double> BenchFixture::wallMicroseconds(const std::function<CUresult()> &launch) {
  auto started = std::chrono::steady_clock::now();
  if (CUresult r = launch(); r != CUDA_SUCCESS)
    return driverError(api_, "launch", r);
  if (CUresult r = api_.cuCtxSynchronize(); r != CUDA_SUCCESS)
    return driverError(api_, "run", r);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started)
      .count();
}

double BenchFixture::cublasUsOrZero(const Cublas *cublas, int64_t m, std::ostream &log) {
  if (!cublas)
    return 0;
  Expected<Timing> timing = cublasTiming(*cublas, m);
  if (!timing.ok()) {
    log << "  cuBLAS at M = " << m << ": " << timing.error() << "\n";
    return 0;
  }
  return timing->medianUs;
}

} // namespace lowbit::measure
