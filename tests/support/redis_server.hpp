// tests/support/redis_server.hpp: starts a private redis-server for one test program (or
// benchmark) on a free loopback port, in a temporary directory, without persistence,
// and stops it at the end. Never skips: a missing redis-server binary is an error that
// says how to install it.
#pragma once

#include <arpa/inet.h>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <stdexcept>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace seatlock::testing {

class RedisServer {
public:
    /// Starts redis-server with `extra` arguments appended (e.g. {"--requirepass", "s3cret"}).
    /// A `config` that is not empty is written to redis.conf in the server's directory and
    /// named first (a sentinel, {"--sentinel"}, needs a configuration file it can rewrite).
    explicit RedisServer(std::vector<std::string> extra = {}, const std::string& config = {})
        : extra_(std::move(extra)) {
        binary_ = find_binary();
        char pattern[] = "/tmp/seatlock-redis-XXXXXX";
        if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
        dir_ = pattern;
        if (!config.empty()) {
            config_file_ = dir_ + "/redis.conf";
            std::ofstream(config_file_) << config;
        }
        start(free_port());
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
    /// Starts it again on the same port (after stop()).
    void restart() {
        stop();
        start(port_);
    }

private:
    static std::string find_binary() {
        for (const char* candidate : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
            if (::access(candidate, X_OK) == 0) return candidate;
        }
        throw std::runtime_error(
            "redis-server not found: the Redis tests need it (Debian: apt-get install "
            "redis-server, or run ./dev test as root, which installs it)");
    }

public:
    /// A loopback TCP port nobody listens on right now.
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

private:
    static bool answers_ping(int port) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<std::uint16_t>(port));
        bool ok = false;
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
            const char ping[] = "PING\r\n";
            char reply[64] = {};
            // Any reply (+PONG, or -NOAUTH with a password) means it is serving.
            ok = ::write(fd, ping, sizeof ping - 1) == static_cast<ssize_t>(sizeof ping - 1) &&
                 ::read(fd, reply, sizeof reply - 1) > 0;
        }
        ::close(fd);
        return ok;
    }

    void start(int port) {
        port_ = port;
        std::vector<std::string> args = {binary_, "--port", std::to_string(port), "--bind", "127.0.0.1",
                                         "--save", "", "--appendonly", "no", "--dir", dir_,
                                         "--daemonize", "no", "--loglevel", "warning",
                                         "--logfile", dir_ + "/redis.log"};
        // A Unix socket beside the port, for the tests of RedisOptions::unix_socket.
        args.insert(args.end(), {"--unixsocket", unix_socket(), "--unixsocketperm", "700"});
        args.insert(args.end(), extra_.begin(), extra_.end());
        if (!config_file_.empty()) args.insert(args.begin() + 1, config_file_);
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
        for (int i = 0; i < 500; ++i) {
            if (answers_ping(port)) return;
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("redis-server exited at start; see " + dir_ + "/redis.log");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        stop();
        throw std::runtime_error("redis-server did not answer on port " + std::to_string(port));
    }

    std::vector<std::string> extra_;
    std::string binary_;
    std::string dir_;
    std::string config_file_;  // empty: none
    int port_ = 0;
    pid_t pid_ = -1;
};

}  // namespace seatlock::testing
