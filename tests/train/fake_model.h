// A language model of the tests' own, not a family (FakeModel), and a corpus of digits with the
// tiny Transformer-XL config over it: the trainer's and the evaluator's tests run on them.
#pragma once

#include <torch/torch.h>

#include <limits>
#include <set>
#include <string>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/language_model.h"

namespace xl::test {

// Embedding -> linear head over the vocabulary, plus a classification head. Terms: "lm" (token
// NLL of the counted targets), "even" (token NLL of the even target rows, weight `even_weight`),
// "correct" (accuracy count, weight 0). The memory is the mean of the last batch's embeddings.
// Forward calls numbered in `nan_at` (counted in training mode) return a NaN "lm".
class FakeModel : public models::LanguageModelImpl {
 public:
  FakeModel(int64_t vocab, double even_weight, std::set<int> nan_at = {})
      : even_weight_(even_weight), nan_at_(std::move(nan_at)) {
    emb = register_module("emb", torch::nn::Embedding(vocab, 8));
    head = register_module("head", torch::nn::Linear(8, vocab));
    cls = register_module("cls", torch::nn::Linear(8, 3));
  }
  void reset_parameters() override {
    for (auto& p : parameters()) {
      torch::NoGradGuard no_grad;
      p.normal_(0.0, 0.3);
    }
  }
  models::ModelOutput forward(
      const sources::Batch& batch,
      const nn::Memory& mems,
      const models::ForwardArgs& /*args*/) override {
    auto h = emb(batch.tokens); // [L, B, 8]
    if (!mems.empty()) {
      h = h + mems[0];
    }
    const int64_t t = batch.targets.size(0);
    const auto logp = torch::log_softmax(head(h.narrow(0, h.size(0) - t, t)), -1);
    auto token = logp.gather(2, batch.targets.unsqueeze(2)).squeeze(2); // [T, B]
    auto counted = batch.target_mask.defined() ? batch.target_mask
                                               : torch::ones_like(batch.targets, torch::kBool);
    const auto even = counted.slice(0, 0, t, 2);
    models::ModelOutput out;
    out.terms.push_back(
        {"lm",
         -token.masked_select(counted).sum(),
         batch.n_targets,
         1.0,
         models::TermKind::kTokenNll});
    out.terms.push_back(
        {"even",
         -token.slice(0, 0, t, 2).masked_select(even).sum(),
         even.sum().item<int64_t>(),
         even_weight_,
         models::TermKind::kTokenNll});
    out.terms.push_back(
        {"correct",
         (logp.argmax(-1) == batch.targets).masked_select(counted).sum().to(torch::kFloat),
         batch.n_targets,
         0.0,
         models::TermKind::kAccuracy});
    out.logits = cls(h.mean(0));
    out.mems = {h.mean(0, true).detach()};
    if (is_training() && nan_at_.count(++calls_) > 0) {
      out.terms[0].sum = out.terms[0].sum * std::numeric_limits<float>::quiet_NaN();
    }
    return out;
  }

  torch::nn::Embedding emb{nullptr};
  torch::nn::Linear head{nullptr};
  torch::nn::Linear cls{nullptr};

 private:
  double even_weight_;
  std::set<int> nan_at_;
  int calls_ = 0;
};

// A corpus of the digits 0..9 repeated, in a fresh folder, with the tiny config over it.
struct DigitsCorpus {
  TempDir dir;
  config::Config config;
  DigitsCorpus() {
    prepare_digits_corpus(dir.path());
    config = config::load(
        std::string(kSourceDir) + "/configs/transformer_xl/tiny.yaml",
        {"data.dir=" + (dir / "data").string(),
         "run.dir=" + (dir / "run").string(),
         "model.transformer_xl.cutoffs=[]",
         "model.transformer_xl.div_val=1",
         "model.dropout=0.0",
         "model.dropatt=0.0"});
  }
};

inline std::shared_ptr<FakeModel> fake_model(int64_t vocab, double even_weight, uint64_t seed = 1) {
  torch::manual_seed(seed);
  auto model = std::make_shared<FakeModel>(vocab, even_weight);
  model->reset_parameters();
  return model;
}

} // namespace xl::test
