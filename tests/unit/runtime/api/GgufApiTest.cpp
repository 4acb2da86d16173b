// The lowbit_gguf_* calls: a host app reads GGUF layers into lowbit_matmul's
// buffers without the compiler. Files come from the project's writer
// (tests/unit/core/checkpoint/GgufTestFile.h); the reference is llama.cpp's
// f32 dequantization (formats::dequantizeGgufF32), which the buffers must
// reproduce bit for bit.
#include "core/checkpoint/KernelWeights.h"
#include "core/formats/Gguf.h"
#include "lowbit/lowbit.h"
#include "runtime/api/Problem.h"
#include "tests/unit/core/checkpoint/GgufTestFile.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include <unistd.h>

namespace lowbit::api {
namespace {

namespace fs = std::filesystem;
using lowbit::testing::GgufTensorSpec;
using lowbit::testing::randomGgufBlocks;

class GgufApi : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lowbit-gguf-api-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string &name) const { return (dir_ / name).string(); }

  // Q4_K and Q6_K on 64 rows of K = 256, Q4_0 on 64 x 64, a Q4_1 matrix
  // (which the formats library does not decode) and an f32 vector.
  std::vector<GgufTensorSpec> model() {
    std::mt19937 rng(11);
    return {
        {"blk.0.ffn_up.weight", {256, 64}, 12, randomGgufBlocks(64, 144, {0, 2}, rng)},
        {"blk.0.ffn_down.weight", {256, 64}, 14, randomGgufBlocks(64, 210, {208}, rng)},
        {"blk.0.attn_q.weight", {64, 64}, 2, randomGgufBlocks(128, 18, {0}, rng)},
        {"blk.0.attn_k.weight", {64, 64}, 3, randomGgufBlocks(128, 20, {0, 2}, rng)},
        {"output_norm.weight", {64}, 0, std::vector<uint8_t>(256, 0)},
    };
  }

  fs::path dir_;
};

struct FileCloser {
  void operator()(lowbit_gguf *f) const { lowbit_gguf_close(f); }
};
struct LayerDestroyer {
  void operator()(lowbit_gguf_layer *l) const { lowbit_gguf_layer_destroy(l); }
};
using File = std::unique_ptr<lowbit_gguf, FileCloser>;
using Layer = std::unique_ptr<lowbit_gguf_layer, LayerDestroyer>;

File open(const std::string &path) {
  lowbit_gguf *file = nullptr;
  lowbit_status s = lowbit_gguf_open(path.c_str(), &file);
  EXPECT_EQ(s, LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  return File(file);
}

TEST_F(GgufApi, ListsEveryTensorAndSaysWhichItReads) {
  lowbit::testing::writeGguf(path("model.gguf"), model());
  File file = open(path("model.gguf"));
  ASSERT_TRUE(file);
  size_t count = 0;
  ASSERT_EQ(lowbit_gguf_tensor_count(file.get(), &count), LOWBIT_STATUS_SUCCESS);
  ASSERT_EQ(count, 5u);
  struct Want {
    const char *name, *type;
    int64_t n, k;
    int quantized, readable;
    const char *reason;
  };
  const Want want[] = {
      {"blk.0.ffn_up.weight", "q4_K", 64, 256, 1, 1, ""},
      {"blk.0.ffn_down.weight", "q6_K", 64, 256, 1, 1, ""},
      {"blk.0.attn_q.weight", "q4_0", 64, 64, 1, 1, ""},
      {"blk.0.attn_k.weight", "q4_1", 64, 64, 1, 0, "ggml type q4_1"},
      {"output_norm.weight", "f32", 1, 64, 0, 0, "not a quantized layer"},
  };
  for (size_t i = 0; i < count; ++i) {
    lowbit_gguf_tensor t;
    std::memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    ASSERT_EQ(lowbit_gguf_tensor_info(file.get(), i, &t), LOWBIT_STATUS_SUCCESS);
    EXPECT_STREQ(t.name, want[i].name);
    EXPECT_STREQ(t.ggml_type, want[i].type);
    EXPECT_EQ(t.n, want[i].n) << t.name;
    EXPECT_EQ(t.k, want[i].k) << t.name;
    EXPECT_EQ(t.quantized, want[i].quantized) << t.name;
    EXPECT_EQ(t.readable, want[i].readable) << t.name;
    EXPECT_NE(std::string(t.reason).find(want[i].reason), std::string::npos) << t.reason;
    size_t found = 99;
    ASSERT_EQ(lowbit_gguf_find_tensor(file.get(), want[i].name, &found), LOWBIT_STATUS_SUCCESS);
    EXPECT_EQ(found, i);
  }
  size_t found = 0;
  EXPECT_EQ(lowbit_gguf_find_tensor(file.get(), "nope", &found), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lowbit_last_error()).find("'nope'"), std::string::npos);
  lowbit_gguf_tensor t{};
  t.struct_size = sizeof t;
  EXPECT_EQ(lowbit_gguf_tensor_info(file.get(), 5, &t), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lowbit_last_error()).find("past the file's 5 tensors"), std::string::npos);
  t.struct_size = 0;
  EXPECT_EQ(lowbit_gguf_tensor_info(file.get(), 0, &t), LOWBIT_STATUS_INVALID_ARGUMENT);
}

// Every weight the buffers describe is llama.cpp's, and the k-quants keep
// their two-level scales (byte codes and f16 steps), not f16 scales.
TEST_F(GgufApi, LayersAreTheFilesWeightsExactly) {
  const std::vector<GgufTensorSpec> tensors = model();
  lowbit::testing::writeGguf(path("model.gguf"), tensors);
  File file = open(path("model.gguf"));
  ASSERT_TRUE(file);
  const std::pair<size_t, formats::GgufType> layers[] = {
      {0, formats::GgufType::Q4_K}, {1, formats::GgufType::Q6_K}, {2, formats::GgufType::Q4_0}};
  for (auto [index, type] : layers) {
    for (lowbit_dtype activation : {LOWBIT_DTYPE_F16, LOWBIT_DTYPE_BF16}) {
      SCOPED_TRACE(tensors[index].name);
      lowbit_gguf_layer *raw = nullptr;
      ASSERT_EQ(lowbit_gguf_load_layer(file.get(), index, activation, &raw), LOWBIT_STATUS_SUCCESS)
          << lowbit_last_error();
      Layer layer(raw);
      lowbit_gguf_layer_data data;
      std::memset(&data, 0, sizeof data);
      data.struct_size = sizeof data;
      ASSERT_EQ(lowbit_gguf_layer_data_get(layer.get(), &data), LOWBIT_STATUS_SUCCESS);
      EXPECT_EQ(data.problem.activation, activation);
      Result<core::Problem> problem = problemFromApi(data.problem);
      ASSERT_TRUE(problem.ok()) << problem.error().message;
      ASSERT_EQ(data.code_count, size_t(problem->n * problem->k));
      EXPECT_EQ(int64_t(data.scale_bytes), core::scaleBytes(*problem));
      if (type == formats::GgufType::Q4_K) {
        EXPECT_EQ(data.problem.super_block, 256);
        EXPECT_EQ(data.problem.scale, LOWBIT_DTYPE_U8);
        EXPECT_EQ(data.problem.zero, LOWBIT_ZERO_SUB_VALUE);
        EXPECT_EQ(int64_t(data.zero_bytes), core::zeroBytes(*problem));
        EXPECT_NE(std::string(data.notes).find("kept as uint8 codes"), std::string::npos)
            << data.notes;
      }
      checkpoint::KernelWeights w;
      w.problem = *problem;
      w.codes.assign(data.codes, data.codes + data.code_count);
      const auto *scales = static_cast<const uint8_t *>(data.scales);
      w.scales.assign(scales, scales + data.scale_bytes);
      if (data.zeros) {
        const auto *zeros = static_cast<const uint8_t *>(data.zeros);
        w.zeros.assign(zeros, zeros + data.zero_bytes);
      }
      Expected<std::vector<double>> ours = checkpoint::dequantizeKernelWeights(w);
      ASSERT_TRUE(ours) << ours.error();
      const GgufTensorSpec &t = tensors[index];
      const int64_t count = int64_t(t.dims[0] * t.dims[1]);
      Expected<std::vector<float>> reference =
          formats::dequantizeGgufF32(type, t.data.data(), t.data.size(), count);
      ASSERT_TRUE(reference) << reference.error();
      ASSERT_EQ(ours->size(), size_t(count));
      for (int64_t e = 0; e < count; ++e)
        ASSERT_EQ(float((*ours)[size_t(e)]), (*reference)[size_t(e)]) << e;
    }
  }
}

TEST_F(GgufApi, WhatItCannotReadIsAnErrorThatSaysWhy) {
  std::vector<GgufTensorSpec> tensors = model();
  // A Q4_0 block whose d is NaN: its weights would all be NaN.
  tensors[2].data[1] = 0x7E;
  lowbit::testing::writeGguf(path("model.gguf"), tensors);
  File file = open(path("model.gguf"));
  ASSERT_TRUE(file);
  lowbit_gguf_layer *layer = reinterpret_cast<lowbit_gguf_layer *>(1);
  EXPECT_EQ(lowbit_gguf_load_layer(file.get(), 2, LOWBIT_DTYPE_F16, &layer),
            LOWBIT_STATUS_FILE_ERROR);
  EXPECT_EQ(layer, nullptr);
  EXPECT_NE(std::string(lowbit_last_error()).find("blk.0.attn_q.weight"), std::string::npos)
      << lowbit_last_error();
  EXPECT_EQ(lowbit_gguf_load_layer(file.get(), 3, LOWBIT_DTYPE_F16, &layer),
            LOWBIT_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(lowbit_last_error()).find("q4_1"), std::string::npos);
  EXPECT_EQ(lowbit_gguf_load_layer(file.get(), 4, LOWBIT_DTYPE_F16, &layer),
            LOWBIT_STATUS_UNSUPPORTED);
  EXPECT_EQ(lowbit_gguf_load_layer(file.get(), 0, LOWBIT_DTYPE_S8, &layer),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lowbit_last_error()).find("LOWBIT_DTYPE_F16 or LOWBIT_DTYPE_BF16"),
            std::string::npos);
  EXPECT_EQ(lowbit_gguf_load_layer(file.get(), 0, LOWBIT_DTYPE_F16, nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(lowbit_gguf_load_layer(nullptr, 0, LOWBIT_DTYPE_F16, &layer),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(lowbit_gguf_layer_data_get(nullptr, nullptr), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(lowbit_gguf_layer_destroy(nullptr), LOWBIT_STATUS_SUCCESS);
}

// The file is untrusted: every cut of it is an error naming the file, never
// a crash or a read past its end.
TEST_F(GgufApi, MalformedFilesAreFileErrors) {
  lowbit::testing::writeGguf(path("model.gguf"), model());
  const uintmax_t size = fs::file_size(path("model.gguf"));
  for (uintmax_t cut :
       {uintmax_t(0), uintmax_t(3), uintmax_t(20), uintmax_t(64), size / 2, size - 1}) {
    fs::copy_file(path("model.gguf"), path("cut.gguf"), fs::copy_options::overwrite_existing);
    fs::resize_file(path("cut.gguf"), cut);
    lowbit_gguf *file = reinterpret_cast<lowbit_gguf *>(1);
    EXPECT_EQ(lowbit_gguf_open(path("cut.gguf").c_str(), &file), LOWBIT_STATUS_FILE_ERROR) << cut;
    EXPECT_EQ(file, nullptr);
    EXPECT_NE(std::string(lowbit_last_error()).find("cut.gguf"), std::string::npos)
        << lowbit_last_error();
  }
  lowbit_gguf *file = nullptr;
  EXPECT_EQ(lowbit_gguf_open(path("missing.gguf").c_str(), &file), LOWBIT_STATUS_FILE_ERROR);
  EXPECT_NE(std::string(lowbit_last_error()).find("missing.gguf"), std::string::npos);
  EXPECT_EQ(lowbit_gguf_open(nullptr, &file), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(lowbit_gguf_open(path("model.gguf").c_str(), nullptr), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(lowbit_gguf_close(nullptr), LOWBIT_STATUS_SUCCESS);
  size_t count = 0;
  EXPECT_EQ(lowbit_gguf_tensor_count(nullptr, &count), LOWBIT_STATUS_INVALID_ARGUMENT);
}

} // namespace
} // namespace lowbit::api
