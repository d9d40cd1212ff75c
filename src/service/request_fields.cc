#include "service/request_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "service/structured_output.h"

namespace tw::service {

namespace {

bool Refuse(ApiError* err, int status, std::string_view field, std::string message) {
  *err = ApiError::Make(ErrorCode::kInvalidRequest, status, std::move(message));
  err->param = std::string(field);
  return false;
}

std::string Interval(double lo, double hi, bool lo_open) {
  return std::string(lo_open ? "(" : "[") + FormatNumber(lo) + ", " + FormatNumber(hi) + "]";
}

std::string TokenIdRange(const RequestBounds& bounds) {
  return "a token id in [0, " + std::to_string(bounds.vocab_size - 1) + "]";
}

bool ReadLogitBias(const json::Value& v, const RequestBounds& bounds, backend::GenerationRequest* out, ApiError* err) {
  out->logit_bias.clear();
  if (!v.is_object()) return WrongType(err, "logit_bias", "an object of token ids to numbers", v);
  if (v.members().size() > bounds.max_logit_bias) {
    return OutOfRange(err, "logit_bias", std::to_string(v.members().size()) + " entries",
                      "at most " + std::to_string(bounds.max_logit_bias) + " (--max-logit-bias)");
  }
  for (const auto& [key, bias] : v.members()) {
    int64_t id = 0;
    auto r = std::from_chars(key.data(), key.data() + key.size(), id);
    if (key.empty() || r.ec != std::errc() || r.ptr != key.data() + key.size()) {
      return Refuse(err, 400, "logit_bias",
                    "logit_bias: the key " + json::Serialize(json::Value::String(key)) +
                        " is not a token id; expected a decimal integer in [0, " +
                        std::to_string(bounds.vocab_size - 1) + "]");
    }
    // The entry is named in the message; the param is the field.
    const std::string where = "logit_bias[\"" + key + "\"]";
    if (id < 0 || id >= bounds.vocab_size) {
      OutOfRange(err, where, std::to_string(id), TokenIdRange(bounds));
      err->param = "logit_bias";
      return false;
    }
    double b = 0;
    if (!ReadNumber(bias, where, -kMaxAbsLogitBias, kMaxAbsLogitBias, false, &b, err)) {
      err->param = "logit_bias";
      return false;
    }
    for (const auto& [seen, unused] : out->logit_bias) {
      if (seen == id) {
        return Refuse(err, 400, "logit_bias", "logit_bias: the token id " + std::to_string(id) + " is given twice");
      }
    }
    out->logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(b));
  }
  return true;
}

bool ReadStopTokenIds(const json::Value& v, const RequestBounds& bounds, backend::GenerationRequest* out,
                      ApiError* err) {
  out->stop_token_ids.clear();
  if (!v.is_array()) return WrongType(err, "stop_token_ids", "an array of token ids", v);
  if (v.items().size() > bounds.max_stop_token_ids) {
    return OutOfRange(err, "stop_token_ids", std::to_string(v.items().size()) + " ids",
                      "at most " + std::to_string(bounds.max_stop_token_ids) + " (--max-stop-token-ids)");
  }
  for (size_t i = 0; i < v.items().size(); i++) {
    int32_t id = 0;
    if (!ReadTokenId(v.items()[i], "stop_token_ids[" + std::to_string(i) + "]", bounds, &id, err)) {
      err->param = "stop_token_ids";  // the item is named in the message
      return false;
    }
    out->stop_token_ids.push_back(id);
  }
  return true;
}

}  // namespace

float EffectiveTemperature(double temperature) {
  return temperature < kMinTemperature ? 0.0f : static_cast<float>(temperature);
}

std::string FormatNumber(double d) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

std::string DescribeJson(const json::Value& v) {
  switch (v.kind()) {
    case json::Value::Kind::kNull:
      return "null";
    case json::Value::Kind::kBool:
      return std::string("the boolean ") + (v.as_bool() ? "true" : "false");
    case json::Value::Kind::kInt:
    case json::Value::Kind::kDouble:
      return "the number " + json::Serialize(v);
    case json::Value::Kind::kString: {
      // At most 40 bytes of it, cut at a character boundary.
      constexpr size_t kShown = 40;
      const std::string& s = v.as_string();
      if (s.size() <= kShown) return "the string " + json::Serialize(v);
      size_t cut = kShown;
      while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) cut--;
      std::string shown = json::Serialize(json::Value::String(s.substr(0, cut)));
      shown.insert(shown.size() - 1, "...");
      return "the string " + shown + " (" + std::to_string(s.size()) + " bytes)";
    }
    case json::Value::Kind::kArray:
      return "an array";
    case json::Value::Kind::kObject:
      return "an object";
  }
  return "a value";
}

bool WrongType(ApiError* err, std::string_view field, std::string_view want, const json::Value& got) {
  return Refuse(err, 400, field, std::string(field) + ": expected " + std::string(want) + ", got " + DescribeJson(got));
}

bool OutOfRange(ApiError* err, std::string_view field, std::string_view value, std::string_view expected) {
  return Refuse(err, 422, field,
                std::string(field) + ": " + std::string(value) + " is out of range; expected " + std::string(expected));
}

bool ReadNumber(const json::Value& v, std::string_view field, double lo, double hi, bool lo_open, double* out,
                ApiError* err) {
  const std::string expected = "a number in " + Interval(lo, hi, lo_open);
  if (!v.is_number()) return WrongType(err, field, expected, v);
  const double d = v.as_double();
  if (!(lo_open ? d > lo : d >= lo) || !(d <= hi)) return OutOfRange(err, field, json::Serialize(v), expected);
  *out = d;
  return true;
}

bool ReadInt(const json::Value& v, std::string_view field, int64_t lo, int64_t hi, int64_t* out, ApiError* err,
             std::string_view note) {
  std::string expected = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!v.is_int()) return WrongType(err, field, expected, v);
  if (v.as_int() < lo || v.as_int() > hi) {
    if (!note.empty()) expected += " (" + std::string(note) + ")";
    return OutOfRange(err, field, std::to_string(v.as_int()), expected);
  }
  *out = v.as_int();
  return true;
}

bool ReadBool(const json::Value& v, std::string_view field, bool* out, ApiError* err) {
  if (!v.is_bool()) return WrongType(err, field, "a boolean", v);
  *out = v.as_bool();
  return true;
}

bool ReadTokenId(const json::Value& v, std::string_view where, const RequestBounds& bounds, int32_t* out,
                 ApiError* err) {
  if (!v.is_int()) return WrongType(err, where, "an integer token id", v);
  if (v.as_int() < 0 || v.as_int() >= bounds.vocab_size) {
    return OutOfRange(err, where, std::to_string(v.as_int()), TokenIdRange(bounds));
  }
  *out = static_cast<int32_t>(v.as_int());
  return true;
}

bool ReadStop(const json::Value& v, const RequestBounds& bounds, std::vector<std::string>* out, ApiError* err) {
  out->clear();
  std::vector<const json::Value*> items;
  if (!StopValues(v, &items)) return WrongType(err, "stop", "a string or an array of strings", v);
  if (items.size() > bounds.max_stop_strings) {
    return OutOfRange(err, "stop", std::to_string(items.size()) + " strings",
                      "at most " + std::to_string(bounds.max_stop_strings) + " (--max-stop-strings)");
  }
  for (size_t j = 0; j < items.size(); j++) {
    const json::Value* it = items[j];
    const std::string where = v.is_array() ? "stop[" + std::to_string(j) + "]" : "stop";
    if (!it->is_string()) {
      WrongType(err, where, "a string", *it);
    } else if (it->as_string().empty() || it->as_string().size() > bounds.max_stop_bytes) {
      OutOfRange(err, where, std::to_string(it->as_string().size()) + " bytes",
                 "1.." + std::to_string(bounds.max_stop_bytes) + " bytes (--max-stop-bytes)");
    } else {
      out->push_back(it->as_string());
      continue;
    }
    err->param = "stop";  // the item is named in the message
    return false;
  }
  return true;
}

FieldRead ReadSamplingField(std::string_view key, const json::Value& val, const RequestBounds& bounds,
                            backend::GenerationRequest* out, ApiError* err) {
  auto done = [](bool ok) { return ok ? FieldRead::kRead : FieldRead::kRefused; };
  double d = 0;
  int64_t i = 0;
  if (key == "top_k") {
    if (val.is_null()) return FieldRead::kRead;
    // vLLM: -1 and 0 are off; any k >= 1 keeps the k most likely (all of
    // them once k reaches the vocabulary).
    const std::string expected = "an integer, -1 or 0 (off) or at least 1";
    if (!val.is_int()) return done(WrongType(err, key, expected, val));
    if (val.as_int() < -1) return done(OutOfRange(err, key, std::to_string(val.as_int()), expected));
    out->top_k = val.as_int() <= 0 || val.as_int() >= bounds.vocab_size ? 0 : static_cast<int>(val.as_int());
    return FieldRead::kRead;
  }
  if (key == "priority") {
    // vLLM's: lower runs first; only with --scheduling-policy priority (the
    // engine refuses another value under fcfs, naming the flag).
    if (val.is_null()) return FieldRead::kRead;
    if (!ReadInt(val, key, INT32_MIN, INT32_MAX, &i, err, "lower runs first")) return FieldRead::kRefused;
    out->priority = static_cast<int>(i);
    return FieldRead::kRead;
  }
  if (key == "min_p") {
    if (val.is_null()) return FieldRead::kRead;
    if (!ReadNumber(val, key, 0.0, 1.0, false, &d, err)) return FieldRead::kRefused;
    out->min_p = static_cast<float>(d);
    return FieldRead::kRead;
  }
  if (key == "repetition_penalty") {
    if (val.is_null()) return FieldRead::kRead;
    if (!ReadNumber(val, key, 0.0, kMaxRepetitionPenalty, true, &d, err)) return FieldRead::kRefused;
    out->repetition_penalty = static_cast<float>(d);
    return FieldRead::kRead;
  }
  if (key == "presence_penalty" || key == "frequency_penalty") {
    if (val.is_null()) return FieldRead::kRead;
    if (!ReadNumber(val, key, -kMaxAbsPenalty, kMaxAbsPenalty, false, &d, err)) return FieldRead::kRefused;
    (key == "presence_penalty" ? out->presence_penalty : out->frequency_penalty) = static_cast<float>(d);
    return FieldRead::kRead;
  }
  if (key == "logit_bias") {
    if (val.is_null()) return FieldRead::kRead;
    return done(ReadLogitBias(val, bounds, out, err));
  }
  if (key == "min_tokens") {
    if (val.is_null()) return FieldRead::kRead;
    // The upper bound is the request's max (CheckMinTokens, after every field).
    if (!ReadInt(val, key, 0, bounds.max_new_tokens, &i, err, "--max-new-tokens")) return FieldRead::kRefused;
    out->min_tokens = static_cast<int>(i);
    return FieldRead::kRead;
  }
  if (key == "ignore_eos") {
    if (val.is_null()) return FieldRead::kRead;
    return done(ReadBool(val, key, &out->ignore_eos, err));
  }
  if (key == "stop_token_ids") {
    if (val.is_null()) return FieldRead::kRead;
    return done(ReadStopTokenIds(val, bounds, out, err));
  }
  return ReadStructuredField(key, val, bounds, out, err);
}

bool CheckMinTokens(const backend::GenerationRequest& r, std::string_view max_field, ApiError* err) {
  if (r.min_tokens <= r.max_new_tokens) return true;
  return OutOfRange(err, "min_tokens", std::to_string(r.min_tokens),
                    "an integer in [0, " + std::to_string(r.max_new_tokens) + "] (at most " +
                        std::string(max_field) + ")");
}

}  // namespace tw::service
