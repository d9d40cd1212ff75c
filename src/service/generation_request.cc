#include "service/generation_request.h"

#include <cstdint>

#include "service/request_fields.h"
#include "tokenizer/tokenizer.h"

namespace tw::service {

namespace {

bool Fail(ApiError* err, int status, ErrorCode code, std::string message) {
  *err = ApiError::Make(code, status, std::move(message));
  return false;
}

}  // namespace

bool ParseRequestBody(std::string_view body, const RequestBounds& bounds, json::Value* out, ApiError* err) {
  json::ParseLimits limits;
  limits.max_bytes = body.size() + 1;  // the HTTP layer already bounded the body
  limits.max_depth = bounds.max_json_depth;
  size_t offset = 0;
  Status st = json::Parse(body, out, limits, &offset);
  if (!st.ok()) {
    Fail(err, 400, ErrorCode::kInvalidJson, st.message());
    err->offset = static_cast<int64_t>(offset);
    return false;
  }
  std::string dup;
  if (json::FindDuplicateKey(*out, &dup)) {
    *err = DuplicateKeyError(dup);
    return false;
  }
  return true;
}

bool StopValues(const json::Value& v, std::vector<const json::Value*>* items) {
  items->clear();
  if (v.is_string()) {
    items->push_back(&v);
  } else if (v.is_array()) {
    for (const auto& it : v.items()) items->push_back(&it);
  } else if (!v.is_null()) {
    return false;
  }
  return true;
}

bool ParseGenerationRequest(std::string_view body, const tokenizer::Tokenizer& tokenizer,
                            const RequestBounds& bounds, stream::Policy default_policy,
                            ParsedGeneration* out, ApiError* err,
                            std::initializer_list<std::string_view> allow_extra) {
  json::Value v;
  if (!ParseRequestBody(body, bounds, &v, err)) return false;
  return ParseGenerationObject(v, tokenizer, bounds, default_policy, out, err, allow_extra);
}

bool ParseGenerationObject(const json::Value& v, const tokenizer::Tokenizer& tokenizer,
                           const RequestBounds& bounds, stream::Policy default_policy,
                           ParsedGeneration* out, ApiError* err,
                           std::initializer_list<std::string_view> allow_extra) {
  if (!v.is_object()) return Fail(err, 400, ErrorCode::kInvalidRequest, "the body must be a JSON object");
  backend::GenerationRequest& r = out->request;
  r = backend::GenerationRequest();
  r.max_new_tokens = bounds.default_new_tokens;
  out->policy = default_policy;
  out->has_policy = false;
  bool has_prompt = false;

  for (const auto& [key, val] : v.members()) {
    // The sampling controls every API spells alike (top_k, min_p, the penalties, ...).
    if (FieldRead f = ReadSamplingField(key, val, bounds, &r, err); f != FieldRead::kNotMine) {
      if (f == FieldRead::kRefused) return false;
      continue;
    }
    int64_t i = 0;
    double d = 0;
    if (key == "prompt") {
      if (!val.is_string()) return WrongType(err, key, "a string", val);
      if (has_prompt) return Fail(err, 400, ErrorCode::kInvalidRequest, "give 'prompt' or 'prompt_tokens', not both");
      has_prompt = true;
      r.prompt_tokens = tokenizer.Encode(val.as_string());
      // "" is the start of a document, <|endoftext|>: the rule of OpenAI's
      // completions, for every API (an empty prompt_tokens is refused).
      if (r.prompt_tokens.empty()) r.prompt_tokens.push_back(tokenizer.end_of_text_id());
    } else if (key == "prompt_tokens") {
      if (!val.is_array()) return WrongType(err, key, "an array of token ids", val);
      if (has_prompt) return Fail(err, 400, ErrorCode::kInvalidRequest, "give 'prompt' or 'prompt_tokens', not both");
      has_prompt = true;
      r.prompt_tokens.clear();
      for (size_t j = 0; j < val.items().size(); j++) {
        int32_t id = 0;
        if (!ReadTokenId(val.items()[j], "prompt_tokens[" + std::to_string(j) + "]", bounds, &id, err)) return false;
        r.prompt_tokens.push_back(id);
      }
    } else if (key == "max_new_tokens") {
      if (!ReadInt(val, key, 1, bounds.max_new_tokens, &i, err, "--max-new-tokens")) return false;
      r.max_new_tokens = static_cast<int>(i);
    } else if (key == "temperature") {
      if (!ReadNumber(val, key, 0.0, 100.0, false, &d, err)) return false;
      r.temperature = EffectiveTemperature(d);
    } else if (key == "top_p") {
      if (!ReadNumber(val, key, 0.0, 1.0, true, &d, err)) return false;
      r.top_p = static_cast<float>(d);
    } else if (key == "seed") {
      if (!ReadInt(val, key, 0, INT64_MAX, &i, err)) return false;
      r.seed = static_cast<uint64_t>(i);
      r.has_seed = true;
    } else if (key == "stop") {
      if (!ReadStop(val, bounds, &r.stop, err)) return false;
    } else if (key == "logprobs") {
      // Each token event carries its log-probability and this many alternatives.
      if (!ReadInt(val, key, 0, 20, &i, err, "alternatives per token")) return false;
      r.logprobs = static_cast<int>(i);
    } else if (key == "policy") {
      const char* kPolicies = "drop_slow, pause_producer or pause_then_cancel";
      if (!val.is_string()) return WrongType(err, key, kPolicies, val);
      if (!stream::ParsePolicy(val.as_string(), &out->policy)) {
        return OutOfRange(err, key, json::Serialize(val), kPolicies);
      }
      out->has_policy = true;
    } else if (key == "queue_timeout_ms") {
      if (!ReadInt(val, key, 0, bounds.max_queue_timeout_ms, &i, err)) return false;
      r.queue_timeout_ms = i;
    } else {
      bool allowed = false;
      for (std::string_view a : allow_extra) allowed |= (a == key);
      if (!allowed) {
        Fail(err, 400, ErrorCode::kInvalidRequest, "unknown field '" + key + "'");
        err->param = key;
        return false;
      }
    }
  }
  if (!has_prompt) return Fail(err, 400, ErrorCode::kInvalidRequest, "missing 'prompt' (or 'prompt_tokens')");
  if (r.prompt_tokens.empty()) {
    Fail(err, 422, ErrorCode::kInvalidRequest, "'prompt_tokens' must hold at least one token id");
    err->param = "prompt_tokens";
    return false;
  }
  if (!CheckMinTokens(r, "max_new_tokens", err)) return false;
  int64_t total = static_cast<int64_t>(r.prompt_tokens.size()) + r.max_new_tokens;
  if (total > bounds.context_length) {
    return Fail(err, 422, ErrorCode::kPromptTooLong,
                "prompt tokens (" + std::to_string(r.prompt_tokens.size()) + ") + max_new_tokens (" +
                    std::to_string(r.max_new_tokens) + ") exceed the model context of " +
                    std::to_string(bounds.context_length));
  }
  return true;
}

}  // namespace tw::service
