// SPDX-License-Identifier: Apache-2.0
// The TCP rendezvous store (tcp_store.h).
#include "distributed/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "spmd/distributed.h"
#include "spmd/errors.h"

namespace spmd::internal {
namespace {

using Clock = std::chrono::steady_clock;

enum Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3 };

// How long the server waits for the rest of a request it has started to read: a client that
// stalls mid-message (it died) must not hold up the others.
constexpr auto kServerReadTimeout = std::chrono::seconds(10);

// Waits until `fd` is ready for `events` or `deadline` passes; false on timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // the read or write reports the error
  }
}

// Sends or receives exactly `bytes`; false when the peer closed, on an error or at the deadline.
bool send_all(int fd, const void* data, size_t bytes, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    if (!wait_fd(fd, POLLOUT, deadline)) return false;
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool recv_all(int fd, void* data, size_t bytes, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    if (!wait_fd(fd, POLLIN, deadline)) return false;
    ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool send_message(int fd, uint8_t head, const std::string& key, const std::vector<char>& value,
                  Clock::time_point deadline, bool with_key) {
  std::vector<char> buf(1);
  buf[0] = static_cast<char>(head);
  auto append = [&](const void* p, size_t n) {
    buf.insert(buf.end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
  };
  if (with_key) {
    uint32_t key_len = static_cast<uint32_t>(key.size());
    append(&key_len, sizeof key_len);
    append(key.data(), key.size());
  }
  uint64_t value_len = value.size();
  append(&value_len, sizeof value_len);
  append(value.data(), value.size());
  return send_all(fd, buf.data(), buf.size(), deadline);
}

int64_t as_int(const std::vector<char>& v) {
  int64_t x = 0;
  if (v.size() == sizeof x) std::memcpy(&x, v.data(), sizeof x);
  return x;
}

std::vector<char> from_int(int64_t x) {
  std::vector<char> v(sizeof x);
  std::memcpy(v.data(), &x, sizeof x);
  return v;
}

// Reads one request from `fd` and answers it; false when the client is gone.
bool serve_one(int fd, std::map<std::string, std::vector<char>>& data) {
  const Clock::time_point deadline = Clock::now() + kServerReadTimeout;
  uint8_t op = 0;
  uint32_t key_len = 0;
  uint64_t value_len = 0;
  if (!recv_all(fd, &op, 1, deadline) || !recv_all(fd, &key_len, sizeof key_len, deadline)) {
    return false;
  }
  std::string key(key_len, '\0');
  if (!recv_all(fd, key.data(), key_len, deadline) ||
      !recv_all(fd, &value_len, sizeof value_len, deadline)) {
    return false;
  }
  std::vector<char> value(value_len);
  if (!recv_all(fd, value.data(), value_len, deadline)) return false;
  switch (op) {
    case kSet:
      data[key] = std::move(value);
      return send_message(fd, 1, {}, {}, deadline, false);
    case kGet: {
      auto it = data.find(key);
      if (it == data.end()) return send_message(fd, 0, {}, {}, deadline, false);
      return send_message(fd, 1, {}, it->second, deadline, false);
    }
    case kAdd: {
      std::vector<char>& slot = data[key];
      slot = from_int(as_int(slot) + as_int(value));
      return send_message(fd, 1, {}, slot, deadline, false);
    }
    default:
      return false;  // not a client of this store: drop it
  }
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

namespace {

// A socket listening on every interface at `port`; OSError when it cannot be bound.
int listen_on(int port) {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw OSError("cannot create the store's socket: " + errno_text());
  int on = 1, off = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);  // IPv4 too
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_any;
  addr.sin6_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 1024) != 0) {
    std::string why = errno_text();
    ::close(fd);
    throw OSError(fmt::format(
        "process 0 cannot serve the coordinator's key/value store on port {}: {}. Choose another "
        "port in the coordinator address (SPMD_COORDINATOR=host:port).",
        port, why));
  }
  return fd;
}

// The port a socket is bound to (IPv4 or IPv6), or -1.
int bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return -1;
}

}  // namespace

TcpStoreServer::TcpStoreServer(int port, int listening) {
  listen_fd_ = listening;
  if (listen_fd_ >= 0 && port != 0 && bound_port(listen_fd_) != port) {
    ::close(listen_fd_);  // handed down for another address
    listen_fd_ = -1;
  }
  if (listen_fd_ < 0) listen_fd_ = listen_on(port);
  ::fcntl(listen_fd_, F_SETFD, FD_CLOEXEC);  // a handed-down socket was inherited without it
  port_ = bound_port(listen_fd_);
  if (::pipe2(wake_fds_, O_CLOEXEC) != 0) {
    ::close(listen_fd_);
    throw OSError("cannot create the store's wake pipe: " + errno_text());
  }
  thread_ = std::thread([this] { serve(); });
}

TcpStoreServer::~TcpStoreServer() {
  char byte = 0;
  if (::write(wake_fds_[1], &byte, 1) < 0) {
    // The pipe cannot be full or closed here; nothing else to do.
  }
  thread_.join();
  ::close(wake_fds_[0]);
  ::close(wake_fds_[1]);
  ::close(listen_fd_);
}

void TcpStoreServer::serve() {
  std::map<std::string, std::vector<char>> data;
  std::vector<pollfd> fds{{wake_fds_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;
    if (fds[1].revents & POLLIN) {
      int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        int on = 1;
        ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        fds.push_back({client, POLLIN, 0});
        clients_.fetch_add(1);
      }
    }
    for (size_t i = 2; i < fds.size();) {
      if (fds[i].revents != 0 && !serve_one(fds[i].fd, data)) {
        ::close(fds[i].fd);
        fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
        clients_.fetch_sub(1);
        continue;
      }
      fds[i].revents = 0;
      ++i;
    }
  }
  for (size_t i = 2; i < fds.size(); ++i) ::close(fds[i].fd);
}

bool TcpStoreServer::wait_for_clients(int clients, std::chrono::milliseconds timeout) const {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (clients_.load() > clients) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TcpStore::TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::string last_error = "no answer";
  auto backoff = std::chrono::milliseconds(10);
  while (fd_ < 0) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc != 0) {
      last_error = ::gai_strerror(rc);
    } else {
      for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          fd_ = fd;
        } else {
          last_error = errno_text();
          ::close(fd);
        }
      }
      ::freeaddrinfo(found);
    }
    if (fd_ >= 0) break;
    if (Clock::now() + backoff >= deadline) {
      throw DistributedError(fmt::format(
          "the coordinator at {}:{} did not answer within {:g} s (last error: {}). Process 0 "
          "serves it: check that process 0 runs and reached spmd::distributed::initialize, that "
          "the address and port are the same in every process, and that a firewall lets "
          "them through.",
          host, port, timeout.count() / 1000.0, last_error));
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
  int on = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

bool TcpStore::request(uint8_t op, const std::string& key, const std::vector<char>& value,
                       std::vector<char>& response) {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point deadline = Clock::now() + timeout_;
  uint8_t found = 0;
  uint64_t len = 0;
  if (!send_message(fd_, op, key, value, deadline, true) || !recv_all(fd_, &found, 1, deadline) ||
      !recv_all(fd_, &len, sizeof len, deadline)) {
    throw DistributedError(fmt::format(
        "lost the connection to the coordinator's key/value store at {} while asking for '{}': "
        "process 0 has exited or does not answer.",
        address(), key));
  }
  response.resize(len);
  if (!recv_all(fd_, response.data(), len, deadline)) {
    throw DistributedError(
        fmt::format("lost the connection to the coordinator at {} (process 0)", address()));
  }
  return found != 0;
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  std::vector<char> ignored;
  request(kSet, key, data, ignored);
}

bool TcpStore::try_get(const std::string& key, std::vector<char>& value) {
  return request(kGet, key, {}, value);
}

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  std::vector<char> value;
  try_get(key, value);
  return value;
}

void TcpStore::wait(const std::vector<std::string>& keys,
                    const std::chrono::milliseconds& timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  auto backoff = std::chrono::microseconds(100);
  std::vector<char> ignored;
  size_t ready = 0;  // keys[0, ready) are known to be set
  for (;;) {
    while (ready < keys.size() && try_get(keys[ready], ignored)) ++ready;
    if (ready == keys.size()) return;
    if (Clock::now() >= deadline) {
      std::string missing;
      for (size_t i = ready; i < keys.size(); ++i) {
        missing += (missing.empty() ? "'" : ", '") + keys[i] + "'";
      }
      throw DistributedError(fmt::format(
          "waited {:g} s for {} in the coordinator's key/value store at {}; the processes that "
          "should set them did not (one has exited, hangs, or runs a different program).",
          timeout.count() / 1000.0, missing, address()));
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::microseconds(20000));
  }
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  std::vector<char> total;
  request(kAdd, key, from_int(delta), total);
  return as_int(total);
}

std::string TcpStore::local_address() const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  char text[INET6_ADDRSTRLEN] = "127.0.0.1";
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    if (addr.ss_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, text, sizeof text);
    } else if (addr.ss_family == AF_INET6) {
      const in6_addr& a6 = reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr;
      if (IN6_IS_ADDR_V4MAPPED(&a6)) {
        ::inet_ntop(AF_INET, &a6.s6_addr[12], text, sizeof text);
      } else {
        ::inet_ntop(AF_INET6, &a6, text, sizeof text);
      }
    }
  }
  return text;
}

}  // namespace spmd::internal
