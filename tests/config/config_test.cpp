// The config loader: inheritance, overrides, strict validation with located
// messages, and the dump/reload round trip.
#include "xl/config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "config_test_util.h"
#include "test_util.h"
#include "xl/config/visitors.h"
#include "xl/models/char_transformer/config.h"
#include "xl/models/transformer_xl/config.h"
#include "xl/models/xlnet/config.h"
#include "xl/util/error.h"

namespace xl::config {

namespace {

using test::TempDir;
using test::write_file;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ConfigInheritance, MergesBaseChainWithNearestFileWinning) {
  const Config c = load(files("nested/child.yaml"));
  EXPECT_EQ(c.model.d_model, 128);     // child
  EXPECT_EQ(c.model.n_layer, 6);       // middle overrides base
  EXPECT_EQ(c.model.n_head, 2);        // base
  EXPECT_DOUBLE_EQ(c.train.lr, 0.002); // middle
  EXPECT_EQ(c.train.max_step, 100);    // base
  EXPECT_EQ(c.data.dir, "data/base");  // base
  EXPECT_EQ(c.model.section<models::TransformerXLConfig>().cutoffs, (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(c.run.name, "child"); // the loaded file's stem
  EXPECT_THAT(c.where("model.n_head"), HasSubstr("base.yaml:4"));
  EXPECT_THAT(c.where("model.d_model"), HasSubstr("child.yaml:3"));
  EXPECT_EQ(c.where("model.d_inner"), files("nested/child.yaml")); // default: the file loaded
}

TEST(ConfigInheritance, ListOfBasesMergesLeftToRight) {
  TempDir dir;
  write_file(dir / "a.yaml", "model:\n  n_layer: 3\n  d_inner: 7\n");
  write_file(dir / "b.yaml", "model:\n  n_layer: 5\n");
  write_file(dir / "c.yaml", "base: [a.yaml, b.yaml]\ndata:\n  dir: x\n");
  const Config c = load((dir / "c.yaml").string());
  EXPECT_EQ(c.model.n_layer, 5);
  EXPECT_EQ(c.model.d_inner, 7);
}

TEST(ConfigInheritance, CycleIsAnError) {
  const std::string message = error_of(files("cycle_a.yaml"));
  EXPECT_THAT(message, HasSubstr("inheritance cycle"));
  EXPECT_THAT(message, HasSubstr("cycle_a.yaml"));
  EXPECT_THAT(message, HasSubstr("cycle_b.yaml"));
}

TEST(ConfigInheritance, MissingBaseNamesTheLine) {
  TempDir dir;
  const auto path = write_file(dir / "c.yaml", "data:\n  dir: x\nbase: nope.yaml\n");
  const std::string message = error_of(path.string());
  EXPECT_THAT(message, HasSubstr("c.yaml:3"));
  EXPECT_THAT(message, HasSubstr("base file not found"));
  EXPECT_THAT(message, HasSubstr("nope.yaml"));
}

TEST(ConfigInheritance, ASectionOfOnlyCommentsIsRefusedAndNeverErasesTheBases) {
  // YAML reads a section that holds only comments as null. An override inside it once made it a
  // new mapping with that key alone: the base's whole section became the schema's defaults.
  TempDir dir;
  write_file(dir / "base.yaml", "data:\n  dir: x\ntrain:\n  batch_size: 7\n  max_step: 12\n");
  const auto child = write_file(dir / "child.yaml", "base: base.yaml\ntrain:\n  # to do\n");
  for (const auto& sets : {std::vector<std::string>{}, {"train.threads=1"}}) {
    const auto message = error_of(child.string(), sets);
    EXPECT_THAT(message, HasSubstr("child.yaml:2"));
    EXPECT_THAT(message, HasSubstr("train: expected a mapping of keys, found null"));
  }
  const auto message = error_of(child.string(), {"train.threads=1"});
  EXPECT_THAT(message, HasSubstr("--set train.threads=1 sets a key"));
  EXPECT_THAT(message, HasSubstr("delete its line to inherit the base's"));
  // Without the empty section the override merges into the base's.
  write_file(dir / "child.yaml", "base: base.yaml\n");
  const Config c = load(child.string(), {"train.threads=1"});
  EXPECT_EQ(c.train.batch_size, 7);
  EXPECT_EQ(c.train.max_step, 12);
}

TEST(ConfigOverrides, AreTypedAndLaterOnesWin) {
  const Config c = load(
      files("nested/child.yaml"),
      {"model.n_layer=9",
       "train.lr=3e-4",
       "model.n_layer=11",
       "model.transformer_xl.cutoffs=[5, 50, 500]",
       "model.transformer_xl.mem_len=8",
       "model.transformer_xl.same_length=true",
       "model.transformer_xl.d_embed=null",
       "run.name=ablation"});
  EXPECT_EQ(c.model.n_layer, 11);
  EXPECT_DOUBLE_EQ(c.train.lr, 3e-4);
  EXPECT_EQ(
      c.model.section<models::TransformerXLConfig>().cutoffs, (std::vector<int64_t>{5, 50, 500}));
  EXPECT_TRUE(c.model.section<models::TransformerXLConfig>().same_length);
  EXPECT_FALSE(c.model.section<models::TransformerXLConfig>().d_embed.has_value());
  EXPECT_EQ(c.run.name, "ablation");
  EXPECT_EQ(c.where("model.n_layer"), "--set model.n_layer=11");
}

TEST(ConfigOverrides, MappingValueMergesIntoSection) {
  const Config c = load(files("base.yaml"), {"model={n_layer: 2, d_inner: 33}"});
  EXPECT_EQ(c.model.n_layer, 2);
  EXPECT_EQ(c.model.d_inner, 33);
  EXPECT_EQ(c.model.d_model, 64); // untouched keys stay
}

TEST(ConfigOverrides, MalformedAssignmentIsAnError) {
  EXPECT_THAT(error_of(files("base.yaml"), {"model.n_layer"}), HasSubstr("KEY.PATH=VALUE"));
  EXPECT_THAT(error_of(files("base.yaml"), {"model..n_layer=3"}), HasSubstr("empty key"));
  EXPECT_THAT(error_of(files("base.yaml"), {"model.cutoffs=[1, 2"}), HasSubstr("not valid YAML"));
}

TEST(ConfigErrors, UnknownKeySuggestsTheClosest) {
  TempDir dir;
  const std::string message = error_of(write_config(dir, "model:\n  n_layers: 4\n"));
  EXPECT_THAT(message, HasSubstr("config.yaml:4"));
  EXPECT_THAT(message, HasSubstr("unknown key 'model.n_layers'"));
  EXPECT_THAT(message, HasSubstr("did you mean 'model.n_layer'?"));
}

TEST(ConfigErrors, UnknownKeyWithoutNeighbourListsValidKeys) {
  TempDir dir;
  const std::string message = error_of(write_config(dir, "run:\n  zzzzzzzzzz: 1\n"));
  EXPECT_THAT(message, HasSubstr("unknown key 'run.zzzzzzzzzz'"));
  EXPECT_THAT(message, HasSubstr("valid keys in 'run': name, dir, log_level"));
}

TEST(ConfigErrors, UnknownSection) {
  TempDir dir;
  const std::string message = error_of(write_config(dir, "trian:\n  lr: 1\n"));
  EXPECT_THAT(message, HasSubstr("unknown section 'trian'"));
  EXPECT_THAT(message, HasSubstr("did you mean 'train'?"));
}

TEST(ConfigErrors, UnknownKeyFromOverrideNamesTheOverride) {
  const std::string message = error_of(files("base.yaml"), {"train.lrr=0.1"});
  EXPECT_THAT(message, HasSubstr("--set train.lrr=0.1: unknown key 'train.lrr'"));
  EXPECT_THAT(message, HasSubstr("did you mean 'train.lr'?"));
}

TEST(ConfigErrors, WrongTypes) {
  TempDir dir;
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  n_layer: four\n")),
      HasSubstr("config.yaml:4: model.n_layer: expected an integer >= 1, found 'four'"));
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  n_layer: 2.5\n")),
      HasSubstr("expected an integer >= 1, found '2.5'"));
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  n_layer: \"4\"\n")),
      HasSubstr("found the string \"4\""));
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  transformer_xl:\n    same_length: yes\n")),
      HasSubstr("model.transformer_xl.same_length: expected a boolean, found 'yes'"));
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  transformer_xl:\n    cutoffs: 5\n")),
      HasSubstr("model.transformer_xl.cutoffs: expected a list of integer >= 1, found '5'"));
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  transformer_xl:\n    cutoffs: [5, x]\n")),
      HasSubstr("model.transformer_xl.cutoffs[1]: expected an integer >= 1, found 'x'"));
  EXPECT_THAT(
      error_of(write_config(dir, "model: 3\n")),
      HasSubstr("model: expected a mapping of keys, found '3'"));
  EXPECT_THAT(
      error_of(write_config(dir, "train:\n  lr: {a: 1}\n")),
      HasSubstr("train.lr: expected a number > 0, found a mapping"));
}

TEST(ConfigErrors, OutOfRangeAndBadChoice) {
  TempDir dir;
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  dropout: 1.5\n")),
      HasSubstr("model.dropout: expected a number in [0, 1), found 1.5"));
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  transformer_xl:\n    mem_len: -1\n")),
      HasSubstr("model.transformer_xl.mem_len: expected an integer >= 0, found -1"));
  EXPECT_THAT(
      error_of(write_config(dir, "eval:\n  tgt_len: 0\n")),
      HasSubstr("eval.tgt_len: expected an integer > 0, found 0"));
  EXPECT_THAT(
      error_of(write_config(dir, "train:\n  optim: adagrad\n")),
      HasSubstr("train.optim: expected a string (one of: adam, adamw, sgd, lamb), found "
                "'adagrad'"));
}

TEST(ConfigErrors, CrossFieldRulesNameTheKeyAndWhereItWasSet) {
  TempDir dir;
  EXPECT_THAT(
      error_of(write_config(
          dir, "model:\n  transformer_xl:\n    cutoffs: [10, 20]\n    tie_projs: [true]\n")),
      HasSubstr("config.yaml:6: model.transformer_xl.tie_projs: expected 3 entries"));
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  transformer_xl:\n    cutoffs: [20, 10]\n")),
      HasSubstr(
          "model.transformer_xl.cutoffs: expected strictly increasing values, found 10 after 20"));
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  transformer_xl:\n    div_val: 4\n")),
      HasSubstr("model.transformer_xl.div_val: div_val 4 needs adaptive clusters"));
  EXPECT_THAT(
      error_of(write_config(dir, "train:\n  batch_size: 10\n  batch_chunk: 3\n")),
      HasSubstr("train.batch_chunk: must divide train.batch_size = 10, found 3"));
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  d_model: 33\n")),
      HasSubstr("model.d_model: the sinusoidal position embedding needs an even d_model"));
  EXPECT_THAT(
      error_of(write_config(
          dir,
          "model:\n  transformer_xl:\n    mem_len: 0\ntrain:\n  tgt_len: 10\n"
          "eval:\n  tgt_len: 20\n")),
      HasSubstr("eval.tgt_len: with eval.mem_len null the evaluation memory is"));
  TempDir empty;
  EXPECT_THAT(
      error_of(write_file(empty / "c.yaml", "model:\n  n_layer: 2\n").string()),
      HasSubstr((empty / "c.yaml").string() + ": data.dir: required"));
}

TEST(ConfigErrors, FileProblems) {
  TempDir dir;
  EXPECT_THAT(error_of((dir / "missing.yaml").string()), HasSubstr("config file not found"));
  const auto bad = write_file(dir / "bad.yaml", "model:\n  n_layer: [1,\n");
  EXPECT_THAT(error_of(bad.string()), HasSubstr("bad.yaml:3: invalid YAML"));
  const auto list = write_file(dir / "list.yaml", "- a\n- b\n");
  EXPECT_THAT(error_of(list.string()), HasSubstr("expected a mapping of sections"));
  const auto dup = write_file(dir / "dup.yaml", "model:\n  n_layer: 1\n  n_layer: 2\n");
  EXPECT_THAT(error_of(dup.string()), HasSubstr("dup.yaml:3: duplicate key 'n_layer'"));
  // yaml-cpp's depth limit said "bad file"; a folder or a device named by base: "not found".
  const auto deep =
      write_file(dir / "deep.yaml", "model: " + std::string(3000, '[') + std::string(3000, ']'));
  EXPECT_THAT(error_of(deep.string()), HasSubstr("deep.yaml:1: invalid YAML: nested"));
  EXPECT_THAT(error_of(deep.string()), HasSubstr("levels deep, past the parser's limit"));
  const auto folder = write_file(dir / "folder.yaml", "base: " + dir.path().string() + "\n");
  EXPECT_THAT(error_of(folder.string()), HasSubstr("folder.yaml:1: base file is a directory"));
  // yaml-cpp's LoadAll looped forever on this text (found by the config fuzz target).
  const auto looped = write_file(
      dir / "looped.yaml",
      "# tiny.yaml fine-tuned for NSMC sentimEnt (lset:molit: test\n   batch_size: 07\n   "
      "tgt_len: 128\n, mem_len: 3800\n   clamp_len: 1ss");
  EXPECT_THAT(error_of(looped.string()), HasSubstr("looped.yaml:2: unknown section"));
  const auto device = write_file(dir / "device.yaml", "base: /dev/null\n");
  EXPECT_THAT(error_of(device.string()), HasSubstr("device.yaml:1: base file is a device"));
}

TEST(ConfigDump, ReloadsIdentically) {
  TempDir dir;
  const Config original = load(
      files("nested/child.yaml"),
      {"model.transformer_xl.d_embed=96",
       "eval.same_length=false",
       "train.lr=0.000123456789",
       "run.dir=/tmp/x y",
       "model.transformer_xl.tie_projs=[false, true, true]",
       "data.dir=\"a: b\""});
  const std::string text = dump(original);
  const auto path = write_file(dir / "dumped.yaml", text);
  const Config reloaded = load(path.string());
  EXPECT_EQ(dump(reloaded), text);
  EXPECT_EQ(reloaded.model.section<models::TransformerXLConfig>().d_embed, 96);
  EXPECT_EQ(reloaded.eval.same_length, false);
  EXPECT_DOUBLE_EQ(reloaded.train.lr, 0.000123456789);
  EXPECT_EQ(reloaded.run.dir, "/tmp/x y");
  EXPECT_EQ(reloaded.data.dir, "a: b");
  EXPECT_EQ(reloaded.run.name, "child"); // resolved name is kept, not re-derived
  EXPECT_THAT(text, ::testing::Not(HasSubstr("base:")));
  // Floats keep a '.' in the mantissa so that YAML 1.1 readers (PyYAML) see
  // numbers.
  EXPECT_THAT(text, HasSubstr("  layer_norm_eps: 1.0e-05\n"));
  EXPECT_THAT(text, HasSubstr("  dropout: 0.0\n"));
}

TEST(ConfigDump, EveryShippedConfigLoadsAndRoundTrips) {
  TempDir dir;
  size_t count = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(test::kSourceDir) + "/configs")) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    SCOPED_TRACE(entry.path().string());
    const Config c = load(entry.path().string());
    const auto path = write_file(dir / "round.yaml", dump(c));
    EXPECT_EQ(dump(load(path.string())), dump(c));
    ++count;
  }
  EXPECT_GT(count, 0u);
}

TEST(ConfigSchema, ReferenceListsEveryKeyWithItsDefault) {
  const std::string reference = schema_reference();
  EXPECT_THAT(reference, HasSubstr("| `model.transformer_xl.mem_len` | integer, >= 0 | `0` |"));
  EXPECT_THAT(
      reference,
      HasSubstr("| `train.optim` | string, (one of: adam, adamw, sgd, lamb) | `adam` |"));
  EXPECT_THAT(reference, HasSubstr("| `train.lr` | number, > 0 | `0.00025` |"));
  EXPECT_THAT(reference, HasSubstr("| `eval.mem_len` | integer or null, >= 0 | `null` |"));
}

TEST(ConfigSchema, DocumentationListsTheCurrentSchema) {
  const std::string docs = test::read_text(std::string(test::kSourceDir) + "/docs/configs.md");
  EXPECT_THAT(docs, HasSubstr(schema_reference()))
      << "docs/configs.md lists another schema: run scripts/regen-configs-doc.sh";
}

// train.clip=1e308 passed the check, wrote the run folder, then failed at step 1 converting to
// float: every number key now refuses a value that float32 cannot hold, and every integer key one
// beyond int64, naming the key, at load.
TEST(ConfigSchema, EveryNumberFitsTheTypeThatUsesIt) {
  TempDir dir;
  const auto path = write_config(dir, "");
  const std::string reference = schema_reference();
  const std::regex row(R"((?:^|\n)\| `([a-z][a-z_0-9.]*)` \| (list of )?(number|integer))");
  int numbers = 0;
  int integers = 0;
  for (std::sregex_iterator it(reference.begin(), reference.end(), row), end; it != end; ++it) {
    const std::string key = (*it)[1];
    const bool number = (*it)[3] == "number";
    std::vector<std::string> overrides;
    const auto dot = key.find('.', 6);
    if (key.rfind("model.", 0) == 0 && dot != std::string::npos) { // a family's section
      overrides.push_back("model.type=" + key.substr(6, dot - 6));
    }
    const std::string big = number ? "1e39" : "99999999999999999999";
    overrides.push_back(key + "=" + ((*it)[2].matched ? "[" + big + "]" : big));
    // Keys with a narrower range refuse it as out of that range.
    const std::string error = error_of(path, overrides);
    EXPECT_THAT(error, HasSubstr(key)) << key;
    EXPECT_THAT(error, HasSubstr(number ? "expected a number" : "expected an integer")) << key;
    EXPECT_THAT(error, HasSubstr(number ? "found 1.0e+39" : "found '99999999999999999999'")) << key;
    ++(number ? numbers : integers);
  }
  EXPECT_GE(numbers, 20);
  EXPECT_GE(integers, 40);
  EXPECT_THAT(
      error_of(path, {"train.lr=1e-50"}),
      HasSubstr("train.lr: expected a number > 0 that a float32 holds (the model computes in "
                "float32), found 1.0e-50, which float32 rounds to 0"));
  EXPECT_THAT(
      error_of(path, {"train.clip=1e308"}),
      HasSubstr("train.clip: expected a number >= 0 that a float32 holds (the model computes in "
                "float32), found 1.0e+308, beyond float32's largest magnitude (3.4e+38)"));
  EXPECT_THAT(
      error_of(path, {"train.threads=3000000000"}),
      HasSubstr("train.threads: expected an integer in [0, 2147483647], found 3000000000"));
  EXPECT_EQ(error_of(path, {"train.lr=3e38", "train.clip=1e-40"}), "");
}

// Names and paths end up in config.yaml and the metrics: a string that is not UTF-8 was
// recorded as U+FFFD and left a run that no documented command resumed. A second YAML document
// was ignored.
TEST(ConfigErrors, StringsAreUtf8AndAFileIsOneDocument) {
  TempDir dir;
  const auto path = write_config(dir, "");
  EXPECT_THAT(
      error_of(path, {"run.name=caf\xe9"}),
      HasSubstr("run.name: expected UTF-8 text, found the byte 0xE9 at offset 3"));
  EXPECT_THAT(
      error_of(path, {"run.dir=runs/\xff"}),
      HasSubstr("run.dir: expected UTF-8 text, found the byte 0xFF at offset 5"));
  EXPECT_EQ(error_of(path, {"run.name=café"}), "");
  const auto two = write_file(dir / "two.yaml", "data:\n  dir: d\n---\ntrain:\n  lr: 1\n");
  EXPECT_THAT(
      error_of(two.string()),
      HasSubstr(
          two.string() +
          ":4: a second YAML document (after --- or ...); a config is one "
          "document"));
  EXPECT_EQ(error_of(write_file(dir / "end.yaml", "data:\n  dir: d\n---\n").string()), "");
  // "..." ends a document: what follows it would be ignored.
  const auto ended = write_file(dir / "ended.yaml", "data:\n  dir: d\n...\ntrain:\n  lr: 1\n");
  EXPECT_THAT(error_of(ended.string()), HasSubstr(ended.string() + ":4: a second YAML document"));
  EXPECT_EQ(error_of(write_file(dir / "end2.yaml", "data:\n  dir: d\n...\n").string()), "");
  // An alias inside the node it names would make a node that holds itself.
  const auto loop = write_file(dir / "loop.yaml", "train: &t\n  x: *t\n");
  EXPECT_THAT(error_of(loop.string()), HasSubstr("an alias refers to the node that holds it"));
  EXPECT_THAT(
      error_of(path, {"train.lr=&a [*a]"}),
      HasSubstr("--set train.lr=&a [*a]: an alias refers to the node that holds it"));
  // A number tagged as text is text, as a quoted one is.
  EXPECT_THAT(
      error_of(write_file(dir / "tag.yaml", "train:\n  lr: !!str 0.003\n").string()),
      HasSubstr("train.lr"));
}

TEST(ConfigChoices, ParseIntoEnumsAndDumpByName) {
  const Config c = load(
      files("base.yaml"), {"train.optim=sgd", "train.scheduler=inv_sqrt", "eval.mode=vanilla"});
  EXPECT_EQ(c.train.optim, Optim::kSgd);
  EXPECT_EQ(c.train.scheduler, Scheduler::kInvSqrt);
  EXPECT_EQ(c.eval.mode, EvalMode::kVanilla);
  const std::string text = dump(c);
  EXPECT_THAT(text, HasSubstr("  optim: sgd\n"));
  EXPECT_THAT(text, HasSubstr("  scheduler: inv_sqrt\n"));
}

TEST(ClosestKey, UsesEditDistance) {
  EXPECT_EQ(closest_key("dropot", {"dropout", "dropatt"}), "dropout");
  EXPECT_EQ(closest_key("qqqqqq", {"dropout", "dropatt"}), "");
}

} // namespace
} // namespace xl::config
