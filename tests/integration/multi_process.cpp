// SPDX-License-Identifier: MIT
// Four separate processes of eight threads race for overlapping seats and lock keys
// through one redis-server (race_worker.cpp). Afterwards, from each process's log of
// successes and from the server's final state: no seat was ever held or sold twice, and
// no two lock holders were ever inside at once.
#include "support/redis_admin.hpp"
#include "support/redis_server.hpp"

#include <seatlock/backends/redis.hpp>
#include <seatlock/seatlock.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

extern char** environ;

namespace {

constexpr int processes = 4;
constexpr int threads = 8;
constexpr int rounds = 40;
constexpr long long forever = std::numeric_limits<long long>::max();

struct LoggedHold {
    std::string zone;
    std::vector<std::string> seats;
    long long start = 0;  // the hold's reply had arrived
    long long end = -1;   // its confirm or release had not left yet; forever once paid
    std::string order;
};

struct LoggedLock {
    std::uint64_t fence = 0;
    long long start = 0, end = 0;
    std::vector<std::string> keys;
};

/// One race, run once for every TEST_CASE below to read.
struct Race {
    std::vector<int> exit_codes;
    std::map<std::string, LoggedHold> holds;  // by token
    std::vector<LoggedLock> locks;
    std::map<std::string, int> refusals;
    int malformed_lines = 0;
    std::vector<seatlock::ZoneState> final_state;
    std::map<std::string, long long> counters;  // lock key -> final counter value

    Race() {
        seatlock::testing::RedisServer server;
        seatlock::RedisOptions options;
        options.port = server.port();
        seatlock::RedisBackend backend(options);
        seatlock::SeatHoldStore store(backend);
        std::vector<seatlock::SeatSpec> seats;
        for (int n = 1; n <= 40; ++n)
            seats.push_back({"S-" + std::to_string(n), "R" + std::to_string((n - 1) / 10)});
        store
            .create_event({"race",
                           "Race",
                           {seatlock::ZoneSpec::named("race", seats),
                            seatlock::ZoneSpec::general_admission("pit", 24)}})
            .value();

        char dir_pattern[] = "/tmp/seatlock-race-XXXXXX";
        const std::string dir = ::mkdtemp(dir_pattern);
        std::vector<pid_t> pids;
        for (int p = 0; p < processes; ++p) {
            std::vector<std::string> args{SEATLOCK_RACE_WORKER,
                                          std::to_string(server.port()),
                                          dir + "/worker-" + std::to_string(p) + ".log",
                                          std::to_string(p),
                                          std::to_string(threads),
                                          std::to_string(rounds)};
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            pid_t pid = -1;
            if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
                throw std::runtime_error(std::string("cannot start ") + SEATLOCK_RACE_WORKER);
            }
            pids.push_back(pid);
        }
        for (pid_t pid : pids) {
            int status = 0;
            ::waitpid(pid, &status, 0);
            exit_codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        }
        for (int p = 0; p < processes; ++p) read_log(dir + "/worker-" + std::to_string(p) + ".log");
        std::filesystem::remove_all(dir);

        final_state = store.seats("race").value().zones;
        seatlock::testing::RedisAdmin admin(server.port());
        for (int k = 0; k < 6; ++k) {
            const std::string key = "lockrace:k" + std::to_string(k);
            auto value = admin.command({"GET", "counter:" + key});
            counters[key] = value->type == REDIS_REPLY_STRING
                                ? std::stoll(std::string(value->str, value->len))
                                : 0;
        }
    }

    void read_log(const std::string& path) {
        std::ifstream in(path);
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream words(line);
            std::string kind, token;
            words >> kind;
            if (kind == "hold") {
                LoggedHold h;
                words >> token >> h.zone >> h.start;
                for (std::string seat; words >> seat;) h.seats.push_back(seat);
                holds[token] = std::move(h);
            } else if (kind == "confirm" || kind == "release") {
                long long sent = 0;
                words >> token >> sent;
                auto it = holds.find(token);  // a thread logs its hold before ending it
                if (it == holds.end()) {
                    ++malformed_lines;
                    continue;
                }
                it->second.end = kind == "confirm" ? forever : sent;
                if (kind == "confirm") words >> it->second.order;
            } else if (kind == "lock") {
                LoggedLock l;
                words >> l.fence >> l.start >> l.end;
                for (std::string key; words >> key;) l.keys.push_back(key);
                locks.push_back(std::move(l));
            } else if (kind == "refused") {
                words >> token;
                ++refusals[token];
            } else {
                ++malformed_lines;
            }
        }
    }

    /// Per "zone:seat", the logged holds of it by start.
    std::map<std::string, std::vector<const LoggedHold*>> holds_by_seat() const {
        std::map<std::string, std::vector<const LoggedHold*>> out;
        for (const auto& [token, h] : holds) {
            for (const auto& seat : h.seats) out[h.zone + ":" + seat].push_back(&h);
        }
        for (auto& [seat, list] : out) {
            std::sort(list.begin(), list.end(),
                      [](auto* a, auto* b) { return a->start < b->start; });
        }
        return out;
    }
};

const Race& race() {
    static const Race r;
    return r;
}

}  // namespace

TEST_CASE("the race ran: four processes exited cleanly after real contention") {
    const Race& r = race();
    CHECK(r.exit_codes == std::vector<int>(processes, 0));
    CHECK(r.malformed_lines == 0);
    const auto refused = [&](const std::string& code) {
        auto it = r.refusals.find(code);
        return it == r.refusals.end() ? 0 : it->second;
    };
    MESSAGE(r.holds.size() << " holds, " << refused("seat_taken") << " seat_taken, "
                           << refused("sold_out") << " sold_out, " << r.locks.size() << " locks");
    CHECK(r.holds.size() > 200);
    CHECK(refused("seat_taken") > 10);  // requests did collide
    CHECK(r.locks.size() == static_cast<std::size_t>(processes * threads * rounds));
}

TEST_CASE("no seat was ever held by two holds at once, across processes") {
    const Race& r = race();
    int overlaps = 0;
    for (const auto& [seat, list] : r.holds_by_seat()) {
        long long busy_until = -1;  // the latest end among the earlier holds
        for (const LoggedHold* h : list) {
            // Logged spans lie inside the real ones: any overlap is a real double hold.
            if (h->start <= busy_until) {
                ++overlaps;
                MESSAGE("seat " << seat << " held twice");
            }
            busy_until = std::max(busy_until, h->end);
        }
    }
    CHECK(overlaps == 0);
    for (const auto& entry : r.holds) {
        CHECK_MESSAGE(entry.second.end != -1, "hold " << entry.first << " never ended");
    }
}

TEST_CASE("no seat was sold twice, and the final state shows exactly the logged sales") {
    const Race& r = race();
    std::map<std::string, int> sold;
    for (const auto& [token, h] : r.holds) {
        if (h.end != forever) continue;
        for (const auto& seat : h.seats) ++sold[h.zone + ":" + seat];
    }
    for (const auto& entry : sold) {
        CHECK_MESSAGE(entry.second == 1,
                      "seat " << entry.first << " sold " << entry.second << " times");
    }

    std::set<std::string> paid_in_storage;
    std::int64_t pit_paid = 0;
    for (const auto& zone : r.final_state) {
        CHECK(zone.held == 0);  // every hold ended by confirm or release
        if (zone.zone == "pit") pit_paid = zone.paid;
        for (const auto& seat : zone.seats) {
            if (seat.state == seatlock::SeatState::paid) paid_in_storage.insert("race:" + seat.id);
        }
    }
    std::set<std::string> paid_in_logs;
    std::int64_t pit_in_logs = 0;
    for (const auto& [seat, n] : sold) {
        if (seat.rfind("pit:", 0) == 0)
            pit_in_logs += n;
        else
            paid_in_logs.insert(seat);
    }
    CHECK(paid_in_storage == paid_in_logs);
    CHECK(pit_paid == pit_in_logs);
}

TEST_CASE("lock_all across processes: never two holders of a key, fencing tokens in order") {
    const Race& r = race();
    std::map<std::string, std::vector<const LoggedLock*>> by_key;
    std::map<std::string, long long> acquisitions;
    for (const auto& l : r.locks) {
        for (const auto& key : l.keys) {
            by_key[key].push_back(&l);
            ++acquisitions[key];
        }
    }
    int overlaps = 0, out_of_order = 0;
    for (auto& [key, list] : by_key) {
        std::sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->start < b->start; });
        long long busy_until = -1;
        for (std::size_t i = 0; i < list.size(); ++i) {
            if (list[i]->start <= busy_until) ++overlaps;
            if (i > 0 && list[i]->fence <= list[i - 1]->fence) ++out_of_order;
            busy_until = std::max(busy_until, list[i]->end);
        }
    }
    CHECK(overlaps == 0);
    CHECK(out_of_order == 0);
    // Unguarded GET + SET increments lose updates whenever two holders overlap.
    for (const auto& [key, n] : acquisitions) CHECK(r.counters.at(key) == n);
}
