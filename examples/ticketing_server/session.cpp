// SPDX-License-Identifier: MIT
// session.cpp: session tokens (OpenSSL's EVP_MAC HMAC-SHA-256), the credentials of a
// request, the origin check of cookie writes and the session cookie.
#include "session.hpp"

#include <fmt/format.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <boost/beast/core/string.hpp>
#include <cctype>
#include <charconv>
#include <seatlock/keys.hpp>
#include <stdexcept>

namespace ticketing {
namespace http = boost::beast::http;

namespace {

constexpr std::string_view token_version = "v1.";
constexpr std::size_t min_key_bytes = 32;
constexpr std::size_t signature_chars = 43;  // 32 bytes in base64url, unpadded

// base64url without padding (RFC 4648 section 5), over OpenSSL's base64.
std::string base64url(const unsigned char* data, std::size_t size) {
    std::string out(4 * ((size + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data,
                                  static_cast<int>(size));
    out.resize(static_cast<std::size_t>(n));
    while (!out.empty() && out.back() == '=') out.pop_back();
    for (char& c : out) {
        if (c == '+') c = '-';
        if (c == '/') c = '_';
    }
    return out;
}

std::string_view header_value(const HttpRequest& request, std::string_view name) {
    const auto found = request.find(name);
    if (found == request.end()) return {};
    return {found->value().data(), found->value().size()};
}


std::array<unsigned char, 32> sha256(std::string_view text) {
    std::array<unsigned char, 32> digest{};
    unsigned int size = 0;
    if (EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256 failed (OpenSSL)");
    return digest;
}

// "host:port" with the scheme's default port left out, lowercased, for comparisons.
std::string normal_authority(std::string_view authority, std::string_view scheme) {
    std::string out(authority);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string default_port = scheme == "https" ? ":443" : ":80";
    if (out.ends_with(default_port)) out.resize(out.size() - default_port.size());
    return out;
}

Identity refused_identity(Identity::Via via, std::string code, std::string why) {
    Identity identity;
    identity.kind = Identity::Kind::refused;
    identity.via = via;
    identity.refusal_code = std::move(code);
    identity.refusal = std::move(why);
    return identity;
}

}  // namespace

std::string_view trim_blanks(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

std::optional<std::string_view> cookie_value(const HttpRequest& request, std::string_view name) {
    const auto [first, last] = request.equal_range(http::field::cookie);
    for (auto line = first; line != last; ++line) {
        std::string_view list(line->value().data(), line->value().size());
        while (!list.empty()) {
            const auto semi = list.find(';');
            const std::string_view pair = trim_blanks(list.substr(0, semi));
            list = semi == std::string_view::npos ? std::string_view() : list.substr(semi + 1);
            const auto eq = pair.find('=');
            if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
        }
    }
    return std::nullopt;
}

// ---- SessionSigner

// One HMAC context per key, keyed once; each signature works on a copy of it, so that
// threads never share a context being written.
struct SessionSigner::Keys {
    EVP_MAC* mac = nullptr;
    std::vector<EVP_MAC_CTX*> keyed;

    ~Keys() {
        for (auto* ctx : keyed) EVP_MAC_CTX_free(ctx);
        EVP_MAC_free(mac);
    }
};

SessionSigner::SessionSigner(std::vector<std::string> keys) : keys_(std::make_unique<Keys>()) {
    if (keys.empty() || keys.size() > 2)
        throw std::invalid_argument(
            fmt::format("expects one or two session keys, not {}", keys.size()));
    keys_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (!keys_->mac) throw std::runtime_error("OpenSSL has no HMAC");
    for (const auto& key : keys) {
        if (key.size() < min_key_bytes)
            throw std::invalid_argument(fmt::format(
                "a session key must be at least {} characters; this one has {}", min_key_bytes,
                key.size()));
        EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(keys_->mac);
        if (!ctx) throw std::runtime_error("EVP_MAC_CTX_new failed (OpenSSL)");
        keys_->keyed.push_back(ctx);
        char digest[] = "SHA256";
        const OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
            OSSL_PARAM_construct_end()};
        if (EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                         params) != 1)
            throw std::runtime_error("EVP_MAC_init failed (OpenSSL)");
    }
}

SessionSigner::~SessionSigner() = default;

std::string SessionSigner::mac(std::size_t index, std::string_view payload) const {
    EVP_MAC_CTX* ctx = EVP_MAC_CTX_dup(keys_->keyed[index]);
    if (!ctx) throw std::runtime_error("EVP_MAC_CTX_dup failed (OpenSSL)");
    std::array<unsigned char, 32> out{};
    std::size_t size = 0;
    const bool ok =
        EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(payload.data()),
                       payload.size()) == 1 &&
        EVP_MAC_final(ctx, out.data(), &size, out.size()) == 1;
    EVP_MAC_CTX_free(ctx);
    if (!ok || size != out.size()) throw std::runtime_error("HMAC-SHA-256 failed (OpenSSL)");
    return base64url(out.data(), out.size());
}

std::string SessionSigner::issue(std::string_view buyer, std::int64_t expires_s) const {
    std::string payload = fmt::format("{}{}.{}", token_version, expires_s, buyer);
    const std::string signature = mac(0, payload);
    return payload + "." + signature;
}

std::optional<SessionSigner::Verified> SessionSigner::verify(std::string_view token,
                                                             std::int64_t now_s,
                                                             std::string* why) const {
    const auto refuse = [why](const char* reason) -> std::optional<Verified> {
        if (why) *why = reason;
        return std::nullopt;
    };
    // v1.<expires>.<buyer>.<signature>: the buyer may hold dots, the others not.
    if (!token.starts_with(token_version)) return refuse("malformed");
    const auto last_dot = token.rfind('.');
    if (last_dot < token_version.size()) return refuse("malformed");  // "v1." alone
    const std::string_view payload = token.substr(0, last_dot);
    const std::string_view signature = token.substr(last_dot + 1);
    const std::string_view rest = payload.substr(token_version.size());
    const auto dot = rest.find('.');
    if (dot == std::string_view::npos || signature.size() != signature_chars)
        return refuse("malformed");
    std::int64_t expires = 0;
    const std::string_view expires_text = rest.substr(0, dot);
    const auto [end, ec] =
        std::from_chars(expires_text.data(), expires_text.data() + expires_text.size(), expires);
    if (ec != std::errc{} || end != expires_text.data() + expires_text.size() || expires <= 0)
        return refuse("malformed");
    const std::string_view buyer = rest.substr(dot + 1);
    if (!seatlock::is_valid_id(buyer)) return refuse("malformed");
    bool signed_here = false;
    for (std::size_t i = 0; i < keys_->keyed.size() && !signed_here; ++i) {
        const std::string expected = mac(i, payload);
        signed_here = CRYPTO_memcmp(expected.data(), signature.data(), signature_chars) == 0;
    }
    if (!signed_here) return refuse("signature");
    // Checked after the signature: an expiry nobody signed is not worth reporting.
    if (expires <= now_s) return refuse("expired");
    return Verified{std::string(buyer), expires};
}

std::string SessionSigner::generate_key() {
    std::array<unsigned char, 32> bytes{};
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
        throw std::runtime_error("RAND_bytes failed (OpenSSL)");
    std::string hex;
    for (const unsigned char b : bytes) hex += fmt::format("{:02x}", b);
    return hex;
}

// ---- Authenticator

Authenticator::Authenticator(AuthSettings settings)
    : settings_(std::move(settings)), signer_(settings_.session_keys) {
    if (settings_.admin_key) {
        const auto digest = sha256(*settings_.admin_key);
        admin_digest_.assign(digest.begin(), digest.end());
    }
}

bool Authenticator::admin_key_matches(std::string_view presented) const {
    if (admin_digest_.empty()) return false;
    // Digests of equal length: the comparison's time says nothing of the key's length.
    const auto digest = sha256(presented);
    return CRYPTO_memcmp(digest.data(), admin_digest_.data(), digest.size()) == 0;
}

bool Authenticator::is_operator(const HttpRequest& request) const {
    const std::string_view authorization = header_value(request, "Authorization");
    if (authorization.size() < 7 || !boost::beast::iequals(authorization.substr(0, 7), "Bearer "))
        return false;
    return admin_key_matches(trim_blanks(authorization.substr(7)));
}

Identity Authenticator::identify(const HttpRequest& request) const {
    const auto session = [&](std::string_view token, Identity::Via via) {
        std::string why;
        const auto verified = signer_.verify(token, unix_seconds(), &why);
        if (!verified) {
            const char* what = via == Identity::Via::cookie ? "session cookie" : "bearer token";
            if (why == "expired")
                return refused_identity(via, "session_expired",
                               fmt::format("the {} has expired: sign in again (POST /session)",
                                           what));
            return refused_identity(via, "invalid_session",
                           fmt::format("the {} is not a session of this server ({}): sign in "
                                       "again (POST /session)",
                                       what, why == "signature" ? "bad signature" : "malformed"));
        }
        Identity identity;
        identity.kind = Identity::Kind::buyer;
        identity.via = via;
        identity.buyer = verified->buyer;
        identity.expires_s = verified->expires_s;
        return identity;
    };

    if (const auto authorization = request.find(http::field::authorization);
        authorization != request.end()) {
        const std::string_view value(authorization->value().data(), authorization->value().size());
        if (value.size() < 7 || !boost::beast::iequals(value.substr(0, 7), "Bearer ")) {
            return refused_identity(Identity::Via::bearer, "invalid_session",
                           "Authorization takes a Bearer token (a session from POST /session, or "
                           "the operator key)");
        }
        const std::string_view token = trim_blanks(value.substr(7));
        if (!token.starts_with(token_version) && admin_key_matches(token)) {
            Identity identity;
            identity.kind = Identity::Kind::operator_;
            identity.via = Identity::Via::admin_key;
            return identity;
        }
        return session(token, Identity::Via::bearer);
    }
    if (const auto user = request.find("X-User-Id"); user != request.end()) {
        if (!settings_.trust_user_header) {
            return refused_identity(Identity::Via::user_header, "user_header_not_trusted",
                           "X-User-Id is accepted only from a gateway the server trusts "
                           "(--trust-user-header); sign in with POST /session instead");
        }
        const std::string id(user->value());
        if (auto ok = seatlock::validate_id("user", id); !ok)
            return refused_identity(Identity::Via::user_header, "invalid_argument", ok.error().detail);
        Identity identity;
        identity.kind = Identity::Kind::buyer;
        identity.via = Identity::Via::user_header;
        identity.buyer = id;
        return identity;
    }
    if (const auto cookie = cookie_value(request, session_cookie)) return session(*cookie, Identity::Via::cookie);
    return {};
}

bool Authenticator::foreign_origin(const HttpRequest& request) const {
    const std::string_view site = header_value(request, "Sec-Fetch-Site");
    if (!site.empty() && site != "same-origin" && site != "none") return true;
    const std::string_view origin = header_value(request, "Origin");
    if (origin.empty()) return false;
    const std::string_view scheme = settings_.behind_tls_proxy ? "https" : "http";
    const std::string prefix = std::string(scheme) + "://";
    if (!boost::beast::iequals(origin.substr(0, std::min(origin.size(), prefix.size())), prefix))
        return true;  // also "null", an opaque origin
    const std::string_view host = header_value(request, "Host");
    return host.empty() ||
           normal_authority(origin.substr(prefix.size()), scheme) != normal_authority(host, scheme);
}

std::optional<std::string> Authenticator::cross_origin(const HttpRequest& request,
                                                       const Identity& identity) const {
    if (identity.via != Identity::Via::cookie) return std::nullopt;
    if (foreign_origin(request))
        return "a write authenticated by the session cookie must come from this server's own "
               "page (Origin)";
    // Browsers send Origin with every POST and DELETE; a request without one, and without
    // Sec-Fetch-Site, is no page's: such clients send Authorization: Bearer instead.
    if (header_value(request, "Origin").empty() && header_value(request, "Sec-Fetch-Site").empty())
        return "a write authenticated by the session cookie must carry Origin; API clients send "
               "Authorization: Bearer <token>";
    return std::nullopt;
}

SessionSigner::Verified Authenticator::issue(std::string_view buyer) const {
    return {std::string(buyer), unix_seconds() + settings_.session_ttl.count()};
}

std::string Authenticator::token(const SessionSigner::Verified& session) const {
    return signer_.issue(session.buyer, session.expires_s);
}

std::string Authenticator::cookie(std::string_view token, std::int64_t max_age) const {
    return fmt::format("{}={}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict{}", session_cookie,
                       token, max_age, settings_.behind_tls_proxy ? "; Secure" : "");
}

std::int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace ticketing
