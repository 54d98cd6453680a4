// xl's version: `git describe` of the tree it was built from ("03a042c", "v0.2-4-g1a2b3c4-dirty"),
// or "unknown" when built outside a git checkout. Logged in every run's first metrics record.
#pragma once

namespace xl {

const char* version();

} // namespace xl
