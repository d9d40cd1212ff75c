#include "common/api_error.h"

namespace tw {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidJson: return "invalid_json";
    case ErrorCode::kInvalidRequest: return "invalid_request";
    case ErrorCode::kPromptTooLong: return "prompt_too_long";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kModelNotFound: return "model_not_found";
    case ErrorCode::kMethodNotAllowed: return "method_not_allowed";
    case ErrorCode::kRequestTimeout: return "request_timeout";
    case ErrorCode::kResumeWindowExceeded: return "resume_window_exceeded";
    case ErrorCode::kPayloadTooLarge: return "payload_too_large";
    case ErrorCode::kHeadersTooLarge: return "headers_too_large";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kNotImplemented: return "not_implemented";
    case ErrorCode::kUnauthorized: return "unauthorized";
    case ErrorCode::kForbidden: return "forbidden";
    case ErrorCode::kOverloaded: return "overloaded";
    case ErrorCode::kShuttingDown: return "shutting_down";
    case ErrorCode::kQueueTimeout: return "queue_timeout";
    case ErrorCode::kSlowClient: return "slow_client";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kExpired: return "expired";
    case ErrorCode::kTooManyStreams: return "too_many_streams";
  }
  return "internal";
}

int DefaultHttpStatus(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidJson: return 400;
    case ErrorCode::kInvalidRequest: return 400;
    case ErrorCode::kPromptTooLong: return 422;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kModelNotFound: return 404;
    case ErrorCode::kMethodNotAllowed: return 405;
    case ErrorCode::kRequestTimeout: return 408;
    case ErrorCode::kResumeWindowExceeded: return 409;
    case ErrorCode::kPayloadTooLarge: return 413;
    case ErrorCode::kHeadersTooLarge: return 431;
    case ErrorCode::kInternal: return 500;
    case ErrorCode::kNotImplemented: return 501;
    case ErrorCode::kUnauthorized: return 401;
    case ErrorCode::kForbidden: return 403;
    case ErrorCode::kOverloaded: return 503;
    case ErrorCode::kShuttingDown: return 503;
    case ErrorCode::kQueueTimeout: return 503;
    case ErrorCode::kSlowClient: return 503;
    case ErrorCode::kCancelled: return 503;
    case ErrorCode::kExpired: return 503;
    case ErrorCode::kTooManyStreams: return 503;
  }
  return 500;
}

bool DefaultRetryable(ErrorCode code) {
  switch (code) {
    case ErrorCode::kRequestTimeout:  // the same request, sent whole, can succeed
    case ErrorCode::kOverloaded:
    case ErrorCode::kShuttingDown:
    case ErrorCode::kQueueTimeout:
    case ErrorCode::kSlowClient:
    case ErrorCode::kTooManyStreams:
      return true;
    default:
      return false;
  }
}

ApiError ApiError::Make(ErrorCode code, std::string message) {
  return Make(code, DefaultHttpStatus(code), std::move(message));
}

ApiError DuplicateKeyError(const std::string& path) {
  ApiError e = ApiError::Make(ErrorCode::kInvalidRequest, 400, "key '" + path + "' appears twice; give each field once");
  e.param = path;
  return e;
}

ApiError ApiError::Make(ErrorCode code, int http_status, std::string message) {
  ApiError e;
  e.code = code;
  e.http_status = http_status;
  e.message = std::move(message);
  e.retryable = DefaultRetryable(code);
  return e;
}

}  // namespace tw
