// Checked reads of single request fields, shared by our own generation
// request (service/generation_request.h) and OpenAI's two requests
// (src/openai): one reader per kind of value, one wording per kind of
// refusal, and the sampling controls all three APIs spell alike.
//
// Every refusal names the field, the value and what is allowed:
//   temperature: 2.5 is out of range; expected a number in [0, 2]
//   stream: expected a boolean, got the string "yes"
// A wrong JSON type is 400, a value out of range 422 (our API's split,
// DESIGN.md §4; OpenAI's parsers answer both with 400: openai::ForOpenAi).
// err->param is the field.
//
// The sampling controls (vLLM's names and meanings, vllm/sampling_params.py;
// docs/openai.md has the table): top_k, min_p, repetition_penalty,
// presence_penalty, frequency_penalty, logit_bias, min_tokens, ignore_eos,
// stop_token_ids. Each is read into the backend::GenerationRequest field of
// the same name; null means its default (off).
//
// Threads: pure functions (prep threads call them).
// Memory: a logit_bias or stop_token_ids list, bounded by RequestBounds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "common/api_error.h"
#include "json/json.h"
#include "service/generation_request.h"

namespace tw::service {

// A temperature below this is greedy (0): the one place every API's
// temperature passes through (EffectiveTemperature). vLLM's _SAMPLING_EPS;
// below it 1/T overflows what the logits can carry meaningfully.
inline constexpr double kMinTemperature = 1e-5;
// repetition_penalty is in (0, kMaxRepetitionPenalty]: vLLM sets no upper
// bound; past 10 a seen token's logit is already scaled out of any top-p
// cut, and a larger value is a client's mistake.
inline constexpr double kMaxRepetitionPenalty = 10.0;
// presence_penalty and frequency_penalty are in [-2, 2] (OpenAI, vLLM).
inline constexpr double kMaxAbsPenalty = 2.0;
// logit_bias values are in [-100, 100] (OpenAI).
inline constexpr double kMaxAbsLogitBias = 100.0;

// The temperature the sampler gets: 0 (greedy) below kMinTemperature.
float EffectiveTemperature(double temperature);

// How a refusal names a JSON value: `the string "yes"` (long strings cut),
// `the number 2.5`, `the boolean true`, `null`, `an array`, `an object`.
std::string DescribeJson(const json::Value& v);
// A number as the messages print it (the shortest exact form: 2, 0.5, 1e-05).
std::string FormatNumber(double d);

// 400 "<field>: expected <want>, got <DescribeJson(got)>". Returns false.
bool WrongType(ApiError* err, std::string_view field, std::string_view want, const json::Value& got);
// 422 "<field>: <value> is out of range; expected <expected>". Returns false.
bool OutOfRange(ApiError* err, std::string_view field, std::string_view value, std::string_view expected);

// A number in [lo, hi] ((lo, hi] when lo_open); an integer in [lo, hi]; a
// boolean. `note` is added to a range refusal in parentheses (the flag that
// sets the bound). False with *err filled on a refusal.
bool ReadNumber(const json::Value& v, std::string_view field, double lo, double hi, bool lo_open, double* out,
                ApiError* err);
bool ReadInt(const json::Value& v, std::string_view field, int64_t lo, int64_t hi, int64_t* out, ApiError* err,
             std::string_view note = {});
bool ReadBool(const json::Value& v, std::string_view field, bool* out, ApiError* err);

// A token id in [0, bounds.vocab_size): "<where>: expected an integer token
// id, got ..." or "<where>: 50257 is out of range; expected a token id in
// [0, 50256]".
bool ReadTokenId(const json::Value& v, std::string_view where, const RequestBounds& bounds, int32_t* out,
                 ApiError* err);

// stop: a string or an array of up to bounds.max_stop_strings strings of
// 1..bounds.max_stop_bytes bytes (null: none). err->param is "stop", the
// message names the item ("stop[2]").
bool ReadStop(const json::Value& v, const RequestBounds& bounds, std::vector<std::string>* out, ApiError* err);

enum class FieldRead {
  kNotMine,  // not a sampling control: the caller goes on with its own fields
  kRead,     // read into *out
  kRefused,  // *err says why
};

// One member of a request body, if it is a sampling control or a
// structured-output field (service/structured_output.h) (top_k: -1 or
// 0 = off, else 1..; min_p [0, 1]; repetition_penalty (0, 10]; presence and
// frequency penalties [-2, 2]; logit_bias an object of token-id strings to
// numbers in [-100, 100], at most bounds.max_logit_bias entries; min_tokens
// >= 0; ignore_eos a boolean; stop_token_ids up to
// bounds.max_stop_token_ids ids; and the scheduling priority, an int32,
// lower first). Token ids are in [0, bounds.vocab_size).
FieldRead ReadSamplingField(std::string_view key, const json::Value& val, const RequestBounds& bounds,
                            backend::GenerationRequest* out, ApiError* err);

// After every member is read: min_tokens <= max_new_tokens; `max_field`
// names the max as the API spells it ("max_tokens", "max_new_tokens").
bool CheckMinTokens(const backend::GenerationRequest& r, std::string_view max_field, ApiError* err);

}  // namespace tw::service
