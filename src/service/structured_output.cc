#include "service/structured_output.h"

#include <string>

#include "grammar/compiler.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"

namespace tw::service {

namespace {

constexpr const char* kFields =
    "response_format, guided_json, guided_regex, guided_choice, guided_grammar, structured_outputs, json_schema, "
    "grammar";

bool Refuse(ApiError* err, std::string_view field, std::string message) {
  *err = ApiError::Make(ErrorCode::kInvalidRequest, std::string(field) + ": " + std::move(message));
  err->param = std::string(field);
  return false;
}

// A JSON Schema given as an object or as its text.
bool SchemaSpec(std::string_view field, const json::Value& v, grammar::GrammarSpec* spec, ApiError* err) {
  spec->kind = grammar::GrammarKind::kJsonSchema;
  if (v.is_string()) {
    spec->source = v.as_string();
    return true;
  }
  if (v.is_object() || v.is_bool()) {
    spec->source = json::Serialize(v);
    return true;
  }
  return WrongType(err, field, "a JSON Schema (an object, or its text)", v);
}

bool TextSpec(std::string_view field, const json::Value& v, grammar::GrammarKind kind, const char* what,
              grammar::GrammarSpec* spec, ApiError* err) {
  if (!v.is_string()) return WrongType(err, field, what, v);
  spec->kind = kind;
  spec->source = v.as_string();
  return true;
}

bool ChoiceSpec(std::string_view field, const json::Value& v, grammar::GrammarSpec* spec, ApiError* err) {
  if (!v.is_array() || v.items().empty()) return WrongType(err, field, "a non-empty array of strings", v);
  spec->kind = grammar::GrammarKind::kChoice;
  for (size_t i = 0; i < v.items().size(); i++) {
    const json::Value& c = v.items()[i];
    if (!c.is_string() || c.as_string().empty()) {
      return WrongType(err, std::string(field) + "[" + std::to_string(i) + "]", "a non-empty string", c);
    }
    spec->choices.push_back(c.as_string());
  }
  return true;
}

// OpenAI's response_format; *spec untouched (and true) for {"type":"text"}.
bool ResponseFormatSpec(const json::Value& v, grammar::GrammarSpec* spec, bool* none, ApiError* err) {
  const std::string_view field = "response_format";
  const json::Value* type = v.is_object() ? v.Find("type") : nullptr;
  if (type == nullptr || !type->is_string()) {
    return WrongType(err, field, "an object with a \"type\" of text, json_object or json_schema", v);
  }
  const std::string& t = type->as_string();
  if (t == "text") {
    *none = true;
    return true;
  }
  if (t == "json_object") {
    // llama-server's form carries a schema.
    if (const json::Value* schema = v.Find("schema"); schema != nullptr && !schema->is_null()) {
      return SchemaSpec("response_format.schema", *schema, spec, err);
    }
    spec->kind = grammar::GrammarKind::kJsonObject;
    return true;
  }
  if (t == "json_schema") {
    const json::Value* js = v.Find("json_schema");
    if (js == nullptr || !js->is_object()) {
      return WrongType(err, "response_format.json_schema", "an object with a \"schema\"",
                       js == nullptr ? json::Value() : *js);
    }
    const json::Value* schema = js->Find("schema");
    if (schema == nullptr) return Refuse(err, field, "json_schema has no \"schema\"");
    if (const json::Value* strict = js->Find("strict"); strict != nullptr && !strict->is_null() && !strict->is_bool()) {
      return WrongType(err, "response_format.json_schema.strict", "a boolean", *strict);
    }
    return SchemaSpec("response_format.json_schema.schema", *schema, spec, err);
  }
  return Refuse(err, field, "type \"" + t + "\" is not one of text, json_object, json_schema");
}

// vLLM's structured_outputs: exactly one of its members.
bool StructuredOutputsSpec(const json::Value& v, grammar::GrammarSpec* spec, ApiError* err) {
  const std::string_view field = "structured_outputs";
  if (!v.is_object()) return WrongType(err, field, "an object", v);
  int given = 0;
  for (const auto& [k, m] : v.members()) {
    if (m.is_null()) continue;
    const std::string where = std::string(field) + "." + k;
    bool ok;
    if (k == "json") {
      ok = SchemaSpec(where, m, spec, err);
    } else if (k == "regex") {
      ok = TextSpec(where, m, grammar::GrammarKind::kRegex, "a regular expression", spec, err);
    } else if (k == "choice") {
      ok = ChoiceSpec(where, m, spec, err);
    } else if (k == "grammar") {
      ok = TextSpec(where, m, grammar::GrammarKind::kGbnf, "a GBNF grammar", spec, err);
    } else if (k == "json_object") {
      if (!m.is_bool()) return WrongType(err, where, "a boolean", m);
      if (!m.as_bool()) continue;
      spec->kind = grammar::GrammarKind::kJsonObject;
      ok = true;
    } else if (k == "disable_any_whitespace" || k == "disable_additional_properties" || k == "whitespace_pattern" ||
               k == "structural_tag") {
      return Refuse(err, field, "\"" + k + "\" is not supported (whitespace is bounded by --json-max-whitespace)");
    } else {
      return Refuse(err, field, "unknown member \"" + k + "\" (expected json, regex, choice, grammar or json_object)");
    }
    if (!ok) return false;
    given++;
  }
  if (given != 1) return Refuse(err, field, "give exactly one of json, regex, choice, grammar, json_object");
  return true;
}

}  // namespace

std::shared_ptr<const grammar::Vocabulary> GrammarVocabulary(const tokenizer::Tokenizer& tok, int vocab_size) {
  std::vector<std::string> bytes(static_cast<size_t>(vocab_size));
  const int32_t eos = tok.end_of_text_id();
  for (int id = 0; id < vocab_size && id < static_cast<int>(tok.vocab_size()); ++id) {
    if (id != eos) bytes[static_cast<size_t>(id)] = std::string(tok.TokenBytes(id));
  }
  return std::make_shared<const grammar::Vocabulary>(std::move(bytes), eos);
}

FieldRead ReadStructuredField(std::string_view key, const json::Value& val, const RequestBounds& bounds,
                              backend::GenerationRequest* out, ApiError* err) {
  grammar::GrammarSpec spec;
  bool none = false;
  bool ok;
  if (key == "response_format") {
    if (val.is_null()) return FieldRead::kRead;
    ok = ResponseFormatSpec(val, &spec, &none, err);
  } else if (key == "guided_json" || key == "json_schema") {
    if (val.is_null()) return FieldRead::kRead;
    ok = SchemaSpec(key, val, &spec, err);
  } else if (key == "guided_regex") {
    if (val.is_null()) return FieldRead::kRead;
    ok = TextSpec(key, val, grammar::GrammarKind::kRegex, "a regular expression", &spec, err);
  } else if (key == "guided_choice") {
    if (val.is_null()) return FieldRead::kRead;
    ok = ChoiceSpec(key, val, &spec, err);
  } else if (key == "guided_grammar" || key == "grammar") {
    if (val.is_null() || (key == "grammar" && val.is_string() && val.as_string().empty())) return FieldRead::kRead;
    ok = TextSpec(key, val, grammar::GrammarKind::kGbnf, "a GBNF grammar", &spec, err);
  } else if (key == "structured_outputs") {
    if (val.is_null()) return FieldRead::kRead;
    ok = StructuredOutputsSpec(val, &spec, err);
  } else {
    return FieldRead::kNotMine;
  }
  if (!ok) {
    if (err->param.empty()) err->param = std::string(key);
    return FieldRead::kRefused;
  }
  if (none) return FieldRead::kRead;
  if (out->grammar) {
    Refuse(err, key, std::string("only one structured-output field per request (") + kFields + ")");
    return FieldRead::kRefused;
  }
  if (bounds.grammars == nullptr) {
    Refuse(err, key, "structured output is not available on this server");
    return FieldRead::kRefused;
  }
  if (Status st = bounds.grammars->Compile(spec, &out->grammar); !st.ok()) {
    Refuse(err, key, st.message());
    return FieldRead::kRefused;
  }
  return FieldRead::kRead;
}

}  // namespace tw::service
