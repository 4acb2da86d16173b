#include "core/Schedule.h"

#include <cctype>
#include <map>
#include <sstream>
#include <vector>

namespace lowbit::core {

const char *familyName(Family family) {
  switch (family) {
  case Family::Gemv: return "gemv";
  case Family::Mma: return "mma";
  case Family::GemvTiled: return "gemv_tiled";
  case Family::Wgmma: return "wgmma";
  }
  return "?";
}

Expected<Family> parseFamily(const std::string &name) {
  if (name == "gemv")
    return Family::Gemv;
  if (name == "mma")
    return Family::Mma;
  if (name == "gemv_tiled")
    return Family::GemvTiled;
  if (name == "wgmma")
    return Family::Wgmma;
  return makeError("unknown kernel family '" + name +
                   "' (known: gemv, gemv_tiled, mma and wgmma)");
}

std::string Schedule::text() const {
  std::ostringstream os;
  os << "#lb.schedule<family = " << familyName(family) << ", tile = [" << tileM << ", " << tileN
     << ", " << tileK << "], warps = [" << warpsM << ", " << warpsN << "], stages = " << stages
     << ", split_k = " << splitK << ">";
  return os.str();
}

namespace {

std::string stripSpaces(const std::string &text) {
  std::string out;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += c;
  return out;
}

Expected<std::vector<int64_t>> parseIntegers(const std::string &text) {
  std::vector<int64_t> values;
  std::string body = text;
  if (body.size() >= 2 && body.front() == '[' && body.back() == ']')
    body = body.substr(1, body.size() - 2);
  std::stringstream stream(body);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (item.empty())
      return makeError("empty number in '" + text + "'");
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used != item.size())
      return makeError("'" + item + "' is not an integer");
    values.push_back(value);
  }
  return values;
}

// Splits "a=1,tile=[1,2,3],b=x" at the commas outside brackets.
std::vector<std::string> splitFields(const std::string &body) {
  std::vector<std::string> fields;
  std::string current;
  int depth = 0;
  for (char c : body) {
    if (c == '[')
      ++depth;
    if (c == ']')
      --depth;
    if (c == ',' && depth == 0) {
      fields.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty())
    fields.push_back(current);
  return fields;
}

} // namespace

Expected<Schedule> parseSchedule(const std::string &text) {
  const std::string prefix = "#lb.schedule<";
  std::string compact = stripSpaces(text);
  auto bad = [&](const std::string &why) { return makeError("bad schedule '" + text + "': " + why); };
  if (compact.compare(0, prefix.size(), prefix) != 0 || compact.back() != '>')
    return bad("expected #lb.schedule<...>");
  std::string body = compact.substr(prefix.size(), compact.size() - prefix.size() - 1);

  std::map<std::string, std::string> values;
  for (const std::string &field : splitFields(body)) {
    size_t eq = field.find('=');
    if (eq == std::string::npos)
      return bad("field '" + field + "' has no '='");
    if (!values.emplace(field.substr(0, eq), field.substr(eq + 1)).second)
      return bad("field '" + field.substr(0, eq) + "' appears twice");
  }
  for (const char *required : {"family", "tile", "warps", "stages"})
    if (!values.count(required))
      return bad(std::string("missing '") + required + "'");

  Schedule s;
  auto family = parseFamily(values["family"]);
  if (!family)
    return bad(family.error());
  s.family = *family;
  for (const auto &[key, value] : values) {
    if (key == "family")
      continue;
    auto numbers = parseIntegers(value);
    if (!numbers)
      return bad(key + ": " + numbers.error());
    const std::vector<int64_t> &n = *numbers;
    if (key == "tile" && n.size() == 3) {
      s.tileM = n[0], s.tileN = n[1], s.tileK = n[2];
    } else if (key == "warps" && n.size() == 2) {
      s.warpsM = n[0], s.warpsN = n[1];
    } else if (key == "stages" && n.size() == 1) {
      s.stages = n[0];
    } else if (key == "split_k" && n.size() == 1) {
      s.splitK = n[0];
    } else {
      return bad("unexpected field or arity: '" + key + " = " + value + "'");
    }
  }
  return s;
}

} // namespace lowbit::core
