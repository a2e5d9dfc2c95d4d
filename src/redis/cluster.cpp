// SPDX-License-Identifier: MIT
// src/redis/cluster.cpp: hash slots, the slot map and the following of redirections
// (cluster.hpp says which and why).
#include "cluster.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <thread>

namespace seatlock::redis_detail {

namespace {

// The map is refreshed at most this often after redirections or failures (many callers
// see the same MOVED at once), and at least this often otherwise.
constexpr std::chrono::milliseconds refresh_pause{100};
constexpr std::chrono::milliseconds refresh_period{60'000};
// Redirections and reconnections one call follows before it gives up (not applied).
constexpr int max_redirections = 16;

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as the Cluster spec defines it.
std::uint16_t crc16(std::string_view data) {
    std::uint16_t crc = 0;
    for (const char c : data) {
        crc = static_cast<std::uint16_t>(crc ^ (static_cast<unsigned char>(c) << 8));
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 0x8000U) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021U)
                                       : static_cast<std::uint16_t>(crc << 1);
        }
    }
    return crc;
}

bool starts_with(std::string_view text, std::string_view word) {
    return text.substr(0, word.size()) == word;
}

struct Redirection {
    bool ask = false;
    std::uint16_t slot = 0;
    std::string host;
    int port = 0;
};

// "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>"; an empty host means the
// node that answered (a node that does not know its own address).
std::optional<Redirection> redirection(const redisReply& reply, const std::string& asked_host) {
    if (reply.type != REDIS_REPLY_ERROR) return std::nullopt;
    const std::string_view text(reply.str, reply.len);
    Redirection r;
    std::string_view rest;
    if (starts_with(text, "MOVED ")) {
        rest = text.substr(6);
    } else if (starts_with(text, "ASK ")) {
        r.ask = true;
        rest = text.substr(4);
    } else {
        return std::nullopt;
    }
    const auto space = rest.find(' ');
    const auto colon = rest.rfind(':');
    if (space == std::string_view::npos || colon == std::string_view::npos || colon < space)
        return std::nullopt;
    unsigned slot = 0;
    const std::string_view slot_text = rest.substr(0, space);
    const std::string_view port_text = rest.substr(colon + 1);
    if (std::from_chars(slot_text.data(), slot_text.data() + slot_text.size(), slot).ec !=
            std::errc{} ||
        slot >= cluster_slots ||
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), r.port).ec !=
            std::errc{}) {
        return std::nullopt;
    }
    r.slot = static_cast<std::uint16_t>(slot);
    r.host = std::string(rest.substr(space + 1, colon - space - 1));
    if (r.host.empty()) r.host = asked_host;
    return r;
}

bool is_error(const redisReply& reply, std::string_view prefix) {
    return reply.type == REDIS_REPLY_ERROR &&
           starts_with(std::string_view(reply.str, reply.len), prefix);
}

// Failures after which the call was not applied and the node may be gone: the map is
// refreshed and the call sent again.
bool not_sent(const Failure& f) {
    return f.is(errc::connection_failed) || f.is(errc::io_error) || f.is(errc::timeout);
}

}  // namespace

std::uint16_t hash_slot(std::string_view key) {
    const auto open = key.find('{');
    if (open != std::string_view::npos) {
        const auto close = key.find('}', open + 1);
        if (close != std::string_view::npos && close != open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    return static_cast<std::uint16_t>(crc16(key) % cluster_slots);
}

Result<std::optional<std::uint16_t>> common_slot(std::span<const std::string> keys) {
    if (keys.empty()) return std::optional<std::uint16_t>();
    const std::uint16_t slot = hash_slot(keys.front());
    for (const auto& key : keys) {
        if (hash_slot(key) != slot) {
            return Failure(errc::invalid_argument,
                           "keys " + keys.front() + " and " + key +
                               " are in different Redis Cluster hash slots: one call cannot "
                               "span them");
        }
    }
    return std::optional<std::uint16_t>(slot);
}

std::string ClusterRouter::Node::address() const {
    return host + ":" + std::to_string(port);
}

ClusterRouter::ClusterRouter(const RedisOptions& options, std::shared_ptr<Telemetry> telemetry,
                             std::shared_ptr<boost::asio::ssl::context> tls)
    : options_(options), telemetry_(std::move(telemetry)), tls_(std::move(tls)) {
    owners_.fill(-1);
}

ClusterRouter::Node ClusterRouter::node(const std::string& host, int port) {
    Node n{host, port, nullptr};
    std::lock_guard lock(mutex_);
    auto& pool = pools_[n.address()];
    if (!pool) {
        RedisOptions o = options_;
        o.host = host;
        o.port = port;
        pool =
            std::make_shared<ConnectionPool>(o, telemetry_, RedisEvent::Connection::pooled, tls_);
    }
    n.pool = pool;
    return n;
}

std::optional<ClusterRouter::Node> ClusterRouter::owner(std::uint16_t slot) {
    std::lock_guard lock(mutex_);
    const auto index = owners_[slot];
    if (index < 0) return std::nullopt;
    return primaries_[static_cast<std::size_t>(index)];
}

void ClusterRouter::learn(std::uint16_t slot, const Node& node) {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(primaries_.begin(), primaries_.end(),
                           [&](const Node& n) { return n.address() == node.address(); });
    if (it == primaries_.end()) it = primaries_.insert(primaries_.end(), node);
    owners_[slot] = static_cast<std::int16_t>(it - primaries_.begin());
}

Result<void> ClusterRouter::refresh(std::chrono::milliseconds fresh_enough) {
    auto fresh = [&] {
        return ever_refreshed_ && std::chrono::steady_clock::now() - refreshed_ < fresh_enough;
    };
    {
        std::lock_guard lock(mutex_);
        if (fresh()) return {};
    }
    std::lock_guard one_at_a_time(refreshing_);
    std::vector<Node> candidates;
    {
        std::lock_guard lock(mutex_);
        if (fresh()) return {};  // another caller refreshed it meanwhile
        candidates = primaries_;
    }
    // The nodes known first (they are the cluster now), then the seeds (all known ones
    // may have gone).
    for (const auto& seed : options_.cluster_nodes) candidates.push_back(node(seed.host, seed.port));
    Failure last(errc::connection_failed, "no Redis Cluster node to ask");
    for (const auto& candidate : candidates) {
        if (!candidate.pool) continue;
        auto learnt = refresh_from(candidate);
        if (learnt) return learnt;
        last = std::move(learnt).error();
    }
    last.detail = "cannot learn the Redis Cluster slot map from any of " +
                  std::to_string(candidates.size()) + " nodes; the last said: " + last.detail;
    return last;
}

Result<void> ClusterRouter::refresh_from(Node from) {
    auto lease = from.pool->lease();
    if (!lease) return std::move(lease).error();
    const std::vector<std::string_view> argv{"CLUSTER", "SLOTS"};
    auto reply = lease->command(argv);
    if (!reply) return std::move(reply).error();
    const redisReply& r = **reply;
    if (r.type == REDIS_REPLY_ERROR) {
        return error_reply_failure(std::string_view(r.str, r.len),
                                   "Redis CLUSTER SLOTS at " + from.address());
    }
    auto bad = [&](const std::string& why) {
        return Failure(errc::protocol_error,
                       "unexpected reply to CLUSTER SLOTS from " + from.address() + ": " + why);
    };
    if (r.type != REDIS_REPLY_ARRAY) return bad("not an array");
    // Each range: {start, end, {host, port, id, ...}, replicas...}; the third is the primary.
    std::vector<Node> primaries;
    std::array<std::int16_t, cluster_slots> owners{};
    owners.fill(-1);
    for (std::size_t i = 0; i < r.elements; ++i) {
        const redisReply* range = r.element[i];
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3) return bad("a short range");
        const redisReply* start = range->element[0];
        const redisReply* end = range->element[1];
        const redisReply* primary = range->element[2];
        if (start->type != REDIS_REPLY_INTEGER || end->type != REDIS_REPLY_INTEGER ||
            start->integer < 0 || end->integer >= static_cast<long long>(cluster_slots) ||
            start->integer > end->integer || primary->type != REDIS_REPLY_ARRAY ||
            primary->elements < 2 || primary->element[0]->type != REDIS_REPLY_STRING ||
            primary->element[1]->type != REDIS_REPLY_INTEGER) {
            return bad("a malformed range");
        }
        std::string host(primary->element[0]->str, primary->element[0]->len);
        // An empty host is the node that answered; '?' a node whose address is unknown yet.
        if (host.empty()) host = from.host;
        if (host == "?") continue;
        const int port = static_cast<int>(primary->element[1]->integer);
        const std::string address = host + ":" + std::to_string(port);
        auto it = std::find_if(primaries.begin(), primaries.end(),
                               [&](const Node& n) { return n.address() == address; });
        if (it == primaries.end()) it = primaries.insert(primaries.end(), node(host, port));
        const auto index = static_cast<std::int16_t>(it - primaries.begin());
        for (auto s = start->integer; s <= end->integer; ++s) owners[static_cast<std::size_t>(s)] = index;
    }
    if (primaries.empty()) return bad("no slot is served (is cluster-enabled on?)");
    const std::size_t count = primaries.size();
    {
        std::lock_guard lock(mutex_);
        primaries_ = std::move(primaries);
        owners_ = owners;
        refreshed_ = std::chrono::steady_clock::now();
        ever_refreshed_ = true;
    }
    if (telemetry_ && telemetry_->observed()) {
        telemetry_->emit(RedisEvent::Kind::slots_refreshed, RedisEvent::Connection::discovery,
                         from.address(), std::to_string(count) + " primaries");
    }
    return {};
}

Result<void> ClusterRouter::prepare() {
    return refresh(refresh_wanted_.exchange(false) ? refresh_pause : refresh_period);
}

ClusterRouter::Route::Route(ClusterRouter& router, std::optional<std::uint16_t> slot,
                            std::string what, bool may_block)
    : router_(router),
      slot_(slot),
      what_(std::move(what)),
      may_block_(may_block),
      started_(std::chrono::steady_clock::now()),
      last_(errc::io_error, what_ + " not sent") {}

std::optional<ClusterRouter::Route::Next> ClusterRouter::Route::next() {
    // `tries_` counts MOVED redirections and reconnections; ASK and TRYAGAIN, which a slot
    // migration answers for as long as it lasts, are bounded by the command timeout.
    for (;;) {
        if (tries_ >= max_redirections) {
            last_.detail += "; gave up after " + std::to_string(max_redirections) +
                            " redirections or reconnections";
            return std::nullopt;
        }
        if (std::chrono::steady_clock::now() - started_ > router_.options_.command_timeout)
            return std::nullopt;
        if (ask_) {
            Next target = std::move(*ask_);
            ask_.reset();
            asked_host_ = target.host;
            asked_address_ = target.host + ":" + std::to_string(target.port);
            return target;
        }
        std::optional<Node> owner;
        if (slot_) {
            owner = router_.owner(*slot_);
        } else {
            std::lock_guard lock(router_.mutex_);
            if (!router_.primaries_.empty()) owner = router_.primaries_.front();
        }
        if (owner) {
            asked_host_ = owner->host;
            asked_address_ = owner->address();
            return Next{owner->host, owner->port, owner->pool, false};
        }
        last_ = Failure(errc::io_error,
                        what_ + " not sent: no Redis Cluster primary serves slot " +
                            std::to_string(slot_.value_or(0)) + " (not applied)");
        ++tries_;
        if (!may_block_) {
            router_.refresh_wanted_ = true;
            return std::nullopt;
        }
        if (auto fresh = router_.refresh(refresh_pause); !fresh) {
            last_ = std::move(fresh).error();
            return std::nullopt;
        }
        std::this_thread::sleep_for(refresh_pause);
    }
}

ClusterRouter::Route::Verdict ClusterRouter::Route::after(const Result<ReplyPtr>& reply) {
    // Refreshes now on the blocking path, by the next call's prepare() on the other.
    auto refresh_soon = [&]() -> Result<void> {
        if (may_block_) return router_.refresh(refresh_pause);
        router_.refresh_wanted_ = true;
        return {};
    };
    if (!reply) {
        if (!not_sent(reply.error())) {
            // Sent and lost (outcome_unknown), or refused credentials: returned as is,
            // and the next call finds a fresh map if a failover is under way.
            if (reply.error().is(errc::outcome_unknown)) (void)refresh_soon();
            return Verdict::answer;
        }
        last_ = reply.error();
        ++tries_;
        if (!may_block_) {
            // The node may be gone; the map is not learnt here: the caller's retry finds
            // the new owner.
            router_.refresh_wanted_ = true;
            return Verdict::give_up;
        }
        if (auto fresh = router_.refresh(refresh_pause); !fresh) {
            last_ = std::move(fresh).error();
            return Verdict::give_up;
        }
        return Verdict::again;
    }
    const redisReply& r = **reply;
    if (auto moved = redirection(r, asked_host_)) {
        Node to = router_.node(moved->host, moved->port);
        last_ = Failure(errc::io_error, what_ + ": " + std::string(r.str, r.len) + " (not applied)");
        if (const auto& telemetry = router_.telemetry_; telemetry && telemetry->observed()) {
            RedisEvent event;
            event.kind = RedisEvent::Kind::redirected;
            event.connection =
                may_block_ ? RedisEvent::Connection::pooled : RedisEvent::Connection::pipelined;
            event.node = to.address();
            event.previous = asked_address_;
            event.reason = moved->ask ? "ASK" : "MOVED";
            event.slot = moved->slot;
            telemetry->emit(std::move(event));
        }
        if (moved->ask) {
            ask_ = Next{to.host, to.port, to.pool, true};
        } else {
            ++tries_;
            router_.learn(moved->slot, to);
            (void)refresh_soon();
        }
        return Verdict::again;
    }
    if (is_error(r, "TRYAGAIN") || is_error(r, "CLUSTERDOWN")) {
        // A migration splits the call's keys, or the cluster is reconfiguring: nothing
        // ran; again after a pause, while the command timeout allows.
        last_ = error_reply_failure(std::string_view(r.str, r.len), what_);
        pause_ = std::min<std::chrono::milliseconds>(
            std::chrono::milliseconds(2) * (1 << std::min(waits_++, 5)), refresh_pause);
        if (std::chrono::steady_clock::now() - started_ + pause_ > router_.options_.command_timeout)
            return Verdict::give_up;
        if (is_error(r, "CLUSTERDOWN")) (void)refresh_soon();
        return Verdict::pause;
    }
    return Verdict::answer;
}

Result<ReplyPtr> ClusterRouter::run(std::optional<std::uint16_t> slot, std::string_view what,
                                    const Attempt& attempt) {
    if (auto fresh = prepare(); !fresh) return std::move(fresh).error();
    Route route(*this, slot, std::string(what), true);
    for (;;) {
        auto target = route.next();
        if (!target) return route.failure();
        auto lease = target->pool->lease();
        Result<ReplyPtr> reply =
            lease ? attempt(*lease, target->asking) : Result<ReplyPtr>(lease.error());
        switch (route.after(reply)) {
            case Route::Verdict::answer:
                return reply;
            case Route::Verdict::again:
                continue;
            case Route::Verdict::pause:
                std::this_thread::sleep_for(route.pause());
                continue;
            case Route::Verdict::give_up:
                return route.failure();
        }
    }
}

Result<void> ClusterRouter::on_every_primary(std::string_view what, const Attempt& attempt) {
    if (auto fresh = refresh(std::chrono::milliseconds(0)); !fresh) return fresh;
    std::vector<Node> primaries;
    {
        std::lock_guard lock(mutex_);
        primaries = primaries_;
    }
    for (const auto& primary : primaries) {
        auto lease = primary.pool->lease();
        if (!lease) return std::move(lease).error();
        auto reply = attempt(*lease, false);
        if (!reply) return std::move(reply).error();
        if ((*reply)->type == REDIS_REPLY_ERROR) {
            return error_reply_failure(std::string_view((*reply)->str, (*reply)->len),
                                       std::string(what) + " at " + primary.address());
        }
    }
    return {};
}

}  // namespace seatlock::redis_detail
