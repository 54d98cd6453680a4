// xl/xl.h over the inference layer: a Model is a TrainedRun that every call reads at once with
// its own state (the scorer's memory, the sampler's decoding cache, a classifier of its own), so
// that threads share one Model and each call gives what it gives alone.
#include "xl/xl.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>

#include "xl/config/config.h"
#include "xl/eval/report.h"
#include "xl/formats/example_reader.h"
#include "xl/infer/classifier.h"
#include "xl/infer/documents.h"
#include "xl/infer/sampler.h"
#include "xl/infer/scorer.h"
#include "xl/models/factory.h"
#include "xl/models/registry.h"
#include "xl/run/logging.h"
#include "xl/run/run_dir.h"
#include "xl/runtime/device.h"
#include "xl/util/files.h"
#include "xl/util/version.h"

namespace xl {

struct Model::State {
  std::shared_ptr<const infer::TrainedRun> run;
};

namespace {

// The library's log level; kOff until set_log_level says otherwise.
std::atomic<LogLevel>& chosen_level() {
  static std::atomic<LogLevel> level{LogLevel::kOff};
  return level;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kOff:
      break;
  }
  return "off";
}

void apply_log_level() {
  static std::mutex lock;
  const std::lock_guard<std::mutex> held(lock);
  run::setup_logging(level_name(chosen_level().load()));
}

// Runs `body`: the caller's mistakes reach it as the UserError they are, anything else as an
// InternalError, each one line.
template <class F>
auto guarded(F&& body) -> decltype(body()) {
  static std::once_flag logging;
  try {
    std::call_once(logging, apply_log_level);
    return body();
  } catch (const Error&) {
    throw;
  } catch (const std::filesystem::filesystem_error& e) {
    const auto said = file_system_refusal(e);
    if (said.empty()) {
      throw InternalError(std::string("internal error: ") + e.what());
    }
    throw UserError(said);
  } catch (const c10::OutOfMemoryError& e) {
    throw UserError(runtime::out_of_memory(e));
  } catch (const c10::Error& e) {
    throw InternalError(std::string("internal error: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw InternalError(std::string("internal error: ") + e.what());
  }
}

// How the library names generation's settings in its messages.
constexpr infer::SampleNames kGenerateOptions{
    "generate()",
    "GenerateOptions::tokens",
    "GenerateOptions::temperature",
    "GenerateOptions::top_k",
    "GenerateOptions::top_p",
    "GenerateOptions::window"};

torch::Device device_of(const RunOptions& options, const config::Config& config) {
  switch (options.device) {
    case Device::kCpu:
      return torch::kCPU;
    case Device::kCuda: {
      const int64_t gpus =
          torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
      if (options.device_index < 0 || options.device_index >= gpus) {
        throw UserError(fmt::format(
            "RunOptions::device kCuda, device_index {}: this machine has {} CUDA device{}",
            options.device_index,
            gpus,
            gpus == 1 ? "" : "s"));
      }
      return {torch::kCUDA, static_cast<c10::DeviceIndex>(options.device_index)};
    }
    case Device::kRunConfig:
      break;
  }
  return runtime::pick_device(config.train);
}

// A score's numbers from its headline term's total.
Score totals_of(
    const infer::TrainedRun& run,
    const models::TermTotal& headline,
    const std::string& qualifier) {
  Score score;
  const auto unit = run.data().unit();
  const auto metric = eval::metric(headline, unit, qualifier);
  score.unit = !metric                    ? Unit::kExampleLoss
      : unit == formats::VocabKind::kByte ? Unit::kBitsPerCharacter
                                          : Unit::kPerplexity;
  score.metric = metric ? metric->name : "loss";
  score.loss = headline.mean();
  score.tokens = headline.count;
  score.perplexity = std::exp(score.loss);
  score.bits_per_character = score.loss / std::log(2.0);
  score.log_likelihood = -headline.sum;
  return score;
}

Score score_of(const infer::TrainedRun& run, const infer::Scored& scored) {
  Score score = totals_of(run, scored.result.headline(), scored.result.qualifier);
  if (scored.reading) {
    score.units = scored.reading->count.units;
    score.unknown = scored.reading->count.unknown;
  }
  score.streams = scored.values.value("streams", int64_t{1});
  if (scored.in_vocabulary && scored.in_vocabulary->tokens > 0) {
    score.in_vocabulary_tokens = scored.in_vocabulary->tokens;
    score.in_vocabulary_perplexity =
        std::exp(scored.in_vocabulary->nll / static_cast<double>(scored.in_vocabulary->tokens));
  }
  if (scored.listing) {
    scored.listing->each_row([&](int64_t index,
                                 const std::string& token,
                                 float log_prob,
                                 const formats::TokenOrigin* origin) {
      score.per_token.push_back(
          {index,
           token,
           static_cast<double>(log_prob),
           origin != nullptr ? origin->offset : -1,
           origin != nullptr ? origin->text : ""});
    });
  }
  return score;
}

Score score_text(
    const infer::TrainedRun& run,
    const sources::UserText& text,
    const ScoreOptions& options) {
  if (options.streams < 1) {
    throw UserError(fmt::format(
        "ScoreOptions::streams {}: expected 1 (the whole text with the memory) or more",
        options.streams));
  }
  if (options.per_token && run.classifier()) {
    throw UserError(fmt::format(
        "ScoreOptions::per_token lists the tokens a language model scores, and {} is a "
        "classifier: classify() gives its predictions",
        run.paths().dir.string()));
  }
  infer::ScoreOptions o;
  o.scoring = {options.streams, options.permutation};
  o.list_tokens = options.per_token;
  return score_of(run, infer::score_text(run, text, o));
}

} // namespace

std::string library_version() {
  return fmt::format("{} ({})", project_version(), version());
}

void set_log_level(LogLevel level) {
  guarded([&] {
    chosen_level() = level;
    apply_log_level();
  });
}

Model::Model(std::shared_ptr<const State> state) : state_(std::move(state)) {}

const Model::State& Model::state() const {
  if (!state_) {
    throw UserError("this xl::Model holds no run (it was moved from): open one into it");
  }
  return *state_;
}

Model Model::open(const std::string& run_dir, const RunOptions& options) {
  return guarded([&] {
    models::model_families(); // the built-in families' config sections, before any config
    run::require_run_folder("open_run", run_dir);
    if (options.threads) {
      if (*options.threads < 1) {
        throw UserError(
            fmt::format("RunOptions::threads {}: expected 1 or more", *options.threads));
      }
      runtime::check_threads(*options.threads, "RunOptions::threads");
    }
    auto config = config::load(run_dir + "/config.yaml", options.overrides);
    const auto device = device_of(options, config);
    if (options.threads) {
      torch::set_num_threads(*options.threads);
    }
    if (options.seed) {
      torch::manual_seed(*options.seed);
    }
    infer::OpenOptions open;
    open.checkpoint = options.checkpoint;
    open.enforce_memory = options.check_memory;
    open.use = "the library's model";
    open.device = device;
    auto state = std::make_shared<State>();
    state->run = infer::TrainedRun::open(std::move(config), run_dir, open);
    return Model(std::move(state));
  });
}

Model open_run(const std::string& run_dir, const RunOptions& options) {
  return Model::open(run_dir, options);
}

std::string Model::family() const {
  return guarded([&] { return state().run->config().model.type.name; });
}

std::string Model::checkpoint() const {
  return guarded([&] { return state().run->checkpoint().string(); });
}

int64_t Model::step() const {
  return guarded([&] { return state().run->step(); });
}

int64_t Model::vocab_size() const {
  return guarded([&] { return state().run->data().vocab_size(); });
}

bool Model::is_classifier() const {
  return guarded([&] { return state().run->classifier(); });
}

Score Model::score(const std::string& text, const ScoreOptions& options) const {
  return guarded([&] {
    return score_text(
        *state().run, {std::nullopt, text, "the text", {options.pretokenized}}, options);
  });
}

Score Model::score_file(const std::string& path, const ScoreOptions& options) const {
  return guarded([&] {
    return score_text(*state().run, {path, {}, path, {options.pretokenized}}, options);
  });
}

std::vector<Score> Model::score_batch(const std::vector<std::string>& texts) const {
  return guarded([&] {
    const infer::TrainedRun& run = *state().run;
    infer::DocumentOptions options;
    options.batch = run.config().eval.batch_size;
    const auto scores = *infer::score_documents(run, texts, options, "classify()");
    std::vector<Score> out;
    for (const auto& document : scores) {
      Score score = totals_of(
          run,
          {"lm", models::TermKind::kTokenNll, 1.0, document.nll, document.tokens},
          document.qualifier);
      score.units = document.count.units;
      score.unknown = document.count.unknown;
      out.push_back(std::move(score));
    }
    return out;
  });
}

Generated Model::generate(
    const std::string& prompt,
    const GenerateOptions& options,
    const TextCallback& on_text) const {
  // The caller's own exception, thrown by on_text, reaches the caller as it is.
  std::exception_ptr thrown;
  Generated out = guarded([&] {
    const infer::TrainedRun& run = *state().run;
    infer::SampleRequest request;
    request.prompt = prompt;
    request.tokens = options.tokens;
    request.sampling = {options.temperature, options.top_k, options.top_p};
    request.seed = options.seed;
    request.use_memory = options.use_memory;
    request.window = options.window;
    request.pretokenized = options.pretokenized;
    infer::check_sample_request(run.config(), request, kGenerateOptions);
    auto plan = infer::plan_sampling(run, request, kGenerateOptions);
    Generated drawn;
    plan.options.stop = [&] { return drawn.stopped; };
    infer::TextStream stream(run.tokenizer().word_vocab("generate()"), plan.ids.back());
    infer::generate(run, plan, 1, [&](const torch::Tensor& ids) {
      const int64_t id = ids[0].item<int64_t>();
      const std::string piece = stream.next(id);
      drawn.ids.push_back(id);
      drawn.text += piece;
      try {
        drawn.stopped = on_text && !on_text(piece);
      } catch (...) {
        thrown = std::current_exception();
        drawn.stopped = true;
      }
    });
    drawn.stopped = drawn.stopped && static_cast<int64_t>(drawn.ids.size()) < options.tokens;
    return drawn;
  });
  if (thrown) {
    std::rethrow_exception(thrown);
  }
  return out;
}

std::vector<Classified> Model::classify(const std::vector<std::string>& texts) const {
  return guarded([&] {
    infer::ExampleClassifier classifier(*state().run, "score()");
    std::vector<Classified> out;
    if (texts.empty()) {
      return out;
    }
    std::vector<formats::LabelledText> examples;
    for (size_t i = 0; i < texts.size(); ++i) {
      if (const auto problem = formats::example_problem(texts[i]); !problem.empty()) {
        throw UserError(fmt::format("classify: text {} of {} {}", i + 1, texts.size(), problem));
      }
      examples.push_back({0, texts[i]});
    }
    const auto probs = *classifier.classify(examples, "the texts to classify");
    const auto p = probs.accessor<double, 2>();
    const auto names = models::class_names(state().run->config());
    for (int64_t e = 0; e < probs.size(0); ++e) {
      Classified c;
      c.label = probs[e].argmax().item<int64_t>();
      c.name = names.empty() ? "" : names.at(static_cast<size_t>(c.label));
      for (int64_t k = 0; k < probs.size(1); ++k) {
        c.probabilities.push_back(p[e][k]);
      }
      out.push_back(std::move(c));
    }
    return out;
  });
}

std::vector<int64_t> Model::encode(const std::string& text) const {
  return guarded([&] { return state().run->tokenizer().encode(text); });
}

std::string Model::decode(const std::vector<int64_t>& ids) const {
  return guarded([&] { return state().run->tokenizer().decode(ids); });
}

} // namespace xl
