#include "xl/train/step.h"

#include <cmath>
#include <limits>

#include "xl/run/device.h"

namespace xl::train {

namespace {

// The chunk's share of each weighted term must equal its share of the counted targets, or the
// chunk-by-chunk normalisation above would not be the whole batch's.
void check_proportional_counts(
    const std::vector<std::vector<models::LossTerm>>& chunk_terms,
    const std::vector<int64_t>& chunk_targets,
    int64_t targets) {
  const size_t n_terms = chunk_terms.front().size();
  for (size_t t = 0; t < n_terms; ++t) {
    if (chunk_terms.front()[t].weight == 0.0) {
      continue;
    }
    int64_t total = 0;
    for (const auto& terms : chunk_terms) {
      total += terms[t].count;
    }
    for (size_t c = 0; c < chunk_terms.size(); ++c) {
      TORCH_CHECK(
          chunk_terms[c][t].count * targets == total * chunk_targets[c],
          "loss term '",
          chunk_terms[c][t].name,
          "' counts ",
          chunk_terms[c][t].count,
          " of chunk ",
          c,
          "'s ",
          chunk_targets[c],
          " targets but ",
          total,
          " of the batch's ",
          targets,
          ": chunked normalisation needs weighted terms that count in proportion to the "
          "targets; train with batch_chunk 1");
    }
  }
}

} // namespace

StepResult train_step(
    models::LanguageModelImpl& model,
    Optimizer& optimizer,
    const data::Batch& batch,
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
  optimizer.zero_grad();
  const auto chunks = batch.split(options.chunks);
  std::vector<nn::Memory> next_mems(chunks.size());
  std::vector<std::vector<models::LossTerm>> chunk_terms;
  std::vector<int64_t> chunk_targets;
  std::vector<torch::Tensor>
      sums; // every chunk's term sums, read once at the end
  models::ForwardArgs args;
  args.step = step;
  for (size_t c = 0; c < chunks.size(); ++c) {
    models::ModelOutput out;
    {
      run::AutocastGuard autocast(options.device, options.bf16);
      out = model.forward(
          chunks[c].to(options.device),
          continues_streams ? mems[c] : nn::Memory{},
          args);
    }
    const double share = static_cast<double>(chunks[c].n_targets) /
        static_cast<double>(result.targets);
    torch::Tensor objective;
    for (const auto& term : out.terms) {
      sums.push_back(term.sum.detach().to(torch::kDouble).reshape({}));
      if (term.weight == 0.0 || term.count == 0) {
        continue;
      }
      const auto part =
          term.sum * (term.weight * share / static_cast<double>(term.count));
      objective = objective.defined() ? objective + part : part;
    }
    if (objective.defined()) {
      objective.backward();
    }
    chunk_targets.push_back(chunks[c].n_targets);
    chunk_terms.push_back(std::move(out.terms));
    next_mems[c] = std::move(out.mems);
  }
  check_proportional_counts(chunk_terms, chunk_targets, result.targets);

  const auto host = torch::stack(sums).cpu();
  const auto* values = host.data_ptr<double>();
  const size_t n_terms = chunk_terms.front().size();
  for (size_t c = 0; c < chunk_terms.size(); ++c) {
    std::vector<double> chunk_sums(
        values + c * n_terms, values + (c + 1) * n_terms);
    models::accumulate(
        result.terms, models::totals_of(chunk_terms[c], chunk_sums));
  }
  for (const auto& term : result.terms) {
    result.finite = result.finite && std::isfinite(term.sum);
  }
  if (result.finite) {
    // The norm (clipping with clip 0 only measures): a finite loss can still give a
    // non-finite gradient, which must not reach the weights.
    result.grad_norm = torch::nn::utils::clip_grad_norm_(
        model.parameters(),
        options.clip > 0 ? options.clip
                         : std::numeric_limits<double>::infinity());
    result.finite = std::isfinite(result.grad_norm);
  }
  if (!result.finite) {
    optimizer.zero_grad();
    return result;
  }
  if (continues_streams) {
    mems = std::move(next_mems);
  }
  optimizer.set_lr(lr);
  optimizer.step();
  return result;
}

} // namespace xl::train
