// SPDX-License-Identifier: MIT
// seatlock/detail/released_tokens.hpp: ReleasedTokens, how the in-process backends
// remember which holds were released, and when, for a fixed time: bits of each hold
// token, in a ring of generations of flat open-addressing tables (linear probing).
//
// Under heavy traffic this memory holds millions of tokens, so each release must cost
// little. It appends to a short list that stays in cache; the list is filed into the
// newest generation's table in batches, whose cache misses overlap instead of each
// stalling its release. A table has at most 1 MiB, within reach of the caches; a
// generation is dropped whole once its newest token is older than the memory, and its
// table is reused by the next one, so steady traffic neither allocates nor frees. (One
// table for every remembered token, growing and written at random on each release,
// halved the hold + release rate.)
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <string_view>
#include <vector>

namespace seatlock::detail {

/// The random part of a hold token ("<event>.<32 lowercase hex digits>").
struct TokenBits {
    std::uint64_t high = 0, low = 0;
    bool operator==(const TokenBits&) const = default;

    /// The bits of a well-formed token (seatlock::token_event accepted it).
    static TokenBits of(std::string_view token) {
        const char* hex = token.data() + token.size() - 32;
        return {hex16(hex), hex16(hex + 16)};
    }

private:
    // 16 lowercase hex digits, 8 at a time in one 64-bit word: each byte's value is its
    // low nibble, plus 9 for the letters (whose bit 6 is set), then the nibbles are packed
    // pairwise into bytes, bytes into 16-bit halves, halves into 32 bits.
    static std::uint64_t hex16(const char* p) { return hex8(p) << 32 | hex8(p + 8); }
    static std::uint64_t hex8(const char* p) {
        std::uint64_t x;
        std::memcpy(&x, p, 8);
        if constexpr (std::endian::native == std::endian::big) x = __builtin_bswap64(x);
        x = (x & 0x0f0f0f0f0f0f0f0fULL) + ((x >> 6) & 0x0101010101010101ULL) * 9;
        x = ((x << 4) | (x >> 8)) & 0x00ff00ff00ff00ffULL;
        x = ((x << 8) | (x >> 16)) & 0x0000ffff0000ffffULL;
        return ((x << 16) | (x >> 32)) & 0xffffffffULL;
    }
};

/// Tokens released during the last `memory_ms`, each with the time of its release, in
/// 8 bytes: 48 bits of the token and the release's millisecond within its generation.
/// A lookup compares a token with the few that share its home slot in each generation
/// (the home comes from other bits of the token than those kept), so an unknown token
/// passes for a released one about once in 10^12 lookups even with tens of millions
/// remembered: it would be told hold_not_active instead of unknown_hold, or see its
/// release succeed, with nothing changed in either case.
class ReleasedTokens {
public:
    explicit ReleasedTokens(std::int64_t memory_ms)
        : memory_ms_(memory_ms), span_ms_(std::clamp<std::int64_t>(memory_ms / 16, 1, 0xffff)) {}

    /// Remembers `t` as released at `now` (times never go back).
    void insert(const TokenBits& t, std::int64_t now) {
        if (recent_.size() == batch) file_recent();
        recent_.push_back({t, now});
    }

    /// Whether `t` was released less than memory_ms before `now`.
    [[nodiscard]] bool contains(const TokenBits& t, std::int64_t now) const {
        for (auto r = recent_.rbegin(); r != recent_.rend(); ++r) {
            if (Generation::kept(r->token) == Generation::kept(t)) return r->at_ms + memory_ms_ > now;
        }
        for (auto g = gens_.rbegin(); g != gens_.rend(); ++g) {
            if (auto at = g->find(t)) return *at + memory_ms_ > now;
        }
        return false;
    }

    /// Drops the generations whose every token is at least memory_ms old at `now`.
    void forget(std::int64_t now) {
        // Under light traffic the list may be what holds the oldest tokens.
        if (!recent_.empty() && recent_.front().at_ms + memory_ms_ <= now) file_recent();
        while (!gens_.empty() && gens_.front().newest_ms + memory_ms_ <= now) {
            spare_ = std::move(gens_.front().slots);
            gens_.pop_front();
        }
    }

    [[nodiscard]] std::size_t size() const {
        std::size_t n = recent_.size();
        for (const auto& g : gens_) n += g.size;
        return n;
    }
    /// How many generations the tokens are spread over.
    [[nodiscard]] std::size_t generations() const { return gens_.size(); }

    /// A generation takes the tokens released during at most 1/16 of the memory (so that a
    /// dropped one held no token much past its time), up to 3/4 of its slots. Its table
    /// never grows: the next one is twice as large, up to this many slots (1 MiB).
    static constexpr std::size_t max_slots = std::size_t{1} << 17;
    /// Releases collected before they are filed into the tables together.
    static constexpr std::size_t batch = 256;

private:
    static constexpr std::size_t min_slots = 64;

    struct Recent {
        TokenBits token;
        std::int64_t at_ms;
    };

    struct Generation {
        std::int64_t first_ms = 0;
        std::int64_t newest_ms = 0;
        std::vector<std::uint64_t> slots;  // a power of two of them; 0 is empty
        std::size_t size = 0;

        // 48 bits of the token above the release's ms since first_ms; never 0.
        static std::uint64_t kept(const TokenBits& t) {
            const std::uint64_t bits = t.high & ~std::uint64_t{0xffff};
            return bits != 0 ? bits : std::uint64_t{0x10000};
        }
        // The home slot comes from the bits that are not kept, so that the tokens compared
        // in a lookup differ in all 48 kept ones.
        [[nodiscard]] std::size_t home(const TokenBits& t) const {
            return static_cast<std::size_t>(t.low) & (slots.size() - 1);
        }
        [[nodiscard]] bool full() const { return 4 * (size + 1) > 3 * slots.size(); }
        [[nodiscard]] bool takes(std::int64_t now, std::int64_t span_ms) const {
            return now - first_ms < span_ms && !full();
        }

        void prefetch(const TokenBits& t) const { __builtin_prefetch(&slots[home(t)], 1); }

        void insert(const TokenBits& t, std::int64_t now) {
            const std::uint64_t token = kept(t);
            const std::size_t mask = slots.size() - 1;
            std::size_t i = home(t);
            for (; slots[i] != 0; i = (i + 1) & mask) {
                if ((slots[i] & ~std::uint64_t{0xffff}) == token) return;
            }
            slots[i] = token | static_cast<std::uint64_t>(now - first_ms);
            ++size;
            newest_ms = now;
        }

        // When `t` was released, if it is here.
        [[nodiscard]] std::optional<std::int64_t> find(const TokenBits& t) const {
            const std::uint64_t token = kept(t);
            const std::size_t mask = slots.size() - 1;
            for (std::size_t i = home(t); slots[i] != 0; i = (i + 1) & mask) {
                if ((slots[i] & ~std::uint64_t{0xffff}) == token) {
                    return first_ms + static_cast<std::int64_t>(slots[i] & 0xffff);
                }
            }
            return std::nullopt;
        }
    };

    // Files the recent releases into the newest generation, starting new ones as they fill
    // up or grow old. Each release's slot is fetched a few releases ahead, so the cache
    // misses of the batch overlap.
    void file_recent() {
        constexpr std::size_t ahead = 8;
        for (std::size_t i = 0; i < recent_.size(); ++i) {
            const Recent& r = recent_[i];
            if (gens_.empty() || !gens_.back().takes(r.at_ms, span_ms_)) {
                start(r.at_ms);
                for (std::size_t j = i + 1; j < std::min(i + ahead, recent_.size()); ++j) {
                    gens_.back().prefetch(recent_[j].token);
                }
            }
            if (i + ahead < recent_.size()) gens_.back().prefetch(recent_[i + ahead].token);
            gens_.back().insert(r.token, r.at_ms);
        }
        recent_.clear();
    }

    // The next generation's size follows the traffic: twice its predecessor's when that
    // one filled up, a quarter when it stayed nearly empty. Its table is the last dropped
    // one when that has the size, so steady traffic neither allocates nor frees one.
    void start(std::int64_t now) {
        std::size_t n = min_slots;
        if (!gens_.empty()) {
            const Generation& last = gens_.back();
            n = last.slots.size();
            if (last.full()) n = std::min(max_slots, 2 * n);
            else if (8 * last.size < n) n = std::max(min_slots, n / 4);
        }
        Generation g;
        g.first_ms = g.newest_ms = now;
        if (spare_.size() == n) {
            g.slots = std::move(spare_);
            std::fill(g.slots.begin(), g.slots.end(), 0);
        } else {
            g.slots.resize(n);
        }
        spare_ = {};
        gens_.push_back(std::move(g));
    }

    std::int64_t memory_ms_;
    std::int64_t span_ms_;
    std::vector<Recent> recent_;  // the newest releases, oldest first
    std::deque<Generation> gens_;
    std::vector<std::uint64_t> spare_;
};

}  // namespace seatlock::detail
