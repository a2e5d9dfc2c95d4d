// SPDX-License-Identifier: MIT
// tests/support/redis_admin.hpp: a plain hiredis connection (or, to a server that serves
// TLS only, an AdminStream with hiredis's parser) with which a test looks at, and
// interferes with, the server behind RedisBackend's back: MONITOR, key snapshots,
// FUNCTION FLUSH, CLIENT KILL, DEBUG SLEEP, direct FCALLs.
#pragma once

#include "support/redis_server.hpp"

#include <hiredis/hiredis.h>
#include <sys/types.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <initializer_list>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace seatlock::testing {

class RedisAdmin {
public:
    struct ReplyDeleter {
        void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
    };
    using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

    /// `connector`: the connection is its stream (TLS), not hiredis's.
    explicit RedisAdmin(int port, const std::string& password = {},
                        const AdminConnector& connector = {}) {
        if (connector) {
            stream_ = connector(port);
            reader_ = redisReaderCreate();
            if (!password.empty()) expect_ok({"AUTH", password});
            return;
        }
        ctx_ = redisConnect("127.0.0.1", port);
        if (!ctx_ || ctx_->err) {
            const std::string why = ctx_ ? ctx_->errstr : "oom";
            redisFree(ctx_);  // no destructor runs for a constructor that throws
            throw std::runtime_error("admin connection failed: " + why);
        }
        if (!password.empty()) expect_ok({"AUTH", password});
    }
    ~RedisAdmin() {
        if (ctx_) redisFree(ctx_);
        if (reader_) redisReaderFree(reader_);
    }
    RedisAdmin(const RedisAdmin&) = delete;
    RedisAdmin& operator=(const RedisAdmin&) = delete;

    /// Sends a command and returns its reply (error replies included).
    Reply command(const std::vector<std::string>& args) {
        send(args);
        return reply();
    }
    Reply command(std::initializer_list<std::string_view> args) {
        return command(std::vector<std::string>(args.begin(), args.end()));
    }

    /// Writes a command without waiting for its reply (collect it later with reply()).
    void send(const std::vector<std::string>& args) {
        std::vector<const char*> argv;
        std::vector<std::size_t> lengths;
        for (const auto& a : args) {
            argv.push_back(a.data());
            lengths.push_back(a.size());
        }
        if (stream_) {
            char* formatted = nullptr;
            const int n = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()),
                                                 argv.data(), lengths.data());
            if (n < 0) throw std::runtime_error("cannot format " + args.front());
            const std::string bytes(formatted, static_cast<std::size_t>(n));
            redisFreeCommand(formatted);
            stream_->write(bytes);
            return;
        }
        redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lengths.data());
        for (int done = 0; !done;) {
            if (redisBufferWrite(ctx_, &done) != REDIS_OK) throw std::runtime_error(ctx_->errstr);
        }
    }
    Reply reply() {
        void* raw = nullptr;
        if (stream_) {
            for (;;) {
                if (redisReaderGetReply(reader_, &raw) != REDIS_OK)
                    throw std::runtime_error(reader_->errstr);
                if (raw) return Reply(static_cast<redisReply*>(raw));
                char buffer[4096];
                const std::size_t n = stream_->read(buffer, sizeof buffer);
                redisReaderFeed(reader_, buffer, n);
            }
        }
        if (redisGetReply(ctx_, &raw) != REDIS_OK) throw std::runtime_error(ctx_->errstr);
        return Reply(static_cast<redisReply*>(raw));
    }

    std::string text(std::initializer_list<std::string_view> args) {
        auto r = command(args);
        if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
            throw std::runtime_error(
                "not a string reply to " + std::string(*args.begin()) +
                (r->type == REDIS_REPLY_ERROR ? ": " + std::string(r->str, r->len) : ""));
        }
        return {r->str, r->len};
    }
    long long integer(std::initializer_list<std::string_view> args) {
        auto r = command(args);
        if (r->type != REDIS_REPLY_INTEGER)
            throw std::runtime_error("not an integer reply to " + std::string(*args.begin()));
        return r->integer;
    }
    /// A number of INFO <section>: info_field("stats", "total_reads_processed").
    long long info_field(std::string_view section, const std::string& field) {
        const std::string info = text({"INFO", section});
        const auto at = info.find(field + ":");
        if (at == std::string::npos) throw std::runtime_error("INFO has no " + field);
        return std::stoll(info.substr(at + field.size() + 1));
    }
    void expect_ok(std::initializer_list<std::string_view> args) {
        if (text(args) != "OK") throw std::runtime_error("not OK: " + std::string(*args.begin()));
    }

    /// Every key of the current database with its DUMP: equal snapshots, equal data.
    std::map<std::string, std::string> snapshot() {
        std::map<std::string, std::string> keys;
        auto list = command({"KEYS", "*"});
        for (std::size_t i = 0; i < list->elements; ++i) {
            const std::string key(list->element[i]->str, list->element[i]->len);
            auto dump = command({"DUMP", key});
            keys[key] = dump->type == REDIS_REPLY_STRING ? std::string(dump->str, dump->len) : "";
        }
        return keys;
    }

private:
    redisContext* ctx_ = nullptr;
    std::unique_ptr<AdminStream> stream_;  // instead of ctx_, with reader_
    redisReader* reader_ = nullptr;
};

/// Watches the server with MONITOR and reports the commands clients sent, leaving out
/// those that scripts ran inside the server.
class CommandMonitor {
public:
    explicit CommandMonitor(int port) : monitor_(port), marker_(port) {
        if (monitor_.command({"MONITOR"})->type != REDIS_REPLY_STATUS)
            throw std::runtime_error("MONITOR refused");
    }

    /// The names (lower case) of the commands clients sent while `step` ran, in order.
    template <typename F>
    std::vector<std::string> commands_of(F&& step) {
        read_until_marker();  // what ran before is not part of the window
        step();
        return read_until_marker();
    }

private:
    // MONITOR reports commands in the order they ran: everything before the marker this
    // sends now has already been reported when the marker shows up.
    std::vector<std::string> read_until_marker() {
        const std::string marker = "seatlock-monitor-marker-" + std::to_string(++markers_);
        marker_.command({"ECHO", marker});
        std::vector<std::string> commands;
        for (;;) {
            auto line = monitor_.reply();
            const std::string text(line->str,
                                   line->len);  // 1700000000.1 [0 127.0.0.1:5000] "FCALL" ...
            if (text.find(marker) != std::string::npos) return commands;
            const auto source = text.find('[');
            if (text.compare(text.find(' ', source) + 1, 4, "lua]") == 0) continue;
            const auto open = text.find('"', source) + 1;
            std::string name = text.substr(open, text.find('"', open) - open);
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            commands.push_back(name);
        }
    }

    RedisAdmin monitor_;
    RedisAdmin marker_;
    int markers_ = 0;
};

/// The redis-server on `port` stopped with SIGSTOP while this lives (SIGCONT at the end,
/// also when a check throws: a stopped server would never end on SIGTERM). Its clients'
/// requests wait in its socket meanwhile.
class StoppedServer {
public:
    explicit StoppedServer(int port) {
        const std::string info = RedisAdmin(port).text({"INFO", "server"});
        const auto at = info.find("process_id:");
        if (at == std::string::npos) throw std::runtime_error("INFO server tells no process_id");
        pid_ = static_cast<pid_t>(std::stol(info.substr(at + 11)));
        ::kill(pid_, SIGSTOP);
    }
    ~StoppedServer() { ::kill(pid_, SIGCONT); }
    StoppedServer(const StoppedServer&) = delete;
    StoppedServer& operator=(const StoppedServer&) = delete;

private:
    pid_t pid_ = -1;
};

/// The redis-server on `port` made to sleep 0.3 s (DEBUG SLEEP), with CLIENT KILL TYPE
/// normal queued behind the sleep: it runs when the server wakes, ahead of what clients
/// write meanwhile, which is then in flight, read from its socket or still in it, when
/// its connection is killed. Lives until the kill ran (its two connections stay open).
class KillOnWake {
public:
    explicit KillOnWake(int port) : sleeper_(port), killer_(port) {
        sleeper_.send({"DEBUG", "SLEEP", "0.3"});
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        killer_.send({"CLIENT", "KILL", "TYPE", "normal"});
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }

private:
    RedisAdmin sleeper_;
    RedisAdmin killer_;
};

}  // namespace seatlock::testing
