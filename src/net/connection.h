// Connection: one accepted TCP socket with a bounded output buffer, a fixed
// read chunk, back-pressure-aware writes and close-later semantics. It knows
// no protocol: bytes go to the ConnectionHandler it was started with (the
// HTTP connection; after a WebSocket upgrade that handler passes every event
// on to the WebSocket one it made, http/http_connection.cc).
//
// Threads: the loop thread only.
// Buffers and bounds (ConnectionLimits):
//   input:  each readable event reads at most `read_chunk_bytes` into a fixed
//           buffer and hands them to the handler, which must consume or bound
//           them (the HTTP reader has its own limits). While reading is paused
//           (SetReading(false)) the kernel socket buffer holds further input:
//           TCP flow control pushes back on the client.
//   output: bytes the socket did not take at once are held in one buffer of at
//           most `max_output_bytes` (plus one unbounded complete response, see
//           WriteUnbounded).
// Corking (SetCorked(true), as the HTTP server's connections are): writes
// made during one loop iteration are appended to the output buffer and leave
// together in one send at the iteration's end (EventLoop::DeferFlush), so
// several events for one client cost one system call. A flush sends at most
// `max_write_per_flush_bytes`; the rest goes in the next iteration, so one
// fast reader with a long backlog cannot starve the loop (redis's
// NET_MAX_WRITES_PER_EVENT).
// Close-later: Close() unregisters and closes the fd at once and tells the
// handler (OnClosed, exactly once), but the object is freed by its owner, who
// must keep it alive until the current callback returns (EventLoop::
// ReleaseLater). Never: blocks, frees itself, or raises SIGPIPE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/metrics.h"
#include "common/status.h"
#include "net/event_loop.h"

namespace tw::net {

struct ConnectionLimits {
  size_t max_output_bytes = 1 << 20;            // bounded writes refused beyond this
  size_t write_low_watermark_bytes = 64 << 10;  // OnDrained when buffered falls to this
  size_t read_chunk_bytes = 64 << 10;           // bytes read per readable event
  // CloseAfterFlush: the longest wait with no byte sent while output is
  // queued (then the connection is reset), and, once all is sent, for the
  // peer's EOF (then closed).
  int64_t close_idle_ms = 10000;
  size_t max_write_per_flush_bytes = 64 << 10;  // corked: bytes sent per iteration at most
};

enum class WriteResult {
  kTaken,    // all bytes went to the socket now
  kQueued,   // some or all are held in the output buffer (always, when corked)
  kRefused,  // would exceed max_output_bytes: nothing was taken
  kClosed,   // closed or closing: nothing was taken (OnClosed has run or will
             // run in this or the next loop iteration)
};

class ConnectionHandler {
 public:
  virtual ~ConnectionHandler() = default;
  virtual void OnData(const char* data, size_t len) = 0;
  // Buffered output fell to <= write_low_watermark_bytes after a write was
  // refused or left the buffer above the watermark.
  virtual void OnDrained() = 0;
  // The connection closed (peer FIN/RST, error, Close() or Reset()). Called once.
  virtual void OnClosed() = 0;
  // sent_total() reached the offset given to WatchSent. Must not write.
  virtual void OnSent() {}
  // The server is shutting down: finish gracefully (e.g. a WebSocket close
  // handshake with 1001). Default: nothing (the owner waits for the close).
  virtual void OnShutdown() {}
};

class Connection : public Flushable {
 public:
  // Takes ownership of fd (non-blocking). Counters may be null.
  Connection(EventLoop* loop, int fd, const ConnectionLimits& limits, Counter* bytes_in,
             Counter* bytes_out);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Registers with the loop (reading on). On failure the fd is closed.
  Status Start(ConnectionHandler* handler);
  // Corked: writes leave at the end of the loop iteration, together (see
  // the file comment).
  void SetCorked(bool on) { corked_ = on; }

  // Writes the concatenation of parts[0..n) atomically with respect to the
  // bound: refused as a whole if buffered + total > max_output_bytes.
  WriteResult Write(const std::string_view* parts, size_t n);
  WriteResult Write(std::string_view bytes) { return Write(&bytes, 1); }
  // Same, never refused: for complete responses whose bytes the caller already
  // holds in memory (their size is bounded by whoever built them).
  WriteResult WriteUnbounded(const std::string_view* parts, size_t n);
  WriteResult WriteUnbounded(std::string_view bytes) { return WriteUnbounded(&bytes, 1); }

  // Pauses/resumes reading. Peer hang-up is noticed either way.
  void SetReading(bool on);
  // Stops reading for the handler and keeps sending while the client reads;
  // once the output buffer is empty, shuts the write side down, then
  // discards input until the peer's EOF (so the kernel sends FIN, not RST,
  // and the client reads our last response); then Close(). Bounded by
  // progress, not total time: if close_idle_ms pass with output queued and
  // no byte sent, the client is not reading and the connection is Reset()
  // (it sees an error, not a clean end); once all is sent, the wait for its
  // EOF is close_idle_ms at most.
  void CloseAfterFlush();
  // Closes now; buffered output is dropped (corked: after one best-effort
  // send of what is queued, which an uncorked connection would already have
  // sent) and counted in unsent_at_close(). Idempotent.
  void Close();
  // Closes with a TCP reset (SO_LINGER 0): what is queued, here and in the
  // kernel, is dropped, and the peer reads an error instead of an end.
  void Reset();

  bool closed() const { return closed_; }
  bool closing() const { return closing_; }
  size_t buffered_bytes() const { return out_.size() - out_pos_; }
  // Bytes ever accepted by Write*/ and ever handed to the kernel: a response
  // whose last byte was accepted at queued_total() == Q has left this
  // process once sent_total() >= Q.
  uint64_t queued_total() const { return queued_total_; }
  uint64_t sent_total() const { return sent_total_; }
  // OnSent() once sent_total() >= offset (one watch at a time; a new call
  // replaces it; at once if already there).
  void WatchSent(uint64_t offset);
  // After the close: the bytes that never left this process, and whether it
  // was Reset() (a closing client that stopped reading, or the owner's call).
  size_t unsent_at_close() const { return unsent_at_close_; }
  bool was_reset() const { return was_reset_; }
  // send/sendmsg calls that wrote bytes, and the most one of them wrote.
  uint64_t sends() const { return sends_; }
  size_t largest_send_bytes() const { return largest_send_; }
  const ConnectionLimits& limits() const { return limits_; }
  int fd() const { return fd_; }

  // EventLoop: the end of the iteration in which something was written.
  void FlushDeferred() override;

 private:
  WriteResult DoWrite(const std::string_view* parts, size_t n, bool bounded);
  void OnEvent(int events);
  void OnReadable();
  void Flush();
  void UpdateInterest(bool drop_read = false);
  void AfterFlushed();
  void MarkFailed();
  void CountSent(size_t n);
  void ArmCloseTimer(int64_t ms);
  void OnCloseTimer();

  EventLoop* loop_;
  int fd_;
  ConnectionLimits limits_;
  Counter* bytes_in_;
  Counter* bytes_out_;
  ConnectionHandler* handler_ = nullptr;
  std::unique_ptr<char[]> read_buf_;  // read_chunk_bytes
  std::string out_;       // output buffer; bytes before out_pos_ are sent
  size_t out_pos_ = 0;
  bool reading_ = true;
  bool registered_ = false;
  bool want_drained_ = false;  // notify OnDrained at the low watermark
  bool closing_ = false;       // CloseAfterFlush called
  bool shut_wr_ = false;       // shutdown(SHUT_WR) done
  bool failed_ = false;        // a send failed; close on the next event
  bool closed_ = false;
  bool corked_ = false;
  uint64_t sends_ = 0;
  size_t largest_send_ = 0;
  uint64_t queued_total_ = 0;
  uint64_t sent_total_ = 0;
  uint64_t watch_offset_ = 0;  // 0: no watch
  int64_t last_progress_ms_ = 0;  // closing: when a byte last left, or the flush ended
  size_t unsent_at_close_ = 0;
  bool was_reset_ = false;
  int interest_ = -1;
  EventLoop::TimerId close_timer_ = 0;
  EventLoop::TimerId fail_timer_ = 0;  // closes after a failed send, outside the writer's call
};

}  // namespace tw::net
