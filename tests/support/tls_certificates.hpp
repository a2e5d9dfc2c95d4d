// SPDX-License-Identifier: MIT
// tests/support/tls_certificates.hpp: certificates for TLS to a private redis-server, made
// at run time with the openssl command line: a CA, a server certificate it signed (for
// 127.0.0.1 and localhost), a client certificate it signed, and another CA that signed
// neither; EC P-256 keys, in a temporary directory removed at the end. And the
// redis-server arguments that serve TLS with them on a port of the server's own
// (RedisServer keeps its plain port too: its readiness check and admin connections use it).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "redis_server.hpp"

namespace seatlock::testing {

class TlsCertificates {
public:
    /// Throws std::runtime_error with openssl's output when a step fails.
    TlsCertificates() {
        static std::atomic<int> made{0};
        dir_ = std::filesystem::temp_directory_path() /
               ("seatlock-tls-" + std::to_string(::getpid()) + "-" + std::to_string(++made));
        std::filesystem::create_directories(dir_);
        const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
        auto ca = [&](const std::string& name) {
            run("openssl req -x509 " + key + " -days 2 -subj /CN=seatlock-test-" + name +
                " -keyout " + path(name + ".key") + " -out " + path(name + ".crt"));
        };
        auto signed_by_ca = [&](const std::string& name, const std::string& extensions) {
            std::ofstream(dir_ / (name + ".ext")) << extensions << "\n";
            run("openssl req " + key + " -subj /CN=" + name + " -keyout " + path(name + ".key") +
                " -out " + path(name + ".csr"));
            run("openssl x509 -req -days 2 -in " + path(name + ".csr") + " -CA " + path("ca.crt") +
                " -CAkey " + path("ca.key") + " -CAcreateserial -extfile " + path(name + ".ext") +
                " -out " + path(name + ".crt"));
        };
        ca("ca");
        ca("other-ca");
        signed_by_ca("server", "subjectAltName=IP:127.0.0.1,DNS:localhost");
        signed_by_ca("client", "extendedKeyUsage=clientAuth");
    }
    ~TlsCertificates() {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    TlsCertificates(const TlsCertificates&) = delete;
    TlsCertificates& operator=(const TlsCertificates&) = delete;

    /// A file of the directory: ca.crt, other-ca.crt, server.crt/.key, client.crt/.key.
    [[nodiscard]] std::string path(const std::string& file) const { return (dir_ / file).string(); }

    /// redis-server arguments: TLS on a free port of its own (CONFIG GET tls-port tells
    /// which) with the server certificate; `client_certificates`: clients must present a
    /// certificate the CA signed (tls-auth-clients yes).
    [[nodiscard]] std::vector<std::string> server_arguments(bool client_certificates) const {
        return {"--tls-port",         RedisServer::another_free_port,
                "--tls-cert-file",    path("server.crt"),
                "--tls-key-file",     path("server.key"),
                "--tls-ca-cert-file", path("ca.crt"),
                "--tls-auth-clients", client_certificates ? "yes" : "no"};
    }

private:
    void run(const std::string& command) const {
        const std::string log = path("openssl.log");
        if (std::system((command + " >>" + log + " 2>&1").c_str()) != 0) {
            std::ifstream in(log);
            std::stringstream text;
            text << in.rdbuf();
            throw std::runtime_error("failed: " + command + "\n" + text.str());
        }
    }

    std::filesystem::path dir_;
};

}  // namespace seatlock::testing
