#include "families/test_families.h"

#include <algorithm>

#include "families/plain_decoder/plain_decoder.h"
#include "xl/models/registry.h"

namespace xl::test {

void register_test_families() {
  for (auto* describe : {plain_decoder_family}) {
    auto family = describe();
    const auto& known = models::model_families();
    if (std::none_of(known.begin(), known.end(), [&](const models::ModelFamily& f) {
          return f.name == family.name;
        })) {
      models::register_model_family(std::move(family));
    }
  }
}

} // namespace xl::test
