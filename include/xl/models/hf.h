// Hugging Face interop for whichever family a model is: its tensors under HF's names, importing
// them from safetensors (converted pretrained checkpoints, the parity check's weights) and the
// config.json that lets from_pretrained() load an exported run. Each family lists its own names
// and config (models/<family>/hf.h); a family HF has no model for says so in its descriptor.
#pragma once

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "xl/config/schema.h"
#include "xl/formats/tokenizer.h"
#include "xl/io/safetensors.h"
#include "xl/models/hf_tensor.h"
#include "xl/models/language_model.h"
#include "xl/sources/dataset.h"

namespace xl::models {

/// The tensors of `model` under HF's names; a UserError for a family without them.
std::vector<HFTensor> hf_tensors(LanguageModelImpl& model);

/// Copies every parameter of `model` from `weights` (see models/<family>/hf.h for the names);
/// what does not fit is a UserError listing every problem.
void import_hf(
    LanguageModelImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& options = {});

/// config.json of the HF model class that matches `config`'s model over `dataset`'s vocabulary;
/// what HF cannot express is a UserError.
nlohmann::json hf_config(const config::Config& config, const sources::Dataset& dataset);

/// The files of HF's tokenizer for `tokenizer`, by name, as from_pretrained reads them beside
/// the model: for a word vocabulary, TransfoXLTokenizer's vocab.txt (one symbol a line in id
/// order, no xl header) and tokenizer_config.json; for a SentencePiece model,
/// XLNetTokenizer's tokenizer_config.json (cased, accents kept, as xl encodes), spiece.model
/// being copied as it is. Another kind has no HF tokenizer: a UserError.
std::map<std::string, std::string> hf_tokenizer_files(const formats::Tokenizer& tokenizer);

/// The tokenizer of a Hugging Face folder (or a file of one) as xl reads it: TransfoXLTokenizer's
/// vocab.txt (one symbol a line, HF's ids; split by WikiText's rules, as HF splits raw text) or
/// XLNetTokenizer's spiece.model, after its tokenizer_config.json (where there is one) is found
/// to ask for what xl does (case kept, accents kept). An xl vocab.txt reads as it is. What xl
/// cannot read (vocab.pkl, a pickle) or would encode otherwise is a UserError saying so.
std::shared_ptr<const formats::Tokenizer> read_hf_tokenizer(const std::filesystem::path& path);

/// Every tensor of `model` under its HF name (tied and shared copies too, so that every name HF
/// looks for is there), contiguous on the CPU, ready for safetensors.
std::map<std::string, torch::Tensor> hf_state(LanguageModelImpl& model);

} // namespace xl::models
