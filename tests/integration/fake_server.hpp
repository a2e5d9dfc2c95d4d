// tests/integration/fake_server.hpp: a TCP server on a free loopback port that is not
// Redis, for the failures a real server will not produce on demand: a peer that never
// reads what it is sent, one that hangs up at once, one that answers with bytes that
// are not RESP.
#pragma once

#include <arpa/inet.h>
#include <atomic>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace seatlock::testing {

class FakeServer {
public:
    enum class Behaviour {
        never_read,      ///< accepts and keeps the connection, reading nothing
        close_at_once,   ///< accepts and closes the connection
        answer_garbage,  ///< answers whatever it receives with a line that is not RESP
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

private:
    void serve() {
        while (!stop_) {
            std::vector<pollfd> fds{{listener_, POLLIN, 0}};
            if (behaviour_ == Behaviour::answer_garbage) {
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
                if (::read(fds[i].fd, buffer, sizeof buffer) > 0) {
                    const char garbage[] = "?this is not RESP\r\n";
                    (void)!::write(fds[i].fd, garbage, sizeof garbage - 1);
                } else {
                    ::close(fds[i].fd);
                    clients_[i - 1] = -1;  // poll() skips negative descriptors
                }
            }
        }
    }

    Behaviour behaviour_;
    int listener_ = -1;
    int port_ = 0;
    std::vector<int> clients_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace seatlock::testing
