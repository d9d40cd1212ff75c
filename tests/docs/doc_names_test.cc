// docs/ARCHITECTURE.md teaches the code by its names; this test checks that
// every name it cites still exists, so a rename cannot leave the document
// pointing at nothing.
//
// Each `inline code` span of the document (and each qualified name, a::B, in
// its diagram) is classified by its shape and checked against the tree:
//   --flag          --max-batch, `--stream-interval N`: printed by
//                   `tokenwire serve --help` (app::ServeHelp) or in a string
//                   of a command's source (src/main.cc, generate_cli.cc,
//                   weights_tool/); every --flag inside any span is checked
//   -flag           -Wthread-safety: a compiler flag the Makefile passes
//   make target     make thread-safety: a target of the Makefile or a *.mk
//   HTTP route      GET /v1/streams/{id}/events: the path is in src/'s code
//   HTTP header     Retry-After, Last-Event-ID: N: the name is in src/'s code
//   path            src/net/, common/api_error.h: exists under the root or src/
//   file name       kernels_simd.inc: a file of that name is in the tree
//   qualified name  stream::Event::Token(index, id, text): for each step
//                   a::b, b is a word of a file that defines a (namespace a,
//                   class/struct/union/enum a), or the code spells a::b
//   code name       Gpt2Forward, step(), TW_REQUIRES(mu_) (mixed case or
//                   called): an identifier of the code
//   enumerator      `stream::DeliverResult`: `kTaken`, `kNoRoom`: a kName
//                   after an enum named earlier in its paragraph is that
//                   enum's (as a::b above); without one, a code name
//   wire name       overloaded, double_releases, TCP_NODELAY, .incbin
//                   (all lower or all upper case): a word of the code,
//                   string literals included (error codes, JSON fields,
//                   policy names and system calls live there)
//   text            `id: 1 / event: start`, `t % block_size`: prose; only
//                   its --flags are checked
// "The code" is src/, kernels/ and weights_tool/ (.h .cc .inc .cu .cuh), with
// comments removed: a name that survives only in a comment is gone. For code
// names and qualified names string literals are removed too. The check is a
// scan, not a compiler: it proves a name is there, not that it means what
// the prose says.
//
// docs/websocket.md passes the same check. The other documents also cite
// names of other programs (nginx directives, Kubernetes fields, client
// libraries' options, compiler targets), which no scan of our tree can find.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/config.h"
#include "support/source_text.h"

namespace tw {
namespace {

namespace fs = std::filesystem;

const std::string kRoot = TW_SOURCE_DIR;

// Shapes that would be misread, each with its reason. Keep it short.
const std::map<std::string, std::string> kNotCode = {
    {"text/event-stream", "a MIME type, not a path"},
};

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool IsIdentifier(const std::string& s) {
  if (s.empty() || !IsIdentStart(s[0])) return false;
  return std::all_of(s.begin(), s.end(), IsIdentChar);
}

std::vector<std::string> Split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t from = 0;
  while (true) {
    size_t at = s.find(sep, from);
    out.push_back(s.substr(from, at - from));
    if (at == std::string::npos) return out;
    from = at + sep.size();
  }
}

// A source file seen three ways: without comments (`code`), without comments
// and string/char literals (`bare`), and its string literals alone.
struct Views {
  std::string code, bare, strings;
};

Views StripComments(const std::string& s) {
  Views v;
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') i++;
    } else if (s.compare(i, 2, "/*") == 0) {
      size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 2;
      v.code += ' ';
      v.bare += ' ';
    } else if (s[i] == '"' || (s[i] == '\'' && (i == 0 || !IsIdentChar(s[i - 1])))) {
      // A literal (a ' after a digit or letter is a digit separator).
      const char q = s[i];
      size_t j = i + 1;
      while (j < s.size() && s[j] != q && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, s.size());
      v.code.append(s, i, j - i);
      v.bare += ' ';
      if (q == '"') v.strings.append(s, i + 1, j - i - 2).append(" ");
      i = j;
    } else {
      v.code += s[i];
      v.bare += s[i];
      i++;
    }
  }
  return v;
}

// Identifiers, "::" and single punctuation characters; numbers are dropped.
std::vector<std::string> Tokens(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (IsIdentStart(c)) {
      size_t j = i;
      while (j < s.size() && IsIdentChar(s[j])) j++;
      out.push_back(s.substr(i, j - i));
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < s.size() && (IsIdentChar(s[i]) || s[i] == '.')) i++;
    } else if (s.compare(i, 2, "::") == 0) {
      out.push_back("::");
      i += 2;
    } else {
      if (!std::isspace(static_cast<unsigned char>(c))) out.push_back(std::string(1, c));
      i++;
    }
  }
  return out;
}

std::set<std::string> Words(const std::string& s) {
  std::set<std::string> out;
  for (const std::string& t : Tokens(s)) {
    if (IsIdentStart(t[0])) out.insert(t);
  }
  return out;
}

// The names a file defines a scope for: `namespace a::b {`, and
// `class|struct|union|enum [class] [MACRO(...)] [MACRO] Name [final] {` or `:`
// (the enums also into *enums).
std::set<std::string> Scopes(const std::vector<std::string>& t, std::set<std::string>* enums) {
  std::set<std::string> out;
  for (size_t i = 0; i < t.size(); i++) {
    if (t[i] == "namespace") {
      std::vector<std::string> names;
      size_t j = i + 1;
      while (j < t.size() && (IsIdentifier(t[j]) || t[j] == "::")) {
        if (t[j] != "::" && t[j] != "inline") names.push_back(t[j]);
        j++;
      }
      if (j < t.size() && t[j] == "{") out.insert(names.begin(), names.end());
    } else if (t[i] == "class" || t[i] == "struct" || t[i] == "union" || t[i] == "enum") {
      size_t j = i + 1;
      if (t[i] == "enum" && j < t.size() && (t[j] == "class" || t[j] == "struct")) j++;
      std::string name;
      while (j < t.size()) {
        if (t[j] == "(") {  // an attribute macro's arguments
          int depth = 0;
          do {
            depth += t[j] == "(" ? 1 : t[j] == ")" ? -1 : 0;
            j++;
          } while (j < t.size() && depth > 0);
        } else if (IsIdentifier(t[j]) && t[j] != "final") {
          name = t[j++];
        } else {
          break;
        }
      }
      if (j < t.size() && t[j] == "final") j++;
      if (!name.empty() && j < t.size() && (t[j] == "{" || t[j] == ":")) {
        out.insert(name);
        if (t[i] == "enum") enums->insert(name);
      }
    }
  }
  return out;
}

// Everything the checks look names up in, read once.
struct Tree {
  std::vector<std::set<std::string>> file_words;           // bare words, per source file
  std::map<std::string, std::vector<size_t>> scope_files;  // scope -> the files defining it
  std::set<std::string> enums;                             // the scopes that are enums
  std::set<std::string> spelled_pairs;                     // "a::b" as the code writes it
  std::set<std::string> bare_words, code_words;            // all files' (see Views)
  std::string code_text, code_text_lower;                  // all files' code, concatenated
  std::set<std::string> file_names;                        // every file's name in the tree
  std::set<std::string> flags;                             // --flags of the commands
  std::string makefiles;                                   // the Makefile and every *.mk
};

// Calls fn(path, relative path) for every file under `dir` but hidden
// folders and build/. A file removed meanwhile (others edit the tree) is
// skipped.
template <class Fn>
void ForEachFile(const std::string& dir, Fn fn) {
  std::error_code ec;
  const auto options = fs::directory_options::skip_permission_denied;
  for (auto it = fs::recursive_directory_iterator(kRoot + "/" + dir, options, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path rel = fs::relative(it->path(), kRoot, ec);
    const std::string name = it->path().filename().string();
    if (it->is_directory(ec)) {
      if (name[0] == '.' || rel == "build") it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) fn(it->path(), rel.string());
  }
}

using ::tw::testing::FlagNames;

const Tree& TheTree() {
  static const Tree* tree = [] {
    auto* t = new Tree;
    auto is_source = [](const fs::path& p) {
      const std::string e = p.extension().string();
      return e == ".h" || e == ".cc" || e == ".inc" || e == ".cu" || e == ".cuh";
    };
    for (const char* dir : {"src", "kernels", "weights_tool"}) {
      ForEachFile(dir, [&](const fs::path& path, const std::string& rel) {
        if (!is_source(path)) return;
        const Views v = StripComments(Read(path));
        const std::vector<std::string> tokens = Tokens(v.bare);
        const size_t index = t->file_words.size();
        t->file_words.push_back({});
        for (size_t i = 0; i < tokens.size(); i++) {
          if (!IsIdentStart(tokens[i][0])) continue;
          t->file_words.back().insert(tokens[i]);
          if (i + 2 < tokens.size() && tokens[i + 1] == "::" && IsIdentStart(tokens[i + 2][0])) {
            t->spelled_pairs.insert(tokens[i] + "::" + tokens[i + 2]);
          }
        }
        t->bare_words.insert(t->file_words.back().begin(), t->file_words.back().end());
        for (const std::string& s : Scopes(tokens, &t->enums)) t->scope_files[s].push_back(index);
        const std::set<std::string> code_words = Words(v.code);
        t->code_words.insert(code_words.begin(), code_words.end());
        t->code_text += v.code;
        if (rel == "src/main.cc" || rel == "src/app/generate_cli.cc" || rel.starts_with("weights_tool/")) {
          const std::set<std::string> f = FlagNames(v.strings);
          t->flags.insert(f.begin(), f.end());
        }
      });
    }
    t->code_text_lower = t->code_text;
    for (char& c : t->code_text_lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::set<std::string> serve = FlagNames(app::ServeHelp());
    t->flags.insert(serve.begin(), serve.end());
    ForEachFile(".", [&](const fs::path& path, const std::string&) {
      const std::string name = path.filename().string();
      t->file_names.insert(name);
      if (name == "Makefile" || path.extension() == ".mk") t->makefiles += Read(path) + "\n";
    });
    return t;
  }();
  return *tree;
}

// One inline code span (or diagram name) and the line it starts on.
struct Span {
  std::string text;
  int line;
  bool in_diagram;
  int paragraph;  // a blank line or a list item starts the next
};

std::vector<Span> Spans(const std::string& doc) {
  std::vector<Span> out;
  std::vector<std::string> lines = Split(doc, "\n");
  bool fenced = false;
  std::string open;  // a span continued onto the next line
  int open_line = 0;
  int paragraph = 0;
  for (size_t n = 0; n < lines.size(); n++) {
    const std::string& l = lines[n];
    const int line = static_cast<int>(n) + 1;
    const size_t first = l.find_first_not_of(' ');
    const bool numbered = first != std::string::npos && std::isdigit(static_cast<unsigned char>(l[first])) &&
                          l.find(". ", first) == l.find_first_not_of("0123456789", first);  // "8. "
    if (first == std::string::npos || l.compare(first, 2, "- ") == 0 || numbered) paragraph++;
    if (l.starts_with("```")) {
      fenced = !fenced;
      continue;
    }
    if (fenced) {  // the diagram: its qualified names (a::B, no spaces) only
      for (size_t i = 0; i < l.size(); i++) {
        if (!IsIdentStart(l[i]) || (i > 0 && IsIdentChar(l[i - 1]))) continue;
        size_t j = i;
        while (j < l.size() && (IsIdentChar(l[j]) || (l.compare(j, 2, "::") == 0 && j + 2 < l.size() &&
                                                      IsIdentStart(l[j + 2])))) {
          j += l[j] == ':' ? 2 : 1;
        }
        const std::string name = l.substr(i, j - i);
        if (name.find("::") != std::string::npos) out.push_back({name, line, true, paragraph});
        i = j;
      }
      continue;
    }
    size_t p = 0;
    if (!open.empty() || open_line != 0) {  // inside a span from an earlier line
      size_t q = l.find('`');
      size_t from = l.find_first_not_of(' ');
      if (q == std::string::npos) {
        open += " " + l.substr(from == std::string::npos ? l.size() : from);
        continue;
      }
      open += " " + l.substr(from, q - from);
      out.push_back({open, open_line, false, paragraph});
      open.clear();
      open_line = 0;
      p = q + 1;
    }
    while ((p = l.find('`', p)) != std::string::npos) {
      size_t q = l.find('`', p + 1);
      if (q == std::string::npos) {
        open = l.substr(p + 1);
        open_line = line;
        break;
      }
      out.push_back({l.substr(p + 1, q - p - 1), line, false, paragraph});
      p = q + 1;
    }
  }
  return out;
}

bool HasLower(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); });
}
bool HasUpper(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
}

// Whether b is a member of a: a word of a file that defines a, or spelled a::b.
bool InScope(const Tree& t, const std::string& a, const std::string& b) {
  if (t.spelled_pairs.count(a + "::" + b)) return true;
  auto files = t.scope_files.find(a);
  if (files == t.scope_files.end()) return false;
  return std::any_of(files->second.begin(), files->second.end(),
                     [&](size_t f) { return t.file_words[f].count(b) > 0; });
}

bool IsEnumerator(const std::string& s) {
  return s.size() > 1 && s[0] == 'k' && std::isupper(static_cast<unsigned char>(s[1])) && IsIdentifier(s);
}

// Why `span` names nothing, or "" when it names something that exists.
// `enum_context`: the enum its paragraph named last ("" if none).
std::string Check(const Tree& t, std::string s, const std::string& enum_context = "") {
  std::string why;
  for (const std::string& f : FlagNames(s)) {
    if (!t.flags.count(f)) why += f + " is no flag of tokenwire serve --help or a command's usage; ";
  }
  if (s.starts_with("--")) return why;
  static const std::string kMethods[] = {"GET /", "POST /", "DELETE /", "PUT /", "PATCH /"};
  for (const std::string& m : kMethods) {
    if (s.starts_with(m)) s = s.substr(m.size() - 1);
  }
  if (s.starts_with("make ")) {
    for (const std::string& target : Split(s.substr(5), " ")) {
      if (target.find('=') != std::string::npos) break;  // VAR=value: the rest is its value
      if (target.empty() || target[0] == '-') continue;   // -j2
      bool found = false;
      for (const std::string& line : Split(t.makefiles, "\n")) {
        if (line.starts_with(target + ":") && !line.starts_with(target + ":=")) found = true;
      }
      if (!found) why += "no Makefile target " + target + "; ";
    }
  } else if (s.size() > 1 && s[0] == '-' && std::isalpha(static_cast<unsigned char>(s[1]))) {
    if (t.makefiles.find(s) == std::string::npos) why += "the Makefile does not pass " + s + "; ";
  } else if (s[0] == '/') {  // an HTTP route
    std::string path = s.substr(0, s.find_first_of("? "));
    if (t.code_text.find("\"" + path) == std::string::npos) why += "no route " + path + " in src/; ";
  } else if (s.find(' ') == std::string::npos && s.find('/') != std::string::npos) {  // a path
    std::string path = s.substr(0, s.find('<'));  // src/<layer>/: check src/
    if (!fs::exists(kRoot + "/" + path) && !fs::exists(kRoot + "/src/" + path)) {
      why += "no such path under the root or src/; ";
    }
  } else if (s.find(' ') == std::string::npos && s.find('.') != std::string::npos && s[0] != '.' &&
             IsIdentifier(s.substr(0, s.find('.')))) {  // a file name
    if (!t.file_names.count(s)) why += "no file of that name in the tree; ";
  } else {
    // A header: Name-Name or Name-Name: value.
    std::string head = s.substr(0, s.find(':'));
    bool header = HasUpper(head) && head.find('-') != std::string::npos &&
                  std::all_of(head.begin(), head.end(), [](char c) { return IsIdentChar(c) || c == '-'; }) &&
                  (head.size() == s.size() || s.compare(head.size(), 2, ": ") == 0);
    if (header) {
      std::string lower = head;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (t.code_text_lower.find(lower) == std::string::npos) why += "no header " + head + " in src/; ";
      return why;
    }
    // A name, perhaps called: Name(args), a::B(args).
    bool called = false;
    if (s.ends_with(")") && s.find('(') != std::string::npos) {
      s = s.substr(0, s.find('('));
      called = true;
    }
    bool directive = false;
    if (!s.empty() && (s[0] == '.' || s[0] == '#')) {  // .incbin, #include
      s = s.substr(1);
      directive = true;
    }
    const std::vector<std::string> parts = Split(s, "::");
    if (!std::all_of(parts.begin(), parts.end(), IsIdentifier)) return why;  // text
    if (parts.size() > 1) {
      for (size_t i = 0; i + 1 < parts.size(); i++) {
        if (!InScope(t, parts[i], parts[i + 1])) {
          why += parts[i + 1] + " is not in a file that defines " + parts[i] + "; ";
        }
      }
    } else if (!enum_context.empty() && IsEnumerator(s)) {
      if (!InScope(t, enum_context, s)) why += s + " is not an enumerator of " + enum_context + "; ";
    } else if ((HasLower(s) && HasUpper(s)) || (called && !directive)) {
      if (!t.bare_words.count(s)) why += "no identifier " + s + " in the code; ";
    } else if (!t.code_words.count(s)) {
      why += "no word " + s + " in the code; ";
    }
  }
  return why;
}

// The check over one document; returns how many spans it checked.
int CheckDocument(const std::string& relative) {
  const std::string doc = Read(kRoot + "/" + relative);
  EXPECT_FALSE(doc.empty()) << relative;
  const Tree& t = TheTree();
  std::string missing;
  int checked = 0;
  std::string enum_context;
  int context_paragraph = -1;
  for (Span s : Spans(doc)) {
    std::string text;
    for (char c : s.text) {  // a span broken across lines reads as one line
      if (c == ' ' && !text.empty() && text.back() == ' ') continue;
      text += c;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    while (!text.empty() && text[0] == ' ') text.erase(0, 1);
    if (text.empty() || kNotCode.count(text)) continue;
    checked++;
    const std::string why = Check(t, text, s.paragraph == context_paragraph ? enum_context : "");
    const std::string name = text.substr(0, text.find('('));
    const size_t last = name.rfind("::");
    if (last != std::string::npos && t.enums.count(name.substr(last + 2))) {
      enum_context = name.substr(last + 2);
      context_paragraph = s.paragraph;
    }
    if (!why.empty()) {
      missing += "  " + relative + ":" + std::to_string(s.line) + ": `" + text + "`" +
                 (s.in_diagram ? " (diagram)" : "") + ": " + why.substr(0, why.size() - 2) + "\n";
    }
  }
  EXPECT_TRUE(missing.empty()) << relative << " cites names the code does not have:\n" << missing;
  return checked;
}

// Each with enough spans that a broken extractor cannot pass by checking
// nothing.
TEST(DocNames, EveryNameArchitectureCitesExists) { EXPECT_GT(CheckDocument("docs/ARCHITECTURE.md"), 200); }
TEST(DocNames, EveryNameTheWebSocketDocCitesExists) { EXPECT_GT(CheckDocument("docs/websocket.md"), 50); }

TEST(DocNames, TheCheckCatchesWhatIsGone) {
  const Tree& t = TheTree();
  for (const char* gone : {"--no-such-flag", "make no-such-target", "src/no_such_file.h", "common/no_such.h",
                           "stream::NoSuchClass", "StreamHub::NoSuchMethod", "stream::DeliverResult::kQueued",
                           "NoSuchFunction()", "no_such_wire_name", "kNoSuchValue", "GET /v1/no-such-route",
                           "X-No-Such-Header", "no_such_file.inc", "-Wno-such-warning"}) {
    EXPECT_NE(Check(t, gone), "") << gone;
  }
  EXPECT_NE(Check(t, "kQueued", "DeliverResult"), "") << "net::WriteResult's, not stream::DeliverResult's";
  EXPECT_EQ(Check(t, "kNoRoom", "DeliverResult"), "");
  for (const char* there : {"--max-batch", "--top-k", "--shape", "tokenwire serve --help", "make test", "src/net/", "common/api_error.h", "stream::StreamHub",
                            "StreamHub::Attach", "stream::DeliverResult::kTaken", "step()", "overloaded",
                            "kTaken", "GET /v1/streams/{id}/events", "Retry-After", "kernels_simd.inc",
                            "-Wthread-safety", "id: 1 / event: start / data: …", "t % block_size"}) {
    EXPECT_EQ(Check(t, there), "") << there;
  }
}

}  // namespace
}  // namespace tw
