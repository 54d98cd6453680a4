// Linked into the test builds of the apps (test-bin/): the test families are registered before
// main(), as the built-in ones are (src/models/builtin_families.cpp).
#include "families/test_families.h"

namespace {

const bool kTestFamiliesRegistered = (xl::test::register_test_families(), true);

} // namespace
