// xl-sample as a user runs it: seeded text, and the memory carrying the context.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;

// xl-sample: the prompt and the words drawn after it on stdout, the same for the same seed.
TEST(Sampling, ASeedGivesTheSameTextAndTheMemoryCarriesTheContext) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--set train.max_step=20"), dir.path()).status, 0);
  const auto sample = [&](const std::string& flags) {
    return run_command(
        "{ " + std::string(kBinDir) + "/xl-sample --run " + (dir / "r").string() + " " + flags +
            " 2>err.log; }",
        dir.path());
  };
  const auto words = [](const std::string& text) {
    std::istringstream in(text);
    return std::vector<std::string>(std::istream_iterator<std::string>(in), {});
  };
  const auto a = sample("--prompt 'The game' --tokens 15 --seed 4 --top-k 50");
  ASSERT_EQ(a.status, 0) << read_text(dir / "err.log");
  EXPECT_EQ(a.output.rfind("The game ", 0), 0U) << a.output;
  // 15 tokens: words, and line breaks for <eos>.
  const auto n_words = static_cast<int64_t>(words(a.output).size());
  const auto n_breaks = std::count(a.output.begin(), a.output.end(), '\n');
  EXPECT_EQ(n_words - 2 + n_breaks - 1, 15) << a.output;
  EXPECT_THAT(read_text(dir / "err.log"), HasSubstr("one position per token over a memory of 32"));
  EXPECT_EQ(sample("--prompt 'The game' --tokens 15 --seed 4 --top-k 50").output, a.output);
  EXPECT_NE(sample("--prompt 'The game' --tokens 15 --seed 5 --top-k 50").output, a.output);

  write_file(dir / "prompt.txt", "The game");
  const auto from_file = sample("--prompt-file prompt.txt --tokens 15 --seed 4 --top-k 50");
  EXPECT_EQ(from_file.output, a.output);
  const auto no_memory = sample("--prompt 'The game' --tokens 5 --no-memory");
  ASSERT_EQ(no_memory.status, 0) << read_text(dir / "err.log");
  EXPECT_THAT(read_text(dir / "err.log"), HasSubstr("re-reading up to 32"));
  const auto two = sample("--tokens 4 --samples 2");
  ASSERT_EQ(two.status, 0) << read_text(dir / "err.log");
  EXPECT_THAT(two.output, HasSubstr("--- sample 2 ---"));

  EXPECT_EQ(sample("--top-p 0").status, 2);
  EXPECT_THAT(read_text(dir / "err.log"), HasSubstr("--top-p 0: expected a probability above 0"));
  // Words the vocabulary lacks are read as <unk>, and the user is told.
  ASSERT_EQ(sample("--prompt 'The zqxjvw game <unk>' --tokens 2").status, 0);
  EXPECT_THAT(
      read_text(dir / "err.log"), HasSubstr("1 of the prompt's words are not in the vocabulary"));
}

} // namespace
} // namespace xl::test
