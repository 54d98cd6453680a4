#include "xl/util/crc.h"

#include <gtest/gtest.h>

#include <string>

namespace xl::util {
namespace {

// The check values of the CRC catalogue: the CRC of the ASCII digits "123456789".
TEST(Crc, MatchesTheCatalogueCheckValues) {
  const std::string digits = "123456789";
  EXPECT_EQ(crc32(digits.data(), digits.size()), 0xCBF43926U);
  EXPECT_EQ(crc32c(digits.data(), digits.size()), 0xE3069283U);
  EXPECT_EQ(crc32c(digits.data(), 0), 0U);
}

} // namespace
} // namespace xl::util
