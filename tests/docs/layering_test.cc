// The layering rules of docs/ARCHITECTURE.md, checked against the code:
// every `#include "<layer>/..."` in src/<layer>/ and kernels/ must name a
// layer its row of the table allows; every folder is in the table; the table
// has no cycle; and the Makefile links the archives in an order where each
// layer comes before everything it includes.
#include <gtest/gtest.h>

#include <dirent.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tw {
namespace {

std::string Read(const std::string& relative) {
  std::ifstream in(std::string(TW_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> List(const std::string& relative, bool dirs) {
  std::vector<std::string> out;
  DIR* d = ::opendir((std::string(TW_SOURCE_DIR) + "/" + relative).c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n[0] == '.') continue;
    bool is_dir = e->d_type == DT_DIR;
    if (is_dir == dirs) out.push_back(n);
  }
  ::closedir(d);
  return out;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// layer -> the layers it may include.
std::map<std::string, std::set<std::string>> Table() {
  std::map<std::string, std::set<std::string>> t;
  const std::string doc = Read("docs/ARCHITECTURE.md");
  size_t at = doc.find("<!-- layers:");
  EXPECT_NE(at, std::string::npos) << "docs/ARCHITECTURE.md has no layer table";
  if (at == std::string::npos) return t;
  std::istringstream in(doc.substr(at));
  std::string line;
  std::getline(in, line);  // the marker
  while (std::getline(in, line)) {
    size_t bar = line.find('|');
    if (bar == std::string::npos) {
      if (!t.empty()) break;  // the end of the table
      continue;
    }
    // | `name` | `dep` `dep` |
    std::vector<std::string> names;
    size_t p = 0;
    while ((p = line.find('`', p)) != std::string::npos) {
      size_t q = line.find('`', p + 1);
      if (q == std::string::npos) break;
      names.push_back(line.substr(p + 1, q - p - 1));
      p = q + 1;
    }
    if (names.empty()) continue;  // the header and the separator
    auto& deps = t[names[0]];
    for (size_t i = 1; i < names.size(); i++) deps.insert(names[i]);
  }
  return t;
}

// "x" for each `#include "x/...` in the file.
std::set<std::string> IncludedLayers(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::string kInclude = "#include \"";
    size_t p = line.find(kInclude);
    if (p != 0) continue;
    size_t slash = line.find('/', p + kInclude.size());
    size_t quote = line.find('"', p + kInclude.size());
    if (slash == std::string::npos || slash > quote) continue;
    out.insert(line.substr(p + kInclude.size(), slash - p - kInclude.size()));
  }
  return out;
}

TEST(Layering, EveryIncludeFollowsTheArchitectureTable) {
  const auto table = Table();
  ASSERT_GT(table.size(), 10u);
  std::vector<std::pair<std::string, std::string>> folders;  // (layer, folder)
  for (const std::string& l : List("src", true)) folders.push_back({l, "src/" + l});
  folders.push_back({"kernels", "kernels"});
  std::set<std::string> layer_names;
  for (const auto& [l, dir] : folders) layer_names.insert(l);
  int files = 0;
  for (const auto& [layer, dir] : folders) {
    auto row = table.find(layer);
    ASSERT_NE(row, table.end()) << dir << "/ is not a layer of docs/ARCHITECTURE.md's table";
    for (const std::string& f : List(dir, false)) {
      if (!(EndsWith(f, ".h") || EndsWith(f, ".cc") || EndsWith(f, ".inc") || EndsWith(f, ".cu") ||
            EndsWith(f, ".cuh"))) {
        continue;
      }
      files++;
      for (const std::string& inc : IncludedLayers(Read(dir + "/" + f))) {
        if (inc == layer || !layer_names.count(inc)) continue;  // itself, or a subfolder ("dev/")
        EXPECT_TRUE(row->second.count(inc))
            << dir << "/" << f << " includes " << inc << "/, which the " << layer
            << " layer may not (docs/ARCHITECTURE.md, Layering rules)";
      }
    }
  }
  EXPECT_GT(files, 100);
}

TEST(Layering, TheTableHasNoCycleAndNamesOnlyLayers) {
  const auto table = Table();
  for (const auto& [l, deps] : table) {
    for (const std::string& d : deps) {
      EXPECT_TRUE(table.count(d)) << l << " names an unknown layer " << d;
      EXPECT_NE(d, l);
    }
  }
  // Depth-first search for a back edge.
  std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
  std::function<bool(const std::string&)> cyclic = [&](const std::string& l) {
    if (state[l] == 1) return true;
    if (state[l] == 2) return false;
    state[l] = 1;
    for (const std::string& d : table.at(l)) {
      if (table.count(d) && cyclic(d)) return true;
    }
    state[l] = 2;
    return false;
  };
  for (const auto& [l, deps] : table) EXPECT_FALSE(cyclic(l)) << "a cycle through " << l;
}

TEST(Layering, TheMakefileLinksEachLayerBeforeWhatItIncludes) {
  const auto table = Table();
  const std::string mk = Read("Makefile");
  size_t p = mk.find("LAYER_ORDER");
  ASSERT_NE(p, std::string::npos) << "the Makefile has no LAYER_ORDER";
  size_t eq = mk.find(":=", p);
  size_t end = mk.find('\n', eq);
  while (end != std::string::npos && mk[end - 1] == '\\') end = mk.find('\n', end + 1);
  std::istringstream in(mk.substr(eq + 2, end - eq - 2));
  std::vector<std::string> order;
  std::string w;
  while (in >> w) {
    if (w != "\\") order.push_back(w);
  }
  std::map<std::string, size_t> pos;
  for (size_t i = 0; i < order.size(); i++) pos[order[i]] = i;
  for (const std::string& l : List("src", true)) EXPECT_TRUE(pos.count(l)) << l << " is missing from LAYER_ORDER";
  for (const auto& [l, deps] : table) {
    if (!pos.count(l)) continue;
    for (const std::string& d : deps) {
      if (pos.count(d)) {
        EXPECT_LT(pos[l], pos[d]) << l << " must be linked before " << d;
      }
    }
  }
}

}  // namespace
}  // namespace tw
