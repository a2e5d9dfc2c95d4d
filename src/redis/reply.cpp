// SPDX-License-Identifier: MIT
// src/redis/reply.cpp: the reading of replies that several operations share.
#include "reply.hpp"

#include <charconv>
#include <map>

namespace seatlock::redis_detail {

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

bool read_expiry_and_version(std::string_view text, std::int64_t& expires, EventVersion& version) {
    const char* end = text.data() + text.size();
    auto [space, ec] = std::from_chars(text.data(), end, expires);
    if (ec != std::errc() || space == end || *space != ' ') return false;
    auto [last, ec2] = std::from_chars(space + 1, end, version);
    return ec2 == std::errc() && last == end && version > 0;
}

}  // namespace seatlock::redis_detail
