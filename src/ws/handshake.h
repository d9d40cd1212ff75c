// The WebSocket opening handshake (RFC 6455 §4.2), server side, as a pure
// function over a parsed HTTP request.
//
// Checked: method GET and HTTP/1.1 (400); an Upgrade header with the token
// "websocket" and a Connection header with the token "Upgrade" (both
// comma-separated lists, ASCII case-insensitive; 400); exactly one
// Sec-WebSocket-Key whose value is canonical base64 of 16 bytes (400);
// Sec-WebSocket-Version 13 (anything else, or none: 426 with
// "Sec-WebSocket-Version: 13"); an Origin in `allowed_origins` when that list
// is non-empty (403; a request without Origin is not from a browser and is
// let through). Extensions and subprotocols offered by the client are never
// negotiated: the 101 names neither, so the client must not use them.
//
// Threads: pure functions. Allocation: the result strings only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "http/request_reader.h"
#include "http/response.h"

namespace tw::ws {

struct HandshakeOptions {
  std::vector<std::string> allowed_origins;  // empty: any origin
};

struct HandshakeResult {
  bool ok = false;
  int status = 101;       // 101 when ok; else 400, 403 or 426
  ErrorCode code = ErrorCode::kInvalidRequest;  // when refused: the envelope's type
  std::string message;    // names the header that failed
  std::string accept;     // Sec-WebSocket-Accept value when ok
  http::Headers headers;  // extra headers for the error answer (426: the version)
};

HandshakeResult CheckHandshake(const http::Request& req, const HandshakeOptions& options);

// base64(SHA-1(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")) (RFC 6455 §1.3).
std::string AcceptKey(std::string_view key);

// The complete "101 Switching Protocols" response head.
std::string SwitchingProtocolsResponse(std::string_view accept);

// True if the comma-separated header value contains `token` (ASCII case-
// insensitive, optional whitespace around the elements).
bool HeaderHasToken(std::string_view value, std::string_view token);

}  // namespace tw::ws
