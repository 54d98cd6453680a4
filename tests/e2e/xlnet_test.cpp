// XLNet as a user runs it: NSMC prepared with xl-prep, pretraining with exact resume, evaluation
// of a split and of any raw text, fine-tuning from the pretrained weights, and the bad inputs of
// each step as clear errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e_util.h"
#include "test_util.h"
#include "xl/formats/sentence_tokens.h"
#include "xl/io/safetensors.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string train_command(
    const std::string& config,
    const fs::path& run,
    const std::string& extra = "") {
  return app("xl-train") + " --config " + kSourceDir + "/configs/xlnet/" + config +
      " --set data.dir=" + nsmc_dir().string() + " --set run.dir=" + run.string() + " " + extra;
}

// The unigram cross-entropy xl-eval recorded for the targets it scored (dumped to `batches`),
// counted again here: add-one counts of the training pieces.
void expect_unigram_baseline(const fs::path& run, const fs::path& batches) {
  const formats::SentencePiece model(nsmc_dir() / "spiece.model");
  const auto train = formats::read_sentence_tokens(nsmc_dir() / "train.pieces", model);
  std::map<int64_t, double> counts;
  for (const int64_t id : train.ids) {
    counts[id] += 1.0;
  }
  const double total = static_cast<double>(train.ids.size() + model.size());
  const auto dumped = io::SafeTensors::load(batches);
  double nll = 0.0;
  int64_t targets = 0;
  for (int64_t b = 0; dumped.contains(fmt::format("batch_{}/targets", b)); ++b) {
    const auto ids = dumped.at(fmt::format("batch_{}/targets", b)).reshape({-1});
    const auto keep = dumped.at(fmt::format("batch_{}/target_mask", b)).reshape({-1});
    for (int64_t i = 0; i < ids.size(0); ++i) {
      if (keep[i].item<bool>()) {
        const auto found = counts.find(ids[i].item<int64_t>());
        nll -= std::log(((found == counts.end() ? 0.0 : found->second) + 1.0) / total);
        ++targets;
      }
    }
  }
  ASSERT_GT(targets, 0);
  std::istringstream lines(read_text(run / "metrics.jsonl"));
  std::string line;
  std::string last;
  while (std::getline(lines, line)) {
    last = line;
  }
  const auto record = nlohmann::json::parse(last);
  EXPECT_EQ(record.at("tokens").get<int64_t>(), targets);
  EXPECT_NEAR(record.at("unigram_loss").get<double>(), nll / static_cast<double>(targets), 1e-9);
  EXPECT_GT(record.at("loss_per_char").get<double>(), 0.0);
}

TEST(XLNetE2E, PretrainsResumesExactlyEvaluatesAndFineTunes) {
  TempDir dir;
  const std::string steps = "--set train.max_step=12 --set train.eval_interval=6";
  auto r = run_command(train_command("tiny.yaml", dir / "whole", steps));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("permutation records: 4 rows (half backward)"));
  const auto whole = train_losses(dir / "whole");
  ASSERT_EQ(whole.size(), 12U);
  EXPECT_LT(whole.at(12), whole.at(1)); // it learns

  // Stopped at step 6 and resumed: the same batches, permutations and memory, the same losses.
  r = run_command(train_command("tiny.yaml", dir / "split", steps + " --stop-at-step 6"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(train_command("tiny.yaml", dir / "split", steps + " --resume"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto split = train_losses(dir / "split");
  ASSERT_EQ(split.size(), 12U);
  for (const auto& [step, loss] : whole) {
    EXPECT_DOUBLE_EQ(split.at(step), loss) << "step " << step;
  }

  // The test split, and a raw text file of the user's own.
  r = run_command(
      app("xl-eval") + " --run " + (dir / "whole").string() + " --max-steps 3 --dump-batches " +
      (dir / "batches.safetensors").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("test | loss"));
  EXPECT_THAT(r.output, HasSubstr(" | nats/char "));
  expect_unigram_baseline(dir / "whole", dir / "batches.safetensors");
  // 150 lines of reviews the model has not seen, as a user's raw text file.
  std::istringstream test_text(read_text(nsmc_dir() / "test.txt"));
  std::string mine;
  std::string line;
  for (int i = 0; i < 150 && std::getline(test_text, line); ++i) {
    mine += line + "\n";
  }
  const auto text = write_file(dir / "mine.txt", mine + "\n");
  r = run_command(
      app("xl-eval") + " --run " + (dir / "whole").string() + " --file " + text.string() +
      " --set eval.batch_size=2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(text.string() + " | loss"));
  // Bytes that are not text are refused, not scored; a device is never read.
  std::string noise(4000, ' ');
  for (size_t i = 0; i < noise.size(); ++i) {
    noise[i] = static_cast<char>(0x80 + (i * 37) % 0x80);
  }
  write_file(dir / "noise.bin", noise);
  for (const auto& [file, message] : std::vector<std::pair<std::string, std::string>>{
           {(dir / "noise.bin").string(), "is not UTF-8 text"},
           {"/dev/zero", "is a device, expected a file"}}) {
    r = run_command(app("xl-eval") + " --run " + (dir / "whole").string() + " --file " + file);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(message));
  }

  // Fine-tuning from the pretrained weights: the heads are new and named.
  r = run_command(train_command(
      "tiny_cls.yaml",
      dir / "cls",
      "--set train.max_step=6 --set train.eval_interval=6 --set train.init_from=" +
          (dir / "whole").string()));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(
      r.output,
      HasSubstr("fresh, not in the checkpoint: summary.weight, summary.bias, "
                "logits_proj.weight, logits_proj.bias"));
  r = run_command(app("xl-eval") + " --run " + (dir / "cls").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("acc/cls"));

  // A linear probe of the mean summary on 40 labelled reviews, with the references' schedule:
  // the frozen body is listed, the subset described.
  r = run_command(train_command(
      "tiny_cls.yaml",
      dir / "probe",
      "--set train.max_step=4 --set train.eval_interval=4 --set train.init_from=" +
          (dir / "whole").string() +
          " --set data.train_examples=40 --set model.xlnet.summary=mean --set "
          "train.scheduler=poly --set train.warmup_step=1 --set "
          "'train.freeze=[word_embedding.weight, mask_emb, \"r_*_bias\", lm_bias, "
          "\"layers.*\"]'"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("frozen by train.freeze: "));
  EXPECT_THAT(r.output, HasSubstr("(40 examples: the first of "));
  EXPECT_THAT(r.output, HasSubstr("training 1122 parameters"));
}

// Random HF models over the prepared vocabulary, saved like published checkpoints: a language
// model with memory, reuse_len and bi_data, and a sentiment classifier.
constexpr const char* kMakeHFModels = R"PY(
import sys, warnings
warnings.filterwarnings("ignore")
import sentencepiece, torch
from transformers import XLNetConfig, XLNetForSequenceClassification, XLNetLMHeadModel
vocab = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1]).get_piece_size()
torch.manual_seed(5)
shape = dict(vocab_size=vocab, d_model=32, n_layer=2, n_head=4, d_inner=64,
             ff_activation="gelu_new", layer_norm_eps=1e-12)
lm = XLNetLMHeadModel(XLNetConfig(mem_len=12, reuse_len=16, bi_data=True, clamp_len=20, **shape))
cls = XLNetForSequenceClassification(XLNetConfig(num_labels=2, **shape))
with torch.no_grad():
    for p in list(lm.parameters()) + list(cls.parameters()):
        p.add_(0.5 * torch.randn_like(p))
lm.save_pretrained(sys.argv[2])
cls.save_pretrained(sys.argv[3])
)PY";

// HF's mean loss (and accuracy) over the batches xl-eval --dump-batches wrote, memory carried
// from batch to batch when they continue streams.
constexpr const char* kHFLoss = R"PY(
import sys, warnings
warnings.filterwarnings("ignore")
import torch
import torch.nn.functional as F
from safetensors import safe_open
from transformers import XLNetForSequenceClassification, XLNetLMHeadModel
f = safe_open(sys.argv[2], "pt")
carry = f.metadata()["continues_streams"] == "true"
def field(s, name, rows_first=True):
    key = f"batch_{s}/{name}"
    if key not in f.keys():
        return None
    t = f.get_tensor(key)
    return t.t() if rows_first and t.dim() == 2 else t
classification = field(0, "labels") is not None
model = (XLNetForSequenceClassification if classification else XLNetLMHeadModel)
model = model.from_pretrained(sys.argv[1]).eval()
nll, count, correct, mems = 0.0, 0, 0, None
with torch.no_grad():
    for s in range(int(f.metadata()["batches"])):
        tokens, segments = field(s, "tokens"), field(s, "segment_ids")
        rows = tokens.shape[0]
        reversed_rows = field(s, "reversed")
        if reversed_rows is not None:  # HF's bi_data reverses the second half of the rows
            assert reversed_rows.tolist() == [False] * (rows // 2) + [True] * (rows // 2)
        if classification:
            labels = field(s, "labels")
            logits = model(input_ids=tokens, token_type_ids=segments,
                           attention_mask=(~field(s, "padding")).float()).logits
            nll += F.cross_entropy(logits, labels, reduction="sum").item()
            correct += (logits.argmax(1) == labels).sum().item()
            count += rows
            continue
        out = model(input_ids=tokens, token_type_ids=segments,
                    perm_mask=field(s, "perm_mask", False).permute(2, 0, 1).float(),
                    target_mapping=field(s, "target_mapping", False).permute(2, 0, 1),
                    mems=mems, use_mems=carry)
        logp = torch.log_softmax(out.logits, -1).gather(2, field(s, "targets").unsqueeze(2))
        counted = field(s, "target_mask")
        nll -= logp.squeeze(2)[counted].sum().item()
        count += counted.sum().item()
        mems = out.mems if carry else None
print(f"{nll / count:.6f} {correct / count:.6f}")
)PY";

// The last record of a run's metrics.jsonl (full precision, unlike the log).
nlohmann::json last_record(const fs::path& run) {
  std::istringstream lines(read_text(run / "metrics.jsonl"));
  std::string line;
  std::string last;
  while (std::getline(lines, line)) {
    if (!line.empty()) {
      last = line;
    }
  }
  return nlohmann::json::parse(last);
}

// HF save_pretrained folders -> scripts/convert/hf_xlnet.py -> xl-import -> xl-eval: the loss
// (and accuracy) Hugging Face computes on the very batches xl scored.
TEST(XLNetE2E, ImportedHuggingFaceModelsReproduceItsLoss) {
  TempDir dir;
  write_file(dir / "make_models.py", kMakeHFModels);
  write_file(dir / "hf_loss.py", kHFLoss);
  auto r = run_command(
      std::string(kPython) + " make_models.py " + (nsmc_dir() / "spiece.model").string() +
          " hf_lm hf_cls",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  for (const std::string kind : {"lm", "cls"}) {
    SCOPED_TRACE(kind);
    r = run_command(
        std::string(kPython) + " " + kSourceDir + "/scripts/convert/hf_xlnet.py --model hf_" +
            kind + " --out conv_" + kind + " --seq-len 32 --data-dir " + nsmc_dir().string(),
        dir.path());
    ASSERT_EQ(r.status, 0) << r.output;
    r = run_command(
        app("xl-import") + " --config conv_" + kind + "/config.yaml --weights conv_" + kind +
            "/weights.safetensors --set run.dir=run_" + kind,
        dir.path());
    ASSERT_EQ(r.status, 0) << r.output;
    r = run_command(
        app("xl-eval") + " --run run_" + kind +
            " --max-steps 4 --set eval.batch_size=4 --dump-batches batches_" + kind +
            ".safetensors",
        dir.path());
    ASSERT_EQ(r.status, 0) << r.output;
    const auto xl = last_record(dir / ("run_" + kind));
    const auto hf = run_command(
        std::string(kPython) + " hf_loss.py hf_" + kind + " batches_" + kind + ".safetensors",
        dir.path());
    ASSERT_EQ(hf.status, 0) << hf.output;
    std::istringstream numbers(
        hf.output.substr(hf.output.find_last_of('\n', hf.output.size() - 2) + 1));
    double hf_loss = 0.0;
    double hf_accuracy = 0.0;
    numbers >> hf_loss >> hf_accuracy;
    // Exported back, Hugging Face loads the run and scores the batches as the original.
    r = run_command(
        app("xl-export") + " --run run_" + kind + " --out exported_" + kind, dir.path());
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_THAT(
        r.output,
        HasSubstr(kind == "lm" ? "as XLNetLMHeadModel" : "as XLNetForSequenceClassification"));
    const auto back = run_command(
        std::string(kPython) + " hf_loss.py exported_" + kind + " batches_" + kind + ".safetensors",
        dir.path());
    ASSERT_EQ(back.status, 0) << back.output;
    EXPECT_EQ(
        back.output.substr(back.output.find_last_of('\n', back.output.size() - 2) + 1),
        hf.output.substr(hf.output.find_last_of('\n', hf.output.size() - 2) + 1));
    EXPECT_NEAR(xl["loss"].get<double>(), hf_loss, 1e-5);
    if (kind == "cls") {
      EXPECT_NEAR(xl["acc/cls"].get<double>(), hf_accuracy, 1e-6);
    } else {
      EXPECT_THAT(xl["setting"].get<std::string>(), HasSubstr("mem_len 12"));
    }
  }
}

// Hugging Face's log-probability of every target xl-eval --dump-batches wrote, the memory carried
// from batch to batch, against xl's --per-token listing: the largest difference and the count.
constexpr const char* kHFLeftToRight = R"PY(
import sys, warnings
warnings.filterwarnings("ignore")
import torch
from safetensors import safe_open
from transformers import XLNetLMHeadModel
f = safe_open(sys.argv[2], "pt")
model = XLNetLMHeadModel.from_pretrained(sys.argv[1]).eval()
model.transformer.reuse_len = None  # every position of a segment into the memory
model.transformer.bi_data = False  # one text read forwards (pretraining's bi_data is kept)
xl = {}
for row in open(sys.argv[3]).read().splitlines()[1:]:
    index, token, log_prob = row.split("\t")
    if log_prob:
        xl[int(index)] = float(log_prob)
worst, count, mems = 0.0, 0, None
with torch.no_grad():
    for s in range(int(f.metadata()["batches"])):
        get = lambda name: f.get_tensor(f"batch_{s}/{name}")
        out = model(input_ids=get("tokens").t(), token_type_ids=get("segment_ids").t(),
                    perm_mask=get("perm_mask").permute(2, 0, 1).float(),
                    target_mapping=get("target_mapping").permute(2, 0, 1), mems=mems,
                    use_mems=True)
        mems = out.mems
        logp = torch.log_softmax(out.logits, -1).gather(2, get("targets").t().unsqueeze(2))
        for (b, t) in get("target_mask").t().nonzero().tolist():
            index = get("target_index")[t, b].item()
            worst = max(worst, abs(logp[b, t, 0].item() - xl.pop(index)))
            count += 1
print(f"{worst:.3g} {count} {len(xl)}")
)PY";

// A text is scored piece by piece, each from the pieces before it and the memory: every piece
// once, in order, the same numbers every time, as Hugging Face's XLNet scores the same batches;
// a text without spaces too. The permutation LM's estimate stays a flag away.
TEST(XLNetE2E, ScoresEveryPieceLeftToRightAsHuggingFaceDoes) {
  TempDir dir;
  auto r = run_command(train_command("tiny.yaml", dir / "r", "--set train.max_step=8"));
  ASSERT_EQ(r.status, 0) << r.output;
  std::istringstream reviews(read_text(nsmc_dir() / "test.txt"));
  std::string three;
  std::string line;
  for (int i = 0; i < 3 && std::getline(reviews, line);) {
    if (line.size() > 30) {
      three += line + "\n";
      ++i;
    }
  }
  write_file(dir / "three.txt", three);
  const std::string eval = app("xl-eval") + " --run r --file three.txt";
  r = run_command(
      eval + " --per-token a.tsv --json a.json --dump-batches b.safetensors", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(eval + " --per-token again.tsv", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_text(dir / "again.tsv"), read_text(dir / "a.tsv"));
  const auto result = nlohmann::json::parse(read_text(dir / "a.json"));
  const int64_t pieces = result["read"]["units"].get<int64_t>();
  EXPECT_GT(result["batches"].get<int64_t>(), 1); // the memory carries across segments
  EXPECT_EQ(result["tokens"].get<int64_t>(), pieces - 1);
  EXPECT_EQ(result["eval"]["streams"], 1);
  std::istringstream rows(read_text(dir / "a.tsv"));
  std::getline(rows, line);
  int64_t index = 0;
  for (; std::getline(rows, line); ++index) {
    EXPECT_EQ(line.substr(0, line.find('\t')), std::to_string(index));
    EXPECT_EQ(line.back() == '\t', index == 0) << line; // the first piece is context only
  }
  EXPECT_EQ(index, pieces);
  // Hugging Face, fed the same batches with the exported weights.
  r = run_command(app("xl-export") + " --run r --out hf", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  write_file(dir / "hf_l2r.py", kHFLeftToRight);
  const auto hf =
      run_command(std::string(kPython) + " hf_l2r.py hf b.safetensors a.tsv", dir.path());
  ASSERT_EQ(hf.status, 0) << hf.output;
  std::istringstream numbers(
      hf.output.substr(hf.output.find_last_of('\n', hf.output.size() - 2) + 1));
  double worst = 1.0;
  int64_t compared = 0;
  int64_t unmatched = -1;
  numbers >> worst >> compared >> unmatched;
  EXPECT_LT(worst, 1e-5) << hf.output;
  EXPECT_EQ(compared, pieces - 1);
  EXPECT_EQ(unmatched, 0);

  // Korean without spaces: every piece scored all the same.
  write_file(dir / "nospace.txt", "정말재미있는영화였고다시보고싶은마음이들었다\n");
  r = run_command(app("xl-eval") + " --run r --file nospace.txt --json n.json", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto nospace = nlohmann::json::parse(read_text(dir / "n.json"));
  EXPECT_GT(nospace["read"]["units"].get<int64_t>(), 2);
  EXPECT_EQ(nospace["tokens"].get<int64_t>(), nospace["read"]["units"].get<int64_t>() - 1);
  // The pretraining evaluation's estimate, by a flag.
  r = run_command(eval + " --permutation --json p.json", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(
      nlohmann::json::parse(read_text(dir / "p.json"))["setting"].get<std::string>(),
      HasSubstr("permutation records"));

  // The text as a pieces file xl-prep made with the run's model scores the same, both ways; a
  // token file of words is named, not read as text holding a NUL.
  r = run_command(
      app("xl-prep") + " --format pieces --spm-model r/spiece.model --test three.txt --out enc",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(app("xl-eval") + " --run r --file enc/test.pieces --json e.json", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto encoded = nlohmann::json::parse(read_text(dir / "e.json"));
  EXPECT_EQ(encoded["loss"], result["loss"]);
  EXPECT_EQ(encoded["tokens"], result["tokens"]);
  r = run_command(
      app("xl-eval") + " --run r --file enc/test.pieces --permutation --json ep.json", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(
      nlohmann::json::parse(read_text(dir / "ep.json"))["loss"],
      nlohmann::json::parse(read_text(dir / "p.json"))["loss"]);
  write_file(dir / "words.txt", "a few words\n");
  r = run_command(
      app("xl-prep") + " --format word --train words.txt --test words.txt --out words", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  for (const std::string flag : {"", " --permutation"}) {
    r = run_command(app("xl-eval") + " --run r --file words/test.bin" + flag, dir.path());
    EXPECT_EQ(r.status, 2);
    EXPECT_THAT(
        r.output,
        HasSubstr("words/test.bin is a token file (word or byte ids) that xl-prep wrote, not "
                  "text, and this run reads SentencePiece pieces"));
  }
}

// The peer pretraining (scripts/peer/hf_xlnet_pretrain.py) stopped and resumed ends with the
// weights of an uninterrupted run, and leaves only Hugging Face's files.
TEST(XLNetE2E, HuggingFacePeerPretrainingResumesExactly) {
  TempDir dir;
  // The script runs `xl-train --dump-config` of this build, not of the default build/ folder.
  const std::string peer = "XL_BUILD_DIR=" + fs::path(kBinDir).parent_path().string() + " " +
      kPython + " " + kSourceDir + "/scripts/peer/hf_xlnet_pretrain.py --config " + kSourceDir +
      "/configs/xlnet/tiny.yaml --set data.dir=" + nsmc_dir().string() + " train.max_step=6 --out ";
  auto r = run_command(peer + "whole", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(peer + "split --stop-at-step 3", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_TRUE(fs::exists(dir / "split/resume.pt"));
  r = run_command(peer + "split", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("it holds an unfinished run: add --resume"));
  r = run_command(peer + "split --resume --set train.lr=0.1", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("was written with other settings (train.lr)"));
  r = run_command(peer + "split --resume", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("resuming split after step 3"));
  EXPECT_TRUE(
      read_text(dir / "split/model.safetensors") == read_text(dir / "whole/model.safetensors"))
      << "the resumed run's weights differ from the uninterrupted run's";
  EXPECT_FALSE(fs::exists(dir / "split/resume.pt"));

  write_file(dir / "damaged/resume.pt", "not a saved state");
  r = run_command(peer + "damaged --resume", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("is not a resume state of this script"));
  EXPECT_EQ(read_text(dir / "damaged/resume.pt"), "not a saved state");
}

TEST(XLNetE2E, BadInputIsAClearErrorAndWritesNoRun) {
  TempDir dir;
  const auto fails = [&](const std::string& command, const std::string& says) {
    const auto r = run_command(command);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(says)) << r.output;
    EXPECT_THAT(r.output, Not(HasSubstr("internal error")));
  };
  fails(
      train_command("tiny.yaml", dir / "short", "--set train.tgt_len=18"),
      "seq_len (18) must be at least reuse_len (16) + 3");
  fails(
      train_command("tiny.yaml", dir / "many", "--set model.xlnet.num_predict=40"),
      "num_predict (40) is larger than a record can hold");
  // Fewer labelled reviews than asked for; a probe of a model without a classification
  // head; a parameter name that does not exist.
  fails(
      train_command("tiny_cls.yaml", dir / "subset", "--set data.train_examples=100000"),
      "data.train_examples: ");
  fails(
      train_command("tiny.yaml", dir / "probe", "--set 'train.freeze=[\"*\"]'"),
      "model.xlnet.n_class > 0");
  fails(
      train_command("tiny_cls.yaml", dir / "typo", "--set 'train.freeze=[encoder.*]'"),
      "train.freeze[0]: 'encoder.*' names no parameter of this model");
  for (const auto* run : {"short", "many", "subset", "probe", "typo"}) {
    EXPECT_FALSE(fs::exists(dir / run)) << run;
  }
  fails(
      app("xl-prep") + " --format pieces --train " +
          write_file(dir / "empty.txt", "\n\n").string() + " --out " + (dir / "empty").string(),
      "empty.txt");
  fails(
      app("xl-prep") + " --format nsmc --train " +
          write_file(dir / "bad.tsv", "id\tdocument\tlabel\n1\tgood\t7\n").string() + " --out " +
          (dir / "bad").string(),
      "bad.tsv:2: the label must be 0 or 1, found '7'");
  // A fine-tuning run pointed at a checkpoint of another family: a Transformer-XL trained on
  // the same reviews as words.
  auto r = run_command(
      app("xl-prep") + " --format word --train " + (nsmc_dir() / "train.txt").string() + " --out " +
      (dir / "words").string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(
      app("xl-train") + " --config " + kSourceDir +
      "/configs/transformer_xl/tiny.yaml --set data.dir=" + (dir / "words").string() +
      " --set data.valid=train.bin --set run.dir=" + (dir / "txl").string() +
      " --set train.max_step=2 --set train.warmup_step=1 --set train.eval_interval=2 "
      "--set train.max_eval_steps=1");
  ASSERT_EQ(r.status, 0) << r.output;
  fails(
      train_command(
          "tiny_cls.yaml", dir / "cls", "--set train.init_from=" + (dir / "txl").string()),
      "holds another model family (model.type: checkpoint transformer_xl, config xlnet)");
  EXPECT_FALSE(fs::exists(dir / "cls"));
}

// An exported classifier read back as a Hugging Face user reads it: AutoTokenizer, the model
// and a text-classification pipeline on one text; each prints the class probabilities.
constexpr const char* kHFClassify = R"PY(
import json, sys, warnings
warnings.filterwarnings("ignore")
import torch
from transformers import AutoTokenizer, XLNetForSequenceClassification, pipeline
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
model = XLNetForSequenceClassification.from_pretrained(sys.argv[1]).eval()
classify = pipeline("text-classification", model=model, tokenizer=tokenizer, top_k=None)
for text in open(sys.argv[2], encoding="utf-8").read().splitlines():
    with torch.no_grad():
        probs = torch.softmax(model(**tokenizer(text, return_tensors="pt")).logits[0], -1)
    piped = {r["label"]: r["score"] for r in classify([text])[0]}
    print(json.dumps({"probs": probs.tolist(), "pipeline": [piped["negative"], piped["positive"]]}))
)PY";

// What xl-export writes for a classifier, Hugging Face's AutoTokenizer, its model and a
// pipeline of one text load (bi_data left out; the SentencePiece model cased, accents kept; the
// run's class names as id2label) and give xl-predict's class probabilities, by those names.
TEST(XLNetE2E, AnExportedClassifierGivesXlsProbabilitiesThroughHuggingFacesTokenizer) {
  TempDir dir;
  auto r = run_command(train_command(
      "tiny_cls.yaml",
      dir / "r",
      "--set train.max_step=8 train.warmup_step=0 model.xlnet.labels=[negative,positive]"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(app("xl-export") + " --run r --out hf", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto config = nlohmann::json::parse(read_text(dir / "hf/config.json"));
  EXPECT_EQ(config["bi_data"], false);
  EXPECT_EQ(config["id2label"], nlohmann::json({{"0", "negative"}, {"1", "positive"}}));
  write_file(dir / "texts.txt", "정말 재미있는 영화\n시간이 아까운 영화였다 ㅠㅠ 2,000원\n");
  // xl-predict's objects, one a text.
  const auto predicted = [&](const std::string& run) {
    const auto p =
        run_command(app("xl-predict") + " --run " + run + " --file texts.txt --json", dir.path());
    EXPECT_EQ(p.status, 0) << p.output;
    std::vector<nlohmann::json> objects;
    std::istringstream lines(p.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("{\"line\"", 0) == 0) {
        objects.push_back(nlohmann::json::parse(line));
      }
    }
    return objects;
  };
  const auto xl = predicted("r");
  ASSERT_EQ(xl.size(), 2U);
  std::string line;
  write_file(dir / "classify.py", kHFClassify);
  const auto hf = run_command(std::string(kPython) + " classify.py hf texts.txt", dir.path());
  ASSERT_EQ(hf.status, 0) << hf.output;
  std::istringstream rows(hf.output);
  size_t i = 0;
  while (std::getline(rows, line)) {
    if (line.rfind("{\"probs\"", 0) != 0) {
      continue;
    }
    ASSERT_LT(i, xl.size());
    const auto theirs = nlohmann::json::parse(line);
    for (const int c : {0, 1}) {
      const double ours = xl[i]["probs"][c == 0 ? "negative" : "positive"].get<double>();
      EXPECT_NEAR(theirs["probs"][c].get<double>(), ours, 1e-5) << line;
      EXPECT_NEAR(theirs["pipeline"][c].get<double>(), ours, 1e-5) << line;
    }
    EXPECT_EQ(xl[i]["label"], xl[i]["predicted"] == 1 ? "positive" : "negative");
    ++i;
  }
  EXPECT_EQ(i, 2U) << hf.output;
  // Back into xl from HF's files alone (no data folder): the same predictions. A tokenizer
  // config asking HF for lowercase, which xl would not do, is refused.
  r = run_command(
      app("xl-import") +
          " --config r/config.yaml --weights hf/model.safetensors --tokenizer hf "
          "--set data.dir=nowhere run.dir=back",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(predicted("back"), xl);
  fs::copy(dir / "hf", dir / "lowered", fs::copy_options::recursive);
  auto lowered = nlohmann::json::parse(read_text(dir / "lowered/tokenizer_config.json"));
  lowered["do_lower_case"] = true;
  write_file(dir / "lowered/tokenizer_config.json", lowered.dump());
  r = run_command(
      app("xl-import") +
          " --config r/config.yaml --weights hf/model.safetensors --tokenizer lowered "
          "--set data.dir=nowhere run.dir=lowered_run",
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(
      r.output,
      HasSubstr("do_lower_case is true: Hugging Face would encode a text otherwise than xl"));
}

} // namespace
} // namespace xl::test
