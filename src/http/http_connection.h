// HttpConnection: the HTTP/1.1 state of one accepted net::Connection
// (http_connection.cc): the request reader, the one request in flight, its
// response (complete, streamed through a StreamWriter, or an upgrade to
// another protocol), the header and idle deadlines, keep-alive, pipelining
// with back-pressure, and the access record of each response.
//
// The Server owns each connection in its table (shared_ptr); Responders and
// StreamWriters (server.h) hold weak_ptrs and the request's sequence number,
// so a stale handle can never answer a later request. After close a
// connection is moved to EventLoop::ReleaseLater, so it is freed only after
// the callback that closed it has returned.
//
// Threads: the loop thread only. Bounds: ServerOptions (server.h).
#pragma once

#include <memory>

#include "http/server.h"

namespace tw::http {

class HttpConnection;

// Makes the connection for an accepted fd and starts reading; null if it
// could not start (the fd is closed then).
std::shared_ptr<HttpConnection> StartHttpConnection(Server* server, int fd);
// The server drains: an idle connection closes, one with a request in
// flight closes after its response, an upgraded one is told (OnShutdown).
void ShutdownHttpConnection(HttpConnection* c);
// Closes at once (the server's destruction).
void CloseHttpConnection(HttpConnection* c);

}  // namespace tw::http
