// CUDA for the mma family's ops. Shared-memory staging buffers are raw byte
// arrays; a block's activation stages are in their buffer's #lb.swizzle
// layout, whose addresses swizzledChunk() computes for the cp.async writes
// and the lb.load_a_fragment reads alike.
#include "codegen/emit/Emitter.h"
#include "core/layout/WeightLayout.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace lowbit::codegen {

// Step j's a0..a3 are (row g, k pair 2 j), (row g + 8, pair 2 j), (row g,
// pair 2 j + 1), (row g + 8, pair 2 j + 1) of the lane's 8 activations: with
// slot k = 2t + h + 8r holding x[8t + 4j + 2r + h], register r's pair is
// pair 2 j + r of the 16-byte run.
void Emitter::emitPairedFragment(const std::string &var) {
  static const char *const words[] = {"x", "y", "z", "w"};
  for (int j = 0; j < 2; ++j)
    line() << "  " << var << "[" << 4 * j << "] = lo." << words[2 * j] << "; " << var << "["
           << 4 * j + 1 << "] = hi." << words[2 * j] << "; " << var << "[" << 4 * j + 2
           << "] = lo." << words[2 * j + 1] << "; " << var << "[" << 4 * j + 3 << "] = hi."
           << words[2 * j + 1] << ";\n";
}

LogicalResult Emitter::emitActivationCopy(Operation *op, Value x, Value buffer, Value stage,
                                          Value m0, Value k0, Value rows, int64_t threads,
                                          bool laneOwned) {
  lb::SwizzleAttr layout;
  if (!laneOwned) {
    auto shared = buffer.getDefiningOp<lb::SharedBufferOp>();
    layout = shared ? shared.getLayoutAttr() : lb::SwizzleAttr();
    if (!layout)
      return op->emitOpError("lb-to-cuda: a block's stage needs an lb.shared_buffer with a "
                             "#lb.swizzle layout");
  }
  auto bufferType = cast<MemRefType>(buffer.getType());
  auto xType = cast<MemRefType>(x.getType());
  int64_t tileRows = bufferType.getDimSize(1), cols = bufferType.getDimSize(2);
  int64_t chunksPerRow = cols / 8;
  line() << "{\n";
  ++depth;
  line() << "const u32 base = shared_addr(" << name(buffer) << ") + (u32)(" << name(stage)
         << ") * " << tileRows * cols * 2 << "u;\n";
  if (laneOwned)
    line() << "#pragma unroll\n";
  line() << "for (int c = " << (laneOwned ? "(int)(threadIdx.x & 31)" : "threadIdx.x") << "; c < "
         << tileRows * chunksPerRow << "; c += " << threads << ") {\n";
  line() << "  const int r = c / " << chunksPerRow << ", chunk = c % " << chunksPerRow << ";\n";
  line() << "  const long long row = " << name(m0) << " + r;\n";
  // Rows past M are zero-filled; their source address stays in bounds.
  line() << "  const bool inside = row < " << name(rows) << ";\n";
  line() << "  const u16 *source = " << name(x) << " + (inside ? row : 0LL) * "
         << xType.getDimSize(1) << "LL + " << name(k0) << " + chunk * 8;\n";
  // A lane-owned stage is unswizzled: chunk c at 16 c, where its lane reads
  // it back. A block's stage is swizzled for lb.load_a_fragment's reads
  // (SharedBufferOp).
  if (laneOwned)
    line() << "  cp_async16_zfill(base + (u32)c * 16u, source, inside);\n";
  else
    line() << "  cp_async16_zfill(base + (u32)(r * " << cols * 2 << " + "
           << swizzledChunk(layout, "r", "chunk") << " * 16), source, inside);\n";
  line() << "}\n";
  --depth;
  line() << "}\n";
  return success();
}

LogicalResult Emitter::emitMmaOp(Operation &op, bool &handled) {
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case<lb::SharedBufferOp>([&](lb::SharedBufferOp buffer) -> LogicalResult {
        auto type = cast<MemRefType>(buffer.getBuffer().getType());
        // Codes take their storage width (an !lb.int ternary is 2 bits), values
        // their type's.
        Type element = type.getElementType();
        int64_t bits = lb::getCodeBits(element) ? lb::getCodeBits(element)
                       : element.isIntOrFloat() ? element.getIntOrFloatBitWidth()
                                                : 16;
        int64_t bytes = type.getNumElements() * bits / 8;
        if (!buffer.getDynamic()) {
          line() << "__shared__ __align__(128) unsigned char " << bind(buffer.getBuffer(), "smem")
                 << "[" << bytes << "];\n";
          return success();
        }
        // Dynamic buffers are carved, 128-byte aligned, out of the one extern
        // array, in op order; the kernel's attribute says how much to pass.
        // A swizzled buffer must start on a whole pattern (#lb.swizzle), and
        // CUDA promises the array only 16 bytes: it is aligned at run time,
        // inside `alignment` bytes reserved ahead of it.
        auto declared = kernel->getAttrOfType<IntegerAttr>("lb.dynamic_shared_bytes");
        lb::SwizzleAttr layout = buffer.getLayoutAttr();
        int64_t offset = (dynamicSharedOffset + 127) / 128 * 128;
        int64_t reserved = layout ? layout.getAlignment() : 0;
        if (!declared || offset + reserved + bytes > declared.getInt())
          return buffer.emitOpError("lb-to-cuda: needs dynamic shared bytes [")
                 << offset << ", " << offset + reserved + bytes
                 << ") but the kernel's lb.dynamic_shared_bytes is "
                 << (declared ? declared.getInt() : 0);
        if (dynamicSharedOffset == 0)
          line() << "extern __shared__ __align__(128) unsigned char lb_dynamic_smem[];\n";
        dynamicSharedOffset = offset + reserved + bytes;
        std::string var = bind(buffer.getBuffer(), "smem");
        line() << "unsigned char *const " << var << " = lb_dynamic_smem + " << offset;
        if (layout)
          os << " + ((" << reserved << "u - ((shared_addr(lb_dynamic_smem) + " << offset << "u) & "
             << reserved - 1 << "u)) & " << reserved - 1 << "u)";
        os << ";\n";
        return success();
      })
      .Case<lb::CopyTileAsyncOp>([&](lb::CopyTileAsyncOp copy) {
        return emitActivationCopy(copy, copy.getX(), copy.getBuffer(), copy.getStage(),
                                  copy.getM0(), copy.getK0(), copy.getRows(), copy.getThreads(),
                                  /*laneOwned=*/false);
      })
      .Case<lb::CopyCodesAsyncOp>([&](lb::CopyCodesAsyncOp copy) -> LogicalResult {
        std::optional<ArrayRef<int64_t>> tile = copy.getTile();
        if (!tile)
          return copy.emitOpError("lb-to-cuda: no tile; run lb-propagate-layouts first");
        auto buffer = cast<MemRefType>(copy.getBuffer().getType());
        auto weights = cast<MemRefType>(copy.getWeights().getType());
        const int64_t bits = lb::getCodeBits(weights.getElementType());
        const int64_t groups = buffer.getDimSize(1) / (*tile)[0];
        const int64_t tilesPerGroup = buffer.getDimSize(2) / (*tile)[1];
        const int64_t stageBytes = groups * tilesPerGroup * (*tile)[0] * (*tile)[1] * bits / 8;
        line() << "{\n";
        ++depth;
        line() << "const u32 base = shared_addr(" << name(copy.getBuffer()) << ") + (u32)("
               << name(copy.getStage()) << ") * " << stageBytes << "u;\n";
        // Fewer copying threads than the block has: each group of `threads`
        // (a warp, for a per-warp ring) copies into its own stage.
        std::string thread = static_cast<int64_t>(copy.getThreads()) < blockThreads
                                 ? "(int)(threadIdx.x % " + std::to_string(copy.getThreads()) + ")"
                                 : "threadIdx.x";
        // Each plane (one, or two for 3-, 5- and 6-bit codes: its low plane
        // then its high plane, in global memory and in the stage alike, see
        // layout/WeightLayout.h). Tiles are k-fastest in memory, so each
        // group of tile N rows is one contiguous run of tilesPerGroup tiles.
        auto copyPlane = [&](int64_t planeBits, int64_t globalStart, int64_t stageStart) {
          const int64_t tileBytes = (*tile)[0] * (*tile)[1] * planeBits / 8;
          const int64_t chunksPerGroup = tilesPerGroup * tileBytes / 16;
          line() << "for (int c = " << thread << "; c < " << groups * chunksPerGroup << "; c += "
                 << copy.getThreads() << ") {\n";
          line() << "  const int group = c / " << chunksPerGroup << ", chunk = c % "
                 << chunksPerGroup << ";\n";
          line() << "  const unsigned char *source = " << name(copy.getWeights())
                 << (globalStart ? " + " + std::to_string(globalStart) + "LL" : "") << " + (("
                 << name(copy.getN0()) << " / " << (*tile)[0] << "LL + group) * "
                 << weights.getDimSize(1) / (*tile)[1] << "LL + " << name(copy.getK0()) << " / "
                 << (*tile)[1] << "LL) * " << tileBytes << "LL + chunk * 16;\n";
          line() << "  cp_async16(base + (u32)("
                 << (stageStart ? std::to_string(stageStart) + " + " : "") << "group * "
                 << tilesPerGroup * tileBytes << " + chunk * 16), source);\n";
          line() << "}\n";
        };
        const layout::CodePlanes planes = layout::codePlanes(static_cast<int>(bits));
        copyPlane(planes.lowBits, 0, 0);
        if (planes.highBits)
          copyPlane(planes.highBits, weights.getNumElements() * planes.lowBits / 8,
                    stageBytes * planes.lowBits / bits);
        --depth;
        line() << "}\n";
        return success();
      })
      .Case<lb::CopyActivationsAsyncOp>([&](lb::CopyActivationsAsyncOp copy) {
        return emitActivationCopy(copy, copy.getX(), copy.getBuffer(), copy.getStage(),
                                  copy.getM0(), copy.getK0(), copy.getRows(), 32,
                                  /*laneOwned=*/true);
      })
      .Case<lb::LoadStagedActivationsOp>([&](lb::LoadStagedActivationsOp load) {
        auto buffer = cast<MemRefType>(load.getBuffer().getType());
        int64_t rows = buffer.getDimSize(1), cols = buffer.getDimSize(2);
        line() << valueType(load.getValues().getType()) << " " << bind(load.getValues()) << ";\n";
        line() << "{\n";
        line() << "  const U32x4 w = *reinterpret_cast<const U32x4 *>(" << name(load.getBuffer())
               << " + ((" << name(load.getStage()) << ") * " << rows << "LL + "
               << name(load.getRow()) << ") * " << cols * 2 << "LL + (" << name(load.getK())
               << ") * 2);\n";
        line() << "  " << name(load.getValues()) << ".r[0] = w.r[0]; " << name(load.getValues())
               << ".r[1] = w.r[1]; " << name(load.getValues()) << ".r[2] = w.r[2]; "
               << name(load.getValues()) << ".r[3] = w.r[3];\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::AsyncCommitOp>([&](auto) {
        line() << "cp_async_commit();\n";
        return success();
      })
      .Case<lb::AsyncWaitOp>([&](lb::AsyncWaitOp wait) {
        line() << "cp_async_wait<" << wait.getPending() << ">();\n";
        return success();
      })
      .Case<lb::BarrierOp>([&](lb::BarrierOp barrier) {
        line() << (barrier.getWarp() ? "__syncwarp();\n" : "__syncthreads();\n");
        return success();
      })
      .Case<lb::LoadAFragmentOp>([&](lb::LoadAFragmentOp load) -> LogicalResult {
        auto shared = load.getBuffer().getDefiningOp<lb::SharedBufferOp>();
        lb::SwizzleAttr layout = shared ? shared.getLayoutAttr() : lb::SwizzleAttr();
        if (!layout)
          return load.emitOpError("lb-to-cuda: reads a stage of an lb.shared_buffer with a "
                                  "#lb.swizzle layout");
        auto buffer = cast<MemRefType>(load.getBuffer().getType());
        int64_t rows = buffer.getDimSize(1), cols = buffer.getDimSize(2);
        std::string var = bind(load.getFragment());
        // The verifier admits only the paired form: lane (g, t) reads chunk
        // k0 / 8 + t of rows g and g + 8, 16 bytes each (emitPairedFragment).
        line() << "u32 " << var << "[8];\n";
        line() << "{\n";
        line() << "  const int r = (int)(" << name(load.getRow0()) << ") + (threadIdx.x & 31) / 4;\n";
        line() << "  const int chunk = (int)(" << name(load.getK0()) << ") / 8 + (threadIdx.x & 3);\n";
        line() << "  const unsigned char *stage = " << name(load.getBuffer()) << " + ("
               << name(load.getStage()) << ") * " << rows * cols * 2 << "LL;\n";
        auto row = [&](const std::string &r) {
          return "*reinterpret_cast<const uint4 *>(stage + (" + r + ") * " +
                 std::to_string(cols * 2) + " + " + swizzledChunk(layout, r, "chunk") + " * 16)";
        };
        line() << "  const uint4 lo = " << row("r") << ", hi = " << row("r + 8") << ";\n";
        emitPairedFragment(var);
        line() << "}\n";
        return success();
      })
      .Case<lb::SlicePairsOp>([&](lb::SlicePairsOp slice) {
        auto type = cast<VectorType>(slice.getSlice().getType());
        bind(slice.getSlice());
        declareVector(slice.getSlice());
        for (int64_t i = 0; i < type.getNumElements() / 2; ++i)
          line() << registerOf(slice.getSlice(), i) << " = "
                 << registerOf(slice.getValues(), slice.getOffset() + i) << ";\n";
        return success();
      })
      .Case<lb::JoinPairsOp>([&](lb::JoinPairsOp join) {
        bind(join.getValues());
        declareVector(join.getValues());
        int64_t next = 0;
        for (Value part : join.getParts())
          for (int64_t i = 0; i < cast<VectorType>(part.getType()).getNumElements() / 2; ++i)
            line() << registerOf(join.getValues(), next++) << " = " << registerOf(part, i) << ";\n";
        return success();
      })
      .Case<lb::ScaleFragmentOp>([&](lb::ScaleFragmentOp scale) {
        auto type = cast<VectorType>(scale.getResult().getType());
        std::string suffix = pairSuffix(type.getElementType());
        bind(scale.getResult());
        if (scale.getWide()) {
          declareVector(scale.getResult());
          // Both halves to f32, one fmaf each, one rounding back.
          bool bf16 = type.getElementType().isBF16();
          for (int64_t i = 0; i < type.getNumElements() / 2; ++i) {
            std::string in = registerOf(scale.getFragment(), i), lo = fresh("w"), hi = fresh("w");
            if (bf16)
              line() << "const float " << lo << " = __uint_as_float(" << in << " << 16), " << hi
                     << " = __uint_as_float(" << in << " & 0xFFFF0000u);\n";
            else
              line() << "float " << lo << ", " << hi << "; f16x2_to_f32x2(" << in << ", " << lo
                     << ", " << hi << ");\n";
            std::string add = scale.getBias() ? ", " + name(scale.getBias()) : ", 0.f";
            line() << registerOf(scale.getResult(), i) << " = f32x2_to_" << suffix << "(fmaf("
                   << lo << ", " << name(scale.getScale()) << add << "), fmaf(" << hi << ", "
                   << name(scale.getScale()) << add << "));\n";
          }
          return success();
        }
        std::string splat = fresh("s");
        line() << "const u32 " << splat << " = f32x2_to_" << suffix << "("
               << name(scale.getScale()) << ", " << name(scale.getScale()) << ");\n";
        std::string bias;
        if (scale.getBias()) {
          bias = fresh("b");
          line() << "const u32 " << bias << " = f32x2_to_" << suffix << "("
                 << name(scale.getBias()) << ", " << name(scale.getBias()) << ");\n";
        }
        declareVector(scale.getResult());
        for (int64_t i = 0; i < type.getNumElements() / 2; ++i) {
          line() << registerOf(scale.getResult(), i) << " = ";
          if (bias.empty())
            os << "mul_" << suffix << "(" << registerOf(scale.getFragment(), i) << ", " << splat
               << ");\n";
          else
            os << "fma_" << suffix << "(" << registerOf(scale.getFragment(), i) << ", " << splat
               << ", " << bias << ");\n";
        }
        return success();
      })
      .Case<lb::MmaOp>([&](lb::MmaOp mma) {
        std::string var = bind(mma.getResult());
        line() << "FragC_f32 " << var << " = " << name(mma.getAcc()) << ";\n";
        line() << "mma_m16n8k16(" << var << ", " << name(mma.getA()) << ", " << name(mma.getB())
               << ");\n";
        return success();
      })
      .Case<lb::ScaleAccumulateOp>([&](lb::ScaleAccumulateOp scale) {
        std::string var = bind(scale.getResult());
        std::string acc = name(scale.getAcc()), partial = name(scale.getPartial());
        line() << "FragC_f32 " << var << ";\n";
        for (int i = 0; i < 4; ++i)
          line() << var << ".r[" << i << "] = fmaf(" << name(i < 2 ? scale.getLow() : scale.getHigh())
                 << ", " << partial << ".r[" << i << "], " << acc << ".r[" << i << "]);\n";
        return success();
      })
      .Case<lb::PackAFragmentOp>([&](lb::PackAFragmentOp pack) {
        std::string var = bind(pack.getFragment());
        std::string low = name(pack.getLow()), high = name(pack.getHigh());
        line() << valueType(pack.getFragment().getType()) << " " << var << ";\n";
        line() << var << ".r[0] = " << low << ".r[0]; " << var << ".r[1] = " << high << ".r[0]; "
               << var << ".r[2] = " << low << ".r[1]; " << var << ".r[3] = " << high
               << ".r[1];\n";
        return success();
      })
      .Case<lb::StoreAccumulatorOp>([&](lb::StoreAccumulatorOp store) -> LogicalResult {
        auto y = cast<MemRefType>(store.getY().getType());
        std::string suffix = pairSuffix(y.getElementType());
        if (store.getTransposed()) {
          // C of W·xᵀ: lane (g, t) holds columns n0 + g (c0, c1) and
          // n0 + g + 8 (c2, c3) of rows m0 + 2t and m0 + 2t + 1 of y.
          std::string acc = name(store.getAcc());
          line() << "{\n";
          line() << "  const long long row = " << name(store.getM0())
                 << " + 2 * (threadIdx.x & 3);\n";
          line() << "  const long long col = " << name(store.getN0())
                 << " + (threadIdx.x & 31) / 4;\n";
          // An f32 y (quantized activations) takes the sums as they are.
          bool wide = y.getElementType().isF32();
          for (int i = 0; i < 4; ++i) {
            std::string value = acc + ".r[" + std::to_string(i) + "]";
            line() << "  if (row + " << i % 2 << " < " << name(store.getRows()) << ") "
                   << name(store.getY()) << "[(row + " << i % 2 << ") * " << y.getDimSize(1)
                   << "LL + col + " << 8 * (i / 2) << "] = "
                   << (wide ? value : "(u16)f32x2_to_" + suffix + "(" + value + ", 0.f)")
                   << ";\n";
          }
          line() << "}\n";
          return success();
        }
        if (!y.getElementType().isF16() && !y.getElementType().isBF16())
          return store.emitOpError("lb-to-cuda: an untransposed accumulator is stored as f16 "
                                   "or bf16 pairs, not ")
                 << y.getElementType();
        // C fragment: lane (groupID g, thread-in-group t) holds rows g and
        // g + 8, columns 2 t and 2 t + 1: one packed pair per row.
        line() << "{\n";
        line() << "  const long long row = " << name(store.getM0()) << " + (threadIdx.x & 31) / 4;\n";
        line() << "  const long long col = " << name(store.getN0())
               << " + 2 * (threadIdx.x & 3);\n";
        line() << "  if (row < " << name(store.getRows()) << ") *reinterpret_cast<u32 *>("
               << name(store.getY()) << " + row * " << y.getDimSize(1) << "LL + col) = f32x2_to_"
               << suffix << "(" << name(store.getAcc()) << ".r[0], " << name(store.getAcc())
               << ".r[1]);\n";
        line() << "  if (row + 8 < " << name(store.getRows()) << ") *reinterpret_cast<u32 *>("
               << name(store.getY()) << " + (row + 8) * " << y.getDimSize(1)
               << "LL + col) = f32x2_to_" << suffix << "(" << name(store.getAcc()) << ".r[2], "
               << name(store.getAcc()) << ".r[3]);\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::StorePartialOp>([&](lb::StorePartialOp store) {
        auto buffer = cast<MemRefType>(store.getBuffer().getType());
        line() << "reinterpret_cast<float *>(" << name(store.getBuffer()) << ")[(("
               << name(store.getWarp()) << ") * " << buffer.getDimSize(1) << " + "
               << name(store.getSlot()) << ") * 8 + ((threadIdx.x & 31) >> 2)] = "
               << name(store.getValue()) << ";\n";
        return success();
      })
      .Case<lb::SumPartialsOp>([&](lb::SumPartialsOp sum) {
        auto buffer = cast<MemRefType>(sum.getBuffer().getType());
        std::string var = bind(sum.getResult());
        line() << "float " << var << " = 0.f;\n";
        line() << "#pragma unroll\n";
        line() << "for (int w = 0; w < " << buffer.getDimSize(0) << "; ++w) " << var
               << " += reinterpret_cast<const float *>(" << name(sum.getBuffer()) << ")[(w * "
               << buffer.getDimSize(1) << " + " << name(sum.getSlot())
               << ") * 8 + ((threadIdx.x & 31) >> 2)];\n";
        return success();
      })
      .Case<lb::ClusterBarrierOp>([&](auto) {
        line() << "cluster_barrier();\n";
        return success();
      })
      .Case<lb::SumClusterPartialsOp>([&](lb::SumClusterPartialsOp sum) {
        // Row 0 of the slot, where each block keeps its total: the calling
        // lane's group's float ([warps, slots, 8]) or its fragment's float4
        // ([warps, slots, 128]), added over ranks 0, 1, ... in order.
        std::string var = bind(sum.getResult()), slot = name(sum.getSlot());
        std::string buf = name(sum.getBuffer());
        int64_t blocks = sum.getBlocks();
        if (isa<VectorType>(sum.getResult().getType())) {
          line() << "FragC_f32 " << var << " = zero_frag_c_f32();\n";
          line() << "{\n";
          line() << "  const float4 *mine = reinterpret_cast<const float4 *>(" << buf << ") + ("
                 << slot << ") * 32 + (threadIdx.x & 31);\n";
          line() << "  #pragma unroll\n";
          line() << "  for (u32 rank = 0; rank < " << blocks << "; ++rank) {\n";
          line() << "    const float4 part = cluster_load_f32x4(mine, rank);\n";
          line() << "    " << var << ".r[0] += part.x; " << var << ".r[1] += part.y; " << var
                 << ".r[2] += part.z; " << var << ".r[3] += part.w;\n";
          line() << "  }\n";
          line() << "}\n";
          return success();
        }
        line() << "float " << var << " = 0.f;\n";
        line() << "{\n";
        line() << "  const float *mine = reinterpret_cast<const float *>(" << buf << ") + ("
               << slot << ") * 8 + ((threadIdx.x & 31) >> 2);\n";
        line() << "  #pragma unroll\n";
        line() << "  for (u32 rank = 0; rank < " << blocks << "; ++rank) " << var
               << " += cluster_load_f32(mine, rank);\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::StorePartialFragmentOp>([&](lb::StorePartialFragmentOp store) {
        auto buffer = cast<MemRefType>(store.getBuffer().getType());
        // One float4 per lane: a warp's 32 lanes write 512 contiguous bytes.
        line() << "reinterpret_cast<float4 *>(" << name(store.getBuffer()) << ")[(("
               << name(store.getWarp()) << ") * " << buffer.getDimSize(1) << " + "
               << name(store.getSlot()) << ") * 32 + (threadIdx.x & 31)] = make_float4("
               << name(store.getAcc()) << ".r[0], " << name(store.getAcc()) << ".r[1], "
               << name(store.getAcc()) << ".r[2], " << name(store.getAcc()) << ".r[3]);\n";
        return success();
      })
      .Case<lb::SumPartialFragmentsOp>([&](lb::SumPartialFragmentsOp sum) {
        auto buffer = cast<MemRefType>(sum.getBuffer().getType());
        std::string var = bind(sum.getResult());
        line() << "FragC_f32 " << var << " = zero_frag_c_f32();\n";
        line() << "#pragma unroll\n";
        line() << "for (int w = 0; w < " << buffer.getDimSize(0) << "; ++w) {\n";
        line() << "  const float4 part = reinterpret_cast<const float4 *>("
               << name(sum.getBuffer()) << ")[(w * " << buffer.getDimSize(1) << " + "
               << name(sum.getSlot()) << ") * 32 + (threadIdx.x & 31)];\n";
        line() << "  " << var << ".r[0] += part.x; " << var << ".r[1] += part.y; " << var
               << ".r[2] += part.z; " << var << ".r[3] += part.w;\n";
        line() << "}\n";
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

} // namespace lowbit::codegen
