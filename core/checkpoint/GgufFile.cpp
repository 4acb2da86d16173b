#include "core/checkpoint/GgufFile.h"

#include "core/support/CheckedMath.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace lowbit::checkpoint {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747; // "GGUF" read as a little-endian u32
constexpr uint64_t kMaxNameBytes = 64 * 1024;
constexpr uint64_t kMaxAlignment = 1 << 16;
constexpr uint32_t kMaxDims = 4; // ggml's GGML_MAX_DIMS
constexpr uint64_t kMaxDim = uint64_t(1) << 62;
// ggml reads no nested arrays at all; a few levels cover any writer that
// does, and the limit keeps a crafted file from recursing off the stack.
constexpr int kMaxArrayDepth = 8;
// The fewest bytes an entry can take, so that a count is refused before
// room is reserved for it: a key/value pair is at least a key length (8) and
// a value type (4); a tensor info at least a name length (8), n_dims (4), a
// ggml type (4) and an offset (8).
constexpr uint64_t kMinKvBytes = 12;
constexpr uint64_t kMinTensorInfoBytes = 24;
constexpr uint64_t kMinNestedArrayBytes = 12; // element type (4) and count (8)
constexpr uint64_t kMinStringBytes = 8;       // the length
// Even a plausible count is reserved only up to this many entries; beyond
// it the vectors grow as entries actually parse. A corrupt count in a
// 30 GB checkpoint would otherwise claim gigabytes before the first entry.
constexpr uint64_t kMaxReservedEntries = 1 << 16;

using namespace gguf_value;

std::string valueTypeName(uint32_t type) {
  static const char *const names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                      "bool", "string", "array", "u64", "i64", "f64"};
  return type < sizeof(names) / sizeof(names[0]) ? names[type] : "type " + std::to_string(type);
}

// The bytes one value of a fixed-size type takes; 0 for strings, arrays and
// unknown types.
uint64_t fixedValueBytes(uint32_t type) {
  switch (type) {
  case kU8:
  case kI8:
  case kBool: return 1;
  case kU16:
  case kI16: return 2;
  case kU32:
  case kI32:
  case kF32: return 4;
  case kU64:
  case kI64:
  case kF64: return 8;
  default: return 0;
  }
}

// ggml's type_traits (ggml/src/ggml.c): blck_size and type_size, the latter
// sizeof(block_*) as pinned by the static_asserts in ggml/src/ggml-common.h.
// Ids 4, 5 and 31-33, 36-38 are removed types; ggml has zero sizes for them.
struct GgmlTypeInfo {
  int id;
  const char *name;
  int elements;
  int bytes;
};
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},      {10, "q2_K", 256, 84},
    {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},   {16, "iq2_xxs", 256, 66},
    {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
    {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
    {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},
};

const GgmlTypeInfo *findGgmlType(int type) {
  for (const GgmlTypeInfo &info : kGgmlTypes)
    if (info.id == type)
      return &info;
  return nullptr;
}

// Names and keys come from the file: messages show them escaped and cut
// short, so a crafted name cannot garble a log.
std::string quoted(const std::string &text) {
  constexpr size_t kShown = 120;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kShown; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
      out += char(c);
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (text.size() > kShown)
    out += "...";
  return out + "'";
}

// A cursor over the file that checks the bytes that remain before every
// read. The first failure records the message (the label, the entry being
// read and the field); callers return false up the stack.
class Reader {
public:
  Reader(const uint8_t *data, size_t size, std::string label)
      : data_(data), size_(size), label_(std::move(label)) {}

  size_t offset() const { return at_; }
  size_t remaining() const { return size_ - at_; }
  const std::string &error() const { return error_; }

  // What is being read ("metadata 3 'general.name'"), for the messages.
  void setEntry(std::string entry) { entry_ = std::move(entry); }

  bool fail(const std::string &message) {
    if (error_.empty())
      error_ = label_ + ": " + (entry_.empty() ? "" : entry_ + ": ") + message;
    return false;
  }

  template <typename T> bool read(T *out, const char *field) {
    static_assert(std::is_unsigned<T>::value, "read unsigned, then convert");
    if (sizeof(T) > remaining())
      return fail(truncatedAt(field, sizeof(T)));
    uint64_t value = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      value |= uint64_t(data_[at_ + i]) << (8 * i);
    *out = T(value);
    at_ += sizeof(T);
    return true;
  }

  bool skip(uint64_t bytes, const char *field) {
    if (bytes > remaining())
      return fail(truncatedAt(field, bytes));
    at_ += size_t(bytes);
    return true;
  }

  // A u64 length and that many bytes; `out` may be null to skip it. `limit`
  // is a hard cap on top of the bytes that remain (names and keys have one).
  bool readString(const char *field, std::string *out, uint64_t limit = UINT64_MAX) {
    uint64_t length = 0;
    if (!read(&length, field))
      return false;
    if (length > limit)
      return fail(std::string(field) + " is " + std::to_string(length) +
                  " bytes long, more than the " + std::to_string(limit) + " allowed");
    if (length > remaining())
      return fail(std::string(field) + " is " + std::to_string(length) + " bytes long but only " +
                  std::to_string(remaining()) + " remain (truncated file)");
    if (out)
      out->assign(reinterpret_cast<const char *>(data_ + at_), size_t(length));
    at_ += size_t(length);
    return true;
  }

private:
  std::string truncatedAt(const char *field, uint64_t bytes) const {
    return std::string("truncated: ") + field + " at byte " + std::to_string(at_) + " needs " +
           std::to_string(bytes) + " bytes, " + std::to_string(remaining()) + " remain";
  }

  const uint8_t *data_;
  size_t size_;
  size_t at_ = 0;
  std::string label_;
  std::string entry_;
  std::string error_;
};

bool skipArrayElements(Reader &in, uint32_t elementType, uint64_t count, int depth);

bool readArraySummary(Reader &in, int depth, GgufArraySummary *out) {
  if (depth > kMaxArrayDepth)
    return in.fail("arrays nested more than " + std::to_string(kMaxArrayDepth) + " deep");
  if (!in.read(&out->elementType, "array element type") || !in.read(&out->count, "array count"))
    return false;
  return skipArrayElements(in, out->elementType, out->count, depth);
}

// Arrays are walked, never stored: lowbit reads none of their values, and a
// vocabulary of 150k strings would only cost memory.
bool skipArrayElements(Reader &in, uint32_t elementType, uint64_t count, int depth) {
  auto tooMany = [&](uint64_t bytesEach) {
    return in.fail("array of " + std::to_string(count) + " " + valueTypeName(elementType) +
                   " values needs at least " + std::to_string(bytesEach) + " bytes each, only " +
                   std::to_string(in.remaining()) + " remain (truncated or corrupt file)");
  };
  if (uint64_t bytes = fixedValueBytes(elementType)) {
    if (count > in.remaining() / bytes)
      return tooMany(bytes);
    return in.skip(count * bytes, "array values");
  }
  if (elementType == kString) {
    if (count > in.remaining() / kMinStringBytes)
      return tooMany(kMinStringBytes);
    for (uint64_t i = 0; i < count; ++i)
      if (!in.readString("array string", nullptr))
        return false;
    return true;
  }
  if (elementType == kArray) {
    if (count > in.remaining() / kMinNestedArrayBytes)
      return tooMany(kMinNestedArrayBytes);
    GgufArraySummary inner;
    for (uint64_t i = 0; i < count; ++i)
      if (!readArraySummary(in, depth + 1, &inner))
        return false;
    return true;
  }
  return in.fail("array element type " + std::to_string(elementType) +
                 " is not a gguf value type (0-12)");
}

template <typename Stored> bool readUnsigned(Reader &in, const char *field, GgufValue *out) {
  Stored value = 0;
  if (!in.read(&value, field))
    return false;
  *out = uint64_t(value);
  return true;
}

template <typename Stored, typename Signed>
bool readSigned(Reader &in, const char *field, GgufValue *out) {
  Stored bits = 0;
  if (!in.read(&bits, field))
    return false;
  Signed value;
  std::memcpy(&value, &bits, sizeof(value));
  *out = int64_t(value);
  return true;
}

template <typename Stored, typename Float>
bool readFloat(Reader &in, const char *field, GgufValue *out) {
  Stored bits = 0;
  if (!in.read(&bits, field))
    return false;
  Float value;
  std::memcpy(&value, &bits, sizeof(value));
  *out = double(value);
  return true;
}

bool readValue(Reader &in, uint32_t type, GgufValue *out) {
  switch (type) {
  case kU8: return readUnsigned<uint8_t>(in, "u8 value", out);
  case kU16: return readUnsigned<uint16_t>(in, "u16 value", out);
  case kU32: return readUnsigned<uint32_t>(in, "u32 value", out);
  case kU64: return readUnsigned<uint64_t>(in, "u64 value", out);
  case kI8: return readSigned<uint8_t, int8_t>(in, "i8 value", out);
  case kI16: return readSigned<uint16_t, int16_t>(in, "i16 value", out);
  case kI32: return readSigned<uint32_t, int32_t>(in, "i32 value", out);
  case kI64: return readSigned<uint64_t, int64_t>(in, "i64 value", out);
  case kF32: return readFloat<uint32_t, float>(in, "f32 value", out);
  case kF64: return readFloat<uint64_t, double>(in, "f64 value", out);
  case kBool: {
    uint8_t value = 0;
    if (!in.read(&value, "bool value"))
      return false;
    // The GGUF spec calls anything but 0 and 1 invalid.
    if (value > 1)
      return in.fail("bool value is " + std::to_string(value) + ", not 0 or 1");
    *out = value == 1;
    return true;
  }
  case kString: {
    std::string value;
    if (!in.readString("string value", &value))
      return false;
    *out = std::move(value);
    return true;
  }
  case kArray: {
    GgufArraySummary summary;
    if (!readArraySummary(in, 1, &summary))
      return false;
    *out = summary;
    return true;
  }
  default: return in.fail("unknown value type " + std::to_string(type) + " (gguf has 0-12)");
  }
}

bool readMetadata(Reader &in, uint64_t index, std::unordered_set<std::string> &keys,
                  GgufMetadata *out) {
  const std::string entry = "metadata " + std::to_string(index);
  in.setEntry(entry);
  if (!in.readString("key", &out->key, kMaxNameBytes))
    return false;
  if (out->key.empty())
    return in.fail("empty key");
  in.setEntry(entry + " " + quoted(out->key));
  if (!keys.insert(out->key).second)
    return in.fail("duplicate key");
  return in.read(&out->type, "value type") && readValue(in, out->type, &out->value);
}

bool readAlignment(Reader &in, const GgufFile &file, uint64_t *alignment) {
  const GgufMetadata *entry = file.find("general.alignment");
  if (!entry)
    return true;
  in.setEntry("metadata 'general.alignment'");
  if (entry->type != kU32)
    return in.fail("is a " + valueTypeName(entry->type) + ", not a u32");
  const uint64_t value = std::get<uint64_t>(entry->value);
  if (value == 0 || (value & (value - 1)) != 0 || value > kMaxAlignment)
    return in.fail("alignment " + std::to_string(value) + " is not a power of two in [1, " +
                   std::to_string(kMaxAlignment) + "]");
  *alignment = value;
  return true;
}

bool readShape(Reader &in, GgufTensor *out) {
  uint32_t dimCount = 0;
  if (!in.read(&dimCount, "n_dims"))
    return false;
  if (dimCount < 1 || dimCount > kMaxDims)
    return in.fail("n_dims is " + std::to_string(dimCount) + ", not in [1, " +
                   std::to_string(kMaxDims) + "]");
  out->dims.reserve(dimCount);
  for (uint32_t d = 0; d < dimCount; ++d) {
    uint64_t extent = 0;
    if (!in.read(&extent, "ne"))
      return false;
    if (extent < 1 || extent > kMaxDim) {
      std::string shown = std::to_string(extent);
      if (extent > uint64_t(INT64_MAX))
        shown += " (" + std::to_string(int64_t(extent)) + " as a signed value)";
      return in.fail("ne[" + std::to_string(d) + "] is " + shown + ", not in [1, 2^62]");
    }
    out->dims.push_back(int64_t(extent));
  }
  return true;
}

// The tensor's size in bytes when its ggml type has a known size, else 0.
bool computeTensorBytes(Reader &in, const GgufTensor &tensor, size_t *bytes) {
  *bytes = 0;
  int64_t elements = 1;
  for (int64_t extent : tensor.dims) {
    if (mulOverflows(elements, extent, &elements)) {
      std::string shape;
      for (int64_t each : tensor.dims)
        shape += (shape.empty() ? "" : " * ") + std::to_string(each);
      return in.fail("element count " + shape + " does not fit in int64");
    }
  }
  const GgmlTypeInfo *type = findGgmlType(tensor.type);
  if (!type)
    return true;
  const int64_t rowLength = tensor.dims[0];
  if (rowLength % type->elements != 0)
    return in.fail("ne[0] = " + std::to_string(rowLength) + " is not a multiple of " + type->name +
                   "'s block of " + std::to_string(type->elements) + " elements");
  Expected<int64_t> total = checkedProduct(
      {rowLength / type->elements, int64_t(type->bytes), elements / rowLength},
      std::string("byte size (ne[0] blocks * ") + type->name + " block bytes * rows)");
  if (!total)
    return in.fail(total.error());
  if constexpr (sizeof(size_t) < sizeof(int64_t))
    if (uint64_t(*total) > SIZE_MAX)
      return in.fail("byte size " + std::to_string(*total) + " does not fit in size_t");
  *bytes = size_t(*total);
  return true;
}

bool readTensorInfo(Reader &in, uint64_t index, std::unordered_map<std::string, uint64_t> &names,
                    GgufTensor *out) {
  const std::string entry = "tensor " + std::to_string(index);
  in.setEntry(entry);
  if (!in.readString("name", &out->name, kMaxNameBytes))
    return false;
  in.setEntry(entry + " " + quoted(out->name));
  auto inserted = names.emplace(out->name, index);
  if (!inserted.second)
    return in.fail("duplicate tensor name (also tensor " + std::to_string(inserted.first->second) +
                   ")");
  if (!readShape(in, out))
    return false;
  uint32_t type = 0;
  if (!in.read(&type, "ggml type"))
    return false;
  // ggml reads the id as an int32; an id past INT32_MAX shows as negative,
  // which no known type has.
  int32_t signedType;
  std::memcpy(&signedType, &type, sizeof(signedType));
  out->type = signedType;
  return in.read(&out->offset, "offset") && computeTensorBytes(in, *out, &out->bytes);
}

std::string tensorEntry(const GgufFile &file, size_t index) {
  return "tensor " + std::to_string(index) + " " + quoted(file.tensors[index].name);
}

// Points each tensor into the data section after checking that it lies
// inside it, and that no two tensors share bytes (a tensor of unknown size
// counts as at least its first byte).
bool placeTensors(Reader &in, const uint8_t *data, size_t size, size_t headerEnd, GgufFile &file) {
  in.setEntry("");
  const uint64_t padding = (file.alignment - headerEnd % file.alignment) % file.alignment;
  size_t dataStart = size;
  if (padding <= size - headerEnd)
    dataStart = headerEnd + size_t(padding);
  else if (!file.tensors.empty())
    return in.fail("the data section would start at byte " +
                   std::to_string(uint64_t(headerEnd) + padding) + ", past the end of the file (" +
                   std::to_string(size) + " bytes)");
  const size_t dataSize = size - dataStart;

  struct Extent {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Extent> extents;
  extents.reserve(file.tensors.size());
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    GgufTensor &tensor = file.tensors[i];
    in.setEntry(tensorEntry(file, i));
    if (tensor.offset % file.alignment != 0)
      return in.fail("offset " + std::to_string(tensor.offset) +
                     " is not a multiple of the alignment " + std::to_string(file.alignment));
    if (tensor.offset >= dataSize)
      return in.fail("offset " + std::to_string(tensor.offset) +
                     " is past the end of the data section (" + std::to_string(dataSize) +
                     " bytes from byte " + std::to_string(dataStart) + ")");
    if (tensor.bytes > dataSize - tensor.offset)
      return in.fail(std::to_string(tensor.bytes) + " bytes at offset " +
                     std::to_string(tensor.offset) + " run past the end of the data section (" +
                     std::to_string(dataSize) + " bytes)");
    if (tensor.bytes > 0)
      tensor.data = data + dataStart + tensor.offset;
    extents.push_back({tensor.offset, tensor.offset + std::max<uint64_t>(tensor.bytes, 1), i});
  }

  std::sort(extents.begin(), extents.end(),
            [](const Extent &a, const Extent &b) { return a.begin < b.begin; });
  // Compared with the extent reaching furthest so far, not just the one
  // before: a small tensor may sit inside a large one that started earlier.
  const Extent *furthest = nullptr;
  for (const Extent &extent : extents) {
    if (furthest && extent.begin < furthest->end) {
      in.setEntry(tensorEntry(file, extent.index));
      return in.fail("bytes [" + std::to_string(extent.begin) + ", " + std::to_string(extent.end) +
                     ") overlap " + tensorEntry(file, furthest->index) + " at [" +
                     std::to_string(furthest->begin) + ", " + std::to_string(furthest->end) + ")");
    }
    if (!furthest || extent.end > furthest->end)
      furthest = &extent;
  }
  return true;
}

Expected<GgufFile> parseChecked(const uint8_t *data, size_t size, const std::string &label) {
  Reader in(data, size, label);
  if (!data && size > 0)
    return makeError(label + ": no buffer for " + std::to_string(size) + " bytes");
  GgufFile file;
  uint32_t magic = 0;
  if (!in.read(&magic, "magic"))
    return makeError(in.error());
  if (magic != kGgufMagic) {
    std::string shown;
    for (int i = 0; i < 4; ++i)
      shown += char((magic >> (8 * i)) & 0xFF);
    return makeError(label + ": not a GGUF file: the magic is " + quoted(shown) +
                     ", expected 'GGUF'");
  }
  if (!in.read(&file.version, "version"))
    return makeError(in.error());
  if (file.version == 1)
    return makeError(label + ": GGUF version 1 is not supported (it stored counts as u32); "
                             "convert the file with a current llama.cpp");
  if (file.version != 2 && file.version != 3) {
    const bool swapped = (file.version & 0xFFFF) == 0;
    return makeError(label + ": GGUF version " + std::to_string(file.version) +
                     " is not supported (only 2 and 3)" + (swapped ? "; a big-endian file?" : ""));
  }

  uint64_t tensorCount = 0, kvCount = 0;
  if (!in.read(&tensorCount, "tensor_count") || !in.read(&kvCount, "kv_count"))
    return makeError(in.error());
  auto implausible = [&](const char *field, uint64_t count, uint64_t minBytes) {
    return makeError(label + ": " + field + " " + std::to_string(count) + " needs at least " +
                     std::to_string(minBytes) + " bytes each, only " +
                     std::to_string(in.remaining()) + " remain (truncated or corrupt file)");
  };
  if (kvCount > in.remaining() / kMinKvBytes)
    return implausible("kv_count", kvCount, kMinKvBytes);
  if (tensorCount > in.remaining() / kMinTensorInfoBytes)
    return implausible("tensor_count", tensorCount, kMinTensorInfoBytes);

  file.metadata.reserve(size_t(std::min(kvCount, kMaxReservedEntries)));
  std::unordered_set<std::string> keys;
  for (uint64_t i = 0; i < kvCount; ++i)
    if (!readMetadata(in, i, keys, &file.metadata.emplace_back()))
      return makeError(in.error());
  if (!readAlignment(in, file, &file.alignment))
    return makeError(in.error());

  // Checked again now that the metadata has used its share of the bytes.
  if (tensorCount > in.remaining() / kMinTensorInfoBytes)
    return implausible("tensor_count", tensorCount, kMinTensorInfoBytes);
  file.tensors.reserve(size_t(std::min(tensorCount, kMaxReservedEntries)));
  std::unordered_map<std::string, uint64_t> names;
  for (uint64_t i = 0; i < tensorCount; ++i)
    if (!readTensorInfo(in, i, names, &file.tensors.emplace_back()))
      return makeError(in.error());

  if (!placeTensors(in, data, size, in.offset(), file))
    return makeError(in.error());
  return file;
}

} // namespace

const GgufMetadata *GgufFile::find(const std::string &key) const {
  for (const GgufMetadata &entry : metadata)
    if (entry.key == key)
      return &entry;
  return nullptr;
}

bool ggmlTypeSize(int type, GgmlTypeSize *out) {
  const GgmlTypeInfo *info = findGgmlType(type);
  if (!info)
    return false;
  if (out)
    *out = GgmlTypeSize{info->elements, info->bytes};
  return true;
}

std::string ggmlTypeName(int type) {
  const GgmlTypeInfo *info = findGgmlType(type);
  return info ? info->name : "type " + std::to_string(type);
}

Expected<GgufFile> parseGguf(const uint8_t *data, size_t size, const std::string &label) {
  return catchingBadAlloc(label, [&] { return parseChecked(data, size, label); });
}

} // namespace lowbit::checkpoint
