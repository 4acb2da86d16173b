// CUDA for the wgmma family's ops (ir/LbWgmmaOps.td). Addresses inside a
// `#lb.swizzle` buffer come from one place, swizzledChunk(); the wgmma
// descriptor's swizzle mode is the same attribute's.
#include "codegen/emit/Emitter.h"
#include "core/FragmentFacts.h"

#include "llvm/ADT/TypeSwitch.h"

#include <numeric>

using namespace mlir;

namespace lowbit::codegen {

// c ^ f(r): the row's bits that toggle the same chunk bit they index
// (xor[i] = 2^i, the hardware's swizzle) as one mask, each other bit as its
// own term.
std::string swizzledChunk(lb::SwizzleAttr layout, const std::string &row,
                          const std::string &chunk) {
  int64_t identity = 0;
  std::string terms;
  for (auto [bit, mask] : llvm::enumerate(layout.getToggles())) {
    if (mask == int64_t{1} << bit)
      identity |= mask;
    else if (mask)
      terms += " ^ ((((" + row + ") >> " + std::to_string(bit) + ") & 1) * " +
               std::to_string(mask) + ")";
  }
  std::string out = "((" + chunk + ")";
  if (identity)
    out += " ^ ((" + row + ") & " + std::to_string(identity) + ")";
  return out + terms + ")";
}

namespace {

std::string sharedBase(const std::string &buffer, MemRefType type, const std::string &stage) {
  int64_t stageBytes =
      type.getDimSize(1) * type.getDimSize(2) * type.getElementTypeBitWidth() / 8;
  return "(shared_addr(" + buffer + ") + (u32)(" + stage + ") * " + std::to_string(stageBytes) +
         "u)";
}

std::string barrierAddress(const std::string &barriers, const std::string &index) {
  return "shared_addr(&" + barriers + "[" + index + "])";
}

// The calling lane's first float4 of `slot` in a [slots, N / 8, 128] buffer
// of wgmma partials: slice i is 32 i float4s on (lb.store_wgmma_partials).
std::string partialsSlot(const std::string &buffer, const std::string &slot, VectorType acc,
                         const std::string &qualifier) {
  return "reinterpret_cast<" + qualifier + "float4 *>(" + buffer + ") + (" + slot + ") * " +
         std::to_string(acc.getNumElements() / 4 * 32) + " + (threadIdx.x & 31)";
}

// `acc`'s entries 4 i .. 4 i + 3 += float4 `part`.
std::string addFloat4(const std::string &acc, const std::string &part) {
  return acc + ".r[4 * i] += " + part + ".x; " + acc + ".r[4 * i + 1] += " + part + ".y; " + acc +
         ".r[4 * i + 2] += " + part + ".z; " + acc + ".r[4 * i + 3] += " + part + ".w;";
}

} // namespace

// A lane copies one 4-byte word of a row into its slot in the paired K
// order, and checks that the expression it emits is core's slot for every
// word, so the two cannot drift apart.
// - 16-bit x: lane q copies pair q of the row's 64 values: pair b = q mod 16
//   of 32-wide block q / 16, the values at K = 2 b, 2 b + 1 = 8 t + 4 j +
//   2 r + h with r = b & 1, j = (b >> 1) & 1, t = b >> 2, which the paired
//   order puts at position 16 j + 8 r + 2 t + h (core::pairedSlotOfK): byte
//   64 block + 32 j + 16 r + 4 t of the row. A warp copies a row.
// - s8 x: a 64-byte row is 16 words, so lane q copies word kw = q mod 16 of
//   row q / 16 of its warp's pair of rows. Word kw = 8 block + 2 t + j holds
//   K = 32 block + 8 t + 4 j .. + 3, which the s8 paired order puts at slot
//   16 j + 4 t of its block (core::pairedS8SlotOfK).
LogicalResult Emitter::emitCopyPairedActivations(lb::CopyPairedActivationsOp copy) {
  auto buffer = cast<MemRefType>(copy.getBuffer().getType());
  auto x = cast<MemRefType>(copy.getX().getType());
  auto layout = copy.getBuffer().getDefiningOp<lb::SharedBufferOp>().getLayoutAttr();
  const bool s8 = buffer.getElementTypeBitWidth() == 8; // s8 or e4m3 bytes
  int64_t rows = buffer.getDimSize(1), warps = copy.getThreads() / 32;
  const int64_t rowsPerWarp = s8 ? 2 : 1;
  for (int q = 0; q < 32; ++q) {
    if (s8) {
      int kw = q & 15;
      int byte = 32 * (kw >> 3) + 16 * (kw & 1) + 4 * ((kw >> 1) & 3);
      if (byte != 32 * (kw >> 3) + core::pairedS8SlotOfK(4 * (kw & 7)))
        return copy.emitOpError("lb-to-cuda: the staged s8 word order disagrees with "
                                "core::pairedS8SlotOfK at word ")
               << kw;
    } else {
      int b = q & 15;
      int byte = 64 * (q >> 4) + 32 * ((b >> 1) & 1) + 16 * (b & 1) + 4 * (b >> 2);
      if (byte != 2 * (32 * (q >> 4) + core::pairedSlotOfK(2 * b)))
        return copy.emitOpError("lb-to-cuda: the staged pair order disagrees with "
                                "core::pairedSlotOfK at lane ")
               << q;
    }
  }
  line() << "{\n";
  ++depth;
  line() << "const u32 base = "
         << sharedBase(name(copy.getBuffer()), buffer, name(copy.getStage())) << ";\n";
  if (s8) {
    line() << "const int q = threadIdx.x & 31, kw = q & 15;\n";
    line() << "const int byte = 32 * (kw >> 3) + 16 * (kw & 1) + 4 * ((kw >> 1) & 3);\n";
  } else {
    line() << "const int q = threadIdx.x & 31, b = q & 15;\n";
    line() << "const int byte = 64 * (q >> 4) + 32 * ((b >> 1) & 1) + 16 * (b & 1) + 4 * (b "
              ">> 2);\n";
  }
  // A lane's rows are first, first + step, ...: one address a swizzle
  // residue of the row (the pattern repeats every getPatternRows() rows),
  // then immediate offsets. When the block's rows are all inside x, the
  // copies are unrolled on those few bases: the per-row 64-bit address and
  // bounds arithmetic of the general loop made the producer the bottleneck
  // (consumers waited on `full` for about a fifth of their time; this cut
  // 28672 x 8192 W4 g128 at M = 1024 from 1238 to 971 us on an H100). The
  // last row block keeps the general, zero-filling loop, not unrolled: the
  // producer keeps few registers (lb.set_max_registers).
  const int64_t step = rowsPerWarp * warps;
  const int64_t pattern = layout.getPatternRows();
  const int64_t residues = pattern / std::gcd(step, pattern);
  const std::string elementType = s8 ? "unsigned char" : "u16";
  const std::string laneOffset = s8 ? " + 4 * kw" : " + 2 * q";
  line() << "const int first = " << (s8 ? "2 * " : "") << "((int)(threadIdx.x % "
         << copy.getThreads() << ") / 32)" << (s8 ? " + (q >> 4)" : "") << ";\n";
  if (rows % step == 0) {
    line() << "if (" << name(copy.getM0()) << " + " << rows << " <= " << name(copy.getRows())
           << ") {\n";
    line() << "  const " << elementType << " *source = " << name(copy.getX()) << " + ("
           << name(copy.getM0()) << " + first) * " << x.getDimSize(1) << "LL + "
           << name(copy.getK0()) << laneOffset << ";\n";
    line() << "  u32 target[" << residues << "];\n";
    line() << "  #pragma unroll\n";
    line() << "  for (int i = 0; i < " << residues << "; ++i) {\n";
    line() << "    const int row = first + " << step << " * i;\n";
    line() << "    target[i] = base + (u32)(row * " << layout.getBytes() << " + "
           << swizzledChunk(layout, "row", "byte >> 4") << " * 16 + (byte & 15));\n";
    line() << "  }\n";
    line() << "  #pragma unroll\n";
    line() << "  for (int i = 0; i < " << rows / step << "; ++i)\n";
    line() << "    cp_async4_zfill(target[i % " << residues << "] + (u32)((i / " << residues
           << ") * " << residues * step * layout.getBytes() << "), source + (long long)i * "
           << step * x.getDimSize(1) << ", true);\n";
    line() << "} else {\n";
  } else {
    line() << "{\n";
  }
  ++depth;
  line() << "#pragma unroll 1\n";
  line() << "for (int row = first; row < " << rows << "; row += " << step << ") {\n";
  line() << "  const long long m = " << name(copy.getM0()) << " + row;\n";
  line() << "  const bool inside = m < " << name(copy.getRows()) << ";\n";
  line() << "  const " << elementType << " *source = " << name(copy.getX())
         << " + (inside ? m : 0LL) * " << x.getDimSize(1) << "LL + " << name(copy.getK0())
         << laneOffset << ";\n";
  line() << "  cp_async4_zfill(base + (u32)(row * " << layout.getBytes() << " + "
         << swizzledChunk(layout, "row", "byte >> 4") << " * 16 + (byte & 15)), source, "
         << "inside);\n";
  line() << "}\n";
  --depth;
  line() << "}\n";
  line() << "cp_async_mbarrier_arrive_noinc("
         << barrierAddress(name(copy.getBarriers()), name(copy.getIndex())) << ");\n";
  --depth;
  line() << "}\n";
  return success();
}

LogicalResult Emitter::emitWgmmaOp(Operation &op, bool &handled) {
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case<lb::MbarriersOp>([&](lb::MbarriersOp barriers) {
        std::string var = bind(barriers.getBarriers(), "barriers");
        line() << "__shared__ __align__(8) u64 " << var << "[" << barriers.getCount() << "];\n";
        line() << "if (threadIdx.x == 0) {\n";
        line() << "  for (int i = 0; i < " << barriers.getCount() << "; ++i) mbarrier_init("
               << barrierAddress(var, "i") << ", " << barriers.getArrivals() << "u);\n";
        line() << "  fence_mbarrier_init();\n";
        line() << "}\n";
        line() << "__syncthreads();\n";
        return success();
      })
      .Case<lb::MbarrierWaitOp>([&](lb::MbarrierWaitOp wait) {
        line() << "mbarrier_wait(" << barrierAddress(name(wait.getBarriers()), name(wait.getIndex()))
               << ", (u32)(" << name(wait.getParity()) << "));\n";
        return success();
      })
      .Case<lb::MbarrierArriveOp>([&](lb::MbarrierArriveOp arrive) {
        line() << "mbarrier_arrive("
               << barrierAddress(name(arrive.getBarriers()), name(arrive.getIndex())) << ");\n";
        return success();
      })
      .Case<lb::CopyPairedActivationsOp>(
          [&](lb::CopyPairedActivationsOp copy) { return emitCopyPairedActivations(copy); })
      .Case<lb::FenceAsyncSharedOp>([&](auto) {
        line() << "fence_proxy_async_shared();\n";
        return success();
      })
      .Case<lb::SetMaxRegistersOp>([&](lb::SetMaxRegistersOp set) {
        // Below the launch's even split the warpgroup gives registers back,
        // above it takes them.
        bool increase = set.getCount() * blockThreads > 65536;
        line() << (increase ? "setmaxnreg_inc<" : "setmaxnreg_dec<") << set.getCount()
               << ">();\n";
        return success();
      })
      .Case<lb::WgmmaFenceOp>([&](auto) {
        line() << "wgmma_fence();\n";
        return success();
      })
      .Case<lb::WgmmaCommitOp>([&](auto) {
        line() << "wgmma_commit();\n";
        return success();
      })
      .Case<lb::WgmmaWaitOp>([&](lb::WgmmaWaitOp wait) {
        line() << "wgmma_wait<" << wait.getPending() << ">();\n";
        return success();
      })
      .Case<lb::WgmmaOp>([&](lb::WgmmaOp wgmma) -> LogicalResult {
        auto acc = cast<VectorType>(wgmma.getAcc().getType());
        auto buffer = cast<MemRefType>(wgmma.getBuffer().getType());
        auto layout = wgmma.getBuffer().getDefiningOp<lb::SharedBufferOp>().getLayoutAttr();
        if (!layout.isHardware())
          return wgmma.emitOpError("lb-to-cuda: only the hardware's swizzles have a "
                                   "descriptor");
        int64_t floats = acc.getNumElements(), n = 2 * floats;
        Type aElement = cast<VectorType>(wgmma.getA().getType()).getElementType();
        Type bElement = buffer.getElementType();
        // 8-bit A bytes are the staged B's type: s8 (s32 sums) or e4m3.
        const bool bytes = aElement.isInteger(8), s8 = bytes && bElement.isInteger(8);
        std::string type = s8 ? "s8" : bytes ? "e4m3" : aElement.isBF16() ? "bf16" : "f16";
        std::string var = bind(wgmma.getResult());
        line() << valueType(acc) << " " << var << " = " << name(wgmma.getAcc()) << ";\n";
        line() << "{\n";
        // A k step is 32 bytes of each row: k16 of 16-bit values, k32 of s8.
        line() << "  const u64 descriptor = wgmma_descriptor_swizzled<" << layout.getBytes()
               << ">(" << sharedBase(name(wgmma.getBuffer()), buffer, name(wgmma.getStage()))
               << " + " << 32 * wgmma.getKStep() << "u);\n";
        // D += A·B: scale-d 1 (accumulate); for float types A and B
        // unscaled (1, 1), and for 16-bit ones B not transposed (K-major,
        // the stage's rows), which 8-bit types only have (no immediate).
        line() << "  asm volatile(\"{\\n.reg .pred accumulate;\\nsetp.ne.b32 accumulate, 1, "
                  "0;\\nwgmma.mma_async.sync.aligned.m64n"
               << n << (s8 ? "k32.s32." : bytes ? "k32.f32." : "k16.f32.") << type << "." << type
               << " {";
        for (int64_t i = 0; i < floats; ++i)
          os << (i ? ", " : "") << "%" << i;
        os << "}, {%" << floats << ", %" << floats + 1 << ", %" << floats + 2 << ", %"
           << floats + 3 << "}, %" << floats + 4
           << (s8 ? ", accumulate" : bytes ? ", accumulate, 1, 1" : ", accumulate, 1, 1, 0")
           << ";\\n}\\n\"\n";
        line() << "      : ";
        for (int64_t i = 0; i < floats; ++i)
          os << (i ? ", " : "") << (s8 ? "\"+r\"(" : "\"+f\"(") << var << ".r[" << i << "])";
        os << "\n";
        std::string a = name(wgmma.getA());
        line() << "      : \"r\"(" << a << ".r[0]), \"r\"(" << a << ".r[1]), \"r\"(" << a
               << ".r[2]), \"r\"(" << a << ".r[3]), \"l\"(descriptor));\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::ScaleWgmmaSumsOp>([&](lb::ScaleWgmmaSumsOp scale) {
        auto sums = cast<VectorType>(scale.getSums().getType());
        auto xScales = cast<MemRefType>(scale.getXScales().getType());
        const bool perTensor = !xScales.isDynamicDim(0) && xScales.getDimSize(0) == 1;
        std::string var = bind(scale.getResult()), in = name(scale.getSums());
        line() << valueType(scale.getResult().getType()) << " " << var << ";\n";
        line() << "{\n";
        line() << "  const long long token = " << name(scale.getM0())
               << " + 2 * (threadIdx.x & 3);\n";
        line() << "  #pragma unroll\n";
        line() << "  for (int i = 0; i < " << sums.getNumElements() / 4 << "; ++i)\n";
        line() << "    #pragma unroll\n";
        line() << "    for (int h = 0; h < 2; ++h) {\n";
        line() << "      const long long m = token + 8 * i + h;\n";
        line() << "      const float x = m < " << name(scale.getRows()) << " ? "
               << name(scale.getXScales()) << (perTensor ? "[0]" : "[m]") << " : 0.f;\n";
        // The split-K mma's arithmetic, fma(weight scale, sum, 0) · token
        // scale, so both families give the same bits (a zero sum times a
        // negative scale is +0 there, not -0).
        line() << "      " << var << ".r[4 * i + h] = fmaf(" << name(scale.getRowScale())
               << ", (float)" << in << ".r[4 * i + h], 0.f) * x;\n";
        line() << "      " << var << ".r[4 * i + 2 + h] = fmaf(" << name(scale.getRow8Scale())
               << ", (float)" << in << ".r[4 * i + 2 + h], 0.f) * x;\n";
        line() << "    }\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::AccumulateWgmmaGroupOp>([&](lb::AccumulateWgmmaGroupOp group) {
        auto sums = cast<VectorType>(group.getSums().getType());
        std::string var = bind(group.getResult()), in = name(group.getSums()),
                    acc = name(group.getAcc());
        line() << valueType(group.getResult().getType()) << " " << var << ";\n";
        line() << "#pragma unroll\n";
        line() << "for (int i = 0; i < " << sums.getNumElements() / 4 << "; ++i)\n";
        line() << "  #pragma unroll\n";
        line() << "  for (int h = 0; h < 2; ++h) {\n";
        line() << "    " << var << ".r[4 * i + h] = fmaf(" << name(group.getRowScale()) << ", (float)"
               << in << ".r[4 * i + h], " << acc << ".r[4 * i + h]);\n";
        line() << "    " << var << ".r[4 * i + 2 + h] = fmaf(" << name(group.getRow8Scale())
               << ", (float)" << in << ".r[4 * i + 2 + h], " << acc << ".r[4 * i + 2 + h]);\n";
        line() << "  }\n";
        return success();
      })
      .Case<lb::StoreWgmmaPartialsOp>([&](lb::StoreWgmmaPartialsOp store) {
        // Slice i of lane l: float4 (slot, i, l), 512 contiguous bytes a warp.
        auto acc = cast<VectorType>(store.getAcc().getType());
        std::string accName = name(store.getAcc());
        line() << "{\n";
        line() << "  float4 *slot = " << partialsSlot(name(store.getBuffer()), name(store.getSlot()), acc, "")
               << ";\n";
        line() << "  #pragma unroll\n";
        line() << "  for (int i = 0; i < " << acc.getNumElements() / 4 << "; ++i)\n";
        line() << "    slot[32 * i] = make_float4(" << accName << ".r[4 * i], " << accName
               << ".r[4 * i + 1], " << accName << ".r[4 * i + 2], " << accName
               << ".r[4 * i + 3]);\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::AddWgmmaPartialsOp>([&](lb::AddWgmmaPartialsOp add) {
        // Another SM wrote them in this launch: through L2 (ld.global.cg).
        auto acc = cast<VectorType>(add.getResult().getType());
        std::string var = bind(add.getResult()), in = name(add.getAcc());
        line() << "F32x<" << acc.getNumElements() << "> " << var << " = " << in << ";\n";
        line() << "{\n";
        line() << "  const float4 *slot = "
               << partialsSlot(name(add.getBuffer()), name(add.getSlot()), acc, "const ") << ";\n";
        line() << "  #pragma unroll\n";
        line() << "  for (int i = 0; i < " << acc.getNumElements() / 4 << "; ++i) {\n";
        line() << "    const float4 part = __ldcg(slot + 32 * i);\n";
        line() << "    " << addFloat4(var, "part") << "\n";
        line() << "  }\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::ReleaseFlagOp>([&](lb::ReleaseFlagOp flag) {
        line() << "release_flag(reinterpret_cast<u32 *>(" << name(flag.getBuffer()) << ") + ("
               << name(flag.getWord()) << "));\n";
        return success();
      })
      .Case<lb::WaitFlagOp>([&](lb::WaitFlagOp flag) {
        line() << "wait_flag(reinterpret_cast<const u32 *>(" << name(flag.getBuffer()) << ") + ("
               << name(flag.getWord()) << "));\n";
        return success();
      })
      .Case<lb::SumWgmmaClusterPartialsOp>([&](lb::SumWgmmaClusterPartialsOp sum) {
        // The lane's float4s of the slot in every block, ranks in order.
        auto acc = cast<VectorType>(sum.getResult().getType());
        std::string var = bind(sum.getResult());
        line() << "F32x<" << acc.getNumElements() << "> " << var << " = {};\n";
        line() << "{\n";
        line() << "  const float4 *slot = "
               << partialsSlot(name(sum.getBuffer()), name(sum.getSlot()), acc, "const ") << ";\n";
        line() << "  #pragma unroll\n";
        line() << "  for (u32 rank = 0; rank < " << sum.getBlocks() << "; ++rank)\n";
        line() << "    #pragma unroll\n";
        line() << "    for (int i = 0; i < " << acc.getNumElements() / 4 << "; ++i) {\n";
        line() << "      const float4 part = cluster_load_f32x4(slot + 32 * i, rank);\n";
        line() << "      " << addFloat4(var, "part") << "\n";
        line() << "    }\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::StoreWgmmaAccumulatorOp>([&](lb::StoreWgmmaAccumulatorOp store) {
        auto y = cast<MemRefType>(store.getY().getType());
        auto acc = cast<VectorType>(store.getAcc().getType());
        const bool wide = y.getElementType().isF32();
        std::string suffix = pairSuffix(y.getElementType());
        std::string accName = name(store.getAcc()), yName = name(store.getY());
        // Slice i is an m16n8 accumulator of W·xᵀ: lane (g, t) holds columns
        // n0 + g (r[4i], r[4i+1]) and n0 + g + 8 (r[4i+2], r[4i+3]) of rows
        // m0 + 8 i + 2 t and m0 + 8 i + 2 t + 1 of y.
        line() << "{\n";
        line() << "  const long long row = " << name(store.getM0())
               << " + 2 * (threadIdx.x & 3);\n";
        line() << "  const long long col = " << name(store.getN0()) << " + (threadIdx.x & 31) / 4;\n";
        line() << "  #pragma unroll\n";
        line() << "  for (int i = 0; i < " << acc.getNumElements() / 4 << "; ++i)\n";
        line() << "    #pragma unroll\n";
        line() << "    for (int h = 0; h < 2; ++h)\n";
        line() << "      if (row + 8 * i + h < " << name(store.getRows()) << ") {\n";
        line() << "        " << (wide ? "float" : "u16") << " *out = " << yName
               << " + (row + 8 * i + h) * " << y.getDimSize(1) << "LL + col;\n";
        if (wide) {
          line() << "        out[0] = " << accName << ".r[4 * i + h];\n";
          line() << "        out[8] = " << accName << ".r[4 * i + 2 + h];\n";
        } else {
          line() << "        out[0] = (u16)f32x2_to_" << suffix << "(" << accName
                 << ".r[4 * i + h], 0.f);\n";
          line() << "        out[8] = (u16)f32x2_to_" << suffix << "(" << accName
                 << ".r[4 * i + 2 + h], 0.f);\n";
        }
        line() << "      }\n";
        line() << "}\n";
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

} // namespace lowbit::codegen
