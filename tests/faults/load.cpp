// SPDX-License-Identifier: MIT
// tests/faults/load.cpp: the careful client and the buyers' loop.
#include "load.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <ctime>
#include <functional>
#include <map>
#include <random>

#include "support/http_client.hpp"

namespace seatlock::testing::faults {
namespace {

using Clock = std::chrono::steady_clock;
using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr auto retry_after_cap = std::chrono::milliseconds(200);
constexpr auto next_server_after = std::chrono::milliseconds(20);

// "2024-05-01T12:34:56.789Z" as Unix milliseconds; 0 when it does not read.
std::int64_t unix_ms_of(const std::string& iso) {
    std::tm tm{};
    int ms = 0;
    if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7) {
        return 0;
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return static_cast<std::int64_t>(::timegm(&tm)) * 1000 + ms;
}

std::vector<std::string> strings_of(const boost::json::value* array) {
    std::vector<std::string> out;
    if (!array || !array->is_array()) return out;
    for (const auto& item : array->get_array()) {
        if (item.is_string()) out.emplace_back(item.get_string());
    }
    return out;
}

std::string string_of(const boost::json::object& body, std::string_view field) {
    const auto* value = body.if_contains(field);
    return value && value->is_string() ? std::string(value->get_string()) : "";
}

// One connection at a time to one of the servers; retries as the file header says.
class CarefulClient {
public:
    CarefulClient(std::vector<int> ports, std::size_t first, std::chrono::milliseconds retry_for,
                  const std::atomic<Clock::rep>& retry_until)
        : ports_(std::move(ports)),
          server_(first % ports_.size()),
          retry_for_(retry_for),
          retry_until_(retry_until) {}

    Call call(const std::string& method, const std::string& target, const std::string& body,
              const Headers& headers) {
        Call call;
        call.first_sent_ms = wall_ms();
        auto give_up_at = Clock::now() + retry_for_;
        if (const auto until = retry_until_.load(); until != 0)
            give_up_at = std::min(give_up_at, Clock::time_point(Clock::duration(until)));
        for (;;) {
            call.answers.push_back(attempt(method, target, body, headers, call.body));
            const Answer& answer = call.answers.back();
            if ((answer.status != 0 && answer.status != 503) || Clock::now() >= give_up_at) break;
            std::this_thread::sleep_for(answer.status == 0 ? next_server_after : pause_for(answer));
        }
        call.answered_ms = wall_ms();
        return call;
    }

private:
    Answer attempt(const std::string& method, const std::string& target, const std::string& body,
                   const Headers& headers, boost::json::object& json) {
        Answer answer;
        answer.server = server_;
        json = {};
        try {
            if (!http_) http_.emplace(ports_[server_]);
            const HttpReply reply = http_->send(method, target, body, headers);
            answer.status = reply.status;
            answer.excerpt = reply.body.substr(0, 300);
            answer.retry_after = reply.header("Retry-After");
            answer.replayed = reply.header("Idempotent-Replayed") == "true";
            boost::system::error_code ec;
            auto value = boost::json::parse(reply.body, ec);
            if (!ec && value.is_object()) {
                json = std::move(value.get_object());
                answer.error = string_of(json, "error");
                answer.has_message = !string_of(json, "message").empty();
                if (const auto* safe = json.if_contains("retry_safe"); safe && safe->is_bool())
                    answer.retry_safe = safe->get_bool();
            }
        } catch (const std::exception& e) {
            // The server is gone or broke the connection: a careful client tries another.
            answer.status = 0;
            answer.excerpt = e.what();
            http_.reset();
            server_ = (server_ + 1) % ports_.size();
        }
        return answer;
    }

    // Retry-After (whole seconds), capped for test speed; the cap when there is none. Never
    // less than a short pause, so that "Retry-After: 0" does not make a busy loop.
    static std::chrono::milliseconds pause_for(const Answer& answer) {
        if (answer.retry_after.empty()) return retry_after_cap;
        const std::chrono::milliseconds asked =
            std::chrono::seconds(std::max(0, std::atoi(answer.retry_after.c_str())));
        return std::clamp(asked, next_server_after, retry_after_cap);
    }

    std::vector<int> ports_;
    std::size_t server_;
    std::chrono::milliseconds retry_for_;
    const std::atomic<Clock::rep>& retry_until_;
    std::optional<HttpClient> http_;
};

// One or two neighbouring seats of one row.
std::vector<std::string> pick_seats(std::minstd_rand& random, const Venue& venue) {
    const std::size_t first = random() % venue.seats.size();
    std::vector<std::string> seats{venue.seats[first]};
    const bool two = random() % 2 == 0;
    const bool same_row = first + 1 < venue.seats.size() &&
                          venue.seats[first + 1].front() == venue.seats[first].front();
    if (two && same_row) seats.push_back(venue.seats[first + 1]);
    return seats;
}

void pause(std::minstd_rand& random, int from_ms, int to_ms) {
    const auto ms =
        from_ms + static_cast<int>(random() % static_cast<unsigned>(to_ms - from_ms + 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Reads what the hold's answer granted: a new hold (201), or the original one replayed
// (200) while it still holds its seats.
void read_hold(Purchase& p) {
    const int status = p.hold.status();
    if (status == 200 && string_of(p.hold.body, "status") != "held") return;
    if (status != 201 && status != 200) return;
    p.token = string_of(p.hold.body, "token");
    p.seats = strings_of(p.hold.body.if_contains("seats"));
    p.expires_at_ms = unix_ms_of(string_of(p.hold.body, "expires_at"));
    p.granted = !p.token.empty();
}

}  // namespace

Load::Load(LoadOptions options) : options_(std::move(options)) {
    for (int i = 0; i < options_.buyers; ++i) threads_.emplace_back([this, i] { buyer(i); });
}

Load::~Load() {
    stop_ = true;
    for (auto& thread : threads_) {
        if (thread.joinable()) thread.join();
    }
}

void Load::finish(std::chrono::milliseconds more) {
    std::this_thread::sleep_for(more);
    retry_until_ = (Clock::now() + options_.retry_for).time_since_epoch().count();
    stop_ = true;
    for (auto& thread : threads_) thread.join();
    threads_.clear();
}

void Load::buyer(int index) {
    std::minstd_rand random(static_cast<unsigned>(std::hash<std::string>{}(options_.tag) +
                                                  static_cast<unsigned>(index)));
    std::uniform_real_distribution<double> share(0.0, 1.0);
    CarefulClient client(options_.ports, static_cast<std::size_t>(index), options_.retry_for,
                         retry_until_);
    const Venue& venue = options_.venue;
    std::vector<Purchase> mine;
    for (int n = 0; n < options_.purchases_per_buyer && !stop_; ++n) {
        Purchase p;
        p.buyer = options_.tag + ".t" + std::to_string(index) + ".n" + std::to_string(n);
        p.idempotency_key = "key." + p.buyer;
        p.payment_id = "pay." + p.buyer;
        p.asked = pick_seats(random, venue);
        const Headers as_buyer = {{"Content-Type", "application/json"}, {"X-User-Id", p.buyer}};
        Headers hold_headers = as_buyer;
        hold_headers.emplace_back("Idempotency-Key", p.idempotency_key);
        boost::json::array asked;
        for (const auto& seat : p.asked) asked.emplace_back(seat);
        p.hold = client.call(
            "POST", "/events/" + venue.event + "/holds",
            boost::json::serialize(boost::json::object{{"zone", venue.zone}, {"seats", asked}}),
            hold_headers);
        read_hold(p);
        if (p.granted) {
            pause(random, 0, 30);
            const double next = share(random);
            if (next < options_.confirm_share) {
                p.confirm = client.call(
                    "POST", "/holds/" + p.token + "/confirm",
                    boost::json::serialize(boost::json::object{{"payment_id", p.payment_id}}),
                    as_buyer);
                if (p.confirm->status() == 200 && share(random) < options_.cancel_share) {
                    pause(random, 0, 30);
                    p.cancel =
                        client.call("POST", "/orders/" + p.payment_id + "/cancel", "", as_buyer);
                }
            } else if (next < options_.confirm_share + options_.release_share) {
                p.release = client.call("DELETE", "/holds/" + p.token, "", as_buyer);
            }
        }
        mine.push_back(std::move(p));
        pause(random, 30, 80);
    }
    std::lock_guard lock(mutex_);
    for (auto& p : mine) purchases_.push_back(std::move(p));
}

std::string Load::summary() const {
    std::size_t granted = 0, paid = 0, released = 0, cancelled = 0, gave_up = 0;
    std::map<int, std::size_t> statuses;
    for (const auto& p : purchases_) {
        granted += p.granted;
        paid += p.confirm && p.confirm->status() == 200;
        released += p.release && p.release->status() == 204;
        cancelled += p.cancel && p.cancel->status() == 200;
        for (const Call* call :
             {&p.hold, p.confirm ? &*p.confirm : nullptr, p.release ? &*p.release : nullptr,
              p.cancel ? &*p.cancel : nullptr}) {
            if (!call) continue;
            gave_up += call->gave_up();
            for (const auto& answer : call->answers) ++statuses[answer.status];
        }
    }
    std::string text = std::to_string(purchases_.size()) +
                       " purchases: " + std::to_string(granted) + " holds granted, " +
                       std::to_string(paid) + " paid, " + std::to_string(released) + " released, " +
                       std::to_string(cancelled) + " cancelled, " + std::to_string(gave_up) +
                       " calls given up; answers:";
    for (const auto& [status, count] : statuses) {
        text += " " + (status == 0 ? std::string("none") : std::to_string(status)) + "x" +
                std::to_string(count);
    }
    return text;
}

}  // namespace seatlock::testing::faults
