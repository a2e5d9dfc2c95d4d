// SPDX-License-Identifier: MIT
// benchmarks/cpu_layout.hpp: where the processes of a run may execute. The
// http_hold+release_apart rows give Redis a CPU of its own, as a deployment gives it a
// host of its own, and leave the others to the example server and the load generator, on
// either backend alike.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <optional>
#include <vector>

namespace seatlock::bench {

/// The CPUs the calling thread may run on, in increasing order.
[[nodiscard]] std::vector<int> allowed_cpus();

/// While it lives: the calling thread (and every process it starts: a child inherits the
/// mask of the thread that forks it) runs on the CPUs it was allowed but the last, and
/// every thread of `redis` (when given) on that last CPU alone. Destroying it restores both
/// masks. Throws std::runtime_error when fewer than two CPUs are allowed (nothing changed).
class RedisApart {
public:
    explicit RedisApart(std::optional<pid_t> redis);
    ~RedisApart();
    RedisApart(const RedisApart&) = delete;
    RedisApart& operator=(const RedisApart&) = delete;

private:
    cpu_set_t saved_{};
    std::optional<pid_t> redis_;
};

}  // namespace seatlock::bench
