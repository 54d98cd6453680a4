// xl's version: `git describe` of the tree it was built from ("03a042c", "v0.2-4-g1a2b3c4-dirty"),
// or "unknown" when built outside a git checkout, logged in every run's first metrics record;
// and the project's version (CMake's project(VERSION), "0.1.0"), which find_package(xl) checks.
#pragma once

namespace xl {

const char* version();
const char* project_version();

} // namespace xl
