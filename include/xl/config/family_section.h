// A model family's own keys (model.<family>) as the config layer sees them. The sections live
// in their families' folders (models/<family>/config.h), above this layer, so the config knows
// each one only through the FamilySchema the family registers (models::register_model_family):
// its name, its section behind the FamilySection interface (config::SectionOf wraps a schema
// struct, visitors.h), and the rules that involve its keys.
#pragma once

#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

namespace xl::config {

struct Config;
class Reader;
class Writer;
class Describer;

/// One family's section: a schema struct with `fields()`, walked by the visitors like the others.
class FamilySection {
 public:
  virtual ~FamilySection() = default;
  virtual std::unique_ptr<FamilySection> clone() const = 0;
  /// The schema struct held, and where it is.
  virtual const std::type_info& type() const = 0;
  virtual void* data() = 0;
  virtual const void* data() const = 0;
  virtual std::vector<std::string> keys() const = 0;
  virtual void read(Reader& reader) = 0;
  virtual void write(Writer& writer) const = 0;
  virtual void describe(Describer& describer) const = 0;
};

/// What the config layer knows of a model family.
struct FamilySchema {
  /// model.type's value, and the key of the family's section
  std::string name;
  /// the section's keys and their defaults (null: the family has the common keys only)
  std::shared_ptr<const FamilySection> section;
  /// the rules between the section's keys and the rest of the config (null: none)
  void (*validate)(const Config& config) = nullptr;
  /// whether `config` reads labelled examples, which data.train_examples and
  /// train.group_by_length are about (null: never), and when it does, in words
  /// ("model.xlnet.n_class > 0")
  bool (*labelled)(const Config& config) = nullptr;
  std::string labelled_when;
  /// whether the family can carry a memory from batch to batch (Transformer-XL's recurrence,
  /// XLNet's reused segment). One that cannot is evaluated in eval.mode vanilla only, refused
  /// otherwise by the config with one message for every such family, and its evaluations
  /// keep no memory (models::eval_span).
  bool carries_memory = true;
};

/// Lets configs name `family` in model.type from now on. A name taken is a UserError.
void register_family_schema(FamilySchema family);

/// The names model.type accepts, in order of registration.
std::vector<std::string> model_types();

/// The schema registered under `name` (nullptr: none). It stays valid while the process runs.
const FamilySchema* family_schema(const std::string& name);

/// Every registered schema, in order of registration.
std::vector<const FamilySchema*> family_schemas();

/// ModelConfig's slot for the section of model.type's family: a copy copies the section. Code
/// reads it through ModelConfig::section<S>(); the visitors read and write it whole.
class FamilySectionSlot {
 public:
  FamilySectionSlot() = default;
  FamilySectionSlot(const FamilySectionSlot& other);
  FamilySectionSlot& operator=(const FamilySectionSlot& other);
  FamilySectionSlot(FamilySectionSlot&&) noexcept = default;
  FamilySectionSlot& operator=(FamilySectionSlot&&) noexcept = default;
  ~FamilySectionSlot() = default;

  /// The section of family `type`: the one held where it is that family's, else its defaults
  /// (nullptr: the family has no section).
  const FamilySection* of(const std::string& type) const;
  /// Holds a copy of family `type`'s defaults from now on (nothing where it has no section),
  /// and returns it to read into.
  FamilySection* reset(const std::string& type);

  /// The struct of type `type` held, or else the defaults of the family whose section it is
  /// (the mutable one first holds a copy of them). A type no family registered is a logic error.
  const void* find(const std::type_info& type) const;
  void* find(const std::type_info& type);

 private:
  std::unique_ptr<FamilySection> section_;
};

} // namespace xl::config
