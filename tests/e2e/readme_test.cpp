// README's commands for a user's own text, run as written (build/bin/ is the build's bin
// folder): scoring a text, listing its tokens, preparing it with a run's vocabulary, and a
// classifier's predictions. The runs and data they name are tiny ones of the tests, under the
// names the README gives.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;

// The commands of the README's fenced block after `marker`, continuation lines joined and
// comments dropped.
std::vector<std::string> readme_commands(const std::string& marker) {
  const std::string readme = read_text(fs::path(kSourceDir) / "README.md");
  const auto at = readme.find(marker);
  EXPECT_NE(at, std::string::npos) << marker;
  const auto begin = readme.find("```bash\n", at) + 8;
  std::istringstream block(readme.substr(begin, readme.find("```", begin) - begin));
  std::vector<std::string> commands;
  std::string line;
  std::string command;
  while (std::getline(block, line)) {
    line = std::regex_replace(line, std::regex("\\s+#.*$"), "");
    const bool goes_on = !line.empty() && line.back() == '\\';
    command += goes_on ? line.substr(0, line.size() - 1) : line;
    if (!goes_on) {
      commands.push_back(std::regex_replace(command, std::regex("^build/bin/"), app("")));
      command.clear();
    }
  }
  return commands;
}

TEST(Readme, YourOwnTextCommandsRunAsWritten) {
  TempDir dir;
  fs::create_directories(dir / "data/prepared");
  fs::create_directory_symlink(corpus_dir(), dir / "data/prepared/wikitext-2");
  ASSERT_EQ(
      run_command(train_command(dir / "runs/wt2_small", "--stop-at-step 4"), dir.path()).status, 0);
  const auto classifier = run_command(
      app("xl-train") + " --config " + config_file("configs/xlnet/tiny_cls.yaml") +
          " --set data.dir=" + nsmc_dir().string() + " run.dir=runs/nsmc_cls_cpu train.max_step=8",
      dir.path());
  ASSERT_EQ(classifier.status, 0) << classifier.output;
  // Raw text: split by WikiText's rules, as the run's vocabulary records.
  write_file(dir / "my.txt", "The game's story was written in 2010.\nIt sold well.\n");
  write_file(dir / "reviews.txt", nsmc_documents(6000, 30));
  write_file(
      dir / "docs.jsonl",
      "{\"id\": \"a\", \"text\": \"The game sold well .\"}\n{\"id\": \"b\", \"text\": \"It was "
      "released in 2010 .\"}\n");
  const auto commands = readme_commands("**Your own text.**");
  ASSERT_EQ(commands.size(), 5u);
  for (const auto& command : commands) {
    SCOPED_TRACE(command);
    const auto r = run_command(command, dir.path());
    EXPECT_EQ(r.status, 0) << r.output;
  }
  const std::string rows = read_text(dir / "my.tsv");
  EXPECT_THAT(
      rows, HasSubstr("index\ttoken\tlog_prob\toffset\ttext\n0\tThe\t\t0\tThe\n1\tgame\t-"));
  EXPECT_THAT(rows, HasSubstr("\t8\t's\n3\tstory\t"));
  EXPECT_THAT(rows, HasSubstr("\t36\t.\n9\t<eos>\t"));
  EXPECT_TRUE(fs::exists(dir / "my.json"));
  EXPECT_THAT(read_text(dir / "scores.jsonl"), HasSubstr("\"id\":\"b\""));
  EXPECT_TRUE(fs::exists(dir / "data/prepared/my/test.bin"));
  const std::string predictions = read_text(dir / "predictions.tsv");
  EXPECT_EQ(std::count(predictions.begin(), predictions.end(), '\n'), 31);
}

} // namespace
} // namespace xl::test
