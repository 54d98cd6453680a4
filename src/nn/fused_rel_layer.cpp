#include "xl/nn/fused_rel_layer.h"

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include "xl/nn/dropout.h"
#include "xl/runtime/autocast.h"

namespace xl::nn {

bool fused_rel_layer_applies(const DecoderLayerOptions& options) {
  const auto& a = options.attention();
  return options.fused() && !a.pre_lnorm() && options.activation() == Activation::kRelu &&
      a.dropout() < 1.0 && a.dropatt() < 1.0 && options.inner_dropout().value_or(0.0) < 1.0;
}

namespace {

using torch::autograd::variable_list;

// x with dropout p as nn::dropout draws it on x's device: its noise, scaled by 1 / (1 - p), on
// the CPU, native_dropout's mask on CUDA. `factor` is what the backward multiplies by
// (undefined: no dropout).
struct Dropped {
  torch::Tensor out;
  torch::Tensor factor;
};

Dropped dropout(const torch::Tensor& x, double p) {
  if (p == 0.0) {
    return {x, {}};
  }
  if (x.is_cuda()) {
    auto [out, mask] = at::native_dropout(x, p, true);
    return {out, mask};
  }
  auto noise = dropout_noise(x, p);
  return {x * noise, noise};
}

torch::Tensor dropout_backward(const torch::Tensor& grad, const Dropped& d, double p) {
  if (!d.factor.defined()) {
    return grad;
  }
  if (d.factor.scalar_type() == torch::kBool) {
    return at::native_dropout_backward(grad, d.factor, 1.0 / (1.0 - p));
  }
  return grad * d.factor;
}

// What the backward pass reads; products' operands in the products' dtype `pd`.
struct Saved {
  int64_t L = 0, B = 0, M = 0, K = 0, H = 0, Dh = 0, D = 0;
  double scale = 1.0, eps = 1e-5, p_drop = 0.0, p_att = 0.0, p_inner = 0.0;
  torch::ScalarType pd = torch::kFloat;
  RelLayerWeights w;        // the leaves, float32
  RelLayerWeights cast;     // the products' copies in pd (qkv, r, o, fc1_w, fc2_w)
  torch::Tensor c;          // [K B, D] [mem | h]
  torch::Tensor r;          // [K, D]
  torch::Tensor qu, qv;     // [H, B, L, Dh] scaled, biased queries
  torch::Tensor k, v;       // [H, B, K, Dh]
  torch::Tensor rk;         // [H, K, Dh] position keys
  torch::Tensor probs;      // [H B, L, K] float32
  torch::Tensor probs_used; // [H B, L, K] in pd after dropatt
  Dropped att, attn_out, inner, ff_out;
  torch::Tensor o;                      // [L B, H Dh] attention vectors
  torch::Tensor x_pre, mean1, rstd1, x; // LayerNorm 1's input (float32), stats, output in pd
  torch::Tensor f1, f1_used;            // [L B, F] ReLU output, after dropout
  torch::Tensor y_pre, mean2, rstd2;
};

// [len, B, H, Dh] (a view) -> a contiguous [H, B, len, Dh].
torch::Tensor head_major(const torch::Tensor& x) {
  return x.permute({2, 1, 0, 3}).contiguous();
}

// The scaled queries with a bias: ((q + bias) * scale) in float32 as the composed path adds a
// float32 bias, then in pd for the products.
torch::Tensor biased(const Saved& s, const torch::Tensor& q, const torch::Tensor& bias) {
  auto out = torch::empty({s.H, s.B, s.L, s.Dh}, q.options().dtype(torch::kFloat));
  torch::add_out(out, q, bias.view({s.H, 1, 1, s.Dh}));
  return runtime::in_dtype(out.mul_(s.scale), s.pd);
}

// Scores, probabilities and attention vectors [L B, H Dh] of [mem | h].
void attend(
    Saved& s,
    const torch::Tensor& h,
    const torch::Tensor& mem,
    const RelativeTerms& rel,
    const torch::Tensor& mask) {
  const int64_t HB = s.H * s.B;
  const auto c = s.M > 0 ? torch::cat({mem, h}) : h;
  s.c = runtime::in_dtype(c.reshape({s.K * s.B, s.D}), s.pd);
  const auto heads = torch::mm(s.c, s.cast.qkv.t()).view({s.K, s.B, 3, s.H, s.Dh});
  const auto q = heads.select(2, 0).narrow(0, s.M, s.L).permute({2, 1, 0, 3});
  s.qu = biased(s, q, rel.u);
  s.qv = biased(s, q, rel.v);
  s.k = head_major(heads.select(2, 1));
  s.v = head_major(heads.select(2, 2));
  s.r = runtime::in_dtype(rel.r, s.pd);
  s.rk = torch::mm(s.r, s.cast.r.t()).view({s.K, s.H, s.Dh}).permute({1, 0, 2}).contiguous();
  auto scores = torch::bmm(s.qu.view({HB, s.L, s.Dh}), s.k.view({HB, s.K, s.Dh}).transpose(1, 2));
  const auto bd = torch::bmm(s.qv.view({s.H, s.B * s.L, s.Dh}), s.rk.transpose(1, 2));
  // The relative shift: row i of a block starts L - 1 - i entries into its row of bd; entries
  // past a row's end read the next row's (the future, masked).
  scores.add_(
      bd.as_strided({HB, s.L, s.K}, {s.L * s.K, s.K - 1, 1}, bd.storage_offset() + s.L - 1));
  auto logits = runtime::in_dtype(scores, torch::kFloat).masked_fill_(mask, -1e30);
  s.probs = torch::_softmax(logits, -1, false);
  s.att = dropout(runtime::in_dtype(s.probs, s.pd), s.p_att);
  s.probs_used = s.att.out;
  const auto vectors = torch::bmm(s.probs_used, s.v.view({HB, s.K, s.Dh}));
  s.o = vectors.view({s.H, s.B, s.L, s.Dh}).permute({2, 1, 0, 3}).reshape({s.L * s.B, s.H * s.Dh});
}

// The output projection, residual and LayerNorm, then the feed-forward: [L B, D] float32.
torch::Tensor finish(Saved& s, const torch::Tensor& h) {
  const auto& w = s.w;
  s.attn_out = dropout(torch::mm(s.o, s.cast.o.t()), s.p_drop);
  // The residual in h's dtype (bf16 after a bf16 embedding under autocast), as the composed
  // layer adds it; LayerNorm in float32.
  s.x_pre = runtime::in_dtype(h.reshape({s.L * s.B, s.D}) + s.attn_out.out, torch::kFloat);
  auto [x, mean1, rstd1] = at::native_layer_norm(s.x_pre, {s.D}, w.ln1_w, w.ln1_b, s.eps);
  s.mean1 = mean1;
  s.rstd1 = rstd1;
  s.x = runtime::in_dtype(x, s.pd);
  s.f1 = torch::addmm(runtime::in_dtype(w.fc1_b, s.pd), s.x, s.cast.fc1_w.t()).relu_();
  s.inner = dropout(s.f1, s.p_inner);
  s.f1_used = s.inner.out;
  s.ff_out = dropout(
      torch::addmm(runtime::in_dtype(w.fc2_b, s.pd), s.f1_used, s.cast.fc2_w.t()), s.p_drop);
  s.y_pre = x + s.ff_out.out;
  auto [y, mean2, rstd2] = at::native_layer_norm(s.y_pre, {s.D}, w.ln2_w, w.ln2_b, s.eps);
  s.mean2 = mean2;
  s.rstd2 = rstd2;
  return y;
}

// Edges: h, u, v, then the weights in RelLayerWeights' order.
constexpr size_t kWeightEdge = 3;

class FusedRelLayerBackward : public torch::autograd::Node {
 public:
  Saved s;

  std::string name() const override {
    return "FusedRelLayerBackward";
  }

  void release_variables() override {
    s = Saved{};
  }

  variable_list apply(variable_list&& grads) override {
    variable_list out(num_outputs());
    if (!grads[0].defined()) {
      return out;
    }
    const torch::NoGradGuard no_grad;
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const auto g_x = feed_forward_backward(grads[0].reshape({s.L * s.B, s.D}), out);
    const auto g_o = attention_output_backward(g_x, out);
    attention_backward(g_o, out);
    return out;
  }

 private:
  // The weight gradient `w` [out, in] = g^T x, in float32 as the leaves are.
  static torch::Tensor weight_grad(const torch::Tensor& g, const torch::Tensor& x) {
    return runtime::in_dtype(torch::mm(g.t(), x), torch::kFloat);
  }

  // LayerNorm 2 and the feed-forward: the gradient of LayerNorm 1's output [L B, D] float32.
  torch::Tensor feed_forward_backward(const torch::Tensor& g_y, variable_list& out) {
    const auto& w = s.w;
    auto [g_ypre, g_ln2w, g_ln2b] = at::native_layer_norm_backward(
        g_y, s.y_pre, {s.D}, s.mean2, s.rstd2, w.ln2_w, w.ln2_b, {true, true, true});
    const auto g_f2 = dropout_backward(runtime::in_dtype(g_ypre, s.pd), s.ff_out, s.p_drop);
    out[kWeightEdge + 7] = weight_grad(g_f2, s.f1_used);
    out[kWeightEdge + 8] = runtime::in_dtype(g_f2.sum(0), torch::kFloat);
    auto g_f1 = dropout_backward(torch::mm(g_f2, s.cast.fc2_w), s.inner, s.p_inner);
    g_f1 = at::threshold_backward(g_f1, s.f1, 0);
    out[kWeightEdge + 5] = weight_grad(g_f1, s.x);
    out[kWeightEdge + 6] = runtime::in_dtype(g_f1.sum(0), torch::kFloat);
    out[kWeightEdge + 9] = g_ln2w;
    out[kWeightEdge + 10] = g_ln2b;
    return g_ypre + torch::mm(g_f1, s.cast.fc1_w);
  }

  // LayerNorm 1 and the output projection: h's residual gradient goes to out[0]; returns the
  // attention vectors' gradient, head-major [H B, L, Dh].
  torch::Tensor attention_output_backward(const torch::Tensor& g_x, variable_list& out) {
    const auto& w = s.w;
    auto [g_xpre, g_ln1w, g_ln1b] = at::native_layer_norm_backward(
        g_x, s.x_pre, {s.D}, s.mean1, s.rstd1, w.ln1_w, w.ln1_b, {true, true, true});
    out[kWeightEdge + 3] = g_ln1w;
    out[kWeightEdge + 4] = g_ln1b;
    out[0] = g_xpre;
    const auto g_a = dropout_backward(runtime::in_dtype(g_xpre, s.pd), s.attn_out, s.p_drop);
    out[kWeightEdge + 2] = weight_grad(g_a, s.o);
    return head_major(torch::mm(g_a, s.cast.o).view({s.L, s.B, s.H, s.Dh}))
        .view({s.H * s.B, s.L, s.Dh});
  }

  // The scores' gradient in pd, [H B, L (K + 1)]: per block L - 1 zeros, then the content
  // scores' [L, K] gradient (and one entry never read), so that rows of K + 1 read the position
  // scores' gradient: the relative shift's transpose. The entries such a row reads before its
  // segment row starts are the previous row's masked future, whose gradient is 0.
  torch::Tensor scores_backward(const torch::Tensor& g_o) {
    const int64_t HB = s.H * s.B;
    auto g_probs = torch::bmm(g_o, s.v.view({HB, s.K, s.Dh}).transpose(1, 2));
    g_probs = runtime::in_dtype(dropout_backward(g_probs, s.att, s.p_att), torch::kFloat);
    const auto g_logits = torch::_softmax_backward_data(g_probs, s.probs, -1, torch::kFloat);
    auto padded = torch::empty({HB, s.L * (s.K + 1)}, g_o.options());
    padded.narrow(1, 0, s.L - 1).zero_();
    padded.narrow(1, s.L - 1, s.L * s.K).view({HB, s.L, s.K}).copy_(g_logits);
    return padded;
  }

  void attention_backward(const torch::Tensor& g_o, variable_list& out) {
    const int64_t HB = s.H * s.B;
    const auto g_v = torch::bmm(s.probs_used.transpose(1, 2), g_o); // [H B, K, Dh]
    const auto padded = scores_backward(g_o);
    const auto g_ac = padded.narrow(1, s.L - 1, s.L * s.K).view({HB, s.L, s.K});
    const auto g_bd = padded.as_strided(
        {s.H, s.B * s.L, s.K}, {s.B * s.L * (s.K + 1), s.K + 1, 1}, padded.storage_offset());
    const auto g_qu =
        runtime::in_dtype(torch::bmm(g_ac, s.k.view({HB, s.K, s.Dh})), torch::kFloat).mul_(s.scale);
    const auto g_k = torch::bmm(g_ac.transpose(1, 2), s.qu.view({HB, s.L, s.Dh}));
    const auto g_qv = runtime::in_dtype(torch::bmm(g_bd, s.rk), torch::kFloat).mul_(s.scale);
    const auto g_rk = torch::bmm(g_bd.transpose(1, 2), s.qv.view({s.H, s.B * s.L, s.Dh}));
    out[1] = g_qu.view({s.H, s.B * s.L, s.Dh}).sum(1);
    out[2] = g_qv.view({s.H, s.B * s.L, s.Dh}).sum(1);
    out[kWeightEdge + 1] = weight_grad(g_rk.permute({1, 0, 2}).reshape({s.K, s.H * s.Dh}), s.r);
    heads_backward(
        g_qu.view({s.H, s.B, s.L, s.Dh}) + g_qv.view({s.H, s.B, s.L, s.Dh}), g_k, g_v, out);
  }

  // The fused q/k/v projection: its weight's gradient, and h's added to out[0].
  void heads_backward(
      const torch::Tensor& g_q,
      const torch::Tensor& g_k,
      const torch::Tensor& g_v,
      variable_list& out) {
    auto g_heads = torch::empty({s.K, s.B, 3, s.H, s.Dh}, g_k.options());
    if (s.M > 0) {
      g_heads.narrow(0, 0, s.M).select(2, 0).zero_();
    }
    g_heads.narrow(0, s.M, s.L).select(2, 0).copy_(g_q.permute({2, 1, 0, 3}));
    g_heads.select(2, 1).copy_(g_k.view({s.H, s.B, s.K, s.Dh}).permute({2, 1, 0, 3}));
    g_heads.select(2, 2).copy_(g_v.view({s.H, s.B, s.K, s.Dh}).permute({2, 1, 0, 3}));
    const auto rows = g_heads.view({s.K * s.B, 3 * s.H * s.Dh});
    out[kWeightEdge + 0] = weight_grad(rows, s.c);
    const auto g_h = torch::mm(rows.narrow(0, s.M * s.B, s.L * s.B), s.cast.qkv);
    out[0] = out[0].add_(g_h).view({s.L, s.B, s.D});
  }
};

std::vector<torch::Tensor> weight_list(const RelLayerWeights& w) {
  return {w.qkv, w.r, w.o, w.ln1_w, w.ln1_b, w.fc1_w, w.fc1_b, w.fc2_w, w.fc2_b, w.ln2_w, w.ln2_b};
}

Saved prepare(
    const DecoderLayerOptions& options,
    const RelLayerWeights& weights,
    bool training,
    const torch::Tensor& h,
    const torch::Tensor& mem) {
  const auto& a = options.attention();
  Saved s;
  s.L = h.size(0);
  s.B = h.size(1);
  s.D = h.size(2);
  s.M = mem.defined() ? mem.size(0) : 0;
  s.K = s.M + s.L;
  s.H = a.n_head();
  s.Dh = a.d_head();
  s.scale = attention_scale(a);
  s.eps = a.layer_norm_eps();
  s.p_drop = training ? a.dropout() : 0.0;
  s.p_att = training ? a.dropatt() : 0.0;
  s.p_inner = training ? options.inner_dropout().value_or(a.dropout()) : 0.0;
  const auto device = h.device().type();
  s.pd = at::autocast::is_autocast_enabled(device) ? at::autocast::get_autocast_dtype(device)
                                                   : torch::kFloat;
  s.w = weights;
  s.cast = weights;
  for (auto* t : {&s.cast.qkv, &s.cast.r, &s.cast.o, &s.cast.fc1_w, &s.cast.fc2_w}) {
    *t = runtime::in_dtype(*t, s.pd);
  }
  return s;
}

} // namespace

torch::Tensor fused_rel_layer(
    const DecoderLayerOptions& options,
    const RelLayerWeights& weights,
    bool training,
    const torch::Tensor& h,
    const RelativeTerms& rel,
    const torch::Tensor& mask,
    const torch::Tensor& mem) {
  TORCH_CHECK(
      h.dim() == 3 && h.is_floating_point() && rel.r.dim() == 2 && mask.dim() == 2 &&
          mask.size(0) == h.size(0) && rel.r.size(0) == mask.size(1) &&
          mask.size(1) == h.size(0) + (mem.defined() ? mem.size(0) : 0),
      "fused_rel_layer expects h [L, B, D], r [S, D] and mask [L, S] with S = M + L, "
      "got h ",
      h.sizes(),
      " (",
      h.scalar_type(),
      "), r ",
      rel.r.sizes(),
      ", mask ",
      mask.sizes(),
      ", memory ",
      mem.defined() ? mem.sizes() : torch::IntArrayRef{});
  auto node = std::shared_ptr<FusedRelLayerBackward>(
      new FusedRelLayerBackward(), torch::autograd::deleteNode);
  node->s = prepare(options, weights, training, h, mem);
  torch::Tensor y;
  {
    const torch::NoGradGuard no_grad;
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    attend(node->s, h.detach(), mem.defined() ? mem.detach() : mem, rel, mask);
    y = finish(node->s, h.detach()).view({h.size(0), h.size(1), h.size(2)});
  }
  variable_list inputs{h, rel.u, rel.v};
  const auto w = weight_list(weights);
  inputs.insert(inputs.end(), w.begin(), w.end());
  if (torch::autograd::compute_requires_grad(inputs)) {
    node->set_next_edges(torch::autograd::collect_next_edges(inputs));
    torch::autograd::set_history(y, node);
  }
  return y;
}

} // namespace xl::nn
