// Reading and writing safetensors files
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length, a JSON header mapping each name to dtype, shape and byte range, then
// the raw little-endian data. No pickle: this is how weights travel between xl
// and the Python ecosystem (parity tests, imported checkpoints).
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace xl::io {

/// All tensors of a safetensors file, on the CPU, in file order of names.
class SafeTensors {
 public:
  /// Reads `path`; a missing, truncated or malformed file is a UserError naming
  /// it.
  static SafeTensors load(const std::filesystem::path& path);

  bool contains(const std::string& name) const;
  /// The tensor `name`; a UserError naming the file when absent.
  const torch::Tensor& at(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::map<std::string, std::string>& metadata() const {
    return metadata_;
  }
  const std::filesystem::path& path() const {
    return path_;
  }

 private:
  std::filesystem::path path_;
  std::map<std::string, torch::Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// Writes `tensors` (any device; float32/64, bf16, f16, int64/32/16, uint8,
/// bool) atomically.
void save_safetensors(
    const std::filesystem::path& path,
    const std::map<std::string, torch::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata = {});

} // namespace xl::io
