// The safetensors reader on files its writer made, and on hostile files:
// every malformed header is an error that says what is wrong, never a read
// outside the buffer.
#include "core/checkpoint/Safetensors.h"
#include "core/checkpoint/MappedFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace lowbit::checkpoint {
namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          (name + "." + std::to_string(::testing::UnitTest::GetInstance()->random_seed())))
      .string();
}

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// A file of `header` JSON followed by `data` bytes.
std::vector<uint8_t> fileOf(const std::string &header, size_t dataBytes) {
  std::vector<uint8_t> bytes(8 + header.size() + dataBytes, 0);
  const uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[size_t(i)] = uint8_t(length >> (8 * i));
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < dataBytes; ++i)
    bytes[8 + header.size() + i] = uint8_t(i * 7 + 1);
  return bytes;
}

std::string parseError(const std::vector<uint8_t> &bytes) {
  Expected<SafetensorsFile> file = parseSafetensors(bytes.data(), bytes.size(), "t.safetensors");
  return file ? "" : file.error();
}

TEST(Safetensors, WriterOutputParsesBackWithEveryField) {
  const std::string path = tempPath("lowbit-writer");
  Expected<SafetensorsWriter> writer = SafetensorsWriter::create(path);
  ASSERT_TRUE(writer) << writer.error();
  const std::vector<uint16_t> halves = {0x3C00, 0x4000, 0xBC00, 0x0001, 0x7BFF, 0x8000};
  const std::vector<int32_t> ints = {-1, 2, 3};
  const uint8_t byte = 0xA5;
  ASSERT_TRUE(writer->add("a.scales", SafetensorsDtype::F16, {2, 3}, halves.data(), 12));
  ASSERT_TRUE(writer->add("b.perm", SafetensorsDtype::I32, {3}, ints.data(), 12));
  ASSERT_TRUE(writer->add("c.scalar", SafetensorsDtype::U8, {}, &byte, 1));
  ASSERT_TRUE(writer->add("d.empty", SafetensorsDtype::F32, {0, 4}, nullptr, 0));
  EXPECT_FALSE(writer->add("a.scales", SafetensorsDtype::U8, {1}, &byte, 1));
  EXPECT_FALSE(writer->add("e", SafetensorsDtype::F16, {3}, halves.data(), 4));
  writer->setMetadata("lowbit.format", "lowbit.weights.v1");
  ASSERT_TRUE(writer->finish());
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));

  Expected<MappedFile> mapped = MappedFile::open(path);
  ASSERT_TRUE(mapped) << mapped.error();
  // The data starts 8-byte aligned, as mapping readers expect.
  uint64_t headerBytes = 0;
  std::memcpy(&headerBytes, mapped->data(), 8);
  EXPECT_EQ(headerBytes % 8, 0u);
  Expected<SafetensorsFile> file = parseSafetensors(mapped->data(), mapped->size(), path);
  ASSERT_TRUE(file) << file.error();
  ASSERT_EQ(file->tensors.size(), 4u);
  const SafetensorsTensor *scales = file->find("a.scales");
  ASSERT_NE(scales, nullptr);
  EXPECT_EQ(scales->dtype, SafetensorsDtype::F16);
  EXPECT_EQ(scales->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(scales->elements, 6);
  ASSERT_EQ(scales->bytes, 12u);
  EXPECT_EQ(std::memcmp(scales->data, halves.data(), 12), 0);
  const SafetensorsTensor *perm = file->find("b.perm");
  ASSERT_NE(perm, nullptr);
  EXPECT_EQ(std::memcmp(perm->data, ints.data(), 12), 0);
  EXPECT_EQ(file->find("c.scalar")->elements, 1);
  EXPECT_EQ(*file->find("c.scalar")->data, 0xA5);
  EXPECT_EQ(file->find("d.empty")->bytes, 0u);
  ASSERT_NE(file->metadataValue("lowbit.format"), nullptr);
  EXPECT_EQ(*file->metadataValue("lowbit.format"), "lowbit.weights.v1");
  EXPECT_EQ(file->find("e"), nullptr);
  std::remove(path.c_str());
}

TEST(Safetensors, AnUnfinishedWriterLeavesNoFile) {
  const std::string path = tempPath("lowbit-unfinished");
  {
    Expected<SafetensorsWriter> writer = SafetensorsWriter::create(path);
    ASSERT_TRUE(writer);
    const uint8_t byte = 1;
    ASSERT_TRUE(writer->add("x", SafetensorsDtype::U8, {1}, &byte, 1));
    EXPECT_TRUE(std::filesystem::exists(path + ".part"));
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Safetensors, EveryTruncationOfAValidFileIsAnError) {
  const std::string path = tempPath("lowbit-truncate");
  Expected<SafetensorsWriter> writer = SafetensorsWriter::create(path);
  ASSERT_TRUE(writer);
  const std::vector<uint16_t> halves(10, 0x3C00);
  ASSERT_TRUE(writer->add("w", SafetensorsDtype::F16, {2, 5}, halves.data(), 20));
  ASSERT_TRUE(writer->finish());
  const std::vector<uint8_t> bytes = readFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(parseError(bytes).empty());
  for (size_t size = 0; size < bytes.size(); ++size) {
    // A copy of exactly `size` bytes, so AddressSanitizer sees any overread.
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + long(size));
    Expected<SafetensorsFile> file = parseSafetensors(prefix.data(), prefix.size(), "t");
    EXPECT_FALSE(file) << "a file cut to " << size << " bytes parsed";
  }
}

TEST(Safetensors, MalformedHeadersSayWhatIsWrong) {
  const std::string ok = R"({"w":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}})";
  EXPECT_EQ(parseError(fileOf(ok, 8)), "");

  std::vector<uint8_t> huge = fileOf(ok, 8);
  huge[7] = 0x7F;
  EXPECT_NE(parseError(huge).find("more than safetensors' limit"), std::string::npos);
  std::vector<uint8_t> pastEnd = fileOf(ok, 8);
  pastEnd[0] = uint8_t(pastEnd.size());
  EXPECT_NE(parseError(pastEnd).find("truncated"), std::string::npos);

  struct Case {
    std::string header;
    size_t data;
    const char *error;
  };
  const Case cases[] = {
      {"{\"w\":", 0, "not valid JSON"},
      {"[1, 2]", 0, "not a JSON object"},
      {R"({"w":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},)"
       R"("w":{"dtype":"F16","shape":[1],"data_offsets":[2,4]}})",
       4, "names 'w' twice"},
      {R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})", 2, "not a safetensors dtype"},
      {R"({"w":{"shape":[2],"data_offsets":[0,2]}})", 2, "no \"dtype\""},
      {R"({"w":{"dtype":"U8","shape":[-2],"data_offsets":[0,2]}})", 2, "non-negative integer"},
      {R"({"w":{"dtype":"U8","shape":[2.5],"data_offsets":[0,2]}})", 2, "non-negative integer"},
      {R"({"w":{"dtype":"U8","shape":2,"data_offsets":[0,2]}})", 2, "not an array"},
      {R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8,
       "does not fit in a 64-bit size"},
      {R"({"w":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})", 4, "reach past the data"},
      {R"({"w":{"dtype":"U8","shape":[8],"data_offsets":[4,2]}})", 8, "end before they begin"},
      {R"({"w":{"dtype":"U8","shape":[8],"data_offsets":[0,4]}})", 8, "needs 8"},
      {R"({"w":{"dtype":"U8","shape":[8],"data_offsets":[0]}})", 8, "not [begin, end]"},
      {R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,18446744073709551615]}})", 8,
       "below 2^63"},
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
       R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
       8, "overlap"},
      {R"({"__metadata__":{"k":1}})", 0, "is not a string"},
      {R"({"w":7})", 0, "not a JSON object"},
  };
  for (const Case &c : cases) {
    const std::string error = parseError(fileOf(c.header, c.data));
    EXPECT_NE(error.find(c.error), std::string::npos)
        << c.header << "\n  gave: '" << error << "'\n  want: " << c.error;
    if (!error.empty()) {
      EXPECT_EQ(error.rfind("t.safetensors", 0), 0u) << error;
    }
  }
}

TEST(Safetensors, MappedFileErrorsNameThePath) {
  Expected<MappedFile> missing = MappedFile::open("/nonexistent/lowbit.safetensors");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("/nonexistent/lowbit.safetensors"), std::string::npos);
  Expected<MappedFile> directory = MappedFile::open("/tmp");
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().find("not a regular file"), std::string::npos);
}

} // namespace
} // namespace lowbit::checkpoint
