// SPDX-License-Identifier: MIT
// tests/examples/run_example.cpp: runs one of the example programs (examples/*.cpp) as a
// user would, and checks its exit status and what it printed.
//
//     run_example none    <program> <expected text>...   the program alone
//     run_example redis   <program> <expected text>...   with the URL of a redis-server
//                                                        started here
//     run_example cluster <program> <expected text>...   with a Redis Cluster started here
//                                                        (3 primaries, a replica each), URL
//                                                        ?replicas_to_ack=1; then again with
//                                                        every replica stopped (SIGSTOP),
//                                                        where it must exit 2, not_replicated
//
// A run must exit 0 (2 for the stopped replicas) within its time limit and print every
// expected text. Never skips: a missing redis-server fails the test, saying so.
#include "support/redis_cluster.hpp"
#include "support/redis_server.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Run {
    int status = -1;  // the exit status; -1 when it did not exit by itself in time
    std::string output;
};

// Runs `program url` (no url when empty), its stdout and stderr in one pipe; kills it
// when it is still running after `limit`.
Run run(const std::string& program, const std::string& url, std::chrono::seconds limit) {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
    std::vector<std::string> args{program};
    if (!url.empty()) args.push_back(url);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        ::dup2(out[1], STDOUT_FILENO);
        ::dup2(out[1], STDERR_FILENO);
        ::close(out[0]);
        ::close(out[1]);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    ::close(out[1]);
    Run result;
    const auto deadline = Clock::now() + limit;
    bool killed = false;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left <= 0ms && !killed) {
            ::kill(pid, SIGKILL);
            killed = true;
        }
        pollfd p{out[0], POLLIN, 0};
        ::poll(&p, 1, killed ? 1000 : static_cast<int>(std::min<long long>(left.count(), 1000)));
        if (p.revents == 0) continue;
        char buffer[4096];
        const ssize_t n = ::read(out[0], buffer, sizeof buffer);
        if (n <= 0) break;  // the program and everything it started closed the pipe
        result.output.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(out[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!killed && WIFEXITED(status)) result.status = WEXITSTATUS(status);
    return result;
}

// Whether `run` exited with `status` and printed each of `expected`; says what it saw.
bool check(const char* what, const Run& run, int status, const std::vector<std::string>& expected) {
    std::printf("--- %s: exit status %d, output:\n%s---\n", what, run.status, run.output.c_str());
    bool ok = true;
    if (run.status != status) {
        std::printf("FAILED: expected exit status %d%s\n", status,
                    run.status == -1 ? " (it did not end by itself in time and was killed)" : "");
        ok = false;
    }
    for (const auto& text : expected) {
        if (run.output.find(text) == std::string::npos) {
            std::printf("FAILED: the output lacks \"%s\"\n", text.c_str());
            ok = false;
        }
    }
    return ok;
}

// The value of `field` in INFO output ("" when absent).
std::string info_field(const std::string& info, const std::string& field) {
    const auto at = info.find(field + ":");
    if (at == std::string::npos) return {};
    const auto from = at + field.size() + 1;
    return info.substr(from, info.find_first_of("\r\n", from) - from);
}

// What `redis-cli -p <port>` printed for `commands` (one a line), sent on one connection.
std::string cli_session(int port, const std::string& commands) {
    const std::string line = "printf '" + commands + "' | redis-cli -p " + std::to_string(port) + " 2>&1";
    FILE* pipe = ::popen(line.c_str(), "r");
    if (!pipe) throw std::runtime_error("cannot run " + line);
    std::string output;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    ::pclose(pipe);
    return output;
}

// Waits until every primary of `cluster` has a replica that acknowledges its writes, and
// answers the replicas' ports: a new cluster's replicas finish their first sync after the
// cluster says it is ok, and until they acknowledge, WAIT counts none. A primary writes
// (FLUSHALL of its empty data, which replicates) and WAITs on the same connection, as a
// write of the example will.
std::vector<int> replicas_in_sync(const seatlock::testing::RedisCluster& cluster) {
    const auto deadline = Clock::now() + 30s;
    for (;;) {
        std::vector<int> replicas;
        int primaries_acknowledged = 0;
        for (const int port : cluster.ports()) {
            const std::string info = cluster.cli("-p " + std::to_string(port) + " INFO replication").second;
            if (info_field(info, "role") == "slave") {
                if (info_field(info, "master_link_status") == "up") replicas.push_back(port);
            } else if (cli_session(port, "FLUSHALL\\nWAIT 1 100\\n").find("OK\n1\n") != std::string::npos) {
                ++primaries_acknowledged;
            }
        }
        if (primaries_acknowledged == seatlock::testing::RedisCluster::primaries &&
            replicas.size() == seatlock::testing::RedisCluster::primaries) {
            return replicas;
        }
        if (Clock::now() > deadline) {
            throw std::runtime_error("the cluster's replicas did not acknowledge writes within 30 s");
        }
        std::this_thread::sleep_for(50ms);
    }
}

// Stops the processes of the nodes on `ports` (SIGSTOP) for as long as it lives: they
// stay connected and acknowledge nothing. SIGCONT at the end, also when a check throws
// (a stopped redis-server would never end on its RedisServer's SIGTERM).
class Stopped {
public:
    Stopped(const seatlock::testing::RedisCluster& cluster, const std::vector<int>& ports) {
        for (const int port : ports) {
            const std::string info = cluster.cli("-p " + std::to_string(port) + " INFO server").second;
            const pid_t pid = static_cast<pid_t>(std::stol(info_field(info, "process_id")));
            if (::kill(pid, SIGSTOP) != 0) throw std::runtime_error("cannot stop a replica");
            pids_.push_back(pid);
        }
    }
    ~Stopped() {
        for (const pid_t pid : pids_) ::kill(pid, SIGCONT);
    }
    Stopped(const Stopped&) = delete;
    Stopped& operator=(const Stopped&) = delete;

private:
    std::vector<pid_t> pids_;
};

int main_checked(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s none|redis|cluster <program> <expected text>...\n", argv[0]);
        return 2;
    }
    const std::string mode = argv[1];
    const std::string program = argv[2];
    const std::vector<std::string> expected(argv + 3, argv + argc);

    if (mode == "none") return check(program.c_str(), run(program, "", 60s), 0, expected) ? 0 : 1;
    if (mode == "redis") {
        seatlock::testing::RedisServer server;
        return check(program.c_str(), run(program, server.url(), 60s), 0, expected) ? 0 : 1;
    }
    if (mode == "cluster") {
        seatlock::testing::RedisCluster cluster;
        const auto replicas = replicas_in_sync(cluster);
        bool ok = check("every replica running", run(program, cluster.url() + "?replicas_to_ack=1", 60s),
                        0, expected);
        // Without acknowledgements, every write waits replica_ack_timeout_ms and is
        // answered not_replicated: the program stops at the hold and exits 2. The event's
        // creation is not checked here: the first run created it, so this one changes
        // nothing, and WAIT on a connection that wrote nothing may count a stopped
        // replica that acknowledged everything before it stopped (acknowledged, rightly).
        Stopped stopped(cluster, replicas);
        ok = check("every replica stopped",
                   run(program, cluster.url() + "?replicas_to_ack=1&replica_ack_timeout_ms=200", 60s), 2,
                   {"hold         not_replicated: applied on the primary, acknowledged by 0 of 1"}) &&
             ok;
        return ok ? 0 : 1;
    }
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return main_checked(argc, argv);
    } catch (const std::exception& e) {
        std::printf("FAILED: %s\n", e.what());
        return 1;
    }
}
