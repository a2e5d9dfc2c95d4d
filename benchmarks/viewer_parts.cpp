// SPDX-License-Identifier: MIT
// benchmarks/viewer_parts.cpp: the SSE parser, the version readers, the staleness book and
// the venue file.
#include "viewer_parts.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <stdexcept>

namespace seatlock::bench {

namespace {

constexpr std::size_t kept_field_bytes = 16;
constexpr std::size_t kept_value_bytes = 64;

bool is_line_end(char c) { return c == '\n' || c == '\r'; }

std::optional<std::uint64_t> whole_number(std::string_view text) {
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || end == text.data()) return std::nullopt;
    return n;
}

}  // namespace

void SseParser::feed(std::string_view bytes, const OnEvent& on_event) {
    std::size_t i = 0;
    while (i < bytes.size()) {
        const char c = bytes[i];
        if (after_cr_) {
            after_cr_ = false;
            if (c == '\n') {  // the LF of a CRLF: the line already ended at its CR
                ++i;
                continue;
            }
        }
        if (state_ == State::skip_value || state_ == State::comment) {
            // Long lines (data, comments) are skipped a run at a time.
            const auto end = bytes.find_first_of("\r\n", i);
            const std::size_t run = (end == std::string_view::npos ? bytes.size() : end) - i;
            if (state_ == State::skip_value) event_.data_bytes += run;
            i += run;
            if (i == bytes.size()) break;
            after_cr_ = bytes[i] == '\r';
            if (state_ == State::comment) {
                ++comments_;
                state_ = State::line_start;
            } else {
                end_line(on_event);
            }
            ++i;
            continue;
        }
        ++i;
        if (is_line_end(c)) {
            after_cr_ = c == '\r';
            end_line(on_event);
            continue;
        }
        switch (state_) {
            case State::line_start:
                if (c == ':') {
                    state_ = State::comment;
                } else {
                    field_.assign(1, c);
                    state_ = State::field;
                }
                break;
            case State::field:
                if (c == ':') {
                    value_.clear();
                    value_space_ = true;
                    state_ = field_ == "id" || field_ == "event" ? State::value
                                                                 : State::skip_value;
                } else if (field_.size() < kept_field_bytes) {
                    field_ += c;
                }
                break;
            case State::value:
                if (value_space_ && c == ' ') {
                    value_space_ = false;
                    break;
                }
                value_space_ = false;
                if (value_.size() < kept_value_bytes) value_ += c;
                break;
            case State::skip_value:
            case State::comment:
                break;  // handled above
        }
    }
}

// A line ended (state_ says what it was).
void SseParser::end_line(const OnEvent& on_event) {
    switch (state_) {
        case State::line_start:  // a blank line: the event, if any, is complete
            if (event_started_) {
                ++events_;
                on_event(event_);
            }
            event_ = {};
            event_started_ = false;
            break;
        case State::field:  // a field without a colon: its value is empty
            event_started_ = true;
            if (field_ == "id") event_.id.clear();
            if (field_ == "event") event_.type.clear();
            break;
        case State::value:
            event_started_ = true;
            if (field_ == "id") event_.id = value_;
            if (field_ == "event") event_.type = value_;
            break;
        case State::skip_value:
            event_started_ = true;
            if (field_ == "data") ++event_.data_bytes;  // the line feed joining data lines
            break;
        case State::comment:
            ++comments_;
            break;
    }
    state_ = State::line_start;
}

std::optional<std::uint64_t> version_of_etag(std::string_view tag) {
    if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);
    if (tag.size() < 3 || tag.front() != '"' || tag.back() != '"') return std::nullopt;
    tag = tag.substr(1, tag.size() - 2);
    const auto dash = tag.find('-');
    if (dash != std::string_view::npos) {
        if (tag.substr(dash) != "-gzip") return std::nullopt;
        tag = tag.substr(0, dash);
    }
    if (tag.empty() || !std::all_of(tag.begin(), tag.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    return whole_number(tag);
}

std::optional<std::uint64_t> json_number(std::string_view json, std::string_view name) {
    const std::string key = fmt::format("\"{}\"", name);
    for (auto at = json.find(key); at != std::string_view::npos; at = json.find(key, at + 1)) {
        auto i = at + key.size();
        while (i < json.size() && (json[i] == ' ' || json[i] == '\t')) ++i;
        if (i == json.size() || json[i] != ':') continue;  // a string value, not a member name
        ++i;
        while (i < json.size() && (json[i] == ' ' || json[i] == '\t')) ++i;
        return whole_number(json.substr(i));
    }
    return std::nullopt;
}

int StalenessBook::add_viewer() {
    std::lock_guard lock(mutex_);
    viewers_.push_back({0, probes_.size()});
    return static_cast<int>(viewers_.size() - 1);
}

void StalenessBook::start() {
    std::lock_guard lock(mutex_);
    probes_.clear();
    for (auto& viewer : viewers_) viewer.next = 0;
    samples_ = {};
    missed_ = 0;
    probing_ = true;
}

void StalenessBook::stop_probing() {
    std::lock_guard lock(mutex_);
    probing_ = false;
}

void StalenessBook::hold_answered(std::uint64_t version, Clock::time_point at) {
    std::lock_guard lock(mutex_);
    if (!probing_) return;
    if (!probes_.empty() &&
        (at - probes_.back().at < probe_every_ || version <= probes_.back().version))
        return;
    probes_.push_back({version, at});
}

void StalenessBook::received(int viewer, std::uint64_t version, Clock::time_point at) {
    std::lock_guard lock(mutex_);
    count(viewers_.at(static_cast<std::size_t>(viewer)), version, at);
}

// Counts every probe up to `version` for `viewer`, which received it at `at`.
void StalenessBook::count(Viewer& viewer, std::uint64_t version, Clock::time_point at) {
    while (viewer.next < probes_.size() && probes_[viewer.next].version <= version) {
        const Probe& probe = probes_[viewer.next++];
        // Had it before the answer came (or received it before it was a probe): no delay.
        if (probe.version <= viewer.version || at <= probe.at) {
            samples_.record(0);
        } else {
            samples_.record(std::chrono::duration_cast<std::chrono::nanoseconds>(at - probe.at).count());
        }
    }
    viewer.version = std::max(viewer.version, version);
}

void StalenessBook::finish(Clock::time_point now) {
    std::lock_guard lock(mutex_);
    for (auto& viewer : viewers_) {
        count(viewer, viewer.version, now);
        for (; viewer.next < probes_.size(); ++viewer.next) {
            samples_.record(
                std::chrono::duration_cast<std::chrono::nanoseconds>(now - probes_[viewer.next].at)
                    .count());
            ++missed_;
        }
    }
}

LatencyHistogram StalenessBook::samples() const {
    std::lock_guard lock(mutex_);
    return samples_;
}

std::size_t StalenessBook::probes() const {
    std::lock_guard lock(mutex_);
    return probes_.size();
}

std::uint64_t StalenessBook::missed() const {
    std::lock_guard lock(mutex_);
    return missed_;
}

std::string VenueShape::zone(int i) const { return fmt::format("s{:02}", i + 1); }

std::string VenueShape::row(int i) const { return fmt::format("r{:02}", i + 1); }

std::string venue_json(const VenueShape& shape) {
    std::string out = fmt::format(R"({{"events":[{{"id":"{}","name":"{}","zones":[)", shape.event,
                                  shape.event);
    for (int z = 0; z < shape.sections; ++z) {
        if (z > 0) out += ',';
        out += fmt::format(R"({{"id":"{}","rows":[)", shape.zone(z));
        for (int r = 0; r < shape.rows; ++r) {
            if (r > 0) out += ',';
            out += fmt::format(R"({{"row":"{}","seats":{}}})", shape.row(r), shape.seats);
        }
        out += "]}";
    }
    out += "]}]}\n";
    return out;
}

void write_venue_file(const std::string& path, const VenueShape& shape) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << venue_json(shape);
    file.close();
    if (!file) throw std::runtime_error("cannot write the venue file " + path);
}

}  // namespace seatlock::bench
