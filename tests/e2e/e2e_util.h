// What the end-to-end tests of the apps share: the apps and configs by path, a prepared corpus
// and the command that trains on it, and runs interrupted by signals.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "test_util.h"

namespace xl::test {

/// The path of the built app `name` ("xl-train").
std::string app(const std::string& name);

/// The path of a file of the source tree ("configs/txl/tiny.yaml").
std::string config_file(const std::string& relative);

/// A small WikiText-2 corpus (valid split as training data), prepared once per process.
const fs::path& corpus_dir();

/// xl-train on configs/txl/tiny.yaml over corpus_dir(), writing the run `run`, then `extra`.
std::string train_command(const fs::path& run, const std::string& extra = "");

/// The step of the run's last checkpoint.
int64_t checkpoint_step(const fs::path& run);

/// Starts `command` in the background (its own process group) and returns its pid.
pid_t spawn(const std::string& command, const fs::path& cwd);

/// Waits until the run has logged `step`, then sends `sig`; returns the exit status word.
int signal_after_step(pid_t pid, const fs::path& run, int64_t step, int sig);

} // namespace xl::test
