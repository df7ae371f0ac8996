// SPDX-License-Identifier: Apache-2.0
// Internal: the rendezvous key/value store of a multi-process run, served by process 0 over TCP
// and implementing Gloo's gloo::rendezvous::Store (what PyTorch's TCPStore does around Gloo).
// It carries only rendezvous data (Gloo's pair addresses, process descriptions, barriers): the
// data plane is Gloo's.
//
// Protocol: one request per message, answered in order on the same connection:
//   request  = op:u8 key_len:u32 key value_len:u64 value
//   response = found:u8 value_len:u64 value
// with op SET (store value), GET (found and the value, or not found), ADD (value is an int64
// delta; answers the new int64 total). Waiting for a key is the client polling GET with a short
// back-off until its deadline, so the server never blocks on one client.
#pragma once

#include <gloo/rendezvous/store.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace spmd::internal {

// The server, run by process 0 on a thread of its own.
class TcpStoreServer {
 public:
  // Listens on every interface at `port` (0: an ephemeral port; port() tells which). OSError when
  // the port cannot be bound. `listening`: a socket already bound and listening at `port` to
  // serve on instead (spmd-run's, handed down so that no other program can take the port between
  // its choice and process 0's start); the server owns it.
  explicit TcpStoreServer(int port, int listening = -1);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }
  // Waits until at most `clients` connections remain open, or `timeout` passes; false then. For
  // process 0's exit: the store must stay while other processes may still need it, and a process
  // that ended (or died) has closed its connection.
  bool wait_for_clients(int clients, std::chrono::milliseconds timeout) const;

 private:
  void serve();

  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a pipe that stops serve()
  int port_ = 0;
  std::atomic<int> clients_{0};
  std::thread thread_;
};

// A client connection; every process (process 0 included) uses one. Thread-safe.
class TcpStore final : public gloo::rendezvous::Store {
 public:
  // Connects to host:port, retrying until `timeout` has passed; DistributedError naming the
  // address when the coordinator does not answer by then.
  TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits for the key up to the store's timeout.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  // DistributedError naming the missing keys and the coordinator when they are not all set
  // within `timeout`.
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;
  // Adds `delta` to the integer at `key` (0 when absent) and returns the new value.
  int64_t add(const std::string& key, int64_t delta);
  // The value at `key`, or nothing yet; never waits.
  bool try_get(const std::string& key, std::vector<char>& value);

  // The local address of the connection to the coordinator: the interface other processes can
  // reach this one on.
  std::string local_address() const;
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  // Sends one request and reads its response; false when the key was not found.
  bool request(uint8_t op, const std::string& key, const std::vector<char>& value,
               std::vector<char>& response);

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;  // one request at a time on the connection
  int fd_ = -1;
};

}  // namespace spmd::internal
