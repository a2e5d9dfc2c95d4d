// SPDX-License-Identifier: MIT
// The server's command line (examples/ticketing_server/options.hpp), parsed in process:
// every numeric flag takes its bounds and refuses a number past either one, or no
// number, with exit code 2 and a message naming the flag; other mistakes alike.
#include <doctest/doctest.h>

#include "options.hpp"

#include <string>
#include <variant>
#include <vector>

namespace options_test {

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
};

TEST_CASE("each numeric flag takes its bounds and refuses past them, or no number, naming the flag") {
    const Bounds bounds[] = {
        {"--hold-ttl", 1, 7200},           {"--threads", 1, 256},
        {"--feed-interval-ms", 1, 60000},  {"--feed-retained", 1, 10000000},
        {"--stream-heartbeat-ms", 10, 3600000}, {"--stream-buffer", 1024, 1LL << 30},
        {"--stream-send-buffer", 4096, 1LL << 24}, {"--stream-frame-budget", 10, 10000000},
    };
    for (const auto& b : bounds) {
        CAPTURE(b.flag);
        accepted({b.flag, std::to_string(b.low)});
        accepted({b.flag + "=" + std::to_string(b.high)});
        check_refused({b.flag, std::to_string(b.low - 1)}, b.flag);
        check_refused({b.flag, std::to_string(b.high + 1)}, b.flag);
        check_refused({b.flag, "many"}, b.flag);
        check_refused({b.flag, ""}, b.flag);
        check_refused({b.flag}, b.flag);  // no value
    }
    CHECK(accepted({"--stream-send-buffer", "8192"}).stream_send_buffer == 8192);
    CHECK(accepted({"--stream-buffer", "2048"}).stream_buffer == 2048);
    CHECK(accepted({"--feed-retained=7"}).feed_retained == 7);
    CHECK(accepted({"--stream-frame-budget", "500"}).stream_frame_budget == 500);
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

}  // namespace options_test
