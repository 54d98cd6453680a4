// The model families only the tests have (tests/families/<family>/, one folder each, with its
// tiny config): registered as a user's program would register its own family
// (models::register_model_family). The family contract suites run them beside the built-in
// families, in process and through the apps (the test builds of the apps in test-bin/ register
// them before main()).
#pragma once

namespace xl::test {

/// Registers each test family that is not registered yet. A test that loads their configs
/// calls it first; the test-bin apps call it before main().
void register_test_families();

} // namespace xl::test
