// The structured-output fields of a generation request, read the same way
// by all three APIs (our own, OpenAI's completions and chat; the WebSocket
// `generate` op is our own API): each names a grammar the generated text
// must follow, compiled on the prep thread that reads it
// (grammar/compiler.h) into backend::GenerationRequest::grammar.
//
//   response_format        OpenAI: {"type":"text"} (none), {"type":"json_object"},
//                          {"type":"json_schema","json_schema":{"name":..,"schema":{..},"strict":..}};
//                          llama-server's {"type":"json_object","schema":{..}} too
//   guided_json            vLLM: a JSON Schema (an object, or its text)
//   guided_regex           vLLM: a regular expression the whole output matches
//   guided_choice          vLLM: an array of strings, the output one of them
//   guided_grammar         vLLM: a GBNF grammar
//   structured_outputs     vLLM's newer object: one of json, regex, choice,
//                          grammar, json_object
//   json_schema            llama-server: a JSON Schema
//   grammar                llama-server: a GBNF grammar
// At most one per request. A refusal is 400 invalid_request naming the
// field (param) and what is wrong with it: the keyword and its place in a
// schema, the line and column of a grammar, the column of a regex, or the
// bound passed (a --grammar-* flag).
//
// Threads: pure functions but for the compiler's cache (thread-safe).
#pragma once

#include <memory>
#include <string_view>

#include "backend/backend.h"
#include "common/api_error.h"
#include "json/json.h"
#include "service/generation_request.h"
#include "service/request_fields.h"

namespace tw::tokenizer {
class Tokenizer;
}
namespace tw::grammar {
class Vocabulary;
}

namespace tw::service {

// `tok`'s tokens as a model of `vocab_size` ids sees them, for the grammar
// matcher: each id's bytes, none for end-of-text and for ids past the
// tokenizer (a padded vocabulary). Built once per served model.
std::shared_ptr<const grammar::Vocabulary> GrammarVocabulary(const tokenizer::Tokenizer& tok, int vocab_size);

// One member of a request body, if it is a structured-output field.
FieldRead ReadStructuredField(std::string_view key, const json::Value& val, const RequestBounds& bounds,
                              backend::GenerationRequest* out, ApiError* err);

}  // namespace tw::service
