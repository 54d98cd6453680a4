// What every batch source writes into a checkpoint besides its position: its description, which
// must match on resume (another kind of source or other sizes cannot continue the same batches).
#pragma once

#include "xl/sources/batch_source.h"

namespace xl::sources {

void write_source_identity(torch::serialize::OutputArchive& archive, const BatchSource& source);
/// A UserError when the checkpoint's source is not `source`.
void check_source_identity(torch::serialize::InputArchive& archive, const BatchSource& source);

} // namespace xl::sources
