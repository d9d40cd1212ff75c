#include "json/error_json.h"

#include "json/json.h"

namespace tw::json {

void AppendErrorObject(std::string* out, const ApiError& e) {
  *out += "{\"type\":\"";
  *out += e.type();
  *out += "\",\"message\":";
  json::AppendQuoted(out, e.message);
  *out += e.retryable ? ",\"retryable\":true" : ",\"retryable\":false";
  if (!e.param.empty()) {
    *out += ",\"param\":";
    json::AppendQuoted(out, e.param);
  }
  if (e.offset >= 0) {
    *out += ",\"offset\":";
    *out += std::to_string(e.offset);
  }
  if (e.retry_after_ms > 0) {
    *out += ",\"retry_after_ms\":";
    *out += std::to_string(e.retry_after_ms);
  }
  if (e.resume_from >= 0) {
    *out += ",\"resume_from\":";
    *out += std::to_string(e.resume_from);
  }
  if (e.oldest_available >= 0) {
    *out += ",\"oldest_available\":";
    *out += std::to_string(e.oldest_available);
  }
  if (!e.stream_id.empty()) {
    *out += ",\"stream\":";
    json::AppendQuoted(out, e.stream_id);
  }
  *out += '}';
}

std::string ErrorEnvelope(const ApiError& e) {
  std::string out = "{\"error\":";
  AppendErrorObject(&out, e);
  out += '}';
  return out;
}

}  // namespace tw::json
