// src/redis/redis_backend.cpp: RedisBackend: each operation is one Lua script call whose
// arguments are built and whose reply is read here; the rules live in lua/*.lua.
//
// Each operation is described once, as a Call: the function, its keys and arguments,
// and how its reply reads. The driver (driver.hpp) sends it: the blocking API waits for
// the reply; the asynchronous one (async_run) reads it when it comes. The few operations
// of more than one command (an event and its index; expired() walking every event) chain
// their Calls the same way on both paths.
#include <seatlock/backends/redis.hpp>
#include <seatlock/detail/text.hpp>
#include <seatlock/redis/key_layout.hpp>

#include "driver.hpp"
#include "seatlock_redis_scripts.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <stdexcept>
#include <type_traits>

namespace seatlock {

static_assert(Backend<RedisBackend>);

namespace {

using redis_detail::Acks;
using redis_detail::ReplyPtr;
using redis_scripts::Script;

// Durations the scripts accept: positive and at most 10^15 ms, which any real lease or
// hold fits; larger values (e.g. Millis::max() as "forever") are clamped to that.
constexpr std::int64_t max_script_ms = 1'000'000'000'000'000;
// The highest version event_show.lua accepts to raise a version above (2^53 - 2): the
// scripts count in Lua's numbers, doubles, exact up to 2^53.
constexpr EventVersion max_script_version = (EventVersion{1} << 53) - 2;

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
    /// An event's version: an integer above 0 (every step that answers one raised it).
    [[nodiscard]] EventVersion version(std::size_t i) const {
        const auto v = integer(i);
        if (v < 1) throw BadReply("element " + std::to_string(i) + " is not a version");
        return static_cast<EventVersion>(v);
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
        for (errc e : all_errcs) m.emplace(to_string(e), e);
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

Order read_order(const Reader& r, const std::string& event) {
    // {1, id, holder, zone, {seats}, token, paid_at, cancelled, version}
    return Order{r.text(1),          event, r.text(2), r.text(3), r.texts(4), r.text(5),
                 wall(r.integer(6)), r.integer(7) != 0, r.version(8)};
}

// What event_create.lua answers: {1, spec_json, created, shown, rolled_back}.
struct Stored {
    std::string spec_json;
    bool created = false;
    bool shown = false;
    bool rolled_back = false;  // an existing event hidden by this call (hide_existing)
};

// What event_show.lua answers: {1, spec_json, version}.
struct Shown {
    std::string spec_json;
    EventVersion version = 0;
};

// How event_create.lua stores an event: shown (create_event), or hidden (begin_recovery)
// when missing, and then also when it exists (hide_existing: a rollback detected).
enum class Visibility { shown, hidden, hide_existing };

// begin_recovery's answer, from what event_create.lua did.
Recovery recovery_of(const Stored& stored) {
    if (stored.rolled_back) return Recovery::rolled_back;
    return stored.created ? Recovery::created : Recovery::existed;
}

// The "<expires_ms> <version>" of a new hold of named seats; false when `text` is not that.
bool read_expiry_and_version(std::string_view text, std::int64_t& expires, EventVersion& version) {
    const char* end = text.data() + text.size();
    auto [space, ec] = std::from_chars(text.data(), end, expires);
    if (ec != std::errc() || space == end || *space != ' ') return false;
    auto [last, ec2] = std::from_chars(space + 1, end, version);
    return ec2 == std::errc() && last == end && version > 0;
}

// One FCALL, and how its reply reads (error replies are mapped before `read` sees one).
template <typename T>
struct Call {
    const Script* script = nullptr;
    std::vector<std::string> keys;
    std::vector<std::string> args;
    std::function<Result<T>(const redisReply*)> read;
};

// The usual reading: {1, ...} read by `read`, or a refusal {0, code, ...}.
template <typename T, typename F>
std::function<Result<T>(const redisReply*)> standard(const Script& script, F read) {
    return [name = script.name, read = std::move(read)](const redisReply* reply) -> Result<T> {
        try {
            const Reader r(reply);
            if (r.integer(0) == 0) return refusal(r);
            if constexpr (std::is_void_v<T>) {
                read(r);
                return {};
            } else {
                return read(r);
            }
        } catch (const BadReply& e) {
            return Failure(errc::protocol_error, "unexpected reply from Redis script " +
                                                     std::string(name) + ": " + e.what());
        }
    };
}

// The reading of a call that answers the event's version, a bare integer above 0, when
// done (release), or a refusal.
std::function<Result<EventVersion>(const redisReply*)> version_or_refusal(const Script& script) {
    return [read = standard<EventVersion>(script,
                                          [](const Reader&) -> EventVersion {
                                              throw BadReply("neither a version nor a refusal");
                                          })](const redisReply* reply) -> Result<EventVersion> {
        if (reply && reply->type == REDIS_REPLY_INTEGER && reply->integer > 0)
            return static_cast<EventVersion>(reply->integer);
        return read(reply);
    };
}

// The reading of lock_release and lock_extend: 1 or 0.
std::function<Result<bool>(const redisReply*)> flag(const Script& script) {
    return [name = script.name](const redisReply* reply) -> Result<bool> {
        if (reply && reply->type == REDIS_REPLY_INTEGER && (reply->integer == 0 || reply->integer == 1))
            return reply->integer == 1;
        return Failure(errc::protocol_error, "unexpected reply from Redis script " +
                                                 std::string(name) + ": not 0 or 1");
    };
}

template <typename T>
Call<T> make_call(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                  std::function<Result<T>(const redisReply*)> read) {
    return Call<T>{&script, std::move(keys), std::move(args), std::move(read)};
}

template <typename T>
using Done = std::shared_ptr<detail::Completion<T>>;

template <typename T>
Done<T> shared(detail::Completion<T> done) {
    return std::make_shared<detail::Completion<T>>(std::move(done));
}

// What the applied write was, for the not_replicated failure: the caller learns what it
// holds or owns even though the call failed.
void describe(const Hold& h, Failure& f) {
    f.detail += " (hold " + h.token + " of " + detail::join(h.seats) + " in zone " + h.zone + ")";
    f.items = h.seats;
}
void describe(const Order& o, Failure& f) {
    f.detail += std::string(" (order ") + o.id + (o.cancelled ? ", cancelled," : "") + " of " +
                detail::join(o.seats) + " in zone " + o.zone + ")";
    f.items = o.seats;
}
void describe(std::uint64_t fencing_token, Failure& f) {
    f.detail += " (fencing token " + std::to_string(fencing_token) + ")";
}
template <typename T>
void describe(const T&, Failure&) {}

// `result` as the caller gets it: unchanged unless its write was applied and fewer than
// `wanted` replicas acknowledged it in time; then not_replicated, which says so.
template <typename T>
Result<T> replicated(Result<T> result, const Acks& acks, int wanted, Millis timeout,
                     std::string_view what) {
    if (!result || !acks.asked || (acks.trouble.empty() && acks.count >= wanted)) return result;
    Failure f(errc::not_replicated, std::string(what));
    if constexpr (!std::is_void_v<T>) describe(*result, f);
    f.detail += " was applied on the Redis primary, but ";
    f.detail += acks.trouble.empty()
                    ? std::to_string(acks.count) + " of " + std::to_string(wanted) +
                          " replicas acknowledged it within " + std::to_string(timeout.count()) +
                          " ms"
                    : "whether " + std::to_string(wanted) +
                          " replicas have it is unknown (WAIT: " + acks.trouble + ")";
    f.detail +=
        ": it may be lost if the primary fails before its replicas catch up. It is not undone: "
        "treat it as done, keep your own record of it to restore after a failover, and check "
        "the replicas; sending the call again is safe but does not prove replication";
    f.limit = wanted;
    f.current = acks.trouble.empty() ? acks.count : -1;
    return f;
}

}  // namespace

struct RedisBackend::Impl {
    Impl(RedisOptions o, std::vector<boost::asio::any_io_executor> executors)
        : keys(o.prefix), driver(std::move(o), std::move(executors)) {}

    redis_detail::KeyLayout keys;
    redis_detail::Driver driver;

    // The four keys every hold script receives first (lua/common.lua, check_keys).
    std::vector<std::string> event_keys(const std::string& event) const {
        std::vector<std::string> out;
        for (const char* kind : {"event", "paid", "deadlines", "expired"}) {
            out.push_back(keys.event_key(kind, event));
        }
        return out;
    }

    // A Call, the blocking way.
    template <typename T>
    Result<T> perform(const Call<T>& call) {
        Acks acks;
        auto reply = driver.fcall(*call.script, call.keys, call.args, acks);
        if (!reply) return std::move(reply).error();
        return replicated(call.read(reply->get()), acks, driver.options().replicas_to_ack,
                          driver.options().replica_ack_timeout, call.script->name);
    }
    template <typename T>
    Result<T> perform(Result<Call<T>> call) {
        if (!call) return std::move(call).error();
        return perform(*call);
    }

    // A Call, the asynchronous way: `then` gets its result where the driver hands replies
    // over (Driver::async_fcall).
    template <typename T, typename Then>
    void start(Call<T> call, Then then) {
        const Script& script = *call.script;
        auto acks = std::make_shared<Acks>();
        driver.async_fcall(
            script, std::move(call.keys), std::move(call.args), acks,
            [name = script.name, read = std::move(call.read), acks,
             wanted = driver.options().replicas_to_ack,
             timeout = driver.options().replica_ack_timeout,
             then = std::make_shared<Then>(std::move(then))](Result<ReplyPtr> reply) {
                if (!reply) return (*then)(Result<T>(std::move(reply).error()));
                (*then)(replicated(read(reply->get()), *acks, wanted, timeout, name));
            });
    }
    template <typename T>
    void start(Result<Call<T>> call, detail::Completion<T> done) {
        if (!call) return done(std::move(call).error());
        start(std::move(*call), std::move(done));
    }

    // ------------------------------------------------------------------------------
    // The Calls.

    // On a Redis Cluster each lock group is one hash slot, and one call cannot span two:
    // a lock over keys of different groups is refused before anything is sent (even when
    // two groups happen to share a slot, so that the answer never depends on hashing).
    Result<void> one_group(std::span<const std::string> ks) const {
        if (!driver.on_cluster() || ks.empty()) return {};
        const std::string first = redis_detail::KeyLayout::lock_tag(ks.front());
        for (const auto& key : ks) {
            if (redis_detail::KeyLayout::lock_tag(key) != first) {
                return Failure(errc::invalid_argument,
                               "lock keys " + ks.front() + " and " + key +
                                   " are in different groups, which a Redis Cluster keeps in "
                                   "different hash slots: lock together only keys of one group");
            }
        }
        return {};
    }

    std::vector<std::string> lock_keys(std::span<const std::string> ks) const {
        std::vector<std::string> out;
        out.reserve(ks.size());
        for (const auto& key : ks) out.push_back(keys.lock_key(key));
        return out;
    }

    Result<Call<std::uint64_t>> acquire_call(std::span<const std::string> ks, const std::string& owner,
                                             Millis lease) const {
        if (ks.empty()) return Failure(errc::invalid_argument, "no key to lock");
        std::vector<std::string> redis_keys = lock_keys(ks);
        std::vector<std::string> fences;
        for (const auto& key : ks) {
            std::string fence = keys.fence_key(key);
            if (std::find(fences.begin(), fences.end(), fence) == fences.end())
                fences.push_back(std::move(fence));
        }
        redis_keys.insert(redis_keys.end(), fences.begin(), fences.end());
        std::vector<std::string> names(ks.begin(), ks.end());
        return make_call<std::uint64_t>(
            redis_scripts::lock_acquire, std::move(redis_keys),
            {owner, ms(std::max(lease, Millis(1))), std::to_string(ks.size())},
            [names = std::move(names)](const redisReply* reply) -> Result<std::uint64_t> {
                try {
                    // The fencing token, or the indexes of the keys held by others.
                    if (reply && reply->type == REDIS_REPLY_INTEGER) {
                        if (reply->integer < 1) throw BadReply("fencing token below 1");
                        return static_cast<std::uint64_t>(reply->integer);
                    }
                    const Reader busy(reply);
                    if (busy.size() == 0) throw BadReply("no busy key");
                    std::vector<std::string> held;
                    for (std::size_t i = 0; i < busy.size(); ++i) {
                        const auto index = busy.integer(i);
                        if (index < 1 || static_cast<std::size_t>(index) > names.size())
                            throw BadReply("bad key index");
                        held.push_back(names[static_cast<std::size_t>(index - 1)]);
                    }
                    return detail::keys_busy(std::move(held));
                } catch (const BadReply& e) {
                    return Failure(errc::protocol_error,
                                   std::string("unexpected reply from Redis script lock_acquire: ") +
                                       e.what());
                }
            });
    }

    Call<bool> release_call(std::span<const std::string> ks, const std::string& owner) const {
        return make_call<bool>(redis_scripts::lock_release, lock_keys(ks), {owner},
                               flag(redis_scripts::lock_release));
    }

    Call<bool> extend_locks_call(std::span<const std::string> ks, const std::string& owner,
                                 Millis lease) const {
        return make_call<bool>(redis_scripts::lock_extend, lock_keys(ks),
                               {owner, ms(std::max(lease, Millis(1)))},
                               flag(redis_scripts::lock_extend));
    }

    Result<Call<void>> fence_call(std::string_view key, std::uint64_t at_least) const {
        if (!is_valid_lock_key(key)) return Failure(errc::invalid_argument, "invalid lock key");
        return make_call<void>(redis_scripts::lock_fence, {keys.fence_key(key)},
                               {std::to_string(at_least)},
                               standard<void>(redis_scripts::lock_fence, [](const Reader&) {}));
    }

    Call<Stored> store_call(const EventSpec& spec, Visibility visibility) const;
    Result<Call<Shown>> show_call(const std::string& event, EventVersion at_least) const;
    Result<Call<EventVersion>> version_call(const std::string& event) const;
    Call<Order> restore_call(const RestoreCommand& cmd) const;
    Call<std::vector<EventSpec>> events_call() const;
    Call<Hold> hold_call(const HoldCommand& cmd) const;
    Result<Call<Order>> confirm_call(const ConfirmCommand& cmd) const;
    Result<Call<EventVersion>> release_hold_call(const std::string& token) const;
    Result<Call<Hold>> extend_call(const std::string& token, Millis ttl, Millis max_lifetime) const;
    Result<Call<Order>> cancel_call(const std::string& event, const std::string& order_id,
                                    const std::optional<std::string>& holder) const;
    Result<Call<std::vector<ZoneState>>> seats_call(const std::string& event,
                                                    const std::optional<std::string>& zone) const;
    Call<std::vector<ExpiredHold>> expired_call(const std::string& event, std::size_t limit,
                                                Millis redeliver_after) const;
    Call<void> ack_call(const std::string& event, const std::vector<std::string>& tokens) const;

    // ------------------------------------------------------------------------------
    // Operations of more than one command, both ways.

    // An event, then its index entry (the index is what events() and expired() walk):
    // written when the event is shown (creating the same spec again repairs it if this
    // step was lost), deleted when this call hid the event (a retry deletes it again).
    std::vector<std::string> index_command(const EventSpec& spec, const Stored& stored) const {
        if (stored.shown) return {"HSET", keys.events_index(), spec.id, stored.spec_json};
        if (stored.rolled_back) return {"HDEL", keys.events_index(), spec.id};
        return {};
    }
    Result<Stored> store_event(const EventSpec& spec, Visibility visibility) {
        auto stored = perform(store_call(spec, visibility));
        if (!stored) return std::move(stored).error();
        if (auto index = index_command(spec, *stored); !index.empty()) {
            auto indexed = driver.command(std::vector<std::string_view>(index.begin(), index.end()),
                                          keys.events_index());
            if (!indexed) return std::move(indexed).error();
        }
        return stored;
    }
    void start_store_event(const EventSpec& spec, Visibility visibility,
                           detail::Completion<Stored> done) {
        start(store_call(spec, visibility),
              [this, spec, done = shared(std::move(done))](Result<Stored> stored) {
                  if (!stored) return (*done)(std::move(stored).error());
                  auto index = index_command(spec, *stored);
                  if (index.empty()) return (*done)(std::move(stored));
                  driver.async_command(std::move(index), [done, stored = std::move(*stored)](
                                                             Result<ReplyPtr> indexed) mutable {
                      if (!indexed) return (*done)(std::move(indexed).error());
                      (*done)(std::move(stored));
                  });
              });
    }

    Result<EventVersion> show_event(const std::string& event, EventVersion at_least) {
        auto shown = perform(show_call(event, at_least));
        if (!shown) return std::move(shown).error();
        auto indexed = driver.command({"HSET", keys.events_index(), event, shown->spec_json},
                                      keys.events_index());
        if (!indexed) return std::move(indexed).error();
        return shown->version;
    }
    void start_show_event(const std::string& event, EventVersion at_least,
                          detail::Completion<EventVersion> done) {
        auto call = show_call(event, at_least);
        if (!call) return done(std::move(call).error());
        start(std::move(*call), [this, event, done = shared(std::move(done))](Result<Shown> shown) {
            if (!shown) return (*done)(std::move(shown).error());
            driver.async_command({"HSET", keys.events_index(), event, shown->spec_json},
                                 [done, version = shown->version](Result<ReplyPtr> indexed) {
                                     if (!indexed) return (*done)(std::move(indexed).error());
                                     (*done)(version);
                                 });
        });
    }

    static Result<std::vector<std::string>> event_ids(const Result<ReplyPtr>& ids) {
        if (!ids) return ids.error();
        std::vector<std::string> events;
        try {
            const Reader list(ids->get());
            for (std::size_t i = 0; i < list.size(); ++i) events.push_back(list.text(i));
        } catch (const BadReply& e) {
            return Failure(errc::protocol_error, std::string("unexpected reply to HKEYS: ") + e.what());
        }
        std::sort(events.begin(), events.end());
        return events;
    }

    // Every event is swept in its own script (its own Cluster slot), until `limit` is met.
    Result<std::vector<ExpiredHold>> expired(std::size_t limit, Millis redeliver_after) {
        std::vector<ExpiredHold> out;
        if (limit == 0) return out;
        auto events =
            event_ids(driver.command({"HKEYS", keys.events_index()}, keys.events_index()));
        if (!events) return std::move(events).error();
        for (const auto& event : *events) {
            if (out.size() >= limit) break;
            auto batch = perform(expired_call(event, limit - out.size(), redeliver_after));
            if (!batch) return std::move(batch).error();
            for (auto& e : *batch) out.push_back(std::move(e));
        }
        return out;
    }

    struct ExpiredWalk {
        std::vector<std::string> events;
        std::size_t next = 0;
        std::size_t limit = 0;
        Millis redeliver_after{};
        std::vector<ExpiredHold> out;
        detail::Completion<std::vector<ExpiredHold>> done;
    };
    void start_expired(std::size_t limit, Millis redeliver_after,
                       detail::Completion<std::vector<ExpiredHold>> done) {
        if (limit == 0) return done(std::vector<ExpiredHold>{});
        auto walk = std::make_shared<ExpiredWalk>();
        walk->limit = limit;
        walk->redeliver_after = redeliver_after;
        walk->done = std::move(done);
        driver.async_command({"HKEYS", keys.events_index()}, [this, walk](Result<ReplyPtr> ids) {
            auto events = event_ids(ids);
            if (!events) return walk->done(std::move(events).error());
            walk->events = std::move(*events);
            step_expired(walk);
        });
    }
    void step_expired(const std::shared_ptr<ExpiredWalk>& walk) {
        if (walk->next >= walk->events.size() || walk->out.size() >= walk->limit) {
            return walk->done(std::move(walk->out));
        }
        const std::string& event = walk->events[walk->next++];
        start(expired_call(event, walk->limit - walk->out.size(), walk->redeliver_after),
              [this, walk](Result<std::vector<ExpiredHold>> batch) {
                  if (!batch) return walk->done(std::move(batch).error());
                  for (auto& e : *batch) walk->out.push_back(std::move(e));
                  step_expired(walk);
              });
    }

    // One script per event; malformed tokens name no hold and are as acknowledged as they
    // can be, like in the in-process backends.
    static std::vector<std::pair<std::string, std::vector<std::string>>> by_event(
        std::span<const std::string> tokens) {
        std::map<std::string, std::vector<std::string>> grouped;
        for (const auto& token : tokens) {
            const std::string_view event = token_event(token);
            if (!event.empty()) grouped[std::string(event)].push_back(token);
        }
        return {grouped.begin(), grouped.end()};
    }
    Result<void> ack_expired(std::span<const std::string> tokens) {
        for (const auto& [event, list] : by_event(tokens)) {
            if (auto done = perform(ack_call(event, list)); !done) return done;
        }
        return {};
    }
    void start_ack(std::shared_ptr<std::vector<std::pair<std::string, std::vector<std::string>>>> groups,
                   std::size_t next, Done<void> done) {
        if (next >= groups->size()) return (*done)({});
        const auto& [event, list] = (*groups)[next];
        start(ack_call(event, list), [this, groups, next, done](Result<void> acked) {
            if (!acked) return (*done)(std::move(acked));
            start_ack(groups, next + 1, done);
        });
    }
};

namespace {

Result<void> check_options(const RedisOptions& o) {
    auto bad = [](const std::string& why) {
        return Failure(errc::invalid_argument, "RedisOptions: " + why);
    };
    if (!o.unix_socket.empty()) {
        // sockaddr_un's path holds 108 bytes, the terminating NUL included.
        if (o.unix_socket.size() > redis_detail::max_unix_socket_path ||
            o.unix_socket.find('\0') != std::string::npos) {
            return bad("unix_socket must be a path of at most " +
                       std::to_string(redis_detail::max_unix_socket_path) + " bytes, without NUL");
        }
        if (!o.cluster_nodes.empty() || !o.sentinels.empty()) {
            return bad("unix_socket names one server: not with cluster_nodes or sentinels");
        }
    } else {
        if (o.host.empty()) return bad("host is empty");
        if (o.port <= 0 || o.port > 65535) return bad("port must be 1 to 65535");
    }
    if (o.db < 0) return bad("db must not be negative");
    if (o.pool_size == 0) return bad("pool_size must be at least 1");
    if (o.async_connections == 0) return bad("async_connections must be at least 1");
    for (const auto& node : o.cluster_nodes) {
        if (node.host.empty()) return bad("a cluster node's host is empty");
        if (node.port <= 0 || node.port > 65535) return bad("cluster node ports must be 1 to 65535");
    }
    if (!o.cluster_nodes.empty() && o.db != 0) return bad("a Redis Cluster has only db 0");
    for (const auto& node : o.sentinels) {
        if (node.host.empty()) return bad("a sentinel's host is empty");
        if (node.port <= 0 || node.port > 65535) return bad("sentinel ports must be 1 to 65535");
    }
    if (!o.sentinels.empty()) {
        if (!o.cluster_nodes.empty()) return bad("cluster_nodes and sentinels exclude each other");
        const bool word = std::all_of(o.sentinel_service.begin(), o.sentinel_service.end(),
                                      [](char c) { return c > ' ' && c != '\x7f'; });
        if (o.sentinel_service.empty() || !word)
            return bad("sentinel_service must name the service, without spaces");
        if (o.discovery_timeout <= Millis(0)) return bad("discovery_timeout must be positive");
    }
    if (o.connect_timeout <= Millis(0) || o.command_timeout <= Millis(0)) {
        return bad("connect_timeout and command_timeout must be positive");
    }
    if (o.replicas_to_ack < 0) return bad("replicas_to_ack must not be negative");
    if (o.replicas_to_ack > 0 &&
        (o.replica_ack_timeout <= Millis(0) || o.replica_ack_timeout >= o.command_timeout)) {
        return bad("replica_ack_timeout must be positive and shorter than command_timeout "
                   "(WAIT 0 would wait for ever)");
    }
    const bool printable = std::all_of(o.prefix.begin(), o.prefix.end(), is_key_char);
    if (o.prefix.empty() || o.prefix.size() > 128 || !printable) {
        return bad("prefix must be 1 to 128 printable characters without space, { or }");
    }
    return {};
}

// Zone kinds as the scripts store and report them: their to_string names.
ZoneKind kind_of(std::string_view text) {
    return text == to_string(ZoneKind::general_admission) ? ZoneKind::general_admission
                                                          : ZoneKind::named;
}

HoldStatus status_named(const std::string& text) {
    if (text == "held") return HoldStatus::held;
    if (text == "confirmed") return HoldStatus::confirmed;
    if (text == "released") return HoldStatus::released;
    if (text == "expired") return HoldStatus::expired;
    throw BadReply("unknown hold status " + text);
}

// The event of a hold token; the same refusal as the in-process backends when malformed.
Result<std::string> event_of(const std::string& token) {
    const std::string_view event = token_event(token);
    if (event.empty()) return Failure(errc::unknown_hold, "malformed hold token");
    return std::string(event);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The Calls of the inventory, holds and orders.

Call<Stored> RedisBackend::Impl::store_call(const EventSpec& spec, Visibility visibility) const {
    std::vector<std::string> ks{keys.event_key("event", spec.id)};
    std::vector<std::string> args{keys.prefix(), spec.id, spec.name, std::to_string(spec.zones.size())};
    for (const auto& zone : spec.zones) {
        ks.push_back(keys.event_key("free", spec.id, zone.id));
        ks.push_back(keys.event_key("seats", spec.id, zone.id));
        args.push_back(zone.id);
        args.push_back(to_string(zone.kind));
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
    if (visibility == Visibility::hidden) args.emplace_back("hidden");
    if (visibility == Visibility::hide_existing) args.emplace_back("hide_existing");
    return make_call<Stored>(redis_scripts::event_create, std::move(ks), std::move(args),
                             standard<Stored>(redis_scripts::event_create, [](const Reader& r) {
                                 return Stored{r.text(1), r.integer(2) == 1, r.integer(3) == 1,
                                               r.integer(4) == 1};
                             }));
}

Result<Call<Shown>> RedisBackend::Impl::show_call(const std::string& event,
                                                  EventVersion at_least) const {
    if (!is_valid_id(event)) return Failure(errc::unknown_event, "no event " + event, {event});
    // Versions are counted in Lua's numbers (doubles): exact up to 2^53.
    if (at_least > max_script_version) {
        return Failure(errc::invalid_argument,
                       "version " + std::to_string(at_least) + " is beyond what Redis counts");
    }
    return make_call<Shown>(redis_scripts::event_show, {keys.event_key("event", event)},
                            {keys.prefix(), event, std::to_string(at_least)},
                            standard<Shown>(redis_scripts::event_show, [](const Reader& r) {
                                return Shown{r.text(1), r.version(2)};
                            }));
}

Result<Call<EventVersion>> RedisBackend::Impl::version_call(const std::string& event) const {
    if (!is_valid_id(event)) return Failure(errc::unknown_event, "no event " + event, {event});
    return make_call<EventVersion>(
        redis_scripts::version, event_keys(event), {keys.prefix(), event},
        standard<EventVersion>(redis_scripts::version, [](const Reader& r) {
            // {1, version}: 0 for an event no step has changed yet.
            const auto v = r.integer(1);
            if (v < 0) throw BadReply("a negative version");
            return static_cast<EventVersion>(v);
        }));
}

Call<Order> RedisBackend::Impl::restore_call(const RestoreCommand& cmd) const {
    auto ks = event_keys(cmd.event);
    ks.push_back(keys.event_key("free", cmd.event, cmd.zone));
    ks.push_back(keys.event_key("seats", cmd.event, cmd.zone));
    const auto paid_at = std::chrono::duration_cast<Millis>(cmd.paid_at.time_since_epoch());
    std::vector<std::string> args{keys.prefix(), cmd.event,   cmd.order_id,
                                  cmd.holder,    cmd.zone,    cmd.hold_token,
                                  ms(paid_at),   std::to_string(cmd.seats.size())};
    args.insert(args.end(), cmd.seats.begin(), cmd.seats.end());
    return make_call<Order>(
        redis_scripts::restore_order, std::move(ks), std::move(args),
        standard<Order>(redis_scripts::restore_order,
                        [event = cmd.event](const Reader& r) { return read_order(r, event); }));
}

Call<std::vector<EventSpec>> RedisBackend::Impl::events_call() const {
    using Out = std::vector<EventSpec>;
    return make_call<Out>(
        redis_scripts::events, {keys.events_index()}, {keys.prefix()},
        standard<Out>(redis_scripts::events, [](const Reader& r) {
            Out out;
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
                    if (ids.size() != rows.size()) throw BadReply("seats and rows differ in length");
                    for (std::size_t s = 0; s < ids.size(); ++s) zone.seats.push_back({ids[s], rows[s]});
                    spec.zones.push_back(std::move(zone));
                }
                out.push_back(std::move(spec));
            }
            std::sort(out.begin(), out.end(),
                      [](const EventSpec& a, const EventSpec& b) { return a.id < b.id; });
            return out;
        }));
}

Call<Hold> RedisBackend::Impl::hold_call(const HoldCommand& cmd) const {
    const auto& req = cmd.request;
    auto ks = event_keys(cmd.event);
    ks.push_back(keys.event_key("free", cmd.event, req.zone));
    ks.push_back(keys.event_key("seats", cmd.event, req.zone));
    const auto n =
        req.kind == HoldKind::seats ? static_cast<std::int64_t>(req.seats.size()) : req.quantity;
    std::vector<std::string> args{
        keys.prefix(),
        cmd.event,
        cmd.holder,
        cmd.token,
        req.zone,
        to_string(req.kind),
        std::to_string(n),
        ms(cmd.ttl),
        std::to_string(std::clamp<std::int64_t>(cmd.limits.max_seats_per_holder, 0, max_script_ms)),
        cmd.limits.one_active_hold_per_holder ? "1" : "0",
        cmd.idempotency_key};
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

Result<Call<Order>> RedisBackend::Impl::confirm_call(const ConfirmCommand& cmd) const {
    auto event = event_of(cmd.token);
    if (!event) return std::move(event).error();
    return make_call<Order>(
        redis_scripts::confirm, event_keys(*event),
        {keys.prefix(), *event, cmd.token, cmd.order_id, cmd.late ? "1" : "0",
         std::to_string(std::clamp<std::int64_t>(cmd.limits.max_seats_per_holder, 0, max_script_ms))},
        standard<Order>(redis_scripts::confirm,
                        [event = *event](const Reader& r) { return read_order(r, event); }));
}

Result<Call<EventVersion>> RedisBackend::Impl::release_hold_call(const std::string& token) const {
    auto event = event_of(token);
    if (!event) return std::move(event).error();
    return make_call<EventVersion>(redis_scripts::release, event_keys(*event),
                                   {keys.prefix(), *event, token},
                                   version_or_refusal(redis_scripts::release));
}

Result<Call<Hold>> RedisBackend::Impl::extend_call(const std::string& token, Millis ttl,
                                                   Millis max_lifetime) const {
    auto event = event_of(token);
    if (!event) return std::move(event).error();
    if (ttl <= Millis(0) || max_lifetime <= Millis(0)) {
        return Failure(errc::invalid_argument, "extend needs a positive ttl and max_lifetime");
    }
    return make_call<Hold>(
        redis_scripts::extend, event_keys(*event),
        {keys.prefix(), *event, token, ms(ttl), ms(max_lifetime)},
        standard<Hold>(redis_scripts::extend, [token, event = *event](const Reader& r) {
            // {1, holder, zone, {seats}, expires_ms, version}
            return Hold{token, event, r.text(1), r.text(2), r.texts(3), wall(r.integer(4)),
                        HoldStatus::held, {}, false, r.version(5)};
        }));
}

Result<Call<Order>> RedisBackend::Impl::cancel_call(const std::string& event,
                                                    const std::string& order_id,
                                                    const std::optional<std::string>& holder) const {
    if (!is_valid_id(event)) return Failure(errc::unknown_event, "no event " + event, {event});
    if (!is_valid_id(order_id))
        return Failure(errc::unknown_order, "no order " + order_id + " in event " + event);
    if (holder && !is_valid_id(*holder)) {
        return Failure(errc::not_owner,
                       "order " + order_id + " belongs to another holder than " + *holder);
    }
    return make_call<Order>(
        redis_scripts::cancel, event_keys(event),
        {keys.prefix(), event, order_id, holder ? "1" : "0", holder.value_or("")},
        standard<Order>(redis_scripts::cancel,
                        [event](const Reader& r) { return read_order(r, event); }));
}

Result<Call<std::vector<ZoneState>>> RedisBackend::Impl::seats_call(
    const std::string& event, const std::optional<std::string>& zone) const {
    if (!is_valid_id(event)) return Failure(errc::unknown_event, "no event " + event, {event});
    if (zone && !is_valid_id(*zone)) {
        return Failure(errc::unknown_zone, "event " + event + " has no zone " + *zone, {*zone});
    }
    using Out = std::vector<ZoneState>;
    return make_call<Out>(
        redis_scripts::seats, event_keys(event), {keys.prefix(), event, zone.value_or("")},
        standard<Out>(redis_scripts::seats, [](const Reader& r) {
            Out out;
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
                if (listed.size() % 3 != 0) throw BadReply("seat list is not id, row, state triples");
                for (std::size_t s = 0; s < listed.size(); s += 3) {
                    const auto state = listed.integer(s + 2);
                    if (state < 0 || state > 2) throw BadReply("bad seat state");
                    st.seats.push_back({listed.text(s), listed.text(s + 1), static_cast<SeatState>(state)});
                }
                out.push_back(std::move(st));
            }
            return out;
        }));
}

Call<std::vector<ExpiredHold>> RedisBackend::Impl::expired_call(const std::string& event,
                                                                std::size_t limit,
                                                                Millis redeliver_after) const {
    using Out = std::vector<ExpiredHold>;
    return make_call<Out>(
        redis_scripts::expired, event_keys(event),
        {keys.prefix(), event, std::to_string(limit), ms(redeliver_after)},
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

Call<void> RedisBackend::Impl::ack_call(const std::string& event,
                                        const std::vector<std::string>& tokens) const {
    std::vector<std::string> args{keys.prefix(), event};
    args.insert(args.end(), tokens.begin(), tokens.end());
    return make_call<void>(redis_scripts::ack_expired, event_keys(event), std::move(args),
                           standard<void>(redis_scripts::ack_expired, [](const Reader&) {}));
}

// ---------------------------------------------------------------------------------------
// The backend: each operation, both ways.

RedisBackend::RedisBackend(RedisOptions options) {
    if (auto ok = check_options(options); !ok) throw Error(ok.error().code, ok.error().detail);
    impl_ = std::make_unique<Impl>(std::move(options), std::vector<boost::asio::any_io_executor>{});
}

RedisBackend::RedisBackend(RedisOptions options, boost::asio::any_io_executor executor)
    : RedisBackend(std::move(options), std::vector{std::move(executor)}) {}

RedisBackend::RedisBackend(RedisOptions options,
                           std::vector<boost::asio::any_io_executor> executors) {
    if (auto ok = check_options(options); !ok) throw Error(ok.error().code, ok.error().detail);
    if (executors.empty()) throw Error(errc::invalid_argument, "no executor given");
    if (std::ranges::any_of(executors, [](const auto& executor) { return !executor; }))
        throw Error(errc::invalid_argument, "an empty executor given (one that runs nothing)");
    impl_ = std::make_unique<Impl>(std::move(options), std::move(executors));
}

RedisBackend::~RedisBackend() = default;

const RedisOptions& RedisBackend::options() const noexcept {
    return impl_->driver.options();
}

Result<void> RedisBackend::ping() {
    return impl_->driver.ping();
}

Result<std::uint64_t> RedisBackend::acquire_locks(std::span<const std::string> keys,
                                                  const std::string& owner, Millis lease) {
    if (auto ok = impl_->one_group(keys); !ok) return std::move(ok).error();
    return impl_->perform(impl_->acquire_call(keys, owner, lease));
}
void RedisBackend::async_run(const op::acquire_locks& o, detail::Completion<std::uint64_t> done) {
    if (auto ok = impl_->one_group(o.keys); !ok) return done(std::move(ok).error());
    impl_->start(impl_->acquire_call(o.keys, o.owner, o.lease), std::move(done));
}

Result<bool> RedisBackend::release_locks(std::span<const std::string> keys, const std::string& owner) {
    if (keys.empty()) return true;
    if (auto ok = impl_->one_group(keys); !ok) return std::move(ok).error();
    return impl_->perform(impl_->release_call(keys, owner));
}
void RedisBackend::async_run(const op::release_locks& o, detail::Completion<bool> done) {
    if (o.keys.empty()) return done(true);
    if (auto ok = impl_->one_group(o.keys); !ok) return done(std::move(ok).error());
    impl_->start(impl_->release_call(o.keys, o.owner), std::move(done));
}

Result<bool> RedisBackend::extend_locks(std::span<const std::string> keys, const std::string& owner,
                                        Millis lease) {
    if (keys.empty()) return true;
    if (auto ok = impl_->one_group(keys); !ok) return std::move(ok).error();
    return impl_->perform(impl_->extend_locks_call(keys, owner, lease));
}
void RedisBackend::async_run(const op::extend_locks& o, detail::Completion<bool> done) {
    if (o.keys.empty()) return done(true);
    if (auto ok = impl_->one_group(o.keys); !ok) return done(std::move(ok).error());
    impl_->start(impl_->extend_locks_call(o.keys, o.owner, o.lease), std::move(done));
}

Result<void> RedisBackend::raise_fencing(std::string_view key, std::uint64_t at_least) {
    return impl_->perform(impl_->fence_call(key, at_least));
}
void RedisBackend::async_run(const op::raise_fencing& o, detail::Completion<void> done) {
    impl_->start(impl_->fence_call(o.key, o.at_least), std::move(done));
}

Result<void> RedisBackend::create_event(const EventSpec& spec) {
    auto stored = impl_->store_event(spec, Visibility::shown);
    if (!stored) return std::move(stored).error();
    return {};
}
void RedisBackend::async_run(const op::create_event& o, detail::Completion<void> done) {
    impl_->start_store_event(o.spec, Visibility::shown,
                             [done = shared(std::move(done))](Result<Stored> stored) {
                                 if (!stored) return (*done)(std::move(stored).error());
                                 (*done)({});
                             });
}

Result<Recovery> RedisBackend::begin_recovery(const EventSpec& spec, bool hide_existing) {
    auto stored =
        impl_->store_event(spec, hide_existing ? Visibility::hide_existing : Visibility::hidden);
    if (!stored) return std::move(stored).error();
    return recovery_of(*stored);
}
void RedisBackend::async_run(const op::begin_recovery& o, detail::Completion<Recovery> done) {
    impl_->start_store_event(o.spec, o.hide_existing ? Visibility::hide_existing : Visibility::hidden,
                             [done = shared(std::move(done))](Result<Stored> stored) {
                                 if (!stored) return (*done)(std::move(stored).error());
                                 (*done)(recovery_of(*stored));
                             });
}

Result<EventVersion> RedisBackend::end_recovery(const std::string& event, EventVersion at_least) {
    return impl_->show_event(event, at_least);
}
void RedisBackend::async_run(const op::end_recovery& o, detail::Completion<EventVersion> done) {
    impl_->start_show_event(o.event, o.at_least, std::move(done));
}

Result<EventVersion> RedisBackend::version(const std::string& event) {
    return impl_->perform(impl_->version_call(event));
}
void RedisBackend::async_run(const op::version& o, detail::Completion<EventVersion> done) {
    impl_->start(impl_->version_call(o.event), std::move(done));
}

Result<Order> RedisBackend::restore_order(const RestoreCommand& cmd) {
    return impl_->perform(impl_->restore_call(cmd));
}
void RedisBackend::async_run(const op::restore_order& o, detail::Completion<Order> done) {
    impl_->start(impl_->restore_call(o.cmd), std::move(done));
}

Result<std::vector<EventSpec>> RedisBackend::events() {
    return impl_->perform(impl_->events_call());
}
void RedisBackend::async_run(const op::events&, detail::Completion<std::vector<EventSpec>> done) {
    impl_->start(impl_->events_call(), std::move(done));
}

Result<Hold> RedisBackend::hold(const HoldCommand& cmd) {
    return impl_->perform(impl_->hold_call(cmd));
}
void RedisBackend::async_run(const op::hold& o, detail::Completion<Hold> done) {
    impl_->start(impl_->hold_call(o.cmd), std::move(done));
}

Result<Order> RedisBackend::confirm(const ConfirmCommand& cmd) {
    return impl_->perform(impl_->confirm_call(cmd));
}
void RedisBackend::async_run(const op::confirm& o, detail::Completion<Order> done) {
    impl_->start(impl_->confirm_call(o.cmd), std::move(done));
}

Result<EventVersion> RedisBackend::release(const std::string& token) {
    return impl_->perform(impl_->release_hold_call(token));
}
void RedisBackend::async_run(const op::release& o, detail::Completion<EventVersion> done) {
    impl_->start(impl_->release_hold_call(o.token), std::move(done));
}

Result<Hold> RedisBackend::extend(const std::string& token, Millis ttl, Millis max_lifetime) {
    return impl_->perform(impl_->extend_call(token, ttl, max_lifetime));
}
void RedisBackend::async_run(const op::extend& o, detail::Completion<Hold> done) {
    impl_->start(impl_->extend_call(o.token, o.ttl, o.max_lifetime), std::move(done));
}

Result<Order> RedisBackend::cancel(const std::string& event, const std::string& order_id,
                                   const std::optional<std::string>& holder) {
    return impl_->perform(impl_->cancel_call(event, order_id, holder));
}
void RedisBackend::async_run(const op::cancel& o, detail::Completion<Order> done) {
    impl_->start(impl_->cancel_call(o.event, o.order_id, o.holder), std::move(done));
}

Result<std::vector<ZoneState>> RedisBackend::seats(const std::string& event,
                                                   const std::optional<std::string>& zone) {
    return impl_->perform(impl_->seats_call(event, zone));
}
void RedisBackend::async_run(const op::seats& o, detail::Completion<std::vector<ZoneState>> done) {
    impl_->start(impl_->seats_call(o.event, o.zone), std::move(done));
}

Result<std::vector<ExpiredHold>> RedisBackend::expired(std::size_t limit, Millis redeliver_after) {
    return impl_->expired(limit, redeliver_after);
}
void RedisBackend::async_run(const op::expired& o, detail::Completion<std::vector<ExpiredHold>> done) {
    impl_->start_expired(o.limit, o.redeliver_after, std::move(done));
}

Result<void> RedisBackend::ack_expired(std::span<const std::string> tokens) {
    return impl_->ack_expired(tokens);
}
void RedisBackend::async_run(const op::ack_expired& o, detail::Completion<void> done) {
    auto groups = std::make_shared<std::vector<std::pair<std::string, std::vector<std::string>>>>(
        Impl::by_event(o.tokens));
    impl_->start_ack(std::move(groups), 0, shared(std::move(done)));
}

void RedisBackend::close() { impl_->driver.close(); }

}  // namespace seatlock
