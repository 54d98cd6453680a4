// Registers the built-in model families before main(): config::load must know their sections
// (model.<family>) before any code asks the registry anything. src/CMakeLists.txt links this
// file into every program as an object file, which no static-library link can leave out.
#include "xl/models/registry.h"

namespace {

const bool kBuiltinFamiliesRegistered = (xl::models::model_families(), true);

} // namespace
