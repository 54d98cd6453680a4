// A model family as the rest of xl sees it: one descriptor holds everything that differs between
// families (how a config becomes a model, the attention spans, the data it reads, its memory
// formula and FLOPs, its Hugging Face names, what generation needs, its config section). Each family's folder
// (models/transformer_xl/, models/xlnet/, models/char_transformer/) defines one, and the registry
// (models/registry.h) is the one place that lists them; the trainer, evaluator, sampler,
// benchmark and tools ask the descriptor and never name a family.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xl/config/schema.h"
#include "xl/io/safetensors.h"
#include "xl/models/hf_tensor.h"
#include "xl/models/language_model.h"
#include "xl/models/memory_shape.h"
#include "xl/sources/dataset.h"

namespace xl::models {

struct ModelFamily {
  /// model.type's value, and the name of the family's config section (model.<name>) where it
  /// has one
  std::string name;
  /// What the config layer knows of the family: its own keys (model.<name>) and the rules that
  /// involve them (config.name is set to `name` when the family registers).
  config::FamilySchema config;

  /// The model over a vocabulary of `n_token`, freshly initialised from the torch random state
  /// (train.activation_checkpointing decides whether its layers recompute).
  LanguageModel (*build)(const config::Config& config, int64_t n_token) = nullptr;
  /// The attention lengths of an evaluation (`validation`: during training); see
  /// models::eval_span. Null for a family that carries no memory (config.carries_memory
  /// false): its evaluations keep none.
  Span (*eval_span)(const config::Config& config, bool validation) = nullptr;
  /// A line for the log where the evaluation's span departs from what the config's eval
  /// section says (null, or "": none).
  std::string (*eval_span_note)(const config::Config& config) = nullptr;

  /// The prepared data `config` asks for, encoded with `tokenizer` (data.dir's, or a trained
  /// run's copy: the family refuses one of the wrong kind; data.dir is read when a split is),
  /// and random data in the same shapes for benchmarks.
  std::unique_ptr<sources::Dataset> (*open_dataset)(
      const config::Config& config,
      std::shared_ptr<const formats::Tokenizer> tokenizer) = nullptr;
  std::unique_ptr<sources::Dataset> (
      *random_dataset)(const config::Config& config, int64_t n_token, int64_t size) = nullptr;

  /// What the memory estimate needs of the model config builds over `n_token`.
  MemoryShape (*memory_shape)(const config::Config& config, int64_t n_token) = nullptr;

  /// Model FLOPs per input token on uniformly random targets (xl-bench's data): of a training
  /// step, and of a memory-mode evaluation segment of `tgt_len` new tokens after `mem_len` of
  /// memory (`projections_kept`: the memory's projections come from the previous segment).
  /// Null where the family has no formula yet: xl-bench then reports no MFU.
  double (*training_flops)(const config::Config& config, int64_t n_token) = nullptr;
  double (*evaluation_flops)(
      const config::Config& config,
      int64_t n_token,
      int64_t tgt_len,
      int64_t mem_len,
      bool projections_kept) = nullptr;

  /// Hugging Face: the config.json of the matching model class for `config` over `dataset`'s
  /// vocabulary (null: HF has no such model, and `no_hf_model` says so), the tensors of one of
  /// this family's models under HF's names (nullopt for a model of another family), and the
  /// import of such tensors.
  nlohmann::json (*hf_config)(const config::Config& config, const sources::Dataset& dataset) =
      nullptr;
  std::string no_hf_model;
  std::optional<std::vector<HFTensor>> (*hf_tensors)(LanguageModelImpl& model) = nullptr;
  void (*import_hf)(
      LanguageModelImpl& model,
      const io::SafeTensors& weights,
      const HFImportOptions& options) = nullptr;

  /// A classifier's class names in class order, where its config names them (empty: none; null:
  /// the family has no classifier).
  std::vector<std::string> (*class_names)(const config::Config& config) = nullptr;

  /// Generation: why xl-sample refuses the family ("" where it generates), and the longest
  /// window its position tables hold (nullopt: any).
  std::string no_sampling;
  std::optional<int64_t> (*position_limit)(const config::Config& config) = nullptr;
};

} // namespace xl::models
