#include "xl/train/step.h"

#include "xl/util/error.h"

#include <algorithm>
#include <cmath>

#include "xl/kernels/multi_tensor.h"
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

// The whole batch's terms without their sums: every chunk's counts and targets, from every
// rank (exact: the other ranks' rows are zeros here, summed on the host), with the check that
// the chunked normalisation was the batch's.
std::vector<models::TermTotal> batch_counts(
    const ChunkPasses& passes,
    const std::vector<sources::Batch>& chunks,
    int64_t targets,
    int64_t ranks,
    int64_t rank,
    const StepOptions& options) {
  const auto n_terms = static_cast<int64_t>(passes.terms.size());
  const int64_t n_chunks = ranks * options.chunks;
  auto table = torch::zeros({n_chunks, n_terms + 1}, torch::kDouble);
  {
    auto mine = table.narrow(0, rank * options.chunks, options.chunks);
    mine.narrow(1, 0, n_terms)
        .copy_(torch::tensor(passes.counts, torch::kDouble).view({options.chunks, n_terms}));
    for (int64_t c = 0; c < options.chunks; ++c) {
      mine[c][n_terms] = static_cast<double>(chunks[static_cast<size_t>(c)].n_targets);
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
    const double* row = values + c * (n_terms + 1);
    std::vector<models::TermTotal> totals;
    for (int64_t t = 0; t < n_terms; ++t) {
      const auto& term = passes.terms[static_cast<size_t>(t)];
      const auto count = static_cast<int64_t>(row[t]);
      chunk_counts[static_cast<size_t>(c)].push_back(count);
      totals.push_back({term.name, term.kind, term.weight, 0.0, count});
    }
    chunk_targets.push_back(static_cast<int64_t>(row[n_terms]));
    models::accumulate(terms, totals);
  }
  check_proportional_counts(passes.terms, chunk_counts, chunk_targets, targets);
  return terms;
}

// The whole batch's term sums [terms] (double), on the device: this rank's chunks, summed over
// the ranks there.
torch::Tensor batch_sums(const ChunkPasses& passes, const StepOptions& options) {
  const auto n_terms = static_cast<int64_t>(passes.terms.size());
  auto sums = torch::stack(passes.sums).view({options.chunks, n_terms}).sum(0);
  if (options.parallel) {
    options.parallel->group().all_reduce_sum(sums);
  }
  return sums;
}

// The memory a chunk carries on: the step's where it was finite, the one before where not.
// A stream without memory yet has nothing to keep: its first step is read.
nn::Memory next_memory(nn::Memory fresh, const nn::Memory& kept, const torch::Tensor& finite) {
  if (fresh.empty() || kept.size() != fresh.size()) {
    return (kept.empty() && !fresh.empty() && !finite.item<bool>()) ? kept : fresh;
  }
  for (size_t l = 0; l < fresh.size(); ++l) {
    if (kept[l].sizes() == fresh[l].sizes()) {
      fresh[l] = torch::where(finite, fresh[l], kept[l]);
    } else if (!finite.item<bool>()) { // a memory still growing to mem_len
      return kept;
    }
  }
  return fresh;
}

} // namespace

torch::Tensor clip_gradients(const std::vector<torch::Tensor>& params, double clip) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) {
      grads.push_back(p.grad());
    }
  }
  if (grads.empty()) {
    return params.empty() ? torch::zeros({}) : torch::zeros({}, params.front().options());
  }
  if (kernels::cpu_multi_tensor_applies({grads})) {
    const auto total = static_cast<float>(std::sqrt(kernels::cpu_sum_of_squares(grads)));
    // A factor of 1 changes nothing, and a non-finite norm skips the update anyway.
    const float factor = std::min(1.0F, 1.0F / (total + 1e-6F) * static_cast<float>(clip));
    if (clip > 0 && std::isfinite(total) && factor < 1.0F) {
      kernels::cpu_scale_(grads, factor);
    }
    return torch::scalar_tensor(total, grads.front().options());
  }
  const auto norms = torch::_foreach_norm(grads);
  auto total = norms.size() == 1 ? norms.front() : torch::stack(norms).norm();
  if (clip > 0) {
    torch::_foreach_mul_(grads, (total + 1e-6).reciprocal().mul_(clip).clamp_max_(1.0));
  }
  return total;
}

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
  if (result.targets == 0) {
    throw UserError(
        "a training batch predicts no token: its records hold nothing to predict (XLNet's masking "
        "needs pieces other than <sep> and <cls>); check data.train and the model.xlnet "
        "settings (num_predict, reuse_len)");
  }
  // 1. The gradients of this rank's chunks.
  optimizer.zero_grad();
  const int64_t ranks = options.parallel ? options.parallel->group().size() : 1;
  const int64_t rank = options.parallel ? options.parallel->group().rank() : 0;
  const auto chunks = rank_chunks(batch, options, ranks, rank);
  auto passes = forward_backward(
      model, chunks, continues_streams, mems, step, result.targets, ranks, options);
  // 2. The whole batch's terms: counts on the host, sums on the device.
  result.terms = batch_counts(passes, chunks, result.targets, ranks, rank, options);
  result.sums = batch_sums(passes, options);
  // 3. The norm (clipping with clip 0 only measures): a finite loss can still give a non-finite
  //    gradient, which must not reach the weights.
  result.grad_norm = clip_gradients(model.parameters(), options.clip);
  result.finite =
      torch::isfinite(result.sums).all().logical_and_(torch::isfinite(result.grad_norm));
  // 4. The update unless not finite, and the memory it leaves.
  if (continues_streams) {
    for (size_t c = 0; c < mems.size(); ++c) {
      mems[c] = next_memory(std::move(passes.mems[c]), mems[c], result.finite);
    }
  }
  optimizer.set_lr(lr);
  optimizer.step_unless(result.finite.logical_not().to(torch::kFloat));
  return result;
}

std::vector<StepReport> read_steps(const std::vector<StepResult>& steps) {
  if (steps.empty()) {
    return {};
  }
  std::vector<torch::Tensor> parts;
  for (const auto& s : steps) {
    parts.push_back(s.finite.to(torch::kDouble).reshape({1}));
    parts.push_back(s.grad_norm.to(torch::kDouble).reshape({1}));
    parts.push_back(s.sums.to(torch::kDouble).reshape({-1}));
  }
  const auto host = torch::cat(parts).cpu();
  const auto* values = host.data_ptr<double>();
  std::vector<StepReport> reports;
  for (const auto& s : steps) {
    StepReport r{*values != 0.0, values[1], s.terms, s.targets};
    values += 2;
    for (auto& term : r.terms) {
      term.sum = *values++;
    }
    reports.push_back(std::move(r));
  }
  return reports;
}

StepReport read_step(const StepResult& step) {
  return read_steps({step}).front();
}

} // namespace xl::train
