// SPDX-License-Identifier: MIT
// benchmarks/node_redlock.hpp: node-redlock, the peer seatlock's locks are measured
// against: node-redlock v5 on one ioredis connection (peers/node-redlock/bench.js), run
// as a program of its own against the benchmark's redis-server.
//
// Its npm packages are installed into the build tree, next to the program (CMake copies
// package.json, package-lock.json and bench.js to <build>/benchmarks/peers/node-redlock),
// with `npm ci` the first time and whenever package-lock.json changes; never into the
// source tree. When node or npm is missing, or npm cannot install, the peer is not run and
// its rows say why.
#pragma once

#include <functional>
#include <string>

#include "harness.hpp"

namespace seatlock::bench {

/// What one measured run of the peer gave.
struct PeerRun {
    Measurement m;  ///< ops: attempts (pairs done + busy refusals + errors); refused: busy
    std::uint64_t errors = 0;
    std::string first_error;
};

class NodeRedlock {
public:
    /// The peer as installed next to this program, or why it cannot run (`quick`: never
    /// started, so that the quick run needs neither node nor the npm registry).
    static NodeRedlock prepare(bool quick);

    /// Empty when the peer can run; otherwise why not.
    [[nodiscard]] const std::string& why_not() const noexcept { return why_not_; }
    /// One line about the peer for the banner: its versions, or why it does not run.
    [[nodiscard]] std::string describe() const;
    /// node's version, redlock's and ioredis's, for the JSON record.
    [[nodiscard]] const std::string& versions() const noexcept { return versions_; }

    struct Load {
        std::string host;
        int port = 0;
        int in_flight = 64;
        double seconds = 1;
        int keys = 1000;
        std::string key_prefix;  ///< Redis key names: the prefix, then the key's number
        std::uint64_t warmup_per_slot = 20;
    };
    /// Runs the peer once: starts it, lets it warm up, calls `at_start`, measures for
    /// load.seconds, calls `at_end` once its last operation is answered and it sends
    /// nothing more. Throws when the peer fails.
    PeerRun run(const Load& load, const std::function<void()>& at_start,
                const std::function<void()>& at_end) const;

private:
    std::string dir_;   // where bench.js and its node_modules are
    std::string node_;  // the node binary
    std::string why_not_;
    std::string versions_;
};

}  // namespace seatlock::bench
