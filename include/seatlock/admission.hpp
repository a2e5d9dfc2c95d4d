// SPDX-License-Identifier: MIT
// seatlock/admission.hpp: admission tokens of the waiting room, signed with HMAC-SHA-256
// (OpenSSL) under a key the application supplies, and checked without a storage call:
//
//     <room>:<visitor>:<expiry, unix ms>:<64 hex digits of HMAC-SHA-256>
//
// The HMAC covers "seatlock-admission-v1 <room> <visitor> <expiry>". Ids never contain
// ':' or spaces (keys.hpp), so the text splits one way only. The expiry is checked
// against the checking server's clock: keep servers' clocks in step (NTP), as any signed
// expiring token needs.
//
//     seatlock::AdmissionKey key(secret);                       // at least 32 bytes
//     auto admitted = key.verify(token, "onsale-1");            // Result<Admission>
//     if (!admitted) return forbidden(admitted.error());        // not_admitted
#pragma once

#include <seatlock/errors.hpp>
#include <seatlock/keys.hpp>
#include <seatlock/result.hpp>
#include <seatlock/room_vocabulary.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace seatlock {

class AdmissionKey {
public:
    /// The shortest key accepted, in bytes: the HMAC's own output size.
    static constexpr std::size_t min_key_bytes = 32;

    /// `secret`: random bytes shared by every server of the application (at least
    /// min_key_bytes). Throws seatlock::Error (invalid_argument) for a shorter one.
    explicit AdmissionKey(std::string secret) : secret_(std::move(secret)) {
        if (secret_.size() < min_key_bytes) {
            throw Error(make_error_code(errc::invalid_argument),
                        "an admission key needs at least " + std::to_string(min_key_bytes) + " bytes");
        }
    }

    /// The token admitting `visitor` to `room` until `expires_at`. Ids must be valid
    /// (is_valid_id): invalid_argument otherwise.
    [[nodiscard]] Result<Admission> sign(const std::string& room, const std::string& visitor,
                                         WallTime expires_at) const {
        if (auto ok = validate_id("room", room); !ok) return std::move(ok).error();
        if (auto ok = validate_id("visitor", visitor); !ok) return std::move(ok).error();
        const std::string expiry = std::to_string(ms_of(expires_at));
        std::string token = room + ":" + visitor + ":" + expiry + ":" + mac(room, visitor, expiry);
        return Admission{room, visitor, expires_at, std::move(token)};
    }

    /// The admission `token` carries, when it is genuine, of `room`, and not expired at
    /// `now`; not_admitted (saying which) otherwise.
    [[nodiscard]] Result<Admission> verify(std::string_view token, std::string_view room,
                                           WallTime now = std::chrono::system_clock::now()) const {
        std::string_view part[4];
        std::string_view rest = token;
        for (int i = 0; i < 3; ++i) {
            const auto colon = rest.find(':');
            if (colon == std::string_view::npos) return refused("it is malformed");
            part[i] = rest.substr(0, colon);
            rest.remove_prefix(colon + 1);
        }
        part[3] = rest;
        std::int64_t expiry = 0;
        const auto [end, ec] = std::from_chars(part[2].data(), part[2].data() + part[2].size(), expiry);
        if (!is_valid_id(part[0]) || !is_valid_id(part[1]) || ec != std::errc() ||
            end != part[2].data() + part[2].size() || part[3].size() != 64) {
            return refused("it is malformed");
        }
        const std::string expected = mac(std::string(part[0]), std::string(part[1]), std::string(part[2]));
        if (CRYPTO_memcmp(expected.data(), part[3].data(), expected.size()) != 0) {
            return refused("its signature is not valid");
        }
        if (part[0] != room) {
            return refused("it admits to room " + std::string(part[0]) + ", not " + std::string(room));
        }
        const WallTime expires_at{Millis(expiry)};
        if (expires_at <= now) return refused("it expired");
        return Admission{std::string(part[0]), std::string(part[1]), expires_at, std::string(token)};
    }

private:
    static std::int64_t ms_of(WallTime t) {
        return std::chrono::duration_cast<Millis>(t.time_since_epoch()).count();
    }

    static Failure refused(const std::string& why) {
        return Failure(errc::not_admitted, "admission token refused: " + why);
    }

    // The HMAC of the token's fields, as 64 lowercase hex digits.
    std::string mac(const std::string& room, const std::string& visitor, const std::string& expiry) const {
        const std::string text = "seatlock-admission-v1 " + room + " " + visitor + " " + expiry;
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int length = 0;
        HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
             reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest, &length);
        static constexpr char digits[] = "0123456789abcdef";
        std::string hex(2 * length, '0');
        for (unsigned int i = 0; i < length; ++i) {
            hex[2 * i] = digits[digest[i] >> 4];
            hex[2 * i + 1] = digits[digest[i] & 0xf];
        }
        return hex;
    }

    std::string secret_;
};

}  // namespace seatlock
