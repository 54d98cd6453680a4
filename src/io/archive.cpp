#include "xl/io/archive.h"

#include <fmt/format.h>

#include "xl/util/error.h"

namespace xl::io {

namespace {

c10::IValue read_value(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue value;
  TORCH_CHECK(archive.try_read(key, value), "archive has no entry '", key, "'");
  return value;
}

} // namespace

void write_int(torch::serialize::OutputArchive& archive, const std::string& key, int64_t value) {
  archive.write(key, c10::IValue(value));
}

void write_double(torch::serialize::OutputArchive& archive, const std::string& key, double value) {
  archive.write(key, c10::IValue(value));
}

void write_string(
    torch::serialize::OutputArchive& archive,
    const std::string& key,
    const std::string& value) {
  archive.write(key, c10::IValue(value));
}

int64_t read_int(torch::serialize::InputArchive& archive, const std::string& key) {
  const auto value = read_value(archive, key);
  TORCH_CHECK(value.isInt(), "archive entry '", key, "' is not an integer");
  return value.toInt();
}

int64_t read_int_or(
    torch::serialize::InputArchive& archive,
    const std::string& key,
    int64_t fallback) {
  c10::IValue value;
  if (!archive.try_read(key, value)) {
    return fallback;
  }
  TORCH_CHECK(value.isInt(), "archive entry '", key, "' is not an integer");
  return value.toInt();
}

double read_double(torch::serialize::InputArchive& archive, const std::string& key) {
  const auto value = read_value(archive, key);
  TORCH_CHECK(value.isDouble(), "archive entry '", key, "' is not a number");
  return value.toDouble();
}

std::string read_string(torch::serialize::InputArchive& archive, const std::string& key) {
  const auto value = read_value(archive, key);
  TORCH_CHECK(value.isString(), "archive entry '", key, "' is not a string");
  return value.toStringRef();
}

namespace {

void flatten(
    torch::serialize::InputArchive& archive,
    const std::string& prefix,
    std::map<std::string, torch::Tensor>& out) {
  for (const auto& key : archive.keys()) {
    torch::Tensor tensor;
    torch::serialize::InputArchive child;
    if (archive.try_read(key, tensor)) {
      out[prefix + key] = tensor;
    } else if (archive.try_read(key, child)) {
      flatten(child, prefix + key + ".", out);
    }
  }
}

} // namespace

std::map<std::string, torch::Tensor> read_tensors(
    torch::serialize::InputArchive& archive,
    const std::string& key) {
  std::map<std::string, torch::Tensor> out;
  torch::serialize::InputArchive sub;
  if (archive.try_read(key, sub)) {
    flatten(sub, "", out);
  }
  return out;
}

void write_module(
    torch::serialize::OutputArchive& archive,
    const std::string& key,
    const torch::nn::Module& module) {
  torch::serialize::OutputArchive sub;
  module.save(sub);
  archive.write(key, sub);
}

namespace {

// Parameters of `module` (named `prefix`...) found in `archive` are copied, but those `keep`
// names; the names of the others go to `left`, shape mismatches to `wrong`.
void read_matching(
    torch::serialize::InputArchive& archive,
    torch::nn::Module& module,
    const std::string& prefix,
    const std::set<std::string>& keep,
    std::vector<std::string>& left,
    std::vector<std::string>& wrong) {
  torch::NoGradGuard no_grad;
  for (auto& item : module.named_parameters(/*recurse=*/false)) {
    const std::string name = prefix + item.key();
    torch::Tensor stored;
    if (keep.count(name) > 0) {
      continue;
    }
    if (!archive.try_read(item.key(), stored)) {
      left.push_back(name);
    } else if (stored.sizes() != item.value().sizes()) {
      wrong.push_back(fmt::format(
          "{}: [{}] stored, [{}] here",
          name,
          fmt::join(stored.sizes(), ", "),
          fmt::join(item.value().sizes(), ", ")));
    } else {
      item.value().copy_(stored);
    }
  }
  for (auto& child : module.named_children()) {
    torch::serialize::InputArchive sub;
    if (archive.try_read(child.key(), sub)) {
      read_matching(sub, *child.value(), prefix + child.key() + ".", keep, left, wrong);
    } else {
      for (const auto& p : child.value()->named_parameters()) {
        const std::string name = prefix + child.key() + "." + p.key();
        if (keep.count(name) == 0) {
          left.push_back(name);
        }
      }
    }
  }
}

} // namespace

std::vector<std::string> read_module_matching(
    torch::serialize::InputArchive& archive,
    const std::string& key,
    torch::nn::Module& module,
    const std::string& what,
    const std::set<std::string>& keep) {
  std::vector<std::string> left;
  std::vector<std::string> wrong;
  try {
    torch::serialize::InputArchive sub;
    archive.read(key, sub);
    read_matching(sub, module, "", keep, left, wrong);
  } catch (const c10::Error& e) {
    throw UserError(fmt::format(
        "{}: cannot read the tensors of '{}': {}", what, key, e.what_without_backtrace()));
  }
  if (!wrong.empty()) {
    throw UserError(fmt::format(
        "{}: {} parameters have other shapes than this model's:\n  {}",
        what,
        wrong.size(),
        fmt::join(wrong, "\n  ")));
  }
  return left;
}

void read_module(
    torch::serialize::InputArchive& archive,
    const std::string& key,
    torch::nn::Module& module,
    const std::string& what) {
  const auto left = read_module_matching(archive, key, module, what);
  if (!left.empty()) {
    throw UserError(fmt::format(
        "{}: {} parameters of this model are missing: {}",
        what,
        left.size(),
        fmt::join(left, ", ")));
  }
}

} // namespace xl::io
