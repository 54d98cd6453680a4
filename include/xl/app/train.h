// xl-train: a training run from a resolved config.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "xl/config/schema.h"

namespace xl::app {

/// Trains as `config` says, in its run directory (created, or continued with `resume`); `stop_at`
/// checkpoints and stops at that step. A config whose memory estimate exceeds the available
/// memory is refused unless `enforce_memory` is false. Returns the process exit status (128 +
/// the signal when SIGINT/SIGTERM stopped it after checkpointing). A resume that would train
/// nothing is refused, but a run at its train.max_step with `finished_ok` (--auto-resume) is left
/// as it is.
int run_training(
    const config::Config& config,
    bool resume,
    std::optional<int64_t> stop_at = std::nullopt,
    bool enforce_memory = true,
    bool finished_ok = false);

/// Copies the tokenizer of data.dir into the run at `run_dir` (a run trained before runs kept
/// theirs: infer/run_tokenizer.h), once every checkpoint of the run is found to be of that
/// vocabulary. Returns the process exit status.
int add_tokenizer(const config::Config& config, const std::filesystem::path& run_dir);

} // namespace xl::app
