#include "xl/nn/adaptive.h"

#include <ATen/autocast_mode.h>

#include <cmath>

#include "xl/nn/adaptive_loss.h"
#include "xl/nn/bins.h"
#include "xl/runtime/autocast.h"

namespace xl::nn {

// ============================================================================
// AdaptiveOptions
// ============================================================================

std::vector<int64_t> AdaptiveOptions::bounds() const {
  std::vector<int64_t> b{0};
  b.insert(b.end(), cutoffs().begin(), cutoffs().end());
  b.push_back(n_token());
  return b;
}

int64_t AdaptiveOptions::bin_dim(size_t i) const {
  int64_t d = d_embed();
  for (size_t k = 0; k < i; ++k) {
    d /= div_val();
  }
  return d;
}

bool AdaptiveOptions::has_proj(size_t i) const {
  return div_val() > 1 || bin_dim(i) != d_proj();
}

void AdaptiveOptions::validate() const {
  int64_t previous = 0;
  for (const int64_t c : cutoffs()) {
    TORCH_CHECK(
        c > previous && c < n_token(),
        "adaptive cutoffs must increase strictly within (0, n_token = ",
        n_token(),
        "), got ",
        cutoffs());
    previous = c;
  }
  TORCH_CHECK(
      div_val() >= 1 && bin_dim(cutoffs().size()) >= 1,
      "d_embed ",
      d_embed(),
      " with div_val ",
      div_val(),
      " leaves no dimension for the last of ",
      cutoffs().size() + 1,
      " bins");
  TORCH_CHECK(div_val() == 1 || !cutoffs().empty(), "div_val > 1 needs cutoffs");
}

// ============================================================================
// AdaptiveEmbedding
// ============================================================================

AdaptiveEmbeddingImpl::AdaptiveEmbeddingImpl(const AdaptiveOptions& options_) : options(options_) {
  reset();
}

void AdaptiveEmbeddingImpl::reset() {
  options.validate();
  emb_layers = register_module("emb_layers", torch::nn::ModuleList());
  emb_projs = register_module("emb_projs", torch::nn::ParameterList());
  const auto bounds = options.bounds();
  const size_t bins = options.div_val() == 1 ? 1 : bounds.size() - 1;
  for (size_t i = 0; i < bins; ++i) {
    const int64_t rows = options.div_val() == 1 ? options.n_token() : bounds[i + 1] - bounds[i];
    emb_layers->push_back(torch::nn::Embedding(rows, options.bin_dim(i)));
    if (options.has_proj(i)) {
      // ParameterList keeps the tensor's requires_grad flag, so set it.
      emb_projs->append(torch::empty({options.d_proj(), options.bin_dim(i)}).requires_grad_());
    }
  }
}

void AdaptiveEmbeddingImpl::reset_parameters(const InitOptions& init) {
  for (size_t i = 0; i < emb_layers->size(); ++i) {
    init.weight(weight(i));
  }
  for (const auto& p : emb_projs->parameters()) {
    init.projection(p);
  }
}

const torch::Tensor& AdaptiveEmbeddingImpl::weight(size_t i) const {
  return emb_layers->ptr<torch::nn::EmbeddingImpl>(i)->weight;
}

torch::Tensor AdaptiveEmbeddingImpl::proj(size_t i) const {
  return i < emb_projs->size() ? emb_projs->at(i) : torch::Tensor();
}

torch::Tensor AdaptiveEmbeddingImpl::forward(
    const torch::Tensor& tokens,
    const torch::Tensor& host_tokens) {
  TORCH_CHECK(
      tokens.scalar_type() == torch::kLong,
      "AdaptiveEmbedding expects int64 tokens, got ",
      tokens.scalar_type());
  const double scale = std::sqrt(static_cast<double>(options.d_proj()));
  auto out_sizes = tokens.sizes().vec();
  out_sizes.push_back(options.d_proj());
  if (options.div_val() == 1) {
    auto embed = torch::embedding(
        weight(0),
        tokens,
        /*padding_idx=*/-1,
        /*scale_grad_by_freq=*/false,
        options.sparse_grad());
    if (options.has_proj(0)) {
      embed = runtime::linear(embed, proj(0));
    }
    return embed.mul(scale);
  }
  const auto bins = bin_ids(
      tokens.reshape({-1}),
      host_tokens.defined() ? host_tokens.reshape({-1}) : host_tokens,
      options.bounds());
  torch::Tensor out;
  for (size_t i = 0; i < bins.rows.size(); ++i) {
    if (bins.rows[i].numel() == 0) {
      continue;
    }
    auto embed_i = torch::embedding(
        weight(i),
        bins.local[i],
        /*padding_idx=*/-1,
        /*scale_grad_by_freq=*/false,
        options.sparse_grad());
    embed_i = runtime::linear(embed_i, proj(i));
    if (!out.defined()) {
      out = torch::zeros({tokens.numel(), options.d_proj()}, embed_i.options());
    }
    out = out.index_copy(0, bins.rows[i], embed_i);
  }
  return out.view(out_sizes).mul(scale);
}

// ============================================================================
// AdaptiveLogSoftmax
// ============================================================================

AdaptiveLogSoftmaxImpl::AdaptiveLogSoftmaxImpl(const AdaptiveSoftmaxOptions& options_)
    : options(options_) {
  reset();
}

bool AdaptiveLogSoftmaxImpl::weight_tied(size_t /*i*/) const {
  return options.tie_weight();
}

bool AdaptiveLogSoftmaxImpl::proj_tied(size_t i) const {
  return i < options.tie_projs().size() && options.tie_projs()[i];
}

void AdaptiveLogSoftmaxImpl::reset() {
  const AdaptiveOptions& a = options.adaptive();
  a.validate();
  TORCH_CHECK(
      options.tie_projs().empty() || options.tie_projs().size() == a.cutoffs().size() + 1,
      "tie_projs needs one entry per bin (",
      a.cutoffs().size() + 1,
      "), got ",
      options.tie_projs().size());
  const auto bounds = a.bounds();
  const size_t bins = bounds.size() - 1;
  const size_t tables = a.div_val() == 1 ? 1 : bins;
  out_weights.assign(tables, torch::Tensor());
  out_biases.assign(tables, torch::Tensor());
  out_projs.assign(bins, torch::Tensor());
  for (size_t i = 0; i < tables; ++i) {
    const int64_t rows = a.div_val() == 1 ? a.n_token() : bounds[i + 1] - bounds[i];
    if (!weight_tied(i)) {
      out_weights[i] =
          register_parameter("out_weight_" + std::to_string(i), torch::empty({rows, a.bin_dim(i)}));
    }
    out_biases[i] = register_parameter("out_bias_" + std::to_string(i), torch::zeros({rows}));
  }
  for (size_t i = 0; i < bins; ++i) {
    const size_t table = a.div_val() == 1 ? 0 : i;
    if (a.has_proj(table) && !proj_tied(i)) {
      out_projs[i] = register_parameter(
          "out_proj_" + std::to_string(i), torch::empty({a.d_proj(), a.bin_dim(table)}));
    }
  }
  const int64_t clusters = static_cast<int64_t>(bins) - 1;
  if (clusters > 0) {
    cluster_weight = register_parameter("cluster_weight", torch::zeros({clusters, a.d_embed()}));
    cluster_bias = register_parameter("cluster_bias", torch::zeros({clusters}));
  }
}

void AdaptiveLogSoftmaxImpl::tie_to(const AdaptiveEmbeddingImpl& embedding) {
  const AdaptiveOptions& a = options.adaptive();
  const AdaptiveOptions& e = embedding.options;
  TORCH_CHECK(
      a.n_token() == e.n_token() && a.d_embed() == e.d_embed() && a.d_proj() == e.d_proj() &&
          a.cutoffs() == e.cutoffs() && a.div_val() == e.div_val(),
      "cannot tie an adaptive softmax to an embedding of another shape");
  for (size_t i = 0; i < out_weights.size(); ++i) {
    if (weight_tied(i)) {
      out_weights[i] = embedding.weight(i);
    }
  }
  for (size_t i = 0; i < out_projs.size(); ++i) {
    if (proj_tied(i)) {
      out_projs[i] = embedding.proj(a.div_val() == 1 ? 0 : i);
    }
  }
}

void AdaptiveLogSoftmaxImpl::reset_parameters(const InitOptions& init) {
  // Registration order (weight and bias per table, then projections, then clusters), so that
  // the random draws follow named_parameters().
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < out_weights.size(); ++i) {
    if (!weight_tied(i)) {
      init.weight(out_weights[i]);
    }
    out_biases[i].zero_();
  }
  for (size_t i = 0; i < out_projs.size(); ++i) {
    if (out_projs[i].defined() && !proj_tied(i)) {
      init.projection(out_projs[i]);
    }
  }
  if (cluster_weight.defined()) {
    init.weight(cluster_weight);
    cluster_bias.zero_();
  }
}

torch::Tensor AdaptiveLogSoftmaxImpl::weight(size_t i) const {
  const AdaptiveOptions& a = options.adaptive();
  if (a.div_val() > 1) {
    return out_weights.at(i);
  }
  const auto bounds = a.bounds();
  return out_weights.at(0).narrow(0, bounds[i], bounds[i + 1] - bounds[i]);
}

torch::Tensor AdaptiveLogSoftmaxImpl::bias(size_t i) const {
  const AdaptiveOptions& a = options.adaptive();
  if (a.div_val() > 1) {
    return out_biases.at(i);
  }
  const auto bounds = a.bounds();
  return out_biases.at(0).narrow(0, bounds[i], bounds[i + 1] - bounds[i]);
}

torch::Tensor AdaptiveLogSoftmaxImpl::proj(size_t i) const {
  return out_projs.at(i);
}

namespace {

// The matrix products' dtype: autocast's on the hidden states' device, else float32.
torch::ScalarType product_dtype(const torch::Tensor& hidden) {
  const auto device = hidden.device().type();
  return at::autocast::is_autocast_enabled(device) ? at::autocast::get_autocast_dtype(device)
                                                   : torch::kFloat;
}

torch::Tensor projected_logits(
    const torch::Tensor& hidden,
    const torch::Tensor& weight,
    const torch::Tensor& bias,
    const torch::Tensor& proj) {
  const auto h = proj.defined() ? torch::matmul(hidden, proj) : hidden;
  return torch::nn::functional::linear(h, weight, bias);
}

} // namespace

torch::Tensor AdaptiveLogSoftmaxImpl::head_log_probs(const torch::Tensor& hidden) const {
  const auto bounds = options.adaptive().bounds();
  const auto dtype = product_dtype(hidden);
  auto w = bin_rows(out_weights, bounds, 0, dtype);
  auto b = bin_rows(out_biases, bounds, 0, dtype);
  if (cluster_weight.defined()) {
    w = torch::cat({w, runtime::cast_weight(cluster_weight, dtype)}, 0);
    b = torch::cat({b, runtime::cast_weight(cluster_bias, dtype)}, 0);
  }
  return torch::log_softmax(projected_logits(hidden, w, b, proj(0)).to(torch::kFloat), -1);
}

torch::Tensor AdaptiveLogSoftmaxImpl::tail_logits(size_t i, const torch::Tensor& hidden) const {
  const auto bounds = options.adaptive().bounds();
  const auto dtype = product_dtype(hidden);
  return projected_logits(
      hidden,
      bin_rows(out_weights, bounds, i, dtype),
      bin_rows(out_biases, bounds, i, dtype),
      proj(i));
}

torch::Tensor AdaptiveLogSoftmaxImpl::forward(
    const torch::Tensor& hidden,
    const torch::Tensor& target,
    const torch::Tensor& host_target) {
  const AdaptiveOptions& a = options.adaptive();
  TORCH_CHECK(
      hidden.dim() == 2 && hidden.size(1) == a.d_proj() && target.dim() == 1 &&
          target.size(0) == hidden.size(0),
      "adaptive softmax expects hidden [N, ",
      a.d_proj(),
      "] and target [N], got ",
      hidden.sizes(),
      " and ",
      target.sizes());
  if (options.fused_loss() && hidden.scalar_type() == torch::kFloat && hidden.size(0) > 0) {
    return adaptive_log_prob(
        {a.bounds(), out_weights, out_biases, out_projs, cluster_weight, cluster_bias},
        hidden,
        target,
        product_dtype(hidden),
        host_target);
  }
  const auto head = head_log_probs(hidden);
  const auto bounds = a.bounds();
  if (bounds.size() == 2) {
    return head.gather(1, target.unsqueeze(1)).squeeze(1);
  }
  const auto bins = bin_ids(target, host_target, bounds);
  auto out = torch::zeros({hidden.size(0)}, head.options());
  for (size_t i = 0; i < bins.rows.size(); ++i) {
    const auto& rows = bins.rows[i];
    if (rows.numel() == 0) {
      continue;
    }
    const auto local = bins.local[i].unsqueeze(1);
    const auto head_i = head.index_select(0, rows);
    torch::Tensor logp;
    if (i == 0) {
      logp = head_i.gather(1, local).squeeze(1);
    } else {
      const auto tail =
          torch::log_softmax(tail_logits(i, hidden.index_select(0, rows)).to(torch::kFloat), -1);
      const int64_t cluster = bounds[1] + static_cast<int64_t>(i) - 1;
      logp = head_i.select(1, cluster) + tail.gather(1, local).squeeze(1);
    }
    out = out.index_copy(0, rows, logp);
  }
  return out;
}

torch::Tensor AdaptiveLogSoftmaxImpl::log_probs(const torch::Tensor& hidden) {
  const auto head = head_log_probs(hidden);
  const auto bounds = options.adaptive().bounds();
  if (bounds.size() == 2) {
    return head;
  }
  std::vector<torch::Tensor> parts{head.narrow(1, 0, bounds[1])};
  for (size_t i = 1; i + 1 < bounds.size(); ++i) {
    const int64_t cluster = bounds[1] + static_cast<int64_t>(i) - 1;
    const auto tail = torch::log_softmax(tail_logits(i, hidden).to(torch::kFloat), -1);
    parts.push_back(head.narrow(1, cluster, 1) + tail);
  }
  return torch::cat(parts, 1);
}

} // namespace xl::nn
