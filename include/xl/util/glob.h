// Shell-style name patterns, for the config keys that name parameters (train.freeze,
// train.init_exclude).
#pragma once

#include <string_view>

namespace xl {

/// Whether `name` matches `pattern` as a whole: `*` stands for any run of characters (dots
/// included, so "layers.*" names every layer's parameters), `?` for one character, anything
/// else for itself.
bool glob_match(std::string_view pattern, std::string_view name);

} // namespace xl
