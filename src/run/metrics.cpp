#include "xl/run/metrics.h"

#include "xl/util/error.h"

namespace xl::run {

MetricsWriter::MetricsWriter(const std::filesystem::path& path)
    : path_(path), out_(path, std::ios::app) {
  if (!out_) {
    throw UserError("cannot open metrics file for writing: " + path.string());
  }
}

void MetricsWriter::write(const nlohmann::json& record) {
  out_ << record.dump() << '\n';
  out_.flush();
}

} // namespace xl::run
