// SPDX-License-Identifier: MIT
// tests/faults/checks.hpp: what must be true after any fault, judged from what the buyers
// were told and from the storage itself. Each rule collects the cases that break it, so
// a failing scenario says what it found rather than only that something is wrong.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "load.hpp"
#include "storage_view.hpp"

namespace seatlock::testing::faults {

/// The cases that broke each rule (a few examples and how many in all).
class Findings {
public:
    void add(const std::string& rule, const std::string& example);
    void merge(const Findings& other);
    [[nodiscard]] bool empty() const { return rules_.empty(); }
    /// rule -> "N cases: example; example; ..."
    [[nodiscard]] std::map<std::string, std::string> by_rule() const;

private:
    struct Cases {
        std::size_t count = 0;
        std::vector<std::string> examples;
    };
    std::map<std::string, Cases> rules_;
};

struct CheckOptions {
    /// When the fault ended: sales must have resumed after it.
    std::int64_t fault_ended_ms = 0;
    /// When Redis lost its data (scenario "restarted empty"): from just before it was
    /// killed until it answered again, empty. Holds granted before it came back and live
    /// when it was killed are gone with it (a hold answered just after the kill began was
    /// granted before it); only paid orders must survive.
    struct Loss {
        std::int64_t from_ms = 0;
        std::int64_t until_ms = 0;
    };
    std::optional<Loss> redis_lost;
};

/// Every rule below, over the buyers' records and the settled storage (`seats`: the
/// seat map a server serves now; nullopt with `seat_map_error` when it could not be read).
Findings check_after_settling(const std::vector<Purchase>& purchases, const DatabaseView& db,
                              const std::optional<std::map<std::string, std::string>>& seats,
                              const std::string& seat_map_error, const CheckOptions& options);

// The rules, one function each.

/// No seat was held or paid by two buyers at once, as far as their answers prove: a hold
/// is live from its 201 until its confirm or release was sent or it expired; an order
/// from its confirm's 200 until its cancel was sent.
void no_seat_taken_twice(const std::vector<Purchase>& purchases, const CheckOptions& options,
                         Findings& findings);

/// Every confirm answered 200 is its payment's order in SQLite, paid unless the buyer
/// cancelled it (and cancelled if the cancel answered 200), with its seats paid.
void answered_orders_are_stored(const std::vector<Purchase>& purchases, const DatabaseView& db,
                                const std::map<std::string, std::string>* seats,
                                Findings& findings);

/// SQLite and the seat map agree: no seat in two paid orders, every seat of a paid
/// order reads paid, every paid seat belongs to a paid order.
void orders_match_seat_map(const DatabaseView& db, const std::map<std::string, std::string>* seats,
                           Findings& findings);

/// No pending reservation is left once every hold has expired and been drained.
void no_pending_rows(const DatabaseView& db, Findings& findings);

/// Every 5xx answer names its error with a message, carries Retry-After and says whether
/// a retry is safe.
void unavailable_answers_say_how_to_retry(const std::vector<Purchase>& purchases,
                                          Findings& findings);

/// A call retried after a 5xx (or no answer) did what it would have done once: a hold
/// with the same key is one hold, never refused by its own first attempt, and a replay
/// says so; a confirm answers its order; a release 204; a cancel 200.
void retries_act_once(const std::vector<Purchase>& purchases, const DatabaseView& db,
                      Findings& findings);

/// Every call ended with a definite answer within the client's retry time, and holds
/// were granted again after the fault ended.
void service_recovers(const std::vector<Purchase>& purchases, const CheckOptions& options,
                      Findings& findings);

// After a memory-backend server restarted over its database (`before`: the database as
// the old process left it).

/// Every order paid before the restart still has its seats paid in `seats`.
void paid_orders_still_paid(const DatabaseView& before,
                            const std::map<std::string, std::string>& seats, Findings& findings);

/// For up to `how_many` orders paid before the restart: a confirm retried with its
/// payment id answers the same order, and a cancel then answers 200.
void paid_orders_answer_as_before(int port, const DatabaseView& before, std::size_t how_many,
                                  Findings& findings);

/// No reservation pending before the restart is still pending after `wait`.
void pending_rows_closed(const std::string& db_path, const DatabaseView& before,
                         std::chrono::milliseconds wait, Findings& findings);

/// Before a fault: polls every server until its seat map shows every seat of `paid_seats`
/// paid, or until `deadline`. A server's map follows the other servers' sales one feed
/// read later, so a seat paid just before the fault can read held or free on another
/// server that has not read since; a server that has not yet seen the fault (the storage
/// it lost answers nothing meanwhile) serves that map with /healthz 200. Waiting first
/// makes watch_repair's "every seat paid before the loss" what each server had shown. A
/// server whose map never shows them is a finding; `log` gets how long each took.
Findings wait_until_shown_paid(const std::vector<int>& ports, const Venue& venue,
                               const std::set<std::string>& paid_seats,
                               std::chrono::milliseconds deadline, std::string& log);

/// After Redis lost its data: polls every server until it has counted the loss
/// (seatlock_ticketing_storage_losses_total above 0), then its /healthz answers 200 and its
/// seat map shows every seat of `paid_seats` paid, or until `deadline`; a map read before
/// the server found the loss is its copy from before, and proves no repair. A seat map
/// that answers 200 with one of those seats not paid, before or after, is a finding (the
/// seat could be sold again), and so is a server not repaired in time. `log` gets what
/// each server said.
Findings watch_repair(const std::vector<int>& ports, const Venue& venue,
                      const std::set<std::string>& paid_seats, std::chrono::milliseconds deadline,
                      std::string& log);

/// After Redis went back to older data (restarted from an older snapshot): polls the
/// servers' /metrics until one has counted the loss (seatlock_ticketing_storage_losses_total
/// above 0), then every server until its /healthz answers 200 and its seat map shows every
/// seat of `paid_seats` paid, or until `deadline`. A seat map read before the loss was
/// found may show the older data: reads are not checked against the event's version, and
/// nothing is sold from them (a hold is a write, which finds the loss); only the repaired
/// state counts. A loss never found, or a server not repaired in time, is a finding. `log`
/// gets when each happened.
Findings watch_rollback_repair(const std::vector<int>& ports, const Venue& venue,
                               const std::set<std::string>& paid_seats,
                               std::chrono::milliseconds deadline, std::string& log);

}  // namespace seatlock::testing::faults
