// SPDX-License-Identifier: MIT
// benchmarks/cpu_layout.cpp: CPU masks by sched_setaffinity, Redis's threads from
// /proc/<pid>/task.
#include "cpu_layout.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace seatlock::bench {

namespace {

cpu_set_t mask_of(const std::vector<int>& cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) CPU_SET(cpu, &set);
    return set;
}

// Sets the mask of every thread of `pid`, and reads its main thread's back. A thread that
// ended meanwhile is no error.
void set_process_mask(pid_t pid, const cpu_set_t& set) {
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(
             std::filesystem::path("/proc") / std::to_string(pid) / "task", ec)) {
        const auto tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
        if (::sched_setaffinity(tid, sizeof set, &set) != 0 && errno != ESRCH) {
            throw std::runtime_error(fmt::format("sched_setaffinity of thread {} of process {}: {}",
                                                 tid, pid, std::strerror(errno)));
        }
    }
    if (ec) throw std::runtime_error(fmt::format("threads of process {}: {}", pid, ec.message()));
    cpu_set_t now;
    if (::sched_getaffinity(pid, sizeof now, &now) != 0 || !CPU_EQUAL(&now, &set))
        throw std::runtime_error(fmt::format("process {} did not take its CPU mask", pid));
}

}  // namespace

std::vector<int> allowed_cpus() {
    cpu_set_t set;
    if (::sched_getaffinity(0, sizeof set, &set) != 0)
        throw std::runtime_error(std::string("sched_getaffinity: ") + std::strerror(errno));
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
    return cpus;
}

RedisApart::RedisApart(std::optional<pid_t> redis) : redis_(redis) {
    std::vector<int> cpus = allowed_cpus();
    if (cpus.size() < 2) {
        throw std::runtime_error(fmt::format(
            "Redis on a CPU of its own needs two CPUs; this process may use {}", cpus.size()));
    }
    saved_ = mask_of(cpus);
    const int last = cpus.back();
    cpus.pop_back();
    if (redis_) set_process_mask(*redis_, mask_of({last}));
    const cpu_set_t mine = mask_of(cpus);
    if (::sched_setaffinity(0, sizeof mine, &mine) != 0) {
        const int error = errno;
        if (redis_) set_process_mask(*redis_, saved_);
        throw std::runtime_error(std::string("sched_setaffinity: ") + std::strerror(error));
    }
}

RedisApart::~RedisApart() {
    (void)::sched_setaffinity(0, sizeof saved_, &saved_);
    if (redis_) {
        try {
            set_process_mask(*redis_, saved_);
        } catch (const std::exception& e) {
            // Redis keeps its one CPU: later rows are slower, not wrong; the reader is told.
            fmt::print(stderr, "warning: Redis stays on one CPU: {}\n", e.what());
        }
    }
}

}  // namespace seatlock::bench
