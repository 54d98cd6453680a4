// Scalars in LibTorch archives (checkpoints): typed writes and reads by key.
#pragma once

#include <torch/torch.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace xl::io {

void write_int(torch::serialize::OutputArchive& archive, const std::string& key, int64_t value);
void write_double(torch::serialize::OutputArchive& archive, const std::string& key, double value);
void write_string(
    torch::serialize::OutputArchive& archive,
    const std::string& key,
    const std::string& value);

/// The value under `key`; a missing key or another type is a c10::Error naming the key.
int64_t read_int(torch::serialize::InputArchive& archive, const std::string& key);
/// read_int, or `fallback` where the archive has no `key` (a key newer than the archive).
int64_t read_int_or(
    torch::serialize::InputArchive& archive,
    const std::string& key,
    int64_t fallback);
double read_double(torch::serialize::InputArchive& archive, const std::string& key);
std::string read_string(torch::serialize::InputArchive& archive, const std::string& key);

/// `module`'s parameters and buffers as the sub-archive `key`.
void write_module(
    torch::serialize::OutputArchive& archive,
    const std::string& key,
    const torch::nn::Module& module);

/// Every tensor (parameters and buffers) of the sub-archive `key`, as write_module nests them,
/// by dotted name ("layers.0.attn.qkv.weight"); empty when there is no such sub-archive.
std::map<std::string, torch::Tensor> read_tensors(
    torch::serialize::InputArchive& archive,
    const std::string& key);

/// Reads every parameter of `module` from the sub-archive `key`, in place. A parameter the
/// archive lacks or holds with another shape, or an archive LibTorch cannot read, is a
/// UserError naming `what` (the file). Buffers are not read: they are derived from the options.
void read_module(
    torch::serialize::InputArchive& archive,
    const std::string& key,
    torch::nn::Module& module,
    const std::string& what);

/// Reads the parameters of `module` that the archive holds under `key` (a module written by
/// write_module, perhaps of a model with other heads), leaving the others, and those `keep`
/// names, as they are. Returns the names of those left but `keep`'s; a parameter held with
/// another shape is a UserError listing all such.
std::vector<std::string> read_module_matching(
    torch::serialize::InputArchive& archive,
    const std::string& key,
    torch::nn::Module& module,
    const std::string& what,
    const std::set<std::string>& keep = {});

} // namespace xl::io
