#include "xl/nn/adaptive_loss.h"

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <algorithm>

#include "xl/nn/bins.h"
#include "xl/runtime/autocast.h"

namespace xl::nn {

namespace {

// out = a @ b written into float32 `out`: in place when the product is float32, else through
// the product's own dtype (bf16 products cannot write float32).
void mm_into(torch::Tensor out, const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() == out.scalar_type()) {
    torch::mm_out(out, a, b);
  } else {
    out.copy_(torch::mm(a, b));
  }
}

using torch::autograd::variable_list;

// Rows of [rows, width] logits converted to float32 at a time, when they are kept in bf16: the
// float32 copy of a slice stays small instead of doubling the largest tensor of the step (8 MiB
// on the CPU, within its caches; 256 MiB on a GPU, where each slice costs kernel launches and a
// wt103_base bin of 160,000 words would otherwise be cut into hundreds). Float32 logits are
// worked on whole, in place.
int64_t chunk_rows(const torch::Tensor& logits) {
  if (logits.scalar_type() == torch::kFloat) {
    return std::max<int64_t>(logits.size(0), 1);
  }
  const int64_t bytes = logits.is_cuda() ? int64_t{256} << 20 : int64_t{8} << 20;
  return std::max<int64_t>(bytes / (4 * logits.size(1)), 1);
}

// logits [M, w] in float32 or bf16 -> log-sum-exp of each row [M], in float32.
torch::Tensor row_logsumexp(const torch::Tensor& logits) {
  const int64_t rows = logits.size(0);
  const int64_t step = chunk_rows(logits);
  if (step >= rows) {
    return torch::logsumexp(runtime::in_dtype(logits, torch::kFloat), 1);
  }
  auto lse = torch::empty({rows}, logits.options().dtype(torch::kFloat));
  for (int64_t r = 0; r < rows; r += step) {
    const int64_t len = std::min(step, rows - r);
    lse.narrow(0, r, len).copy_(
        torch::logsumexp(runtime::in_dtype(logits.narrow(0, r, len), torch::kFloat), 1));
  }
  return lse;
}

// What one bin's backward needs; logits undefined when no row fell in the bin.
struct BinState {
  torch::Tensor rows;   // [M] rows of hidden in the bin (undefined for the head: all)
  torch::Tensor x;      // [M, d_proj] those rows, in the matrix products' dtype
  torch::Tensor h;      // [M, d_i] after the bin's projection (x without one), alike
  torch::Tensor logits; // [M, n] in the products' dtype; the head's has the cluster logits last
  torch::Tensor lse;    // [M] log-sum-exp of each row; undefined once `logits` are log-probs
  torch::Tensor cols;   // [M, 1] the column each row's log-probability was read from
};

// d log p[col] / d logits = onehot(col) - softmax, scaled by each row's incoming gradient
// `g_rows` [M, 1], computed in float32: the bin's logits become that gradient in place, in their
// dtype. Returns the biases' gradient, summed in float32.
torch::Tensor logits_to_grad(BinState& s, const torch::Tensor& g_rows) {
  const auto& grad_logits = s.logits;
  const int64_t rows = grad_logits.size(0);
  const int64_t step = chunk_rows(grad_logits);
  torch::Tensor grad_bias;
  for (int64_t r = 0; r < rows; r += step) {
    const int64_t len = std::min(step, rows - r);
    auto part = grad_logits.narrow(0, r, len);
    auto f = runtime::in_dtype(part, torch::kFloat); // `part` itself when float32
    const auto g_part = g_rows.narrow(0, r, len);
    if (s.lse.defined()) {
      f.sub_(s.lse.narrow(0, r, len).unsqueeze(1));
    }
    f.exp_().mul_(-g_part);
    f.scatter_add_(1, s.cols.narrow(0, r, len), g_part);
    grad_bias = r == 0 ? f.sum(0) : grad_bias.add_(f.sum(0));
    if (!f.is_same(part)) {
      part.copy_(f);
    }
  }
  return grad_bias;
}

// Edges: hidden, the tables, their biases, each defined projection, the cluster weight and
// bias.
class AdaptiveLossBackward : public torch::autograd::Node {
 public:
  AdaptiveLossParams params;
  std::vector<BinState> bins;
  std::vector<int64_t> proj_edge; // per bin, -1 without a projection
  int64_t cluster_edge = -1;
  /// the matrix products' dtype (float32, or bf16 under autocast); gradients are float32
  torch::ScalarType dtype = torch::kFloat;

  std::string name() const override {
    return "AdaptiveLossBackward";
  }

  void release_variables() override {
    bins.clear();
    params = {};
  }

  variable_list apply(variable_list&& grads) override {
    variable_list out(num_outputs());
    if (!grads[0].defined()) {
      return out;
    }
    const torch::NoGradGuard no_grad;
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const size_t tables = params.weights.size();
    std::vector<torch::Tensor> grad_w(tables), grad_b(tables);
    if (tables == 1) {
      // Every row is written below, slice by slice: no zero fill.
      grad_w[0] = torch::empty_like(params.weights[0]);
      grad_b[0] = torch::empty_like(params.biases[0]);
    }
    torch::Tensor grad_hidden;
    for (size_t i = 0; i < bins.size(); ++i) {
      backward_bin(i, grads[0], grad_w, grad_b, out, grad_hidden);
    }
    out[0] = grad_hidden;
    for (size_t t = 0; t < tables; ++t) {
      out[1 + t] = grad_w[t];
      out[1 + tables + t] = grad_b[t];
    }
    return out;
  }

 private:
  // Bin i's share of the gradients: its table and bias rows (`grad_w`, `grad_b`), its
  // projection and the clusters' (`out`), and its rows of `grad_hidden` (the head's are all).
  void backward_bin(
      size_t i,
      const torch::Tensor& g,
      std::vector<torch::Tensor>& grad_w,
      std::vector<torch::Tensor>& grad_b,
      variable_list& out,
      torch::Tensor& grad_hidden) {
    const bool shared = params.weights.size() == 1;
    const int64_t lo = params.bounds[i];
    const int64_t n = params.bounds[i + 1] - lo;
    if (!shared) {
      grad_w[i] = torch::empty_like(params.weights[i]);
      grad_b[i] = torch::empty_like(params.biases[i]);
    }
    auto gw = shared ? grad_w[0].narrow(0, lo, n) : grad_w[i];
    auto gb = shared ? grad_b[0].narrow(0, lo, n) : grad_b[i];
    BinState& s = bins[i];
    if (!s.logits.defined()) {
      gw.zero_();
      gb.zero_();
      if (proj_edge[i] >= 0) {
        out[proj_edge[i]] = torch::zeros_like(params.projs[i]);
      }
      return;
    }
    // Cast again rather than kept from the forward: a bf16 copy of a shared table would
    // outlive the step's peak.
    const auto w =
        runtime::in_dtype(shared ? params.weights[0].narrow(0, lo, n) : params.weights[i], dtype);
    const auto grad_bias =
        logits_to_grad(s, (s.rows.defined() ? g.index_select(0, s.rows) : g).unsqueeze(1));
    gb.copy_(grad_bias.narrow(0, 0, n));
    const auto& grad_logits = s.logits;
    const auto gl = grad_logits.narrow(1, 0, n);
    mm_into(gw, gl.t(), s.h);
    auto grad_h = torch::mm(gl, w);
    if (i == 0 && params.cluster_weight.defined()) {
      const int64_t clusters = grad_logits.size(1) - n;
      const auto gc = grad_logits.narrow(1, n, clusters);
      out[cluster_edge] = runtime::in_dtype(torch::mm(gc.t(), s.h), torch::kFloat);
      out[cluster_edge + 1] = grad_bias.narrow(0, n, clusters);
      grad_h.addmm_(gc, runtime::in_dtype(params.cluster_weight, dtype));
    }
    s.logits = torch::Tensor();
    torch::Tensor grad_x = grad_h;
    if (proj_edge[i] >= 0) {
      out[proj_edge[i]] = runtime::in_dtype(torch::mm(s.x.t(), grad_h), torch::kFloat);
      grad_x = torch::mm(grad_h, runtime::in_dtype(params.projs[i], dtype).t());
    }
    grad_x = runtime::in_dtype(grad_x, torch::kFloat);
    if (i == 0) {
      grad_hidden = grad_x;
    } else {
      grad_hidden.index_add_(0, s.rows, grad_x);
    }
  }
};

// A bin's table, bias and projection in the matrix products' dtype, as the forward pass
// multiplies them.
struct BinTables {
  const AdaptiveLossParams& params;
  torch::ScalarType dtype;

  torch::Tensor weight(size_t i) const {
    return bin_rows(params.weights, params.bounds, i, dtype);
  }
  torch::Tensor bias(size_t i) const {
    return bin_rows(params.biases, params.bounds, i, dtype);
  }
  torch::Tensor project(size_t i, const torch::Tensor& x) const {
    return params.projs[i].defined() ? torch::mm(x, cast(params.projs[i])) : x;
  }
  torch::Tensor cast(const torch::Tensor& leaf) const {
    return runtime::cast_weight(leaf, dtype);
  }
};

void check_inputs(
    const AdaptiveLossParams& params,
    const torch::Tensor& hidden,
    const torch::Tensor& target,
    torch::ScalarType dtype) {
  const size_t n_bins = params.bounds.size() - 1;
  const size_t tables = params.weights.size();
  TORCH_CHECK(
      hidden.dim() == 2 && hidden.size(0) > 0 && hidden.scalar_type() == torch::kFloat &&
          target.dim() == 1 && target.size(0) == hidden.size(0),
      "adaptive_log_prob expects float32 hidden [N > 0, d] and target [N], got ",
      hidden.sizes(),
      " (",
      hidden.scalar_type(),
      ") and ",
      target.sizes());
  TORCH_CHECK(
      (tables == 1 || tables == n_bins) && params.biases.size() == tables &&
          params.projs.size() == n_bins && params.cluster_weight.defined() == (n_bins > 1),
      "adaptive_log_prob: ",
      tables,
      " tables, ",
      params.biases.size(),
      " biases and ",
      params.projs.size(),
      " projections do not fit ",
      n_bins,
      " bins");
  TORCH_CHECK(
      dtype == torch::kFloat || dtype == torch::kBFloat16,
      "adaptive_log_prob multiplies in float32 or bf16, got ",
      dtype);
}

// Normalises a bin's rows. Float32 logits on the CPU become their log-probabilities in place,
// in LibTorch's one fused pass over each row, which stays in the caches (its log-sum-exp makes a
// pass and a temporary of the bin's size each for the maximum, the difference, its exponential
// and their sum); the backward pass then needs only their exponential. bf16 logits are kept, and
// the softmax reads them in float32 (as autocast's linear and log_softmax give them), through
// each row's log-sum-exp; on a GPU, the log-sum-exp's passes run as they did (unmeasured there).
void normalise(BinState& s) {
  if (s.logits.scalar_type() == torch::kFloat && s.logits.is_cpu()) {
    at::_log_softmax_out(s.logits, s.logits, 1, false);
  } else {
    s.lse = row_logsumexp(s.logits);
  }
}

torch::Tensor log_prob_at(const BinState& s) {
  const auto at_cols = s.logits.gather(1, s.cols).squeeze(1);
  return s.lse.defined() ? runtime::in_dtype(at_cols, torch::kFloat) - s.lse : at_cols;
}

// The head scores the shortlist and one logit per cluster, for every row: log p of the
// shortlist word, or of the target's cluster. hidden_lowp [N, d].
torch::Tensor score_head(
    BinState& head,
    const BinTables& t,
    const torch::Tensor& hidden_lowp,
    const BinnedIds& bins) {
  const auto& params = t.params;
  head.x = hidden_lowp;
  head.h = t.project(0, hidden_lowp);
  auto w = t.weight(0);
  auto b = t.bias(0);
  if (params.bounds.size() > 2) {
    w = torch::cat({w, t.cast(params.cluster_weight)}, 0);
    b = torch::cat({b, t.cast(params.cluster_bias)}, 0);
  }
  head.logits = torch::addmm(b, head.h, w.t());
  normalise(head);
  head.cols = bins.head_cols.unsqueeze(1);
  return log_prob_at(head);
}

// Tail bin `i` scores its rows only, adding log p(word | cluster) to `out`.
void score_tail(
    BinState& s,
    size_t i,
    const BinTables& t,
    const torch::Tensor& hidden_lowp,
    const BinnedIds& bins,
    torch::Tensor& out) {
  const auto& rows = bins.rows[i];
  if (rows.numel() == 0) {
    return;
  }
  s.rows = rows;
  s.x = hidden_lowp.index_select(0, rows);
  s.h = t.project(i, s.x);
  s.logits = torch::addmm(t.bias(i), s.h, t.weight(i).t());
  normalise(s);
  s.cols = bins.local[i].unsqueeze(1);
  out.index_add_(0, rows, log_prob_at(s));
}

// Connects `out` to the inputs' gradients through `node` when any input needs one. Edges:
// hidden, the tables, their biases, each defined projection, the cluster weight and bias.
void connect(
    const std::shared_ptr<AdaptiveLossBackward>& node,
    const torch::Tensor& hidden,
    torch::Tensor& out) {
  const AdaptiveLossParams& params = node->params;
  const size_t n_bins = params.bounds.size() - 1;
  variable_list inputs{hidden};
  inputs.insert(inputs.end(), params.weights.begin(), params.weights.end());
  inputs.insert(inputs.end(), params.biases.begin(), params.biases.end());
  node->proj_edge.assign(n_bins, -1);
  for (size_t i = 0; i < n_bins; ++i) {
    if (params.projs[i].defined()) {
      node->proj_edge[i] = static_cast<int64_t>(inputs.size());
      inputs.push_back(params.projs[i]);
    }
  }
  if (n_bins > 1) {
    node->cluster_edge = static_cast<int64_t>(inputs.size());
    inputs.push_back(params.cluster_weight);
    inputs.push_back(params.cluster_bias);
  }
  if (torch::autograd::compute_requires_grad(inputs)) {
    node->set_next_edges(torch::autograd::collect_next_edges(inputs));
    torch::autograd::set_history(out, node);
  }
}

} // namespace

torch::Tensor bin_rows(
    const std::vector<torch::Tensor>& leaves,
    const std::vector<int64_t>& bounds,
    size_t i,
    torch::ScalarType dtype) {
  if (leaves.size() != 1) {
    return runtime::cast_weight(leaves.at(i), dtype);
  }
  const int64_t lo = bounds.at(i);
  const int64_t n = bounds.at(i + 1) - lo;
  // An evaluation casts a shared table whole, once; training casts the slice a bin reads, so
  // that no bf16 copy of the whole table lives through the step.
  return runtime::KeptWeightCasts::active()
      ? runtime::cast_weight(leaves[0], dtype).narrow(0, lo, n)
      : runtime::in_dtype(leaves[0].narrow(0, lo, n), dtype);
}

torch::Tensor adaptive_log_prob(
    const AdaptiveLossParams& params,
    const torch::Tensor& hidden,
    const torch::Tensor& target,
    torch::ScalarType dtype,
    const torch::Tensor& host_target) {
  check_inputs(params, hidden, target, dtype);
  const auto& bounds = params.bounds;
  const size_t n_bins = bounds.size() - 1;
  auto node = std::shared_ptr<AdaptiveLossBackward>(
      new AdaptiveLossBackward(), torch::autograd::deleteNode);
  node->params = params;
  node->bins.resize(n_bins);
  node->dtype = dtype;
  torch::Tensor out;
  {
    const torch::NoGradGuard no_grad;
    // The casts below are autocast's, made once per bin and undone for the loss.
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const BinTables tables{node->params, dtype};
    const auto hidden_lowp = runtime::in_dtype(hidden, dtype);
    const auto bins = bin_ids(target, host_target, bounds);
    out = score_head(node->bins[0], tables, hidden_lowp, bins);
    for (size_t i = 1; i < n_bins; ++i) {
      score_tail(node->bins[i], i, tables, hidden_lowp, bins, out);
    }
  }
  connect(node, hidden, out);
  return out;
}

} // namespace xl::nn
