// A fourth model family that exists only in this file: a bigram language model (an embedding
// and a softmax over the next token). Registered at run time, with a config section of its own
// (model.bigram) and a rule of its own, it is trained, resumed, evaluated and benchmarked by the
// same library calls as the built-in families, without a line of their code knowing it: what a
// new family needs is its model and its descriptor (models/family.h).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "test_util.h"
#include "xl/app/eval.h"
#include "xl/app/train.h"
#include "xl/bench/benchmark.h"
#include "xl/config/config.h"
#include "xl/config/visitors.h"
#include "xl/models/factory.h"
#include "xl/models/kit.h"
#include "xl/models/memory_estimate.h"
#include "xl/models/registry.h"
#include "xl/util/error.h"

namespace xl::models {
namespace {

// model.bigram: the family's own keys.
struct BigramConfig {
  bool bias = true;

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    v("bias", s.bias, "a bias on the output projection");
  }
};

// The bigram has no dropout to apply: a config that asks for some is refused.
void validate_bigram(const config::Config& c) {
  if (c.model.dropout != 0.0) {
    config::fail_rule(c, "model.dropout", "the bigram has no dropout: set 0");
  }
}

// log p(next | current) from a table of d_model-wide rows and one output projection.
class BigramImpl : public LanguageModelImpl {
 public:
  BigramImpl(int64_t n_token, int64_t d_model, bool bias)
      : embedding(register_module("embedding", torch::nn::Embedding(n_token, d_model))),
        out(register_module(
            "out",
            torch::nn::Linear(torch::nn::LinearOptions(d_model, n_token).bias(bias)))) {}

  // tokens [L, B], targets [T <= L, B] -> the "lm" term over the last T positions.
  ModelOutput forward(
      const sources::Batch& batch,
      const nn::Memory& /*mems*/,
      const ForwardArgs& args) override {
    check_lm_batch(batch, args, "bigram");
    const auto log_probs = torch::log_softmax(out(embedding(batch.tokens)), -1); // [L, B, V]
    ModelOutput output;
    if (args.next_token) {
      output.next_log_probs = log_probs[-1];
      return output;
    }
    const int64_t t = batch.targets.size(0);
    const auto scored = log_probs.narrow(0, log_probs.size(0) - t, t);
    add_lm_term(output, batch, scored.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1), args);
    return output;
  }

  void reset_parameters() override {
    torch::NoGradGuard no_grad;
    embedding->weight.normal_(0.0, 0.02);
    out->weight.normal_(0.0, 0.02);
    if (out->bias.defined()) {
      out->bias.zero_();
    }
  }

  torch::nn::Embedding embedding;
  torch::nn::Linear out;
};

ModelFamily bigram_family() {
  ModelFamily f;
  f.name = "bigram";
  f.config.section = config::section_of<BigramConfig>();
  f.config.validate = validate_bigram;
  f.config.carries_memory = false; // a bigram sees one token: nothing to carry
  f.build = [](const config::Config& c, int64_t n_token) -> LanguageModel {
    auto model = std::make_shared<BigramImpl>(
        n_token, c.model.d_model, c.model.section<BigramConfig>().bias);
    model->reset_parameters();
    return model;
  };
  f.open_dataset = [](const config::Config& c, std::shared_ptr<const formats::Tokenizer> t) {
    return sources::open_token_dataset(c, std::move(t));
  };
  f.random_dataset = [](const config::Config& c, int64_t n_token, int64_t size) {
    return sources::random_token_dataset(c, n_token, size);
  };
  f.memory_shape = [](const config::Config& c, int64_t n_token) {
    const auto& m = c.model;
    MemoryShape shape(0, nn::DecoderLayerOptions(attention_options(m), m.d_inner));
    const auto v = static_cast<double>(n_token);
    const auto d = static_cast<double>(m.d_model);
    shape.parameters = 2 * v * d + v;
    shape.largest = v * d;
    shape.classes = v;
    shape.training_rows = static_cast<double>(c.train.tgt_len);
    return shape;
  };
  // One d x V product per token forward, twice that backward.
  f.training_flops = [](const config::Config& c, int64_t n_token) {
    return 3.0 * 2 * static_cast<double>(c.model.d_model * n_token);
  };
  f.evaluation_flops = [](const config::Config& c, int64_t n_token, int64_t, int64_t, bool) {
    return 2.0 * static_cast<double>(c.model.d_model * n_token);
  };
  return f;
}

std::vector<nlohmann::json> records(const std::filesystem::path& metrics) {
  std::vector<nlohmann::json> out;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

TEST(FourthFamily, RegisteredAtRunTimeItTrainsResumesEvaluatesAndBenchmarks) {
  register_model_family(bigram_family());
  // The registry refuses a name taken and a descriptor without what every caller needs.
  EXPECT_THROW(register_model_family(bigram_family()), UserError);
  ModelFamily empty;
  empty.name = "empty";
  EXPECT_THROW(register_model_family(empty), UserError);

  // Text where each digit is followed by the next: a bigram model learns it exactly.
  test::TempDir dir;
  const auto data_dir = test::prepare_digits_corpus(dir.path());
  const std::string config_file =
      test::write_file(
          dir / "bigram.yaml",
          "model: {type: bigram, d_model: 16, bigram: {bias: false}}\n"
          "data: {dir: " +
              (dir / "data").string() +
              "}\n"
              "run: {dir: " +
              (dir / "run").string() +
              "}\n"
              "train: {seed: 3, threads: 1, batch_size: 4, tgt_len: 8, max_step: 60, lr: 0.05,\n"
              "        log_interval: 1, eval_interval: 30, max_eval_steps: 3}\n"
              "eval: {batch_size: 4, tgt_len: 8, mode: vanilla}\n")
          .string();
  const auto config = config::load(config_file, {});
  EXPECT_EQ(config.model.type.name, "bigram");
  EXPECT_FALSE(config.model.section<BigramConfig>().bias);
  EXPECT_EQ(build_model(config, 12)->named_parameters().size(), 2u);
  // Its section is as strict as the built-in ones, its rule holds, and a family section of
  // another type is still refused.
  const auto error_of = [&](const std::string& override) {
    try {
      config::load(config_file, {override});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(
      error_of("model.bigram.biass=true").find("unknown key 'model.bigram.biass'"),
      std::string::npos);
  EXPECT_NE(
      error_of("model.dropout=0.1").find("model.dropout: the bigram has no dropout"),
      std::string::npos);
  EXPECT_NE(
      error_of("model.xlnet.n_class=2").find("these keys are for model.type xlnet"),
      std::string::npos);
  // Without memory it is evaluated on windows: the config says so as for every such family.
  EXPECT_NE(
      error_of("eval.mode=memory")
          .find("eval.mode: model.type bigram has no memory to carry between segments: set "
                "vanilla"),
      std::string::npos);
  EXPECT_NE(
      config::schema_reference().find("| `model.bigram.bias` | boolean | `true` |"),
      std::string::npos);

  // Stopped at step 30 and resumed, as xl-train --resume does.
  ASSERT_EQ(app::run_training(config, false, 30), 0);
  ASSERT_EQ(app::run_training(config, true), 0);
  // The run's resolved config holds the section, and reloads with it.
  const auto resolved = dir / "run" / "config.yaml";
  ASSERT_TRUE(std::filesystem::exists(resolved));
  EXPECT_FALSE(config::load(resolved.string()).model.section<BigramConfig>().bias);
  const auto metrics = records(dir / "run" / "metrics.jsonl");
  double first = 0;
  double last = 0;
  for (const auto& r : metrics) {
    if (r.value("split", "") == "train") {
      (first == 0 ? first : last) = r["loss"].get<double>();
    }
  }
  EXPECT_GT(first, 2.0); // about log 12 (10 digits, <eos>, <unk>) at the start
  EXPECT_LT(last, 0.5);  // then every next digit nearly certain

  app::EvalRequest request;
  request.run_dir = (dir / "run").string();
  ASSERT_EQ(app::run_evaluation(config, request), 0);
  const auto evaluated = records(dir / "run" / "metrics.jsonl").back();
  EXPECT_EQ(evaluated["split"], "test");
  EXPECT_LT(evaluated["loss"].get<double>(), 0.5);

  bench::BenchOptions bench;
  bench.n_token = 50;
  bench.warmup = 1;
  bench.steps = 2;
  bench.modes = "train,vanilla";
  const auto measured = bench::run_benchmark(config, bench)["results"];
  ASSERT_EQ(measured.size(), 2u);
  for (const auto& record : measured) {
    EXPECT_GT(record["tokens_per_s"].get<double>(), 0.0);
    EXPECT_GT(record["estimated_memory_mib"].get<double>(), 0.0);
  }
  EXPECT_DOUBLE_EQ(measured[0]["model_flops_per_token"].get<double>(), 3.0 * 2 * 16 * 50);
}

} // namespace
} // namespace xl::models
