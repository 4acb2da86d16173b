#include "compiler/measure/KernelBench.h"

#include "compiler/measure/GraphTimer.h"
#include "runtime/layout/WeightLayout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <map>

namespace lowbit::measure {
namespace {

uint64_t mix(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// f16 bits of a value in [-2, 2] and back; bf16 keeps f32's top half.
uint16_t halfBits(float v, bool bf16) {
  if (bf16) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
  }
  _Float16 h = static_cast<_Float16>(v);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}
double halfValue(uint16_t bits, bool bf16) {
  if (bf16) {
    uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float v;
    std::memcpy(&v, &wide, 4);
    return v;
  }
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<double>(h);
}

Error driverError(const cuda::DriverApi &api, const std::string &what, CUresult r) {
  return makeError(what + ": " + cuda::describe(api, r));
}

// The families' M ranges (DESIGN.md): gemv re-reads the weights for every
// tile M rows and mma pads M to its tile, so kernels far outside their range
// are not worth timing.
bool worthTrying(const kernels::KernelEntry &entry, int64_t m) {
  int64_t tileM = entry.gridTile.size() == 3 ? entry.gridTile[1] : 1;
  if (entry.family == "gemv")
    return m <= 8;
  return m > 8 && tileM <= 4 * m;
}

struct Rotation {
  std::vector<DeviceMemory> weights, scales;
};

} // namespace

Expected<std::vector<BenchRow>> benchKernelSet(const cuda::DriverApi &api,
                                               const std::vector<kernels::KernelEntry> &kernels,
                                               const BenchOptions &options, double copyGBs,
                                               const Cublas *cublas, std::ostream &progress) {
  std::map<std::string, std::vector<const kernels::KernelEntry *>> byProblem;
  std::vector<std::string> order;
  for (const kernels::KernelEntry &k : kernels) {
    if (!options.problemFilter.empty() &&
        k.problem.name.find(options.problemFilter) == std::string::npos)
      continue;
    if (!byProblem.count(k.problem.name))
      order.push_back(k.problem.name);
    byProblem[k.problem.name].push_back(&k);
  }
  std::vector<BenchRow> rows;
  uint64_t seed = 0x1b17;
  for (const std::string &name : order) {
    const std::vector<const kernels::KernelEntry *> &group = byProblem[name];
    const kernels::ProblemDesc &p = group.front()->problem;
    if (p.zero != "none" || (p.weight != "uint4" && p.weight != "int4"))
      return makeError("the benchmark covers W4 without zero points; " + name + " has " +
                       p.weight + " / zero " + p.zero);
    bool bf16 = p.activation == "bf16";
    progress << "problem " << name << ": preparing weights\n" << std::flush;

    // Host data: random codes and scales (never zeros), the same for every
    // kernel; each weight layout gets its own packing and rotation.
    std::vector<uint8_t> codes(static_cast<size_t>(p.n * p.k));
    for (size_t i = 0; i < codes.size(); i += 16) {
      uint64_t r = mix(seed);
      for (size_t j = 0; j < 16 && i + j < codes.size(); ++j)
        codes[i + j] = static_cast<uint8_t>((r >> (4 * j)) & 15);
    }
    int64_t columns = p.granularity == "group" ? p.k / p.groupSize : 1;
    std::vector<uint16_t> scales(static_cast<size_t>(p.granularity == "tensor" ? 1 : p.n * columns));
    for (uint16_t &s : scales)
      s = halfBits(0.004f + 0.016f * static_cast<float>(mix(seed) % 1000) / 1000.f, bf16);

    std::map<std::string, Rotation> rotations;
    size_t perCopy = 0;
    int copies = 2;
    for (const auto &[layoutText, members] : groupByWeightLayout(group)) {
      (void)members;
      Expected<layout::WeightLayout> layout = layout::parseWeightLayout(layoutText);
      if (!layout.ok())
        return makeError(name + ": " + layout.error());
      std::vector<uint8_t> packed(static_cast<size_t>(layout::packedBytes(*layout, p.n, p.k)));
      if (Status s = layout::packWeights(*layout, p.n, p.k, codes.data(), packed.data(), packed.size());
          !s.ok())
        return makeError(name + ": " + s.error());
      perCopy = packed.size() + scales.size() * 2;
      copies = static_cast<int>(std::max<size_t>(2, (options.rotationBytes + perCopy - 1) / perCopy));
      Rotation &rotation = rotations[layoutText];
      for (int c = 0; c < copies; ++c) {
        Expected<DeviceMemory> w = DeviceMemory::allocate(api, packed.size());
        Expected<DeviceMemory> s = DeviceMemory::allocate(api, scales.size() * 2);
        if (!w.ok() || !s.ok())
          return makeError(w.ok() ? s.error() : w.error());
        if (CUresult r = api.cuMemcpyHtoD(w->get(), packed.data(), packed.size()); r != CUDA_SUCCESS)
          return driverError(api, "upload weights", r);
        if (CUresult r = api.cuMemcpyHtoD(s->get(), scales.data(), scales.size() * 2); r != CUDA_SUCCESS)
          return driverError(api, "upload scales", r);
        rotation.weights.push_back(std::move(*w));
        rotation.scales.push_back(std::move(*s));
      }
    }
    int64_t maxM = *std::max_element(options.rowCounts.begin(), options.rowCounts.end());
    std::vector<uint16_t> x(static_cast<size_t>(maxM * p.k));
    for (uint16_t &v : x)
      v = halfBits(static_cast<float>(static_cast<int64_t>(mix(seed) % 4001) - 2000) / 1000.f, bf16);
    Expected<DeviceMemory> xDevice = DeviceMemory::allocate(api, x.size() * 2);
    Expected<DeviceMemory> yDevice = DeviceMemory::allocate(api, static_cast<size_t>(maxM * p.n * 2));
    if (!xDevice.ok() || !yDevice.ok())
      return makeError(xDevice.ok() ? yDevice.error() : xDevice.error());
    if (CUresult r = api.cuMemcpyHtoD(xDevice->get(), x.data(), x.size() * 2); r != CUDA_SUCCESS)
      return driverError(api, "upload x", r);

    // Dense f16/bf16 weights for cuBLAS, random, rotated the same way.
    std::vector<DeviceMemory> dense;
    if (cublas) {
      std::vector<uint16_t> host(static_cast<size_t>(p.n * p.k));
      for (uint16_t &v : host)
        v = halfBits(static_cast<float>(static_cast<int64_t>(mix(seed) % 2001) - 1000) / 8000.f, bf16);
      size_t bytes = host.size() * 2;
      int denseCopies = static_cast<int>(std::max<size_t>(2, (options.rotationBytes + bytes - 1) / bytes));
      for (int c = 0; c < denseCopies; ++c) {
        Expected<DeviceMemory> d = DeviceMemory::allocate(api, bytes);
        if (!d.ok())
          return makeError(d.error());
        if (CUresult r = api.cuMemcpyHtoD(d->get(), host.data(), bytes); r != CUDA_SUCCESS)
          return driverError(api, "upload dense weights", r);
        dense.push_back(std::move(*d));
      }
    }

    std::vector<CUmodule> modules;
    struct Loaded {
      const kernels::KernelEntry *entry;
      CUfunction function;
      const Rotation *rotation;
    };
    std::vector<Loaded> loaded;
    for (const kernels::KernelEntry *entry : group) {
      Expected<std::vector<char>> cubin = kernels::readCubin(*entry);
      if (!cubin.ok())
        return makeError(cubin.error());
      CUmodule module = nullptr;
      CUfunction function = nullptr;
      if (CUresult r = api.cuModuleLoadDataEx(&module, cubin->data(), 0, nullptr, nullptr); r != CUDA_SUCCESS)
        return driverError(api, "load " + entry->name, r);
      modules.push_back(module);
      if (CUresult r = api.cuModuleGetFunction(&function, module, entry->name.c_str()); r != CUDA_SUCCESS)
        return driverError(api, "find " + entry->name, r);
      loaded.push_back({entry, function, &rotations.at(entry->weightLayout)});
    }

    for (int64_t m : options.rowCounts) {
      BenchRow row;
      row.problem = name;
      row.n = p.n;
      row.k = p.k;
      row.m = m;
      for (const Loaded &kernel : loaded) {
        Expected<kernels::LaunchShape> shape = kernels::launchShape(*kernel.entry, m);
        if (!shape.ok() || !worthTrying(*kernel.entry, m))
          continue;
        auto launch = [&](int copy, CUstream stream) {
          CUdeviceptr xp = xDevice->get(), wp = kernel.rotation->weights[copy].get(),
                      sp = kernel.rotation->scales[copy].get(), yp = yDevice->get();
          long long rows = m;
          void *args[] = {&xp, &wp, &sp, &yp, &rows};
          return api.cuLaunchKernel(kernel.function, shape->grid[0], shape->grid[1], shape->grid[2],
                                    shape->block, 1, 1, 0, stream, args, nullptr);
        };
        // Correctness first: rows 0 and M - 1 against the f64 reference.
        api.cuMemsetD8(yDevice->get(), 0xFF, static_cast<size_t>(m * p.n * 2));
        if (CUresult r = launch(0, nullptr); r != CUDA_SUCCESS)
          return driverError(api, "launch " + kernel.entry->name, r);
        if (CUresult r = api.cuCtxSynchronize(); r != CUDA_SUCCESS)
          return driverError(api, "run " + kernel.entry->name, r);
        std::vector<uint16_t> y(static_cast<size_t>(m * p.n));
        api.cuMemcpyDtoH(y.data(), yDevice->get(), y.size() * 2);
        double errorSquared = 0, referenceSquared = 0;
        for (int64_t r : {int64_t{0}, m - 1})
          for (int64_t n = 0; n < p.n; n += 7) {
            double ref = 0;
            for (int64_t kk = 0; kk < p.k; ++kk) {
              uint8_t c = codes[static_cast<size_t>(n * p.k + kk)];
              double q = p.weight == "int4" && c >= 8 ? c - 16.0 : c;
              int64_t s = p.granularity == "tensor" ? 0
                          : n * columns + (p.granularity == "group" ? kk / p.groupSize : 0);
              ref += halfValue(x[static_cast<size_t>(r * p.k + kk)], bf16) * q *
                     halfValue(scales[static_cast<size_t>(s)], bf16);
            }
            double got = halfValue(y[static_cast<size_t>(r * p.n + n)], bf16);
            errorSquared += std::isnan(got) ? 1e30 : (got - ref) * (got - ref);
            referenceSquared += ref * ref;
          }
        double relative = std::sqrt(errorSquared / referenceSquared);
        if (relative > (bf16 ? 1e-2 : 2e-3)) {
          progress << "  rejected " << kernel.entry->name << " at M = " << m
                   << ": relative error " << relative << "\n";
          continue;
        }
        Expected<Timing> timing = timeGraph(api, copies * std::max(1, (32 + copies - 1) / copies),
                                            options.replays,
                                            [&](int i, CUstream s) { return launch(i % copies, s); });
        if (!timing.ok())
          return makeError(kernel.entry->name + ": " + timing.error());
        ++row.kernelsTried;
        if (row.kernel.empty() || timing->medianUs < row.medianUs) {
          row.kernel = kernel.entry->name;
          row.medianUs = timing->medianUs;
          row.p10Us = timing->p10Us;
          row.p90Us = timing->p90Us;
          row.maxRelativeError = relative;
        }
      }
      if (cublas) {
        Expected<Timing> timing = timeGraph(
            api, static_cast<int>(dense.size()) * std::max<int>(1, (32 + static_cast<int>(dense.size()) - 1) / static_cast<int>(dense.size())),
            options.replays, [&](int i, CUstream s) {
              return cublas->gemm(bf16, m, p.n, p.k, xDevice->get(), dense[i % dense.size()].get(),
                                  yDevice->get(), s);
            });
        if (timing.ok())
          row.cublasUs = timing->medianUs;
        else
          progress << "  cuBLAS: " << timing.error() << "\n";
      }
      if (!row.kernel.empty()) {
        double bytes = static_cast<double>(perCopy) + 2.0 * m * (p.k + p.n);
        row.gbps = bytes / (row.medianUs * 1e3);
        row.copyFraction = copyGBs > 0 ? row.gbps / copyGBs : 0;
        row.tflops = 2.0 * m * p.n * p.k / (row.medianUs * 1e6);
      }
      progress << "  M = " << m << ": " << row.medianUs << " us (" << row.kernel << ")\n" << std::flush;
      rows.push_back(row);
    }
    for (CUmodule module : modules)
      api.cuModuleUnload(module);
  }
  return rows;
}

std::map<std::string, std::vector<const kernels::KernelEntry *>>
groupByWeightLayout(const std::vector<const kernels::KernelEntry *> &kernels) {
  std::map<std::string, std::vector<const kernels::KernelEntry *>> groups;
  for (const kernels::KernelEntry *entry : kernels)
    groups[entry->weightLayout].push_back(entry);
  return groups;
}

void printBenchTable(const std::vector<BenchRow> &rows, double copyGBs, std::ostream &os) {
  os << "copy bandwidth (read + write): " << std::fixed << std::setprecision(0) << copyGBs
     << " GB/s\n";
  os << std::left << std::setw(18) << "N x K" << std::right << std::setw(6) << "M" << std::setw(10)
     << "lowbit us" << std::setw(10) << "cuBLAS us" << std::setw(9) << "speedup" << std::setw(8)
     << "GB/s" << std::setw(7) << "%copy" << std::setw(8) << "TFLOP/s" << "  kernel\n";
  for (const BenchRow &r : rows) {
    std::string shape = std::to_string(r.n) + "x" + std::to_string(r.k);
    os << std::left << std::setw(18) << shape << std::right << std::setw(6) << r.m
       << std::setprecision(1) << std::setw(10) << r.medianUs << std::setw(10) << r.cublasUs
       << std::setprecision(2) << std::setw(9) << (r.medianUs > 0 && r.cublasUs > 0 ? r.cublasUs / r.medianUs : 0)
       << std::setprecision(0) << std::setw(8) << r.gbps << std::setw(6) << 100 * r.copyFraction << "%"
       << std::setprecision(1) << std::setw(8) << r.tflops << "  " << r.kernel << "\n";
  }
}

void writeBenchCsv(const std::vector<BenchRow> &rows, std::ostream &os) {
  os << "problem,n,k,m,kernel,median_us,p10_us,p90_us,cublas_us,gbps,copy_fraction,tflops,max_rel_error\n";
  for (const BenchRow &r : rows)
    os << r.problem << "," << r.n << "," << r.k << "," << r.m << "," << r.kernel << ","
       << r.medianUs << "," << r.p10Us << "," << r.p90Us << "," << r.cublasUs << "," << r.gbps
       << "," << r.copyFraction << "," << r.tflops << "," << r.maxRelativeError << "\n";
}

} // namespace lowbit::measure
