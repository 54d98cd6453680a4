#include "xl/models/hf_tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "xl/util/error.h"

namespace xl::models {

torch::Tensor HFTensor::value() const {
  return view ? view(parameter) : parameter;
}

torch::Tensor HFTensor::grad() const {
  const auto& g = parameter.grad();
  return view && g.defined() ? view(g) : g;
}

void add_hf_tensor(
    std::vector<HFTensor>& out,
    std::string name,
    torch::Tensor parameter,
    std::function<torch::Tensor(const torch::Tensor&)> view,
    bool tied) {
  out.push_back({std::move(name), std::move(parameter), std::move(view), tied});
}

std::function<torch::Tensor(const torch::Tensor&)> hf_row(int64_t i) {
  return [i](const torch::Tensor& t) { return t[i]; };
}

void HFImporter::take(const std::vector<HFTensor>& tensors) {
  for (const auto& t : tensors) {
    if (t.tied) {
      check_tied(t.name, t.value());
    } else {
      copy(t.name, t.value());
    }
  }
}

void HFImporter::copy(const std::string& name, const torch::Tensor& dest) {
  ++wanted_;
  if (!weights_.contains(name)) {
    missing_.push_back(name);
    return;
  }
  used_.insert(name);
  const auto& source = weights_.at(name);
  // dest.copy_ would turn integers and booleans into weights without a word.
  if (!source.is_floating_point()) {
    problems_.push_back(fmt::format(
        "{}: holds {} values, where a weight is floating-point",
        name,
        c10::toString(source.scalar_type())));
    return;
  }
  if (!torch::isfinite(source).all().item<bool>()) {
    const auto bad = torch::logical_not(torch::isfinite(source)).sum().item<int64_t>();
    problems_.push_back(
        fmt::format("{}: {} of its {} values are NaN or infinite", name, bad, source.numel()));
    return;
  }
  if (source.sizes() != dest.sizes()) {
    problems_.push_back(fmt::format(
        "{}: shape [{}] in the file, [{}] in the model",
        name,
        fmt::join(source.sizes(), ", "),
        fmt::join(dest.sizes(), ", ")));
    return;
  }
  dest.copy_(source);
}

void HFImporter::check_tied(const std::string& name, const torch::Tensor& value) {
  if (!weights_.contains(name)) {
    return;
  }
  used_.insert(name);
  const auto& source = weights_.at(name);
  if (source.sizes() != value.sizes() || !torch::equal(source.to(value.dtype()), value)) {
    problems_.push_back(name + ": the model ties it, but the file holds different values");
  }
}

void HFImporter::ignore(const std::string& name) {
  used_.insert(name);
}

void HFImporter::finish() {
  for (const auto& name : weights_.names()) {
    if (used_.count(name) == 0) {
      problems_.push_back(name + ": in the file but not in the model");
    }
  }
  for (const auto& name : missing_) {
    problems_.push_back(name + ": missing from the file");
  }
  if (problems_.empty()) {
    return;
  }
  // Not one of the model's names: the file is another family's (or another program's), which
  // a list of every name would not say.
  if (wanted_ > 0 && missing_.size() == wanted_) {
    const auto names = weights_.names();
    throw UserError(fmt::format(
        "cannot import {} into this {}: the file holds none of its {} tensors, but {} others "
        "({}, ...): another model family's weights? Import them with a config of that family",
        weights_.path().string(),
        family_,
        wanted_,
        names.size(),
        fmt::join(
            names.begin(),
            names.begin() + std::min<std::ptrdiff_t>(3, static_cast<std::ptrdiff_t>(names.size())),
            ", ")));
  }
  constexpr size_t kShown = 30;
  const size_t shown = std::min(problems_.size(), kShown);
  throw UserError(fmt::format(
      "cannot import {} into this {} ({} problems):\n  {}{}",
      weights_.path().string(),
      family_,
      problems_.size(),
      fmt::join(problems_.begin(), problems_.begin() + static_cast<std::ptrdiff_t>(shown), "\n  "),
      problems_.size() > shown ? fmt::format("\n  ... and {} more", problems_.size() - shown)
                               : ""));
}

} // namespace xl::models
