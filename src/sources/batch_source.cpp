#include "xl/sources/batch_source.h"

#include <fmt/format.h>

#include "source_state.h"
#include "xl/io/archive.h"
#include "xl/util/error.h"

namespace xl::sources {

Batch next_cycling(BatchSource& source) {
  auto batch = source.next();
  if (!batch) {
    batch = source.next();
  }
  TORCH_CHECK(batch.has_value(), "a new pass of ", source.describe(), " is empty");
  return std::move(*batch);
}

void write_source_identity(torch::serialize::OutputArchive& archive, const BatchSource& source) {
  io::write_string(archive, "data.source", source.describe());
}

void check_source_identity(torch::serialize::InputArchive& archive, const BatchSource& source) {
  const std::string saved = io::read_string(archive, "data.source");
  if (saved != source.describe()) {
    throw UserError(fmt::format(
        "the checkpoint was reading {}, but this config reads {}; resume with the "
        "training data settings of the checkpoint",
        saved,
        source.describe()));
  }
}

} // namespace xl::sources
