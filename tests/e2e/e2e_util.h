// What the end-to-end tests of the apps share: the apps and configs by path, the prepared corpora
// of every family and the command that trains on WikiText-2, and runs interrupted by signals.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "test_util.h"

namespace xl::test {

/// The path of the built app `name` ("xl-train").
std::string app(const std::string& name);

/// The path of a file of the source tree ("configs/transformer_xl/tiny.yaml").
std::string config_file(const std::string& relative);

/// The fields of a TSV row (a --per-token listing's), an empty last one left out.
std::vector<std::string> tab_fields(const std::string& row);

/// A small WikiText-2 corpus (valid split as training data), prepared once per process.
const fs::path& corpus_dir();

/// NSMC for XLNet, prepared once per process: 3,000 training reviews (the last 300 held out)
/// and 500 test reviews as labelled files, and a 2,000-piece SentencePiece model with the
/// reviews as pieces.
const fs::path& nsmc_dir();

/// The bundled enwik8 prefix as bytes (200,000 for training, 20,000 for validation and test),
/// prepared once per process.
const fs::path& enwik8_dir();

/// The prepared folder above that stands in for a config's data.dir, by its last component
/// ("data/prepared/wikitext-2"); a folder none of them stands for fails the calling test.
fs::path prepared_data_for(const fs::path& data_dir);

/// xl-train on configs/transformer_xl/tiny.yaml over corpus_dir(), writing the run `run`, then `extra`.
std::string train_command(const fs::path& run, const std::string& extra = "");

/// A run "r" in `dir` by train_command, stopped (with a checkpoint) at step 10.
void train_ten_steps(const TempDir& dir);

/// Each training loss of `resumed` after step `from` up to `to` equals `reference`'s, bit for bit.
void expect_same_losses_after(
    const std::map<int64_t, double>& reference,
    const std::map<int64_t, double>& resumed,
    int64_t from,
    int64_t to);

/// The step of the run's last checkpoint.
int64_t checkpoint_step(const fs::path& run);

/// Starts `command` in the background (its own process group) and returns its pid.
pid_t spawn(const std::string& command, const fs::path& cwd);

/// Waits until the run has logged `step`, then sends `sig`; returns the exit status word.
int signal_after_step(pid_t pid, const fs::path& run, int64_t step, int sig);

} // namespace xl::test
