// SPDX-License-Identifier: MIT
// benchmarks/child_process.hpp: the programs seatlock-bench starts itself — a peer it talks
// to line by line over its stdin and stdout, and a command run to its end (npm ci) — and
// what /proc says about them, so that a peer's CPU time and memory are measured as the
// benchmark's own are.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace seatlock::bench {

/// The full path of `program` on PATH, or nothing.
[[nodiscard]] std::optional<std::string> find_on_path(std::string_view program);

/// Runs `argv` to its end with stdout and stderr appended to `log`: its exit code, or
/// nothing when it had to be killed after `timeout` or could not start.
[[nodiscard]] std::optional<int> run_to_end(const std::vector<std::string>& argv,
                                            const std::string& log, std::chrono::seconds timeout);

/// The last non-empty line of a text file (what a failed command said last), or "".
[[nodiscard]] std::string last_line_of(const std::string& path);

/// A program started with its stdin and stdout on pipes and its stderr into a file. The
/// destructor closes its stdin, gives it a moment to finish, then kills it.
class ChildProcess {
public:
    /// Starts `argv` (argv[0] looked up on PATH); throws when it cannot.
    ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_file);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    [[nodiscard]] pid_t pid() const noexcept { return pid_; }

    /// The next line it writes, without its newline; nothing when it closed its stdout or
    /// wrote no whole line within `timeout`.
    [[nodiscard]] std::optional<std::string> read_line(std::chrono::milliseconds timeout);
    /// Writes `line` and a newline to its stdin; throws when it stopped reading.
    void write_line(std::string_view line);
    void close_stdin() noexcept;
    /// Waits up to `timeout` for it to exit, then kills it: its exit code, or nothing when
    /// it was killed or died of a signal.
    std::optional<int> wait(std::chrono::milliseconds timeout);

    /// Its CPU time so far, user + system, in seconds (/proc/<pid>/stat).
    [[nodiscard]] double cpu_seconds() const;
    /// Its peak resident memory so far, in KiB (/proc/<pid>/status VmHWM).
    [[nodiscard]] std::int64_t peak_resident_kib() const;
    /// Its resident memory now, in KiB (/proc/<pid>/status VmRSS).
    [[nodiscard]] std::int64_t resident_kib() const;

private:
    pid_t pid_ = -1;
    int stdin_ = -1;
    int stdout_ = -1;
    std::string buffer_;  // read from stdout, not yet returned as a line
    bool exited_ = false;
};

}  // namespace seatlock::bench
