#include "ws/ws_routes.h"

namespace tw::ws {

void AcceptUpgrade(const http::Request& req, http::Responder r, net::EventLoop* loop,
                   const HandshakeOptions& handshake, const WsOptions& options,
                   const std::function<std::unique_ptr<WsEndpoint>()>& make_endpoint) {
  HandshakeResult h = CheckHandshake(req, handshake);
  if (!h.ok) {
    r.SendError(ApiError::Make(h.code, h.status, h.message), h.headers);
    return;
  }
  r.Upgrade(SwitchingProtocolsResponse(h.accept),
            [&](net::Connection* conn, std::string leftover) -> std::unique_ptr<net::ConnectionHandler> {
              auto ws = std::make_unique<WsConnection>(loop, conn, options, make_endpoint());
              ws->Start(std::move(leftover));
              return ws;
            });
}

}  // namespace tw::ws
