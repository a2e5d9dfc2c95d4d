// SPDX-License-Identifier: MIT
// tests/support/temp_files.hpp: a temporary directory of files for one test case (config
// files, password files), removed at its end. The benchmarks use it too (no doctest here:
// a directory that cannot be made throws, which fails a test case as clearly).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace seatlock::testing {

class TempFiles {
public:
    TempFiles() {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "seatlock-test-files-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + pattern);
        dir_ = pattern;
    }
    ~TempFiles() {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    TempFiles(const TempFiles&) = delete;
    TempFiles& operator=(const TempFiles&) = delete;

    /// Writes `text` to `name` in the directory; its path.
    std::string write(const std::string& name, const std::string& text) const {
        const auto file = path(name);
        std::ofstream(file, std::ios::binary) << text;
        return file;
    }
    /// The path of `name` in the directory (written or not).
    [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }

private:
    std::filesystem::path dir_;
};

}  // namespace seatlock::testing
