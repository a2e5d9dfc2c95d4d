// SPDX-License-Identifier: MIT
// tests/support/ticketing_server.cpp: process control for TicketingServer.
#include "ticketing_server.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#ifndef SEATLOCK_TICKETING_BINARY
#error "SEATLOCK_TICKETING_BINARY must name the seatlock-ticketing executable"
#endif

namespace seatlock::testing {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

// The port from the server's "listening on http://127.0.0.1:PORT" line, or 0.
int listening_port(const std::string& log) {
    const std::string marker = "listening on http://127.0.0.1:";
    const auto at = log.find(marker);
    if (at == std::string::npos) return 0;
    return std::atoi(log.c_str() + at + marker.size());
}

class ReadOnlyDb {
public:
    explicit ReadOnlyDb(const std::string& path) {
        if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
            const std::string why = sqlite3_errmsg(db_);
            sqlite3_close(db_);
            throw std::runtime_error("cannot open " + path + ": " + why);
        }
        sqlite3_busy_timeout(db_, 2000);
    }
    ~ReadOnlyDb() {
        sqlite3_finalize(stmt_);
        sqlite3_close(db_);
    }
    ReadOnlyDb(const ReadOnlyDb&) = delete;
    ReadOnlyDb& operator=(const ReadOnlyDb&) = delete;

    // Prepares and steps `sql`; true when it produced a row (readable with stmt()).
    bool query(const std::string& sql, const std::vector<std::string>& params) {
        if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
            throw std::runtime_error("bad query " + sql + ": " + sqlite3_errmsg(db_));
        }
        for (std::size_t i = 0; i < params.size(); ++i) {
            sqlite3_bind_text(stmt_, static_cast<int>(i + 1), params[i].c_str(), -1,
                              SQLITE_TRANSIENT);
        }
        const int rc = sqlite3_step(stmt_);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            throw std::runtime_error("query " + sql + " failed: " + sqlite3_errmsg(db_));
        }
        return rc == SQLITE_ROW;
    }
    sqlite3_stmt* stmt() const { return stmt_; }

private:
    sqlite3* db_ = nullptr;
    sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace

TicketingServer::TicketingServer(Options options, const Environment& environment) {
    char pattern[] = "/tmp/seatlock-ticketing-XXXXXX";
    if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;

    std::vector<std::string> args = {
        SEATLOCK_TICKETING_BINARY, "--listen", "127.0.0.1:0", "--db", db_path(), "--threads", "4"};
    if (options.trust_user_header) args.emplace_back("--trust-user-header");
    if (options.venue) {
        const std::string venue = dir_ + "/venue.json";
        std::ofstream(venue) << *options.venue;
        args.insert(args.end(), {"--venue", venue});
    }
    args.insert(args.end(), options.args.begin(), options.args.end());

    try {
        start(args, environment);
    } catch (...) {
        if (pid_ > 0) stop(SIGKILL);
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        throw;
    }
}

void TicketingServer::start(std::vector<std::string> args, const Environment& environment) {
    const std::string log_path = dir_ + "/server.log";
    const pid_t parent = ::getpid();
    // Everything the child needs is prepared before fork: it may only make system calls.
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    // The test's environment, but for the variables `environment` gives.
    std::vector<std::string> variables;
    for (char** entry = environ; *entry; ++entry) {
        const std::string variable = *entry;
        bool replaced = false;
        for (const auto& extra : environment)
            replaced = replaced || variable.starts_with(extra.first + "=");
        if (!replaced) variables.push_back(variable);
    }
    for (const auto& [name, value] : environment) variables.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (auto& variable : variables) envp.push_back(variable.data());
    envp.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
        // A test that crashes must not leave its server running.
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(125);
        const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (log_fd < 0) ::_exit(126);
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
        ::execve(argv[0], argv.data(), envp.data());
        ::_exit(127);
    }

    const bool started = eventually(
        [&] {
            port_ = listening_port(log());
            int status = 0;
            if (port_ == 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("seatlock-ticketing exited at start:\n" + log());
            }
            return port_ != 0;
        },
        std::chrono::seconds(20));
    const bool healthy = started && eventually(
                                        [&] {
                                            try {
                                                return client().get("/healthz").status == 200;
                                            } catch (const std::exception&) {
                                                return false;
                                            }
                                        },
                                        std::chrono::seconds(10));
    if (!healthy) throw std::runtime_error("seatlock-ticketing did not answer /healthz:\n" + log());
}

TicketingServer::~TicketingServer() {
    if (pid_ > 0) stop(SIGKILL);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
}

std::string TicketingServer::log() const {
    return read_file(dir_ + "/server.log");
}

int TicketingServer::stop(int signal, std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, signal);
    int status = 0;
    const bool ended =
        eventually([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
    if (!ended) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
    if (!ended) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::int64_t TicketingServer::db_count(const std::string& sql,
                                       const std::vector<std::string>& params) const {
    ReadOnlyDb db(db_path());
    if (!db.query(sql, params)) throw std::runtime_error("no row from " + sql);
    return sqlite3_column_int64(db.stmt(), 0);
}

std::optional<std::string> TicketingServer::db_text(const std::string& sql,
                                                    const std::vector<std::string>& params) const {
    ReadOnlyDb db(db_path());
    if (!db.query(sql, params)) return std::nullopt;
    const auto* text = sqlite3_column_text(db.stmt(), 0);
    return text ? std::optional<std::string>(reinterpret_cast<const char*>(text)) : std::nullopt;
}

}  // namespace seatlock::testing
