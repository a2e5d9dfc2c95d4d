// SPDX-License-Identifier: MIT
// tests/support/tls_admin.hpp: what a test needs to start and look at servers that serve
// TLS only (`port 0`, TLS on their port: a connection in clear finds no one listening):
// their arguments, redis-cli's, and a blocking OpenSSL stream for RedisAdmin and for the
// readiness check (TlsOnly, redis_server.hpp). Programs that include it link OpenSSL.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"
#include "support/tls_certificates.hpp"

namespace seatlock::testing {

/// A verified TLS connection to 127.0.0.1:`port` with the CA and client certificate of
/// `certs`; every socket read or write gives up after `timeout`.
class TlsStream : public AdminStream {
public:
    TlsStream(int port, const TlsCertificates& certs, std::chrono::milliseconds timeout) {
        context_ = SSL_CTX_new(TLS_client_method());
        if (!context_ ||
            SSL_CTX_load_verify_locations(context_, certs.path("ca.crt").c_str(), nullptr) != 1 ||
            SSL_CTX_use_certificate_chain_file(context_, certs.path("client.crt").c_str()) != 1 ||
            SSL_CTX_use_PrivateKey_file(context_, certs.path("client.key").c_str(),
                                        SSL_FILETYPE_PEM) != 1) {
            clean_up();
            throw std::runtime_error("cannot set up a TLS client with " + certs.path("ca.crt"));
        }
        SSL_CTX_set_verify(context_, SSL_VERIFY_PEER, nullptr);
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        timeval limit{static_cast<time_t>(timeout.count() / 1000),
                      static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<std::uint16_t>(port));
        ssl_ = SSL_new(context_);
        if (fd_ < 0 || !ssl_ ||
            ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            SSL_set_fd(ssl_, fd_) != 1 || SSL_connect(ssl_) != 1) {
            clean_up();
            throw std::runtime_error("no TLS connection to port " + std::to_string(port));
        }
    }
    ~TlsStream() override { clean_up(); }
    TlsStream(const TlsStream&) = delete;
    TlsStream& operator=(const TlsStream&) = delete;

    void write(std::string_view bytes) override {
        while (!bytes.empty()) {
            const int n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
            if (n <= 0) throw std::runtime_error("TLS write failed");
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
    }
    std::size_t read(char* buffer, std::size_t size) override {
        const int n = SSL_read(ssl_, buffer, static_cast<int>(size));
        if (n <= 0) throw std::runtime_error("TLS read failed (closed, or no reply in time)");
        return static_cast<std::size_t>(n);
    }

private:
    void clean_up() {
        if (ssl_) SSL_free(ssl_);
        if (fd_ >= 0) ::close(fd_);
        if (context_) SSL_CTX_free(context_);
        ssl_ = nullptr;
        fd_ = -1;
        context_ = nullptr;
    }

    SSL_CTX* context_ = nullptr;
    SSL* ssl_ = nullptr;
    int fd_ = -1;
};

/// Servers that serve TLS only with the certificates of `certs` (which must outlive what
/// is started with it): the server certificate, no client certificate required (the
/// single-server TLS tests cover that), and TLS between the servers too (`tls-cluster`,
/// `tls-replication`: Cluster buses, MIGRATE, replicas and sentinels), so that what they
/// announce to clients (CLUSTER SLOTS, MOVED, Sentinel's primary) are TLS ports.
inline TlsOnly tls_only(const TlsCertificates& certs) {
    TlsOnly t;
    // clang-format off: name and value on each line
    t.server_arguments = {"--port",             "0",
                          "--tls-port",         RedisServer::this_port,
                          "--tls-cert-file",    certs.path("server.crt"),
                          "--tls-key-file",     certs.path("server.key"),
                          "--tls-ca-cert-file", certs.path("ca.crt"),
                          "--tls-auth-clients", "no",
                          "--tls-cluster",      "yes",
                          "--tls-replication",  "yes"};
    // clang-format on
    t.cli_arguments = "--tls --cacert " + certs.path("ca.crt") + " --cert " +
                      certs.path("client.crt") + " --key " + certs.path("client.key");
    const TlsCertificates* from = &certs;
    t.admin = [from](int port) -> std::unique_ptr<AdminStream> {
        return std::make_unique<TlsStream>(port, *from, std::chrono::seconds(10));
    };
    t.answering_pid = [from](int port) -> long {
        try {
            RedisAdmin admin(port, {}, [from](int p) -> std::unique_ptr<AdminStream> {
                return std::make_unique<TlsStream>(p, *from, std::chrono::milliseconds(200));
            });
            return admin.info_field("server", "process_id");
        } catch (const std::exception&) {
            return 0;
        }
    };
    return t;
}

}  // namespace seatlock::testing
