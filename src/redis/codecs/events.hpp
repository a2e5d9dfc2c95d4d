// SPDX-License-Identifier: MIT
// src/redis/codecs/events.hpp: the Redis encodings and replies of the operations on whole
// events: create_event, events, begin_recovery, end_recovery, version, restore_order
// (lua/event_*.lua, events.lua, version.lua, restore_order.lua). See codec.hpp.
#pragma once

#include <seatlock/detail/event_history.hpp>
#include <seatlock/keys.hpp>

#include "../codec.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace seatlock::redis_detail {

namespace event_codec {

// What event_create.lua answers: {1, spec_json, created, shown, rolled_back}.
struct Stored {
    std::string spec_json;
    bool created = false;
    bool shown = false;
    bool rolled_back = false;  // an existing event hidden by this call (hide_existing)
};

// How event_create.lua stores an event: shown (create_event), or hidden (begin_recovery)
// when missing, and then also when it exists (hide_existing: a rollback detected).
enum class Visibility { shown, hidden, hide_existing };

inline Call<Stored> store_call(const Context& c, const EventSpec& spec, Visibility visibility) {
    std::vector<std::string> ks{c.keys.event_key("event", spec.id)};
    using A = redis_scripts::args::event_create;
    auto args = arguments<A>();
    args[A::prefix] = c.keys.prefix();
    args[A::event] = spec.id;
    args[A::history] = std::to_string(detail::new_history());  // kept only by a new event
    args[A::name] = spec.name;
    args[A::zone_count] = std::to_string(spec.zones.size());
    // Then from A::zones, for each zone: id, kind, n, and a named zone's n (seat, row) pairs.
    for (const auto& zone : spec.zones) {
        ks.push_back(c.keys.event_key("free", spec.id, zone.id));
        ks.push_back(c.keys.event_key("seats", spec.id, zone.id));
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

// An event, then its index entry (the index is what events and expired walk): written
// when the event is shown (creating the same spec again repairs it if this step was
// lost), deleted when this call hid the event (a retry deletes it again). `then` gets
// what event_create.lua did.
template <typename Exec, typename Then>
void store_event(Exec exec, const EventSpec& spec, Visibility visibility, Then then) {
    const std::string index = exec.context().keys.events_index();
    exec.call(store_call(exec.context(), spec, visibility),
              [exec, index, id = spec.id, then = share(std::move(then))](Result<Stored> stored) mutable {
                  if (!stored) return (*then)(std::move(stored));
                  std::vector<std::string> command;
                  if (stored->shown) command = {"HSET", index, id, stored->spec_json};
                  else if (stored->rolled_back) command = {"HDEL", index, id};
                  if (command.empty()) return (*then)(std::move(stored));
                  exec.command(std::move(command), [then, stored = std::move(*stored)](
                                                       Result<ReplyPtr> indexed) mutable {
                      if (!indexed) return (*then)(Result<Stored>(std::move(indexed).error()));
                      (*then)(Result<Stored>(std::move(stored)));
                  });
              });
}

// What event_show.lua answers: {1, spec_json, version}.
struct Shown {
    std::string spec_json;
    EventVersion version = 0;
};

inline Failure no_event(const std::string& event) {
    return Failure(errc::unknown_event, "no event " + event, {event});
}

}  // namespace event_codec

template <>
struct Codec<op::create_event> {
    template <typename Exec, typename Done>
    static void run(Exec exec, const op::create_event& o, Done done) {
        event_codec::store_event(exec, o.spec, event_codec::Visibility::shown,
                                 [done = std::move(done)](Result<event_codec::Stored> stored) mutable {
                                     if (!stored) return done(std::move(stored).error());
                                     done(Result<void>{});
                                 });
    }
};

template <>
struct Codec<op::begin_recovery> {
    template <typename Exec, typename Done>
    static void run(Exec exec, const op::begin_recovery& o, Done done) {
        using event_codec::Visibility;
        event_codec::store_event(
            exec, o.spec, o.hide_existing ? Visibility::hide_existing : Visibility::hidden,
            [done = std::move(done)](Result<event_codec::Stored> stored) mutable {
                if (!stored) return done(std::move(stored).error());
                if (stored->rolled_back) return done(Recovery::rolled_back);
                done(stored->created ? Recovery::created : Recovery::existed);
            });
    }
};

template <>
struct Codec<op::end_recovery> {
    // Shows the event (event_show.lua), then writes its index entry.
    template <typename Exec, typename Done>
    static void run(Exec exec, const op::end_recovery& o, Done done) {
        if (!is_valid_id(o.event)) return done(event_codec::no_event(o.event));
        // Versions are counted in Lua's numbers (doubles): exact up to 2^53.
        if (o.at_least > max_script_version) {
            return done(Failure(errc::invalid_argument, "version " + std::to_string(o.at_least) +
                                                            " is beyond what Redis counts"));
        }
        const Context& c = exec.context();
        using event_codec::Shown;
        using A = redis_scripts::args::event_show;
        auto args = arguments<A>();
        args[A::prefix] = c.keys.prefix();
        args[A::event] = o.event;
        args[A::at_least] = std::to_string(o.at_least);
        args[A::history] = std::to_string(detail::new_history());  // kept only when it was hidden
        auto call = make_call<Shown>(redis_scripts::event_show, {c.keys.event_key("event", o.event)},
                                     std::move(args),
                                     standard<Shown>(redis_scripts::event_show, [](const Reader& r) {
                                         return Shown{r.text(1), r.version(2)};
                                     }));
        exec.call(std::move(call), [exec, index = c.keys.events_index(), event = o.event,
                                    done = share(std::move(done))](Result<Shown> shown) mutable {
            if (!shown) return (*done)(std::move(shown).error());
            exec.command({"HSET", index, event, shown->spec_json},
                         [done, version = shown->version](Result<ReplyPtr> indexed) {
                             if (!indexed) return (*done)(std::move(indexed).error());
                             (*done)(version);
                         });
        });
    }
};

template <>
struct Codec<op::version> {
    static Result<Call<EventVersion>> call(const Context& c, const op::version& o) {
        if (!is_valid_id(o.event)) return event_codec::no_event(o.event);
        using A = redis_scripts::args::version;
        auto args = arguments<A>();
        args[A::prefix] = c.keys.prefix();
        args[A::event] = o.event;
        args[A::log_limit] = c.log_limit;
        return make_call<EventVersion>(
            redis_scripts::version, c.event_keys(o.event), std::move(args),
            standard<EventVersion>(redis_scripts::version, [](const Reader& r) {
                // {1, version}: 0 for an event no step has changed yet.
                const auto v = r.integer(1);
                if (v < 0) throw BadReply("a negative version");
                return static_cast<EventVersion>(v);
            }));
    }
};

template <>
struct Codec<op::restore_order> {
    static Result<Call<Order>> call(const Context& c, const op::restore_order& o) {
        const RestoreCommand& cmd = o.cmd;
        auto ks = c.event_keys(cmd.event);
        ks.push_back(c.keys.event_key("free", cmd.event, cmd.zone));
        ks.push_back(c.keys.event_key("seats", cmd.event, cmd.zone));
        const auto paid_at = std::chrono::duration_cast<Millis>(cmd.paid_at.time_since_epoch());
        using A = redis_scripts::args::restore_order;
        auto args = arguments<A>(cmd.seats.size());
        args[A::prefix] = c.keys.prefix();
        args[A::event] = cmd.event;
        args[A::order] = cmd.order_id;
        args[A::holder] = cmd.holder;
        args[A::zone] = cmd.zone;
        args[A::token] = cmd.hold_token;
        args[A::paid_at] = ms(paid_at);
        args[A::log_limit] = c.log_limit;
        args[A::n] = std::to_string(cmd.seats.size());
        args.insert(args.end(), cmd.seats.begin(), cmd.seats.end());  // from A::seats
        return make_call<Order>(
            redis_scripts::restore_order, std::move(ks), std::move(args),
            standard<Order>(redis_scripts::restore_order,
                            [event = cmd.event](const Reader& r) { return read_order(r, event); }));
    }
};

template <>
struct Codec<op::events> {
    static std::vector<std::string> prefix_only(const Context& c) {
        using A = redis_scripts::args::events;
        auto args = arguments<A>();
        args[A::prefix] = c.keys.prefix();
        return args;
    }
    static Result<Call<std::vector<EventSpec>>> call(const Context& c, const op::events&) {
        using Out = std::vector<EventSpec>;
        return make_call<Out>(
            redis_scripts::events, {c.keys.events_index()}, prefix_only(c),
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
};

}  // namespace seatlock::redis_detail
