#include "xl/models/hf.h"

#include <fmt/format.h>

#include <fstream>
#include <set>

#include "xl/formats/text.h"
#include "xl/models/registry.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"

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

namespace {

namespace fs = std::filesystem;

// tokenizer_config.json beside `file` (empty where there is none), its settings that would make
// HF encode otherwise than xl refused by name.
nlohmann::json hf_tokenizer_config(const fs::path& file) {
  const fs::path path = file.parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return nlohmann::json::object();
  }
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(read_file(path, "tokenizer config"));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not JSON: {}", path.string(), e.what()));
  }
  for (const auto& [key, xl_does] :
       {std::pair{"lower_case", false}, {"do_lower_case", false}, {"keep_accents", true}}) {
    if (config.contains(key) && config[key].is_boolean() && config[key].get<bool>() != xl_does) {
      throw UserError(fmt::format(
          "{}: {} is {}: Hugging Face would encode a text otherwise than xl, which {}",
          path.string(),
          key,
          config[key].dump(),
          xl_does ? "keeps accents" : "keeps case"));
    }
  }
  return config;
}

// TransfoXLTokenizer's vocab.txt: the first word of each line, a symbol seen before skipped, as
// its _build_from_file reads it.
std::shared_ptr<const formats::Tokenizer> read_hf_vocab(const fs::path& file) {
  hf_tokenizer_config(file);
  const std::string text = formats::read_utf8_text(file, "vocabulary");
  std::vector<std::string> symbols;
  std::set<std::string> seen;
  size_t number = 0;
  for (const auto line : formats::split_lines(text)) {
    ++number;
    const auto words = formats::split_words(line);
    if (words.empty()) {
      throw UserError(fmt::format(
          "{}:{}: an empty line, which Hugging Face's TransfoXLTokenizer cannot read either",
          file.string(),
          number));
    }
    if (seen.emplace(words[0]).second) {
      symbols.emplace_back(words[0]);
    } else {
      logger().warn(
          "{}:{}: '{}' again: skipped, as Hugging Face skips it", file.string(), number, words[0]);
    }
  }
  auto vocab =
      formats::Vocab::of_words(std::move(symbols), formats::Tokenization::kWikiText, file.string());
  return std::make_shared<const formats::Tokenizer>(std::move(vocab), file);
}

} // namespace

std::shared_ptr<const formats::Tokenizer> read_hf_tokenizer(const fs::path& path) {
  std::error_code ec;
  const bool folder = fs::is_directory(path, ec);
  // A folder's files by their names; a file given alone by its extension.
  const fs::path pieces = folder ? path / "spiece.model" : path;
  if (folder ? fs::is_regular_file(pieces, ec) : path.extension() == ".model") {
    hf_tokenizer_config(pieces);
    return formats::Tokenizer::load(pieces);
  }
  const fs::path vocab = folder ? path / "vocab.txt" : path;
  if (fs::is_regular_file(vocab, ec)) {
    std::string head(9, '\0');
    std::ifstream(vocab, std::ios::binary).read(head.data(), 9);
    return head == "#xl-vocab" ? formats::Tokenizer::load(vocab) : read_hf_vocab(vocab);
  }
  if (folder && fs::exists(path / "vocab.pkl", ec)) {
    throw UserError(fmt::format(
        "{}/vocab.pkl is a Python pickle, which xl does not read: write its symbols as "
        "vocab.txt, one a line in id order: python -c \"from transformers import "
        "TransfoXLTokenizer as T; t = T.from_pretrained('{}'); open('{}/vocab.txt', 'w', "
        "encoding='utf-8').write(''.join(s + '\\n' for s in t.idx2sym))\"",
        path.string(),
        path.string(),
        path.string()));
  }
  throw UserError(fmt::format(
      "{}: {}; expected a Hugging Face folder with TransfoXLTokenizer's vocab.txt or "
      "XLNetTokenizer's spiece.model (or the file itself)",
      path.string(),
      fs::exists(path, ec) ? "holds neither" : "no such file or folder"));
}

std::map<std::string, torch::Tensor> hf_state(LanguageModelImpl& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& t : hf_tensors(model)) {
    out.emplace(t.name, t.value().detach().to(torch::kCPU).contiguous());
  }
  return out;
}

} // namespace xl::models
