#include "support/chunking.h"

#include <fstream>
#include <sstream>

namespace tw::testing {

std::vector<Chunking> AllChunkings(std::string_view input) {
  std::vector<Chunking> out;
  out.push_back({"whole", {input}});
  for (size_t i = 1; i < input.size(); i++) {
    out.push_back({"split@" + std::to_string(i), {input.substr(0, i), input.substr(i)}});
  }
  Chunking bytes{"bytewise", {}};
  for (size_t i = 0; i < input.size(); i++) bytes.pieces.push_back(input.substr(i, 1));
  out.push_back(std::move(bytes));
  return out;
}

std::string CheckSameForAllChunkings(
    std::string_view input,
    const std::function<std::string(const std::vector<std::string_view>&)>& feed) {
  std::vector<Chunking> all = AllChunkings(input);
  std::string expected = feed(all[0].pieces);
  for (size_t i = 1; i < all.size(); i++) {
    std::string got = feed(all[i].pieces);
    if (got != expected) {
      return all[i].label + ": got [" + got + "], whole input gave [" + expected + "]";
    }
  }
  return "";
}

std::string DataPath(std::string_view relative) {
  return std::string(TW_SOURCE_DIR) + "/tests/data/" + std::string(relative);
}

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream f(path, std::ios::binary);
  if (ok) *ok = static_cast<bool>(f);
  if (!f) return "";
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace tw::testing
