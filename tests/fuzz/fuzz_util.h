// What every fuzz target shares. xl's readers take paths, so each input is written to a file
// first; a reader must either accept its input or refuse it with a UserError (the one-line
// "error: ..." of the apps). Anything else (another exception, a crash, a sanitizer report, a
// hang) is a finding.
//
// Each target also writes its own seed corpus: run it with XL_FUZZ_SEEDS=<dir> and it writes
// files made by xl's own writers from real text (XL_FUZZ_TEXT, a plain text file) there and
// exits. scripts/fuzz.sh does both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>

#include "xl/util/error.h"

namespace xl::fuzz {

namespace fs = std::filesystem;

/// A folder of this process for fixtures and inputs (in /dev/shm when there is one).
const fs::path& work_dir();

/// `data` as the file `work_dir() / name`, rewritten for every input.
fs::path input_file(const uint8_t* data, size_t size, const std::string& name);

/// The text the fixtures and seeds are made from: the file XL_FUZZ_TEXT names (its first
/// `max_bytes`), or a built-in paragraph.
std::string sample_text(size_t max_bytes = 200000);

/// The folder to write seeds into, when XL_FUZZ_SEEDS asks for them.
std::optional<fs::path> seeds_dir();

/// Writes `content` as a seed file `name` of `dir`.
void write_seed(const fs::path& dir, const std::string& name, const std::string& content);

/// Runs `read`: a UserError is the expected refusal; any other exception aborts with its
/// message, so that libFuzzer records the input.
template <class F>
void accepted_or_refused(F&& read) {
  try {
    read();
  } catch (const UserError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: not a UserError: %s\n", e.what());
    std::abort();
  }
}

/// Aborts with `what` when `condition` is false (a property of an accepted input).
void require(bool condition, const std::string& what);

} // namespace xl::fuzz
