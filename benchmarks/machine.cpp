// SPDX-License-Identifier: MIT
// benchmarks/machine.cpp: reads the machine's description from /proc and uname.
#include "machine.hpp"

#include <sys/utsname.h>

#include <fstream>

namespace seatlock::bench {

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            return colon == std::string::npos
                       ? line
                       : line.substr(line.find_first_not_of(" \t", colon + 1));
        }
    }
    return "unknown";
}

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string one, five, fifteen;
    in >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

std::string kernel() {
    utsname u{};
    ::uname(&u);
    return std::string(u.sysname) + " " + u.release;
}

}  // namespace seatlock::bench
