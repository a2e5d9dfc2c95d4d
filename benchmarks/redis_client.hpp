// benchmarks/redis_client.hpp: the hiredis calls the benchmark makes itself: a blocking
// connection (one per caller of the hand-written baselines, one for the statistics), and
// the server counters read around every Redis run.
//
// Three counters are read, because they answer three questions:
//   commands  the sum of `calls` over INFO commandstats: every command Redis executed,
//             including the ones a Lua script ran inside the server;
//   replies   total_writes_processed from INFO stats: one per request/reply exchange
//             for clients that wait for each reply, i.e. the round trips clients made;
//   cpu       used_cpu_user + used_cpu_sys from INFO cpu: the server's CPU time. Redis
//             runs commands on one thread, so this bounds the operations per second any
//             number of clients can get out of one server.
// The statistics connection's own INFO calls are taken out of the first two.
#pragma once

#include <hiredis/hiredis.h>
#include <sys/time.h>

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

/// The server counters at one instant.
struct ServerCounters {
    std::uint64_t commands = 0;  ///< commands executed, INFO itself left out
    std::uint64_t replies = 0;   ///< replies written, the one to this INFO left out
    double cpu_seconds = 0;      ///< server CPU time, user + system
};

/// What happened between two reads of the counters.
struct CounterDelta {
    std::uint64_t commands = 0;
    std::uint64_t replies = 0;
    double cpu_seconds = 0;
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
    c.cpu_seconds =
        detail::info_decimal(text, "used_cpu_user:") + detail::info_decimal(text, "used_cpu_sys:");
    for (std::size_t at = text.find("cmdstat_"); at != std::string_view::npos;
         at = text.find("cmdstat_", at + 1)) {
        const std::size_t colon = text.find(':', at);
        if (text.substr(at, colon - at) == "cmdstat_info") continue;
        c.commands += detail::info_number(text, "calls=", colon);
    }
    return c;
}

/// The work clients caused between `before` and `after`, both read with read_counters on
/// the same connection.
inline CounterDelta between(const ServerCounters& before, const ServerCounters& after) {
    // `after` counts the reply to the INFO that read `before`.
    return {after.commands - before.commands, after.replies - before.replies - 1,
            after.cpu_seconds - before.cpu_seconds};
}

/// used_memory from INFO memory, in bytes.
inline std::int64_t used_memory(Connection& stats) {
    Reply r = stats.command({"INFO", "memory"});
    const std::string_view text(Connection::expect(r, REDIS_REPLY_STRING, "INFO")->str, r->len);
    return static_cast<std::int64_t>(detail::info_number(text, "used_memory:"));
}

}  // namespace seatlock::bench
