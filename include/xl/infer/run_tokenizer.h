// A trained run's own tokenizer: xl-train copies the vocabulary or SentencePiece model of its
// data into the run folder, beside config.yaml (vocab.txt or spiece.model), so that the run is
// one folder to copy, ship and open without its training data. A run made before that still
// opens with data.dir's, and `xl-train --config <run>/config.yaml --add-tokenizer` adds it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "xl/config/schema.h"
#include "xl/formats/tokenizer.h"

namespace xl::infer {

/// Where the run at `run_dir` keeps `tokenizer`: vocab.txt or spiece.model.
std::filesystem::path run_tokenizer_path(
    const std::filesystem::path& run_dir,
    const formats::Tokenizer& tokenizer);

/// The tokenizer the run at `run_dir` keeps, or null for a run made before runs kept one.
std::shared_ptr<const formats::Tokenizer> run_tokenizer(const std::filesystem::path& run_dir);

/// The run's own tokenizer, else (an older run) data.dir's; neither is a UserError that says how
/// to give the run one.
std::shared_ptr<const formats::Tokenizer> open_run_tokenizer(
    const config::Config& config,
    const std::filesystem::path& run_dir);

/// Copies `tokenizer` into the run at `run_dir` (atomically) unless it holds it already (the
/// same vocabulary recording other rules for raw text is copied again: the data was prepared
/// anew); another one there is a UserError (`replace`: a new run's, which replaces what a run
/// killed before its first checkpoint left). Returns whether it copied.
bool keep_tokenizer(
    const std::filesystem::path& run_dir,
    const formats::Tokenizer& tokenizer,
    bool replace = false);

} // namespace xl::infer
