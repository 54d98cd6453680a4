// xl-prep: a vocabulary built and text corpora encoded into a folder of prepared data, in one of
// the registered formats (prep/prep_formats.h), its flags made from their descriptions and
// checked, its files checked before anything is written and swapped in whole.
#pragma once

#include <CLI/CLI.hpp>

#include "xl/prep/prep_formats.h"

namespace xl::app {

/// Adds --format, the splits, --out, --force and every format's own flags, writing into
/// `request`.
void add_prep_flags(CLI::App& app, prep::PrepRequest& request);

/// Writes the prepared files of `request.format` into `request.out`, after checking its flags
/// and every file it will write (an existing one needs `force`). Returns the process exit status.
int run_prep(const prep::PrepRequest& request);

} // namespace xl::app
