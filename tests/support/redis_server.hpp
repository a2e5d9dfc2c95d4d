// SPDX-License-Identifier: MIT
// tests/support/redis_server.hpp: starts a private redis-server for one test program (or
// benchmark) on a free loopback port, in a temporary directory, without persistence,
// and stops it at the end. Never skips: a missing redis-server binary is an error that
// says how to install it.
//
// A port found free may be taken by another program before the server binds it (ctest -j
// runs many at once). The start therefore trusts only its own child: it counts the server
// as started when the server answering on the port reports the child's process id
// (INFO server), and starts again on another port when the child could not bind its own.
// A server may also serve TLS only on its port (TlsOnly, made by tls_admin.hpp): its
// readiness is then asked over TLS.
#pragma once

#include <arpa/inet.h>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <netinet/in.h>
#include <stdexcept>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <vector>

namespace seatlock::testing {

/// A test's own byte stream to a server, for servers hiredis cannot reach (TLS: made by
/// tests/support/tls_admin.hpp). Both calls throw std::runtime_error when the stream broke.
class AdminStream {
public:
    virtual ~AdminStream() = default;
    virtual void write(std::string_view bytes) = 0;
    /// Some bytes, at least one, into `buffer`.
    virtual std::size_t read(char* buffer, std::size_t size) = 0;
};
/// Opens an AdminStream to the server on a loopback port; throws when it cannot.
using AdminConnector = std::function<std::unique_ptr<AdminStream>(int port)>;

/// What starts a server that serves TLS only (`port 0`: a connection in clear finds no one)
/// and what looks at it: made by tls_admin.hpp's tls_only(), for RedisServer, RedisCluster
/// and RedisSentinel.
struct TlsOnly {
    /// redis-server arguments: `--port 0` and TLS on RedisServer::this_port, with certificates.
    std::vector<std::string> server_arguments;
    /// redis-cli arguments that speak TLS to such a server.
    std::string cli_arguments;
    /// Admin connections (RedisAdmin) over TLS.
    AdminConnector admin;
    /// The process id the server on a port reports (INFO server) over TLS; 0 when nothing
    /// answers so within a short time.
    std::function<long(int port)> answering_pid;
};

/// The path of one of Redis's programs (redis-server, redis-cli); throws, saying who
/// `needs` it and which Debian `package` has it, when it is not installed.
inline std::string redis_program(const std::string& name, const std::string& needs,
                                 const std::string& package) {
    for (const std::string dir : {"/usr/bin/", "/usr/local/bin/"}) {
        if (::access((dir + name).c_str(), X_OK) == 0) return dir + name;
    }
    throw std::runtime_error(name + " not found: " + needs + " (Debian: apt-get install " +
                             package + ", or run ./dev test as root, which installs it)");
}

class RedisServer {
public:
    /// Starts redis-server with `extra` arguments appended (e.g. {"--requirepass", "s3cret"}).
    /// A `config` that is not empty is written to redis.conf in the server's directory and
    /// named first (a sentinel, {"--sentinel"}, needs a configuration file it can rewrite).
    /// An argument equal to `another_free_port` is replaced by a free port of its own, drawn
    /// again on each attempt (e.g. a cluster node's bus port, {"--cluster-port",
    /// RedisServer::another_free_port}).
    /// `first_port`: the port tried first, when it is not 0 (tests of this start).
    /// `tls_only`: the server serves TLS only, on port() (its arguments come after `extra`);
    /// its readiness is asked over TLS.
    explicit RedisServer(std::vector<std::string> extra = {}, const std::string& config = {},
                         int first_port = 0, const TlsOnly* tls_only = nullptr)
        : extra_(std::move(extra)) {
        if (tls_only) {
            extra_.insert(extra_.end(), tls_only->server_arguments.begin(),
                          tls_only->server_arguments.end());
            probe_ = tls_only->answering_pid;
        }
        binary_ = find_binary();
        char pattern[] = "/tmp/seatlock-redis-XXXXXX";
        if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
        dir_ = pattern;
        if (!config.empty()) {
            config_file_ = dir_ + "/redis.conf";
            std::ofstream(config_file_) << config;
        }
        start_on_some_port(first_port);
    }
    ~RedisServer() {
        stop();
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    int port() const { return port_; }
    std::string host() const { return "127.0.0.1"; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    /// The server's Unix domain socket (it listens on one beside its port, in its directory).
    std::string unix_socket() const { return dir_ + "/redis.sock"; }
    std::string unix_url() const { return "unix://" + unix_socket(); }
    bool running() const { return pid_ > 0; }
    /// The server's process id while it runs (-1 once stopped).
    pid_t pid() const { return pid_; }

    /// Stops the server (SIGTERM, then waits for it).
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
    }
    /// Starts it again on the same port and arguments (after stop()); throws when the port
    /// was taken in between.
    void restart() {
        stop();
        if (start(port_, resolved_) != Start::ok)
            throw std::runtime_error("redis-server could not bind port " + std::to_string(port_) +
                                     " again: another program took it; see " + dir_ + "/redis.log");
    }

    /// The placeholder for a port of its own among the constructor's `extra` arguments.
    static constexpr const char* another_free_port = "{another free port}";
    /// The placeholder for port() itself among them (TLS on it, with `--port 0`).
    static constexpr const char* this_port = "{this port}";

private:
    static std::string find_binary() {
        return redis_program("redis-server", "the Redis tests need it", "redis-server");
    }

    /// A loopback TCP port nobody listens on right now (any other program may take it
    /// next: a server is started on it only through start_on_some_port()).
    static int free_port() {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        socklen_t len = sizeof addr;
        if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            ::close(fd);
            throw std::runtime_error("no free loopback port");
        }
        ::close(fd);
        return ntohs(addr.sin_port);
    }

    // The process id the server on `port` reports (INFO server), after AUTH with
    // `password` when it has one; 0 when nothing there answers so, within a short time.
    static long answering_pid(int port, const std::string& password) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return 0;
        timeval limit{0, 200 * 1000};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<std::uint16_t>(port));
        long pid = 0;
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
            std::string request;
            if (!password.empty())
                request += "*2\r\n$4\r\nAUTH\r\n$" + std::to_string(password.size()) + "\r\n" +
                           password + "\r\n";
            request += "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n";
            std::string reply;
            if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
                const std::string field = "\r\nprocess_id:";
                char buffer[4096];
                for (;;) {
                    const auto at = reply.find(field);
                    const auto line_end =
                        at == std::string::npos ? at : reply.find("\r\n", at + field.size());
                    if (line_end != std::string::npos) {
                        pid = std::atol(reply.c_str() + at + field.size());
                        break;
                    }
                    const ssize_t n = ::read(fd, buffer, sizeof buffer);
                    if (n <= 0) break;
                    reply.append(buffer, static_cast<std::size_t>(n));
                }
            }
        }
        ::close(fd);
        return pid;
    }

    std::string log_text() const {
        std::ifstream in(dir_ + "/redis.log");
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }

    // Starts on `first_port` (when not 0) or a free port; on a port another program took
    // first, again on another, up to 20 times.
    void start_on_some_port(int first_port) {
        for (int attempt = 0; attempt < 20; ++attempt) {
            std::vector<std::string> resolved = extra_;
            for (auto& argument : resolved)
                if (argument == another_free_port) argument = std::to_string(free_port());
            const int port = attempt == 0 && first_port != 0 ? first_port : free_port();
            if (start(port, std::move(resolved)) == Start::ok) return;
            // What the attempt wrote (a cluster node's nodes.conf names its ports) goes.
            for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
                std::error_code ignored;
                if (entry.path() != config_file_) std::filesystem::remove_all(entry.path(), ignored);
            }
        }
        throw std::runtime_error("redis-server found every port it tried taken; see " + dir_ +
                                 "/redis.log");
    }

    enum class Start { ok, port_taken };

    // Starts the server on `port` with `extra` arguments; ok once the server answering on
    // the port is this child, port_taken when the child exited for an address in use.
    Start start(int port, std::vector<std::string> extra) {
        port_ = port;
        resolved_ = std::move(extra);
        std::vector<std::string> args = {binary_, "--port", std::to_string(port), "--bind", "127.0.0.1",
                                         "--save", "", "--appendonly", "no", "--dir", dir_,
                                         "--daemonize", "no", "--loglevel", "warning",
                                         "--logfile", dir_ + "/redis.log"};
        // A Unix socket beside the port, for the tests of RedisOptions::unix_socket.
        args.insert(args.end(), {"--unixsocket", unix_socket(), "--unixsocketperm", "700"});
        args.insert(args.end(), resolved_.begin(), resolved_.end());
        for (auto& argument : args)
            if (argument == this_port) argument = std::to_string(port);
        if (!config_file_.empty()) args.insert(args.begin() + 1, config_file_);
        std::string password;
        for (std::size_t i = 0; i + 1 < resolved_.size(); ++i)
            if (resolved_[i] == "--requirepass") password = resolved_[i + 1];
        // The log of an earlier attempt must not be read as this one's.
        std::error_code ignored;
        std::filesystem::remove(dir_ + "/redis.log", ignored);
        // Everything the child needs is built before fork(): allocating in the child of a
        // multithreaded process can deadlock.
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a crashed test leaves no server behind
            ::execv(binary_.c_str(), argv.data());
            ::_exit(127);
        }
        // The child's end is looked at first: whatever answers on the port after the child
        // has exited is another program's server.
        for (int i = 0; i < 1000; ++i) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                if (log_text().find("Address already in use") != std::string::npos)
                    return Start::port_taken;
                throw std::runtime_error("redis-server exited at start; see " + dir_ + "/redis.log");
            }
            if ((probe_ ? probe_(port) : answering_pid(port, password)) == pid_) return Start::ok;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        stop();
        throw std::runtime_error("redis-server did not answer on port " + std::to_string(port));
    }

    std::vector<std::string> extra_;
    std::vector<std::string> resolved_;  // extra_, with its free ports drawn
    std::string binary_;
    std::string dir_;
    std::string config_file_;  // empty: none
    std::function<long(int port)> probe_;  // set: the readiness check (over TLS)
    int port_ = 0;
    pid_t pid_ = -1;
};

/// A loopback port that refuses every connection while this lives: bound and never
/// listening, so no other program can start a server on it meanwhile (a port a test wants
/// to find nobody on).
class ClosedPort {
public:
    ClosedPort() {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            if (fd_ >= 0) ::close(fd_);
            throw std::runtime_error("no free loopback port");
        }
        port_ = ntohs(addr.sin_port);
    }
    ~ClosedPort() { ::close(fd_); }
    ClosedPort(const ClosedPort&) = delete;
    ClosedPort& operator=(const ClosedPort&) = delete;

    int port() const { return port_; }

private:
    int fd_ = -1;
    int port_ = 0;
};

}  // namespace seatlock::testing
