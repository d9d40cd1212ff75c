#include "ws/handshake.h"

#include "http/parse_syntax.h"
#include "ws/base64.h"
#include "ws/sha1.h"

namespace tw::ws {

using http::EqualsIgnoreCase;

namespace {

HandshakeResult Refuse(int status, ErrorCode code, std::string message) {
  HandshakeResult r;
  r.ok = false;
  r.status = status;
  r.code = code;
  r.message = std::move(message);
  return r;
}

}  // namespace

bool HeaderHasToken(std::string_view value, std::string_view token) {
  while (true) {
    size_t comma = value.find(',');
    if (EqualsIgnoreCase(http::TrimWhitespace(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) return false;
    value.remove_prefix(comma + 1);
  }
}

HandshakeResult CheckHandshake(const http::Request& req, const HandshakeOptions& options) {
  if (req.method != "GET") {
    return Refuse(400, ErrorCode::kInvalidRequest, "WebSocket handshake: method must be GET, got " + req.method);
  }
  if (req.minor_version < 1) {
    return Refuse(400, ErrorCode::kInvalidRequest, "WebSocket handshake: needs HTTP/1.1");
  }
  bool upgrade = false, connection = false;
  int keys = 0;
  for (const auto& [name, value] : req.headers) {
    if (EqualsIgnoreCase(name, "Upgrade") && HeaderHasToken(value, "websocket")) upgrade = true;
    if (EqualsIgnoreCase(name, "Connection") && HeaderHasToken(value, "Upgrade")) connection = true;
    if (EqualsIgnoreCase(name, "Sec-WebSocket-Key")) keys++;
  }
  if (!upgrade) {
    return Refuse(400, ErrorCode::kInvalidRequest, "WebSocket handshake: no \"Upgrade: websocket\" header");
  }
  if (!connection) {
    return Refuse(400, ErrorCode::kInvalidRequest,
                  "WebSocket handshake: the Connection header lacks the \"Upgrade\" token");
  }
  std::string_view version = req.Header("Sec-WebSocket-Version");
  if (http::TrimWhitespace(version) != "13") {
    HandshakeResult r = Refuse(426, ErrorCode::kInvalidRequest,
                               "WebSocket handshake: Sec-WebSocket-Version must be 13, got '" +
                                   std::string(version) + "'");
    r.headers.emplace_back("Sec-WebSocket-Version", "13");
    return r;
  }
  if (keys != 1) {
    return Refuse(400, ErrorCode::kInvalidRequest,
                  "WebSocket handshake: expected exactly one Sec-WebSocket-Key header, got " +
                      std::to_string(keys));
  }
  std::string_view key = http::TrimWhitespace(req.Header("Sec-WebSocket-Key"));
  std::string decoded;
  size_t bad = 0;
  if (!Base64Decode(key, &decoded, &bad)) {
    return Refuse(400, ErrorCode::kInvalidRequest,
                  "WebSocket handshake: Sec-WebSocket-Key is not base64 (offset " +
                      std::to_string(bad) + ")");
  }
  if (decoded.size() != 16) {
    return Refuse(400, ErrorCode::kInvalidRequest,
                  "WebSocket handshake: Sec-WebSocket-Key must encode 16 bytes, got " +
                      std::to_string(decoded.size()));
  }
  if (!options.allowed_origins.empty() && req.HasHeader("Origin")) {
    std::string_view origin = http::TrimWhitespace(req.Header("Origin"));
    bool allowed = false;
    for (const std::string& o : options.allowed_origins) {
      if (EqualsIgnoreCase(o, origin)) allowed = true;
    }
    if (!allowed) {
      return Refuse(403, ErrorCode::kForbidden,
                    "WebSocket handshake: origin '" + std::string(origin) + "' is not allowed");
    }
  }
  HandshakeResult r;
  r.ok = true;
  r.status = 101;
  r.accept = AcceptKey(key);
  return r;
}

std::string AcceptKey(std::string_view key) {
  Sha1 s;
  s.Update(key);
  s.Update("258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
  Sha1Hash h = s.Finish();
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(h.data()), h.size()));
}

std::string SwitchingProtocolsResponse(std::string_view accept) {
  std::string out =
      "HTTP/1.1 101 Switching Protocols\r\n"
      "Upgrade: websocket\r\n"
      "Connection: Upgrade\r\n"
      "Sec-WebSocket-Accept: ";
  out.append(accept);
  out += "\r\n\r\n";
  return out;
}

}  // namespace tw::ws
