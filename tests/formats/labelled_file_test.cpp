// Labelled text files: a bad line is an error naming the file and line.
#include "xl/formats/labelled_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/util/error.h"

namespace xl::formats {
namespace {

using test::TempDir;
using test::user_error;
using ::testing::HasSubstr;

TEST(ReadLabelledTexts, ABadLabelNamesTheFileAndLine) {
  TempDir dir;
  test::write_file(dir / "l.tsv", "1\tgood\nx\tbad\n");
  EXPECT_THAT(
      user_error([&] { formats::read_labelled_texts(dir / "l.tsv"); }),
      HasSubstr("l.tsv:2: expected 'label<TAB>text'"));
}

} // namespace
} // namespace xl::formats
