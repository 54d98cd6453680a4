// Checkpoint files: a LibTorch archive holding a format version, the step, the
// fully resolved config (YAML) and whatever state the caller adds (model,
// optimizer, scheduler, RNG, data position, memories). Written atomically
// (temporary file, fsync, rename): a crash or a kill during a save leaves the
// previous checkpoint intact and loadable.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace xl::run {

/// Bumped whenever the layout of checkpoint contents changes incompatibly.
constexpr int64_t kCheckpointFormat = 2;

struct CheckpointInfo {
  int64_t format = kCheckpointFormat;
  int64_t step = 0;
  std::string config; // resolved config YAML
  /// the training data's vocabulary, as sources::Dataset::vocabulary_fingerprint() names it ("" unknown)
  std::string vocabulary;
};

/// Refuses (UserError) to go on from `checkpoint` with data whose vocabulary is not the one
/// it was trained on; an unknown one ("") on either side passes. `current_file` holds the
/// current one.
void require_same_vocabulary(
    const std::filesystem::path& checkpoint,
    const std::string& saved,
    const std::string& current,
    const std::filesystem::path& current_file);

/// Writes `info` plus the archive entries that `fill` adds, atomically, followed by a trailer
/// with the archive's length and checksum.
void save_checkpoint(
    const std::filesystem::path& path,
    const CheckpointInfo& info,
    const std::function<void(torch::serialize::OutputArchive&)>& fill);

/// Opens a checkpoint into `archive` and returns its info. A missing file, a
/// file that is not an xl checkpoint, another format version, or bytes that do not match the
/// saved checksum ("corrupt checkpoint: <file> (...); <other> still verifies") is a UserError
/// that says so.
CheckpointInfo load_checkpoint(
    const std::filesystem::path& path,
    torch::serialize::InputArchive& archive);

/// A resolved config's values by key path ("model.d_model" -> "410"; lists in YAML flow style);
/// the keys it lacks (a config an older xl wrote) take their defaults.
std::map<std::string, std::string> flatten_config(const std::string& yaml);

/// Keys under `sections` (e.g. {"model", "data"}) whose values differ between
/// two resolved configs, as "model.d_model: checkpoint 410, config 512". Empty
/// when they agree.
std::vector<std::string> config_differences(
    const std::string& checkpoint_config,
    const std::string& current_config,
    const std::vector<std::string>& sections);

/// What resuming a checkpoint with another config changes in its train, eval and run
/// sections, as "train.lr: 0.001 -> 0.002": `applied` takes effect from the next step on;
/// `refused` are the keys the saved state depends on (the batches it reads, the optimizer's
/// state, the random stream: train.sampling, batch_size, batch_chunk, tgt_len, optim, seed).
struct ResumeChanges {
  std::vector<std::string> applied;
  std::vector<std::string> refused;
};
ResumeChanges resume_changes(
    const std::string& checkpoint_config,
    const std::string& current_config);

/// Throws a UserError listing config_differences() when there are any, but the keys of
/// `may_differ` (a reader that checks the vocabulary itself takes the data at a new data.dir).
/// A data.dir that differs is explained: the data moved, or another folder was named.
void require_matching_config(
    const std::filesystem::path& checkpoint,
    const std::string& checkpoint_config,
    const std::string& current_config,
    const std::vector<std::string>& sections,
    const std::set<std::string>& may_differ = {});

} // namespace xl::run
