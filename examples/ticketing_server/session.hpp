// SPDX-License-Identifier: MIT
// session.hpp: who a request comes from. A buyer proves who they are with a session: a
// token signed by the server (HMAC-SHA-256, OpenSSL), naming the buyer and when it
// expires, sent back as a cookie (the page) or as `Authorization: Bearer` (API clients).
// An operator key (--admin-key-file) acts as the operator; a gateway that authenticates
// buyers itself may name them in X-User-Id, trusted only with --trust-user-header.
//
// A token reads `v1.<expires, Unix seconds>.<buyer>.<signature>`: the signature is the
// HMAC-SHA-256 of everything before its dot, in base64url without padding. Tokens are
// stateless: a server checks one with its keys only, so any server sharing the key file
// accepts it, and none can revoke one before it expires (DELETE /session only clears the
// cookie). Two keys are accepted at once, the first signs (rotation:
// docs/ticketing-server.md, "Security").
//
// Cookie-authenticated writes must come from the server's own page (cross_origin()): a
// browser sends the cookie with any site's request, the Authorization header only with
// the page's own scripts.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ticketing {

/// A request as the server reads it (api.hpp names the same type).
using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

/// The name of the session cookie.
inline constexpr std::string_view session_cookie = "seatlock_session";

/// Signs and checks session tokens with one to two keys; thread-safe.
class SessionSigner {
public:
    /// The first key signs, every key is accepted. Each is at least 32 bytes; throws
    /// std::invalid_argument otherwise, or for none or more than two.
    explicit SessionSigner(std::vector<std::string> keys);
    ~SessionSigner();
    SessionSigner(const SessionSigner&) = delete;
    SessionSigner& operator=(const SessionSigner&) = delete;

    /// A token naming `buyer` (a valid id), valid until `expires_s` (Unix seconds).
    [[nodiscard]] std::string issue(std::string_view buyer, std::int64_t expires_s) const;

    /// A token that checked: its buyer and expiry.
    struct Verified {
        std::string buyer;
        std::int64_t expires_s = 0;
    };
    /// The token's buyer when one of the keys signed it and it has not expired at `now_s`;
    /// otherwise nothing, and `why` says what was wrong (malformed, signature, expired).
    [[nodiscard]] std::optional<Verified> verify(std::string_view token, std::int64_t now_s,
                                                 std::string* why = nullptr) const;

    /// A new random key (32 bytes from OpenSSL's RAND_bytes, hex-encoded).
    [[nodiscard]] static std::string generate_key();

private:
    struct Keys;
    // The signature of `payload` by key `index`, raw (32 bytes).
    std::string mac(std::size_t index, std::string_view payload) const;
    std::unique_ptr<Keys> keys_;
};

/// How the server decides who a request comes from (options.hpp's flags).
struct AuthSettings {
    /// The session keys: the first signs, all are accepted (--session-key-file; one
    /// generated at start when none is given).
    std::vector<std::string> session_keys;
    /// How long a new session lasts (--session-ttl).
    std::chrono::seconds session_ttl{12 * 3600};
    /// Whether anyone may get a session by naming themselves (the demo), or only a client
    /// holding the operator key may ask for one (--sign-in).
    bool open_sign_in = true;
    /// X-User-Id names the buyer (--trust-user-header): only behind a gateway that
    /// authenticates buyers and sets the header itself.
    bool trust_user_header = false;
    /// The cookie is Secure and the page's origin is https (--behind-tls-proxy).
    bool behind_tls_proxy = false;
    /// The operator key (--admin-key-file), if any.
    std::optional<std::string> admin_key;
};

/// Who a request comes from, as its credentials say.
struct Identity {
    enum class Kind {
        anonymous,  ///< no credentials
        buyer,      ///< a session, or a trusted X-User-Id
        operator_,  ///< the operator key
        refused,    ///< credentials that do not check (answered 401 where one is needed)
    };
    /// Which credential named it.
    enum class Via { none, bearer, cookie, user_header, admin_key };

    Kind kind = Kind::anonymous;
    Via via = Via::none;
    std::string buyer;              ///< Kind::buyer
    std::int64_t expires_s = 0;     ///< a session's expiry (Unix seconds); 0 for a header
    std::string refusal;            ///< Kind::refused: what is wrong, for the 401 answer
    std::string refusal_code;       ///< Kind::refused: the error code of the 401 answer
};

/// Reads the credentials of requests; thread-safe.
class Authenticator {
public:
    /// Throws std::invalid_argument for keys SessionSigner refuses.
    explicit Authenticator(AuthSettings settings);

    /// Who `request` comes from: Authorization (the operator key or a Bearer session)
    /// first, then X-User-Id when trusted, then the session cookie. An X-User-Id sent to
    /// a server that does not trust it is refused (not ignored), so that a client written
    /// for a gateway learns at once why it is not a buyer.
    [[nodiscard]] Identity identify(const HttpRequest& request) const;

    /// For a write that `identity` authenticated by cookie: why it is refused as
    /// cross-origin (its Origin is missing or is not this server's own, from its Host and
    /// --behind-tls-proxy), or nothing when it may go on. Other credentials are never sent
    /// by a browser on another site's behalf: nothing for them.
    [[nodiscard]] std::optional<std::string> cross_origin(const HttpRequest& request,
                                                          const Identity& identity) const;

    /// Whether `request` carries an Origin header that is not this server's own (checked
    /// for POST /session whatever its credentials: a site must not sign a visitor in).
    [[nodiscard]] bool foreign_origin(const HttpRequest& request) const;

    /// Whether `request`'s Authorization names the operator key.
    [[nodiscard]] bool is_operator(const HttpRequest& request) const;

    /// A new session for `buyer` (a valid id): its token and expiry (Unix seconds).
    [[nodiscard]] SessionSigner::Verified issue(std::string_view buyer) const;
    [[nodiscard]] std::string token(const SessionSigner::Verified& session) const;

    /// The Set-Cookie value that stores `token` for `max_age` seconds (0: clears it).
    [[nodiscard]] std::string cookie(std::string_view token, std::int64_t max_age) const;

    [[nodiscard]] const AuthSettings& settings() const { return settings_; }

private:
    [[nodiscard]] bool admin_key_matches(std::string_view presented) const;

    AuthSettings settings_;
    SessionSigner signer_;
    std::string admin_digest_;  // SHA-256 of the operator key, compared in constant time
};

/// The current time in Unix seconds (the system clock).
std::int64_t unix_seconds();

/// `text` without the spaces and tabs at both ends.
[[nodiscard]] std::string_view trim_blanks(std::string_view text);
/// The value of cookie `name` among the request's Cookie lines ("a=1; name=x"), if any:
/// a view into the request.
[[nodiscard]] std::optional<std::string_view> cookie_value(const HttpRequest& request, std::string_view name);

}  // namespace ticketing
