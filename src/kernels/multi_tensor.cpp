#include "xl/kernels/multi_tensor.h"

#include <ATen/Parallel.h>

#include <cmath>

#include "xl/kernels/vector_clones.h"

namespace xl::kernels {

namespace {

// Elements of one piece of work: small enough to spread a few large tensors over the threads,
// large enough that a piece costs more than handing it out.
constexpr int64_t kPiece = int64_t{1} << 15;

struct Piece {
  size_t tensor;
  int64_t begin;
  int64_t end;
};

// The tensors cut into pieces of at most kPiece elements, in order.
std::vector<Piece> pieces(const std::vector<torch::Tensor>& tensors) {
  std::vector<Piece> out;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const int64_t n = tensors[t].numel();
    for (int64_t begin = 0; begin < n; begin += kPiece) {
      out.push_back({t, begin, std::min(n, begin + kPiece)});
    }
  }
  return out;
}

// Runs `fn(piece index, piece)` over every piece, in parallel.
template <class Fn>
void for_each_piece(const std::vector<Piece>& all, const Fn& fn) {
  at::parallel_for(0, static_cast<int64_t>(all.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      fn(static_cast<size_t>(i), all[static_cast<size_t>(i)]);
    }
  });
}

// Lane by lane, so that the compiler vectorises the sum without reordering it (a reduction it
// may not reassociate): the same total on every machine.
constexpr int64_t kLanes = 16;

XL_VECTOR_CLONES double squares(const float* x, int64_t n) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) {
      lanes[l] += static_cast<double>(x[i + l]) * static_cast<double>(x[i + l]);
    }
  }
  for (; i < n; ++i) {
    lanes[0] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  }
  double sum = 0.0;
  for (const double lane : lanes) {
    sum += lane;
  }
  return sum;
}

XL_VECTOR_CLONES void scale(float* x, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] *= factor;
  }
}

// The constants of one parameter's step, in float as LibTorch's float32 kernels take them.
struct AdamConstants {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float decay;      // L2 term added to the gradient (Adam)
  float shrink;     // factor of the weights before the update (AdamW: 1 - lr * decay)
  float step_size;  // lr / (1 - beta1^t)
  float bias2_sqrt; // sqrt(1 - beta2^t)
  float eps;
};

// exp_avg = beta1 exp_avg + (1 - beta1) g; exp_avg_sq = beta2 exp_avg_sq + (1 - beta2) g^2;
// p -= step_size exp_avg / (sqrt(exp_avg_sq) / bias2_sqrt + eps): LibTorch's Adam, element by
// element. Compiled with -fno-math-errno (src/CMakeLists.txt): the square root of a sum of
// squares never sets errno, and without it the loop vectorises.
XL_VECTOR_CLONES void adam(
    float* __restrict p,
    const float* __restrict g,
    float* __restrict m,
    float* __restrict v,
    int64_t n,
    AdamConstants c) {
  for (int64_t i = 0; i < n; ++i) {
    const float w = p[i] * c.shrink;
    const float grad = g[i] + c.decay * w;
    const float mi = m[i] * c.beta1 + c.one_minus_beta1 * grad;
    const float vi = v[i] * c.beta2 + c.one_minus_beta2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    p[i] = w - c.step_size * mi / (std::sqrt(vi) / c.bias2_sqrt + c.eps);
  }
}

} // namespace

bool cpu_multi_tensor_applies(const std::vector<std::vector<torch::Tensor>>& lists) {
  for (const auto& list : lists) {
    for (const auto& t : list) {
      if (!t.defined() || !t.device().is_cpu() || t.scalar_type() != torch::kFloat ||
          !t.is_contiguous()) {
        return false;
      }
    }
  }
  return true;
}

double cpu_sum_of_squares(const std::vector<torch::Tensor>& tensors) {
  const auto all = pieces(tensors);
  // One partial sum per piece, added in order: the same total for any number of threads.
  std::vector<double> partial(all.size(), 0.0);
  for_each_piece(all, [&](size_t i, const Piece& piece) {
    partial[i] = squares(
        tensors[piece.tensor].const_data_ptr<float>() + piece.begin, piece.end - piece.begin);
  });
  double total = 0.0;
  for (const double s : partial) {
    total += s;
  }
  return total;
}

void cpu_scale_(const std::vector<torch::Tensor>& tensors, float factor) {
  for_each_piece(pieces(tensors), [&](size_t, const Piece& piece) {
    scale(tensors[piece.tensor].data_ptr<float>() + piece.begin, piece.end - piece.begin, factor);
  });
}

void cpu_adam_step(
    const std::vector<torch::Tensor>& params,
    const std::vector<torch::Tensor>& grads,
    const std::vector<torch::Tensor>& exp_avgs,
    const std::vector<torch::Tensor>& exp_avg_sqs,
    const std::vector<double>& steps,
    const AdamHyper& h) {
  TORCH_CHECK(
      grads.size() == params.size() && exp_avgs.size() == params.size() &&
          exp_avg_sqs.size() == params.size() && steps.size() == params.size(),
      "cpu_adam_step: ",
      params.size(),
      " parameters, ",
      grads.size(),
      " gradients, ",
      exp_avgs.size(),
      " and ",
      exp_avg_sqs.size(),
      " moments, ",
      steps.size(),
      " step counts");
  std::vector<AdamConstants> constants;
  for (size_t i = 0; i < params.size(); ++i) {
    TORCH_CHECK(
        grads[i].numel() == params[i].numel() && exp_avgs[i].numel() == params[i].numel() &&
            exp_avg_sqs[i].numel() == params[i].numel(),
        "cpu_adam_step: parameter ",
        i,
        " has ",
        params[i].numel(),
        " elements, its gradient and moments ",
        grads[i].numel(),
        ", ",
        exp_avgs[i].numel(),
        ", ",
        exp_avg_sqs[i].numel());
    AdamConstants c{};
    c.beta1 = static_cast<float>(h.beta1);
    c.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
    c.beta2 = static_cast<float>(h.beta2);
    c.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
    c.decay = h.decoupled ? 0.0F : static_cast<float>(h.weight_decay);
    c.shrink = h.decoupled ? static_cast<float>(1.0 - h.lr * h.weight_decay) : 1.0F;
    c.step_size = static_cast<float>(h.lr / (1.0 - std::pow(h.beta1, steps[i])));
    c.bias2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(h.beta2, steps[i])));
    c.eps = static_cast<float>(h.eps);
    constants.push_back(c);
  }
  for_each_piece(pieces(params), [&](size_t, const Piece& piece) {
    const size_t t = piece.tensor;
    adam(
        params[t].data_ptr<float>() + piece.begin,
        grads[t].const_data_ptr<float>() + piece.begin,
        exp_avgs[t].data_ptr<float>() + piece.begin,
        exp_avg_sqs[t].data_ptr<float>() + piece.begin,
        piece.end - piece.begin,
        constants[t]);
  });
}

} // namespace xl::kernels
