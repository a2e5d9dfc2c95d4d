// SPDX-License-Identifier: MIT
// tests/system/session_test.cpp: who a buyer is (session.hpp), over HTTP on a server that
// does not trust X-User-Id: sessions from POST /session as a cookie and as a Bearer token;
// forged, expired and unknown keys' tokens refused with nothing changed; another buyer's
// holds and orders out of reach; cookie writes from another origin refused; the operator
// key's cancels, logged; key rotation; the rate limiter keyed by the session's buyer; bad
// cookies and tokens refused cleanly.
#include <string>
#include <utility>
#include <vector>

#include "session.hpp"
#include "support/system_test.hpp"
#include "support/temp_files.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace session_test {

using namespace seatlock::testing;
using Headers = std::vector<std::pair<std::string, std::string>>;

namespace {

const std::string holds_url = "/events/demo-game/holds";
const std::string key_a(40, 'a');
const std::string key_b(40, 'b');
const std::string key_c(40, 'c');
const std::string admin_key = "operator-key-0123456789";

// A server whose buyers need sessions, signed with the keys of `key_lines`, and with the
// operator key; `extra` flags after those.
TicketingServer secured(const TempFiles& files, const std::string& key_lines = key_a + "\n",
                        std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--session-key-file", files.write("keys", key_lines),
                                     "--admin-key-file", files.write("admin", admin_key + "\n")};
    args.insert(args.end(), extra.begin(), extra.end());
    TicketingServer::Options options{std::move(args), std::nullopt};
    options.trust_user_header = false;
    return TicketingServer(std::move(options));
}

Headers bearer(const std::string& token) {
    return {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}};
}

// A session's token for `buyer` from POST /session.
std::string sign_in(HttpClient& client, const std::string& buyer) {
    const auto reply = client.send("POST", "/session", R"({"buyer":")" + buyer + R"("})",
                                   {{"Content-Type", "application/json"}});
    REQUIRE_MESSAGE(reply.status == 201, reply.body);
    return std::string(reply.json().at("token").as_string());
}

// A hold of `seats` in lower-1 for the token's buyer: its token.
std::string hold(HttpClient& client, const std::string& token, const std::vector<std::string>& seats) {
    const auto reply = client.send("POST", holds_url, seats_body("lower-1", seats), bearer(token));
    REQUIRE_MESSAGE(reply.status == 201, reply.body);
    return std::string(reply.json().at("token").as_string());
}

// An order of `seats` in lower-1 paid by the token's buyer, with payment id `order`.
void buy(HttpClient& client, const std::string& token, const std::vector<std::string>& seats,
         const std::string& order) {
    const std::string held = hold(client, token, seats);
    const auto paid = client.send("POST", "/holds/" + held + "/confirm",
                                  R"({"payment_id":")" + order + R"("})", bearer(token));
    REQUIRE_MESSAGE(paid.status == 200, paid.body);
}

// The "holds" or "orders" listing of the token's buyer.
boost::json::array listing(HttpClient& client, const std::string& what, const std::string& token) {
    const auto reply = client.send("GET", "/me/" + what, "", bearer(token));
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    return reply.json().at(what).as_array();
}

std::string order_status(const TicketingServer& server, const std::string& order) {
    return server.db_text("SELECT status FROM orders WHERE order_id = ?", {order}).value_or("none");
}

}  // namespace

TEST_CASE("a session from POST /session acts for its buyer, as a cookie or a Bearer token") {
    TempFiles files;
    auto server = secured(files);
    INFO(server.log());
    auto client = server.client();

    const auto reply = client.send("POST", "/session", R"({"buyer":"alice"})",
                                   {{"Content-Type", "application/json"}});
    REQUIRE_MESSAGE(reply.status == 201, reply.body);
    CHECK(reply.json().at("buyer").as_string() == "alice");
    const std::string token(reply.json().at("token").as_string());
    CHECK(token.starts_with("v1."));
    const std::string cookie = reply.header("Set-Cookie");
    CHECK(cookie.starts_with("seatlock_session=" + token + ";"));
    CHECK(cookie.find("HttpOnly") != std::string::npos);
    CHECK(cookie.find("SameSite=Strict") != std::string::npos);
    CHECK(cookie.find("Secure") == std::string::npos);  // plain HTTP, no --behind-tls-proxy
    // The server signs with the key of its file.
    CHECK(ticketing::SessionSigner({key_a}).verify(token, ticketing::unix_seconds()));

    // Bearer: an API client.
    const std::string held = hold(client, token, {"A-1"});
    const auto who = client.send("GET", "/session", "", bearer(token));
    REQUIRE(who.status == 200);
    CHECK(who.json().at("buyer").as_string() == "alice");
    // The cookie, from the server's own page (its Origin).
    const Headers as_page = {{"Cookie", "theme=dark; seatlock_session=" + token},
                             {"Origin", "http://127.0.0.1:" + std::to_string(server.port())},
                             {"Content-Type", "application/json"}};
    const auto mine = client.send("GET", "/me/holds", "", {as_page[0]});
    REQUIRE_MESSAGE(mine.status == 200, mine.body);
    REQUIRE(mine.json().at("holds").as_array().size() == 1);
    CHECK(mine.json().at("holds").as_array()[0].at("token").as_string() == held);
    const auto second = client.send("POST", holds_url, seats_body("lower-1", {"A-2"}), as_page);
    CHECK_MESSAGE(second.status == 201, second.body);
    const auto released = client.send("DELETE", "/holds/" + held, "", as_page);
    CHECK_MESSAGE(released.status == 204, released.body);

    // DELETE /session clears the cookie.
    const auto out = client.send("DELETE", "/session", "", {as_page[1]});
    CHECK(out.status == 204);
    CHECK(out.header("Set-Cookie").starts_with("seatlock_session=;"));
    CHECK(out.header("Set-Cookie").find("Max-Age=0") != std::string::npos);
}

TEST_CASE("a forged, expired or other key's token gets 401 and nothing changes") {
    TempFiles files;
    auto server = secured(files);
    INFO(server.log());
    auto client = server.client();
    const std::string alice = sign_in(client, "alice");
    const std::string held = hold(client, alice, {"A-1"});
    buy(client, alice, {"A-2"}, "pay-alice");

    // The buyer's name changed under alice's signature; a signature changed; one expired,
    // signed with the server's key; one signed with a key the server does not have.
    std::string renamed = alice;
    renamed.replace(renamed.find(".alice."), 7, ".mallory.");
    std::string resigned = alice;
    resigned.back() = resigned.back() == 'A' ? 'B' : 'A';
    const auto now = ticketing::unix_seconds();
    const std::string expired = ticketing::SessionSigner({key_a}).issue("alice", now - 5);
    const std::string other_key = ticketing::SessionSigner({key_c}).issue("alice", now + 3600);

    for (const auto& forged : std::vector<std::pair<std::string, std::string>>{
             {"renamed", renamed}, {"resigned", resigned}, {"expired", expired}, {"other key", other_key}}) {
        const std::string& name = forged.first;
        const std::string& token = forged.second;
        CAPTURE(name);
        for (const bool as_cookie : {false, true}) {
            CAPTURE(as_cookie);
            const Headers headers =
                as_cookie ? Headers{{"Cookie", "seatlock_session=" + token},
                                    {"Origin", "http://127.0.0.1:" + std::to_string(server.port())},
                                    {"Content-Type", "application/json"}}
                          : bearer(token);
            const auto attempts = {
                client.send("POST", holds_url, seats_body("lower-1", {"A-3"}), headers),
                client.send("DELETE", "/holds/" + held, "", headers),
                client.send("POST", "/holds/" + held + "/extend", R"({"ttl_s":60})", headers),
                client.send("POST", "/holds/" + held + "/confirm", R"({"payment_id":"pay-x"})", headers),
                client.send("POST", "/orders/pay-alice/cancel", "", headers),
                client.send("GET", "/me/orders", "", headers),
                client.send("GET", "/session", "", headers)};
            for (const auto& reply : attempts) {
                CHECK_MESSAGE(reply.status == 401, reply.body);
                CHECK(reply.error() == (name == "expired" ? "session_expired" : "invalid_session"));
                CHECK(reply.header("WWW-Authenticate").starts_with("Bearer"));
            }
        }
    }
    // Nothing changed: alice's hold and order as they were, no other hold.
    const auto holds = listing(client, "holds", alice);
    REQUIRE(holds.size() == 1);
    CHECK(holds[0].at("token").as_string() == held);
    CHECK(order_status(server, "pay-alice") == "paid");
    CHECK(server.db_count("SELECT COUNT(*) FROM orders") == 1);
    CHECK(seat_states(client, "demo-game", "lower-1").at("A-3") == "free");
}

TEST_CASE("a token signed by the previous key is still accepted, a third key's is not") {
    TempFiles files;
    // The first key signs, the second (the previous one) is still accepted.
    auto server = secured(files, "# rotated\n" + key_b + "\n" + key_a + "\n");
    INFO(server.log());
    auto client = server.client();
    const auto now = ticketing::unix_seconds();
    const std::string previous = ticketing::SessionSigner({key_a}).issue("alice", now + 3600);
    CHECK(listing(client, "holds", previous).empty());
    hold(client, previous, {"A-1"});
    const std::string third = ticketing::SessionSigner({key_c}).issue("alice", now + 3600);
    CHECK(client.send("GET", "/me/holds", "", bearer(third)).status == 401);
    // New sessions are signed with the first key only.
    const std::string fresh = sign_in(client, "bob");
    CHECK(ticketing::SessionSigner({key_b}).verify(fresh, now));
    CHECK_FALSE(ticketing::SessionSigner({key_a}).verify(fresh, now));
}

TEST_CASE("another buyer's hold, order or refund gets 403 and nothing changes") {
    TempFiles files;
    auto server = secured(files);
    INFO(server.log());
    auto client = server.client();
    const std::string alice = sign_in(client, "alice");
    const std::string bob = sign_in(client, "bob");
    const std::string held = hold(client, alice, {"A-1"});
    buy(client, alice, {"A-2"}, "pay-alice");

    for (const auto& reply :
         {client.send("DELETE", "/holds/" + held, "", bearer(bob)),
          client.send("POST", "/holds/" + held + "/extend", R"({"ttl_s":60})", bearer(bob)),
          client.send("POST", "/holds/" + held + "/confirm", R"({"payment_id":"pay-bob"})", bearer(bob)),
          client.send("POST", "/orders/pay-alice/cancel", "", bearer(bob))}) {
        CHECK_MESSAGE(reply.status == 403, reply.body);
        CHECK(reply.error() == "not_owner");
    }
    CHECK(listing(client, "holds", bob).empty());
    CHECK(listing(client, "orders", bob).empty());
    // Alice's are as they were.
    CHECK(listing(client, "holds", alice).size() == 1);
    const auto orders = listing(client, "orders", alice);
    REQUIRE(orders.size() == 1);
    CHECK(orders[0].at("status").as_string() == "paid");
    CHECK(order_status(server, "pay-alice") == "paid");
    const auto seats = seat_states(client, "demo-game", "lower-1");
    CHECK(seats.at("A-1") == "held");
    CHECK(seats.at("A-2") == "paid");
}

TEST_CASE("a write authenticated by the cookie from another origin is refused") {
    TempFiles files;
    auto server = secured(files);
    INFO(server.log());
    auto client = server.client();
    const std::string alice = sign_in(client, "alice");
    const std::string own = "http://127.0.0.1:" + std::to_string(server.port());
    const auto cookie_post = [&](Headers extra) {
        extra.emplace_back("Cookie", "seatlock_session=" + alice);
        extra.emplace_back("Content-Type", "application/json");
        return client.send("POST", holds_url, seats_body("lower-1", {"A-1"}), extra);
    };
    for (const auto& extra : std::vector<Headers>{
             {{"Origin", "http://evil.example"}},
             {{"Origin", "null"}},
             {{"Origin", "https://127.0.0.1:" + std::to_string(server.port())}},  // not its scheme
             {{"Origin", own}, {"Sec-Fetch-Site", "cross-site"}},
             {{"Sec-Fetch-Site", "same-site"}},
             {}}) {  // no Origin at all: no browser's
        const auto reply = cookie_post(extra);
        CHECK_MESSAGE(reply.status == 403, reply.body);
        CHECK(reply.error() == "cross_origin");
    }
    CHECK(listing(client, "holds", alice).empty());
    CHECK(seat_states(client, "demo-game", "lower-1").at("A-1") == "free");
    // Another site cannot sign a visitor in either.
    const auto planted = client.send("POST", "/session", R"({"buyer":"mallory"})",
                                     {{"Origin", "http://evil.example"}, {"Content-Type", "application/json"}});
    CHECK(planted.status == 403);
    CHECK(planted.header("Set-Cookie").empty());

    // From its own page it goes through; a Bearer token needs no Origin check.
    CHECK(cookie_post({{"Origin", own}}).status == 201);
    const auto api_client = client.send("POST", holds_url, seats_body("lower-1", {"A-3"}),
                                        [&] {
                                            auto h = bearer(alice);
                                            h.emplace_back("Origin", "http://evil.example");
                                            return h;
                                        }());
    CHECK_MESSAGE(api_client.status == 201, api_client.body);
}

TEST_CASE("the operator key cancels any order, and each cancel is logged") {
    TempFiles files;
    auto server = secured(files);
    INFO(server.log());
    auto client = server.client();
    const std::string alice = sign_in(client, "alice");
    buy(client, alice, {"A-1", "A-2"}, "pay-alice");

    // A wrong operator key is no key: 401, nothing cancelled.
    const auto wrong = client.send("POST", "/orders/pay-alice/cancel", "", bearer(admin_key + "x"));
    CHECK(wrong.status == 401);
    CHECK(order_status(server, "pay-alice") == "paid");
    // The operator key does not make a buyer.
    const auto listing_as_operator = client.send("GET", "/me/orders", "", bearer(admin_key));
    CHECK(listing_as_operator.status == 403);
    CHECK(listing_as_operator.error() == "operator_key");

    const auto cancelled = client.send("POST", "/orders/pay-alice/cancel", "", bearer(admin_key));
    REQUIRE_MESSAGE(cancelled.status == 200, cancelled.body);
    CHECK(cancelled.json().at("status").as_string() == "cancelled");
    CHECK(order_status(server, "pay-alice") == "cancelled");
    CHECK(seat_states(client, "demo-game", "lower-1").at("A-1") == "free");
    CHECK(eventually([&] {
        return server.log().find("operator key: order pay-alice of buyer alice cancelled") !=
               std::string::npos;
    }));
    const auto unknown = client.send("POST", "/orders/pay-nobody/cancel", "", bearer(admin_key));
    CHECK(unknown.status == 404);
    CHECK(eventually([&] {
        return server.log().find("operator key: cancelling order pay-nobody failed") !=
               std::string::npos;
    }));
    // The log never shows the key.
    CHECK(server.log().find(admin_key) == std::string::npos);
}

TEST_CASE("X-User-Id is refused unless the server trusts it; --sign-in operator closes sign-in") {
    TempFiles files;
    auto server = secured(files, key_a + "\n", {"--sign-in", "operator"});
    INFO(server.log());
    auto client = server.client();
    const auto claimed = client.post(holds_url, seats_body("lower-1", {"A-1"}), "alice");
    CHECK(claimed.status == 401);
    CHECK(claimed.error() == "user_header_not_trusted");
    CHECK(seat_states(client, "demo-game", "lower-1").at("A-1") == "free");

    const auto open = client.send("POST", "/session", R"({"buyer":"alice"})",
                                  {{"Content-Type", "application/json"}});
    CHECK(open.status == 403);
    CHECK(open.error() == "sign_in_closed");
    // A login service with the operator key asks for the buyer's session.
    const auto minted = client.send("POST", "/session", R"({"buyer":"alice"})", bearer(admin_key));
    REQUIRE_MESSAGE(minted.status == 201, minted.body);
    hold(client, std::string(minted.json().at("token").as_string()), {"A-1"});
}

TEST_CASE("the rate limiter counts a session's buyer, whatever connection it uses") {
    TempFiles files;
    auto server = secured(files, key_a + "\n",
                          {"--rate-buyer-writes", "1", "--rate-buyer-write-burst", "2"});
    INFO(server.log());
    auto first = server.client();
    auto second = server.client();
    const std::string alice = sign_in(first, "alice");
    const std::string bob = sign_in(first, "bob");
    CHECK(first.send("GET", "/me/holds", "", bearer(alice)).status == 200);
    hold(first, alice, {"A-1"});
    hold(second, alice, {"A-2"});
    const auto third = first.send("POST", holds_url, seats_body("lower-1", {"A-3"}), bearer(alice));
    CHECK(third.status == 429);
    CHECK(third.json().at("limited_by").as_string() == "buyer");
    // Another buyer on the same address is not limited by alice's bucket.
    hold(second, bob, {"B-1"});
}

TEST_CASE("bad cookies and tokens are refused cleanly, and public reads ignore them") {
    TempFiles files;
    auto server = secured(files);
    INFO(server.log());
    auto client = server.client();
    const std::string alice = sign_in(client, "alice");
    const std::string sig = alice.substr(alice.rfind('.') + 1);
    const std::vector<std::string> tokens = {
        "", "v1.", "v1..", "v1...", "v2.1.alice." + sig, "v1.1.alice", "v1.x.alice." + sig,
        "v1.-5.alice." + sig, "v1.99999999999999999999999.alice." + sig, "v1.1.al ice." + sig,
        "v1.1.." + sig, "v1.1.alice." + sig + "A", "v1.1.alice." + std::string(43, '='),
        std::string(8000, 'v'), "v1.1.\xc3\xa9." + sig, admin_key.substr(0, 10)};
    for (const auto& token : tokens) {
        CAPTURE(token.substr(0, 60));
        const auto as_bearer = client.send("GET", "/me/holds", "", {{"Authorization", "Bearer " + token}});
        CHECK(as_bearer.status == 401);
        CHECK(as_bearer.error() == "invalid_session");
        const auto as_cookie = client.send("GET", "/me/holds", "", {{"Cookie", "seatlock_session=" + token}});
        CHECK(as_cookie.status == 401);
        CHECK(as_cookie.error() == "invalid_session");
        // The seat map is public: a bad cookie does not stop it.
        CHECK(client.send("GET", "/events", "", {{"Cookie", "seatlock_session=" + token}}).status == 200);
    }
    for (const auto& authorization : {std::string("Basic YWxpY2U6eA=="), std::string("Bearer"),
                                      std::string("bearer"), "Token " + alice}) {
        CAPTURE(authorization);
        const auto reply = client.send("GET", "/me/holds", "", {{"Authorization", authorization}});
        CHECK(reply.status == 401);
        CHECK(reply.error() == "invalid_session");
    }
    // Without credentials: 401 unauthenticated, with the challenge.
    const auto none = client.send("GET", "/me/holds", "", {{"Cookie", "other=1; seatlock_sessio=x"}});
    CHECK(none.status == 401);
    CHECK(none.error() == "unauthenticated");
    CHECK(none.header("WWW-Authenticate") == "Bearer realm=\"seatlock\"");
    // Bad sign-in bodies.
    for (const auto& body : {std::string(R"({"buyer":""})"), std::string(R"({"buyer":"a b"})"),
                             std::string(R"({"buyer":7})"), std::string(R"({})"),
                             std::string(R"({"buyer":"alice","admin":true})"), std::string("[")}) {
        CAPTURE(body);
        const auto reply = client.send("POST", "/session", body, {{"Content-Type", "application/json"}});
        CHECK(reply.status == 400);
        CHECK(reply.header("Set-Cookie").empty());
    }
    CHECK(client.get("/healthz").status == 200);
    CHECK(listing(client, "holds", alice).empty());
}

}  // namespace session_test
