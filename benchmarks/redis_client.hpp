// SPDX-License-Identifier: MIT
// benchmarks/redis_client.hpp: the hiredis calls the benchmark makes itself: a blocking
// connection (one per caller of the hand-written baselines, one for the statistics), and
// the server counters read around every Redis run.
//
// The counters answer these questions:
//   commands  the sum of `calls` over INFO commandstats: every command Redis executed,
//             including the ones a Lua script ran inside the server;
//   replies   total_writes_processed from INFO stats: one per request/reply exchange
//             for clients that wait for each reply, i.e. the round trips clients made
//             (a client with many requests in flight gets several replies per write);
//   reads     total_reads_processed from INFO stats: the socket reads Redis made of
//             requests. Requests per read says how much one system call carried: 1 for
//             clients that wait for each reply, more when requests arrive together;
//   scripts   calls and time of FCALL, EVALSHA and EVAL from INFO commandstats: a script
//             is always a client's request (scripts cannot call scripts), and its
//             usec_per_call is what the server spent on it, its commands included;
//   cpu       used_cpu_user + used_cpu_sys from INFO cpu: the server's CPU time. Redis
//             runs commands on one thread, so this bounds the operations per second any
//             number of clients can get out of one server.
// The statistics connection's own INFO calls are taken out of the counts.
#pragma once

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace seatlock::bench {

struct ReplyDeleter {
    void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
/// A reply owned by the caller.
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

/// One blocking hiredis connection. Transport errors throw: a benchmark cannot go on
/// without its server.
class Connection {
public:
    Connection(const std::string& host, int port) {
        const timeval timeout{5, 0};
        context_.reset(redisConnectWithTimeout(host.c_str(), port, timeout));
        if (!context_ || context_->err) {
            throw std::runtime_error(
                "cannot connect to redis at " + host + ":" + std::to_string(port) +
                (context_ ? std::string(": ") + context_->errstr : std::string()));
        }
        redisSetTimeout(context_.get(), timeout);
    }

    /// Sends one command and waits for its reply (which may be a Redis error reply).
    Reply command(std::initializer_list<std::string_view> args) {
        append(args);
        return reply();
    }

    /// Queues a command without waiting: pair every append with one reply().
    void append(std::initializer_list<std::string_view> args) {
        constexpr std::size_t max_args = 16;
        if (args.size() > max_args) throw std::logic_error("too many arguments");
        const char* argv[max_args];
        std::size_t lengths[max_args];
        std::size_t n = 0;
        for (std::string_view a : args) {
            argv[n] = a.data();
            lengths[n] = a.size();
            ++n;
        }
        if (redisAppendCommandArgv(context_.get(), static_cast<int>(n), argv, lengths) !=
            REDIS_OK) {
            throw std::runtime_error(std::string("redis: ") + context_->errstr);
        }
    }

    /// The reply to the oldest command sent and not yet answered.
    Reply reply() {
        void* raw = nullptr;
        if (redisGetReply(context_.get(), &raw) != REDIS_OK || raw == nullptr) {
            throw std::runtime_error(std::string("redis: ") + context_->errstr);
        }
        return Reply(static_cast<redisReply*>(raw));
    }

    /// SCRIPT LOAD: the script's SHA1, for EVALSHA.
    std::string load_script(std::string_view body) {
        Reply r = command({"SCRIPT", "LOAD", body});
        return std::string(expect(r, REDIS_REPLY_STRING, "SCRIPT LOAD")->str);
    }

    /// Throws unless the reply has the given type; returns it for reading.
    static const redisReply* expect(const Reply& r, int type, std::string_view what) {
        if (r->type != type) {
            throw std::runtime_error(std::string(what) + ": unexpected reply" +
                                     (r->type == REDIS_REPLY_ERROR
                                          ? std::string(": ") + r->str
                                          : " of type " + std::to_string(r->type)));
        }
        return r.get();
    }

private:
    struct ContextDeleter {
        void operator()(redisContext* c) const noexcept { redisFree(c); }
    };
    std::unique_ptr<redisContext, ContextDeleter> context_;
};

/// The commands that run a script or function, as INFO commandstats names them.
inline constexpr std::array<std::string_view, 3> script_commands{"fcall", "evalsha", "eval"};

/// Calls of one command and the server time they took.
struct CommandTime {
    std::uint64_t calls = 0;
    std::uint64_t usec = 0;
};

/// The server counters at one instant.
struct ServerCounters {
    std::uint64_t commands = 0;  ///< commands executed, INFO itself left out
    std::uint64_t replies = 0;   ///< replies written, the one to this INFO left out
    std::uint64_t reads = 0;     ///< socket reads of requests, the one of this INFO included
    std::array<CommandTime, script_commands.size()> scripts{};  ///< by script_commands
    double cpu_seconds = 0;                                     ///< server CPU time, user + system
};

/// What happened between two reads of the counters.
struct CounterDelta {
    std::uint64_t commands = 0;
    std::uint64_t replies = 0;
    std::uint64_t reads = 0;
    std::array<CommandTime, script_commands.size()> scripts{};
    double cpu_seconds = 0;

    CounterDelta& operator+=(const CounterDelta& other) {
        commands += other.commands;
        replies += other.replies;
        reads += other.reads;
        for (std::size_t i = 0; i < scripts.size(); ++i) {
            scripts[i].calls += other.scripts[i].calls;
            scripts[i].usec += other.scripts[i].usec;
        }
        cpu_seconds += other.cpu_seconds;
        return *this;
    }

    /// The requests clients sent. A script call is always one, and so is a reply written to
    /// a client that waits for each reply. Every client measured here either waits for each
    /// reply (the hand-written baselines, seatlock's blocking backend with one caller) or
    /// sends nothing but scripts and functions (node-redlock, seatlock's asynchronous API,
    /// its blocking calls pipelined), so the larger of the two counts is the exact one.
    [[nodiscard]] std::uint64_t requests() const {
        std::uint64_t calls = 0;
        for (const auto& s : scripts) calls += s.calls;
        return std::max(replies, calls);
    }
};

namespace detail {
// The unsigned number that follows `key` in an INFO text, from `from` on.
inline std::uint64_t info_number(std::string_view text, std::string_view key,
                                 std::size_t from = 0) {
    const std::size_t at = text.find(key, from);
    if (at == std::string_view::npos) throw std::runtime_error("INFO has no " + std::string(key));
    std::uint64_t value = 0;
    const char* begin = text.data() + at + key.size();
    std::from_chars(begin, text.data() + text.size(), value);
    return value;
}
// The decimal number that follows `key` in an INFO text.
inline double info_decimal(std::string_view text, std::string_view key) {
    const std::size_t at = text.find(key);
    if (at == std::string_view::npos) throw std::runtime_error("INFO has no " + std::string(key));
    return std::stod(
        std::string(text.substr(at + key.size(), text.find('\r', at) - at - key.size())));
}
}  // namespace detail

/// Reads the counters with one INFO call.
inline ServerCounters read_counters(Connection& stats) {
    Reply r = stats.command({"INFO", "stats", "cpu", "commandstats"});
    const std::string_view text(Connection::expect(r, REDIS_REPLY_STRING, "INFO")->str, r->len);
    ServerCounters c;
    // The INFO text is produced before its own reply is written: this call is not in
    // total_writes_processed yet, but the previous INFO call is.
    c.replies = detail::info_number(text, "total_writes_processed:");
    // The read of this INFO's request happened before the text was made: it is counted.
    c.reads = detail::info_number(text, "total_reads_processed:");
    c.cpu_seconds =
        detail::info_decimal(text, "used_cpu_user:") + detail::info_decimal(text, "used_cpu_sys:");
    for (std::size_t at = text.find("cmdstat_"); at != std::string_view::npos;
         at = text.find("cmdstat_", at + 1)) {
        const std::size_t colon = text.find(':', at);
        const std::string_view name = text.substr(at + 8, colon - at - 8);
        if (name == "info") continue;
        const std::uint64_t calls = detail::info_number(text, "calls=", colon);
        c.commands += calls;
        const auto script = std::find(script_commands.begin(), script_commands.end(), name);
        if (script != script_commands.end()) {
            auto& time = c.scripts[static_cast<std::size_t>(script - script_commands.begin())];
            time.calls = calls;
            time.usec = detail::info_number(text, "usec=", colon);
        }
    }
    return c;
}

/// The work clients caused between `before` and `after`, both read with read_counters on
/// the same connection.
inline CounterDelta between(const ServerCounters& before, const ServerCounters& after) {
    CounterDelta d;
    d.commands = after.commands - before.commands;
    // `after` counts the reply to the INFO that read `before`, and the read of its own.
    d.replies = after.replies - before.replies - 1;
    d.reads = after.reads - before.reads - 1;
    for (std::size_t i = 0; i < d.scripts.size(); ++i) {
        d.scripts[i].calls = after.scripts[i].calls - before.scripts[i].calls;
        d.scripts[i].usec = after.scripts[i].usec - before.scripts[i].usec;
    }
    d.cpu_seconds = after.cpu_seconds - before.cpu_seconds;
    return d;
}

/// used_memory from INFO memory, in bytes.
inline std::int64_t used_memory(Connection& stats) {
    Reply r = stats.command({"INFO", "memory"});
    const std::string_view text(Connection::expect(r, REDIS_REPLY_STRING, "INFO")->str, r->len);
    return static_cast<std::int64_t>(detail::info_number(text, "used_memory:"));
}

}  // namespace seatlock::bench
