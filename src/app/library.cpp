// xl/xl.h: the library's API over what the commands run. Opening a run is xl-eval's preamble
// (the run's config with overrides, its data, the checkpoint checked against both); scoring is
// xl-eval --file's evaluate_request, generating xl-sample's plan_sampling and TextStream,
// classifying xl-predict's ExampleClassifier, so that each gives the commands' numbers.
#include "xl/xl.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <limits>

#include "xl/app/cli.h"
#include "xl/app/eval.h"
#include "xl/app/predict.h"
#include "xl/app/sample.h"
#include "xl/app/trained_model.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/models/registry.h"
#include "xl/run/logging.h"
#include "xl/run/run_dir.h"
#include "xl/runtime/device.h"
#include "xl/util/files.h"
#include "xl/util/scratch_file.h"
#include "xl/util/version.h"

namespace xl {

struct Model::State {
  config::Config config;
  std::string run_dir;
  std::unique_ptr<sources::Dataset> dataset;
  torch::Device device = torch::kCPU;
  app::TrainedModel trained;
};

namespace {

std::string& log_level() {
  static std::string level = "off";
  return level;
}

// Runs `body`: every failure reaches the caller as the UserError the API documents, with the
// line a command would print (an internal error says so).
template <class F>
auto guarded(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const UserError&) {
    throw;
  } catch (const std::filesystem::filesystem_error& e) {
    const auto said = app::file_system_refusal(e);
    throw UserError(said.empty() ? std::string("internal error: ") + e.what() : said);
  } catch (const c10::Error& e) {
    throw UserError(std::string("internal error: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw UserError(std::string("internal error: ") + e.what());
  }
}

// A file in scratch space, removed when it goes: a text held in memory is scored as a file.
class ScratchText {
 public:
  explicit ScratchText(const std::string& text) {
    static std::atomic<int64_t> next{0};
    path_ = scratch_dir() / fmt::format("xl-text-{}-{}.txt", ::getpid(), next++);
    atomic_write(path_, text);
  }
  ~ScratchText() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  ScratchText(const ScratchText&) = delete;
  ScratchText& operator=(const ScratchText&) = delete;
  const std::filesystem::path& path() const {
    return path_;
  }

 private:
  std::filesystem::path path_;
};

Score score_of(const app::Evaluated& done, formats::VocabKind unit) {
  Score score;
  score.unit = unit == formats::VocabKind::kByte ? "bpc" : "ppl";
  score.loss = done.result.loss();
  score.tokens = done.result.tokens();
  score.perplexity = std::exp(score.loss);
  score.bits_per_character = score.loss / std::log(2.0);
  score.log_likelihood = -score.loss * static_cast<double>(score.tokens);
  if (done.reading) {
    score.units = done.reading->count.units;
    score.unknown = done.reading->count.unknown;
  }
  if (done.listing) {
    done.listing->each_row([&](int64_t index, const std::string& token, float log_prob) {
      score.per_token.push_back({index, token, static_cast<double>(log_prob)});
    });
  }
  return score;
}

} // namespace

std::string library_version() {
  return fmt::format("{} ({})", project_version(), version());
}

void set_log_level(const std::string& level) {
  guarded([&] {
    if (level != "off" && level != "error" && level != "warn" && level != "info" &&
        level != "debug") {
      throw UserError(fmt::format(
          "set_log_level: expected off, error, warn, info or debug, found '{}'", level));
    }
    log_level() = level;
    run::setup_logging(level);
  });
}

Model::Model(std::shared_ptr<State> state) : state_(std::move(state)) {}

Model Model::open(const std::string& run_dir, const RunOptions& options) {
  return guarded([&] {
    run::setup_logging(log_level());
    models::model_families(); // the built-in families' config sections, before any config
    std::error_code ec;
    if (!std::filesystem::is_directory(run_dir, ec)) {
      throw UserError(fmt::format(
          "{}: {}; name a run directory (the folder holding config.yaml and checkpoints/)",
          run_dir,
          std::filesystem::exists(run_dir, ec) ? "a file, not a folder" : "no such folder"));
    }
    auto state = std::make_shared<State>();
    state->run_dir = run_dir;
    state->config = config::load(run_dir + "/config.yaml", options.overrides);
    runtime::setup_runtime(state->config.train);
    state->dataset = models::open_dataset(state->config);
    state->device = runtime::pick_device(state->config.train);
    state->trained = app::load_trained_model(
        state->config,
        run::paths_of(run_dir),
        options.checkpoint,
        *state->dataset,
        state->device,
        options.check_memory,
        "the library's model");
    return Model(std::move(state));
  });
}

Model open_run(const std::string& run_dir, const RunOptions& options) {
  return Model::open(run_dir, options);
}

std::string Model::family() const {
  return state_->config.model.type.name;
}

std::string Model::checkpoint() const {
  return state_->trained.checkpoint.string();
}

int64_t Model::step() const {
  return state_->trained.step;
}

int64_t Model::vocab_size() const {
  return state_->dataset->vocab_size();
}

bool Model::is_classifier() const {
  return state_->dataset->labelled();
}

Score Model::score_file(const std::string& path, const ScoreOptions& options) const {
  return guarded([&] {
    app::EvalRequest request;
    request.run_dir = state_->run_dir;
    request.file = path;
    const auto done = app::evaluate_request(
        state_->config,
        request,
        app::check_eval_outputs(request),
        *state_->dataset,
        state_->trained,
        state_->device,
        options.per_token);
    return score_of(done, state_->dataset->unit());
  });
}

Score Model::score(const std::string& text, const ScoreOptions& options) const {
  return guarded([&] {
    const ScratchText file(text);
    return score_file(file.path().string(), options);
  });
}

Generated Model::generate(
    const std::string& prompt,
    const GenerateOptions& options,
    const std::function<void(const std::string&)>& on_text) const {
  return guarded([&] {
    app::SampleRequest request;
    request.run_dir = state_->run_dir;
    request.prompt = prompt;
    request.tokens = options.tokens;
    request.temperature = options.temperature;
    request.top_k = options.top_k;
    request.top_p = options.top_p;
    if (options.seed > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw UserError(fmt::format("seed {}: expected at most 2^63 - 1", options.seed));
    }
    request.seed = static_cast<int64_t>(options.seed);
    request.no_memory = !options.use_memory;
    request.window = options.window;
    app::check_sample_request(state_->config, request);
    const formats::Vocab& vocab = state_->dataset->text_vocab();
    auto& model = *state_->trained.model;
    const auto plan =
        app::plan_sampling(state_->config, request, vocab, prompt, model, state_->device);
    app::TextStream stream(vocab, plan.ids.back());
    Generated out;
    eval::generate(
        model, torch::tensor(plan.ids).unsqueeze(1), plan.options, [&](const torch::Tensor& drawn) {
          const int64_t id = drawn[0].item<int64_t>();
          const std::string piece = stream.next(id);
          out.ids.push_back(id);
          out.text += piece;
          if (on_text) {
            on_text(piece);
          }
        });
    return out;
  });
}

std::vector<Classified> Model::classify(const std::vector<std::string>& texts) const {
  return guarded([&] {
    if (!state_->dataset->labelled()) {
      throw UserError(fmt::format(
          "classify: {} is a language model, not a classifier: score texts with score()",
          state_->run_dir));
    }
    std::vector<formats::LabelledText> examples;
    for (const auto& text : texts) {
      examples.push_back({0, text});
    }
    app::ExampleClassifier classifier(
        *state_->dataset, *state_->trained.model, state_->device, state_->config.train.bf16);
    std::vector<Classified> out;
    if (examples.empty()) {
      return out;
    }
    const auto probs = *classifier.classify(examples, "the texts to classify");
    const auto p = probs.accessor<double, 2>();
    for (int64_t e = 0; e < probs.size(0); ++e) {
      Classified c;
      c.label = probs[e].argmax().item<int64_t>();
      for (int64_t k = 0; k < probs.size(1); ++k) {
        c.probabilities.push_back(p[e][k]);
      }
      out.push_back(std::move(c));
    }
    return out;
  });
}

std::vector<int64_t> Model::encode(const std::string& text) const {
  return guarded([&] { return state_->dataset->encode_text(text); });
}

std::string Model::decode(const std::vector<int64_t>& ids) const {
  return guarded([&] {
    for (const int64_t id : ids) {
      if (id < 0 || id >= state_->dataset->vocab_size()) {
        throw UserError(fmt::format(
            "decode: id {} is outside the vocabulary of {}", id, state_->dataset->vocab_size()));
      }
    }
    return state_->dataset->decode_ids(ids);
  });
}

} // namespace xl
