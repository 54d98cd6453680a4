// Exporting to Hugging Face's format: the tensors of hf_import.h under their HF names (tied and
// shared copies too, so that every name HF looks for is there) and the config.json of the
// matching model class, so that from_pretrained() loads a run directly:
//   Transformer-XL (relative attention)  TransfoXLLMHeadModel
//   XLNet, language model                XLNetLMHeadModel
//   XLNet, classification head           XLNetForSequenceClassification
// HF runs a model with the lengths its config holds, so mem_len, clamp_len and same_length are
// the evaluation's (as in HF's published transfo-xl-wt103), not training's.
#pragma once

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "xl/config/schema.h"
#include "xl/models/language_model.h"

namespace xl::models {

/// config.json for `config`'s model over `n_token` entries, `eos_id` the vocabulary's end of
/// line (Transformer-XL's <eos>; XLNet's ids are fixed). What HF cannot express is a UserError:
/// the character transformer, vanilla attention, an XLNet whose d_head * n_head != d_model.
nlohmann::json hf_config(
    const config::Config& config,
    int64_t n_token,
    int64_t eos_id);

/// Every tensor of `model` under its HF name, contiguous, ready for safetensors.
std::map<std::string, torch::Tensor> hf_state(LanguageModelImpl& model);

} // namespace xl::models
