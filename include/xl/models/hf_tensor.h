// What Hugging Face interop shares across families: one HF tensor and where it lives in xl, and
// the importer that copies a family's list of such tensors from a safetensors file, checking
// names, shapes and tied copies. Each family's folder lists its own names (models/<family>/hf.h);
// models/hf.h imports and exports whichever family a model is.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "xl/io/safetensors.h"

namespace xl::models {

struct HFImportOptions {
  /// The checkpoint orders tail clusters like kimiyoung's/NVIDIA's PyTorch code
  /// (cluster i at cluster_weight row n_clusters - i) instead of HF's forward
  /// order (row i - 1): reverse them.
  bool reverse_clusters = false;
};

/// One tensor of a Hugging Face model and where it lives in xl.
struct HFTensor {
  std::string name;
  /// the xl parameter
  torch::Tensor parameter;
  /// the HF tensor as a view of the parameter (a row of per-layer biases, a transposed slice of
  /// a fused projection); empty: the parameter itself
  std::function<torch::Tensor(const torch::Tensor&)> view;
  /// an alias of a tensor listed elsewhere (HF stores tied and shared tensors under several
  /// names): its values must agree, its gradient is counted once
  bool tied = false;

  torch::Tensor value() const;
  /// the parameter's gradient at this tensor (undefined before a backward pass)
  torch::Tensor grad() const;
};

/// Appends `parameter` under HF's `name`, seen through `view` (empty: as it is); `tied`: an alias
/// of a tensor listed elsewhere.
void add_hf_tensor(
    std::vector<HFTensor>& out,
    std::string name,
    torch::Tensor parameter,
    std::function<torch::Tensor(const torch::Tensor&)> view = {},
    bool tied = false);

/// The HF tensor that is row `i` of a per-layer parameter (untied biases).
std::function<torch::Tensor(const torch::Tensor&)> hf_row(int64_t i);

/// Copies a family's tensors from `weights`, then reports every problem at once: missing names,
/// names left over, shape mismatches and tied values that differ are one UserError.
class HFImporter {
 public:
  /// `family` names the model in messages ("Transformer-XL").
  HFImporter(const io::SafeTensors& weights, std::string family)
      : weights_(weights), family_(std::move(family)) {}

  /// Copies each untied tensor of `tensors` (shapes must agree) and checks each tied one: a
  /// tied entry is optional in the file and must equal the model's value when present.
  void take(const std::vector<HFTensor>& tensors);
  /// A name of the file the model does not read (a buffer it recomputes).
  void ignore(const std::string& name);
  /// Throws the UserError listing every problem, if any.
  void finish();

 private:
  void copy(const std::string& name, const torch::Tensor& dest);
  void check_tied(const std::string& name, const torch::Tensor& value);

  const io::SafeTensors& weights_;
  std::string family_;
  std::set<std::string> used_;
  std::vector<std::string> missing_;
  std::vector<std::string> problems_;
  size_t wanted_ = 0; // the model's tensors asked for from the file
};

} // namespace xl::models
