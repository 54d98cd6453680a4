// xl-prep: a vocabulary built and text corpora encoded into a folder of prepared data, in one of
// the registered formats (prep/prep_formats.h), checked before anything is written and swapped in
// whole.
#pragma once

#include "xl/prep/prep_formats.h"

namespace xl::app {

/// Writes the prepared files of `request.format` into `request.out`, after checking every file
/// it will write (an existing one needs `force`). Returns the process exit status.
int run_prep(const prep::PrepRequest& request);

} // namespace xl::app
