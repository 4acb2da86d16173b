// GGUF files assembled byte by byte in memory, parsed back field by field;
// then the same files broken one field at a time, each expected to fail with
// a message that names what is wrong.
#include "core/checkpoint/GgufFile.h"
#include "core/formats/Gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <optional>

namespace lowbit::checkpoint {
namespace {

constexpr const char *kLabel = "model.gguf";

using namespace gguf_value;
enum : uint32_t { kF32Type = 0, kF16Type = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14 };

// Little-endian bytes, appended.
struct Bytes {
  std::vector<uint8_t> data;

  Bytes &le(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i)
      data.push_back(uint8_t(value >> (8 * i)));
    return *this;
  }
  Bytes &u8(uint8_t v) { return le(v, 1); }
  Bytes &u16(uint16_t v) { return le(v, 2); }
  Bytes &u32(uint32_t v) { return le(v, 4); }
  Bytes &u64(uint64_t v) { return le(v, 8); }
  Bytes &f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return u32(bits);
  }
  Bytes &f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return u64(bits);
  }
  Bytes &str(const std::string &s) {
    u64(s.size());
    data.insert(data.end(), s.begin(), s.end());
    return *this;
  }
  Bytes &append(const Bytes &other) {
    data.insert(data.end(), other.data.begin(), other.data.end());
    return *this;
  }
};

// One key/value pair: the key, the type and the value's bytes as given.
Bytes kv(const std::string &key, uint32_t type, const std::function<void(Bytes &)> &value) {
  Bytes b;
  b.str(key).u32(type);
  value(b);
  return b;
}
Bytes kvU32(const std::string &key, uint32_t v) {
  return kv(key, kU32, [&](Bytes &b) { b.u32(v); });
}
Bytes kvString(const std::string &key, const std::string &v) {
  return kv(key, kString, [&](Bytes &b) { b.str(v); });
}

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type;
  uint64_t offset;
};

// A whole file; the counts default to the entries given, and the data
// section follows the tensor infos padded to `alignment`.
struct TestFile {
  uint32_t magic = 0x46554747;
  uint32_t version = 3;
  std::optional<uint64_t> tensorCount, kvCount;
  std::vector<Bytes> kvs;
  std::vector<TensorInfo> tensors;
  uint64_t alignment = 32;
  std::vector<uint8_t> dataSection;

  size_t dataStart = 0; // set by build()

  std::vector<uint8_t> build() {
    Bytes b;
    b.u32(magic).u32(version);
    b.u64(tensorCount.value_or(tensors.size())).u64(kvCount.value_or(kvs.size()));
    for (const Bytes &entry : kvs)
      b.append(entry);
    for (const TensorInfo &t : tensors) {
      b.str(t.name).u32(uint32_t(t.ne.size()));
      for (uint64_t e : t.ne)
        b.u64(e);
      b.u32(t.type).u64(t.offset);
    }
    while (b.data.size() % alignment != 0)
      b.u8(0);
    dataStart = b.data.size();
    b.data.insert(b.data.end(), dataSection.begin(), dataSection.end());
    return b.data;
  }
};

uint8_t patternByte(size_t position) {
  return uint8_t(position * 7 + 3);
}

// A one-tensor file (a 4 x 2 f32) to break in the malformed tests.
TestFile smallFile() {
  TestFile f;
  f.kvs.push_back(kvString("general.name", "tiny"));
  f.tensors.push_back({"w", {4, 2}, kF32Type, 0});
  f.dataSection.assign(32, 0x11);
  return f;
}

Expected<GgufFile> parse(const std::vector<uint8_t> &bytes) {
  return parseGguf(bytes.data(), bytes.size(), kLabel);
}

// Parses and expects an error that starts with the label and contains every
// one of `parts`.
void expectError(const std::vector<uint8_t> &bytes, std::initializer_list<const char *> parts) {
  Expected<GgufFile> result = parse(bytes);
  ASSERT_FALSE(result.ok()) << "parsed; expected an error with " << *parts.begin();
  EXPECT_EQ(result.error().rfind(std::string(kLabel) + ": ", 0), 0u) << result.error();
  for (const char *part : parts)
    EXPECT_NE(result.error().find(part), std::string::npos)
        << "error '" << result.error() << "' lacks '" << part << "'";
}

// ---------------------------------------------------------------- a valid file

struct WantTensor {
  const char *name;
  std::vector<int64_t> dims;
  uint32_t type;
  size_t bytes;
};
// ne0 / block elements * block bytes * the other dims, by hand.
const std::vector<WantTensor> kTensors = {
    {"f32.weight", {4, 3}, kF32Type, 4 * 3 * 4},     {"f16.weight", {8}, kF16Type, 8 * 2},
    {"q4_0.weight", {64, 2}, kQ4_0, 2 * 18 * 2},     {"unknown.weight", {10}, 99, 0},
    {"q8_0.weight", {32, 1, 2}, kQ8_0, 34 * 2},      {"q4_k.weight", {256, 2}, kQ4_K, 144 * 2},
    {"q6_k.weight", {512, 1, 1, 1}, kQ6_K, 2 * 210},
};
constexpr uint64_t kAlignment = 64;
constexpr uint64_t kUnknownSlot = 64; // bytes set aside for the unknown-type tensor

// Every value type, an array of strings, a nested array, alignment 64 and
// the tensors above laid out one after another, padded to 64; the last ends
// the file, so any shorter prefix is missing bytes.
TestFile fullFile() {
  TestFile f;
  f.alignment = kAlignment;
  f.kvs.push_back(kv("v.u8", kU8, [](Bytes &b) { b.u8(200); }));
  f.kvs.push_back(kv("v.i8", kI8, [](Bytes &b) { b.u8(uint8_t(-5)); }));
  f.kvs.push_back(kv("v.u16", kU16, [](Bytes &b) { b.u16(65000); }));
  f.kvs.push_back(kv("v.i16", kI16, [](Bytes &b) { b.u16(uint16_t(-30000)); }));
  f.kvs.push_back(kvU32("general.alignment", uint32_t(kAlignment)));
  f.kvs.push_back(kv("v.i32", kI32, [](Bytes &b) { b.u32(uint32_t(-2000000000)); }));
  f.kvs.push_back(kv("v.f32", kF32, [](Bytes &b) { b.f32(1.5f); }));
  f.kvs.push_back(kv("v.bool", kBool, [](Bytes &b) { b.u8(1); }));
  f.kvs.push_back(kvString("general.name", "Tiny Llama"));
  f.kvs.push_back(kv("tokenizer.ggml.tokens", kArray,
                     [](Bytes &b) { b.u32(kString).u64(3).str("<s>").str("").str("hello"); }));
  f.kvs.push_back(kv("v.u64", kU64, [](Bytes &b) { b.u64(uint64_t(1) << 40); }));
  f.kvs.push_back(kv("v.i64", kI64, [](Bytes &b) { b.u64(uint64_t(-(int64_t(1) << 50))); }));
  f.kvs.push_back(kv("v.f64", kF64, [](Bytes &b) { b.f64(-0.125); }));
  f.kvs.push_back(kv("v.nested", kArray, [](Bytes &b) {
    b.u32(kArray).u64(2);
    b.u32(kI32).u64(2).u32(1).u32(2);
    b.u32(kString).u64(1).str("x");
  }));
  f.kvs.push_back(kv("v.empty", kArray, [](Bytes &b) { b.u32(kF64).u64(0); }));

  uint64_t offset = 0;
  for (const WantTensor &t : kTensors) {
    std::vector<uint64_t> ne(t.dims.begin(), t.dims.end());
    f.tensors.push_back({t.name, ne, t.type, offset});
    const uint64_t bytes = t.bytes ? t.bytes : kUnknownSlot;
    offset += &t == &kTensors.back() ? bytes : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  f.dataSection.resize(offset);
  for (size_t i = 0; i < f.dataSection.size(); ++i)
    f.dataSection[i] = patternByte(i);
  return f;
}

TEST(GgufFile, ParsesEveryValueTypeAndTensor) {
  TestFile f = fullFile();
  std::vector<uint8_t> bytes = f.build();
  Expected<GgufFile> parsed = parse(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const GgufFile &file = *parsed;
  EXPECT_EQ(file.version, 3u);
  EXPECT_EQ(file.alignment, kAlignment);
  EXPECT_EQ(f.dataStart % kAlignment, 0u);
  ASSERT_EQ(file.metadata.size(), 15u);

  auto value = [&](const char *key, uint32_t type) -> const GgufValue & {
    const GgufMetadata *m = file.find(key);
    EXPECT_NE(m, nullptr) << key;
    static const GgufValue none;
    if (!m)
      return none;
    EXPECT_EQ(m->type, type) << key;
    return m->value;
  };
  EXPECT_EQ(std::get<uint64_t>(value("v.u8", kU8)), 200u);
  EXPECT_EQ(std::get<int64_t>(value("v.i8", kI8)), -5);
  EXPECT_EQ(std::get<uint64_t>(value("v.u16", kU16)), 65000u);
  EXPECT_EQ(std::get<int64_t>(value("v.i16", kI16)), -30000);
  EXPECT_EQ(std::get<uint64_t>(value("general.alignment", kU32)), 64u);
  EXPECT_EQ(std::get<int64_t>(value("v.i32", kI32)), -2000000000);
  EXPECT_EQ(std::get<double>(value("v.f32", kF32)), 1.5);
  EXPECT_EQ(std::get<bool>(value("v.bool", kBool)), true);
  EXPECT_EQ(std::get<std::string>(value("general.name", kString)), "Tiny Llama");
  const auto &tokens = std::get<GgufArraySummary>(value("tokenizer.ggml.tokens", kArray));
  EXPECT_EQ(tokens.elementType, kString);
  EXPECT_EQ(tokens.count, 3u);
  EXPECT_EQ(std::get<uint64_t>(value("v.u64", kU64)), uint64_t(1) << 40);
  EXPECT_EQ(std::get<int64_t>(value("v.i64", kI64)), -(int64_t(1) << 50));
  EXPECT_EQ(std::get<double>(value("v.f64", kF64)), -0.125);
  const auto &nested = std::get<GgufArraySummary>(value("v.nested", kArray));
  EXPECT_EQ(nested.elementType, kArray);
  EXPECT_EQ(nested.count, 2u);
  EXPECT_EQ(std::get<GgufArraySummary>(value("v.empty", kArray)).count, 0u);
  EXPECT_EQ(file.metadata[0].key, "v.u8"); // in the file's order
  EXPECT_EQ(file.metadata[14].key, "v.empty");
  EXPECT_EQ(file.find("no.such.key"), nullptr);

  ASSERT_EQ(file.tensors.size(), kTensors.size());
  for (size_t i = 0; i < kTensors.size(); ++i) {
    const GgufTensor &t = file.tensors[i];
    const WantTensor &want = kTensors[i];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(t.name, want.name);
    EXPECT_EQ(t.dims, want.dims);
    EXPECT_EQ(t.type, int(want.type));
    EXPECT_EQ(t.offset, f.tensors[i].offset);
    EXPECT_EQ(t.offset % kAlignment, 0u);
    EXPECT_EQ(t.bytes, want.bytes);
    if (want.bytes == 0) {
      EXPECT_EQ(t.data, nullptr);
      continue;
    }
    ASSERT_EQ(t.data, bytes.data() + f.dataStart + t.offset);
    for (size_t j = 0; j < t.bytes; ++j)
      ASSERT_EQ(t.data[j], patternByte(size_t(t.offset) + j)) << j;
  }
  EXPECT_EQ(file.tensors.back().data + file.tensors.back().bytes, bytes.data() + bytes.size());
}

TEST(GgufFile, Version2AndDefaultAlignment) {
  TestFile f = smallFile();
  f.version = 2;
  std::vector<uint8_t> bytes = f.build();
  Expected<GgufFile> parsed = parse(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->version, 2u);
  EXPECT_EQ(parsed->alignment, 32u);
  ASSERT_EQ(parsed->tensors.size(), 1u);
  EXPECT_EQ(parsed->tensors[0].bytes, 32u);
  EXPECT_EQ(parsed->tensors[0].data, bytes.data() + f.dataStart);
  EXPECT_EQ(f.dataStart, 128u); // a 101-byte header padded to 32
}

TEST(GgufFile, MetadataOnlyFileNeedsNoPadding) {
  Bytes b;
  b.u32(0x46554747).u32(3).u64(0).u64(1).append(kvString("general.name", "vocab"));
  Expected<GgufFile> parsed = parse(b.data);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->tensors.empty());
  EXPECT_EQ(std::get<std::string>(parsed->find("general.name")->value), "vocab");
}

TEST(GgufFile, TypeSizesAndNames) {
  GgmlTypeSize size;
  ASSERT_TRUE(ggmlTypeSize(kQ4_K, &size));
  EXPECT_EQ(size.elements, 256);
  EXPECT_EQ(size.bytes, 144);
  ASSERT_TRUE(ggmlTypeSize(30, &size)); // bf16
  EXPECT_EQ(size.elements, 1);
  EXPECT_EQ(size.bytes, 2);
  ASSERT_TRUE(ggmlTypeSize(34, &size)); // tq1_0
  EXPECT_EQ(size.bytes, 54);
  EXPECT_FALSE(ggmlTypeSize(4, &size)); // the removed q4_2
  EXPECT_FALSE(ggmlTypeSize(99, &size));
  EXPECT_FALSE(ggmlTypeSize(-1, &size));
  EXPECT_EQ(ggmlTypeName(kQ4_K), "q4_K");
  EXPECT_EQ(ggmlTypeName(kF16Type), "f16");
  EXPECT_EQ(ggmlTypeName(30), "bf16");
  EXPECT_EQ(ggmlTypeName(23), "iq4_xs");
  EXPECT_EQ(ggmlTypeName(99), "type 99");
  // The block importers in core/formats agree on the types they share.
  for (int id : {2, 8, 12, 14}) {
    Expected<formats::GgufType> type = formats::ggufTypeFromId(id);
    ASSERT_TRUE(type.ok()) << id;
    Expected<formats::GgufBlockShape> shape = formats::ggufBlockShape(*type);
    ASSERT_TRUE(shape.ok()) << id;
    ASSERT_TRUE(ggmlTypeSize(id, &size));
    EXPECT_EQ(size.elements, shape->weights) << id;
    EXPECT_EQ(size.bytes, shape->bytes) << id;
  }
}

TEST(GgufFile, EveryTruncationFailsCleanly) {
  TestFile f = fullFile();
  const std::vector<uint8_t> bytes = f.build();
  for (size_t length = 0; length < bytes.size(); ++length) {
    // Its own allocation of exactly `length` bytes, so a sanitizer build
    // sees any read past it.
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + std::ptrdiff_t(length));
    Expected<GgufFile> parsed = parseGguf(prefix.data(), prefix.size(), kLabel);
    ASSERT_FALSE(parsed.ok()) << "a prefix of " << length << " bytes parsed";
    const std::string &error = parsed.error();
    EXPECT_EQ(error.rfind("model.gguf: ", 0), 0u) << error;
    EXPECT_TRUE(error.find("truncated") != std::string::npos ||
                error.find("past the end") != std::string::npos)
        << length << ": " << error;
  }
  EXPECT_TRUE(parse(bytes).ok());
}

TEST(GgufFile, EmptyAndNull) {
  Expected<GgufFile> empty = parseGguf(nullptr, 0, kLabel);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error(), "model.gguf: truncated: magic at byte 0 needs 4 bytes, 0 remain");
}

// ---------------------------------------------------------------- the header

TEST(GgufFileMalformed, BadMagic) {
  TestFile f = smallFile();
  f.magic = 0x46554746; // "FGUF"
  expectError(f.build(), {"not a GGUF file", "'FGUF'"});
}

TEST(GgufFileMalformed, Version1) {
  TestFile f = smallFile();
  f.version = 1;
  expectError(f.build(), {"version 1 is not supported", "u32"});
}

TEST(GgufFileMalformed, Version4) {
  TestFile f = smallFile();
  f.version = 4;
  expectError(f.build(), {"version 4 is not supported (only 2 and 3)"});
  f.version = 3u << 24; // version 3 written big-endian
  expectError(f.build(), {"big-endian"});
}

TEST(GgufFileMalformed, HugeCounts) {
  TestFile f = smallFile();
  f.tensorCount = uint64_t(1) << 60;
  expectError(f.build(), {"tensor_count 1152921504606846976", "truncated or corrupt"});
  f = smallFile();
  f.kvCount = ~uint64_t(0);
  expectError(f.build(), {"kv_count 18446744073709551615"});
  // Plausible at the header, but the metadata uses up the bytes.
  f = smallFile();
  f.tensorCount = 5;
  expectError(f.build(), {"tensor_count 5 needs at least 24 bytes each"});
}

// ---------------------------------------------------------------- metadata

TEST(GgufFileMalformed, HugeStringLengths) {
  TestFile f = smallFile();
  f.kvs = {kv("", kU8, [](Bytes &) {})};
  f.kvs[0].data.assign(8, 0xFF); // the key's length: 2^64 - 1
  expectError(f.build(), {"metadata 0: key is 18446744073709551615 bytes long, more than the "
                          "65536 allowed"});
  f.kvs = {kvString(std::string(70000, 'k'), "v")};
  expectError(f.build(), {"key is 70000 bytes long"});
  f.kvs = {kv("general.name", kString, [](Bytes &b) { b.u64(uint64_t(1) << 62).str("x"); })};
  expectError(f.build(), {"metadata 0 'general.name': string value is 4611686018427387904 bytes "
                          "long but only",
                          "truncated"});
  f = smallFile();
  f.tensors[0].name = std::string(65537, 'n');
  expectError(f.build(), {"tensor 0: name is 65537 bytes long, more than the 65536 allowed"});
}

TEST(GgufFileMalformed, EmptyAndDuplicateKeys) {
  TestFile f = smallFile();
  f.kvs.push_back(kvU32("", 1));
  expectError(f.build(), {"metadata 1: empty key"});
  f = smallFile();
  f.kvs.push_back(kvString("general.name", "again"));
  expectError(f.build(), {"metadata 1 'general.name': duplicate key"});
}

TEST(GgufFileMalformed, UnknownValueType) {
  TestFile f = smallFile();
  f.kvs.push_back(kv("v.odd", 13, [](Bytes &b) { b.u64(0); }));
  expectError(f.build(), {"metadata 1 'v.odd': unknown value type 13"});
  f = smallFile();
  f.kvs.push_back(kv("v.odd", kArray, [](Bytes &b) { b.u32(77).u64(1).u64(0); }));
  expectError(f.build(), {"array element type 77 is not a gguf value type"});
}

TEST(GgufFileMalformed, BadBool) {
  TestFile f = smallFile();
  f.kvs.push_back(kv("v.flag", kBool, [](Bytes &b) { b.u8(2); }));
  expectError(f.build(), {"metadata 1 'v.flag': bool value is 2, not 0 or 1"});
}

TEST(GgufFileMalformed, ArrayCountsPastTheEnd) {
  TestFile f = smallFile();
  f.kvs.push_back(kv("v.big", kArray, [](Bytes &b) { b.u32(kU32).u64(uint64_t(1) << 62); }));
  expectError(f.build(), {"metadata 1 'v.big': array of 4611686018427387904 u32 values needs "
                          "at least 4 bytes each"});
  f = smallFile();
  f.kvs.push_back(kv("v.words", kArray, [](Bytes &b) { b.u32(kString).u64(1000000); }));
  expectError(f.build(), {"array of 1000000 string values"});
  f = smallFile();
  f.kvs.push_back(kv("v.words", kArray,
                     [](Bytes &b) { b.u32(kString).u64(2).str("ok").u64(uint64_t(1) << 40); }));
  expectError(f.build(), {"array string is 1099511627776 bytes long but only"});
}

TEST(GgufFileMalformed, ArrayNestingTooDeep) {
  auto nestedFile = [](int depth) {
    TestFile f = smallFile();
    f.kvs.push_back(kv("v.deep", kArray, [depth](Bytes &b) {
      for (int i = 1; i < depth; ++i)
        b.u32(kArray).u64(1);
      b.u32(kU8).u64(1).u8(7);
    }));
    return f.build();
  };
  Expected<GgufFile> eight = parse(nestedFile(8));
  ASSERT_TRUE(eight.ok()) << eight.error();
  EXPECT_EQ(std::get<GgufArraySummary>(eight->find("v.deep")->value).elementType, kArray);
  expectError(nestedFile(9), {"metadata 1 'v.deep': arrays nested more than 8 deep"});
  expectError(nestedFile(100000), {"arrays nested more than 8 deep"});
}

TEST(GgufFileMalformed, Alignment) {
  TestFile f = smallFile();
  f.kvs.push_back(kvU32("general.alignment", 0));
  expectError(f.build(), {"'general.alignment': alignment 0 is not a power of two in [1, 65536]"});
  f = smallFile();
  f.kvs.push_back(kvU32("general.alignment", 48));
  expectError(f.build(), {"alignment 48 is not a power of two"});
  f = smallFile();
  f.kvs.push_back(kvU32("general.alignment", 1u << 17));
  expectError(f.build(), {"alignment 131072 is not a power of two in [1, 65536]"});
  f = smallFile();
  f.kvs.push_back(kv("general.alignment", kU64, [](Bytes &b) { b.u64(32); }));
  expectError(f.build(), {"'general.alignment': is a u64, not a u32"});
}

// ---------------------------------------------------------------- tensors

TEST(GgufFileMalformed, DimensionCount) {
  TestFile f = smallFile();
  f.tensors[0].ne = {};
  expectError(f.build(), {"tensor 0 'w': n_dims is 0, not in [1, 4]"});
  f.tensors[0].ne = {1, 1, 1, 1, 8};
  expectError(f.build(), {"tensor 0 'w': n_dims is 5, not in [1, 4]"});
}

TEST(GgufFileMalformed, Dimensions) {
  TestFile f = smallFile();
  f.tensors[0].ne = {4, 0};
  expectError(f.build(), {"tensor 0 'w': ne[1] is 0, not in [1, 2^62]"});
  f.tensors[0].ne = {uint64_t(int64_t(-8)), 1};
  expectError(f.build(),
              {"ne[0] is 18446744073709551608 (-8 as a signed value), not in [1, 2^62]"});
  f.tensors[0].ne = {(uint64_t(1) << 62) + 1};
  expectError(f.build(), {"ne[0] is 4611686018427387905"});
  f.tensors[0].ne = {uint64_t(1) << 31, uint64_t(1) << 31, uint64_t(1) << 31};
  expectError(f.build(), {"element count 2147483648 * 2147483648 * 2147483648 does not fit"});
  // The elements fit; the bytes (4 each) do not.
  f.tensors[0].ne = {uint64_t(1) << 31, uint64_t(1) << 31};
  expectError(f.build(), {"byte size", "does not fit in a 64-bit size"});
}

TEST(GgufFileMalformed, RowNotWholeBlocks) {
  TestFile f = smallFile();
  f.tensors[0] = {"q", {48, 1}, kQ4_0, 0};
  expectError(f.build(), {"tensor 0 'q': ne[0] = 48 is not a multiple of q4_0's block of 32"});
}

TEST(GgufFileMalformed, OffsetNotAligned) {
  TestFile f = smallFile();
  f.dataSection.assign(64, 0);
  f.tensors[0].offset = 16;
  expectError(f.build(), {"tensor 0 'w': offset 16 is not a multiple of the alignment 32"});
}

TEST(GgufFileMalformed, PastTheEnd) {
  TestFile f = smallFile();
  f.tensors[0].offset = 32;
  expectError(f.build(), {"tensor 0 'w': offset 32 is past the end of the data section (32"});
  f = smallFile();
  f.tensors[0].ne = {4, 4}; // 64 bytes in a 32-byte data section
  expectError(f.build(), {"64 bytes at offset 0 run past the end of the data section (32 bytes)"});
  f = smallFile();
  f.tensors[0].type = 99; // unknown size: only its first byte is checked
  f.tensors[0].offset = 64;
  expectError(f.build(), {"offset 64 is past the end"});
  f = smallFile();
  f.alignment = 1; // the file ends with the tensor infos, before the padding
  f.dataSection.clear();
  expectError(f.build(), {"the data section would start at byte 128, past the end of the file "
                          "(101 bytes)"});
}

TEST(GgufFileMalformed, Overlap) {
  TestFile f = smallFile();
  f.dataSection.assign(128, 0);
  f.tensors = {{"a", {16, 2}, kF32Type, 0}, {"b", {8}, kF32Type, 96}, {"c", {4}, kF32Type, 64}};
  expectError(f.build(), {"tensor 2 'c': bytes [64, 80) overlap tensor 0 'a' at [0, 128)"});
  f.tensors = {{"a", {8}, kF32Type, 0}, {"b", {8}, kF32Type, 32}, {"u", {1}, 99, 32}};
  expectError(f.build(), {"overlap"});
  // Touching is not overlapping.
  f.tensors = {{"a", {8}, kF32Type, 0}, {"b", {8}, kF32Type, 32}, {"u", {1}, 99, 64}};
  Expected<GgufFile> parsed = parse(f.build());
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->tensors[2].data, nullptr);
  EXPECT_EQ(parsed->tensors[2].bytes, 0u);
}

TEST(GgufFileMalformed, DuplicateTensorName) {
  TestFile f = smallFile();
  f.dataSection.assign(64, 0);
  f.tensors.push_back({"w", {8}, kF32Type, 32});
  expectError(f.build(), {"tensor 1 'w': duplicate tensor name (also tensor 0)"});
}

TEST(GgufFileMalformed, NamesAreEscapedInMessages) {
  TestFile f = smallFile();
  f.dataSection.assign(64, 0);
  f.tensors.push_back({"w", {8}, kF32Type, 32});
  f.tensors[0].name = f.tensors[1].name = std::string("a\nb'\0", 5);
  expectError(f.build(), {"tensor 1 'a\\x0ab\\x27\\x00': duplicate tensor name"});
}

} // namespace
} // namespace lowbit::checkpoint
