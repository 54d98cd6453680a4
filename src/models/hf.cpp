#include "xl/models/hf.h"

#include "xl/models/registry.h"
#include "xl/util/error.h"

namespace xl::models {

namespace {

// The family whose hf_tensors accepts `model`, and those tensors.
std::pair<const ModelFamily*, std::vector<HFTensor>> family_tensors(LanguageModelImpl& model) {
  for (const ModelFamily& family : model_families()) {
    if (family.hf_tensors == nullptr) {
      continue;
    }
    if (auto tensors = family.hf_tensors(model)) {
      return {&family, std::move(*tensors)};
    }
  }
  throw UserError("Hugging Face has no names for this model's family");
}

} // namespace

std::vector<HFTensor> hf_tensors(LanguageModelImpl& model) {
  return family_tensors(model).second;
}

void import_hf(
    LanguageModelImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& options) {
  const ModelFamily& family = *family_tensors(model).first;
  family.import_hf(model, weights, options);
}

nlohmann::json hf_config(const config::Config& config, const sources::Dataset& dataset) {
  const ModelFamily& family = model_family(config);
  if (family.hf_config == nullptr) {
    throw UserError(family.no_hf_model);
  }
  return family.hf_config(config, dataset);
}

std::map<std::string, std::string> hf_tokenizer_files(const formats::Tokenizer& tokenizer) {
  if (tokenizer.pieces() != nullptr) {
    const nlohmann::json config{
        {"tokenizer_class", "XLNetTokenizer"},
        {"do_lower_case", false},
        {"remove_space", true},
        {"keep_accents", true}, // NFKD would decompose Hangul; xl keeps accents
    };
    return {{"tokenizer_config.json", config.dump(2) + "\n"}};
  }
  const formats::Vocab* vocab = tokenizer.vocab();
  if (vocab == nullptr || vocab->kind() != formats::VocabKind::kWord) {
    throw UserError(
        "Hugging Face has no tokenizer for a byte vocabulary: only word vocabularies and "
        "SentencePiece models are exported");
  }
  std::string symbols;
  for (int64_t id = 0; id < vocab->size(); ++id) {
    symbols += vocab->token(id) + "\n";
  }
  const nlohmann::json config{
      {"tokenizer_class", "TransfoXLTokenizer"},
      {"lower_case", false},
      {"unk_token", "<unk>"},
      {"eos_token", "<eos>"},
      {"additional_special_tokens", nlohmann::json::array()}, // not HF's <formula>: no such id
  };
  return {{"vocab.txt", symbols}, {"tokenizer_config.json", config.dump(2) + "\n"}};
}

std::map<std::string, torch::Tensor> hf_state(LanguageModelImpl& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& t : hf_tensors(model)) {
    out.emplace(t.name, t.value().detach().to(torch::kCPU).contiguous());
  }
  return out;
}

} // namespace xl::models
