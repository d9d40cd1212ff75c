// The official JSON Schema Test Suite (tests/data/grammar/json-schema-test-
// suite/, draft 2020-12) against grammar/json_schema.h and the validator
// (tests/grammar/json_validator.h). Shared by json_schema_suite_test.cc (the
// keywords that need no regular expression) and json_schema_regex_test.cc
// (pattern and format, which need grammar/regex.cc).
//
// For each case (a schema and its tests):
//  1. the schema compiles, or its compile fails naming a keyword the schema
//     uses ("/: 'multipleOf' is not supported"): a refused case, listed;
//     and a schema that compiles uses no refused keyword outside $defs;
//  2. the validator's verdict on each test's instance is the suite's `valid`;
//  3. the grammar (strict=false; max_whitespace 0 and 2) accepts the
//     instance's canonical text -- compact, each object's keys in the schema's
//     property order, then the others -- exactly when it is valid; except for
//     the tests named in an explicit exception list, where the grammar is
//     documented to differ (each exception must still differ: a stale one
//     fails the test, and so does one that names no test of the files). A key
//     "validator: <test>" excepts the validator's verdict the same way.
// json::Serialize writes an integer-valued double as an integer (1.0 as
// "1"), so the suite's 1.0-is-an-integer tests reach the grammar as "1";
// a value equal to a const or enum value is written as the schema writes it.
// Threads: test code, one thread. Memory: the files, a grammar per case.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar/json_validator.h"
#include "support/recognizer.h"
#include "json/json.h"

namespace tw::grammar::testing {

struct SuiteTest {
  std::string description;
  json::Value data;
  bool valid = false;
};

struct SuiteCase {
  std::string file;  // relative to the suite's folder: "type.json"
  std::string description;
  json::Value schema;
  std::vector<SuiteTest> tests;
};

inline const std::string& SuiteDir() {
  static const std::string dir = std::string(TW_SOURCE_DIR) + "/tests/data/grammar/json-schema-test-suite/";
  return dir;
}

// Every case of one file of the suite.
inline std::vector<SuiteCase> LoadSuiteFile(const std::string& file) {
  std::ifstream in(SuiteDir() + file, std::ios::binary);
  EXPECT_TRUE(in.good()) << file;
  std::stringstream ss;
  ss << in.rdbuf();
  json::Value doc;
  json::ParseLimits limits;
  limits.max_bytes = 1 << 24;
  const Status s = json::Parse(ss.str(), &doc, limits);
  EXPECT_TRUE(s.ok()) << file << ": " << s.message();
  std::vector<SuiteCase> out;
  for (const json::Value& c : doc.items()) {
    SuiteCase sc;
    sc.file = file;
    sc.description = c.Find("description")->as_string();
    sc.schema = *c.Find("schema");
    for (const json::Value& t : c.Find("tests")->items()) {
      sc.tests.push_back({t.Find("description")->as_string(), *t.Find("data"), t.Find("valid")->as_bool()});
    }
    out.push_back(std::move(sc));
  }
  return out;
}

// Calls f(keyword, value) for every keyword of every schema object in
// `schema` (following the applicators; $defs / definitions only when
// `with_defs`).
template <typename F>
void ForEachKeyword(const json::Value& schema, bool with_defs, const F& f) {
  if (!schema.is_object()) return;
  static const std::set<std::string> kMapOfSchemas = {"properties", "patternProperties", "dependentSchemas"};
  static const std::set<std::string> kSchema = {"items",
                                                "additionalProperties",
                                                "not",
                                                "if",
                                                "then",
                                                "else",
                                                "contains",
                                                "propertyNames",
                                                "unevaluatedItems",
                                                "unevaluatedProperties",
                                                "additionalItems"};
  static const std::set<std::string> kListOfSchemas = {"prefixItems", "anyOf", "oneOf", "allOf"};
  for (const auto& [k, v] : schema.members()) {
    f(k, v);
    if (kMapOfSchemas.count(k) || (with_defs && (k == "$defs" || k == "definitions"))) {
      for (const auto& [unused, sub] : v.members()) ForEachKeyword(sub, with_defs, f);
    } else if (kSchema.count(k)) {
      if (v.is_array()) {
        for (const json::Value& sub : v.items()) ForEachKeyword(sub, with_defs, f);
      } else {
        ForEachKeyword(v, with_defs, f);
      }
    } else if (kListOfSchemas.count(k)) {
      for (const json::Value& sub : v.items()) ForEachKeyword(sub, with_defs, f);
    }
  }
}

// Whether compiling `schema` needs grammar/regex.cc: a pattern, or a format
// the compiler turns into a regular expression.
inline bool NeedsRegex(const json::Value& schema) {
  bool needs = false;
  ForEachKeyword(schema, true, [&](const std::string& k, const json::Value& v) {
    needs = needs || (v.is_string() && (k == "pattern" || k == "format"));
  });
  return needs;
}

// The keywords the compiler refuses by name (json_schema.h).
inline bool IsRefusedKeyword(const std::string& k, const json::Value& v) {
  static const std::set<std::string> kRefused = {"multipleOf",
                                                 "contains",
                                                 "minContains",
                                                 "maxContains",
                                                 "not",
                                                 "if",
                                                 "then",
                                                 "else",
                                                 "dependentRequired",
                                                 "dependentSchemas",
                                                 "dependencies",
                                                 "patternProperties",
                                                 "propertyNames",
                                                 "unevaluatedItems",
                                                 "unevaluatedProperties",
                                                 "$dynamicRef",
                                                 "$dynamicAnchor",
                                                 "$recursiveRef",
                                                 "$recursiveAnchor",
                                                 "minProperties",
                                                 "maxProperties",
                                                 "additionalItems"};
  return kRefused.count(k) || (k == "uniqueItems" && !(v.is_bool() && !v.as_bool()));
}

// The instance as the grammar writes it: compact; each object's members in
// the order of the schema's `properties`, then `required` names not among
// them, then the others in the instance's order.
inline json::Value Canonical(const json::Value& root, const json::Value& s, const json::Value& v, int depth = 0) {
  if (!s.is_object() || depth > 64) return v;
  if (const json::Value* r = s.Find("$ref"); r && r->is_string()) {
    const json::Value* target = ResolveRef(root, r->as_string());
    return target ? Canonical(root, *target, v, depth + 1) : v;
  }
  for (const char* k : {"anyOf", "oneOf", "allOf"}) {
    if (const json::Value* alts = s.Find(k)) {
      for (const json::Value& alt : alts->items()) {
        if (ValidateAt(root, alt, v, nullptr)) return Canonical(root, alt, v, depth + 1);
      }
      return v;
    }
  }
  // A value the schema lists is written as the schema writes it.
  if (const json::Value* c = s.Find("const"); c && JsonEqual(*c, v)) return *c;
  if (const json::Value* e = s.Find("enum"); e && e->is_array()) {
    for (const json::Value& x : e->items()) {
      if (JsonEqual(x, v)) return x;
    }
  }
  static const json::Value kTrue = json::Value::Bool(true);
  if (v.is_object()) {
    const json::Value* props = s.Find("properties");
    const json::Value* addl = s.Find("additionalProperties");
    const json::Value& extra = addl ? *addl : kTrue;
    json::Value out = json::Value::Object();
    std::vector<bool> placed(v.members().size(), false);
    auto place = [&](const std::string& name, const json::Value& sub) {
      for (size_t i = 0; i < v.members().size(); ++i) {
        if (placed[i] || v.members()[i].first != name) continue;
        placed[i] = true;
        out.members().push_back({name, Canonical(root, sub, v.members()[i].second, depth + 1)});
      }
    };
    if (props && props->is_object()) {
      for (const auto& [name, sub] : props->members()) place(name, sub);
    }
    if (const json::Value* req = s.Find("required"); req && req->is_array()) {
      for (const json::Value& r : req->items()) {
        if (r.is_string()) place(r.as_string(), extra);
      }
    }
    for (size_t i = 0; i < v.members().size(); ++i) {
      if (!placed[i])
        out.members().push_back({v.members()[i].first, Canonical(root, extra, v.members()[i].second, depth + 1)});
    }
    return out;
  }
  if (v.is_array()) {
    const json::Value* prefix = s.Find("prefixItems");
    const json::Value* items = s.Find("items");
    json::Value out = json::Value::Array();
    for (size_t i = 0; i < v.items().size(); ++i) {
      const json::Value* sub = prefix && prefix->is_array() && i < prefix->items().size() ? &prefix->items()[i] : items;
      out.Push(sub ? Canonical(root, *sub, v.items()[i], depth + 1) : v.items()[i]);
    }
    return out;
  }
  return v;
}

struct SuiteTally {
  int cases = 0, refused = 0, tests = 0, grammar_checks = 0, exceptions = 0, validator_only = 0;
  std::vector<std::string> refused_list;  // "file / case: the compile error"
  std::set<std::string> exceptions_used;
  std::set<std::string> names;  // every test loaded, run or not ("file / case / test")
};

// The name of one test in exception lists: "file / case / test".
inline std::string TestName(const SuiteCase& c, const SuiteTest& t) {
  return c.file + " / " + c.description + " / " + t.description;
}

// The keyword an error message names first ("/x: 'k' ..." -> "k"), or "".
inline std::string NamedKeyword(const std::string& message) {
  const size_t colon = message.find(": '");
  if (colon == std::string::npos) return "";
  const size_t end = message.find('\'', colon + 3);
  return end == std::string::npos ? "" : message.substr(colon + 3, end - colon - 3);
}

// Checks 1-3 above for one case. `grammar_part` false: 2 only (the
// validator), for cases whose grammar needs the regex front end.
inline void RunSuiteCase(const SuiteCase& c, const std::map<std::string, std::string>& exceptions, bool grammar_part,
                         SuiteTally* tally) {
  ++tally->cases;
  for (const SuiteTest& t : c.tests) tally->names.insert(TestName(c, t));
  const std::string where = c.file + " / " + c.description;
  std::vector<Grammar> grammars;
  if (grammar_part) {
    for (int ws : {0, 2}) {
      JsonSchemaOptions o;
      o.strict = false;
      o.max_whitespace = ws;
      Grammar g;
      const Status s = JsonSchemaGrammar(c.schema, o, GrammarLimits(), &g);
      if (!s.ok()) {
        // 1: refused, naming a keyword the schema uses.
        std::set<std::string> used;
        ForEachKeyword(c.schema, true, [&](const std::string& k, const json::Value&) { used.insert(k); });
        const std::string k = NamedKeyword(s.message());
        EXPECT_TRUE(used.count(k) || s.message() == "/: the schema matches nothing")
            << where << ": the error names no keyword of the schema: " << s.message();
        if (ws == 0) {
          ++tally->refused;
          tally->refused_list.push_back(where + ": " + s.message());
        }
        return;
      }
      grammars.push_back(std::move(g));
    }
    // A schema that compiles uses no refused keyword (outside $defs).
    ForEachKeyword(c.schema, false, [&](const std::string& k, const json::Value& v) {
      EXPECT_FALSE(IsRefusedKeyword(k, v)) << where << " compiled but uses '" << k << "'";
    });
  } else {
    ++tally->validator_only;
  }
  for (const SuiteTest& t : c.tests) {
    ++tally->tests;
    const std::string name = TestName(c, t);
    std::string why;
    const bool verdict = Validate(c.schema, t.data, &why);
    if (const auto v = exceptions.find("validator: " + name); v != exceptions.end()) {
      EXPECT_NE(verdict, t.valid) << "stale exception (the validator now agrees): " << name;
      if (tally->exceptions_used.insert(v->first).second) ++tally->exceptions;
    } else {
      EXPECT_EQ(verdict, t.valid) << "validator: " << name << " (" << why << ") " << json::Serialize(t.data);
    }
    if (grammars.empty()) continue;
    const std::string text = json::Serialize(Canonical(c.schema, c.schema, t.data));
    const auto exception = exceptions.find(name);
    for (const Grammar& g : grammars) {
      ++tally->grammar_checks;
      const bool accepted = Accepts(g, text);
      if (exception != exceptions.end()) {
        EXPECT_NE(accepted, t.valid) << "stale exception (the grammar now agrees): " << name;
      } else {
        EXPECT_EQ(accepted, t.valid) << "grammar: " << name << ": " << text;
      }
    }
    if (exception != exceptions.end() && tally->exceptions_used.insert(name).second) ++tally->exceptions;
  }
}

// After every case: each exception names a test of the files (one whose
// case was refused does not run, and its exception is not counted); the
// summary.
inline void FinishSuite(const char* title, const SuiteTally& tally,
                        const std::map<std::string, std::string>& exceptions) {
  for (const auto& [name, reason] : exceptions) {
    const std::string test = name.rfind("validator: ", 0) == 0 ? name.substr(11) : name;
    EXPECT_TRUE(tally.names.count(test)) << "an exception names no test of the suite's files: " << name;
  }
  std::printf(
      "%s: %d cases (%d tests): %d refused, %d compiled; %d grammar checks; %d exceptions; %d cases "
      "validator-only\n",
      title, tally.cases, tally.tests, tally.refused, tally.cases - tally.refused - tally.validator_only,
      tally.grammar_checks, tally.exceptions, tally.validator_only);
  for (const std::string& r : tally.refused_list) std::printf("  refused: %s\n", r.c_str());
  for (const auto& [name, reason] : exceptions) std::printf("  exception: %s -- %s\n", name.c_str(), reason.c_str());
}

}  // namespace tw::grammar::testing
