#include "core/checkpoint/Safetensors.h"

#include "core/support/CheckedMath.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

namespace lowbit::checkpoint {
namespace {

struct DtypeInfo {
  SafetensorsDtype dtype;
  const char *name;
  int bytes;
};

constexpr DtypeInfo kDtypes[] = {
    {SafetensorsDtype::Bool, "BOOL", 1},      {SafetensorsDtype::U8, "U8", 1},
    {SafetensorsDtype::I8, "I8", 1},          {SafetensorsDtype::I16, "I16", 2},
    {SafetensorsDtype::U16, "U16", 2},        {SafetensorsDtype::F16, "F16", 2},
    {SafetensorsDtype::BF16, "BF16", 2},      {SafetensorsDtype::I32, "I32", 4},
    {SafetensorsDtype::U32, "U32", 4},        {SafetensorsDtype::F32, "F32", 4},
    {SafetensorsDtype::F64, "F64", 8},        {SafetensorsDtype::I64, "I64", 8},
    {SafetensorsDtype::U64, "U64", 8},        {SafetensorsDtype::F8E4M3, "F8_E4M3", 1},
    {SafetensorsDtype::F8E5M2, "F8_E5M2", 1},
};

const DtypeInfo &info(SafetensorsDtype dtype) {
  for (const DtypeInfo &entry : kDtypes)
    if (entry.dtype == dtype)
      return entry;
  return kDtypes[1];
}

uint64_t readLittleEndian64(const uint8_t *bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | bytes[i];
  return value;
}

// A non-negative integer that fits in int64; JSON floats, negatives and
// numbers past 2^63 are not sizes.
Expected<int64_t> sizeValue(const nlohmann::json &value, const std::string &what) {
  if (value.is_number_unsigned() && value.get<uint64_t>() <= uint64_t(INT64_MAX))
    return int64_t(value.get<uint64_t>());
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return value.get<int64_t>();
  return makeError(what + " must be a non-negative integer below 2^63, got " + value.dump());
}

Expected<SafetensorsTensor> parseTensor(const std::string &name, const nlohmann::json &entry,
                                        const uint8_t *data, int64_t dataBytes,
                                        const std::string &label) {
  const std::string where = label + ": tensor '" + name + "'";
  if (!entry.is_object())
    return makeError(where + ": its entry is not a JSON object");
  for (const char *key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key))
      return makeError(where + ": no \"" + key + "\"");
  SafetensorsTensor tensor;
  tensor.name = name;
  if (!entry["dtype"].is_string())
    return makeError(where + ": \"dtype\" is not a string");
  Expected<SafetensorsDtype> dtype = parseSafetensorsDtype(entry["dtype"].get<std::string>());
  if (!dtype)
    return makeError(where + ": " + dtype.error());
  tensor.dtype = *dtype;
  const nlohmann::json &shape = entry["shape"];
  if (!shape.is_array())
    return makeError(where + ": \"shape\" is not an array");
  int64_t elements = 1;
  for (const nlohmann::json &dim : shape) {
    Expected<int64_t> size = sizeValue(dim, where + ": a dimension");
    if (!size)
      return makeError(size.error());
    tensor.shape.push_back(*size);
    Expected<int64_t> product = checkedMul(elements, *size, where + ": the element count");
    if (!product)
      return makeError(product.error());
    elements = *product;
  }
  tensor.elements = elements;
  Expected<int64_t> bytes =
      checkedMul(elements, safetensorsDtypeBytes(tensor.dtype), where + ": the byte size");
  if (!bytes)
    return makeError(bytes.error());
  const nlohmann::json &offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    return makeError(where + ": \"data_offsets\" is not [begin, end]");
  Expected<int64_t> begin = sizeValue(offsets[0], where + ": data_offsets' begin");
  if (!begin)
    return makeError(begin.error());
  Expected<int64_t> end = sizeValue(offsets[1], where + ": data_offsets' end");
  if (!end)
    return makeError(end.error());
  if (*begin > *end)
    return makeError(where + ": data_offsets [" + std::to_string(*begin) + ", " +
                     std::to_string(*end) + "] end before they begin");
  if (*end > dataBytes)
    return makeError(where + ": data_offsets [" + std::to_string(*begin) + ", " +
                     std::to_string(*end) + "] reach past the data's " + std::to_string(dataBytes) +
                     " bytes (a truncated file?)");
  if (*end - *begin != *bytes)
    return makeError(where + ": data_offsets hold " + std::to_string(*end - *begin) +
                     " bytes, but " + std::string(safetensorsDtypeName(tensor.dtype)) + " " +
                     shape.dump() + " needs " + std::to_string(*bytes));
  tensor.data = data + *begin;
  tensor.bytes = size_t(*bytes);
  return tensor;
}

Expected<SafetensorsFile> parseChecked(const uint8_t *data, size_t size, const std::string &label) {
  if (size < 8)
    return makeError(label + ": " + std::to_string(size) +
                     " bytes: too short for a safetensors file (an 8-byte header length first)");
  const uint64_t headerBytes = readLittleEndian64(data);
  if (headerBytes > uint64_t(kMaxSafetensorsHeaderBytes))
    return makeError(label + ": the header claims " + std::to_string(headerBytes) +
                     " bytes, more than safetensors' limit of " +
                     std::to_string(kMaxSafetensorsHeaderBytes));
  if (headerBytes > size - 8)
    return makeError(label + ": the header claims " + std::to_string(headerBytes) +
                     " bytes but the file has " + std::to_string(size - 8) +
                     " after its length (a truncated file?)");
  const char *text = reinterpret_cast<const char *>(data + 8);
  // Duplicate names would make the JSON ambiguous (the parser keeps the last
  // one silently), so the parser's callback sees every top-level key.
  std::set<std::string> names;
  std::string duplicate;
  auto onEvent = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json &parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key &&
        !names.insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + headerBytes, onEvent);
  } catch (const nlohmann::json::exception &e) {
    return makeError(label + ": the header is not valid JSON: " + e.what());
  }
  if (!duplicate.empty())
    return makeError(label + ": the header names '" + duplicate + "' twice");
  if (!header.is_object())
    return makeError(label + ": the header is not a JSON object");

  SafetensorsFile file;
  const uint8_t *tensorData = data + 8 + headerBytes;
  const int64_t dataBytes = int64_t(size - 8 - headerBytes);
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object())
        return makeError(label + ": __metadata__ is not a JSON object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          return makeError(label + ": __metadata__ '" + m.key() + "' is not a string");
        file.metadata.emplace_back(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    Expected<SafetensorsTensor> tensor =
        parseTensor(it.key(), it.value(), tensorData, dataBytes, label);
    if (!tensor)
      return makeError(tensor.error());
    file.tensors.push_back(std::move(tensor).value());
  }
  // nlohmann's object is sorted by key; the files' order is the offsets'.
  // In that order a tensor overlaps another exactly when it overlaps the next
  // (empty tensors sort first at a shared offset and overlap nothing).
  std::sort(file.tensors.begin(), file.tensors.end(),
            [](const SafetensorsTensor &a, const SafetensorsTensor &b) {
              if (a.data != b.data)
                return a.data < b.data;
              return a.bytes != b.bytes ? a.bytes < b.bytes : a.name < b.name;
            });
  for (size_t i = 1; i < file.tensors.size(); ++i)
    if (file.tensors[i - 1].data + file.tensors[i - 1].bytes > file.tensors[i].data)
      return makeError(label + ": tensors '" + file.tensors[i - 1].name + "' and '" +
                       file.tensors[i].name + "' overlap");
  return file;
}

} // namespace

const char *safetensorsDtypeName(SafetensorsDtype dtype) {
  return info(dtype).name;
}
int safetensorsDtypeBytes(SafetensorsDtype dtype) {
  return info(dtype).bytes;
}

Expected<SafetensorsDtype> parseSafetensorsDtype(const std::string &name) {
  for (const DtypeInfo &entry : kDtypes)
    if (name == entry.name)
      return entry.dtype;
  return makeError("dtype \"" + name + "\" is not a safetensors dtype lowbit reads");
}

const SafetensorsTensor *SafetensorsFile::find(const std::string &name) const {
  for (const SafetensorsTensor &tensor : tensors)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

const std::string *SafetensorsFile::metadataValue(const std::string &key) const {
  for (const auto &entry : metadata)
    if (entry.first == key)
      return &entry.second;
  return nullptr;
}

Expected<SafetensorsFile> parseSafetensors(const uint8_t *data, size_t size,
                                           const std::string &label) {
  return catchingBadAlloc(label, [&] { return parseChecked(data, size, label); });
}

// ---- writer ----------------------------------------------------------------

struct SafetensorsWriter::State {
  std::string path;
  std::string partPath;
  FILE *part = nullptr;
  int64_t dataBytes = 0;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  bool finished = false;

  ~State() {
    if (part)
      std::fclose(part);
    if (!finished) {
      std::remove(partPath.c_str());
      std::remove((path + ".tmp").c_str());
    }
  }
};

SafetensorsWriter::SafetensorsWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
SafetensorsWriter::SafetensorsWriter(SafetensorsWriter &&) noexcept = default;
SafetensorsWriter &SafetensorsWriter::operator=(SafetensorsWriter &&) noexcept = default;
SafetensorsWriter::~SafetensorsWriter() = default;

Expected<SafetensorsWriter> SafetensorsWriter::create(const std::string &path) {
  auto state = std::make_unique<State>();
  state->path = path;
  state->partPath = path + ".part";
  state->part = std::fopen(state->partPath.c_str(), "wb");
  if (!state->part)
    return makeError(state->partPath + ": cannot create: " + std::strerror(errno));
  return SafetensorsWriter(std::move(state));
}

Status SafetensorsWriter::add(const std::string &name, SafetensorsDtype dtype,
                              const std::vector<int64_t> &shape, const void *data, size_t bytes) {
  State &s = *state_;
  if (name == "__metadata__" || s.tensors.contains(name))
    return makeError(s.path + ": tensor '" + name + "' is written twice (or is a reserved name)");
  int64_t expected = safetensorsDtypeBytes(dtype);
  for (int64_t dim : shape)
    if (dim < 0 || mulOverflows(expected, dim, &expected))
      return makeError(s.path + ": tensor '" + name + "': a shape that is no size");
  if (uint64_t(expected) != bytes)
    return makeError(s.path + ": tensor '" + name + "': " + std::to_string(bytes) +
                     " bytes for a shape that needs " + std::to_string(expected));
  if (bytes && std::fwrite(data, 1, bytes, s.part) != bytes)
    return makeError(s.partPath + ": write failed: " + std::strerror(errno));
  s.tensors[name] = {{"dtype", safetensorsDtypeName(dtype)},
                     {"shape", shape},
                     {"data_offsets", {s.dataBytes, s.dataBytes + int64_t(bytes)}}};
  s.dataBytes += int64_t(bytes);
  return Status::success();
}

void SafetensorsWriter::setMetadata(const std::string &key, const std::string &value) {
  state_->metadata[key] = value;
}

Status SafetensorsWriter::finish() {
  State &s = *state_;
  if (s.finished)
    return makeError(s.path + ": already finished");
  if (std::fclose(s.part) != 0) {
    s.part = nullptr;
    return makeError(s.partPath + ": write failed: " + std::strerror(errno));
  }
  s.part = nullptr;
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!s.metadata.empty())
    header["__metadata__"] = s.metadata;
  for (auto it = s.tensors.begin(); it != s.tensors.end(); ++it)
    header[it.key()] = it.value();
  std::string text = header.dump();
  // Readers that map the file find the data 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = uint8_t(uint64_t(text.size()) >> (8 * i));

  const std::string tmpPath = s.path + ".tmp";
  FILE *out = std::fopen(tmpPath.c_str(), "wb");
  if (!out)
    return makeError(tmpPath + ": cannot create: " + std::strerror(errno));
  FILE *in = std::fopen(s.partPath.c_str(), "rb");
  bool ok = in && std::fwrite(length, 1, 8, out) == 8 &&
            std::fwrite(text.data(), 1, text.size(), out) == text.size();
  std::vector<char> chunk(size_t(1) << 22);
  while (ok) {
    const size_t got = std::fread(chunk.data(), 1, chunk.size(), in);
    if (got == 0) {
      ok = !std::ferror(in);
      break;
    }
    ok = std::fwrite(chunk.data(), 1, got, out) == got;
  }
  const int error = errno;
  if (in)
    std::fclose(in);
  ok = (std::fclose(out) == 0) && ok;
  if (!ok)
    return makeError(tmpPath + ": write failed: " + std::strerror(error));
  if (std::rename(tmpPath.c_str(), s.path.c_str()) != 0)
    return makeError(s.path +
                     ": cannot move the finished file into place: " + std::strerror(errno));
  std::remove(s.partPath.c_str());
  s.finished = true;
  return Status::success();
}

} // namespace lowbit::checkpoint
