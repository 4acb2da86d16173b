// lowbit import on checkpoints written here: GPTQ (v1, v2, act-order), AWQ
// and GGUF. What it writes is read back the way a user would (the weights
// file's tensors and its metadata's signatures, the spec through the spec
// parser) and every weight is compared with the formats library's reference
// dequantization of the checkpoint.
#include "compiler/import/CheckpointImport.h"

#include "compiler/spec/KernelSetSpec.h"
#include "core/checkpoint/KernelWeights.h"
#include "core/checkpoint/MappedFile.h"
#include "core/checkpoint/Safetensors.h"
#include "core/formats/Gguf.h"
#include "core/formats/Gptq.h"
#include "tests/unit/core/checkpoint/GgufTestFile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

namespace lowbit::import {
namespace {

namespace fs = std::filesystem;
using checkpoint::SafetensorsDtype;

class CheckpointImport : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lowbit-import-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "in");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string in(const std::string &name) const { return (dir_ / "in" / name).string(); }
  std::string out() const { return (dir_ / "out").string(); }

  fs::path dir_;
};

template <typename T>
void add(checkpoint::SafetensorsWriter &writer, const std::string &name, SafetensorsDtype dtype,
         std::vector<int64_t> shape, const std::vector<T> &values) {
  ASSERT_TRUE(writer.add(name, dtype, shape, values.data(), values.size() * sizeof(T)));
}

std::vector<int32_t> randomWords(size_t count, std::mt19937 &rng) {
  std::vector<int32_t> words(count);
  for (int32_t &w : words)
    w = int32_t(rng());
  return words;
}

// Positive f16 scales between 2^-7 and 2^-3.
std::vector<uint16_t> randomScales(size_t count, std::mt19937 &rng) {
  std::vector<uint16_t> scales(count);
  for (uint16_t &s : scales)
    s = uint16_t(0x2000 + rng() % 0x1000);
  return scales;
}

formats::GptqCheckpoint randomGptq(int64_t n, int64_t k, int group, bool actOrder, uint32_t seed) {
  std::mt19937 rng(seed);
  formats::GptqCheckpoint c;
  c.bits = 4;
  c.inFeatures = k;
  c.outFeatures = n;
  c.groupSize = group;
  c.qweight = randomWords(size_t(k / 8 * n), rng);
  c.qzeros = randomWords(size_t(k / group * n / 8), rng);
  c.scales = randomScales(size_t(k / group * n), rng);
  if (actOrder) {
    std::vector<int32_t> order(static_cast<size_t>(k));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    c.gIdx.resize(size_t(k));
    for (int64_t i = 0; i < k; ++i)
      c.gIdx[size_t(order[size_t(i)])] = int32_t(i / group);
  }
  return c;
}

void addGptq(checkpoint::SafetensorsWriter &writer, const std::string &prefix,
             const formats::GptqCheckpoint &c) {
  const int64_t n = c.outFeatures, k = c.inFeatures, groups = k / c.groupSize;
  add(writer, prefix + ".qweight", SafetensorsDtype::I32, {k / 8, n}, c.qweight);
  add(writer, prefix + ".qzeros", SafetensorsDtype::I32, {groups, n / 8}, c.qzeros);
  add(writer, prefix + ".scales", SafetensorsDtype::F16, {groups, n}, c.scales);
  std::vector<int32_t> gIdx = c.gIdx;
  if (gIdx.empty())
    for (int64_t i = 0; i < k; ++i)
      gIdx.push_back(int32_t(i / c.groupSize)); // AutoGPTQ writes the trivial one too
  add(writer, prefix + ".g_idx", SafetensorsDtype::I32, {k}, gIdx);
}

// One imported layer read back from weights.safetensors as a user would:
// the problem from the metadata's signature, the buffers from its tensors.
checkpoint::KernelWeights readLayer(const checkpoint::SafetensorsFile &file,
                                    const std::string &layer) {
  checkpoint::KernelWeights w;
  const std::string *signature = file.metadataValue(layer);
  EXPECT_NE(signature, nullptr) << layer;
  if (!signature)
    return w;
  Expected<core::Problem> problem = core::parseSignature(*signature);
  EXPECT_TRUE(problem) << problem.error();
  w.problem = *problem;
  auto bytes = [&](const std::string &name) {
    const checkpoint::SafetensorsTensor *t = file.find(layer + name);
    return t ? std::vector<uint8_t>(t->data, t->data + t->bytes) : std::vector<uint8_t>{};
  };
  w.codes = bytes(".codes");
  w.scales = bytes(".scales");
  w.zeros = w.problem.scheme.zeroCodes ? bytes(".zero_codes") : bytes(".zeros");
  if (const checkpoint::SafetensorsTensor *perm = file.find(layer + ".permutation")) {
    w.permutation.resize(size_t(perm->elements));
    std::memcpy(w.permutation.data(), perm->data, perm->bytes);
  }
  return w;
}

// Every weight of the layer equals the reference (W[N][K] in the
// checkpoint's column order), through the layer's permutation.
void expectLayerEquals(const checkpoint::KernelWeights &w, const std::vector<double> &reference) {
  Expected<std::vector<double>> ours = checkpoint::dequantizeKernelWeights(w);
  ASSERT_TRUE(ours) << ours.error();
  ASSERT_EQ(ours->size(), reference.size());
  const int64_t k = w.problem.k;
  for (int64_t n = 0; n < w.problem.n; ++n)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t column = w.permutation.empty() ? j : w.permutation[size_t(j)];
      ASSERT_EQ((*ours)[size_t(n * k + j)], reference[size_t(n * k + column)])
          << "row " << n << ", column " << j;
    }
}

struct Output {
  checkpoint::MappedFile mapped;
  checkpoint::SafetensorsFile weights;
  spec::KernelSetSpec spec;
  std::string report;
};

Output readOutput(const std::string &dir) {
  Expected<checkpoint::MappedFile> mapped =
      checkpoint::MappedFile::open(dir + "/weights.safetensors");
  EXPECT_TRUE(mapped) << mapped.error();
  Expected<checkpoint::SafetensorsFile> weights =
      checkpoint::parseSafetensors(mapped->data(), mapped->size(), "weights");
  EXPECT_TRUE(weights) << weights.error();
  Expected<spec::KernelSetSpec> spec = spec::loadKernelSetSpec(dir + "/spec.toml");
  EXPECT_TRUE(spec) << spec.error();
  std::ifstream report(dir + "/import.txt");
  return {std::move(mapped).value(), *weights, *spec,
          std::string(std::istreambuf_iterator<char>(report), {})};
}

TEST_F(CheckpointImport, GptqLayersKeepEveryWeightWithActOrderAndBias) {
  const formats::GptqCheckpoint q = randomGptq(64, 256, 128, false, 1);
  const formats::GptqCheckpoint k = randomGptq(64, 256, 128, false, 2);
  const formats::GptqCheckpoint down = randomGptq(32, 256, 64, true, 3);
  {
    Expected<checkpoint::SafetensorsWriter> writer =
        checkpoint::SafetensorsWriter::create(in("model.safetensors"));
    ASSERT_TRUE(writer);
    addGptq(*writer, "layers.0.q_proj", q);
    addGptq(*writer, "layers.0.k_proj", k);
    addGptq(*writer, "layers.0.down_proj", down);
    add(*writer, "layers.0.q_proj.bias", SafetensorsDtype::F16, {64},
        std::vector<uint16_t>(64, 0x3C00));
    add(*writer, "embed.weight", SafetensorsDtype::F16, {16, 8}, std::vector<uint16_t>(128, 0));
    ASSERT_TRUE(writer->finish());
  }
  ImportOptions options;
  options.outputDir = out();
  options.archs = {"sm_90a"};
  Expected<ImportReport> report = importCheckpoints({in("model.safetensors")}, options);
  ASSERT_TRUE(report) << report.error();
  EXPECT_EQ(report->format, CheckpointFormat::Gptq);
  ASSERT_EQ(report->notes.size(), 1u); // the v1 convention, assumed
  EXPECT_NE(report->notes[0].find("v1"), std::string::npos);
  EXPECT_EQ(report->layers.size(), 3u);
  // q and k share a form; down_proj (other N, group and act-order) is its own.
  ASSERT_EQ(report->problems.size(), 2u);
  ASSERT_EQ(report->leftOut.size(), 1u);
  EXPECT_EQ(report->leftOut[0].tensor, "embed.weight");
  EXPECT_FALSE(report->leftOut[0].quantized);

  Output output = readOutput(out());
  EXPECT_EQ(*output.weights.metadataValue("lowbit.format"), "lowbit.weights.v1");
  ASSERT_EQ(output.spec.problems.size(), 2u);
  EXPECT_EQ(output.spec.archs, std::vector<std::string>{"sm_90a"});
  const std::pair<const char *, const formats::GptqCheckpoint *> layers[] = {
      {"layers.0.q_proj", &q}, {"layers.0.k_proj", &k}, {"layers.0.down_proj", &down}};
  for (const auto &[name, checkpoint] : layers) {
    SCOPED_TRACE(name);
    checkpoint::KernelWeights w = readLayer(output.weights, name);
    expectLayerEquals(w, *formats::dequantizeGptq(*checkpoint));
    EXPECT_EQ(w.permutation.empty(), checkpoint->gIdx.empty());
    EXPECT_TRUE(std::any_of(output.spec.problems.begin(), output.spec.problems.end(),
                            [&](const core::Problem &p) { return p.sameAs(w.problem); }));
    EXPECT_NE(output.report.find(name), std::string::npos);
  }
  const checkpoint::SafetensorsTensor *bias = output.weights.find("layers.0.q_proj.bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->shape, std::vector<int64_t>{64});
  EXPECT_EQ(output.weights.find("embed.weight"), nullptr);
}

TEST_F(CheckpointImport, GptqV2FromTheConfigStoresZerosAsTheyAre) {
  const formats::GptqCheckpoint v1 = randomGptq(64, 128, 32, false, 4);
  formats::GptqCheckpoint v2 = v1;
  v2.zeroPointPlusOne = false;
  {
    Expected<checkpoint::SafetensorsWriter> writer =
        checkpoint::SafetensorsWriter::create(in("model.safetensors"));
    addGptq(*writer, "proj", v2);
    ASSERT_TRUE(writer->finish());
    std::ofstream(in("quantize_config.json"))
        << R"({"bits": 4, "group_size": 32, "checkpoint_format": "gptq_v2"})";
  }
  ImportOptions options;
  options.outputDir = out();
  Expected<ImportReport> report = importCheckpoints({in("model.safetensors")}, options);
  ASSERT_TRUE(report) << report.error();
  EXPECT_EQ(report->format, CheckpointFormat::GptqV2);
  EXPECT_TRUE(report->notes.empty());
  Output output = readOutput(out());
  checkpoint::KernelWeights w = readLayer(output.weights, "proj");
  expectLayerEquals(w, *formats::dequantizeGptq(v2));
  // v2's zeros are uint4 codes as stored: no widening.
  EXPECT_EQ(*w.problem.scheme.zeroCodes, formats::DataFormat::unsignedInt(4));
}

// A random 256 x 64 AWQ layer (group 128) as "mlp.up" in one safetensors
// file.
formats::AwqCheckpoint awqLayer(unsigned seed) {
  std::mt19937 rng(seed);
  formats::AwqCheckpoint c;
  c.inFeatures = 256;
  c.outFeatures = 64;
  c.groupSize = 128;
  c.qweight = randomWords(256 * 8, rng);
  c.qzeros = randomWords(2 * 8, rng);
  c.scales = randomScales(2 * 64, rng);
  return c;
}

bool writeAwqLayer(const formats::AwqCheckpoint &c, const std::string &path) {
  Expected<checkpoint::SafetensorsWriter> writer = checkpoint::SafetensorsWriter::create(path);
  if (!writer)
    return false;
  add(*writer, "mlp.up.qweight", SafetensorsDtype::I32, {256, 8}, c.qweight);
  add(*writer, "mlp.up.qzeros", SafetensorsDtype::I32, {2, 8}, c.qzeros);
  add(*writer, "mlp.up.scales", SafetensorsDtype::F16, {2, 64}, c.scales);
  return bool(writer->finish());
}

TEST_F(CheckpointImport, AwqLayersKeepEveryWeight) {
  formats::AwqCheckpoint c = awqLayer(5);
  ASSERT_TRUE(writeAwqLayer(c, in("awq.safetensors")));
  ImportOptions options;
  options.outputDir = out();
  options.activation = core::Activation::BF16;
  Expected<ImportReport> report = importCheckpoints({in("awq.safetensors")}, options);
  ASSERT_TRUE(report) << report.error();
  EXPECT_EQ(report->format, CheckpointFormat::Awq);
  Output output = readOutput(out());
  checkpoint::KernelWeights w = readLayer(output.weights, "mlp.up");
  EXPECT_EQ(w.problem.activation, core::Activation::BF16);
  expectLayerEquals(w, *formats::dequantizeAwq(c));
}

// W4A8 from an AWQ checkpoint: the same weights, for s8 x with per-token
// scales and f16 y.
TEST_F(CheckpointImport, LayersImportForQuantizedActivations) {
  formats::AwqCheckpoint c = awqLayer(5);
  ASSERT_TRUE(writeAwqLayer(c, in("awq.safetensors")));
  ImportOptions options;
  options.outputDir = out();
  options.activation = core::Activation::S8;
  options.activationScale = core::ActivationScale::PerToken;
  options.output = core::Output::F16;
  Expected<ImportReport> report = importCheckpoints({in("awq.safetensors")}, options);
  ASSERT_TRUE(report) << report.error();
  EXPECT_EQ(report->format, CheckpointFormat::Awq);
  Output output = readOutput(out());
  checkpoint::KernelWeights w = readLayer(output.weights, "mlp.up");
  EXPECT_EQ(w.problem.activation, core::Activation::S8);
  EXPECT_EQ(w.problem.activationScale, core::ActivationScale::PerToken);
  EXPECT_EQ(w.problem.output, core::Output::F16);
  expectLayerEquals(w, *formats::dequantizeAwq(c));
}

using lowbit::testing::GgufTensorSpec;
using lowbit::testing::writeGguf;

std::vector<uint8_t> randomBlocks(int blocks, int blockBytes, std::vector<int> scaleOffsets,
                                  std::mt19937 &rng) {
  return lowbit::testing::randomGgufBlocks(blocks, blockBytes, std::move(scaleOffsets), rng);
}

TEST_F(CheckpointImport, GgufQuantizedTensorsKeepEveryWeight) {
  std::mt19937 rng(6);
  const std::vector<GgufTensorSpec> tensors = {
      // N = 64 rows: the default schedules' column tile.
      {"blk.0.attn_q.weight", {64, 64}, 2, randomBlocks(128, 18, {0}, rng)},       // Q4_0
      {"blk.0.attn_v.weight", {64, 64}, 8, randomBlocks(128, 34, {0}, rng)},       // Q8_0
      {"blk.0.ffn_up.weight", {256, 64}, 12, randomBlocks(64, 144, {0, 2}, rng)},  // Q4_K
      {"blk.0.ffn_down.weight", {256, 64}, 14, randomBlocks(64, 210, {208}, rng)}, // Q6_K
      {"blk.0.ffn_gate.weight", {256, 64}, 13, randomBlocks(64, 176, {0, 2}, rng)}, // Q5_K
      {"blk.1.ffn_up.weight", {256, 64}, 10, randomBlocks(64, 84, {80, 82}, rng)},  // Q2_K
      {"blk.1.ffn_down.weight", {256, 64}, 11, randomBlocks(64, 110, {108}, rng)},  // Q3_K
      {"output_norm.weight", {64}, 0, std::vector<uint8_t>(256, 0)},               // F32
  };
  writeGguf(in("model.gguf"), tensors);
  ImportOptions options;
  options.outputDir = out();
  Expected<ImportReport> report = importCheckpoints({in("model.gguf")}, options);
  ASSERT_TRUE(report) << report.error();
  EXPECT_EQ(report->format, CheckpointFormat::Gguf);
  ASSERT_EQ(report->layers.size(), 7u);
  ASSERT_EQ(report->leftOut.size(), 1u);
  EXPECT_EQ(report->leftOut[0].tensor, "output_norm.weight");
  Output output = readOutput(out());
  const std::pair<const char *, formats::GgufType> layers[] = {
      {"blk.0.attn_q", formats::GgufType::Q4_0},
      {"blk.0.attn_v", formats::GgufType::Q8_0},
      {"blk.0.ffn_up", formats::GgufType::Q4_K},
      {"blk.0.ffn_down", formats::GgufType::Q6_K},
      {"blk.0.ffn_gate", formats::GgufType::Q5_K},
      {"blk.1.ffn_up", formats::GgufType::Q2_K},
      {"blk.1.ffn_down", formats::GgufType::Q3_K}};
  for (size_t i = 0; i < 7; ++i) {
    SCOPED_TRACE(layers[i].first);
    checkpoint::KernelWeights w = readLayer(output.weights, layers[i].first);
    const GgufTensorSpec &t = tensors[i];
    const int64_t count = int64_t(t.dims[0] * t.dims[1]);
    // llama.cpp's own f32 dequantization is the reference: ours rounds to it.
    Expected<std::vector<float>> reference =
        formats::dequantizeGgufF32(layers[i].second, t.data.data(), t.data.size(), count);
    ASSERT_TRUE(reference) << reference.error();
    Expected<std::vector<double>> ours = checkpoint::dequantizeKernelWeights(w);
    ASSERT_TRUE(ours) << ours.error();
    ASSERT_EQ(ours->size(), size_t(count));
    for (int64_t e = 0; e < count; ++e)
      ASSERT_EQ(float((*ours)[size_t(e)]), (*reference)[size_t(e)]) << e;
  }
  // Q4_K's two-level scales stay two-level (byte codes and f16 steps), and
  // the report says so.
  EXPECT_NE(output.report.find("uint6 sub-scales and mins kept as uint8 codes with their f16 "
                               "steps per 256 weights"),
            std::string::npos);
  // Q6_K's 6-bit and Q3_K's 3-bit codes are served as stored (two planes),
  // not widened; Q3_K's excess-32 sub-scales become int8 codes of the same
  // values.
  EXPECT_EQ(output.report.find("re-encoded"), std::string::npos) << output.report;
  EXPECT_NE(output.report.find("uint6-32 sub-scales kept as int8 codes"), std::string::npos)
      << output.report;
}

TEST_F(CheckpointImport, QuantizedLayersNoKernelServesFailUnlessSkipped) {
  std::mt19937 rng(7);
  writeGguf(in("model.gguf"),
            {{"blk.0.attn_q.weight", {64, 64}, 2, randomBlocks(128, 18, {0}, rng)},
             {"blk.0.attn_k.weight", {64, 64}, 3, randomBlocks(128, 20, {0, 2}, rng)}}); // Q4_1
  ImportOptions options;
  options.outputDir = out();
  Expected<ImportReport> failed = importCheckpoints({in("model.gguf")}, options);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().find("blk.0.attn_k.weight"), std::string::npos) << failed.error();
  EXPECT_NE(failed.error().find("--skip-unservable"), std::string::npos);
  EXPECT_FALSE(fs::exists(out() + "/weights.safetensors"));
  EXPECT_FALSE(fs::exists(out() + "/weights.safetensors.part"));

  options.skipUnservable = true;
  Expected<ImportReport> report = importCheckpoints({in("model.gguf")}, options);
  ASSERT_TRUE(report) << report.error();
  EXPECT_EQ(report->layers.size(), 1u);
  ASSERT_EQ(report->leftOut.size(), 1u);
  EXPECT_TRUE(report->leftOut[0].quantized);
  EXPECT_NE(readOutput(out()).report.find("q4_1"), std::string::npos);
}

TEST_F(CheckpointImport, BrokenCheckpointsAreErrorsThatNameTheFile) {
  const formats::GptqCheckpoint c = randomGptq(64, 128, 128, false, 8);
  {
    Expected<checkpoint::SafetensorsWriter> writer =
        checkpoint::SafetensorsWriter::create(in("model.safetensors"));
    addGptq(*writer, "proj", c);
    ASSERT_TRUE(writer->finish());
  }
  // Cut the file short: the last tensor's data now reaches past its end.
  fs::resize_file(in("model.safetensors"), fs::file_size(in("model.safetensors")) - 4);
  ImportOptions options;
  options.outputDir = out();
  Expected<ImportReport> truncated = importCheckpoints({in("model.safetensors")}, options);
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().find("model.safetensors"), std::string::npos);
  EXPECT_NE(truncated.error().find("truncated"), std::string::npos) << truncated.error();

  std::ofstream(in("empty.gguf")) << "GGUF";
  Expected<ImportReport> gguf = importCheckpoints({in("empty.gguf")}, options);
  ASSERT_FALSE(gguf);
  EXPECT_NE(gguf.error().find("empty.gguf"), std::string::npos) << gguf.error();

  Expected<ImportReport> missing = importCheckpoints({in("absent.safetensors")}, options);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("absent.safetensors"), std::string::npos);

  options.archs = {"sm_75"};
  EXPECT_FALSE(importCheckpoints({in("model.safetensors")}, options));
}

TEST(CheckpointFormatNames, ParseWhatTheyPrint) {
  for (CheckpointFormat f :
       {CheckpointFormat::Auto, CheckpointFormat::Gptq, CheckpointFormat::GptqV2,
        CheckpointFormat::Awq, CheckpointFormat::Gguf})
    EXPECT_EQ(*parseCheckpointFormat(checkpointFormatName(f)), f);
  EXPECT_FALSE(parseCheckpointFormat("exl2"));
}

} // namespace
} // namespace lowbit::import
