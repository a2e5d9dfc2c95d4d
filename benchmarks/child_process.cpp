// SPDX-License-Identifier: MIT
// benchmarks/child_process.cpp: posix_spawn, pipes and /proc. posix_spawn rather than
// fork: the benchmark may have threads running (a backend's background thread), and a
// spawned child runs none of the parent's code before exec.
#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace seatlock::bench {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> argv_of(const std::vector<std::string>& argv) {
    std::vector<char*> out;
    for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
    out.push_back(nullptr);
    return out;
}

// Spawns `argv` with the given file actions; the pid, or -1 with errno set.
pid_t spawn(const std::vector<std::string>& argv, posix_spawn_file_actions_t& actions) {
    pid_t pid = -1;
    auto args = argv_of(argv);
    const int err = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    if (err != 0) {
        errno = err;
        return -1;
    }
    return pid;
}

// Waits for `pid` until `deadline`, then kills it: its exit code, or nothing when it was
// killed or died of a signal.
std::optional<int> reap(pid_t pid, Clock::time_point deadline) {
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) return std::nullopt;
        if (Clock::now() >= deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return std::nullopt;
}

// Fields of /proc/<pid>/stat after the command name, which may hold spaces.
std::vector<std::string> stat_fields(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    std::vector<std::string> fields;
    if (close == std::string::npos) return fields;
    std::istringstream rest(text.substr(close + 1));
    for (std::string f; rest >> f;) fields.push_back(f);
    return fields;
}

}  // namespace

std::optional<std::string> find_on_path(std::string_view program) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        if (dir.empty()) continue;
        const std::string candidate = dir + "/" + std::string(program);
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return std::nullopt;
}

std::optional<int> run_to_end(const std::vector<std::string>& argv, const std::string& log,
                              std::chrono::seconds timeout) {
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                       O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const pid_t pid = spawn(argv, actions);
    ::posix_spawn_file_actions_destroy(&actions);
    if (pid < 0) return std::nullopt;
    return reap(pid, Clock::now() + timeout);
}

std::string last_line_of(const std::string& path) {
    std::ifstream in(path);
    std::string last;
    for (std::string line; std::getline(in, line);) {
        if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    }
    return last;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_file) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
    if (::pipe2(out, O_CLOEXEC) != 0) {
        ::close(in[0]);
        ::close(in[1]);
        throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
    }
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    ::posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    ::posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_ = spawn(argv, actions);
    const int spawn_errno = errno;
    ::posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    if (pid_ < 0) {
        close_stdin();
        ::close(stdout_);
        throw std::runtime_error("cannot start " + argv.front() + ": " +
                                 std::strerror(spawn_errno));
    }
    // A peer that stops reading must not kill the benchmark with SIGPIPE.
    ::signal(SIGPIPE, SIG_IGN);
}

ChildProcess::~ChildProcess() {
    close_stdin();
    if (!exited_) (void)wait(std::chrono::seconds(5));
    ::close(stdout_);
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        const auto newline = buffer_.find('\n');
        if (newline != std::string::npos) {
            std::string line = buffer_.substr(0, newline);
            buffer_.erase(0, newline + 1);
            return line;
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return std::nullopt;
        pollfd p{stdout_, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return std::nullopt;
        char chunk[65536];
        const ssize_t n = ::read(stdout_, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::nullopt;
        buffer_.append(chunk, static_cast<std::size_t>(n));
    }
}

void ChildProcess::write_line(std::string_view line) {
    std::string text(line);
    text += '\n';
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(stdin_, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error("the peer stopped reading its input");
        done += static_cast<std::size_t>(n);
    }
}

void ChildProcess::close_stdin() noexcept {
    if (stdin_ >= 0) ::close(stdin_);
    stdin_ = -1;
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
    exited_ = true;
    return reap(pid_, Clock::now() + timeout);
}

double ChildProcess::cpu_seconds() const {
    // utime and stime are fields 14 and 15 of the stat line, 12 and 13 after the name.
    const auto fields = stat_fields(pid_);
    if (fields.size() < 14) return 0;
    const double ticks = std::stod(fields[11]) + std::stod(fields[12]);
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::int64_t ChildProcess::peak_resident_kib() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
    }
    return 0;
}

std::int64_t ChildProcess::resident_kib() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
    }
    return 0;
}

}  // namespace seatlock::bench
