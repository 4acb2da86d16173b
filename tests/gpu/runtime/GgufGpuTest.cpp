// A GGUF layer served through the C API alone, as a host app without the
// compiler would: lowbit_gguf_open, lowbit_gguf_load_layer, then the plan,
// lowbit_pack_weights, the scales and mins copied byte for byte, and
// lowbit_matmul; y against llama.cpp's own dequantization of the file's
// blocks (formats::dequantizeGgufF32) in f64.
#include "core/formats/Gguf.h"
#include "tests/gpu/runtime/RuntimeGpuFixture.h"
#include "tests/unit/core/checkpoint/GgufTestFile.h"

namespace lowbit::testing {
namespace {

TEST_F(RuntimeGpu, GgufQ4KLayerThroughTheCApi) {
  ASSERT_NE(context, nullptr);
  // runtime-tests.toml's runtime.f16.q4_k: 512 rows of K = 2048.
  constexpr int64_t n = 512, k = 2048;
  constexpr int kQ4K = 12, kBlockBytes = 144, kBlockWeights = 256;
  std::mt19937 rng(20261207);
  const std::vector<uint8_t> blocks =
      randomGgufBlocks(int(n * k / kBlockWeights), kBlockBytes, {0, 2}, rng);
  const std::string path = std::filesystem::temp_directory_path() /
                           ("lowbit-gguf-gpu-" + std::to_string(::getpid()) + ".gguf");
  writeGguf(path, {{"blk.0.ffn_up.weight", {uint64_t(k), uint64_t(n)}, kQ4K, blocks}});
  lowbit_gguf *file = nullptr;
  LOWBIT_OK(lowbit_gguf_open(path.c_str(), &file));
  std::unique_ptr<lowbit_gguf, lowbit_status (*)(lowbit_gguf *)> ownedFile(file, lowbit_gguf_close);
  std::filesystem::remove(path);
  size_t index = 0;
  LOWBIT_OK(lowbit_gguf_find_tensor(file, "blk.0.ffn_up.weight", &index));
  lowbit_gguf_layer *layer = nullptr;
  LOWBIT_OK(lowbit_gguf_load_layer(file, index, LOWBIT_DTYPE_F16, &layer));
  std::unique_ptr<lowbit_gguf_layer, lowbit_status (*)(lowbit_gguf_layer *)> ownedLayer(
      layer, lowbit_gguf_layer_destroy);
  lowbit_gguf_layer_data data;
  std::memset(&data, 0, sizeof data);
  data.struct_size = sizeof data;
  LOWBIT_OK(lowbit_gguf_layer_data_get(layer, &data));
  ASSERT_EQ(data.problem.super_block, kBlockWeights);

  lowbit_plan *plan = nullptr;
  LOWBIT_OK(lowbit_plan_create(context, &data.problem, &plan));
  std::unique_ptr<lowbit_plan, lowbit_status (*)(lowbit_plan *)> ownedPlan(plan,
                                                                           lowbit_plan_destroy);
  size_t weightBytes = 0, scaleBytes = 0, zeroBytes = 0;
  LOWBIT_OK(lowbit_plan_packed_sizes(plan, &weightBytes, &scaleBytes, &zeroBytes, nullptr));
  ASSERT_EQ(scaleBytes, data.scale_bytes);
  ASSERT_EQ(zeroBytes, data.zero_bytes);
  DeviceBuffer packed(*api, weightBytes), scales(*api, scaleBytes), zeros(*api, zeroBytes);
  ASSERT_TRUE(packed.ok() && scales.ok() && zeros.ok());
  void *packedPtr = reinterpret_cast<void *>(packed.get());
  LOWBIT_OK(
      lowbit_pack_weights(plan, data.codes, packedPtr, weightBytes, LOWBIT_MEMORY_DEVICE, nullptr));
  LOWBIT_CU_ASSERT(api, scales.upload(data.scales, scaleBytes));
  LOWBIT_CU_ASSERT(api, zeros.upload(data.zeros, zeroBytes));
  lowbit_weights w{sizeof(w), packedPtr, weightBytes, 0};
  LOWBIT_OK(lowbit_plan_layout_id(plan, &w.layout_id));

  Expected<std::vector<float>> reference =
      formats::dequantizeGgufF32(formats::GgufType::Q4_K, blocks.data(), blocks.size(), n * k);
  ASSERT_TRUE(reference.ok()) << reference.error();
  for (int64_t m : {1, 7, 64, 300}) {
    SCOPED_TRACE("M = " + std::to_string(m));
    const F16Activations xs = uniformF16(size_t(m * k), 1.0, rng);
    const std::vector<uint16_t> &xBits = xs.bits;
    DeviceBuffer x(*api, xBits.size() * 2), y(*api, size_t(m * n * 2));
    ASSERT_TRUE(x.ok() && y.ok());
    LOWBIT_CU_ASSERT(api, x.upload(xBits.data(), xBits.size() * 2));
    LOWBIT_CU_ASSERT(api, y.poison(0xFF));
    LOWBIT_OK(lowbit_matmul(plan, m, reinterpret_cast<void *>(x.get()), &w,
                            reinterpret_cast<void *>(scales.get()),
                            reinterpret_cast<void *>(zeros.get()),
                            reinterpret_cast<void *>(y.get()), nullptr, 0, nullptr));
    LOWBIT_CU_ASSERT(api, api->cuCtxSynchronize());
    std::vector<uint16_t> out(size_t(m * n));
    LOWBIT_CU_ASSERT(api, y.download(out.data(), out.size() * 2));
    const double error = f16RelativeError(out, xs.values, *reference, m, n, k);
    EXPECT_LT(error, measure::defaultTolerance(core::Activation::F16));
    lowbit_choice choice;
    std::memset(&choice, 0, sizeof(choice));
    choice.struct_size = sizeof(choice);
    LOWBIT_OK(lowbit_plan_explain(plan, m, &choice));
    std::printf("  GGUF q4_K M = %-4lld %-50s relative error %.3g\n", static_cast<long long>(m),
                choice.kernel_name, error);
  }
}

} // namespace
} // namespace lowbit::testing
