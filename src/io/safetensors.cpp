#include "xl/io/safetensors.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/utf8.h"

namespace xl::io {

namespace {

// A JSON array of whole numbers (>= 0 for an unsigned T), or nothing. nlohmann's own
// conversion casts a float or a negative number to an integer type unchecked (undefined for a
// float out of range: a fuzz finding).
template <typename T>
std::optional<std::vector<T>> integers(const nlohmann::json& array) {
  if (!array.is_array()) {
    return std::nullopt;
  }
  std::vector<T> out;
  for (const auto& v : array) {
    if (!(std::is_signed_v<T> ? v.is_number_integer() : v.is_number_unsigned())) {
      return std::nullopt;
    }
    out.push_back(v.get<T>());
  }
  return out;
}

struct DtypeName {
  const char* name;
  torch::ScalarType type;
};

constexpr DtypeName kDtypes[] = {
    {"F64", torch::kFloat64},
    {"F32", torch::kFloat32},
    {"F16", torch::kFloat16},
    {"BF16", torch::kBFloat16},
    {"I64", torch::kInt64},
    {"I32", torch::kInt32},
    {"I16", torch::kInt16},
    {"I8", torch::kInt8},
    {"U8", torch::kUInt8},
    {"BOOL", torch::kBool},
};

const char* dtype_name(torch::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (d.type == type) {
      return d.name;
    }
  }
  throw UserError(std::string("safetensors: unsupported dtype ") + c10::toString(type));
}

// A file that breaks the format.
UserError not_safetensors(const std::filesystem::path& path, const std::string& what) {
  return UserError(path.string() + ": not a valid safetensors file: " + what);
}

// The JSON header and where the data after it starts.
std::pair<nlohmann::json, size_t> read_header(
    const std::filesystem::path& path,
    const std::string& bytes) {
  if (bytes.size() < 8) {
    throw not_safetensors(path, "shorter than its 8-byte header length");
  }
  uint64_t header_size = 0;
  for (int b = 7; b >= 0; --b) {
    header_size = (header_size << 8) | static_cast<unsigned char>(bytes[b]);
  }
  if (header_size > bytes.size() - 8) {
    throw not_safetensors(
        path, fmt::format("header of {} bytes in a file of {} bytes", header_size, bytes.size()));
  }
  if (header_size == 0) {
    throw not_safetensors(path, "its header is empty (a length of 0)");
  }
  const std::string_view text(bytes.data() + 8, header_size);
  if (const auto check = check_utf8(text); check.invalid > 0) {
    throw not_safetensors(
        path,
        fmt::format(
            "its header is not UTF-8 text (byte 0x{:02X} at {})",
            static_cast<unsigned char>(text[check.first]),
            8 + check.first));
  }
  // JSON keeps the last of two entries of one name: a second tensor of a name is named here.
  std::set<std::string> names;
  std::string twice;
  const nlohmann::json::parser_callback_t named =
      [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string() &&
            !names.insert(parsed.get<std::string>()).second && twice.empty()) {
          twice = parsed.get<std::string>();
        }
        return true;
      };
  auto header = nlohmann::json::parse(text, named, /*allow_exceptions=*/false);
  if (header.is_discarded()) {
    throw not_safetensors(path, fmt::format("its header of {} bytes is not JSON", header_size));
  }
  if (!twice.empty()) {
    throw not_safetensors(path, fmt::format("its header names tensor '{}' twice", twice));
  }
  if (!header.is_object()) {
    throw not_safetensors(
        path,
        fmt::format(
            "its header is a JSON {}, expected an object of tensors by name", header.type_name()));
  }
  return {std::move(header), 8 + header_size};
}

// The bytes a tensor of `type` and `shape` takes, or more than `data_size` where that is more
// than the file holds (checked before anything is allocated).
size_t claimed_bytes(c10::ScalarType type, const std::vector<int64_t>& shape, size_t data_size) {
  size_t nbytes = c10::elementSize(type);
  for (const int64_t d : shape) {
    if (d < 0 || (d > 0 && nbytes > data_size / static_cast<size_t>(d))) {
      return data_size + 1;
    }
    nbytes *= static_cast<size_t>(d);
  }
  return nbytes;
}

// The tensor of header entry `name`, copied out of `data` (`data_size` bytes).
torch::Tensor read_tensor(
    const std::filesystem::path& path,
    const std::string& name,
    const nlohmann::json& entry,
    const char* data,
    size_t data_size) {
  if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
      !entry.contains("shape") || !entry.contains("data_offsets")) {
    throw not_safetensors(
        path,
        fmt::format(
            "tensor '{}' needs an object with a dtype (text), a shape and data_offsets, found "
            "{}",
            name,
            entry.dump().substr(0, 80)));
  }
  const std::string dtype = entry.at("dtype").get<std::string>();
  const auto shape_or = integers<int64_t>(entry.at("shape"));
  const auto offsets_or = integers<size_t>(entry.at("data_offsets"));
  if (!shape_or || !offsets_or) {
    throw not_safetensors(
        path,
        fmt::format(
            "tensor '{}' needs whole numbers for its shape and byte offsets, found {} and {}",
            name,
            entry.at("shape").dump(),
            entry.at("data_offsets").dump()));
  }
  const auto& shape = *shape_or;
  const auto& offsets = *offsets_or;
  const DtypeName* found = nullptr;
  for (const auto& d : kDtypes) {
    if (dtype == d.name) {
      found = &d;
    }
  }
  if (found == nullptr) {
    throw not_safetensors(path, fmt::format("tensor '{}' has unsupported dtype {}", name, dtype));
  }
  const size_t nbytes = claimed_bytes(found->type, shape, data_size);
  if (offsets.size() != 2 || offsets[1] < offsets[0] || offsets[1] > data_size ||
      offsets[1] - offsets[0] != nbytes) {
    throw not_safetensors(
        path,
        fmt::format(
            "tensor '{}' ({} {}) has byte range [{}, {}) in {} data bytes",
            name,
            dtype,
            fmt::join(shape, "x"),
            offsets.size() > 0 ? offsets[0] : 0,
            offsets.size() > 1 ? offsets[1] : 0,
            data_size));
  }
  auto tensor = torch::empty(shape, torch::dtype(found->type));
  std::memcpy(tensor.data_ptr(), data + offsets[0], nbytes);
  return tensor;
}

// Two tensors whose byte ranges overlap would read each other's values: named, with the bytes.
void refuse_shared_bytes(const std::filesystem::path& path, const nlohmann::json& header) {
  std::vector<std::tuple<size_t, size_t, std::string>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__" || !entry.is_object() || !entry.contains("data_offsets")) {
      continue; // refused by read_tensor
    }
    const auto offsets = integers<size_t>(entry.at("data_offsets"));
    if (offsets && offsets->size() == 2 && (*offsets)[0] < (*offsets)[1]) {
      ranges.emplace_back((*offsets)[0], (*offsets)[1], name);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  // Sorted by start, a range overlapping any earlier one overlaps the one just before it.
  for (size_t i = 1; i < ranges.size(); ++i) {
    const auto& [begin, end, name] = ranges[i];
    const auto& [before_begin, before_end, before] = ranges[i - 1];
    if (begin < before_end) {
      throw not_safetensors(
          path,
          fmt::format(
              "tensors '{}' and '{}' share the bytes [{}, {})",
              before,
              name,
              begin,
              std::min(end, before_end)));
    }
  }
}

} // namespace

SafeTensors SafeTensors::load(const std::filesystem::path& path) {
  const std::string bytes = read_file(path, "safetensors file");
  const auto [header, data_start] = read_header(path, bytes);
  const size_t data_size = bytes.size() - data_start;
  refuse_shared_bytes(path, header);
  SafeTensors out;
  out.path_ = path;
  for (const auto& [name, entry] : header.items()) {
    try {
      if (name == "__metadata__") {
        if (!entry.is_object()) {
          throw not_safetensors(path, "its __metadata__ is no object of texts");
        }
        for (const auto& [k, v] : entry.items()) {
          if (!v.is_string()) {
            throw not_safetensors(
                path, fmt::format("metadata '{}' is {}, expected text", k, v.dump().substr(0, 40)));
          }
          out.metadata_[k] = v.get<std::string>();
        }
        continue;
      }
      out.tensors_.emplace(
          name, read_tensor(path, name, entry, bytes.data() + data_start, data_size));
    } catch (const nlohmann::json::exception&) { // a shape of the wrong kind, say
      throw not_safetensors(
          path, fmt::format("tensor '{}' is malformed: {}", name, entry.dump().substr(0, 80)));
    }
  }
  return out;
}

bool SafeTensors::contains(const std::string& name) const {
  return tensors_.count(name) > 0;
}

const torch::Tensor& SafeTensors::at(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    throw UserError(path_.string() + ": no tensor named '" + name + "'");
  }
  return it->second;
}

std::vector<std::string> SafeTensors::names() const {
  std::vector<std::string> names;
  for (const auto& [name, unused] : tensors_) {
    names.push_back(name);
  }
  return names;
}

void save_safetensors(
    const std::filesystem::path& path,
    const std::map<std::string, torch::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) {
    header["__metadata__"] = metadata;
  }
  std::vector<torch::Tensor> contiguous;
  size_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    auto t = tensor.detach().to(torch::kCPU).contiguous();
    const size_t nbytes = t.numel() * t.element_size();
    header[name] = {
        {"dtype", dtype_name(t.scalar_type())},
        {"shape", t.sizes().vec()},
        {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    contiguous.push_back(std::move(t));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' '); // keeps the data 8-byte aligned
  atomic_write(path, [&](const ByteSink& sink) {
    unsigned char size_bytes[8];
    uint64_t size = text.size();
    for (auto& b : size_bytes) {
      b = static_cast<unsigned char>(size & 0xff);
      size >>= 8;
    }
    sink(size_bytes, sizeof(size_bytes));
    sink(text.data(), text.size());
    for (const auto& t : contiguous) {
      sink(t.data_ptr(), t.numel() * t.element_size());
    }
  });
}

} // namespace xl::io
