// SPDX-License-Identifier: MIT
// src/redis/codecs/holds.hpp: the Redis encodings and replies of the operations on
// holds and orders: hold, confirm, release, extend, cancel, expired, ack_expired
// (lua/<name>.lua). See codec.hpp; the seat map and the change feed are in seat_map.hpp.
#pragma once

#include <seatlock/keys.hpp>

#include "../codec.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace seatlock::redis_detail {

namespace hold_codec {

// The event of a hold token; the same refusal as the in-process backends when malformed.
inline Result<std::string> event_of(const std::string& token) {
    const std::string_view event = token_event(token);
    if (event.empty()) return Failure(errc::unknown_hold, "malformed hold token");
    return std::string(event);
}

inline std::vector<std::string> expired_args(const Context& c, const std::string& event,
                                             std::size_t limit, Millis redeliver_after) {
    using A = redis_scripts::args::expired;
    auto args = arguments<A>();
    args[A::prefix] = c.keys.prefix();
    args[A::event] = event;
    args[A::limit] = std::to_string(limit);
    args[A::redeliver_after] = ms(redeliver_after);
    args[A::log_limit] = c.log_limit;
    return args;
}

inline Call<std::vector<ExpiredHold>> expired_call(const Context& c, const std::string& event,
                                                   std::size_t limit, Millis redeliver_after) {
    using Out = std::vector<ExpiredHold>;
    return make_call<Out>(
        redis_scripts::expired, c.event_keys(event),
        expired_args(c, event, limit, redeliver_after),
        standard<Out>(redis_scripts::expired, [event](const Reader& r) {
            Out found;
            const Reader list = r.array(1);
            for (std::size_t i = 0; i < list.size(); ++i) {
                // {token, holder, zone, {seats}, expired_at_ms}
                const Reader e = list.array(i);
                found.push_back({e.text(0), event, e.text(1), e.text(2), e.texts(3), wall(e.integer(4))});
            }
            return found;
        }));
}

// Every event is swept in its own call (its own Cluster slot), in id order, until the
// limit is met.
template <typename Exec, typename Done>
struct ExpiredWalk : std::enable_shared_from_this<ExpiredWalk<Exec, Done>> {
    ExpiredWalk(Exec e, const op::expired& o, Done d)
        : exec(std::move(e)), limit(o.limit), redeliver_after(o.redeliver_after), done(std::move(d)) {}
    Exec exec;
    std::size_t limit;
    Millis redeliver_after;
    Done done;
    std::vector<std::string> events;
    std::size_t next = 0;
    std::vector<ExpiredHold> out;

    void start() {
        exec.command({"HKEYS", exec.context().keys.events_index()},
                     [walk = this->shared_from_this()](Result<ReplyPtr> ids) {
                         if (!ids) return walk->done(std::move(ids).error());
                         try {
                             const Reader list(ids->get());
                             for (std::size_t i = 0; i < list.size(); ++i)
                                 walk->events.push_back(list.text(i));
                         } catch (const BadReply& e) {
                             return walk->done(Failure(errc::protocol_error,
                                                       std::string("unexpected reply to HKEYS: ") + e.what()));
                         }
                         std::sort(walk->events.begin(), walk->events.end());
                         walk->step();
                     });
    }
    void step() {
        if (next >= events.size() || out.size() >= limit) return done(std::move(out));
        const std::string& event = events[next++];
        exec.call(expired_call(exec.context(), event, limit - out.size(), redeliver_after),
                  [walk = this->shared_from_this()](Result<std::vector<ExpiredHold>> batch) {
                      if (!batch) return walk->done(std::move(batch).error());
                      for (auto& e : *batch) walk->out.push_back(std::move(e));
                      walk->step();
                  });
    }
};

inline Call<void> ack_call(const Context& c, const std::string& event,
                           const std::vector<std::string>& tokens) {
    using A = redis_scripts::args::ack_expired;
    auto args = arguments<A>(tokens.size());
    args[A::prefix] = c.keys.prefix();
    args[A::event] = event;
    args.insert(args.end(), tokens.begin(), tokens.end());  // from A::tokens
    return make_call<void>(redis_scripts::ack_expired, c.event_keys(event), std::move(args),
                           standard<void>(redis_scripts::ack_expired, [](const Reader&) {}));
}

// One call per event, in id order; malformed tokens name no hold and are as acknowledged
// as they can be, like in the in-process backends.
template <typename Exec, typename Done>
struct AckWalk : std::enable_shared_from_this<AckWalk<Exec, Done>> {
    AckWalk(Exec e, const op::ack_expired& o, Done d) : exec(std::move(e)), done(std::move(d)) {
        std::map<std::string, std::vector<std::string>> grouped;
        for (const auto& token : o.tokens) {
            const std::string_view event = token_event(token);
            if (!event.empty()) grouped[std::string(event)].push_back(token);
        }
        groups.assign(grouped.begin(), grouped.end());
    }
    Exec exec;
    Done done;
    std::vector<std::pair<std::string, std::vector<std::string>>> groups;
    std::size_t next = 0;

    void step() {
        if (next >= groups.size()) return done(Result<void>{});
        const auto& group = groups[next++];
        exec.call(ack_call(exec.context(), group.first, group.second),
                  [walk = this->shared_from_this()](Result<void> acked) {
                      if (!acked) return walk->done(std::move(acked));
                      walk->step();
                  });
    }
};

}  // namespace hold_codec

template <>
struct Codec<op::hold> {
    static Result<Call<Hold>> call(const Context& c, const op::hold& o) {
        const HoldCommand& cmd = o.cmd;
        const auto& req = cmd.request;
        auto ks = c.event_keys(cmd.event);
        ks.push_back(c.keys.event_key("free", cmd.event, req.zone));
        ks.push_back(c.keys.event_key("seats", cmd.event, req.zone));
        const auto n =
            req.kind == HoldKind::seats ? static_cast<std::int64_t>(req.seats.size()) : req.quantity;
        using A = redis_scripts::args::hold;
        auto args = arguments<A>(req.seats.size());
        args[A::prefix] = c.keys.prefix();
        args[A::event] = cmd.event;
        args[A::holder] = cmd.holder;
        args[A::token] = cmd.token;
        args[A::zone] = req.zone;
        args[A::kind] = to_string(req.kind);
        args[A::n] = std::to_string(n);
        args[A::ttl] = ms(cmd.ttl);
        args[A::max_seats] =
            std::to_string(std::clamp<std::int64_t>(cmd.limits.max_seats_per_holder, 0, max_script_ms));
        args[A::one_active] = cmd.limits.one_active_hold_per_holder ? "1" : "0";
        args[A::key] = cmd.idempotency_key;
        args[A::log_limit] = c.log_limit;
        // From A::seats: the seats asked for, by name.
        if (req.kind == HoldKind::seats) args.insert(args.end(), req.seats.begin(), req.seats.end());
        // The hold as made. A new hold of named seats is answered by "<expires_ms> <version>"
        // alone (a bulk string): its seats are the ones asked for.
        Hold made{cmd.token, cmd.event, cmd.holder, req.zone,
                  req.kind == HoldKind::seats ? req.seats : std::vector<std::string>{},
                  {}, HoldStatus::held, {}, false};
        auto read = standard<Hold>(redis_scripts::hold, [made](const Reader& r) {
            Hold hold = made;
            // {1, expires_ms, version, seats...} for a new hold of a quantity or the best
            // available.
            if (r.at(1)->type == REDIS_REPLY_INTEGER) {
                hold.seats.clear();
                for (std::size_t i = 3; i < r.size(); ++i) hold.seats.push_back(r.text(i));
                if (hold.seats.empty()) throw BadReply("a hold of no seat");
                hold.expires_at = wall(r.integer(1));
                hold.version = r.version(2);
                return hold;
            }
            // {1, zone, {seats}, expires_ms, status, order, replayed, version[, token]} for a
            // remembered one (its token, when replayed by its idempotency key).
            hold.zone = r.text(1);
            hold.seats = r.texts(2);
            hold.expires_at = wall(r.integer(3));
            hold.status = status_named(r.text(4));
            hold.order_id = r.text(5);
            hold.replayed = r.integer(6) == 1;
            hold.version = r.version(7);
            if (hold.replayed) hold.token = r.text(8);
            return hold;
        });
        return make_call<Hold>(
            redis_scripts::hold, std::move(ks), std::move(args),
            [made = std::move(made), read = std::move(read)](const redisReply* reply) -> Result<Hold> {
                if (reply && reply->type == REDIS_REPLY_STRING && !made.seats.empty()) {
                    Hold hold = made;
                    std::int64_t expires = 0;
                    if (!read_expiry_and_version({reply->str, reply->len}, expires, hold.version)) {
                        return Failure(errc::protocol_error,
                                       "unexpected reply from Redis script hold: not \"<expires> "
                                       "<version>\"");
                    }
                    hold.expires_at = wall(expires);
                    return hold;
                }
                return read(reply);
            });
    }
};

template <>
struct Codec<op::confirm> {
    static Result<Call<Order>> call(const Context& c, const op::confirm& o) {
        const ConfirmCommand& cmd = o.cmd;
        using hold_codec::event_of;
        auto event = event_of(cmd.token);
        if (!event) return std::move(event).error();
        using A = redis_scripts::args::confirm;
        auto args = arguments<A>();
        args[A::prefix] = c.keys.prefix();
        args[A::event] = *event;
        args[A::token] = cmd.token;
        args[A::order] = cmd.order_id;
        args[A::late] = cmd.late ? "1" : "0";
        args[A::max_seats] =
            std::to_string(std::clamp<std::int64_t>(cmd.limits.max_seats_per_holder, 0, max_script_ms));
        args[A::log_limit] = c.log_limit;
        return make_call<Order>(
            redis_scripts::confirm, c.event_keys(*event), std::move(args),
            standard<Order>(redis_scripts::confirm,
                            [event = *event](const Reader& r) { return read_order(r, event); }));
    }
};

template <>
struct Codec<op::release> {
    static std::vector<std::string> args(const Context& c, const std::string& event,
                                         const std::string& token) {
        using A = redis_scripts::args::release;
        auto out = arguments<A>();
        out[A::prefix] = c.keys.prefix();
        out[A::event] = event;
        out[A::token] = token;
        out[A::log_limit] = c.log_limit;
        return out;
    }
    static Result<Call<EventVersion>> call(const Context& c, const op::release& o) {
        auto event = hold_codec::event_of(o.token);
        if (!event) return std::move(event).error();
        return make_call<EventVersion>(redis_scripts::release, c.event_keys(*event),
                                       args(c, *event, o.token),
                                       version_or_refusal(redis_scripts::release));
    }
};

template <>
struct Codec<op::extend> {
    static std::vector<std::string> args(const Context& c, const std::string& event,
                                         const std::string& token, Millis ttl, Millis max_lifetime) {
        using A = redis_scripts::args::extend;
        auto out = arguments<A>();
        out[A::prefix] = c.keys.prefix();
        out[A::event] = event;
        out[A::token] = token;
        out[A::ttl] = ms(ttl);
        out[A::max_lifetime] = ms(max_lifetime);
        out[A::log_limit] = c.log_limit;
        return out;
    }
    static Result<Call<Hold>> call(const Context& c, const op::extend& o) {
        const std::string& token = o.token;
        const Millis ttl = o.ttl;
        const Millis max_lifetime = o.max_lifetime;
        using hold_codec::event_of;
        auto event = event_of(token);
        if (!event) return std::move(event).error();
        if (ttl <= Millis(0) || max_lifetime <= Millis(0)) {
            return Failure(errc::invalid_argument, "extend needs a positive ttl and max_lifetime");
        }
        return make_call<Hold>(
            redis_scripts::extend, c.event_keys(*event),
            args(c, *event, token, ttl, max_lifetime),
            standard<Hold>(redis_scripts::extend, [token, event = *event](const Reader& r) {
                // {1, holder, zone, {seats}, expires_ms, version}
                return Hold{token, event, r.text(1), r.text(2), r.texts(3), wall(r.integer(4)),
                            HoldStatus::held, {}, false, r.version(5)};
            }));
    }
};

template <>
struct Codec<op::cancel> {
    static std::vector<std::string> args(const Context& c, const std::string& event,
                                         const std::string& order_id,
                                         const std::optional<std::string>& holder) {
        using A = redis_scripts::args::cancel;
        auto out = arguments<A>();
        out[A::prefix] = c.keys.prefix();
        out[A::event] = event;
        out[A::order] = order_id;
        out[A::check_holder] = holder ? "1" : "0";
        out[A::holder] = holder.value_or("");
        out[A::log_limit] = c.log_limit;
        return out;
    }
    static Result<Call<Order>> call(const Context& c, const op::cancel& o) {
        const std::string& event = o.event;
        const std::string& order_id = o.order_id;
        const std::optional<std::string>& holder = o.holder;
        if (!is_valid_id(event)) return Failure(errc::unknown_event, "no event " + event, {event});
        if (!is_valid_id(order_id))
            return Failure(errc::unknown_order, "no order " + order_id + " in event " + event);
        if (holder && !is_valid_id(*holder)) {
            return Failure(errc::not_owner,
                           "order " + order_id + " belongs to another holder than " + *holder);
        }
        return make_call<Order>(
            redis_scripts::cancel, c.event_keys(event),
            args(c, event, order_id, holder),
            standard<Order>(redis_scripts::cancel,
                            [event](const Reader& r) { return read_order(r, event); }));
    }
};

template <>
struct Codec<op::expired> {
    template <typename Exec, typename Done>
    static void run(Exec exec, const op::expired& o, Done done) {
        if (o.limit == 0) return done(std::vector<ExpiredHold>{});
        std::make_shared<hold_codec::ExpiredWalk<Exec, Done>>(std::move(exec), o, std::move(done))->start();
    }
};

template <>
struct Codec<op::ack_expired> {
    template <typename Exec, typename Done>
    static void run(Exec exec, const op::ack_expired& o, Done done) {
        std::make_shared<hold_codec::AckWalk<Exec, Done>>(std::move(exec), o, std::move(done))->step();
    }
};

}  // namespace seatlock::redis_detail
