#include "net/connection.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace tw::net {
namespace {
constexpr size_t kMaxParts = 8;  // iovecs per write
}

Connection::Connection(EventLoop* loop, int fd, const ConnectionLimits& limits,
                       Counter* bytes_in, Counter* bytes_out)
    : loop_(loop),
      fd_(fd),
      limits_(limits),
      bytes_in_(bytes_in),
      bytes_out_(bytes_out),
      read_buf_(new char[limits.read_chunk_bytes > 0 ? limits.read_chunk_bytes : 1]) {
  if (limits_.read_chunk_bytes == 0) limits_.read_chunk_bytes = 1;
}

Connection::~Connection() {
  loop_->CancelFlush(this);
  if (close_timer_ != 0) loop_->CancelTimer(close_timer_);
  if (fail_timer_ != 0) loop_->CancelTimer(fail_timer_);
  if (!closed_) {
    if (registered_) loop_->RemoveFileEvent(fd_);
    ::close(fd_);
  }
}

Status Connection::Start(ConnectionHandler* handler) {
  handler_ = handler;
  interest_ = kReadable;
  Status s = loop_->AddFileEvent(fd_, kReadable, [this](int, int events) { OnEvent(events); });
  if (!s.ok()) {
    ::close(fd_);
    closed_ = true;
    return s;
  }
  registered_ = true;
  return Status::Ok();
}

void Connection::UpdateInterest(bool drop_read) {
  if (closed_ || !registered_) return;
  int mask = 0;
  // While closing we keep reading (and discarding) so the peer never sees RST.
  // Pausing is lazy: EPOLLIN stays registered until an input event actually
  // arrives while paused, so a request answered at once costs no epoll_ctl.
  if (reading_ || closing_ || (!drop_read && (interest_ & kReadable))) mask |= kReadable;
  if (buffered_bytes() > 0) mask |= kWritable;
  if (mask == interest_) return;
  interest_ = mask;
  if (!loop_->SetFileEventMask(fd_, mask).ok()) MarkFailed();
}

void Connection::SetReading(bool on) {
  reading_ = on;
  UpdateInterest();
}

WriteResult Connection::Write(const std::string_view* parts, size_t n) {
  return DoWrite(parts, n, true);
}

WriteResult Connection::WriteUnbounded(const std::string_view* parts, size_t n) {
  return DoWrite(parts, n, false);
}

WriteResult Connection::DoWrite(const std::string_view* parts, size_t n, bool bounded) {
  if (closed_ || closing_ || failed_) return WriteResult::kClosed;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += parts[i].size();
  if (total == 0) return WriteResult::kTaken;
  if (bounded && buffered_bytes() + total > limits_.max_output_bytes) {
    want_drained_ = true;
    return WriteResult::kRefused;
  }
  queued_total_ += total;
  size_t sent = 0;
  if (corked_) {
    // Corked: the bytes join the buffer and leave with the iteration's others.
    if (out_pos_ > 0 && out_pos_ >= out_.size() / 2) {
      out_.erase(0, out_pos_);
      out_pos_ = 0;
    }
    for (size_t i = 0; i < n; ++i) out_.append(parts[i]);
    if (buffered_bytes() > limits_.write_low_watermark_bytes) want_drained_ = true;
    loop_->DeferFlush(this);
    return WriteResult::kQueued;
  }
  if (buffered_bytes() == 0) {
    // Nothing queued: try the socket first (no copy when it takes it all).
    iovec iov[kMaxParts];
    size_t niov = 0;
    for (size_t i = 0; i < n && niov < kMaxParts; ++i) {
      if (parts[i].empty()) continue;
      iov[niov].iov_base = const_cast<char*>(parts[i].data());
      iov[niov].iov_len = parts[i].size();
      ++niov;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = niov;
    // MSG_NOSIGNAL: a reset peer gives EPIPE, not SIGPIPE.
    ssize_t r = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        MarkFailed();
        return WriteResult::kClosed;
      }
      r = 0;
    }
    sent = static_cast<size_t>(r);
    CountSent(sent);
    if (sent == total) return WriteResult::kTaken;
  }
  // Queue the rest (parts beyond kMaxParts were not offered to sendmsg).
  if (out_pos_ > 0 && out_pos_ >= out_.size() / 2) {
    out_.erase(0, out_pos_);
    out_pos_ = 0;
  }
  size_t skip = sent;
  for (size_t i = 0; i < n; ++i) {
    if (skip >= parts[i].size()) {
      skip -= parts[i].size();
      continue;
    }
    out_.append(parts[i].data() + skip, parts[i].size() - skip);
    skip = 0;
  }
  if (buffered_bytes() > limits_.write_low_watermark_bytes) want_drained_ = true;
  UpdateInterest();
  return WriteResult::kQueued;
}

void Connection::MarkFailed() {
  if (failed_ || closed_) return;
  failed_ = true;
  // Close from the loop, not inside the caller's Write(): the handler's
  // OnClosed must not run re-entrantly under a stream writer.
  fail_timer_ = loop_->AddTimer(0, [this] {
    fail_timer_ = 0;
    Close();
  });
}

void Connection::CountSent(size_t n) {
  if (n == 0) return;
  sends_++;
  largest_send_ = std::max(largest_send_, n);
  sent_total_ += n;
  if (bytes_out_) bytes_out_->Inc(n);
  if (closing_) last_progress_ms_ = EventLoop::NowMs();
  if (watch_offset_ != 0 && sent_total_ >= watch_offset_) {
    watch_offset_ = 0;
    if (handler_) handler_->OnSent();
  }
}

void Connection::WatchSent(uint64_t offset) {
  if (sent_total_ >= offset) {
    watch_offset_ = 0;
    if (handler_) handler_->OnSent();
    return;
  }
  watch_offset_ = offset;
}

void Connection::FlushDeferred() {
  if (closed_ || failed_) return;
  if (buffered_bytes() > 0) Flush();
}

void Connection::Flush() {
  // Corked flushes send at most max_write_per_flush_bytes per iteration.
  size_t budget = corked_ && limits_.max_write_per_flush_bytes > 0 ? limits_.max_write_per_flush_bytes : SIZE_MAX;
  bool capped = false;
  while (buffered_bytes() > 0) {
    if (budget == 0) {
      capped = true;
      break;
    }
    ssize_t r = ::send(fd_, out_.data() + out_pos_, std::min(buffered_bytes(), budget), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Close();
      return;
    }
    out_pos_ += static_cast<size_t>(r);
    budget -= std::min(budget, static_cast<size_t>(r));
    CountSent(static_cast<size_t>(r));
    if (closed_) return;  // OnSent's handler closed it
  }
  if (buffered_bytes() == 0) {
    out_.clear();
    out_pos_ = 0;
  }
  if (closing_ && buffered_bytes() == 0) AfterFlushed();
  if (capped && !closed_) {
    loop_->DeferFlush(this);  // the rest in the next iteration
  } else {
    UpdateInterest();
  }
  if (want_drained_ && buffered_bytes() <= limits_.write_low_watermark_bytes && !closed_) {
    want_drained_ = false;
    if (handler_ && !closing_) handler_->OnDrained();
  }
}

void Connection::AfterFlushed() {
  if (shut_wr_ || closed_) return;
  shut_wr_ = true;
  last_progress_ms_ = EventLoop::NowMs();  // the wait for the peer's EOF starts now
  // Half-close: the client sees EOF after our last byte; we keep reading
  // until its EOF so that unread input does not turn our close into a RST.
  if (::shutdown(fd_, SHUT_WR) != 0) Close();
}

void Connection::CloseAfterFlush() {
  if (closed_ || closing_) return;
  closing_ = true;
  last_progress_ms_ = EventLoop::NowMs();
  ArmCloseTimer(limits_.close_idle_ms);
  if (buffered_bytes() == 0) AfterFlushed();
  UpdateInterest();
}

void Connection::ArmCloseTimer(int64_t ms) {
  close_timer_ = loop_->AddTimer(ms, [this] { OnCloseTimer(); });
}

// Re-armed lazily: a byte sent moves last_progress_ms_ and touches no timer;
// the timer, when it fires early, waits out the rest.
void Connection::OnCloseTimer() {
  close_timer_ = 0;
  if (closed_) return;
  const int64_t left = last_progress_ms_ + limits_.close_idle_ms - EventLoop::NowMs();
  if (left > 0) {
    ArmCloseTimer(left);
    return;
  }
  if (buffered_bytes() > 0) {
    Reset();  // the client stopped reading: an error, not a clean end
  } else {
    Close();  // all sent; the peer's EOF did not come
  }
}

void Connection::Reset() {
  if (closed_) return;
  was_reset_ = true;
  linger lg{};
  lg.l_onoff = 1;
  lg.l_linger = 0;
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  Close();
}

void Connection::OnReadable() {
  ssize_t r = ::recv(fd_, read_buf_.get(), limits_.read_chunk_bytes, 0);
  if (r > 0) {
    if (bytes_in_) bytes_in_->Inc(static_cast<uint64_t>(r));
    if (!closing_ && handler_) handler_->OnData(read_buf_.get(), static_cast<size_t>(r));
    return;
  }
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  Close();  // 0: the peer's EOF; < 0: ECONNRESET and friends
}

void Connection::OnEvent(int events) {
  if (closed_) return;
  if (events & kWritable) Flush();
  if (closed_) return;
  if (events & kReadable) {
    if (reading_ || closing_) {
      OnReadable();
      return;  // a FIN is seen as a 0-byte read on a later event
    }
    UpdateInterest(/*drop_read=*/true);  // paused: stop polling for input now
    if (!(events & kHangup)) return;
  }
  if (events & kHangup) {
    // Not reading (a response is in progress) and the peer left or reset: the
    // client is gone. (A client that only half-closes is treated the same.)
    Close();
  }
}

void Connection::Close() {
  if (closed_) return;
  if (corked_ && !failed_ && !was_reset_ && buffered_bytes() > 0) {
    // What this iteration's corked writes queued would already be in the
    // socket on an uncorked connection (a close frame written just before
    // closing): one best-effort send, then the rest is dropped.
    ssize_t r = ::send(fd_, out_.data() + out_pos_,
                       std::min(buffered_bytes(), std::max<size_t>(limits_.max_write_per_flush_bytes, 1)),
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r > 0) {
      out_pos_ += static_cast<size_t>(r);
      sent_total_ += static_cast<uint64_t>(r);
      if (bytes_out_) bytes_out_->Inc(static_cast<uint64_t>(r));
    }
  }
  unsent_at_close_ = buffered_bytes();
  closed_ = true;
  loop_->CancelFlush(this);
  if (close_timer_ != 0) {
    loop_->CancelTimer(close_timer_);
    close_timer_ = 0;
  }
  if (fail_timer_ != 0) {
    loop_->CancelTimer(fail_timer_);
    fail_timer_ = 0;
  }
  if (registered_) loop_->RemoveFileEvent(fd_);
  ::close(fd_);
  out_.clear();
  out_.shrink_to_fit();
  out_pos_ = 0;
  if (handler_) handler_->OnClosed();
}

}  // namespace tw::net
