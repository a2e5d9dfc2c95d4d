// SPDX-License-Identifier: MIT
// tests/faults/checks.cpp: the rules.
#include "checks.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <limits>
#include <thread>

#include "support/http_client.hpp"

namespace seatlock::testing::faults {
namespace {

constexpr std::size_t examples_kept = 5;
// Expiry is decided by Redis' clock, the buyers' records by this machine's: the same
// clock, read a little apart.
constexpr std::int64_t clock_slack_ms = 20;
constexpr std::int64_t forever = std::numeric_limits<std::int64_t>::max();

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
    return out;
}

std::string describe(const Answer& answer) {
    return std::to_string(answer.status) + " " + answer.excerpt;
}

// The calls of a purchase with their names, for rules that look at every call.
std::vector<std::pair<const char*, const Call*>> calls_of(const Purchase& p) {
    std::vector<std::pair<const char*, const Call*>> calls{{"hold", &p.hold}};
    if (p.confirm) calls.emplace_back("confirm", &*p.confirm);
    if (p.release) calls.emplace_back("release", &*p.release);
    if (p.cancel) calls.emplace_back("cancel", &*p.cancel);
    return calls;
}

std::vector<std::string> strings_in(const boost::json::object& body, std::string_view field) {
    std::vector<std::string> out;
    const auto* value = body.if_contains(field);
    if (!value || !value->is_array()) return out;
    for (const auto& item : value->get_array()) {
        if (item.is_string()) out.emplace_back(item.get_string());
    }
    return out;
}

std::string text_in(const boost::json::object& body, std::string_view field) {
    const auto* value = body.if_contains(field);
    return value && value->is_string() ? std::string(value->get_string()) : "";
}

bool has_token(const DatabaseView& db, const std::string& holder) {
    const auto found = db.tokens_by_holder.find(holder);
    return found != db.tokens_by_holder.end() && !found->second.empty();
}

}  // namespace

void Findings::add(const std::string& rule, const std::string& example) {
    auto& cases = rules_[rule];
    ++cases.count;
    if (cases.examples.size() < examples_kept) cases.examples.push_back(example);
}

void Findings::merge(const Findings& other) {
    for (const auto& [rule, cases] : other.rules_) {
        auto& mine = rules_[rule];
        mine.count += cases.count;
        for (const auto& example : cases.examples) {
            if (mine.examples.size() < examples_kept) mine.examples.push_back(example);
        }
    }
}

std::map<std::string, std::string> Findings::by_rule() const {
    std::map<std::string, std::string> out;
    for (const auto& [rule, cases] : rules_) {
        std::string text = std::to_string(cases.count) + " case(s)";
        for (const auto& example : cases.examples) text += "\n    - " + example;
        out[rule] = text;
    }
    return out;
}

Findings check_after_settling(const std::vector<Purchase>& purchases, const DatabaseView& db,
                              const std::optional<std::map<std::string, std::string>>& seats,
                              const std::string& seat_map_error, const CheckOptions& options) {
    Findings findings;
    const auto* map = seats ? &*seats : nullptr;
    if (!map) findings.add("the seat map can be read after the fault", seat_map_error);
    no_seat_taken_twice(purchases, options, findings);
    answered_orders_are_stored(purchases, db, map, findings);
    orders_match_seat_map(db, map, findings);
    no_pending_rows(db, findings);
    unavailable_answers_say_how_to_retry(purchases, findings);
    retries_act_once(purchases, db, findings);
    service_recovers(purchases, options, findings);
    return findings;
}

void no_seat_taken_twice(const std::vector<Purchase>& purchases, const CheckOptions& options,
                         Findings& findings) {
    struct Span {
        std::int64_t from, to;
        std::string what;
    };
    std::map<std::string, std::vector<Span>> by_seat;
    std::int64_t base = forever;
    for (const auto& p : purchases) base = std::min(base, p.hold.first_sent_ms);

    for (const auto& p : purchases) {
        if (p.granted) {
            std::int64_t to =
                p.expires_at_ms > 0 ? p.expires_at_ms - clock_slack_ms : p.hold.answered_ms;
            if (p.confirm) to = std::min(to, p.confirm->first_sent_ms);
            if (p.release) to = std::min(to, p.release->first_sent_ms);
            const std::int64_t from = p.hold.answered_ms;
            const auto& loss = options.redis_lost;
            const bool lost = loss && from <= loss->until_ms && to >= loss->from_ms;
            if (!lost && to > from) {
                for (const auto& seat : p.seats)
                    by_seat[seat].push_back({from, to, "hold of " + p.buyer});
            }
        }
        if (p.confirm && p.confirm->status() == 200) {
            const std::int64_t from = p.confirm->answered_ms;
            const std::int64_t to = p.cancel ? p.cancel->first_sent_ms : forever;
            auto seats = strings_in(p.confirm->body, "seats");
            if (seats.empty()) seats = p.seats;
            for (const auto& seat : seats)
                by_seat[seat].push_back({from, to, "order " + p.payment_id});
        }
    }
    const auto at = [&](std::int64_t t) {
        return t == forever ? std::string("end") : "+" + std::to_string(t - base) + "ms";
    };
    for (auto& [seat, spans] : by_seat) {
        std::sort(spans.begin(), spans.end(),
                  [](const Span& a, const Span& b) { return a.from < b.from; });
        const Span* longest = nullptr;  // of those started so far, the one that ends last
        for (const auto& span : spans) {
            if (longest && span.from < longest->to) {
                findings.add("no seat held or paid by two buyers at once",
                             "seat " + seat + ": " + longest->what + " [" + at(longest->from) +
                                 ", " + at(longest->to) + "] and " + span.what + " [" +
                                 at(span.from) + ", " + at(span.to) + "]");
            }
            if (!longest || span.to > longest->to) longest = &span;
        }
    }
}

void answered_orders_are_stored(const std::vector<Purchase>& purchases, const DatabaseView& db,
                                const std::map<std::string, std::string>* seats,
                                Findings& findings) {
    const std::string rule = "every confirm answered 200 is a stored order, its seats paid";
    for (const auto& p : purchases) {
        if (!p.confirm || p.confirm->status() != 200) continue;
        const std::string answered_id = text_in(p.confirm->body, "order_id");
        if (answered_id != p.payment_id) {
            findings.add(rule, p.buyer + ": confirm with payment " + p.payment_id +
                                   " answered order '" + answered_id + "'");
        }
        const OrderRow* row = db.order(p.payment_id);
        if (!row) {
            findings.add(rule, "order " + p.payment_id + " answered 200 but has no row in orders");
            continue;
        }
        if (row->hold_token != p.token) {
            findings.add(rule, "order " + p.payment_id + " is stored for hold " + row->hold_token +
                                   ", not the hold it paid (" + p.token + ")");
        }
        const bool cancelled = p.cancel && p.cancel->status() == 200;
        if (cancelled && row->paid) {
            findings.add("every cancel answered 200 is cancelled in SQLite",
                         "order " + p.payment_id + " still paid");
        }
        if (p.cancel) continue;  // cancelled, or maybe: its seats may be free again
        if (!row->paid) {
            findings.add(rule,
                         "order " + p.payment_id + " is cancelled in SQLite; nobody cancelled it");
            continue;
        }
        if (!seats) continue;
        for (const auto& seat : p.seats) {
            const auto state = seats->find(seat);
            if (state == seats->end() || state->second != "paid") {
                findings.add(rule, "order " + p.payment_id + ": seat " + seat + " reads " +
                                       (state == seats->end() ? "nothing" : state->second));
            }
        }
    }
}

void orders_match_seat_map(const DatabaseView& db, const std::map<std::string, std::string>* seats,
                           Findings& findings) {
    std::map<std::string, std::vector<std::string>> paid_by;  // seat -> paid orders
    for (const auto& order : db.orders) {
        if (!order.paid) continue;
        for (const auto& seat : order.seats) paid_by[seat].push_back(order.order_id);
    }
    for (const auto& [seat, orders] : paid_by) {
        if (orders.size() > 1) {
            findings.add("no seat paid by two orders (SQLite)",
                         "seat " + seat + ": " + join(orders));
        }
    }
    if (!seats) return;
    for (const auto& [seat, orders] : paid_by) {
        const auto state = seats->find(seat);
        if (state == seats->end() || state->second != "paid") {
            findings.add("every seat of a paid order (SQLite) reads paid",
                         "seat " + seat + " of " + join(orders) + " reads " +
                             (state == seats->end() ? "nothing" : state->second));
        }
    }
    for (const auto& [seat, state] : *seats) {
        if (state == "paid" && !paid_by.contains(seat)) {
            findings.add("every paid seat belongs to a paid order in SQLite",
                         "seat " + seat + " reads paid; no paid order has it");
        }
    }
}

void no_pending_rows(const DatabaseView& db, Findings& findings) {
    const std::int64_t now = wall_ms();
    for (const auto& row : db.pending) {
        findings.add("no pending reservation left after the expiry drain",
                     row.token + " of " + row.holder + ", expired " +
                         std::to_string(now - row.expires_at_ms) + " ms ago");
    }
}

void unavailable_answers_say_how_to_retry(const std::vector<Purchase>& purchases,
                                          Findings& findings) {
    for (const auto& p : purchases) {
        for (const auto& [step, call] : calls_of(p)) {
            for (const auto& answer : call->answers) {
                if (answer.status < 500) continue;
                const std::string where =
                    std::string(step) + " of " + p.buyer + ": " + describe(answer);
                if (answer.error.empty() || !answer.has_message)
                    findings.add("every 5xx answer is JSON with an error code and a message",
                                 where);
                if (answer.retry_after.empty())
                    findings.add("every 5xx answer has a Retry-After header", where);
                if (!answer.retry_safe) {
                    findings.add(std::string(step) == "hold"
                                     ? "every 5xx answer to a hold says whether a retry with the "
                                       "same key is safe (retry_safe)"
                                     : "every 5xx answer says whether a retry is safe (retry_safe)",
                                 where);
                }
            }
        }
    }
}

void retries_act_once(const std::vector<Purchase>& purchases, const DatabaseView& db,
                      Findings& findings) {
    for (const auto& p : purchases) {
        // Each purchase is a buyer of its own with one key: two tokens are two holds.
        const auto tokens = db.tokens_by_holder.find(p.buyer);
        if (tokens != db.tokens_by_holder.end() && tokens->second.size() > 1) {
            findings.add("a hold retried with the same Idempotency-Key is one hold",
                         p.buyer + " has holds " + join(tokens->second) + " after " +
                             std::to_string(p.hold.answers.size()) + " attempt(s)");
        }
        const int held = p.hold.status();
        if (p.hold.was_retried() && (held == 409 || held == 422) && has_token(db, p.buyer)) {
            findings.add("a retried hold is never refused by its own first attempt",
                         p.buyer + ": " + describe(p.hold.last()) + "; yet the database has hold " +
                             db.tokens_by_holder.at(p.buyer).front());
        }
        if (held == 200) {
            const bool same_seats = strings_in(p.hold.body, "seats") == p.asked;
            if (!p.hold.last().replayed || text_in(p.hold.body, "status").empty() || !same_seats) {
                findings.add(
                    "a replayed hold answers 200 with Idempotent-Replayed, its status and "
                    "its seats",
                    p.buyer + ": " + describe(p.hold.last()));
            }
        }
        if (p.confirm && p.confirm->status() != 200) {
            const OrderRow* row = db.order(p.payment_id);
            if (row && row->hold_token == p.token && !p.confirm->gave_up()) {
                findings.add("a confirm answers an error only when nothing was paid",
                             p.buyer + ": " + describe(p.confirm->last()) + " after " +
                                 std::to_string(p.confirm->answers.size()) +
                                 " attempt(s), yet order " + p.payment_id + " is stored");
            }
        }
        if (p.release && p.release->was_retried() && !p.release->gave_up()) {
            const int status = p.release->status();
            const bool expired = status == 410;  // the hold ran out while the release was retried
            if (status != 204 && !expired) {
                findings.add("a release retried after a 5xx answers 204",
                             p.buyer + ": " + describe(p.release->last()));
            }
        }
        if (p.cancel && p.cancel->was_retried() && !p.cancel->gave_up() &&
            p.cancel->status() != 200) {
            findings.add("a cancel retried after a 5xx answers 200",
                         p.buyer + ": " + describe(p.cancel->last()));
        }
    }
}

void service_recovers(const std::vector<Purchase>& purchases, const CheckOptions& options,
                      Findings& findings) {
    bool sold_after = false;
    for (const auto& p : purchases) {
        sold_after = sold_after || (p.granted && p.hold.answered_ms > options.fault_ended_ms);
        for (const auto& [step, call] : calls_of(p)) {
            if (call->gave_up()) {
                findings.add("every call gets a definite answer within the client's retry time",
                             std::string(step) + " of " + p.buyer + " gave up after " +
                                 std::to_string(call->answers.size()) +
                                 " attempt(s); last: " + describe(call->last()));
            }
        }
    }
    if (!sold_after) {
        findings.add("holds are granted again after the fault ended",
                     "no hold was granted after the fault ended");
    }
}

void paid_orders_still_paid(const DatabaseView& before,
                            const std::map<std::string, std::string>& seats, Findings& findings) {
    for (const auto& order : before.orders) {
        if (!order.paid) continue;
        for (const auto& seat : order.seats) {
            const auto state = seats.find(seat);
            if (state == seats.end() || state->second != "paid") {
                findings.add("every order paid before the restart still reads paid",
                             "seat " + seat + " of " + order.order_id + " reads " +
                                 (state == seats.end() ? "nothing" : state->second));
            }
        }
    }
}

void paid_orders_answer_as_before(int port, const DatabaseView& before, std::size_t how_many,
                                  Findings& findings) {
    HttpClient client(port);
    std::size_t asked = 0;
    for (const auto& order : before.orders) {
        if (!order.paid) continue;
        if (asked++ == how_many) break;
        const std::vector<std::pair<std::string, std::string>> as_buyer = {
            {"Content-Type", "application/json"}, {"X-User-Id", order.holder}};
        const auto again = client.send(
            "POST", "/holds/" + order.hold_token + "/confirm",
            boost::json::serialize(boost::json::object{{"payment_id", order.order_id}}), as_buyer);
        boost::system::error_code ec;
        const auto body = boost::json::parse(again.body, ec);
        const bool same = !ec && body.is_object() &&
                          text_in(body.get_object(), "order_id") == order.order_id &&
                          strings_in(body.get_object(), "seats") == order.seats;
        if (again.status != 200 || !same) {
            findings.add("a confirm retried after the restart answers the same order",
                         order.order_id + ": " + std::to_string(again.status) + " " + again.body);
        }
        const auto cancel =
            client.send("POST", "/orders/" + order.order_id + "/cancel", "", as_buyer);
        if (cancel.status != 200) {
            findings.add("every order paid before the restart can be cancelled",
                         order.order_id + ": " + std::to_string(cancel.status) + " " + cancel.body);
        }
    }
}

void pending_rows_closed(const std::string& db_path, const DatabaseView& before,
                         std::chrono::milliseconds wait, Findings& findings) {
    std::set<std::string> open_before;
    for (const auto& row : before.pending) open_before.insert(row.token);
    std::vector<std::string> still_open;
    const auto end = std::chrono::steady_clock::now() + wait;
    do {
        still_open.clear();
        for (const auto& row : DatabaseView::read(db_path).pending) {
            if (open_before.contains(row.token))
                still_open.push_back(row.token + " of " + row.holder);
        }
        if (still_open.empty()) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < end);
    for (const auto& row : still_open) {
        findings.add("pending reservations from before the restart are closed", row);
    }
}

namespace {
// The seats of `paid_seats` that the seat map `seats` does not read paid.
std::vector<std::string> read_not_paid(const std::map<std::string, std::string>& seats,
                                       const std::set<std::string>& paid_seats) {
    std::vector<std::string> not_paid;
    for (const auto& seat : paid_seats) {
        const auto state = seats.find(seat);
        if (state == seats.end() || state->second != "paid") not_paid.push_back(seat);
    }
    return not_paid;
}
}  // namespace

namespace {

// A counter of a server's GET /metrics; nullopt when the server does not answer it.
std::optional<std::int64_t> counter(int port, const std::string& name) {
    try {
        HttpClient client(port);
        const auto reply = client.get("/metrics");
        const std::string line = "\n" + name + " ";
        const auto at = reply.body.find(line);
        if (reply.status != 200 || at == std::string::npos) return std::nullopt;
        return std::stoll(reply.body.substr(at + line.size()));
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace

Findings wait_until_shown_paid(const std::vector<int>& ports, const Venue& venue,
                               const std::set<std::string>& paid_seats,
                               std::chrono::milliseconds deadline, std::string& log) {
    using Clock = std::chrono::steady_clock;
    Findings findings;
    const auto started = Clock::now();
    for (std::size_t i = 0; i < ports.size(); ++i) {
        std::string last;
        bool shown = false;
        int reads = 0;
        while (!shown) {
            std::string error;
            const auto seats = seat_map(ports[i], venue, &error);
            ++reads;
            if (!seats) {
                last = error;
            } else {
                const auto not_paid = read_not_paid(*seats, paid_seats);
                shown = not_paid.empty();
                if (!shown) last = "seats " + join(not_paid) + " read not paid";
            }
            if (shown || Clock::now() >= started + deadline) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        const auto took =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
        if (!shown) {
            findings.add("every server's seat map shows the seats paid (SQLite) before a fault",
                         "server " + std::to_string(i) + ": not after " +
                             std::to_string(deadline.count()) + " ms; last: " + last);
            continue;
        }
        log += "server " + std::to_string(i) + ": every paid seat shown after " +
               std::to_string(took.count()) + " ms (" + std::to_string(reads) + " reads)\n";
    }
    return findings;
}

Findings watch_repair(const std::vector<int>& ports, const Venue& venue,
                      const std::set<std::string>& paid_seats, std::chrono::milliseconds deadline,
                      std::string& log) {
    Findings findings;
    struct Watch {
        bool repaired = false;
        bool wrong_map_seen = false;
        bool found = false;    // the server counted the loss
        int storage_lost = 0;  // /healthz answers saying so
        int other_unhealthy = 0;
        std::string last;
    };
    std::vector<Watch> watches(ports.size());
    const auto started = std::chrono::steady_clock::now();
    const auto end = started + deadline;
    while (std::chrono::steady_clock::now() < end) {
        bool all = true;
        for (std::size_t i = 0; i < ports.size(); ++i) {
            Watch& w = watches[i];
            if (w.repaired) continue;
            all = false;
            // Read first: a map read after it says the loss was found is the repaired one.
            // Before, the server serves its copy from before the loss with /healthz 200.
            const auto losses = counter(ports[i], "seatlock_ticketing_storage_losses_total");
            if (losses && *losses > 0) w.found = true;
            try {
                HttpClient client(ports[i]);
                const auto health = client.get("/healthz");
                if (health.status != 200) {
                    (health.body.find("storage_lost") != std::string::npos ? w.storage_lost
                                                                           : w.other_unhealthy)++;
                    w.last = "/healthz " + std::to_string(health.status) + " " + health.body;
                    continue;
                }
            } catch (const std::exception& e) {
                w.last = std::string("/healthz: ") + e.what();
                continue;
            }
            std::string error;
            const auto seats = seat_map(ports[i], venue, &error);
            if (!seats) {
                w.last = "/healthz 200; " + error;
                continue;
            }
            const auto not_paid = read_not_paid(*seats, paid_seats);
            if (not_paid.empty() && !w.found) {
                w.last = "/healthz 200 and every paid seat paid, before the loss was found";
            } else if (not_paid.empty()) {
                w.repaired = true;
                const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - started);
                log += "server " + std::to_string(i) + ": repaired after " +
                       std::to_string(took.count()) + " ms (" + std::to_string(w.storage_lost) +
                       " /healthz storage_lost answers seen)\n";
            } else if (!w.wrong_map_seen) {
                w.wrong_map_seen = true;
                findings.add(
                    "after Redis lost its data, no paid seat reads free while /healthz says ok",
                    "server " + std::to_string(i) + ": seats " + join(not_paid) +
                        " of paid orders read not paid (" +
                        (w.found ? "after" : "before") + " the server found the loss, " +
                        std::to_string(w.storage_lost) + " /healthz storage_lost answers seen)");
            }
        }
        if (all) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (std::size_t i = 0; i < ports.size(); ++i) {
        if (watches[i].repaired) continue;
        findings.add("every server repairs its events after Redis lost its data",
                     "server " + std::to_string(i) + " not repaired after " +
                         std::to_string(deadline.count()) + " ms; last: " + watches[i].last);
    }
    return findings;
}

Findings watch_rollback_repair(const std::vector<int>& ports, const Venue& venue,
                               const std::set<std::string>& paid_seats,
                               std::chrono::milliseconds deadline, std::string& log) {
    using Clock = std::chrono::steady_clock;
    Findings findings;
    const auto started = Clock::now();
    const auto end = started + deadline;
    const auto since_start = [&] {
        return std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
    };
    bool found = false;
    while (!found && Clock::now() < end) {
        for (std::size_t i = 0; i < ports.size() && !found; ++i) {
            const auto losses = counter(ports[i], "seatlock_ticketing_storage_losses_total");
            if (losses && *losses > 0) {
                found = true;
                log += "server " + std::to_string(i) + " found the rollback after " +
                       since_start() + " ms\n";
            }
        }
        if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!found) {
        findings.add(
            "a Redis gone back to older data is found",
            "no server counted a storage loss within " + std::to_string(deadline.count()) + " ms");
        return findings;
    }
    std::vector<std::string> last(ports.size());
    std::vector<bool> repaired(ports.size(), false);
    for (bool all = false; !all && Clock::now() < end;) {
        all = true;
        for (std::size_t i = 0; i < ports.size(); ++i) {
            if (repaired[i]) continue;
            all = false;
            try {
                HttpClient client(ports[i]);
                const auto health = client.get("/healthz");
                if (health.status != 200) {
                    last[i] = "/healthz " + std::to_string(health.status) + " " + health.body;
                    continue;
                }
            } catch (const std::exception& e) {
                last[i] = std::string("/healthz: ") + e.what();
                continue;
            }
            std::string error;
            const auto seats = seat_map(ports[i], venue, &error);
            if (!seats) {
                last[i] = "/healthz 200; " + error;
                continue;
            }
            const auto not_paid = read_not_paid(*seats, paid_seats);
            if (not_paid.empty()) {
                repaired[i] = true;
                log +=
                    "server " + std::to_string(i) + ": repaired after " + since_start() + " ms\n";
            } else {
                last[i] = "seats " + join(not_paid) + " of paid orders read not paid";
            }
        }
        if (!all) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (std::size_t i = 0; i < ports.size(); ++i) {
        if (repaired[i]) continue;
        findings.add(
            "every server shows every paid seat paid again after Redis went back to older data",
            "server " + std::to_string(i) + " not repaired after " +
                std::to_string(deadline.count()) + " ms; last: " + last[i]);
    }
    return findings;
}

}  // namespace seatlock::testing::faults
