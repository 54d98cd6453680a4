#include "xl/models/hf_tensor.h"

#include <fmt/format.h>

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
  if (!weights_.contains(name)) {
    missing_.push_back(name);
    return;
  }
  used_.insert(name);
  const auto& source = weights_.at(name);
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
  if (!problems_.empty()) {
    throw UserError(fmt::format(
        "cannot import {} into this {} ({} problems):\n  {}",
        weights_.path().string(),
        family_,
        problems_.size(),
        fmt::join(problems_, "\n  ")));
  }
}

} // namespace xl::models
