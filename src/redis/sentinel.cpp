// SPDX-License-Identifier: MIT
// src/redis/sentinel.cpp: the primary of a Redis Sentinel service, found and found again
// (sentinel.hpp says how and why).
#include "sentinel.hpp"

#include <hiredis/hiredis.h>

#include <charconv>
#include <chrono>
#include <thread>
#include <vector>

namespace seatlock::redis_detail {

namespace {

// The pause between two rounds over the sentinels while a failover is under way.
constexpr std::chrono::milliseconds round_pause{100};

std::string address(const std::string& host, int port) {
    return host + ":" + std::to_string(port);
}

bool is_readonly(const redisReply& reply) {
    return reply.type == REDIS_REPLY_ERROR &&
           std::string_view(reply.str, reply.len).substr(0, 8) == "READONLY";
}

// Not applied, and the primary may be gone or demoted: worth sending again to the one
// found anew.
bool not_applied(const Result<ReplyPtr>& reply) {
    if (reply) return is_readonly(**reply);
    const Failure& f = reply.error();
    return f.is(errc::connection_failed) || f.is(errc::io_error) || f.is(errc::timeout);
}

}  // namespace

SentinelRouter::SentinelRouter(const RedisOptions& options, std::shared_ptr<Telemetry> telemetry,
                               std::shared_ptr<boost::asio::ssl::context> tls)
    : options_(options), telemetry_(std::move(telemetry)), tls_(std::move(tls)) {
    for (const auto& sentinel : options_.sentinels) {
        RedisOptions o = options_;
        o.host = sentinel.host;
        o.port = sentinel.port;
        o.user = options_.sentinel_user;
        o.password = options_.sentinel_password;
        o.db = 0;
        o.pool_size = 1;  // discoveries take turns
        sentinel_pools_.push_back(std::make_shared<ConnectionPool>(
            o, telemetry_, RedisEvent::Connection::discovery, tls_));
    }
}

bool SentinelRouter::signals_failover(const Result<ReplyPtr>& reply) {
    if (reply) return is_readonly(**reply);
    return not_applied(reply) || reply.error().is(errc::outcome_unknown);
}

std::shared_ptr<ConnectionPool> SentinelRouter::pool_at(const std::string& host, int port) {
    std::lock_guard lock(mutex_);
    auto& pool = pools_[address(host, port)];
    if (!pool) {
        RedisOptions o = options_;
        o.host = host;
        o.port = port;
        pool =
            std::make_shared<ConnectionPool>(o, telemetry_, RedisEvent::Connection::pooled, tls_);
    }
    return pool;
}

std::optional<SentinelRouter::Primary> SentinelRouter::known() {
    std::lock_guard lock(mutex_);
    return primary_;
}

void SentinelRouter::suspect(std::uint64_t generation) {
    std::lock_guard lock(mutex_);
    if (primary_ && primary_->generation == generation) suspected_ = true;
}

Result<SentinelRouter::Primary> SentinelRouter::primary() {
    const auto now = std::chrono::steady_clock::now();
    std::optional<Primary> current;
    {
        std::lock_guard lock(mutex_);
        if (primary_ && !suspected_) {
            if (now - checked_ < recheck_period) return *primary_;
            current = primary_;
        }
    }
    if (current) {
        // One caller looks; the others go on meanwhile with the primary known.
        std::unique_lock one_at_a_time(discovering_, std::try_to_lock);
        if (!one_at_a_time.owns_lock()) return *current;
        bool moved = false;
        for (std::size_t i = 0; i < options_.sentinels.size(); ++i) {
            auto named = name(i);
            if (!named) continue;
            moved = named->host != current->host || named->port != current->port;
            break;
        }
        std::lock_guard lock(mutex_);
        checked_ = now;  // when no sentinel answers either: the next look is a period away
        if (!moved) return *current;
        if (primary_ && primary_->generation == current->generation) suspected_ = true;
    }
    return discover();
}

Result<SentinelRouter::Primary> SentinelRouter::discover() {
    std::uint64_t seen = 0;
    {
        std::lock_guard lock(mutex_);
        seen = discoveries_;
    }
    std::lock_guard one_at_a_time(discovering_);
    {
        std::lock_guard lock(mutex_);
        if (discoveries_ != seen) {  // another caller's discovery ended while this one waited
            if (primary_ && !suspected_) return *primary_;
            if (last_failure_) return *last_failure_;
        }
    }
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + options_.discovery_timeout;
    Failure last(errc::connection_failed, "no sentinel was asked");
    for (;;) {
        for (std::size_t i = 0; i < options_.sentinels.size(); ++i) {
            auto found = ask(i);
            if (found) {
                std::string before;
                {
                    std::lock_guard lock(mutex_);
                    if (primary_) before = address(primary_->host, primary_->port);
                    found->generation = primary_ ? primary_->generation + 1 : 1;
                    primary_ = *found;
                    suspected_ = false;
                    checked_ = clock::now();
                    ++discoveries_;
                    last_failure_.reset();
                }
                const std::string now = address(found->host, found->port);
                if (now != before && telemetry_ && telemetry_->observed()) {
                    RedisEvent event;
                    event.kind = RedisEvent::Kind::primary_changed;
                    event.connection = RedisEvent::Connection::discovery;
                    event.node = now;
                    event.previous = before;
                    telemetry_->emit(std::move(event));
                }
                return *found;
            }
            last = std::move(found).error();
            if (clock::now() >= deadline) break;
        }
        // Refused credentials: another round would not change them.
        if (last.is(errc::auth_failed) || clock::now() + round_pause >= deadline) break;
        std::this_thread::sleep_for(round_pause);
    }
    std::string sentinels;
    for (const auto& s : options_.sentinels) {
        sentinels += (sentinels.empty() ? "" : ", ") + address(s.host, s.port);
    }
    const bool refused = last.is(errc::auth_failed);
    Failure failure(
        refused ? errc::auth_failed : errc::connection_failed,
        "no primary of Redis Sentinel service '" + options_.sentinel_service + "' found" +
            (refused ? std::string()
                     : " within " + std::to_string(options_.discovery_timeout.count()) + " ms") +
            " (sentinels " + sentinels + "); the last answer: " + last.detail);
    std::lock_guard lock(mutex_);
    ++discoveries_;
    last_failure_ = failure;
    return failure;
}

Result<RedisNode> SentinelRouter::name(std::size_t index) {
    const RedisNode& sentinel = options_.sentinels[index];
    const std::string at = "Redis Sentinel at " + address(sentinel.host, sentinel.port);
    auto lease = sentinel_pools_[index]->lease();
    if (!lease) {
        Failure f = std::move(lease).error();
        f.detail = at + ": " + f.detail;
        return f;
    }
    const std::vector<std::string_view> argv{"SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                                             options_.sentinel_service};
    auto reply = lease->command(argv);
    if (!reply) {
        Failure f = std::move(reply).error();
        f.detail = at + ": " + f.detail;
        return f;
    }
    const redisReply& r = **reply;
    if (r.type == REDIS_REPLY_ERROR) {
        return error_reply_failure(std::string_view(r.str, r.len),
                                   at + ", SENTINEL GET-MASTER-ADDR-BY-NAME");
    }
    if (r.type == REDIS_REPLY_NIL) {
        return Failure(errc::connection_failed,
                       at + " monitors no service named '" + options_.sentinel_service + "'");
    }
    int port = 0;
    if (r.type != REDIS_REPLY_ARRAY || r.elements != 2 ||
        r.element[0]->type != REDIS_REPLY_STRING || r.element[1]->type != REDIS_REPLY_STRING ||
        std::from_chars(r.element[1]->str, r.element[1]->str + r.element[1]->len, port).ec !=
            std::errc{}) {
        return Failure(errc::protocol_error,
                       at + " answered SENTINEL GET-MASTER-ADDR-BY-NAME with something else than "
                            "{host, port}");
    }
    return RedisNode{std::string(r.element[0]->str, r.element[0]->len), port};
}

Result<SentinelRouter::Primary> SentinelRouter::ask(std::size_t index) {
    auto node = name(index);
    if (!node) return std::move(node).error();
    const RedisNode& sentinel = options_.sentinels[index];
    const std::string named = address(node->host, node->port) + " (named by Redis Sentinel at " +
                              address(sentinel.host, sentinel.port) + ")";

    // The sentinel may not have seen a failover yet: the node must say it is the primary.
    Primary found{node->host, node->port, pool_at(node->host, node->port), 0};
    auto primary_lease = found.pool->lease();
    if (!primary_lease) {
        Failure f = std::move(primary_lease).error();
        f.detail = named + ": " + f.detail;
        return f;
    }
    const std::vector<std::string_view> role{"ROLE"};
    auto answer = primary_lease->command(role);
    if (!answer) {
        Failure f = std::move(answer).error();
        f.detail = named + ": " + f.detail;
        return f;
    }
    const redisReply& a = **answer;
    if (a.type == REDIS_REPLY_ERROR) {
        return error_reply_failure(std::string_view(a.str, a.len), named + ", ROLE");
    }
    if (a.type != REDIS_REPLY_ARRAY || a.elements == 0 ||
        (a.element[0]->type != REDIS_REPLY_STRING && a.element[0]->type != REDIS_REPLY_STATUS)) {
        return Failure(errc::protocol_error,
                       named + " answered ROLE with something else than a role");
    }
    const std::string_view is(a.element[0]->str, a.element[0]->len);
    if (is != "master") {
        return Failure(errc::connection_failed,
                       named + " says it is a " + std::string(is) + ", not the primary");
    }
    return found;
}

Result<ReplyPtr> SentinelRouter::run(std::string_view what, const Attempt& attempt) {
    const auto started = std::chrono::steady_clock::now();
    for (;;) {
        auto primary_now = primary();
        if (!primary_now) {
            Failure f = std::move(primary_now).error();
            f.detail = std::string(what) + " not sent: " + f.detail;
            return f;
        }
        auto lease = primary_now->pool->lease();
        Result<ReplyPtr> reply = lease ? attempt(*lease) : Result<ReplyPtr>(lease.error());
        if (!signals_failover(reply)) return reply;
        suspect(primary_now->generation);
        // Sent again only when it was not applied, and while the bound allows.
        if (!not_applied(reply) ||
            std::chrono::steady_clock::now() - started >= options_.discovery_timeout) {
            return reply;
        }
    }
}

}  // namespace seatlock::redis_detail
