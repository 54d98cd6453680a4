// NSMC (Naver sentiment movie corpus): its ratings tsv turned into a raw pretraining corpus
// and labelled text files (formats/labelled_file.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "xl/formats/labelled_file.h"

namespace xl::prep {

struct NsmcCounts {
  int64_t documents = 0;
  int64_t sentences = 0;
  /// rows with an empty document, left out of both outputs
  int64_t empty = 0;
};

/// Reads NSMC's ratings tsv (a header line, then `id<TAB>document<TAB>label`, CSV-quoted
/// documents unquoted) and writes, atomically, the raw pretraining corpus `raw` (each review
/// split into sentences as ratsgo's process_documents, one per line, a blank line after each
/// review) and the labelled file `labelled`. A missing column or a label other than 0 or 1 is a
/// UserError naming the file and line; so is a file without any document.
/// With `held_out` > 0 the last `held_out` documents go to `held_raw` and `held_labelled`
/// instead (a validation split carved from the training file); fewer documents than that is a
/// UserError.
NsmcCounts convert_nsmc(
    const std::filesystem::path& tsv,
    const std::filesystem::path& raw,
    const std::filesystem::path& labelled,
    int64_t held_out = 0,
    const std::filesystem::path& held_raw = {},
    const std::filesystem::path& held_labelled = {});

} // namespace xl::prep
