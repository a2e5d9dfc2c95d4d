// SPDX-License-Identifier: MIT
// The server's settings (examples/ticketing_server/options.hpp), parsed in process:
// every numeric flag takes its bounds and refuses a number past either one, or no
// number, with exit code 2 and a message naming the flag; other mistakes alike. The
// same flags from the environment (given as a map, never the test's own) and from a
// config file, their precedence, and the Redis password file.
#include <doctest/doctest.h>
#include <seatlock/hold_policy.hpp>

#include "http_server.hpp"
#include "options.hpp"
#include "support/temp_files.hpp"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

namespace options_test {

using seatlock::testing::TempFiles;

using ticketing::EarlyExit;
using ticketing::ServerOptions;

std::variant<ServerOptions, EarlyExit> parse(std::vector<std::string> args) {
    return ticketing::parse_options(args);
}

// The refusal of `args`: exit code 2, naming `flag`.
void check_refused(const std::vector<std::string>& args, const std::string& flag) {
    const auto parsed = parse(args);
    REQUIRE(std::holds_alternative<EarlyExit>(parsed));
    const auto& exit = std::get<EarlyExit>(parsed);
    CHECK(exit.exit_code == 2);
    CHECK(exit.text.find(flag) != std::string::npos);
}

ServerOptions accepted(const std::vector<std::string>& args) {
    const auto parsed = parse(args);
    if (const auto* exit = std::get_if<EarlyExit>(&parsed)) FAIL("refused: " << exit->text);
    return std::get<ServerOptions>(parsed);
}

struct Bounds {
    std::string flag;
    long long low, high;
    std::vector<std::string> with = {};  // other flags a value needs
};

TEST_CASE("each numeric flag takes its bounds and refuses past them, or no number, naming the flag") {
    const Bounds bounds[] = {
        {"--hold-ttl", 1, 7200},           {"--threads", 1, 256},
        {"--feed-interval-ms", 1, 60000},  {"--feed-retained", 1, 10000000},
        {"--stream-heartbeat-ms", 10, 3600000}, {"--stream-buffer", 1024, 1LL << 30},
        {"--stream-send-buffer", 4096, 1LL << 24}, {"--stream-frame-budget", 10, 10000000},
        {"--max-seats-per-buyer", 0, 1000},  {"--max-hold-lifetime", 1, 86400, {"--hold-ttl", "1"}},
        {"--shutdown-grace", 1, 3600},       {"--http-body-limit", 1024, 1LL << 26},
        {"--drain-seconds", 0, 3600},
        {"--http-header-limit", 1024, 1LL << 20}, {"--http-idle-timeout", 1, 3600},
        {"--stream-coalesce-ms", 10, 60000},
        {"--rate-buyer-writes", 0, 1000000},  {"--rate-buyer-write-burst", 1, 1000000},
        {"--rate-buyer-reads", 0, 1000000},   {"--rate-buyer-read-burst", 1, 1000000},
        {"--rate-address-writes", 0, 1000000}, {"--rate-address-write-burst", 1, 1000000},
        {"--rate-address-reads", 0, 1000000},  {"--rate-address-read-burst", 1, 1000000},
        {"--session-ttl", 60, 2592000},      {"--admit-interval-ms", 10, 60000},
    };
    for (const auto& b : bounds) {
        CAPTURE(b.flag);
        const auto with = [&](std::vector<std::string> args) {
            args.insert(args.end(), b.with.begin(), b.with.end());
            return args;
        };
        accepted(with({b.flag, std::to_string(b.low)}));
        accepted(with({b.flag + "=" + std::to_string(b.high)}));
        check_refused(with({b.flag, std::to_string(b.low - 1)}), b.flag);
        check_refused(with({b.flag, std::to_string(b.high + 1)}), b.flag);
        check_refused(with({b.flag, "many"}), b.flag);
        check_refused(with({b.flag, ""}), b.flag);
        check_refused({b.flag}, b.flag);  // no value
    }
    CHECK(accepted({"--stream-send-buffer", "8192"}).stream_send_buffer == 8192);
    CHECK(accepted({"--stream-buffer", "2048"}).stream_buffer == 2048);
    CHECK(accepted({"--feed-retained=7"}).feed_retained == 7);
    CHECK(accepted({"--stream-frame-budget", "500"}).stream_frame_budget == 500);
    const auto rates = accepted({"--rate-buyer-writes", "7", "--rate-buyer-write-burst", "8",
                                 "--rate-buyer-reads", "9", "--rate-buyer-read-burst", "10",
                                 "--rate-address-writes", "11", "--rate-address-write-burst", "12",
                                 "--rate-address-reads", "13", "--rate-address-read-burst", "14"});
    CHECK(rates.rate_buyer_writes == 7);
    CHECK(rates.rate_buyer_write_burst == 8);
    CHECK(rates.rate_buyer_reads == 9);
    CHECK(rates.rate_buyer_read_burst == 10);
    CHECK(rates.rate_address_writes == 11);
    CHECK(rates.rate_address_write_burst == 12);
    CHECK(rates.rate_address_reads == 13);
    CHECK(rates.rate_address_read_burst == 14);
    // The defaults: per buyer on, per address off.
    const ServerOptions defaults;
    CHECK(defaults.rate_buyer_writes == 5);
    CHECK(defaults.rate_buyer_write_burst == 10);
    CHECK(defaults.rate_buyer_reads == 20);
    CHECK(defaults.rate_buyer_read_burst == 40);
    CHECK(defaults.rate_address_writes == 0);
    CHECK(defaults.rate_address_reads == 0);
}

TEST_CASE("an unknown flag, a bad backend, listen address or Redis URL is refused naming it; --help exits 0") {
    check_refused({"--no-such-flag"}, "--no-such-flag");
    check_refused({"--backend", "postgres"}, "--backend");
    check_refused({"--redis-url", "http://localhost"}, "--redis-url");
    check_refused({"--listen", "nowhere"}, "--listen");
    check_refused({"--db", ""}, "--db");
    const auto help = parse({"--help"});
    REQUIRE(std::holds_alternative<EarlyExit>(help));
    CHECK(std::get<EarlyExit>(help).exit_code == 0);
    CHECK(std::get<EarlyExit>(help).text.find("--stream-send-buffer") != std::string::npos);
}

// Every flag, for the help text's check.
const std::vector<std::string> every_flag = {
    "config",
    "backend",
    "redis-url",
    "redis-password-file",
    "db",
    "listen",
    "hold-ttl",
    "max-hold-lifetime",
    "max-seats-per-buyer",
    "threads",
    "venue",
    "shutdown-grace",
    "drain-seconds",
    "rate-buyer-writes",
    "rate-buyer-write-burst",
    "rate-buyer-reads",
    "rate-buyer-read-burst",
    "rate-address-writes",
    "rate-address-write-burst",
    "rate-address-reads",
    "rate-address-read-burst",
    "http-body-limit",
    "http-header-limit",
    "http-idle-timeout",
    "log-level",
    "access-log",
    "feed-interval-ms",
    "feed-retained",
    "stream-coalesce-ms",
    "stream-heartbeat-ms",
    "stream-buffer",
    "stream-send-buffer",
    "stream-frame-budget",
    "session-key-file",
    "session-ttl",
    "sign-in",
    "trust-user-header",
    "behind-tls-proxy",
    "admin-key-file",
};

std::variant<ServerOptions, EarlyExit> parse(std::vector<std::string> args,
                                             const ticketing::Environment& environment) {
    return ticketing::parse_options(args, environment);
}

ServerOptions accepted(const std::vector<std::string>& args,
                       const ticketing::Environment& environment) {
    const auto parsed = parse(args, environment);
    if (const auto* exit = std::get_if<EarlyExit>(&parsed)) FAIL("refused: " << exit->text);
    return std::get<ServerOptions>(parsed);
}

// The refusal's text (exit code 2) of `args` with `environment`.
std::string refusal(const std::vector<std::string>& args,
                    const ticketing::Environment& environment = {}) {
    const auto parsed = parse(args, environment);
    REQUIRE(std::holds_alternative<EarlyExit>(parsed));
    CHECK(std::get<EarlyExit>(parsed).exit_code == 2);
    return std::get<EarlyExit>(parsed).text;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST_CASE("the defaults are the library's and the HTTP server's own") {
    const ServerOptions options;
    const seatlock::HoldPolicy policy;
    const ticketing::HttpLimits limits;
    CHECK(options.max_seats_per_buyer == policy.max_seats_per_holder);
    CHECK(options.max_hold_lifetime == policy.max_hold_lifetime);
    CHECK(options.hold_ttl == policy.hold_ttl);
    CHECK(options.http_body_limit == limits.body_limit);
    CHECK(options.http_header_limit == limits.header_limit);
    CHECK(options.http_idle_timeout == limits.idle_timeout);
    CHECK(options.stream_coalesce == limits.coalesce);
    CHECK(options.stream_frame_budget == limits.frame_budget);
    CHECK(options.stream_heartbeat == limits.heartbeat);
    CHECK(options.stream_buffer == limits.buffer_limit);
    CHECK(options.stream_send_buffer == limits.send_buffer);
    CHECK(options.shutdown_grace == std::chrono::seconds(10));
    CHECK(options.drain == std::chrono::seconds(0));
    CHECK_FALSE(options.redis_password.has_value());
}

TEST_CASE("each new flag sets its option") {
    const auto options =
        accepted({"--max-seats-per-buyer", "2", "--max-hold-lifetime", "900", "--hold-ttl", "60",
                  "--shutdown-grace", "3", "--drain-seconds", "4", "--http-body-limit", "4096", "--http-header-limit",
                  "2048", "--http-idle-timeout", "5", "--stream-coalesce-ms", "250"});
    CHECK(options.max_seats_per_buyer == 2);
    CHECK(options.max_hold_lifetime == std::chrono::seconds(900));
    CHECK(options.hold_ttl == std::chrono::seconds(60));
    CHECK(options.shutdown_grace == std::chrono::seconds(3));
    CHECK(options.drain == std::chrono::seconds(4));
    CHECK(options.http_body_limit == 4096);
    CHECK(options.http_header_limit == 2048);
    CHECK(options.http_idle_timeout == std::chrono::seconds(5));
    CHECK(options.stream_coalesce == std::chrono::milliseconds(250));
    CHECK(accepted({"--max-seats-per-buyer", "0"}).max_seats_per_buyer == 0);  // no limit
}

TEST_CASE(
    "a hold ttl past the maximum hold lifetime is refused naming both; a longer lifetime allows "
    "it") {
    const auto text = refusal({"--hold-ttl", "900", "--max-hold-lifetime", "600"});
    CHECK(contains(text, "--hold-ttl"));
    CHECK(contains(text, "--max-hold-lifetime"));
    CHECK(contains(refusal({"--hold-ttl", "7201"}), "--max-hold-lifetime (default) 7200"));
    const auto longer = accepted({"--hold-ttl", "7201", "--max-hold-lifetime", "86400"});
    CHECK(longer.hold_ttl == std::chrono::seconds(7201));
    CHECK(longer.max_hold_lifetime == std::chrono::seconds(86400));
}

TEST_CASE(
    "every flag can be set from its SEATLOCK_TICKETING_ variable; other variables are ignored") {
    const auto options = accepted({}, {{"SEATLOCK_TICKETING_STREAM_FRAME_BUDGET", "500"},
                                       {"SEATLOCK_TICKETING_THREADS", "7"},
                                       {"SEATLOCK_TICKETING_BACKEND", "redis"},
                                       {"SEATLOCK_TICKETING_LISTEN", "0.0.0.0:9090"},
                                       {"SEATLOCK_TICKETING_MAX_SEATS_PER_BUYER", "2"},
                                       {"SEATLOCK_TICKETING_VENUE", "/srv/venue.json"},
                                       {"PATH", "/usr/bin"},
                                       {"SEATLOCK_TICKETING", "not one of ours"}});
    CHECK(options.stream_frame_budget == 500);
    CHECK(options.threads == 7);
    CHECK(options.backend == ticketing::BackendKind::redis);
    CHECK(options.listen_host == "0.0.0.0");
    CHECK(options.listen_port == 9090);
    CHECK(options.max_seats_per_buyer == 2);
    CHECK(options.venue_file == "/srv/venue.json");
}

TEST_CASE(
    "a bad value from the environment is refused naming the variable, even when the command line "
    "overrides it") {
    auto text = refusal({}, {{"SEATLOCK_TICKETING_THREADS", "0"}});
    CHECK(contains(text, "SEATLOCK_TICKETING_THREADS"));
    CHECK(contains(text, "--threads"));
    CHECK(contains(text, "from 1 to 256"));
    text = refusal({"--threads", "4"}, {{"SEATLOCK_TICKETING_THREADS", "many"}});
    CHECK(contains(text, "SEATLOCK_TICKETING_THREADS"));
    text = refusal({}, {{"SEATLOCK_TICKETING_THREAD", "4"}});  // a misspelt name
    CHECK(contains(text, "SEATLOCK_TICKETING_THREAD "));
    CHECK(contains(text, "is not a setting"));
    CHECK(contains(refusal({}, {{"SEATLOCK_TICKETING_HELP", "1"}}), "SEATLOCK_TICKETING_HELP"));
}

TEST_CASE(
    "a config file sets flags by their names without dashes; comments and blank lines are "
    "skipped") {
    TempFiles files;
    const auto config = files.write("server.conf", R"(# the ticketing server
threads = 3

stream-frame-budget=800   # viewers
backend = redis
redis-url = redis://10.0.0.5:6379/2
hold-ttl = 120
max-seats-per-buyer = 6
)");
    const auto options = accepted({"--config", config}, {});
    CHECK(options.threads == 3);
    CHECK(options.stream_frame_budget == 800);
    CHECK(options.backend == ticketing::BackendKind::redis);
    CHECK(options.redis_url == "redis://10.0.0.5:6379/2");
    CHECK(options.hold_ttl == std::chrono::seconds(120));
    CHECK(options.max_seats_per_buyer == 6);
    CHECK(options.config_file == config);
    // Named by the environment.
    CHECK(accepted({}, {{"SEATLOCK_TICKETING_CONFIG", config}}).threads == 3);
}

TEST_CASE(
    "the command line wins over the environment, the environment over the file, the file over the "
    "defaults") {
    TempFiles files;
    const auto config =
        files.write("server.conf", "threads = 2\nfeed-retained = 5\nstream-buffer = 2048\n");
    const auto other = files.write("other.conf", "threads = 9\n");
    const auto options =
        accepted({"--config", config, "--threads", "4"}, {{"SEATLOCK_TICKETING_THREADS", "3"},
                                                          {"SEATLOCK_TICKETING_FEED_RETAINED", "6"},
                                                          {"SEATLOCK_TICKETING_CONFIG", other}});
    CHECK(options.threads == 4);           // command line
    CHECK(options.feed_retained == 6);     // environment over file
    CHECK(options.stream_buffer == 2048);  // file over default
    CHECK(options.stream_frame_budget == ServerOptions{}.stream_frame_budget);
    CHECK(options.config_file == config);  // --config itself: the command line's
    // The same flag twice on the command line: the last one.
    CHECK(accepted({"--threads", "2", "--threads=5"}).threads == 5);
}

TEST_CASE("a mistake in the config file names the file and line") {
    TempFiles files;
    const auto check = [&](const std::string& text, const std::string& expected) {
        const auto config = files.write("server.conf", text);
        const auto refused = refusal({"--config", config});
        CAPTURE(refused);
        CHECK(contains(refused, config + ":2:"));
        CHECK(contains(refused, expected));
    };
    check("threads = 2\nno-such-setting = 1\n", "no-such-setting is not a setting");
    check("threads = 2\nthreads = 0\n", "threads (--threads) expects a number from 1 to 256");
    check("# first\nhold-ttl = soon\n", "--hold-ttl");
    check("threads = 2\nredis-url redis://:hunter2@host\n", "expects name = value");
    CHECK_FALSE(contains(refusal({"--config", files.path("server.conf")}), "hunter2"));
    check("threads = 2\n[server]\n", "sections are not used");
    check("threads = 2\nconfig = /etc/other.conf\n", "config is not a setting of the file");
    check("threads = 2\nhelp = 1\n", "help is not a setting");
    // A file that is not there, named by the flag or variable that named it.
    const auto missing = files.path("missing.conf");
    auto text = refusal({"--config", missing});
    CHECK(contains(text, "--config " + missing));
    CHECK(contains(text, "cannot read it"));
    text = refusal({}, {{"SEATLOCK_TICKETING_CONFIG", missing}});
    CHECK(contains(text, "SEATLOCK_TICKETING_CONFIG"));
    CHECK(contains(text, missing));
    CHECK(contains(refusal({"--config", ""}), "--config"));
}

TEST_CASE("the Redis password comes from the first line of a file, without its line end") {
    TempFiles files;
    auto options =
        accepted({"--redis-password-file", files.write("pw", "s3cret:/@\nsecond line\n")});
    CHECK(options.redis_password == "s3cret:/@");
    CHECK(options.redis_password_file == files.path("pw"));
    CHECK(accepted({"--redis-password-file", files.write("pw", "s3cret")}).redis_password ==
          "s3cret");
    CHECK(accepted({"--redis-password-file", files.write("pw", "s3cret\r\n")}).redis_password ==
          "s3cret");
    // From the environment or the config file as well, with a URL without credentials.
    const auto config =
        files.write("server.conf", "redis-password-file = " + files.write("pw", "fromfile\n") +
                                       "\nredis-url = redis://127.0.0.1:6380\n");
    CHECK(accepted({"--config", config}).redis_password == "fromfile");
    CHECK(accepted({}, {{"SEATLOCK_TICKETING_REDIS_PASSWORD_FILE", files.path("pw")}})
              .redis_password == "fromfile");
    CHECK(accepted(
              {"--redis-password-file", files.path("pw"), "--redis-url", "unix:///run/redis.sock"})
              .redis_password == "fromfile");
}

TEST_CASE(
    "an empty or unreadable password file, or a URL with a password as well, is refused without "
    "the password") {
    TempFiles files;
    auto text = refusal({"--redis-password-file", files.write("empty", "")});
    CHECK(contains(text, "--redis-password-file " + files.path("empty")));
    text = refusal({"--redis-password-file", files.write("blank", "\nhunter2\n")});
    CHECK(contains(text, files.path("blank")));
    CHECK(contains(text, "empty"));
    CHECK_FALSE(contains(text, "hunter2"));
    text = refusal({"--redis-password-file", files.path("missing")});
    CHECK(contains(text, files.path("missing")));
    CHECK(contains(text, "cannot read it"));
    text = refusal({}, {{"SEATLOCK_TICKETING_REDIS_PASSWORD_FILE", files.path("missing")}});
    CHECK(contains(text, "SEATLOCK_TICKETING_REDIS_PASSWORD_FILE"));

    const auto pw = files.write("pw", "hunter2\n");
    for (const std::string url :
         {"redis://:other@127.0.0.1:6379", "redis://app:other@127.0.0.1:6379/1",
          "unix://:other@/run/redis.sock", "redis+cluster://:other@10.0.0.5:7000"}) {
        CAPTURE(url);
        text = refusal({"--redis-url", url, "--redis-password-file", pw});
        CHECK(contains(text, "--redis-password-file"));
        CHECK(contains(text, "--redis-url"));
        CHECK_FALSE(contains(text, "other"));
        CHECK_FALSE(contains(text, "hunter2"));
    }
}

TEST_CASE("a switch is true alone, or true or false given; anything else is refused") {
    CHECK_FALSE(accepted({}).trust_user_header);
    CHECK(accepted({"--trust-user-header"}).trust_user_header);
    CHECK(accepted({"--trust-user-header", "--threads", "2"}).trust_user_header);
    CHECK_FALSE(accepted({"--trust-user-header=false"}).trust_user_header);
    CHECK(accepted({"--behind-tls-proxy=true"}).behind_tls_proxy);
    CHECK(accepted({}, {{"SEATLOCK_TICKETING_TRUST_USER_HEADER", "true"}}).trust_user_header);
    CHECK_FALSE(accepted({"--trust-user-header=false"}, {{"SEATLOCK_TICKETING_TRUST_USER_HEADER", "true"}})
                    .trust_user_header);
    check_refused({"--trust-user-header=yes"}, "--trust-user-header");
    CHECK(contains(refusal({}, {{"SEATLOCK_TICKETING_BEHIND_TLS_PROXY", "1"}}),
                   "SEATLOCK_TICKETING_BEHIND_TLS_PROXY"));
    TempFiles files;
    const auto file = files.write("settings.conf", "trust-user-header = true\n");
    CHECK(accepted({"--config", file}).trust_user_header);
}

TEST_CASE("the session keys come from a file of one or two keys; the operator key from a file") {
    TempFiles files;
    const std::string a(32, 'a'), b(64, 'b');
    const auto one = accepted({"--session-key-file", files.write("one", a + "\n")});
    CHECK(one.session_keys == std::vector<std::string>{a});
    const auto two = accepted(
        {"--session-key-file", files.write("two", "# rotated on Monday\n" + b + "\r\n\n" + a)});
    CHECK(two.session_keys == std::vector<std::string>{b, a});
    CHECK(accepted({}).session_keys.empty());  // a key generated at start

    auto text = refusal({"--session-key-file", files.write("short", std::string(31, 'k') + "\n")});
    CHECK(contains(text, "--session-key-file"));
    CHECK(contains(text, "at least 32 characters"));
    CHECK_FALSE(contains(text, std::string(31, 'k')));  // the key is not echoed
    text = refusal({"--session-key-file", files.write("three", a + "\n" + b + "\n" + a + "1\n")});
    CHECK(contains(text, "three:3: at most two keys"));
    CHECK(contains(refusal({"--session-key-file", files.write("none", "# nothing\n\n")}),
                   "holds no key"));
    CHECK(contains(refusal({"--session-key-file", files.path("missing")}), "cannot read it"));

    const auto admin = accepted({"--admin-key-file", files.write("admin", "0123456789abcdef\n")});
    CHECK(admin.admin_key == "0123456789abcdef");
    CHECK(contains(refusal({"--admin-key-file", files.write("weak", "short\n")}),
                   "at least 16 characters"));
    // Sign-in for the operator only needs the operator key.
    CHECK(contains(refusal({"--sign-in", "operator"}), "needs --admin-key-file"));
    CHECK_FALSE(accepted({"--sign-in", "operator", "--admin-key-file", files.path("admin")}).open_sign_in);
    check_refused({"--sign-in", "anyone"}, "--sign-in");
}

TEST_CASE("the waiting rooms' settings: the admission key from a file, the admit interval, "
          "fail-open, a Redis of their own") {
    TempFiles files;
    const std::string key(40, 'r');
    CHECK_FALSE(ServerOptions{}.admission_key.has_value());  // a key generated at start
    CHECK(ServerOptions{}.admit_interval == std::chrono::milliseconds(100));
    CHECK_FALSE(ServerOptions{}.room_fail_open);
    CHECK(accepted({"--admission-key-file", files.write("admission", key + "\n")}).admission_key == key);
    const auto text = refusal({"--admission-key-file", files.write("short", std::string(31, 'k') + "\n")});
    CHECK(contains(text, "--admission-key-file"));
    CHECK(contains(text, "at least 32 characters"));
    CHECK_FALSE(contains(text, std::string(31, 'k')));  // the key is not echoed
    CHECK(contains(refusal({"--admission-key-file", files.path("missing")}), "cannot read it"));

    CHECK(accepted({"--admit-interval-ms", "20"}).admit_interval == std::chrono::milliseconds(20));
    CHECK(accepted({"--room-fail-open"}).room_fail_open);
    CHECK(accepted({}, {{"SEATLOCK_TICKETING_ROOM_FAIL_OPEN", "true"}}).room_fail_open);
    CHECK(accepted({"--room-redis-url", "redis://10.0.0.5:6379"}).room_redis_url == "redis://10.0.0.5:6379");
    CHECK_FALSE(accepted({}).room_redis_url.has_value());
}

TEST_CASE(
    "--log-level takes debug, info, warn or error, from any place; --access-log on, off or a "
    "file") {
    CHECK(ServerOptions{}.log_level == ticketing::LogLevel::info);
    CHECK(ServerOptions{}.access_log == "on");
    CHECK(accepted({"--log-level", "debug"}, {}).log_level == ticketing::LogLevel::debug);
    CHECK(accepted({}, {{"SEATLOCK_TICKETING_LOG_LEVEL", "warn"}}).log_level ==
          ticketing::LogLevel::warn);
    CHECK(
        accepted({"--log-level", "error"}, {{"SEATLOCK_TICKETING_LOG_LEVEL", "warn"}}).log_level ==
        ticketing::LogLevel::error);
    const auto text = refusal({"--log-level", "loud"});
    CHECK(contains(text, "--log-level expects debug, info, warn or error"));
    CHECK(contains(refusal({"--log-level", "INFO"}), "--log-level"));
    CHECK(accepted({"--access-log", "off"}, {}).access_log == "off");
    CHECK(accepted({}, {{"SEATLOCK_TICKETING_ACCESS_LOG", "/var/log/access.jsonl"}}).access_log ==
          "/var/log/access.jsonl");
    CHECK(contains(refusal({"--access-log", ""}), "--access-log"));
}

TEST_CASE("--help lists every flag with its environment variable and its default") {
    const auto help = parse({"--help"});
    REQUIRE(std::holds_alternative<EarlyExit>(help));
    const auto& text = std::get<EarlyExit>(help).text;
    for (const auto& flag : every_flag) {
        std::string env = "SEATLOCK_TICKETING_" + flag;
        for (auto& c : env)
            c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        CAPTURE(flag);
        CHECK(contains(text, "--" + flag + " "));
        CHECK(contains(text, "env " + env));
    }
    CHECK(contains(text, "env SEATLOCK_TICKETING_STREAM_FRAME_BUDGET; default 25000"));
    CHECK(contains(text, "env SEATLOCK_TICKETING_MAX_SEATS_PER_BUYER; default 3"));
    CHECK(contains(text, "env SEATLOCK_TICKETING_LOG_LEVEL; default info"));
    CHECK(contains(text, "-h [ --help ]"));
    // -h too, wherever it stands, and before any mistake.
    CHECK(std::get<EarlyExit>(parse({"--threads", "0", "-h"})).exit_code == 0);
}

}  // namespace options_test
