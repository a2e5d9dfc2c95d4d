// SPDX-License-Identifier: MIT
// tests/support/fake_server.hpp: a TCP server on a free loopback port that is not
// Redis, for the failures a real server will not produce on demand: a peer that never
// reads what it is sent, one that hangs up at once, one that answers with bytes that
// are not RESP.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace seatlock::testing {

class FakeServer {
public:
    enum class Behaviour {
        never_read,      ///< accepts and keeps the connection, reading nothing
        close_at_once,   ///< accepts and closes the connection
        answer_garbage,  ///< answers whatever it receives with a line that is not RESP
        answer_pings,    ///< answers PINGs (see batch()) in one write, until reset()
    };

    explicit FakeServer(Behaviour behaviour) : behaviour_(behaviour) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        // Small buffers on the accepted sockets, so that a client's writes stall early.
        const int small = 4096;
        ::setsockopt(listener_, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::listen(listener_, 16) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            ::close(listener_);
            throw std::runtime_error("fake server: cannot listen");
        }
        port_ = ntohs(addr.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeServer() {
        stop_ = true;
        thread_.join();
        for (int fd : clients_) {
            if (fd >= 0) ::close(fd);
        }
        ::close(listener_);
    }
    FakeServer(const FakeServer&) = delete;
    FakeServer& operator=(const FakeServer&) = delete;

    int port() const { return port_; }

    /// answer_pings: answers once at least `n` PINGs are waiting for their answer (1 at first).
    void batch(std::size_t n) { batch_ = n; }

    /// Resets every connection (RST, not FIN: the client's next write fails at once) and
    /// returns once that is done; false when the server's thread did not do it within 5 s.
    bool reset() {
        reset_wanted_ = true;
        for (int i = 0; i < 500 && reset_wanted_; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return !reset_wanted_;
    }

private:
    void serve() {
        while (!stop_) {
            std::vector<pollfd> fds{{listener_, POLLIN, 0}};
            if (reset_wanted_) {
                const linger hard{1, 0};
                for (int& fd : clients_) {
                    if (fd < 0) continue;
                    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
                    ::close(fd);
                    fd = -1;
                }
                reset_wanted_ = false;
            }
            if (behaviour_ == Behaviour::answer_garbage || behaviour_ == Behaviour::answer_pings) {
                for (int fd : clients_) fds.push_back({fd, POLLIN, 0});
            }
            if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
            if (fds[0].revents & POLLIN) {
                const int fd = ::accept(listener_, nullptr, nullptr);
                if (behaviour_ == Behaviour::close_at_once)
                    ::close(fd);
                else
                    clients_.push_back(fd);
            }
            for (std::size_t i = 1; i < fds.size(); ++i) {
                if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
                char buffer[4096];
                const auto n = ::read(fds[i].fd, buffer, sizeof buffer);
                if (n > 0 && behaviour_ == Behaviour::answer_pings) {
                    answer_pings(fds[i].fd, i - 1, static_cast<std::size_t>(n));
                } else if (n > 0) {
                    const char garbage[] = "?this is not RESP\r\n";
                    (void)!::write(fds[i].fd, garbage, sizeof garbage - 1);
                } else {
                    ::close(fds[i].fd);
                    clients_[i - 1] = -1;  // poll() skips negative descriptors
                }
            }
        }
    }

    // One +PONG per complete PING request ("*1\r\n$4\r\nPING\r\n") received, all in one write,
    // once at least batch_ are waiting.
    void answer_pings(int fd, std::size_t client, std::size_t received) {
        static constexpr std::size_t request_size = 14;
        pending_.resize(clients_.size());
        pending_[client] += received;
        if (pending_[client] < batch_ * request_size) return;
        std::string replies;
        for (; pending_[client] >= request_size; pending_[client] -= request_size)
            replies += "+PONG\r\n";
        if (!replies.empty()) (void)!::write(fd, replies.data(), replies.size());
    }

    Behaviour behaviour_;
    int listener_ = -1;
    int port_ = 0;
    std::vector<int> clients_;
    std::vector<std::size_t> pending_;  // answer_pings: bytes of a request not yet answered
    std::atomic<bool> stop_{false};
    std::atomic<bool> reset_wanted_{false};
    std::atomic<std::size_t> batch_{1};
    std::thread thread_;
};

}  // namespace seatlock::testing
