#include "xl/nn/dropout.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <mutex>

#include "xl/kernels/philox.h"

namespace xl::nn {

namespace {

// The next seed from the default CPU generator: one draw, under its lock.
uint64_t next_seed() {
  auto generator = at::detail::getDefaultCPUGenerator();
  const std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<at::CPUGeneratorImpl>()->random64();
}

} // namespace

torch::Tensor dropout_noise(const torch::Tensor& like, double p) {
  TORCH_CHECK(like.device().is_cpu(), "dropout_noise draws on the CPU; got ", like.device());
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "dropout probability must be in [0, 1], got ", p);
  auto noise = at::empty(like.sizes(), like.options().memory_format(at::MemoryFormat::Contiguous));
  const int64_t n = noise.numel();
  if (n == 0) {
    return noise;
  }
  const uint64_t seed = next_seed();
  const double keep = 1.0 - p;
  if (keep == 1.0) {
    return noise.fill_(1.0);
  }
  // An element is kept when its word is below keep * 2^32, rounded down.
  const auto threshold = static_cast<uint32_t>(std::floor(keep * 4294967296.0));
  const auto scale = static_cast<float>(keep > 0.0 ? 1.0 / keep : 0.0);
  if (noise.scalar_type() == torch::kFloat) {
    kernels::fill_dropout_noise(noise.data_ptr<float>(), n, seed, threshold, scale);
    return noise;
  }
  auto f = at::empty({n}, like.options().dtype(torch::kFloat));
  kernels::fill_dropout_noise(f.data_ptr<float>(), n, seed, threshold, scale);
  return noise.copy_(f.view(noise.sizes()));
}

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p == 0.0) {
    return x;
  }
  if (!x.device().is_cpu()) {
    return torch::dropout(x, p, true);
  }
  return x * dropout_noise(x, p);
}

DropoutImpl::DropoutImpl(const DropoutOptions& options_) : options(options_) {
  reset();
}

void DropoutImpl::reset() {
  TORCH_CHECK(
      options.p() >= 0.0 && options.p() <= 1.0,
      "dropout probability must be in [0, 1], got ",
      options.p());
}

void DropoutImpl::pretty_print(std::ostream& stream) const {
  stream << "Dropout(p=" << options.p() << ")";
}

torch::Tensor DropoutImpl::forward(const torch::Tensor& x) {
  return nn::dropout(x, options.p(), is_training());
}

} // namespace xl::nn
