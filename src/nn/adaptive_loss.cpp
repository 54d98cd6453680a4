#include "xl/nn/adaptive_loss.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

namespace xl::nn {

namespace {

using torch::autograd::variable_list;

// What one bin's backward needs; logits undefined when no row fell in the bin.
struct BinState {
  torch::Tensor
      rows; // [M] rows of hidden in the bin (undefined for the head: all)
  torch::Tensor x; // [M, d_proj] those rows
  torch::Tensor h; // [M, d_i] after the bin's projection (x without one)
  torch::Tensor
      logits;        // [M, n] float32; the head's has the cluster logits last
  torch::Tensor lse; // [M] log-sum-exp of each row
  torch::Tensor
      cols; // [M, 1] the column each row's log-probability was read from
};

// Edges: hidden, the tables, their biases, each defined projection, the cluster weight and
// bias.
class AdaptiveLossBackward : public torch::autograd::Node {
 public:
  AdaptiveLossParams params;
  std::vector<BinState> bins;
  std::vector<int64_t> proj_edge; // per bin, -1 without a projection
  int64_t cluster_edge = -1;

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
    const auto& g = grads[0];
    const auto& bounds = params.bounds;
    const size_t tables = params.weights.size();
    const bool shared = tables == 1;
    std::vector<torch::Tensor> grad_w(tables), grad_b(tables);
    if (shared) {
      // Every row is written below, slice by slice: no zero fill.
      grad_w[0] = torch::empty_like(params.weights[0]);
      grad_b[0] = torch::empty_like(params.biases[0]);
    }
    torch::Tensor grad_hidden;
    for (size_t i = 0; i < bins.size(); ++i) {
      const int64_t lo = bounds[i];
      const int64_t n = bounds[i + 1] - lo;
      const auto w =
          shared ? params.weights[0].narrow(0, lo, n) : params.weights[i];
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
        continue;
      }
      // d log p[col] / d logits = onehot(col) - softmax, scaled by each row's incoming
      // gradient; the logits become that gradient in place.
      const auto g_rows =
          (s.rows.defined() ? g.index_select(0, s.rows) : g).unsqueeze(1);
      auto grad_logits = s.logits;
      grad_logits.sub_(s.lse.unsqueeze(1)).exp_().mul_(-g_rows);
      grad_logits.scatter_add_(1, s.cols, g_rows);
      const auto gl = grad_logits.narrow(1, 0, n);
      torch::mm_out(gw, gl.t(), s.h);
      torch::sum_out(gb, gl, 0);
      auto grad_h = torch::mm(gl, w);
      if (i == 0 && params.cluster_weight.defined()) {
        const auto gc = grad_logits.narrow(1, n, grad_logits.size(1) - n);
        out[cluster_edge] = torch::mm(gc.t(), s.h);
        out[cluster_edge + 1] = gc.sum(0);
        grad_h.addmm_(gc, params.cluster_weight);
      }
      s.logits = torch::Tensor();
      torch::Tensor grad_x = grad_h;
      if (proj_edge[i] >= 0) {
        out[proj_edge[i]] = torch::mm(s.x.t(), grad_h);
        grad_x = torch::mm(grad_h, params.projs[i].t());
      }
      if (i == 0) {
        grad_hidden = grad_x;
      } else {
        grad_hidden.index_add_(0, s.rows, grad_x);
      }
    }
    out[0] = grad_hidden;
    for (size_t t = 0; t < tables; ++t) {
      out[1 + t] = grad_w[t];
      out[1 + tables + t] = grad_b[t];
    }
    return out;
  }
};

} // namespace

torch::Tensor adaptive_log_prob(
    const AdaptiveLossParams& params,
    const torch::Tensor& hidden,
    const torch::Tensor& target) {
  const auto& bounds = params.bounds;
  const size_t n_bins = bounds.size() - 1;
  const size_t tables = params.weights.size();
  TORCH_CHECK(
      hidden.dim() == 2 && hidden.size(0) > 0 &&
          hidden.scalar_type() == torch::kFloat && target.dim() == 1 &&
          target.size(0) == hidden.size(0),
      "adaptive_log_prob expects float32 hidden [N > 0, d] and target [N], got ",
      hidden.sizes(),
      " (",
      hidden.scalar_type(),
      ") and ",
      target.sizes());
  TORCH_CHECK(
      (tables == 1 || tables == n_bins) && params.biases.size() == tables &&
          params.projs.size() == n_bins &&
          params.cluster_weight.defined() == (n_bins > 1),
      "adaptive_log_prob: ",
      tables,
      " tables, ",
      params.biases.size(),
      " biases and ",
      params.projs.size(),
      " projections do not fit ",
      n_bins,
      " bins");
  auto node = std::shared_ptr<AdaptiveLossBackward>(
      new AdaptiveLossBackward(), torch::autograd::deleteNode);
  node->params = params;
  node->bins.resize(n_bins);
  torch::Tensor out;
  {
    const torch::NoGradGuard no_grad;
    const auto weight = [&](size_t i) {
      return tables == 1
          ? params.weights[0].narrow(0, bounds[i], bounds[i + 1] - bounds[i])
          : params.weights[i];
    };
    const auto bias = [&](size_t i) {
      return tables == 1
          ? params.biases[0].narrow(0, bounds[i], bounds[i + 1] - bounds[i])
          : params.biases[i];
    };
    const auto project = [&](size_t i, const torch::Tensor& x) {
      return params.projs[i].defined() ? torch::mm(x, params.projs[i]) : x;
    };
    const auto cutoffs = torch::tensor(
        std::vector<int64_t>(bounds.begin() + 1, bounds.end() - 1),
        target.options());
    const auto bin =
        torch::bucketize(target, cutoffs, /*out_int32=*/false, /*right=*/true);

    // The head scores the shortlist and one logit per cluster.
    BinState& head = node->bins[0];
    head.x = hidden;
    head.h = project(0, hidden);
    auto w = weight(0);
    auto b = bias(0);
    if (n_bins > 1) {
      w = torch::cat({w, params.cluster_weight}, 0);
      b = torch::cat({b, params.cluster_bias}, 0);
    }
    head.logits = torch::addmm(b, head.h, w.t());
    head.lse = torch::logsumexp(head.logits, 1);
    head.cols =
        torch::where(bin == 0, target, bin + (bounds[1] - 1)).unsqueeze(1);
    out = head.logits.gather(1, head.cols).squeeze(1) - head.lse;

    for (size_t i = 1; i < n_bins; ++i) {
      const auto rows = (bin == static_cast<int64_t>(i)).nonzero().squeeze(1);
      if (rows.numel() == 0) {
        continue;
      }
      BinState& s = node->bins[i];
      s.rows = rows;
      s.x = hidden.index_select(0, rows);
      s.h = project(i, s.x);
      s.logits = torch::addmm(bias(i), s.h, weight(i).t());
      s.lse = torch::logsumexp(s.logits, 1);
      s.cols = (target.index_select(0, rows) - bounds[i]).unsqueeze(1);
      out.index_add_(0, rows, s.logits.gather(1, s.cols).squeeze(1) - s.lse);
    }
  }

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
  return out;
}

} // namespace xl::nn
