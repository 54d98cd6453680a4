// A config's family section: the one struct of the active family's keys, copied with the config,
// read through the registered defaults until the config sets it.
#include "xl/config/family_section.h"

#include <fmt/format.h>

#include <stdexcept>
#include <typeinfo>

namespace xl::config {

FamilySectionSlot::FamilySectionSlot(const FamilySectionSlot& other)
    : section_(other.section_ ? other.section_->clone() : nullptr) {}

FamilySectionSlot& FamilySectionSlot::operator=(const FamilySectionSlot& other) {
  if (this != &other) {
    section_ = other.section_ ? other.section_->clone() : nullptr;
  }
  return *this;
}

const FamilySection* FamilySectionSlot::of(const std::string& type) const {
  const FamilySchema* schema = family_schema(type);
  if (schema == nullptr || !schema->section) {
    return nullptr;
  }
  if (section_ && section_->type() == schema->section->type()) {
    return section_.get();
  }
  return schema->section.get();
}

FamilySection* FamilySectionSlot::reset(const std::string& type) {
  const FamilySchema* schema = family_schema(type);
  section_ = schema != nullptr && schema->section ? schema->section->clone() : nullptr;
  return section_.get();
}

namespace {

// The registered defaults of the section struct of type `type`.
const FamilySection& registered_section(const std::type_info& type) {
  for (const FamilySchema* schema : family_schemas()) {
    if (schema->section && schema->section->type() == type) {
      return *schema->section;
    }
  }
  throw std::logic_error(
      fmt::format("no model family registered a config section of type {}", type.name()));
}

} // namespace

const void* FamilySectionSlot::find(const std::type_info& type) const {
  if (section_ && section_->type() == type) {
    return section_->data();
  }
  return registered_section(type).data();
}

void* FamilySectionSlot::find(const std::type_info& type) {
  if (!section_ || section_->type() != type) {
    section_ = registered_section(type).clone();
  }
  return section_->data();
}

} // namespace xl::config
