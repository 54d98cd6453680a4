#include "xl/train/training_state.h"

#include <fmt/format.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include <utility>

#include "xl/config/config.h"
#include "xl/io/archive.h"
#include "xl/util/error.h"
#include "xl/util/generator.h"

namespace xl::train {

namespace {

// The loop's keys, once: `io` writes (LoopWriter, a const LoopState) or reads (LoopReader) each.
template <typename Io, typename Loop>
void visit_loop(Io& io, Loop& loop) {
  io.number("train.best_valid", loop.best_valid);
  io.count("train.bad_streak", loop.bad_streak);
  io.count("train.skipped", loop.skipped);
  io.totals("train.window", loop.window);
  io.newer_count("train.stale_validations", loop.stale_validations);
}

struct LoopWriter {
  torch::serialize::OutputArchive& archive;
  void number(const std::string& key, double value) {
    io::write_double(archive, key, value);
  }
  void count(const std::string& key, int64_t value) {
    io::write_int(archive, key, value);
  }
  void newer_count(const std::string& key, int64_t value) {
    io::write_int(archive, key, value);
  }
  void totals(const std::string& prefix, const std::vector<models::TermTotal>& totals) {
    io::write_int(archive, prefix + ".terms", static_cast<int64_t>(totals.size()));
    for (size_t i = 0; i < totals.size(); ++i) {
      const std::string key = fmt::format("{}.{}.", prefix, i);
      io::write_string(archive, key + "name", totals[i].name);
      io::write_int(archive, key + "kind", static_cast<int64_t>(totals[i].kind));
      io::write_double(archive, key + "weight", totals[i].weight);
      io::write_double(archive, key + "sum", totals[i].sum);
      io::write_int(archive, key + "count", totals[i].count);
    }
  }
};

struct LoopReader {
  torch::serialize::InputArchive& archive;
  void number(const std::string& key, double& value) {
    value = io::read_double(archive, key);
  }
  void count(const std::string& key, int64_t& value) {
    value = io::read_int(archive, key);
  }
  // A key that checkpoints of earlier versions lack: 0 there.
  void newer_count(const std::string& key, int64_t& value) {
    value = io::read_int_or(archive, key, 0);
  }
  void totals(const std::string& prefix, std::vector<models::TermTotal>& totals) {
    totals.assign(static_cast<size_t>(io::read_int(archive, prefix + ".terms")), {});
    for (size_t i = 0; i < totals.size(); ++i) {
      const std::string key = fmt::format("{}.{}.", prefix, i);
      totals[i].name = io::read_string(archive, key + "name");
      totals[i].kind = static_cast<models::TermKind>(io::read_int(archive, key + "kind"));
      totals[i].weight = io::read_double(archive, key + "weight");
      totals[i].sum = io::read_double(archive, key + "sum");
      totals[i].count = io::read_int(archive, key + "count");
    }
  }
};

void write_memory(torch::serialize::OutputArchive& archive, const std::vector<nn::Memory>& mems) {
  io::write_int(archive, "mems.chunks", static_cast<int64_t>(mems.size()));
  for (size_t c = 0; c < mems.size(); ++c) {
    io::write_int(archive, fmt::format("mems.{}.layers", c), static_cast<int64_t>(mems[c].size()));
    for (size_t l = 0; l < mems[c].size(); ++l) {
      archive.write(fmt::format("mems.{}.{}", c, l), mems[c][l]);
    }
  }
}

std::vector<nn::Memory> read_memory(
    torch::serialize::InputArchive& archive,
    const torch::Device& device) {
  std::vector<nn::Memory> mems(static_cast<size_t>(io::read_int(archive, "mems.chunks")));
  for (size_t c = 0; c < mems.size(); ++c) {
    mems[c].resize(static_cast<size_t>(io::read_int(archive, fmt::format("mems.{}.layers", c))));
    for (size_t l = 0; l < mems[c].size(); ++l) {
      archive.read(fmt::format("mems.{}.{}", c, l), mems[c][l]);
      mems[c][l] = mems[c][l].to(device);
    }
  }
  return mems;
}

// rng.<kind> for rank 0, rng.<kind>.<r> for the others.
std::string rng_key(const std::string& kind, size_t rank) {
  return rank == 0 ? "rng." + kind : fmt::format("rng.{}.{}", kind, rank);
}

void write_rng(
    torch::serialize::OutputArchive& archive,
    const std::string& kind,
    const std::vector<torch::Tensor>& states) {
  for (size_t r = 0; r < states.size(); ++r) {
    archive.write(rng_key(kind, r), states[r]);
  }
}

} // namespace

RankStates gather_rank_states(
    const std::vector<nn::Memory>& mems,
    const torch::Device& device,
    DataParallel* parallel) {
  RankStates states{mems, {util::generator_state(at::detail::getDefaultCPUGenerator())}, {}};
  if (device.is_cuda()) {
    states.cuda_rng = {util::generator_state(at::globalContext().defaultGenerator(device))};
  }
  if (parallel == nullptr) {
    return states;
  }
  auto& group = parallel->group();
  std::vector<nn::Memory> all(static_cast<size_t>(group.size()) * mems.size());
  for (size_t c = 0; c < mems.size(); ++c) {
    for (const auto& layer : mems[c]) {
      const auto parts = group.all_gather(layer);
      for (size_t r = 0; r < parts.size(); ++r) {
        all[r * mems.size() + c].push_back(parts[r]);
      }
    }
  }
  states.mems = std::move(all);
  states.cpu_rng = group.all_gather(states.cpu_rng.front());
  if (device.is_cuda()) {
    states.cuda_rng = group.all_gather(states.cuda_rng.front());
  }
  return states;
}

void write_training_state(
    torch::serialize::OutputArchive& archive,
    const TrainingParts& parts,
    const RankStates& ranks) {
  io::write_module(archive, "model", parts.model);
  torch::serialize::OutputArchive optimizer_archive;
  parts.optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  parts.schedule.save(archive);
  parts.source.save(archive);
  write_memory(archive, ranks.mems);
  io::write_int(archive, "train.world_size", static_cast<int64_t>(ranks.cpu_rng.size()));
  LoopWriter writer{archive};
  visit_loop(writer, std::as_const(parts.loop));
  write_rng(archive, "cpu", ranks.cpu_rng);
  write_rng(archive, "cuda", ranks.cuda_rng);
}

std::vector<nn::Memory> read_training_state(
    torch::serialize::InputArchive& archive,
    const TrainingParts& parts,
    int rank,
    int ranks,
    const torch::Device& device,
    const std::string& file) {
  // Past the checksum only a file written by another program can lack an entry or hold one
  // of another type; LibTorch reports those as a c10::Error.
  try {
    io::read_module(archive, "model", parts.model, file);
    parts.model.to(device);
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    parts.optimizer.load(optimizer_archive);
    parts.schedule.load(archive);
    parts.source.load(archive);
    // A run of R ranks resumes on R ranks: each needs its own memories and random stream.
    c10::IValue saved_ranks;
    const int64_t saved =
        archive.try_read("train.world_size", saved_ranks) ? saved_ranks.toInt() : 1;
    if (saved != ranks) {
      throw UserError(fmt::format(
          "{} was written by a run of {} process{}; resume it with {} (torchrun "
          "--nproc-per-node and --nnodes), or start a new run from its weights with "
          "train.init_from",
          file,
          saved,
          saved == 1 ? "" : "es",
          saved));
    }
    const auto mems = read_memory(archive, device);
    const size_t per_rank = mems.size() / static_cast<size_t>(ranks);
    LoopReader reader{archive};
    visit_loop(reader, parts.loop);
    torch::Tensor rng;
    archive.read(rng_key("cpu", static_cast<size_t>(rank)), rng);
    util::set_generator_state(at::detail::getDefaultCPUGenerator(), rng);
    if (device.is_cuda()) {
      archive.read(rng_key("cuda", static_cast<size_t>(rank)), rng);
      util::set_generator_state(at::globalContext().defaultGenerator(device), rng);
    }
    return std::vector<nn::Memory>{
        mems.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(rank) * per_rank),
        mems.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(rank + 1) * per_rank)};
  } catch (const c10::Error& e) {
    throw UserError(fmt::format(
        "cannot read the training state in {} (written by another program?): {}",
        file,
        e.what_without_backtrace()));
  }
}

bool holds_training_state(torch::serialize::InputArchive& archive) {
  c10::IValue value;
  return archive.try_read("train.best_valid", value);
}

std::vector<std::string> check_resume(
    const std::string& file,
    const run::CheckpointInfo& info,
    const config::Config& config,
    const sources::Dataset& data) {
  // The model and its data must be those of the checkpoint; schedules, intervals and the like
  // may change on resume.
  const std::string resolved = config::dump(config);
  run::require_matching_config(file, info.config, resolved, {"model", "data"});
  run::require_same_vocabulary(
      file, info.vocabulary, data.vocabulary_fingerprint(), data.vocabulary_file());
  auto changes = run::resume_changes(info.config, resolved);
  if (!changes.refused.empty()) {
    throw UserError(fmt::format(
        "cannot resume {} with these changes: its saved state (the batches it reads, the "
        "optimizer's state, the random stream) depends on them:\n  {}\nundo them, or start a "
        "new run from its weights with train.init_from",
        file,
        fmt::join(changes.refused, "\n  ")));
  }
  return std::move(changes.applied);
}

} // namespace xl::train
