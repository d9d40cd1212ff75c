// The HTTP side of the WebSocket endpoints: validates the opening handshake
// (handshake.h), answers a refusal as an ordinary HTTP error (400/403/426 in
// the JSON envelope of DESIGN.md §4), or writes the 101 and switches the
// connection over (http::Responder::Upgrade) to a WsConnection carrying the
// endpoint `make_endpoint` builds.
//
// Threads: the loop thread (a route handler). Allocation: one WsConnection
// and its endpoint per upgraded connection, owned by the HTTP server's
// connection until it closes.
#pragma once

#include <functional>
#include <memory>

#include "http/server.h"
#include "net/event_loop.h"
#include "ws/handshake.h"
#include "ws/ws_connection.h"

namespace tw::ws {

void AcceptUpgrade(const http::Request& req, http::Responder r, net::EventLoop* loop,
                   const HandshakeOptions& handshake, const WsOptions& options,
                   const std::function<std::unique_ptr<WsEndpoint>()>& make_endpoint);

}  // namespace tw::ws
