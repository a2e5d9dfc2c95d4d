// SPDX-License-Identifier: MIT
// benchmarks/node_redlock.cpp: installing the peer into the build tree, and one measured run
// of it: start, warm up, "go", the result line.
#include "node_redlock.hpp"

#include <fmt/core.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include "child_process.hpp"

namespace seatlock::bench {

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Where CMake put the peer: beside this program.
fs::path peer_dir() {
    return fs::read_symlink("/proc/self/exe").parent_path() / "peers" / "node-redlock";
}

// The version an installed package says it is, or "?".
std::string package_version(const fs::path& dir, const std::string& package) {
    try {
        const auto doc =
            boost::json::parse(read_file(dir / "node_modules" / package / "package.json"));
        return std::string(doc.at("version").as_string());
    } catch (const std::exception&) {
        return "?";
    }
}

// What a failed npm said: its first error line with a message ("FetchError: request to
// ... failed, reason: ..."), else its first error line, else the log's last line.
std::string npm_error_of(const fs::path& log) {
    std::ifstream in(log);
    std::string first;
    for (std::string line; std::getline(in, line);) {
        for (std::string_view prefix : {"npm error ", "npm ERR! "}) {
            if (line.rfind(prefix, 0) != 0) continue;
            const std::string said = line.substr(prefix.size());
            if (said.find(": ") != std::string::npos) return said;
            if (first.empty()) first = said;
        }
    }
    return first.empty() ? last_line_of(log.string()) : first;
}

void record_histogram(LatencyHistogram& into, const boost::json::value& us_counts) {
    for (const auto& [us, count] : us_counts.as_object()) {
        into.record(std::stoll(std::string(us)) * 1000,
                    boost::json::value_to<std::uint64_t>(count));
    }
}

}  // namespace

NodeRedlock NodeRedlock::prepare(bool quick) {
    NodeRedlock peer;
    if (quick) {
        peer.why_not_ = "quick mode starts no peer (it needs neither node nor the npm registry)";
        return peer;
    }
    const fs::path dir = peer_dir();
    peer.dir_ = dir.string();
    for (const char* file : {"bench.js", "package.json", "package-lock.json"}) {
        if (!fs::exists(dir / file)) {
            peer.why_not_ = fmt::format(
                "{} is missing: CMake copies the peer there when it builds seatlock-bench",
                (dir / file).string());
            return peer;
        }
    }
    const auto node = find_on_path("node");
    const auto npm = find_on_path("npm");
    if (!node || !npm) {
        peer.why_not_ = fmt::format(
            "{} not found on PATH (Debian: apt-get install nodejs npm; ./dev bench installs "
            "them when run as root)",
            !node ? "node" : "npm");
        return peer;
    }
    peer.node_ = *node;

    // npm ci again whenever the lock file differs from the one last installed.
    const fs::path stamp = dir / "node_modules" / ".seatlock-bench-installed";
    const std::string lock = read_file(dir / "package-lock.json");
    if (!fs::exists(stamp) || read_file(stamp) != lock) {
        const fs::path log = dir / "npm-ci.log";
        fmt::print("node-redlock: npm ci into {} (log: {})\n", dir.string(), log.string());
        std::fflush(stdout);
        std::error_code ignored;
        fs::remove(log, ignored);
        const auto exit = run_to_end(
            {*npm, "ci", "--prefix", dir.string(), "--no-audit", "--no-fund", "--fetch-retries=1"},
            log.string(), std::chrono::minutes(5));
        if (exit != 0) {
            peer.why_not_ = fmt::format("npm ci {} (see {}): {}",
                                        exit ? fmt::format("failed with exit code {}", *exit)
                                             : std::string("did not finish within 5 minutes"),
                                        log.string(), npm_error_of(log));
            return peer;
        }
        std::ofstream(stamp, std::ios::binary) << lock;
    }

    const fs::path version_file = dir / "node-version.txt";
    std::error_code ignored;
    fs::remove(version_file, ignored);
    (void)run_to_end({*node, "--version"}, version_file.string(), std::chrono::seconds(30));
    peer.versions_ =
        fmt::format("node {}, redlock {}, ioredis {}", last_line_of(version_file.string()),
                    package_version(dir, "redlock"), package_version(dir, "ioredis"));
    return peer;
}

std::string NodeRedlock::describe() const {
    if (!why_not_.empty()) return "node-redlock: not run: " + why_not_;
    return "node-redlock: " + versions_ + ", one connection, from " + dir_;
}

PeerRun NodeRedlock::run(const Load& load, const std::function<void()>& at_start,
                         const std::function<void()>& at_end) const {
    if (!why_not_.empty()) throw std::logic_error("node-redlock cannot run: " + why_not_);
    const std::string stderr_log = (fs::path(dir_) / "bench-stderr.log").string();
    auto failed = [&](const std::string& what) {
        const std::string said = last_line_of(stderr_log);
        return std::runtime_error("node-redlock " + what +
                                  (said.empty() ? std::string() : ": " + said));
    };

    ChildProcess child(
        {node_, (fs::path(dir_) / "bench.js").string(), "--host", load.host, "--port",
         std::to_string(load.port), "--in-flight", std::to_string(load.in_flight), "--seconds",
         fmt::format("{}", load.seconds), "--keys", std::to_string(load.keys), "--key-prefix",
         load.key_prefix, "--warmup", std::to_string(load.warmup_per_slot), "--wait-for-go"},
        stderr_log);
    const auto ready = child.read_line(std::chrono::seconds(60));
    if (!ready || ready->find("\"ready\":true") == std::string::npos) throw failed("did not start");

    at_start();
    const double cpu_at_start = child.cpu_seconds();
    child.write_line("go");
    const auto line =
        child.read_line(std::chrono::milliseconds(static_cast<std::int64_t>(load.seconds * 1000)) +
                        std::chrono::seconds(60));
    if (!line) throw failed("gave no result");
    PeerRun out;
    out.m.cpu_seconds = child.cpu_seconds() - cpu_at_start;
    out.m.peak_rss_kib = child.peak_resident_kib();
    at_end();
    child.close_stdin();
    if (child.wait(std::chrono::seconds(10)) != 0) throw failed("did not end cleanly");

    const auto result = boost::json::parse(*line).as_object();
    const auto count = [&](const char* key) {
        return boost::json::value_to<std::uint64_t>(result.at(key));
    };
    out.m.callers = load.in_flight;
    out.m.seconds = boost::json::value_to<double>(result.at("seconds"));
    out.m.refused = count("busy");
    out.errors = count("errors");
    out.m.ops = count("pairs") + out.m.refused + out.errors;
    record_histogram(out.m.latency, result.at("latency_us"));
    record_histogram(out.m.first_step, result.at("acquire_latency_us"));
    if (const auto* first = result.if_contains("first_error"); first && first->is_string())
        out.first_error = std::string(first->as_string());
    return out;
}

}  // namespace seatlock::bench
