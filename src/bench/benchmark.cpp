#include "xl/bench/benchmark.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <chrono>

#include "xl/data/vocab.h"
#include "xl/models/factory.h"
#include "xl/train/autocast.h"
#include "xl/train/evaluator.h"
#include "xl/train/optimizer.h"
#include "xl/train/session.h"
#include "xl/util/error.h"

namespace xl::bench {

namespace {

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) {
    torch::cuda::synchronize();
  }
}

void reset_peak(const torch::Device& device) {
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(
        device.index() < 0 ? 0 : device.index());
  }
}

// Peak bytes: the CUDA allocator's peak since reset_peak, or the process's peak
// RSS.
double peak_bytes(const torch::Device& device) {
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(
        device.index() < 0 ? 0 : device.index());
    return static_cast<double>(stats.allocated_bytes[0].peak);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

// Times `iteration` (returning the tokens it processed) over warmup + steps
// calls.
template <class F>
nlohmann::json measure(
    const std::string& mode,
    const BenchOptions& options,
    const torch::Device& device,
    F iteration) {
  for (int64_t i = 0; i < options.warmup; ++i) {
    iteration();
  }
  synchronize(device);
  reset_peak(device);
  int64_t tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < options.steps; ++i) {
    tokens += iteration();
  }
  synchronize(device);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  nlohmann::json record = {
      {"mode", mode},
      {"tokens_per_s", static_cast<double>(tokens) / seconds},
      {"ms_per_iteration",
       1000.0 * seconds / static_cast<double>(options.steps)},
      {"peak_memory_mib", peak_bytes(device) / (1024.0 * 1024.0)},
      {"iterations", options.steps}};
  spdlog::info(
      "{:8s} {:>10.0f} tok/s  {:>9.2f} ms/it  peak {:.0f} MiB",
      mode,
      record["tokens_per_s"].get<double>(),
      record["ms_per_iteration"].get<double>(),
      record["peak_memory_mib"].get<double>());
  return record;
}

bool wants(const BenchOptions& options, const std::string& mode) {
  return ("," + options.modes + ",").find("," + mode + ",") !=
      std::string::npos;
}

} // namespace

nlohmann::json run_benchmark(
    const config::Config& c,
    const BenchOptions& options) {
  int64_t n_token = options.n_token;
  if (n_token <= 0) {
    n_token =
        data::Vocab::load(std::filesystem::path(c.data.dir) / c.data.vocab)
            .size();
  }
  if (c.train.threads > 0) {
    torch::set_num_threads(static_cast<int>(c.train.threads));
  }
  torch::manual_seed(static_cast<uint64_t>(c.train.seed));
  const torch::Device device = train::pick_device(c.train.device);
  auto model = models::build_model(c.model, n_token);
  model->to(device);
  const auto random_tokens = [&](int64_t len, int64_t batch) {
    return torch::randint(
        n_token, {len, batch}, torch::dtype(torch::kLong).device(device));
  };
  nlohmann::json results = nlohmann::json::array();
  const std::string header = fmt::format(
      "{} parameters, vocabulary {}, {} threads, device {}{}",
      models::count_parameters(*model),
      n_token,
      torch::get_num_threads(),
      device.str(),
      c.train.bf16 ? ", bf16 autocast" : "");
  spdlog::info("{}", header);

  if (wants(options, "train")) {
    model->train();
    auto optimizer = train::make_optimizer(c.train, model->parameters());
    const int64_t chunk = c.train.batch_size / c.train.batch_chunk;
    std::vector<nn::Memory> mems(static_cast<size_t>(c.train.batch_chunk));
    auto record = measure("train", options, device, [&] {
      optimizer->zero_grad();
      for (int64_t k = 0; k < c.train.batch_chunk; ++k) {
        models::LMOutput out;
        {
          train::AutocastGuard autocast(device, c.train.bf16);
          out = model->forward(
              random_tokens(c.train.tgt_len, chunk),
              random_tokens(c.train.tgt_len, chunk),
              mems[static_cast<size_t>(k)]);
        }
        (out.nll_sum / static_cast<double>(out.count * c.train.batch_chunk))
            .backward();
        mems[static_cast<size_t>(k)] = std::move(out.mems);
      }
      if (c.train.clip > 0) {
        torch::nn::utils::clip_grad_norm_(model->parameters(), c.train.clip);
      }
      optimizer->step();
      return c.train.tgt_len * c.train.batch_size;
    });
    record["batch_size"] = c.train.batch_size;
    record["tgt_len"] = c.train.tgt_len;
    record["mem_len"] = c.model.mem_len;
    results.push_back(record);
  }

  const auto settings = train::eval_settings(c, false);
  if (wants(options, "eval")) {
    const auto saved = model->lengths();
    model->set_lengths(settings.lengths);
    model->eval();
    torch::NoGradGuard no_grad;
    // Start from a full memory, as in the middle of an evaluation.
    nn::Memory mems;
    {
      train::AutocastGuard autocast(device, c.train.bf16);
      const int64_t fill = std::max<int64_t>(settings.lengths.mem_len, 1);
      mems = model
                 ->forward(
                     random_tokens(fill, settings.batch_size),
                     random_tokens(1, settings.batch_size),
                     {})
                 .mems;
    }
    auto record = measure("eval", options, device, [&] {
      train::AutocastGuard autocast(device, c.train.bf16);
      auto out = model->forward(
          random_tokens(settings.tgt_len, settings.batch_size),
          random_tokens(settings.tgt_len, settings.batch_size),
          mems);
      mems = std::move(out.mems);
      return settings.tgt_len * settings.batch_size;
    });
    record["batch_size"] = settings.batch_size;
    record["tgt_len"] = settings.tgt_len;
    record["mem_len"] = settings.lengths.mem_len;
    record["clamp_len"] = settings.lengths.clamp_len;
    results.push_back(record);
    model->set_lengths(saved);
  }

  if (wants(options, "vanilla")) {
    auto lengths = model->lengths();
    lengths.mem_len = 0;
    lengths.same_length = false;
    model->set_lengths(lengths);
    model->eval();
    torch::NoGradGuard no_grad;
    const int64_t window = c.train.tgt_len;
    auto record = measure("vanilla", options, device, [&] {
      train::AutocastGuard autocast(device, c.train.bf16);
      model->forward(
          random_tokens(window, settings.batch_size),
          random_tokens(1, settings.batch_size),
          {});
      return settings.batch_size; // one scored token per window
    });
    record["batch_size"] = settings.batch_size;
    record["window"] = window;
    results.push_back(record);
  }
  return nlohmann::json{{"setup", header}, {"results", results}};
}

} // namespace xl::bench
