// SPDX-License-Identifier: MIT
// tests/support/system_test.hpp: what the system tests share: the storages a server can
// run on (memory, and Redis when the Redis backend is built: a private redis-server per
// test) and small readers of the server's JSON.
#pragma once

#include "support/ticketing_server.hpp"
#include "support/wire_form.hpp"

#ifdef SEATLOCK_SYSTEM_TEST_REDIS
#include "support/redis_server.hpp"
#endif

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace seatlock::testing {

/// Whether this test program was built with a sanitizer (ASan, TSan): the server it starts
/// then runs several times slower, and timing bounds allow for it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool sanitized_build = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool sanitized_build = true;
#else
inline constexpr bool sanitized_build = false;
#endif
#else
inline constexpr bool sanitized_build = false;
#endif

/// The server on the memory backend.
struct MemoryStorage {
    [[nodiscard]] std::vector<std::string> args() const { return {"--backend", "memory"}; }
};

#ifdef SEATLOCK_SYSTEM_TEST_REDIS
/// The server on the Redis backend, with a redis-server of its own.
struct RedisStorage {
    RedisServer redis;  // throws, failing the test, when redis-server is missing
    [[nodiscard]] std::vector<std::string> args() const {
        return {"--backend", "redis", "--redis-url", redis.url()};
    }
};
/// The same, the server reaching its redis-server through the Unix socket (unix://).
struct RedisUnixSocketStorage {
    RedisServer redis;
    [[nodiscard]] std::vector<std::string> args() const {
        return {"--backend", "redis", "--redis-url", redis.unix_url()};
    }
};
#define SEATLOCK_SYSTEM_STORAGES seatlock::testing::MemoryStorage, seatlock::testing::RedisStorage
/// Every storage, and Redis through its Unix socket as well: for the whole flow.
#define SEATLOCK_SYSTEM_STORAGES_AND_UNIX_SOCKET \
    SEATLOCK_SYSTEM_STORAGES, seatlock::testing::RedisUnixSocketStorage
#else
#define SEATLOCK_SYSTEM_STORAGES_AND_UNIX_SOCKET SEATLOCK_SYSTEM_STORAGES
#define SEATLOCK_SYSTEM_STORAGES seatlock::testing::MemoryStorage
#endif

/// Starts a server on `storage` with extra flags and an optional venue.
template <typename Storage>
TicketingServer::Options on(const Storage& storage, std::vector<std::string> extra = {},
                            std::optional<std::string> venue = std::nullopt) {
    auto args = storage.args();
    args.insert(args.end(), extra.begin(), extra.end());
    return {std::move(args), std::move(venue)};
}

/// A counter of GET /metrics; throws when the server does not report it.
inline std::int64_t metric(HttpClient& client, const std::string& name) {
    const auto reply = client.get("/metrics");
    if (reply.status != 200) throw std::runtime_error("GET /metrics answered " + reply.body);
    const std::string line = "\n" + name + " ";
    const auto at = reply.body.find(line);
    if (at == std::string::npos) throw std::runtime_error("/metrics has no " + name);
    return std::stoll(reply.body.substr(at + line.size()));
}

/// A JSON array of strings as a vector.
inline std::vector<std::string> strings(const boost::json::value& array) {
    std::vector<std::string> out;
    for (const auto& item : array.as_array()) out.emplace_back(item.as_string());
    return out;
}

/// One named zone of GET /events/<event>/seats; throws when the server does not answer it.
inline boost::json::object zone_of(HttpClient& client, const std::string& event,
                                   const std::string& zone) {
    const auto reply = client.get("/events/" + event + "/seats?zone=" + zone);
    if (reply.status != 200) throw std::runtime_error("GET seats answered " + reply.body);
    return reply.json().at("zones").as_array().at(0).as_object();
}

/// seat id -> "free" / "held" / "paid", for one named zone.
inline std::map<std::string, std::string> seat_states(HttpClient& client, const std::string& event,
                                                      const std::string& zone) {
    return seat_states_of(zone_of(client, event, zone));
}

/// Waits until a server's seat map shows what another process (or a write behind the
/// servers' backs) did: longer than the seat feed's interval (50 ms) and one storage call.
inline void settle_seat_maps() {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

/// The counts of a zone: {"capacity", "free", "held", "paid"} -> n.
inline std::map<std::string, std::int64_t> zone_counts(HttpClient& client, const std::string& event,
                                                       const std::string& zone) {
    const auto z = zone_of(client, event, zone);
    std::map<std::string, std::int64_t> counts;
    for (const char* key : {"capacity", "free", "held", "paid"})
        counts[key] = z.at(key).to_number<std::int64_t>();
    return counts;
}

/// "2024-05-01T12:34:56.789Z" (the server's times) as Unix milliseconds.
inline std::int64_t unix_ms(const boost::json::value& iso) {
    std::tm t{};
    int ms = 0;
    const std::string text(iso.as_string());
    REQUIRE(std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &t.tm_year, &t.tm_mon, &t.tm_mday,
                        &t.tm_hour, &t.tm_min, &t.tm_sec, &ms) == 7);
    t.tm_year -= 1900;
    t.tm_mon -= 1;
    return static_cast<std::int64_t>(::timegm(&t)) * 1000 + ms;
}

/// A JSON hold request body for named seats.
inline std::string seats_body(const std::string& zone, const std::vector<std::string>& seats) {
    boost::json::array list;
    for (const auto& seat : seats) list.emplace_back(seat);
    return boost::json::serialize(boost::json::object{{"zone", zone}, {"seats", list}});
}

}  // namespace seatlock::testing

TYPE_TO_STRING(seatlock::testing::MemoryStorage);
#ifdef SEATLOCK_SYSTEM_TEST_REDIS
TYPE_TO_STRING(seatlock::testing::RedisStorage);
#endif
