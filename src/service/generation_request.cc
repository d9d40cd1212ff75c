#include "service/generation_request.h"

#include <cmath>

#include "tokenizer/tokenizer.h"

namespace tw::service {

namespace {

bool Fail(ApiError* err, int status, ErrorCode code, std::string message) {
  *err = ApiError::Make(code, status, std::move(message));
  return false;
}

bool WrongType(ApiError* err, std::string_view field, std::string_view want) {
  Fail(err, 400, ErrorCode::kInvalidRequest, "field '" + std::string(field) + "' must be " + std::string(want));
  err->param = std::string(field);
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
    if (key == "prompt") {
      if (!val.is_string()) return WrongType(err, key, "a string");
      if (has_prompt) return Fail(err, 400, ErrorCode::kInvalidRequest, "give 'prompt' or 'prompt_tokens', not both");
      has_prompt = true;
      r.prompt_tokens = tokenizer.Encode(val.as_string());
    } else if (key == "prompt_tokens") {
      if (!val.is_array()) return WrongType(err, key, "an array of token ids");
      if (has_prompt) return Fail(err, 400, ErrorCode::kInvalidRequest, "give 'prompt' or 'prompt_tokens', not both");
      has_prompt = true;
      r.prompt_tokens.clear();
      for (size_t i = 0; i < val.items().size(); i++) {
        const json::Value& t = val.items()[i];
        if (!t.is_int()) return WrongType(err, "prompt_tokens[" + std::to_string(i) + "]", "an integer");
        if (t.as_int() < 0 || t.as_int() >= bounds.vocab_size) {
          return Fail(err, 422, ErrorCode::kInvalidRequest,
                      "prompt_tokens[" + std::to_string(i) + "] = " + std::to_string(t.as_int()) +
                          " is not a token id (0.." + std::to_string(bounds.vocab_size - 1) + ")");
        }
        r.prompt_tokens.push_back(static_cast<int32_t>(t.as_int()));
      }
    } else if (key == "max_new_tokens") {
      if (!val.is_int()) return WrongType(err, key, "an integer");
      if (val.as_int() < 1 || val.as_int() > bounds.max_new_tokens) {
        return Fail(err, 422, ErrorCode::kInvalidRequest,
                    "max_new_tokens must be between 1 and " + std::to_string(bounds.max_new_tokens));
      }
      r.max_new_tokens = static_cast<int>(val.as_int());
    } else if (key == "temperature") {
      if (!val.is_number()) return WrongType(err, key, "a number");
      double t = val.as_double();
      if (!(t >= 0.0 && t <= 100.0)) return Fail(err, 422, ErrorCode::kInvalidRequest, "temperature must be between 0 and 100");
      r.temperature = static_cast<float>(t);
    } else if (key == "top_k") {
      if (!val.is_int()) return WrongType(err, key, "an integer");
      if (val.as_int() < 0 || val.as_int() > bounds.vocab_size) {
        return Fail(err, 422, ErrorCode::kInvalidRequest, "top_k must be between 0 (off) and the vocabulary size");
      }
      r.top_k = static_cast<int>(val.as_int());
    } else if (key == "top_p") {
      if (!val.is_number()) return WrongType(err, key, "a number");
      double p = val.as_double();
      if (!(p > 0.0 && p <= 1.0)) return Fail(err, 422, ErrorCode::kInvalidRequest, "top_p must be in (0, 1]");
      r.top_p = static_cast<float>(p);
    } else if (key == "seed") {
      if (!val.is_int()) return WrongType(err, key, "an integer");
      if (val.as_int() < 0) return Fail(err, 422, ErrorCode::kInvalidRequest, "seed must be non-negative");
      r.seed = static_cast<uint64_t>(val.as_int());
      r.has_seed = true;
    } else if (key == "stop") {
      std::vector<const json::Value*> items;
      if (!StopValues(val, &items)) return WrongType(err, key, "a string or an array of strings");
      if (items.size() > bounds.max_stop_strings) {
        return Fail(err, 422, ErrorCode::kInvalidRequest,
                    "at most " + std::to_string(bounds.max_stop_strings) + " stop strings");
      }
      for (const json::Value* it : items) {
        if (!it->is_string()) return WrongType(err, "stop[]", "a string");
        if (it->as_string().empty() || it->as_string().size() > bounds.max_stop_bytes) {
          return Fail(err, 422, ErrorCode::kInvalidRequest,
                      "each stop string must be 1.." + std::to_string(bounds.max_stop_bytes) + " bytes");
        }
        r.stop.push_back(it->as_string());
      }
    } else if (key == "logprobs") {
      // Each token event carries its log-probability and this many alternatives.
      if (!val.is_int()) return WrongType(err, key, "an integer (alternatives per token, 0..20)");
      if (val.as_int() < 0 || val.as_int() > 20) {
        return Fail(err, 422, ErrorCode::kInvalidRequest, "logprobs must be between 0 and 20");
      }
      r.logprobs = static_cast<int>(val.as_int());
    } else if (key == "policy") {
      if (!val.is_string()) return WrongType(err, key, "a string");
      if (!stream::ParsePolicy(val.as_string(), &out->policy)) {
        return Fail(err, 422, ErrorCode::kInvalidRequest,
                    "policy must be drop_slow, pause_producer or pause_then_cancel");
      }
      out->has_policy = true;
    } else if (key == "queue_timeout_ms") {
      if (!val.is_int()) return WrongType(err, key, "an integer");
      if (val.as_int() < 0 || val.as_int() > bounds.max_queue_timeout_ms) {
        return Fail(err, 422, ErrorCode::kInvalidRequest, "queue_timeout_ms out of range");
      }
      r.queue_timeout_ms = val.as_int();
    } else {
      bool allowed = false;
      for (std::string_view a : allow_extra) allowed |= (a == key);
      if (!allowed) return Fail(err, 400, ErrorCode::kInvalidRequest, "unknown field '" + key + "'");
    }
  }
  if (!has_prompt) return Fail(err, 400, ErrorCode::kInvalidRequest, "missing 'prompt' (or 'prompt_tokens')");
  if (r.prompt_tokens.empty()) {
    return Fail(err, 422, ErrorCode::kInvalidRequest, "the prompt must contain at least one token");
  }
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
