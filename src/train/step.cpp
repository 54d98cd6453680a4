#include "xl/train/step.h"

#include <cmath>
#include <limits>

#include "xl/runtime/autocast.h"
#include "xl/runtime/device.h"

namespace xl::train {

StepOptions StepOptions::from(const config::TrainConfig& t, const torch::Device& device) {
  StepOptions options;
  options.chunks = t.batch_chunk;
  options.clip = t.clip;
  options.bf16 = t.bf16;
  options.device = device;
  return options;
}

namespace {

// The chunk's share of each weighted term must equal its share of the counted targets, or the
// chunk-by-chunk normalisation above would not be the whole batch's. counts[c][t]: term t's
// count in chunk c.
void check_proportional_counts(
    const std::vector<models::LossTerm>& terms,
    const std::vector<std::vector<int64_t>>& counts,
    const std::vector<int64_t>& chunk_targets,
    int64_t targets) {
  for (size_t t = 0; t < terms.size(); ++t) {
    if (terms[t].weight == 0.0) {
      continue;
    }
    int64_t total = 0;
    for (const auto& chunk : counts) {
      total += chunk[t];
    }
    for (size_t c = 0; c < counts.size(); ++c) {
      TORCH_CHECK(
          counts[c][t] * targets == total * chunk_targets[c],
          "loss term '",
          terms[t].name,
          "' counts ",
          counts[c][t],
          " of chunk ",
          c,
          "'s ",
          chunk_targets[c],
          " targets but ",
          total,
          " of the batch's ",
          targets,
          ": chunked normalisation needs weighted terms that count in proportion to the "
          "targets; train with batch_chunk 1 on one process");
    }
  }
}

// The chunks rank r of R trains: [r k, (r + 1) k) of the batch split into R k chunks, the same
// chunks, memories and normalisation as one process with batch_chunk R k.
std::vector<sources::Batch> rank_chunks(
    const sources::Batch& batch,
    const StepOptions& options,
    int64_t ranks,
    int64_t rank) {
  const auto all_chunks = batch.split(ranks * options.chunks);
  return {
      all_chunks.begin() + rank * options.chunks, all_chunks.begin() + (rank + 1) * options.chunks};
}

// What the forward and backward passes over this rank's chunks leave.
struct ChunkPasses {
  std::vector<models::LossTerm> terms; // the last chunk's, for the names
  std::vector<torch::Tensor> sums;     // every chunk's term sums, read once at the end
  std::vector<double> counts;          // and their counts
  std::vector<nn::Memory> mems;        // each chunk's next memory
};

// Forward and backward over each chunk: chunk c backpropagates its weighted terms' means scaled
// by its share of the batch's counted targets (times the ranks: the reducer averages over
// them), so that the gradients add up to the whole batch's objective.
ChunkPasses forward_backward(
    models::LanguageModelImpl& model,
    const std::vector<sources::Batch>& chunks,
    bool continues_streams,
    const std::vector<nn::Memory>& mems,
    int64_t step,
    int64_t targets,
    int64_t ranks,
    const StepOptions& options) {
  ChunkPasses passes;
  passes.mems.resize(chunks.size());
  models::ForwardArgs args;
  args.step = step;
  for (size_t c = 0; c < chunks.size(); ++c) {
    models::ModelOutput out;
    {
      runtime::AutocastGuard autocast(options.device, options.bf16);
      out = model.forward(
          chunks[c].to(options.device), continues_streams ? mems[c] : nn::Memory{}, args);
    }
    const double share = static_cast<double>(chunks[c].n_targets) * static_cast<double>(ranks) /
        static_cast<double>(targets);
    torch::Tensor objective;
    for (const auto& term : out.terms) {
      passes.sums.push_back(term.sum.detach().to(torch::kDouble).reshape({}));
      passes.counts.push_back(static_cast<double>(term.count));
      if (term.weight == 0.0 || term.count == 0) {
        continue;
      }
      const auto part = term.sum * (term.weight * share / static_cast<double>(term.count));
      objective = objective.defined() ? objective + part : part;
    }
    if (options.parallel && c + 1 == chunks.size()) {
      // Every rank must take part in the reduction, also with nothing to learn from here.
      if (!objective.defined()) {
        objective = out.terms.front().sum * 0.0;
      }
      options.parallel->backward_and_reduce(objective);
    } else if (objective.defined()) {
      objective.backward();
    }
    passes.terms = out.terms;
    passes.mems[c] = std::move(out.mems);
  }
  return passes;
}

// The whole batch's terms: every chunk's term sums and counts and its targets, from every rank
// (exact: the other ranks' rows are zeros here), in one host read, with the check that the
// chunked normalisation was the batch's.
std::vector<models::TermTotal> batch_terms(
    const ChunkPasses& passes,
    const std::vector<sources::Batch>& chunks,
    int64_t targets,
    int64_t ranks,
    int64_t rank,
    const StepOptions& options) {
  const auto n_terms = static_cast<int64_t>(passes.terms.size());
  const int64_t n_chunks = ranks * options.chunks;
  auto table = torch::zeros({n_chunks, 2 * n_terms + 1}, torch::kDouble);
  {
    auto mine = table.narrow(0, rank * options.chunks, options.chunks);
    mine.narrow(1, 0, n_terms)
        .copy_(torch::stack(passes.sums).cpu().view({options.chunks, n_terms}));
    mine.narrow(1, n_terms, n_terms)
        .copy_(torch::tensor(passes.counts, torch::kDouble).view({options.chunks, n_terms}));
    for (int64_t c = 0; c < options.chunks; ++c) {
      mine[c][2 * n_terms] = static_cast<double>(chunks[static_cast<size_t>(c)].n_targets);
    }
  }
  if (options.parallel) {
    options.parallel->group().all_reduce_sum(table);
  }
  const auto* values = table.data_ptr<double>();
  std::vector<models::TermTotal> terms;
  std::vector<std::vector<int64_t>> chunk_counts(static_cast<size_t>(n_chunks));
  std::vector<int64_t> chunk_targets;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const double* row = values + c * (2 * n_terms + 1);
    std::vector<models::TermTotal> totals;
    for (int64_t t = 0; t < n_terms; ++t) {
      const auto& term = passes.terms[static_cast<size_t>(t)];
      const auto count = static_cast<int64_t>(row[n_terms + t]);
      chunk_counts[static_cast<size_t>(c)].push_back(count);
      totals.push_back({term.name, term.kind, term.weight, row[t], count});
    }
    chunk_targets.push_back(static_cast<int64_t>(row[2 * n_terms]));
    models::accumulate(terms, totals);
  }
  check_proportional_counts(passes.terms, chunk_counts, chunk_targets, targets);
  return terms;
}

} // namespace

StepResult train_step(
    models::LanguageModelImpl& model,
    Optimizer& optimizer,
    const sources::Batch& batch,
    bool continues_streams,
    std::vector<nn::Memory>& mems,
    double lr,
    int64_t step,
    const StepOptions& options) {
  TORCH_CHECK(
      static_cast<int64_t>(mems.size()) == options.chunks,
      "one memory per chunk: ",
      mems.size(),
      " for ",
      options.chunks,
      " chunks");
  StepResult result;
  result.targets = batch.n_targets;
  TORCH_CHECK(result.targets > 0, "a training batch without counted targets");
  // 1. The gradients of this rank's chunks.
  optimizer.zero_grad();
  const int64_t ranks = options.parallel ? options.parallel->group().size() : 1;
  const int64_t rank = options.parallel ? options.parallel->group().rank() : 0;
  const auto chunks = rank_chunks(batch, options, ranks, rank);
  auto passes = forward_backward(
      model, chunks, continues_streams, mems, step, result.targets, ranks, options);
  // 2. The whole batch's terms, read once.
  result.terms = batch_terms(passes, chunks, result.targets, ranks, rank, options);
  for (const auto& term : result.terms) {
    result.finite = result.finite && std::isfinite(term.sum);
  }
  // 3. The norm (clipping with clip 0 only measures): a finite loss can still give a non-finite
  //    gradient, which must not reach the weights.
  if (result.finite) {
    result.grad_norm = torch::nn::utils::clip_grad_norm_(
        model.parameters(),
        options.clip > 0 ? options.clip : std::numeric_limits<double>::infinity());
    result.finite = std::isfinite(result.grad_norm);
  }
  if (!result.finite) {
    optimizer.zero_grad();
    return result;
  }
  // 4. The update, and the memory it leaves.
  if (continues_streams) {
    mems = std::move(passes.mems);
  }
  optimizer.set_lr(lr);
  optimizer.step();
  return result;
}

} // namespace xl::train
