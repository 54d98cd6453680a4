// A read-only sequence of token ids, as the batch sources read it: a memory-mapped TokenFile, or
// ids held in a tensor (benchmarks and tests, which need no prepared corpus).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace xl::formats {

/// Where a token stands in the text it was read from: its first byte, and the bytes it stems
/// from (a user's word where the model reads <unk>; "\n" for a line end).
struct TokenOrigin {
  int64_t offset = 0;
  std::string text;
};

class Tokens {
 public:
  virtual ~Tokens() = default;
  virtual int64_t size() const = 0;
  /// Tokens [start, start + length) as an int64 tensor (a copy).
  virtual torch::Tensor slice(int64_t start, int64_t length) const = 0;
  /// What the tokens are, for messages: the file, or a description.
  virtual std::string name() const = 0;
  /// Whether origins() knows where each token stands (a user's text read to list its tokens).
  virtual bool has_origins() const {
    return false;
  }
  /// The origins of tokens [start, start + length), where has_origins().
  virtual std::vector<TokenOrigin> origins(int64_t start, int64_t length) const;
};

/// Checks that [start, start + length) lies within the `size` tokens of `name` (a logic error
/// otherwise: the sources ask only for what the text holds).
void check_slice(int64_t start, int64_t length, int64_t size, const std::string& name);

/// Tokens held in a 1-D int64 tensor on the CPU.
class TokenTensor : public Tokens {
 public:
  TokenTensor(torch::Tensor ids, std::string name);
  int64_t size() const override {
    return ids_.size(0);
  }
  torch::Tensor slice(int64_t start, int64_t length) const override;
  std::string name() const override {
    return name_;
  }

 private:
  torch::Tensor ids_;
  std::string name_;
};

} // namespace xl::formats
