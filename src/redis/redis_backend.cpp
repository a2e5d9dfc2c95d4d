// src/redis/redis_backend.cpp: RedisBackend: each operation is one Lua script call whose
// arguments are built and whose reply is read here; the rules live in lua/*.lua.
#include <seatlock/backends/redis.hpp>

#include "connection_pool.hpp"
#include "key_layout.hpp"
#include "seatlock_redis_scripts.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <type_traits>

namespace seatlock {

static_assert(Backend<RedisBackend>);

namespace {

using redis_detail::ReplyPtr;
using redis_scripts::Script;

// Durations the scripts accept: positive and at most 10^15 ms, which any real lease or
// hold fits; larger values (e.g. Millis::max() as "forever") are clamped to that.
constexpr std::int64_t max_script_ms = 1'000'000'000'000'000;

std::string ms(Millis d) {
    return std::to_string(std::clamp<std::int64_t>(d.count(), 0, max_script_ms));
}

WallTime wall(std::int64_t server_ms) {
    return WallTime(Millis(server_ms));
}

// A reply that does not have the shape a script promises; turned into protocol_error.
struct BadReply : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Typed access to the elements of a script's reply; throws BadReply on any mismatch.
class Reader {
public:
    explicit Reader(const redisReply* reply) : reply_(reply) {
        if (!reply_ || reply_->type != REDIS_REPLY_ARRAY) throw BadReply("not an array");
    }
    [[nodiscard]] std::size_t size() const { return reply_->elements; }
    [[nodiscard]] const redisReply* at(std::size_t i) const {
        if (i >= reply_->elements) throw BadReply("missing element " + std::to_string(i));
        return reply_->element[i];
    }
    [[nodiscard]] std::string text(std::size_t i) const {
        const redisReply* r = at(i);
        if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
            throw BadReply("element " + std::to_string(i) + " is not a string");
        }
        return {r->str, r->len};
    }
    [[nodiscard]] std::int64_t integer(std::size_t i) const {
        const redisReply* r = at(i);
        if (r->type != REDIS_REPLY_INTEGER)
            throw BadReply("element " + std::to_string(i) + " is not an integer");
        return static_cast<std::int64_t>(r->integer);
    }
    [[nodiscard]] Reader array(std::size_t i) const { return Reader(at(i)); }
    [[nodiscard]] std::vector<std::string> texts(std::size_t i) const {
        const Reader list = array(i);
        std::vector<std::string> out;
        out.reserve(list.size());
        for (std::size_t k = 0; k < list.size(); ++k) out.push_back(list.text(k));
        return out;
    }

private:
    const redisReply* reply_;
};

errc errc_named(const std::string& name) {
    static const std::map<std::string, errc> names = [] {
        std::map<std::string, errc> m;
        for (int e = static_cast<int>(errc::invalid_argument);
             e <= static_cast<int>(errc::outcome_unknown); ++e) {
            m.emplace(to_string(static_cast<errc>(e)), static_cast<errc>(e));
        }
        return m;
    }();
    auto it = names.find(name);
    if (it == names.end()) throw BadReply("unknown refusal code " + name);
    return it->second;
}

// {0, code, detail, items, limit, current}: a refusal, as the in-process backends build it.
Failure refusal(const Reader& r) {
    Failure f(errc_named(r.text(1)), r.text(2), r.texts(3));
    f.limit = r.integer(4);
    f.current = r.integer(5);
    return f;
}

std::string describe_keys(const std::vector<std::string>& keys) {
    std::string text = keys.size() == 1 ? "key " : "keys ";
    for (std::size_t i = 0; i < keys.size(); ++i) text += (i ? ", " : "") + keys[i];
    return text + (keys.size() == 1 ? " is" : " are");
}

Order read_order(const Reader& r, const std::string& event) {
    // {1, id, holder, zone, {seats}, token, paid_at, cancelled}
    return Order{r.text(1),  event,     r.text(2),          r.text(3),
                 r.texts(4), r.text(5), wall(r.integer(6)), r.integer(7) != 0};
}

// Whether `reply` is an error whose message starts with `prefix`.
bool is_error(const redisReply& reply, std::string_view prefix) {
    return reply.type == REDIS_REPLY_ERROR &&
           std::string_view(reply.str, reply.len).substr(0, prefix.size()) == prefix;
}

}  // namespace

struct RedisBackend::Impl {
    explicit Impl(RedisOptions o) : options(std::move(o)), keys(options.prefix), pool(options) {}

    RedisOptions options;
    redis_detail::KeyLayout keys;
    redis_detail::ConnectionPool pool;

    // The four keys every hold script receives first (lua/common.lua, check_keys).
    std::vector<std::string> event_keys(const std::string& event) const {
        std::vector<std::string> out;
        for (const char* kind : {"event", "paid", "deadlines", "expired"}) {
            out.push_back(keys.event_key(kind, event));
        }
        return out;
    }

    // Runs one operation: FCALL of its library function. When the server lacks the library
    // (a new server, a restart without persistence, FUNCTION FLUSH), FUNCTION LOAD on the
    // same connection, then FCALL again: "Function not found" means nothing ran, so
    // sending again is safe. A library another client loaded meanwhile is the same text.
    Result<ReplyPtr> run(const Script& script, const std::vector<std::string>& keys_,
                         const std::vector<std::string>& args) {
        auto lease = pool.lease();
        if (!lease) return std::move(lease).error();
        const std::string key_count = std::to_string(keys_.size());
        std::vector<std::string_view> argv{"FCALL", script.function, key_count};
        argv.reserve(3 + keys_.size() + args.size());
        for (const auto& k : keys_) argv.emplace_back(k);
        for (const auto& a : args) argv.emplace_back(a);
        auto reply = lease->command(argv);
        // Twice at most: a FUNCTION FLUSH may land between the load and the call.
        for (int tries = 0; tries < 2 && reply && is_error(**reply, "ERR Function not found");
             ++tries) {
            const std::vector<std::string_view> load{"FUNCTION", "LOAD", redis_scripts::library};
            auto loaded = lease->command(load);
            if (!loaded) return std::move(loaded).error();
            if ((*loaded)->type == REDIS_REPLY_ERROR && !is_error(**loaded, "ERR Library")) {
                return redis_detail::error_reply_failure(
                    std::string_view((*loaded)->str, (*loaded)->len),
                    "Redis FUNCTION LOAD " + std::string(redis_scripts::library_name));
            }
            reply = lease->command(argv);
        }
        if (!reply) return std::move(reply).error();
        if ((*reply)->type == REDIS_REPLY_ERROR) {
            return redis_detail::error_reply_failure(std::string_view((*reply)->str, (*reply)->len),
                                                     "Redis script " + std::string(script.name));
        }
        return reply;
    }

    // Runs a script whose reply is {1, ...} or a refusal, and reads a success with `read`.
    template <typename T, typename F>
    Result<T> call(const Script& script, const std::vector<std::string>& keys_,
                   const std::vector<std::string>& args, F&& read) {
        auto reply = run(script, keys_, args);
        if (!reply) return std::move(reply).error();
        try {
            const Reader r(reply->get());
            if (r.integer(0) == 0) return refusal(r);
            if constexpr (std::is_void_v<T>) {
                read(r);
                return {};
            } else {
                return read(r);
            }
        } catch (const BadReply& e) {
            return Failure(errc::protocol_error, "unexpected reply from Redis script " +
                                                     std::string(script.name) + ": " + e.what());
        }
    }

    // One plain command (not a script) with its error reply mapped.
    Result<ReplyPtr> plain(std::vector<std::string_view> argv) {
        auto lease = pool.lease();
        if (!lease) return std::move(lease).error();
        auto reply = lease->command(argv);
        if (!reply) return std::move(reply).error();
        if ((*reply)->type == REDIS_REPLY_ERROR) {
            return redis_detail::error_reply_failure(std::string_view((*reply)->str, (*reply)->len),
                                                     "Redis " + std::string(argv.front()));
        }
        return reply;
    }
};

namespace {

Result<void> check_options(const RedisOptions& o) {
    auto bad = [](const std::string& why) {
        return Failure(errc::invalid_argument, "RedisOptions: " + why);
    };
    if (o.host.empty()) return bad("host is empty");
    if (o.port <= 0 || o.port > 65535) return bad("port must be 1 to 65535");
    if (o.db < 0) return bad("db must not be negative");
    if (o.pool_size == 0) return bad("pool_size must be at least 1");
    if (o.connect_timeout <= Millis(0) || o.command_timeout <= Millis(0)) {
        return bad("connect_timeout and command_timeout must be positive");
    }
    const bool printable = std::all_of(o.prefix.begin(), o.prefix.end(), [](char c) {
        return c > ' ' && c < 127 && c != '{' && c != '}';
    });
    if (o.prefix.empty() || o.prefix.size() > 128 || !printable) {
        return bad("prefix must be 1 to 128 printable characters without space, { or }");
    }
    return {};
}

// Zone kinds as the scripts store and report them.
constexpr const char* general_admission_text = "general_admission";

const char* kind_text(ZoneKind kind) {
    return kind == ZoneKind::general_admission ? general_admission_text : "named";
}

ZoneKind kind_of(std::string_view text) {
    return text == general_admission_text ? ZoneKind::general_admission : ZoneKind::named;
}

}  // namespace

RedisBackend::RedisBackend(RedisOptions options) {
    if (auto ok = check_options(options); !ok) throw Error(ok.error().code, ok.error().detail);
    impl_ = std::make_unique<Impl>(std::move(options));
}

RedisBackend::~RedisBackend() = default;

const RedisOptions& RedisBackend::options() const noexcept {
    return impl_->options;
}

Result<void> RedisBackend::ping() {
    auto reply = impl_->plain({"PING"});
    if (!reply) return std::move(reply).error();
    if ((*reply)->type != REDIS_REPLY_STATUS ||
        std::string_view((*reply)->str, (*reply)->len) != "PONG") {
        return Failure(errc::protocol_error, "Redis answered PING with something else than PONG");
    }
    return {};
}

// ---------------------------------------------------------------------------------------
// Locks

Result<std::uint64_t> RedisBackend::acquire_locks(std::span<const std::string> keys,
                                                  const std::string& owner, Millis lease) {
    if (keys.empty()) return Failure(errc::invalid_argument, "no key to lock");
    std::vector<std::string> redis_keys;
    for (const auto& key : keys) redis_keys.push_back(impl_->keys.lock_key(key));
    std::vector<std::string> fences;
    for (const auto& key : keys) {
        std::string fence = impl_->keys.fence_key(key);
        if (std::find(fences.begin(), fences.end(), fence) == fences.end())
            fences.push_back(std::move(fence));
    }
    redis_keys.insert(redis_keys.end(), fences.begin(), fences.end());
    auto reply = impl_->run(redis_scripts::lock_acquire, redis_keys,
                            {owner, ms(std::max(lease, Millis(1))), std::to_string(keys.size())});
    if (!reply) return std::move(reply).error();
    try {
        const Reader r(reply->get());
        if (r.integer(0) == 1) return static_cast<std::uint64_t>(r.integer(1));
        const Reader busy = r.array(1);
        std::vector<std::string> held;
        for (std::size_t i = 0; i < busy.size(); ++i) {
            const auto index = busy.integer(i);
            if (index < 1 || static_cast<std::size_t>(index) > keys.size())
                throw BadReply("bad key index");
            held.push_back(keys[static_cast<std::size_t>(index - 1)]);
        }
        return Failure(errc::lock_busy, describe_keys(held) + " held by another owner", held);
    } catch (const BadReply& e) {
        return Failure(errc::protocol_error,
                       std::string("unexpected reply from Redis script lock_acquire: ") + e.what());
    }
}

Result<bool> RedisBackend::release_locks(std::span<const std::string> keys,
                                         const std::string& owner) {
    if (keys.empty()) return true;
    std::vector<std::string> redis_keys;
    for (const auto& key : keys) redis_keys.push_back(impl_->keys.lock_key(key));
    return impl_->call<bool>(redis_scripts::lock_release, redis_keys, {owner},
                             [](const Reader& r) { return r.integer(1) == 1; });
}

Result<bool> RedisBackend::extend_locks(std::span<const std::string> keys, const std::string& owner,
                                        Millis lease) {
    if (keys.empty()) return true;
    std::vector<std::string> redis_keys;
    for (const auto& key : keys) redis_keys.push_back(impl_->keys.lock_key(key));
    return impl_->call<bool>(redis_scripts::lock_extend, redis_keys,
                             {owner, ms(std::max(lease, Millis(1)))},
                             [](const Reader& r) { return r.integer(1) == 1; });
}

// ---------------------------------------------------------------------------------------
// Inventory

Result<void> RedisBackend::create_event(const EventSpec& spec) {
    const auto& k = impl_->keys;
    std::vector<std::string> keys{k.event_key("event", spec.id)};
    std::vector<std::string> args{k.prefix(), spec.id, spec.name,
                                  std::to_string(spec.zones.size())};
    for (const auto& zone : spec.zones) {
        keys.push_back(k.event_key("free", spec.id, zone.id));
        keys.push_back(k.event_key("seats", spec.id, zone.id));
        args.push_back(zone.id);
        args.push_back(kind_text(zone.kind));
        if (zone.kind == ZoneKind::general_admission) {
            args.push_back(std::to_string(zone.capacity));
            continue;
        }
        args.push_back(std::to_string(zone.seats.size()));
        for (const auto& seat : zone.seats) {
            args.push_back(seat.id);
            args.push_back(seat.row);
        }
    }
    auto spec_json = impl_->call<std::string>(redis_scripts::event_create, keys, args,
                                              [](const Reader& r) { return r.text(1); });
    if (!spec_json) return std::move(spec_json).error();
    // The index is written after the event (creating the same spec again repairs it if
    // this step was lost); it is what events() and expired() walk.
    auto indexed = impl_->plain({"HSET", k.events_index(), spec.id, *spec_json});
    if (!indexed) return std::move(indexed).error();
    return {};
}

Result<std::vector<EventSpec>> RedisBackend::events() {
    return impl_->call<std::vector<EventSpec>>(
        redis_scripts::events, {impl_->keys.events_index()}, {impl_->keys.prefix()},
        [](const Reader& r) {
            std::vector<EventSpec> out;
            const Reader list = r.array(1);
            for (std::size_t i = 0; i < list.size(); ++i) {
                // {id, name, {{zone, kind, capacity, {seat ids}, {rows}}, ...}}
                const Reader e = list.array(i);
                EventSpec spec{e.text(0), e.text(1), {}};
                const Reader zones = e.array(2);
                for (std::size_t z = 0; z < zones.size(); ++z) {
                    const Reader zr = zones.array(z);
                    ZoneSpec zone;
                    zone.id = zr.text(0);
                    zone.kind = kind_of(zr.text(1));
                    zone.capacity = zr.integer(2);
                    const auto ids = zr.texts(3);
                    const auto rows = zr.texts(4);
                    if (ids.size() != rows.size())
                        throw BadReply("seats and rows differ in length");
                    for (std::size_t s = 0; s < ids.size(); ++s)
                        zone.seats.push_back({ids[s], rows[s]});
                    spec.zones.push_back(std::move(zone));
                }
                out.push_back(std::move(spec));
            }
            std::sort(out.begin(), out.end(),
                      [](const EventSpec& a, const EventSpec& b) { return a.id < b.id; });
            return out;
        });
}

// ---------------------------------------------------------------------------------------
// Holds

Result<Hold> RedisBackend::hold(const HoldCommand& cmd) {
    const auto& k = impl_->keys;
    const auto& req = cmd.request;
    auto keys = impl_->event_keys(cmd.event);
    keys.push_back(k.event_key("free", cmd.event, req.zone));
    keys.push_back(k.event_key("seats", cmd.event, req.zone));
    const char* kind = req.kind == HoldKind::seats      ? "seats"
                       : req.kind == HoldKind::quantity ? "quantity"
                                                        : "best_available";
    const auto n =
        req.kind == HoldKind::seats ? static_cast<std::int64_t>(req.seats.size()) : req.quantity;
    std::vector<std::string> args{
        k.prefix(),
        cmd.event,
        cmd.holder,
        cmd.token,
        req.zone,
        kind,
        std::to_string(n),
        ms(cmd.ttl),
        std::to_string(std::clamp<std::int64_t>(cmd.limits.max_seats_per_holder, 0, max_script_ms)),
        cmd.limits.one_active_hold_per_holder ? "1" : "0"};
    if (req.kind == HoldKind::seats) args.insert(args.end(), req.seats.begin(), req.seats.end());
    return impl_->call<Hold>(redis_scripts::hold, keys, args, [&](const Reader& r) {
        // {1, zone, {seats}, expires_ms}
        return Hold{cmd.token, cmd.event, cmd.holder, r.text(1), r.texts(2), wall(r.integer(3))};
    });
}

namespace {

// The event of a hold token; the same refusal as the in-process backends when malformed.
Result<std::string> event_of(const std::string& token) {
    const std::string_view event = token_event(token);
    if (event.empty()) return Failure(errc::unknown_hold, "malformed hold token");
    return std::string(event);
}

}  // namespace

Result<Order> RedisBackend::confirm(const ConfirmCommand& cmd) {
    auto event = event_of(cmd.token);
    if (!event) return std::move(event).error();
    const auto& k = impl_->keys;
    return impl_->call<Order>(redis_scripts::confirm, impl_->event_keys(*event),
                              {k.prefix(), *event, cmd.token, cmd.order_id, cmd.late ? "1" : "0",
                               std::to_string(std::clamp<std::int64_t>(
                                   cmd.limits.max_seats_per_holder, 0, max_script_ms))},
                              [&](const Reader& r) { return read_order(r, *event); });
}

Result<void> RedisBackend::release(const std::string& token) {
    auto event = event_of(token);
    if (!event) return std::move(event).error();
    const auto& k = impl_->keys;
    return impl_->call<void>(redis_scripts::release, impl_->event_keys(*event),
                             {k.prefix(), *event, token},
                             [](const Reader&) {});
}

Result<Hold> RedisBackend::extend(const std::string& token, Millis ttl, Millis max_lifetime) {
    auto event = event_of(token);
    if (!event) return std::move(event).error();
    if (ttl <= Millis(0) || max_lifetime <= Millis(0)) {
        return Failure(errc::invalid_argument, "extend needs a positive ttl and max_lifetime");
    }
    const auto& k = impl_->keys;
    return impl_->call<Hold>(
        redis_scripts::extend, impl_->event_keys(*event), {k.prefix(), *event, token, ms(ttl), ms(max_lifetime)},
        [&](const Reader& r) {
            // {1, holder, zone, {seats}, expires_ms}
            return Hold{token, *event, r.text(1), r.text(2), r.texts(3), wall(r.integer(4))};
        });
}

Result<Order> RedisBackend::cancel(const std::string& event, const std::string& order_id,
                                   const std::optional<std::string>& holder) {
    if (!is_valid_id(event)) return Failure(errc::unknown_event, "no event " + event, {event});
    if (!is_valid_id(order_id))
        return Failure(errc::unknown_order, "no order " + order_id + " in event " + event);
    if (holder && !is_valid_id(*holder)) {
        return Failure(errc::not_owner,
                       "order " + order_id + " belongs to another holder than " + *holder);
    }
    const auto& k = impl_->keys;
    return impl_->call<Order>(
        redis_scripts::cancel, impl_->event_keys(event),
        {k.prefix(), event, order_id, holder ? "1" : "0", holder.value_or("")},
        [&](const Reader& r) { return read_order(r, event); });
}

Result<std::vector<ZoneState>> RedisBackend::seats(const std::string& event,
                                                   const std::optional<std::string>& zone) {
    if (!is_valid_id(event)) return Failure(errc::unknown_event, "no event " + event, {event});
    if (zone && !is_valid_id(*zone)) {
        return Failure(errc::unknown_zone, "event " + event + " has no zone " + *zone, {*zone});
    }
    return impl_->call<std::vector<ZoneState>>(
        redis_scripts::seats, impl_->event_keys(event),
        {impl_->keys.prefix(), event, zone.value_or("")}, [](const Reader& r) {
            std::vector<ZoneState> out;
            const Reader zones = r.array(1);
            for (std::size_t i = 0; i < zones.size(); ++i) {
                // {zone, kind, capacity, free, held, paid, {id, row, state, ...}}
                const Reader z = zones.array(i);
                ZoneState st;
                st.zone = z.text(0);
                st.kind = kind_of(z.text(1));
                st.capacity = z.integer(2);
                st.free = z.integer(3);
                st.held = z.integer(4);
                st.paid = z.integer(5);
                const Reader listed = z.array(6);
                if (listed.size() % 3 != 0)
                    throw BadReply("seat list is not id, row, state triples");
                for (std::size_t s = 0; s < listed.size(); s += 3) {
                    const auto state = listed.integer(s + 2);
                    if (state < 0 || state > 2) throw BadReply("bad seat state");
                    st.seats.push_back(
                        {listed.text(s), listed.text(s + 1), static_cast<SeatState>(state)});
                }
                out.push_back(std::move(st));
            }
            return out;
        });
}

Result<std::vector<ExpiredHold>> RedisBackend::expired(std::size_t limit, Millis redeliver_after) {
    std::vector<ExpiredHold> out;
    if (limit == 0) return out;
    auto ids = impl_->plain({"HKEYS", impl_->keys.events_index()});
    if (!ids) return std::move(ids).error();
    std::vector<std::string> events;
    try {
        const Reader list(ids->get());
        for (std::size_t i = 0; i < list.size(); ++i) events.push_back(list.text(i));
    } catch (const BadReply& e) {
        return Failure(errc::protocol_error, std::string("unexpected reply to HKEYS: ") + e.what());
    }
    std::sort(events.begin(), events.end());
    // Every event is swept in its own script (its own Cluster slot), until `limit` is met.
    for (const auto& event : events) {
        if (out.size() >= limit) break;
        auto batch = impl_->call<std::vector<ExpiredHold>>(
            redis_scripts::expired, impl_->event_keys(event),
            {impl_->keys.prefix(), event, std::to_string(limit - out.size()), ms(redeliver_after)},
            [&](const Reader& r) {
                std::vector<ExpiredHold> found;
                const Reader list = r.array(1);
                for (std::size_t i = 0; i < list.size(); ++i) {
                    // {token, holder, zone, {seats}, expired_at_ms}
                    const Reader e = list.array(i);
                    found.push_back(
                        {e.text(0), event, e.text(1), e.text(2), e.texts(3), wall(e.integer(4))});
                }
                return found;
            });
        if (!batch) return std::move(batch).error();
        for (auto& e : *batch) out.push_back(std::move(e));
    }
    return out;
}

Result<void> RedisBackend::ack_expired(std::span<const std::string> tokens) {
    // One script per event; malformed tokens name no hold and are as acknowledged as they
    // can be, like in the in-process backends.
    std::map<std::string, std::vector<std::string>> by_event;
    for (const auto& token : tokens) {
        const std::string_view event = token_event(token);
        if (!event.empty()) by_event[std::string(event)].push_back(token);
    }
    for (const auto& [event, list] : by_event) {
        std::vector<std::string> args{impl_->keys.prefix(), event};
        args.insert(args.end(), list.begin(), list.end());
        auto done = impl_->call<void>(redis_scripts::ack_expired, impl_->event_keys(event), args,
                                      [](const Reader&) {});
        if (!done) return done;
    }
    return {};
}

}  // namespace seatlock
