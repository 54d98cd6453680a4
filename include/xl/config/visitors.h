// The visitors that walk a schema struct's `fields()` (schema.h): Reader parses a tree strictly,
// Writer dumps YAML, Describer prints the reference table, KeyLister lists the keys. A schema
// struct calls, for each field,
//   v(key, member, help[, limits])                   a scalar, list, optional or enum field
//   v.family(slot, current)                          the registered families' sub-sections
//                                                    (model.transformer_xl, ...), of which
//                                                    only the `current` type's may be set
// SectionOf (at the end) makes a family's schema struct a FamilySection.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "xl/config/config.h"
#include "xl/config/field.h"
#include "xl/config/scalars.h"
#include "xl/config/source.h"
#include "xl/config/tree.h"
#include "xl/util/error.h"
#include "xl/util/utf8.h"

namespace xl::config {

// ============================================================================
// KeyLister: the keys of a schema struct.
// ============================================================================

class KeyLister {
 public:
  template <class T>
  void operator()(const char* key, const T&, const char*, const Limits& = {}) {
    keys.emplace_back(key);
  }
  void family(const FamilySectionSlot& /*slot*/, const std::string& /*current*/) {
    for (const FamilySchema* schema : family_schemas()) {
      if (schema->section) {
        keys.push_back(schema->name);
      }
    }
  }
  std::vector<std::string> keys;
};

template <class Section>
std::vector<std::string> keys_of() {
  Section section;
  KeyLister lister;
  Section::fields(section, lister);
  return lister.keys;
}

// ============================================================================
// Reader: converts a tree into a section struct, rejecting unknown keys.
// ============================================================================

class Reader {
 public:
  /// `prefix` is the section's key path ("model"); `sources` receives where each key was set.
  Reader(const Tree& section, std::string prefix, std::map<std::string, Source>& sources)
      : section_(section), prefix_(std::move(prefix)), sources_(sources) {}

  template <class T>
  void operator()(const char* key, T& member, const char* /*help*/, const Limits& limits = {}) {
    known_.emplace_back(key);
    const Tree* node = section_.find(key);
    if (node == nullptr) {
      return;
    }
    const std::string path = prefix_ + "." + key;
    sources_[path] = node->source;
    read(*node, path, member, effective_limits<T>(limits));
  }

  /// Every family's section is a known key, but only the current type's may be set.
  void family(FamilySectionSlot& slot, const std::string& current) {
    current_family_ = current;
    for (const FamilySchema* schema : family_schemas()) {
      if (!schema->section) {
        continue;
      }
      known_.push_back(schema->name);
      family_keys_[schema->name] = schema->section->keys();
      const Tree* node = section_.find(schema->name);
      if (node != nullptr && schema->name != current) {
        throw ConfigError(fmt::format(
            "{}: {}.{}: these keys are for {}.type {}, but {}.type is {}",
            node->source.str(),
            prefix_,
            schema->name,
            prefix_,
            schema->name,
            prefix_,
            current));
      }
    }
    FamilySection* section = slot.reset(current);
    const Tree* node = section_.find(current);
    if (section == nullptr || node == nullptr) {
      return;
    }
    const std::string path = prefix_ + "." + current;
    if (!node->is_map) {
      fail(*node, path, "expected a mapping of keys", show(node->leaf));
    }
    Reader reader(*node, path, sources_);
    section->read(reader);
    reader.reject_unknown();
  }

  /// Fails on any key of the section that the schema did not ask for, pointing to the family
  /// sub-section that holds a key of that name, or to the closest known key.
  void reject_unknown() const {
    for (const auto& [key, node] : section_.children) {
      if (std::find(known_.begin(), known_.end(), key) != known_.end()) {
        continue;
      }
      std::string message = node.source.str() + ": unknown key '" + prefix_ + "." + key + "'";
      // The current family's section first: several families have keys of the same name.
      std::vector<std::string> families{current_family_};
      for (const auto& entry : family_keys_) {
        families.push_back(entry.first);
      }
      for (const auto& family : families) {
        const auto found = family_keys_.find(family);
        if (found != family_keys_.end() &&
            std::find(found->second.begin(), found->second.end(), key) != found->second.end()) {
          throw ConfigError(fmt::format(
              "{}: it belongs to the family section: write {}.{}.{}",
              message,
              prefix_,
              family,
              key));
        }
      }
      const std::string guess = closest_key(key, known_);
      if (!guess.empty()) {
        message += " (did you mean '" + prefix_ + "." + guess + "'?)";
      } else {
        message +=
            "; valid keys in '" + prefix_ + "': " + fmt::format("{}", fmt::join(known_, ", "));
      }
      throw ConfigError(message);
    }
  }

 private:
  [[noreturn]] static void fail(
      const Tree& node,
      const std::string& path,
      const std::string& expected,
      const std::string& found) {
    throw ConfigError(node.source.str() + ": " + path + ": " + expected + ", found " + found);
  }

  template <class T>
  static void check_value(
      const Tree& node,
      const std::string& path,
      const T& value,
      const Limits& limits) {
    if (!within(value, limits)) {
      fail(node, path, expectation<T>(limits), format_value(value));
    }
    if constexpr (std::is_same_v<T, std::string>) {
      // Names and paths end up in config.yaml and the metrics, UTF-8 documents.
      if (const Utf8Check check = check_utf8(value); check.invalid > 0) {
        fail(
            node,
            path,
            "expected UTF-8 text",
            fmt::format(
                "the byte 0x{:02X} at offset {}",
                static_cast<unsigned char>(value[check.first]),
                check.first));
      }
    }
    if (const std::string problem = float32_problem(value); !problem.empty()) {
      fail(
          node,
          path,
          expectation<T>(limits) + " that a float32 holds (the model computes in float32)",
          format_value(value) + ", " + problem);
    }
  }

  template <class T>
  void read(const Tree& node, const std::string& path, T& member, const Limits& limits) {
    if (node.is_map) {
      fail(node, path, expectation<T>(limits), "a mapping");
    }
    T value{};
    if (!parse_scalar(node.leaf, value)) {
      fail(node, path, expectation<T>(limits), show(node.leaf));
    }
    check_value(node, path, value, limits);
    member = value;
  }

  template <class T>
  void read(
      const Tree& node,
      const std::string& path,
      std::optional<T>& member,
      const Limits& limits) {
    if (!node.is_map && node.leaf.IsNull()) {
      member.reset();
      return;
    }
    T value{};
    read(node, path, value, limits);
    member = value;
  }

  template <class T>
  void read(
      const Tree& node,
      const std::string& path,
      std::vector<T>& member,
      const Limits& limits) {
    const std::string expected = "expected a " + type_name<std::vector<T>>() +
        (limits.describe().empty() ? "" : " " + limits.describe());
    if (node.is_map || !node.leaf.IsSequence()) {
      fail(node, path, expected, node.is_map ? "a mapping" : show(node.leaf));
    }
    std::vector<T> values;
    for (size_t i = 0; i < node.leaf.size(); ++i) {
      T value{};
      const YAML::Node item = node.leaf[i];
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      if (!parse_scalar(item, value)) {
        fail(node, item_path, expectation<T>(limits), show(item));
      }
      check_value(node, item_path, value, limits);
      values.push_back(value);
    }
    member = std::move(values);
  }

  const Tree& section_;
  std::string prefix_;
  std::map<std::string, Source>& sources_;
  std::vector<std::string> known_;
  std::map<std::string, std::vector<std::string>> family_keys_;
  /// the family sub-section of the section's current type
  std::string current_family_;
};

// ============================================================================
// Writer: emits the resolved section as YAML, in schema order.
// ============================================================================

class Writer {
 public:
  Writer(std::string& out, std::string indent) : out_(out), indent_(std::move(indent)) {}

  template <class T>
  void operator()(const char* key, const T& member, const char* /*help*/, const Limits& = {}) {
    out_ += indent_ + key + ": " + render(member) + "\n";
  }

  /// Only the current family's sub-section is written.
  void family(const FamilySectionSlot& slot, const std::string& current) {
    const FamilySection* section = slot.of(current);
    if (section == nullptr) {
      return;
    }
    out_ += indent_ + current + ":\n";
    Writer writer(out_, indent_ + "  ");
    section->write(writer);
  }

  /// A value as it appears in the YAML.
  template <class T>
  static std::string render(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      return quote(v);
    } else {
      return format_value(v);
    }
  }
  template <class T>
  static std::string render(const std::optional<T>& v) {
    return v ? render(*v) : "null";
  }
  template <class T>
  static std::string render(const std::vector<T>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      s += (i ? ", " : "") + render(static_cast<T>(v[i]));
    }
    return s + "]";
  }

 private:
  static std::string quote(const std::string& s);

  std::string& out_;
  std::string indent_;
};

// ============================================================================
// Describer: the reference, one Markdown row per key.
// ============================================================================

class Describer {
 public:
  Describer(std::string& out, std::string prefix) : out_(out), prefix_(std::move(prefix)) {}

  template <class T>
  void operator()(const char* key, const T& member, const char* help, const Limits& limits = {}) {
    std::string type = type_name<T>();
    const std::string range = effective_limits<T>(limits).describe();
    if (!range.empty()) {
      type += ", " + range;
    }
    out_ += fmt::format(
        "| `{}.{}` | {} | `{}` | {} |\n", prefix_, key, type, Writer::render(member), help);
  }

  /// Every family's sub-section, with its defaults.
  void family(const FamilySectionSlot& /*slot*/, const std::string& /*current*/) {
    for (const FamilySchema* schema : family_schemas()) {
      if (schema->section) {
        Describer describer(out_, prefix_ + "." + schema->name);
        schema->section->describe(describer);
      }
    }
  }

 private:
  std::string& out_;
  std::string prefix_;
};

// ============================================================================
// SectionOf: a family's schema struct S (models/<family>/config.h) as a FamilySection.
// ============================================================================

template <class S>
class SectionOf final : public FamilySection {
 public:
  std::unique_ptr<FamilySection> clone() const override {
    return std::make_unique<SectionOf>(*this);
  }
  const std::type_info& type() const override {
    return typeid(S);
  }
  void* data() override {
    return &value_;
  }
  const void* data() const override {
    return &value_;
  }
  std::vector<std::string> keys() const override {
    return keys_of<S>();
  }
  void read(Reader& reader) override {
    S::fields(value_, reader);
  }
  void write(Writer& writer) const override {
    S::fields(value_, writer);
  }
  void describe(Describer& describer) const override {
    S::fields(value_, describer);
  }

 private:
  S value_;
};

/// The defaults of family section S, for FamilySchema::section.
template <class S>
std::shared_ptr<const FamilySection> section_of() {
  return std::make_shared<const SectionOf<S>>();
}

} // namespace xl::config
