// A trained run opened for inference: its resolved config, its tokenizer (the run's own copy, or
// data.dir's for a run made before runs kept one), the data its user texts are read as, and the
// checkpoint's weights in eval mode on a device. Immutable once open: the scorer, the sampler and
// the classifier read it from any number of threads at once, each call with its own state (the
// memory, the projection and decoding caches), as CTranslate2's replicas share one model.
//
//   auto run = infer::TrainedRun::open(config, "runs/wt2_small");
//   auto scored = infer::score_text(*run, {std::nullopt, "some text", "the text"}, {});
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "xl/config/schema.h"
#include "xl/formats/tokenizer.h"
#include "xl/models/language_model.h"
#include "xl/run/run_dir.h"
#include "xl/sources/dataset.h"

namespace xl::infer {

struct OpenOptions {
  /// "best", "last", another checkpoint of the run ("step_300", "averaged") or a file
  std::string checkpoint = "best";
  /// refuse a model whose memory estimate exceeds the memory left (else a warning)
  bool enforce_memory = true;
  /// what the model is for, in the memory check's message ("evaluation", "sampling")
  std::string use = "evaluation";
  /// run the model's steady forwards as CUDA graphs where the config asks for them
  /// (train.cuda_graphs): one caller at a time then (graph_lock)
  bool graphs = false;
  /// where the model runs (unset: the config's train.device, runtime::pick_device)
  std::optional<torch::Device> device;
};

class TrainedRun {
 public:
  /// Checkpoint options.checkpoint of the run at `run_dir`, whose resolved config (with the
  /// caller's overrides) is `config`, on options.device. A config or vocabulary other than the
  /// checkpoint's, or a model larger than the memory left, is a UserError. Changes nothing of
  /// the process: the torch random state is as it was (the model's initialisation, which the
  /// checkpoint's weights replace, draws from a saved state), threads and logging untouched.
  static std::shared_ptr<const TrainedRun> open(
      config::Config config,
      const std::filesystem::path& run_dir,
      const OpenOptions& options = {});

  const config::Config& config() const {
    return config_;
  }
  const run::RunPaths& paths() const {
    return paths_;
  }
  const formats::Tokenizer& tokenizer() const {
    return *tokenizer_;
  }
  /// The run's data: a user's text is read through it (any thread); a split (data.dir) by one
  /// caller at a time.
  sources::Dataset& data() const {
    return *data_;
  }
  /// The weights, in eval mode: a forward changes nothing of the module's own state.
  models::LanguageModelImpl& model() const {
    return *model_;
  }
  const torch::Device& device() const {
    return device_;
  }
  /// The checkpoint file, its training step and the resolved config it holds (YAML).
  const std::filesystem::path& checkpoint() const {
    return checkpoint_;
  }
  int64_t step() const {
    return step_;
  }
  const std::string& saved_config() const {
    return saved_config_;
  }
  /// The vocabulary the checkpoint was trained with, as its fingerprint says ("" unknown).
  const std::string& vocabulary() const {
    return vocabulary_;
  }
  /// Whether the run classifies texts (no tokens to score or generate).
  bool classifier() const {
    return data_->labelled();
  }
  /// Held for a forward where the model's forwards cannot run side by side: a CUDA graph
  /// replays into buffers of its own. Empty (no lock) otherwise.
  std::unique_lock<std::mutex> graph_lock() const;

  /// Why the model runs as CUDA graphs, or why not ("": graphs not asked for).
  const std::string& graphs_note() const {
    return graphs_note_;
  }

 private:
  TrainedRun() = default;

  config::Config config_;
  run::RunPaths paths_;
  std::shared_ptr<const formats::Tokenizer> tokenizer_;
  std::unique_ptr<sources::Dataset> data_;
  models::LanguageModel model_;
  torch::Device device_ = torch::kCPU;
  std::filesystem::path checkpoint_;
  int64_t step_ = 0;
  std::string saved_config_;
  std::string vocabulary_;
  bool graphed_ = false;
  std::string graphs_note_;
  mutable std::mutex graph_mutex_;
};

/// Refuses (UserError) a config whose model or data section is not that of checkpoint
/// `checkpoint_name` of the run at `paths`.
void require_checkpoint_config(
    const config::Config& config,
    const run::RunPaths& paths,
    const std::string& checkpoint_name);

} // namespace xl::infer
