#include "xl/io/archive.h"

namespace xl::io {

namespace {

c10::IValue read_value(
    torch::serialize::InputArchive& archive,
    const std::string& key) {
  c10::IValue value;
  TORCH_CHECK(archive.try_read(key, value), "archive has no entry '", key, "'");
  return value;
}

} // namespace

void write_int(
    torch::serialize::OutputArchive& archive,
    const std::string& key,
    int64_t value) {
  archive.write(key, c10::IValue(value));
}

void write_double(
    torch::serialize::OutputArchive& archive,
    const std::string& key,
    double value) {
  archive.write(key, c10::IValue(value));
}

void write_string(
    torch::serialize::OutputArchive& archive,
    const std::string& key,
    const std::string& value) {
  archive.write(key, c10::IValue(value));
}

int64_t read_int(
    torch::serialize::InputArchive& archive,
    const std::string& key) {
  const auto value = read_value(archive, key);
  TORCH_CHECK(value.isInt(), "archive entry '", key, "' is not an integer");
  return value.toInt();
}

double read_double(
    torch::serialize::InputArchive& archive,
    const std::string& key) {
  const auto value = read_value(archive, key);
  TORCH_CHECK(value.isDouble(), "archive entry '", key, "' is not a number");
  return value.toDouble();
}

std::string read_string(
    torch::serialize::InputArchive& archive,
    const std::string& key) {
  const auto value = read_value(archive, key);
  TORCH_CHECK(value.isString(), "archive entry '", key, "' is not a string");
  return value.toStringRef();
}

void write_module(
    torch::serialize::OutputArchive& archive,
    const std::string& key,
    const torch::nn::Module& module) {
  torch::serialize::OutputArchive sub;
  module.save(sub);
  archive.write(key, sub);
}

void read_module(
    torch::serialize::InputArchive& archive,
    const std::string& key,
    torch::nn::Module& module) {
  torch::serialize::InputArchive sub;
  archive.read(key, sub);
  module.load(sub);
}

} // namespace xl::io
