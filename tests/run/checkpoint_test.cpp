// Checkpoints: contents round trip, format and config checks, and atomicity
// under a kill.
#include "xl/run/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "test_util.h"
#include "xl/io/archive.h"
#include "xl/io/zip_check.h"
#include "xl/util/crc.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::run {
namespace {

using test::TempDir;
using ::testing::HasSubstr;

void save_with_weight(
    const std::filesystem::path& path,
    int64_t step,
    const torch::Tensor& weight) {
  save_checkpoint(
      path,
      CheckpointInfo{kCheckpointFormat, step, "model:\n  d_model: 8\n", ""},
      [&](torch::serialize::OutputArchive& archive) { archive.write("weight", weight); });
}

torch::Tensor load_weight(const std::filesystem::path& path, int64_t* step) {
  torch::serialize::InputArchive archive;
  const CheckpointInfo info = load_checkpoint(path, archive);
  *step = info.step;
  torch::Tensor weight;
  archive.read("weight", weight);
  return weight;
}

TEST(Checkpoint, RoundTripsInfoAndTensors) {
  TempDir dir;
  const auto weight = torch::randn({3, 4});
  save_with_weight(dir / "c.pt", 42, weight);
  torch::serialize::InputArchive archive;
  const CheckpointInfo info = load_checkpoint(dir / "c.pt", archive);
  EXPECT_EQ(info.step, 42);
  EXPECT_EQ(info.format, kCheckpointFormat);
  EXPECT_EQ(info.config, "model:\n  d_model: 8\n");
  torch::Tensor loaded;
  archive.read("weight", loaded);
  EXPECT_TRUE(torch::equal(loaded, weight));
}

// XORs `size` bytes of `path` from `offset` with 0xA5.
void corrupt(const std::filesystem::path& path, size_t offset, size_t size) {
  std::string bytes = read_file(path);
  for (size_t i = offset; i < offset + size && i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(bytes[i] ^ 0xA5);
  }
  test::write_file(path, bytes);
}

std::string load_error(const std::filesystem::path& path) {
  try {
    torch::serialize::InputArchive archive;
    load_checkpoint(path, archive);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Checkpoint, CorruptBytesAreCaughtAndTheOtherCheckpointIsNamed) {
  TempDir dir;
  const auto weight = torch::randn({256, 256}); // 256 KB of tensor data
  save_with_weight(dir / "last.pt", 7, weight);
  save_with_weight(dir / "best.pt", 5, weight);
  // 4 KB inside the tensor, as in the reported case.
  const auto size = std::filesystem::file_size(dir / "last.pt");
  corrupt(dir / "last.pt", size / 2, 4096);
  EXPECT_THAT(
      load_error(dir / "last.pt"),
      HasSubstr(
          "corrupt checkpoint: " + (dir / "last.pt").string() +
          " (its bytes do not match the checksum saved with them); " + (dir / "best.pt").string() +
          " still verifies"));
  EXPECT_EQ(load_error(dir / "best.pt"), "");
  corrupt(dir / "best.pt", 100, 1); // the archive's first record
  EXPECT_THAT(load_error(dir / "best.pt"), HasSubstr("last.pt is corrupt too"));
}

TEST(Checkpoint, KillDuringWriteLeavesThePreviousCheckpointLoadable) {
  TempDir dir;
  const auto path = dir / "last.pt";
  const auto old_weight = torch::arange(12, torch::kFloat).view({3, 4});
  save_with_weight(path, 1, old_weight);
  // The new checkpoint's bytes, as save_checkpoint would stream them.
  save_with_weight(dir / "new.pt", 2, torch::ones({256, 256}));
  const std::string next = test::read_text(dir / "new.pt");

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Write half of the new checkpoint, then die without any cleanup.
    atomic_write(path, [&](const ByteSink& sink) {
      sink(next.data(), next.size() / 2);
      ::raise(SIGKILL);
    });
    ::_exit(0); // not reached
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  // The torn temporary exists, the checkpoint itself is the old, complete one.
  bool torn_temporary = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    torn_temporary |= entry.path().filename().string().rfind("last.pt.tmp.", 0) == 0;
  }
  EXPECT_TRUE(torn_temporary);
  int64_t step = 0;
  EXPECT_TRUE(torch::equal(load_weight(path, &step), old_weight));
  EXPECT_EQ(step, 1);

  // The next save completes and clears the leftover.
  save_with_weight(path, 3, torch::zeros({2}));
  EXPECT_TRUE(torch::equal(load_weight(path, &step), torch::zeros({2})));
  EXPECT_EQ(step, 3);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos);
  }
}

TEST(Checkpoint, ExceptionDuringWriteKeepsThePreviousCheckpoint) {
  TempDir dir;
  const auto path = dir / "last.pt";
  save_with_weight(path, 1, torch::ones({2}));
  EXPECT_THROW(
      save_checkpoint(
          path,
          CheckpointInfo{},
          [](torch::serialize::OutputArchive&) { throw UserError("disk full (simulated)"); }),
      UserError);
  int64_t step = 0;
  EXPECT_TRUE(torch::equal(load_weight(path, &step), torch::ones({2})));
}

uint64_t little_endian(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int b = n - 1; b >= 0; --b) {
    v = (v << 8) | static_cast<unsigned char>(bytes[at + b]);
  }
  return v;
}

// Writes each record's CRC-32 again (central directory and local header), as a forger would:
// a small archive (no zip64, no comment).
void reseal_zip(std::string& bytes) {
  const size_t end = bytes.size() - 22;
  ASSERT_EQ(little_endian(bytes, end, 4), 0x06054b50U);
  size_t at = little_endian(bytes, end + 16, 4);
  for (uint64_t e = little_endian(bytes, end + 10, 2); e > 0; --e) {
    const size_t local = little_endian(bytes, at + 42, 4);
    const size_t start =
        local + 30 + little_endian(bytes, local + 26, 2) + little_endian(bytes, local + 28, 2);
    const uint32_t crc = util::crc32(bytes.data() + start, little_endian(bytes, at + 20, 4));
    for (const size_t field : {at + 16, local + 14}) {
      for (int b = 0; b < 4; ++b) {
        bytes[field + b] = static_cast<char>((crc >> (8 * b)) & 0xFFU);
      }
    }
    at += 46 + little_endian(bytes, at + 28, 2) + little_endian(bytes, at + 30, 2) +
        little_endian(bytes, at + 32, 2);
  }
}

// A checkpoint without xl's checksum (an earlier xl's) is checked with the CRC-32s of its zip
// records, which LibTorch's reader does not check.
TEST(Checkpoint, ACheckpointWithoutAChecksumIsCheckedWithItsZipCrcs) {
  TempDir dir;
  const auto weight = torch::randn({64, 64});
  save_with_weight(dir / "c.pt", 5, weight);
  std::string bytes = read_file(dir / "c.pt");
  bytes.resize(bytes.size() - 24); // the checksum trailer
  test::write_file(dir / "c.pt", bytes);
  int64_t step = 0;
  EXPECT_TRUE(torch::equal(load_weight(dir / "c.pt", &step), weight));
  corrupt(dir / "c.pt", bytes.size() / 2, 1); // inside the tensor's record
  EXPECT_THAT(
      load_error(dir / "c.pt"),
      ::testing::MatchesRegex(
          "corrupt checkpoint: .*c.pt \\(no checksum at its end \\(cut short, or written by "
          "an earlier xl\\): record '.*/data/[0-9]+' does not match its CRC-32\\).*"));
  // Empty, cut short, or no checkpoint at all: each says which, not LibTorch's zip reader.
  test::write_file(dir / "empty.pt", "");
  EXPECT_THAT(load_error(dir / "empty.pt"), ::testing::HasSubstr("(the file is empty"));
  test::write_file(dir / "text.pt", "model: weights\n");
  EXPECT_THAT(
      load_error(dir / "text.pt"),
      ::testing::HasSubstr("(not a checkpoint: 15 bytes with neither xl's checksum"));
  test::write_file(dir / "cut.pt", bytes.substr(0, bytes.size() / 3));
  EXPECT_THAT(
      load_error(dir / "cut.pt"),
      ::testing::HasSubstr("(no checksum at its end (cut short, or written by an earlier xl)"));
}

// The same with forged CRC-32s and malformed TorchScript: LibTorch reports it as a
// torch::jit::ErrorReport, not a c10::Error (a fuzz finding).
TEST(Checkpoint, MalformedTorchScriptInAnUnverifiedArchiveIsAUserError) {
  TempDir dir;
  save_checkpoint(
      dir / "c.pt",
      CheckpointInfo{kCheckpointFormat, 5, "", ""},
      [](torch::serialize::OutputArchive& archive) {
        io::write_module(archive, "model", *torch::nn::Linear(2, 3));
      });
  std::string bytes = read_file(dir / "c.pt");
  bytes.resize(bytes.size() - 24); // the checksum trailer
  const std::string key = "__parameters__";
  const auto at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, key.size(), "__parameter_s_");
  reseal_zip(bytes);
  test::write_file(dir / "c.pt", bytes);
  EXPECT_THAT(
      load_error(dir / "c.pt"),
      HasSubstr(
          "cannot read checkpoint " + (dir / "c.pt").string() +
          " (not a LibTorch archive, or corrupt): "));
}

TEST(Checkpoint, RefusesMissingForeignAndNewerFormats) {
  TempDir dir;
  torch::serialize::InputArchive archive;
  EXPECT_THROW(load_checkpoint(dir / "none.pt", archive), UserError);
  test::write_file(dir / "junk.pt", "not a zip archive");
  try {
    torch::serialize::InputArchive a;
    load_checkpoint(dir / "junk.pt", a);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("junk.pt (not a checkpoint: 17 bytes"));
  }
  torch::serialize::OutputArchive foreign;
  foreign.write("weight", torch::ones({1}));
  foreign.save_to((dir / "foreign.pt").string());
  try {
    torch::serialize::InputArchive a;
    load_checkpoint(dir / "foreign.pt", a);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not an xl checkpoint"));
  }
  save_checkpoint(
      dir / "future.pt",
      CheckpointInfo{kCheckpointFormat + 1, 5, "", ""},
      [](torch::serialize::OutputArchive&) {});
  try {
    torch::serialize::InputArchive a;
    load_checkpoint(dir / "future.pt", a);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("checkpoint format 3, this xl reads format 2"));
  }
  // Checkpoints of xl before the model interface say what to do.
  save_checkpoint(
      dir / "old.pt", CheckpointInfo{1, 5, "", ""}, [](torch::serialize::OutputArchive&) {});
  try {
    torch::serialize::InputArchive a;
    load_checkpoint(dir / "old.pt", a);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("old.pt: checkpoint format 1"));
    EXPECT_THAT(e.what(), HasSubstr("this xl reads format 2"));
    EXPECT_THAT(e.what(), HasSubstr("commit eec7ad5"));
  }
}

TEST(Checkpoint, ConfigDifferencesNameEachKey) {
  const std::string saved = "model:\n  d_model: 410\n  cutoffs: [1, 2]\ntrain:\n  lr: 0.1\n";
  const std::string now = "model:\n  d_model: 512\n  cutoffs: [1, 2]\ntrain:\n  lr: 0.2\n";
  const auto diffs = config_differences(saved, now, {"model"});
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0], "model.d_model: checkpoint 410, config 512");
  EXPECT_EQ(config_differences(saved, now, {"model", "train"}).size(), 2u);
  EXPECT_TRUE(config_differences(saved, saved, {"model", "train"}).empty());
  try {
    require_matching_config("c.pt", saved, now, {"model"});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("c.pt was made with a different config"));
    EXPECT_THAT(e.what(), HasSubstr("model.d_model: checkpoint 410, config 512"));
  }
}

// A checkpoint of another family is named by its type in one line, not by a diff of every key.
TEST(Checkpoint, AnotherFamilyIsNamedByItsType) {
  const std::string xlnet = "model:\n  type: xlnet\n  d_model: 32\n  n_head: 2\n";
  const std::string txl = "model:\n  type: transformer_xl\n  d_model: 64\n  n_head: 4\n";
  const auto message = test::user_error([&] {
    require_matching_config("c.pt", xlnet, txl, {"model", "data"});
  });
  EXPECT_THAT(
      message,
      HasSubstr(
          "checkpoint c.pt holds a model of type xlnet, but the config is of type transformer_xl"));
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// A checkpoint's config written before a key existed stands for that key's default: it still
// matches a config at the default, and not one that changes it.
TEST(Checkpoint, KeysAConfigPredatesTakeTheirDefaults) {
  const std::string saved = "model:\n  type: xlnet\n  d_model: 32\n";
  const std::string now = "model:\n  type: xlnet\n  d_model: 32\n  xlnet:\n    summary: last\n";
  EXPECT_TRUE(config_differences(saved, now, {"model"}).empty());
  const std::string mean = "model:\n  type: xlnet\n  d_model: 32\n  xlnet:\n    summary: mean\n";
  EXPECT_EQ(
      config_differences(saved, mean, {"model"}),
      std::vector<std::string>{"model.xlnet.summary: checkpoint last, config mean"});
}

// train.init_from: a pretrained body goes into a model with a new head; the head keeps its
// values and is named, and a body of other shapes is refused with every mismatch listed.
TEST(Checkpoint, ReadsTheMatchingParametersOfAnotherModel) {
  TempDir dir;
  torch::nn::Sequential pretrained(torch::nn::Linear(4, 3));
  torch::nn::Sequential tuned(torch::nn::Linear(4, 3), torch::nn::Linear(3, 2));
  const auto head = tuned[1]->as<torch::nn::Linear>()->weight.clone();
  save_checkpoint(
      dir / "ckpt.pt",
      CheckpointInfo{kCheckpointFormat, 5, "model:\n  d_model: 4\n", ""},
      [&](torch::serialize::OutputArchive& archive) {
        io::write_module(archive, "model", *pretrained);
      });
  torch::serialize::InputArchive archive;
  load_checkpoint(dir / "ckpt.pt", archive);
  const auto left = io::read_module_matching(archive, "model", *tuned, "ckpt");
  EXPECT_EQ(left, (std::vector<std::string>{"1.weight", "1.bias"}));
  EXPECT_TRUE(torch::equal(
      tuned[0]->as<torch::nn::Linear>()->weight, pretrained[0]->as<torch::nn::Linear>()->weight));
  EXPECT_TRUE(torch::equal(tuned[1]->as<torch::nn::Linear>()->weight, head));

  torch::nn::Sequential wider(torch::nn::Linear(5, 3));
  torch::serialize::InputArchive again;
  load_checkpoint(dir / "ckpt.pt", again);
  try {
    io::read_module_matching(again, "model", *wider, "ckpt");
    ADD_FAILURE() << "other shapes were read";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("0.weight: [3, 4] stored, [3, 5] here"));
  }
}

} // namespace
} // namespace xl::run
