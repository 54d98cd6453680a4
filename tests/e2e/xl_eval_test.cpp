// xl-eval as a user runs it: memory and vanilla evaluation, and the span of a model trained
// without memory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Evaluation, MemoryAndVanillaModesReportPerplexity) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--set train.max_step=20"), dir.path()).status, 0);
  const std::string eval = std::string(kBinDir) + "/xl-eval --run " + (dir / "r").string();
  const auto memory = run_command(eval + " --max-steps 20", dir.path());
  ASSERT_EQ(memory.status, 0) << memory.output;
  EXPECT_THAT(memory.output, HasSubstr("tgt_len 16, batch 4, mem_len 32"));
  EXPECT_THAT(memory.output, HasSubstr("test | loss "));
  EXPECT_THAT(memory.output, HasSubstr(" | ppl "));
  const auto vanilla =
      run_command(eval + " --set eval.mode=vanilla --max-steps 5 --checkpoint last", dir.path());
  ASSERT_EQ(vanilla.status, 0) << vanilla.output;
  EXPECT_THAT(vanilla.output, HasSubstr("vanilla: window 16"));
  EXPECT_THAT(vanilla.output, HasSubstr("| 20 tokens |"));
  // A stride scores the last S positions of each window: labelled, never the paper's metric.
  const auto strided =
      run_command(eval + " --set eval.mode=vanilla --set eval.stride=4 --max-steps 5", dir.path());
  ASSERT_EQ(strided.status, 0) << strided.output;
  EXPECT_THAT(strided.output, HasSubstr("last 4 positions scored, slide 4"));
  EXPECT_THAT(strided.output, HasSubstr(" | ppl@stride=4 "));
  EXPECT_THAT(strided.output, HasSubstr("| 80 tokens |"));
  EXPECT_THAT(read_text(dir / "r/metrics.jsonl"), HasSubstr("\"ppl@stride=4\":"));
  const auto missing =
      run_command(std::string(kBinDir) + "/xl-eval --run " + (dir / "none").string(), dir.path());
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.output, HasSubstr("none: no such folder; name a run directory"));
  const auto file = run_command(
      std::string(kBinDir) + "/xl-eval --run " + (dir / "r/metrics.jsonl").string(), dir.path());
  EXPECT_EQ(file.status, 2);
  EXPECT_THAT(file.output, HasSubstr("metrics.jsonl: a file, not a folder"));
}

// The "no memory" ablation of a config with a long evaluation memory is evaluated as it was
// trained, without memory, unless the command line asks for one.
TEST(Evaluation, AModelTrainedWithoutMemoryIsEvaluatedWithoutOneUnlessAsked) {
  TempDir dir;
  const fs::path run = dir / "no_memory";
  ASSERT_EQ(
      run_command(
          train_command(
              run,
              "--set train.max_step=10 model.transformer_xl.mem_len=0 "
              "eval.same_length=true"),
          dir.path())
          .status,
      0);
  const std::string eval =
      std::string(kBinDir) + "/xl-eval --run " + run.string() + " --max-steps 3";
  const auto plain = run_command(eval, dir.path());
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_THAT(plain.output, HasSubstr("tgt_len 16, batch 4, mem_len 0,"));
  EXPECT_THAT(plain.output, HasSubstr("same_length false"));
  EXPECT_THAT(plain.output, HasSubstr("--set eval.mem_len=32 asks for it"));
  const auto asked = run_command(eval + " --set eval.mem_len=32", dir.path());
  ASSERT_EQ(asked.status, 0) << asked.output;
  EXPECT_THAT(asked.output, HasSubstr("tgt_len 16, batch 4, mem_len 32,"));
  EXPECT_THAT(asked.output, HasSubstr("same_length true"));
}

// " | loss 5.1234 | ppl 168.97 | 480 tokens": the result of an evaluation line, without its label
// and speed.
std::string scores(const std::string& output, const std::string& label) {
  const auto line = output.find(label + " | loss ");
  EXPECT_NE(line, std::string::npos) << output;
  const auto begin = line + label.size();
  const auto end = output.find(" tokens", begin);
  return output.substr(begin, end - begin);
}

// The unknown share of a --json result.
double unknown_share(const nlohmann::json& result) {
  return result["read"]["unknown"].get<double>() / result["read"]["units"].get<double>();
}

// Raw English on a WikiText run (xl-prep recorded tokenization=wikitext from the text's own
// "@-@"): split by WikiText's rules, the GPL reads fewer than 10% unknown words, against twice
// that split at blanks; each row holds the word as written at its offset (<unk> rows too), and
// the in-vocabulary perplexity is the mean of the rows that are no <unk>.
TEST(Evaluation, RawTextOnAWikiTextRunIsSplitByItsRules) {
  TempDir dir;
  // WikiText-2's own vocabulary (its training split), as a WikiText-2 run has it.
  std::string prep = app("xl-prep") + " --format word --out wt2";
  for (const char* split : {"train", "valid", "test"}) {
    prep += fmt::format(
        " --{} {}", split, testdata(fmt::format("wikitext-2/wiki.{}.tokens", split)).string());
  }
  const auto prepared = run_command(prep, dir.path());
  ASSERT_EQ(prepared.status, 0) << prepared.output;
  EXPECT_THAT(prepared.output, HasSubstr("tokenization: WikiText's (the training text holds"));
  const auto trained = run_command(
      train_command(dir / "r", "--stop-at-step 2 --set data.dir=" + (dir / "wt2").string()),
      dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  EXPECT_THAT(read_text(dir / "r/vocab.txt").substr(0, 80), HasSubstr(" tokenization=wikitext\n"));
  const std::string gpl = "/usr/share/common-licenses/GPL-3";
  const std::string eval = app("xl-eval") + " --run r --file " + gpl;
  const auto raw = run_command(eval + " --per-token gpl.tsv --json raw.json", dir.path());
  ASSERT_EQ(raw.status, 0) << raw.output;
  const auto blanks = run_command(eval + " --pretokenized --json blanks.json", dir.path());
  ASSERT_EQ(blanks.status, 0) << blanks.output;
  const auto result = nlohmann::json::parse(read_text(dir / "raw.json"));
  const double share = unknown_share(result);
  EXPECT_LT(share, 0.10);
  EXPECT_GT(unknown_share(nlohmann::json::parse(read_text(dir / "blanks.json"))), 2 * share);
  EXPECT_EQ(result["read"]["tokenization"], "wikitext");
  EXPECT_THAT(raw.output, HasSubstr("| in-vocabulary ppl "));
  const std::string text = read_text(gpl);
  std::istringstream rows(read_text(dir / "gpl.tsv"));
  std::string row;
  std::getline(rows, row);
  EXPECT_EQ(row, "index\ttoken\tlog_prob\toffset\ttext");
  int64_t known = 0;
  int64_t unknown_words = 0;
  double nll = 0.0;
  while (std::getline(rows, row)) {
    const auto f = tab_fields(row);
    ASSERT_GE(f.size(), 4U) << row;
    const std::string written = f.size() > 4 ? f[4] : "";
    if (f[1] == "<eos>") {
      EXPECT_EQ(written, "\\n") << row;
    } else {
      EXPECT_EQ(text.substr(std::stoul(f[3]), written.size()), written) << row;
    }
    unknown_words += f[1] == "<unk>" && written != "<unk>" ? 1 : 0;
    if (!f[2].empty() && f[1] != "<unk>") {
      nll -= std::stod(f[2]);
      ++known;
    }
  }
  EXPECT_EQ(unknown_words, result["read"]["unknown"].get<int64_t>());
  // "-" for standard input and output: the same rows, on stdout.
  const auto piped =
      run_command(app("xl-eval") + " --run r --file - --per-token - < " + gpl, dir.path());
  ASSERT_EQ(piped.status, 0) << piped.output;
  EXPECT_THAT(piped.output, HasSubstr(read_text(dir / "gpl.tsv")));
  EXPECT_EQ(result["in_vocabulary"]["tokens"].get<int64_t>(), known);
  EXPECT_NEAR(result["in_vocabulary"]["loss"].get<double>(), nll / known, 1e-4);
}

// A user's text scores as the same text prepared as the run's test split, cut into as many
// streams (by default one, with the whole memory); the result goes to stdout and --json, never
// into the run's metrics, and xl-compare shows the split alone. The split's text is tokenized
// already (--pretokenized): given as raw text, WikiText's rules would split its "@-@" again,
// which a warning says.
TEST(Evaluation, AFileScoresAsTheSameTextPreparedAsTheTestSplit) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--set train.max_step=10"), dir.path()).status, 0);
  const std::string eval = app("xl-eval") + " --run r --max-steps 30";
  const auto one = run_command(eval + " --set eval.batch_size=1", dir.path());
  ASSERT_EQ(one.status, 0) << one.output;
  const auto split = run_command(eval, dir.path()); // eval.batch_size 4
  ASSERT_EQ(split.status, 0) << split.output;
  const std::string records = read_text(dir / "r/metrics.jsonl");
  const auto text = testdata("wikitext-2/wiki.test.tokens").string();
  const auto raw = run_command(eval + " --file " + text, dir.path());
  ASSERT_EQ(raw.status, 0) << raw.output;
  EXPECT_THAT(raw.output, HasSubstr("it reads as tokenized already"));
  EXPECT_THAT(raw.output, HasSubstr("words split by WikiText's rules for raw text"));
  EXPECT_NE(scores(raw.output, text), scores(one.output, "test"));
  const std::string tokenized = " --file " + text + " --pretokenized";
  const auto whole = run_command(eval + tokenized + " --json whole.json", dir.path());
  ASSERT_EQ(whole.status, 0) << whole.output;
  EXPECT_THAT(whole.output, Not(HasSubstr("reads as tokenized already")));
  EXPECT_EQ(scores(whole.output, text), scores(one.output, "test"));
  EXPECT_EQ(nlohmann::json::parse(read_text(dir / "whole.json"))["eval"]["streams"], 1);
  const auto file = run_command(eval + tokenized + " --streams 4 --json result.json", dir.path());
  ASSERT_EQ(file.status, 0) << file.output;
  EXPECT_EQ(scores(file.output, text), scores(split.output, "test"));
  EXPECT_THAT(file.output, HasSubstr("words (")); // the share of <unk>
  EXPECT_THAT(file.output, HasSubstr("not in the vocabulary, read as <unk>"));
  EXPECT_EQ(read_text(dir / "r/metrics.jsonl"), records);
  const auto result = nlohmann::json::parse(read_text(dir / "result.json"));
  EXPECT_EQ(result["file"], text);
  EXPECT_EQ(result["read"]["unit"], "words");
  EXPECT_GT(result["read"]["unknown"].get<int64_t>(), 0);
  const auto compared = run_command(app("xl-compare") + " r", dir.path());
  ASSERT_EQ(compared.status, 0) << compared.output;
  EXPECT_THAT(compared.output, HasSubstr("test ppl mem=32 batch=4 (partial)"));
  EXPECT_THAT(compared.output, Not(HasSubstr("wiki.test.tokens")));
  // Prepared with the run's vocabulary, the text scores the same again.
  const auto prepared = run_command(
      app("xl-prep") + " --format word --vocab " + (corpus_dir() / "vocab.txt").string() +
          " --test " + text + " --pretokenized --out mine",
      dir.path());
  ASSERT_EQ(prepared.status, 0) << prepared.output;
  const auto tokens = run_command(eval + " --file mine/test.bin --streams 4", dir.path());
  ASSERT_EQ(tokens.status, 0) << tokens.output;
  EXPECT_EQ(scores(tokens.output, "mine/test.bin"), scores(split.output, "test"));
  // XLNet's pieces (known by their magic) are named, not read as text holding a NUL.
  write_file(dir / "test.pieces", std::string("XLPIECES\2\0\0\0", 12));
  const auto pieces = run_command(eval + " --file test.pieces", dir.path());
  EXPECT_EQ(pieces.status, 2);
  EXPECT_THAT(
      pieces.output,
      HasSubstr("test.pieces is a pieces file (SentencePiece ids) that xl-prep wrote, not text, "
                "and this run reads the words or bytes of its vocabulary"));
  // Most of a text unknown to the vocabulary: the score says little, and the user is told.
  write_file(dir / "strange.txt", "qqzx vvwq zzqk the\n");
  const auto strange = run_command(eval + " --file strange.txt", dir.path());
  ASSERT_EQ(strange.status, 0) << strange.output;
  EXPECT_THAT(strange.output, HasSubstr("3 of 4 words (75.0%) not in the vocabulary"));
  EXPECT_THAT(strange.output, HasSubstr("the score says little about this text"));
}

// Ctrl-C during an evaluation: what it had is the result, PARTIAL, and the status 128 + 2.
// SIGINT stops an evaluation with what it had; SIGUSR1 (a scheduler's warning) does not end it.
TEST(Evaluation, AnInterruptedEvaluationSaysWhatItHad) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--set train.max_step=6"), dir.path()).status, 0);
  const auto r = run_command(
      "true; " + app("xl-eval") + // in the folder run_command went to, not in a background shell
          " --run r --set eval.batch_size=1 run.progress_seconds=0.2 >out.txt 2>&1 & pid=$!; "
          "for i in $(seq 300); do grep -q ' batch ' out.txt && break; sleep 0.1; done; "
          "kill -USR1 $pid; sleep 0.3; kill -INT $pid; wait $pid; echo \"status $?\"; "
          "cat out.txt",
      dir.path());
  EXPECT_THAT(r.output, HasSubstr("status 130"));
  EXPECT_THAT(r.output, HasSubstr("test | loss "));
  EXPECT_THAT(r.output, HasSubstr(" | PARTIAL: "));
  const auto records = read_text(dir / "r/metrics.jsonl");
  EXPECT_THAT(records.substr(records.rfind("{\"")), HasSubstr("\"partial\":true"));
}

// The run's data at a new place (the same vocabulary) is evaluated; a checkpoint copied in from
// another run of the same model is recorded as one from elsewhere, with the reason.
TEST(Evaluation, TheSameDataElsewhereAndACheckpointOfAnotherRun) {
  TempDir dir;
  const std::string short_run = "--set train.max_step=6 train.warmup_step=0";
  ASSERT_EQ(run_command(train_command(dir / "r", short_run), dir.path()).status, 0);
  fs::copy(corpus_dir(), dir / "moved", fs::copy_options::recursive);
  const auto moved =
      run_command(app("xl-eval") + " --run r --set data.dir=moved --max-steps 1", dir.path());
  ASSERT_EQ(moved.status, 0) << moved.output;
  EXPECT_THAT(moved.output, HasSubstr("test | loss "));
  ASSERT_EQ(
      run_command(train_command(dir / "other", short_run + " --set train.seed=8"), dir.path())
          .status,
      0);
  fs::copy_file(
      dir / "other/checkpoints/best.pt",
      dir / "r/checkpoints/best.pt",
      fs::copy_options::overwrite_existing);
  const auto copied = run_command(app("xl-eval") + " --run r --max-steps 1", dir.path());
  ASSERT_EQ(copied.status, 0) << copied.output;
  EXPECT_THAT(copied.output, HasSubstr("(it was trained with train.seed 8, the run with 7)"));
  const auto records = read_text(dir / "r/metrics.jsonl");
  const auto last = records.substr(records.rfind('\n', records.size() - 2) + 1);
  EXPECT_THAT(last, HasSubstr("\"elsewhere\":true"));
  // A run whose metrics.jsonl cannot be written (read-only, another user's; here a folder in its
  // place, which not even root opens for writing) is evaluated and its result shown: it failed
  // on the record after the whole evaluation, showing nothing.
  fs::rename(dir / "r/metrics.jsonl", dir / "metrics.jsonl");
  fs::create_directory(dir / "r/metrics.jsonl");
  const auto unwritable = run_command(app("xl-eval") + " --run r --max-steps 1", dir.path());
  ASSERT_EQ(unwritable.status, 0) << unwritable.output;
  EXPECT_THAT(
      unwritable.output,
      HasSubstr(
          "metrics.jsonl: Is a directory: the result will be shown, not recorded in the run"));
  EXPECT_THAT(unwritable.output, HasSubstr("test | loss "));
}

// One run evaluated with two memories and a stride: three columns, each named by its setting,
// in the table and in the plot's legend.
TEST(Evaluation, XlCompareKeepsEvaluationsOfOtherSettingsApart) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--set train.max_step=6"), dir.path()).status, 0);
  const std::string eval = app("xl-eval") + " --run r --max-steps 3 ";
  for (const std::string setting :
       {"--set eval.mem_len=16",
        "--set eval.mem_len=64",
        "--set eval.mode=vanilla eval.stride=4"}) {
    const auto r = run_command(eval + setting, dir.path());
    ASSERT_EQ(r.status, 0) << r.output;
  }
  const auto compared = run_command(app("xl-compare") + " r --csv t.csv --plot t.png", dir.path());
  ASSERT_EQ(compared.status, 0) << compared.output;
  const std::string header =
      read_text(dir / "t.csv").substr(0, read_text(dir / "t.csv").find('\n'));
  EXPECT_THAT(
      header,
      HasSubstr(
          ",test ppl mem=16 (partial),test ppl mem=64 (partial),test ppl@stride=4 (partial)"));
  EXPECT_TRUE(fs::exists(dir / "t.png"));
}

// The documents of a JSONL file from WikiText-2's training lines (none of the run's data), `n` of
// them with ids, and the lines that are no document: blank, not JSON, without a text, not UTF-8.
fs::path documents_file(const fs::path& path, size_t n) {
  std::istringstream in(read_text(testdata("wikitext-2/wiki.train.tokens")));
  std::string text;
  std::string line;
  for (size_t i = 0; i < n && std::getline(in, line);) {
    if (line.size() < 2 || line.find(" = ") == 1) {
      continue; // blank lines and headings
    }
    text += nlohmann::json{{"id", "d" + std::to_string(i)}, {"text", line}}.dump() + "\n";
    if (++i == 3) {
      text += "\nnot json\n{\"id\": 7}\n{\"text\": \"\xff\xfe broken\"}\n";
    }
  }
  return write_file(path, text);
}

// One JSON line per document, in the input's order, each scored on its own: as --file scores it
// alone; killed half-way and resumed, or scored in two shards, the output is the whole run's.
TEST(Documents, EachDocumentOnItsOwnOneLineEachResumableAndSharded) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--stop-at-step 8"), dir.path()).status, 0);
  constexpr size_t kDocuments = 10000;
  documents_file(dir / "docs.jsonl", kDocuments);
  const std::string eval = app("xl-eval") + " --run r --documents docs.jsonl";
  const auto whole = run_command(eval + " --out whole.jsonl --sessions 2", dir.path());
  ASSERT_EQ(whole.status, 0) << whole.output;
  EXPECT_THAT(whole.output, HasSubstr("docs.jsonl:5: not a JSON object"));
  EXPECT_THAT(whole.output, HasSubstr("docs.jsonl:6: no \"text\" string"));
  EXPECT_THAT(whole.output, HasSubstr("docs.jsonl:7: not a JSON object (or not UTF-8)"));
  EXPECT_THAT(whole.output, HasSubstr(std::to_string(kDocuments) + " documents"));
  EXPECT_THAT(whole.output, HasSubstr("3 lines skipped"));
  std::istringstream lines(read_text(dir / "whole.jsonl"));
  std::string line;
  std::vector<nlohmann::json> records;
  while (std::getline(lines, line)) {
    records.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(records.size(), kDocuments);
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i]["id"], "d" + std::to_string(i));
    if (i > 0) {
      EXPECT_GT(records[i]["index"].get<int64_t>(), records[i - 1]["index"].get<int64_t>());
    }
  }
  // A document scores as the text alone.
  for (const size_t i : {size_t{0}, size_t{4321}}) {
    std::istringstream docs(read_text(dir / "docs.jsonl"));
    for (int64_t at = 0; at <= records[i]["index"].get<int64_t>(); ++at) {
      std::getline(docs, line);
    }
    write_file(dir / "one.txt", nlohmann::json::parse(line)["text"].get<std::string>());
    const auto alone =
        run_command(app("xl-eval") + " --run r --file one.txt --json one.json --force", dir.path());
    ASSERT_EQ(alone.status, 0) << alone.output;
    const auto one = nlohmann::json::parse(read_text(dir / "one.json"));
    EXPECT_EQ(records[i]["tokens"], one["tokens"]);
    EXPECT_NEAR(records[i]["loss"].get<double>(), one["loss"].get<double>(), 1e-5);
  }
  // Two shards, concatenated.
  for (const char* shard : {"1/2", "2/2"}) {
    const auto part = run_command(
        eval + " --shard " + shard + " --out part" + std::string(1, shard[0]) + ".jsonl",
        dir.path());
    ASSERT_EQ(part.status, 0) << part.output;
  }
  EXPECT_EQ(
      read_text(dir / "part1.jsonl") + read_text(dir / "part2.jsonl"),
      read_text(dir / "whole.jsonl"));
  // Killed half-way, then resumed.
  const pid_t pid = spawn(eval + " --out killed.jsonl", dir.path());
  for (int i = 0; i < 60000; ++i) {
    std::error_code ec;
    if (fs::file_size(dir / "killed.jsonl", ec) > read_text(dir / "whole.jsonl").size() / 2) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const auto cut = read_text(dir / "killed.jsonl");
  EXPECT_LT(cut.size(), read_text(dir / "whole.jsonl").size());
  const auto resumed = run_command(eval + " --out killed.jsonl --resume", dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_EQ(read_text(dir / "killed.jsonl"), read_text(dir / "whole.jsonl"));
  // The output is checked first: no overwriting without --force, --resume needs --out.
  const auto again = run_command(eval + " --out whole.jsonl", dir.path());
  EXPECT_EQ(again.status, 2);
  const auto lone = run_command(app("xl-eval") + " --run r --out x.jsonl", dir.path());
  EXPECT_EQ(lone.status, 2);
  EXPECT_THAT(lone.output, HasSubstr("--out goes with --documents"));
  // Input of which no document can be read is refused, and an earlier output replaced with
  // --force is left as it was; a JSON array is no JSON Lines; a missing output folder is made.
  write_file(dir / "none.jsonl", "{\"id\": 1}\n\nnot json\n");
  const auto none = run_command(
      app("xl-eval") + " --run r --documents none.jsonl --out whole.jsonl --force", dir.path());
  EXPECT_EQ(none.status, 2);
  EXPECT_THAT(
      none.output,
      HasSubstr("--documents none.jsonl: no document could be read (2 lines skipped: see the "
                "warnings)"));
  EXPECT_EQ(read_text(dir / "whole.jsonl"), read_text(dir / "killed.jsonl"));
  write_file(dir / "array.json", "[{\"text\": \"the game\"}]\n");
  const auto array =
      run_command(app("xl-eval") + " --run r --documents array.json --out a.jsonl", dir.path());
  EXPECT_EQ(array.status, 2);
  EXPECT_THAT(array.output, HasSubstr("array.json holds a JSON array, not JSON Lines"));
  write_file(dir / "two.jsonl", "{\"text\": \"the game is on\"}\n{\"text\": \"\"}\n");
  const auto folder = run_command(
      app("xl-eval") + " --run r --documents two.jsonl --out a/b/two.jsonl", dir.path());
  ASSERT_EQ(folder.status, 0) << folder.output;
  EXPECT_THAT(folder.output, HasSubstr("1 with fewer than 2 tokens (no score)"));
  const auto two = read_text(dir / "a/b/two.jsonl");
  EXPECT_EQ(std::count(two.begin(), two.end(), '\n'), 2);
}

} // namespace
} // namespace xl::test
