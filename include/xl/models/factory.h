// The front door of the model families: what the rest of xl asks of `config`'s family, through
// the registry (models/registry.h): the model, the evaluation's attention span and the data. The
// families themselves build from the kit (models/kit.h) and never include this header.
#pragma once

#include <memory>
#include <string>

#include "xl/config/schema.h"
#include "xl/models/language_model.h"
#include "xl/sources/dataset.h"

namespace xl::models {

/// The model family `model.type` names, freshly initialised from the torch random state.
LanguageModel build_model(const config::Config& config, int64_t n_token);

/// train.cuda_graphs for `model` on `device` (null: on for CUDA): CUDA graphs of the model's
/// steady part where asked and possible. Returns a line for the log: on CUDA, whether the model
/// runs graphs and, where it cannot, why; on the CPU, only where they were asked for; "" where
/// they are off.
std::string use_cuda_graphs(
    LanguageModelImpl& model,
    const config::Config& config,
    const torch::Device& device);

/// The attention lengths of an evaluation. `validation` (during training) keeps the training
/// attention span; otherwise the eval section decides, its nulls resolved from the model's (each
/// family says how: models/<family>/family.h).
Span eval_span(const config::Config& config, bool validation);

/// A line for the log where the evaluation's span departs from what the eval section says
/// ("" where it does not).
std::string eval_span_note(const config::Config& config);

/// A classifier's class names in class order, as its config names them (empty: none).
std::vector<std::string> class_names(const config::Config& config);

/// The prepared data `config` asks for (data.dir, written by xl-prep for the model family),
/// encoded with `tokenizer` (null: data.dir's own, data.vocab). Missing or mismatched files, and
/// batch options the data cannot serve, are UserErrors.
std::unique_ptr<sources::Dataset> open_dataset(
    const config::Config& config,
    std::shared_ptr<const formats::Tokenizer> tokenizer = nullptr);

/// Random data in the shapes `config`'s family reads (benchmarks: no prepared data needed),
/// `size` tokens over a vocabulary of `n_token`.
std::unique_ptr<sources::Dataset> random_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size);

} // namespace xl::models
