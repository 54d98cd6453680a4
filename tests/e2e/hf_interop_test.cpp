// xl-import and xl-export with Hugging Face: a TransfoXL save_pretrained folder -> scripts/convert
// -> xl-import -> xl-eval, with the evaluation checked against HF's own loss.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;

// A random HF model over 1000 tokens, saved like a published checkpoint.
constexpr const char* kMakeModel = R"PY(
import json, sys, warnings
warnings.filterwarnings("ignore")
import torch
from transformers import TransfoXLConfig, TransfoXLLMHeadModel
torch.manual_seed(3)
cfg = TransfoXLConfig(vocab_size=1000, cutoffs=[100, 500], d_model=32, d_embed=32, n_head=4,
                      d_head=8, d_inner=64, n_layer=2, div_val=2, mem_len=24, clamp_len=20,
                      same_length=True, proj_share_all_but_first=True)
model = TransfoXLLMHeadModel(cfg)
with torch.no_grad():
    for p in model.parameters():
        p.add_(0.05 * torch.randn_like(p))
model.save_pretrained(sys.argv[1])
)PY";

// HF's mean NLL under xl-eval's procedure: 10 contiguous streams of the test
// tokens, segments of 128 with the model's memory (starting empty), the first
// `segments` segments.
constexpr const char* kReferenceLoss = R"PY(
import sys, warnings
warnings.filterwarnings("ignore")
import numpy as np, torch
from transformers import TransfoXLLMHeadModel
model = TransfoXLLMHeadModel.from_pretrained(sys.argv[1]).eval()
segments, batch, tgt = int(sys.argv[3]), 10, 128
ids = torch.from_numpy(np.fromfile(sys.argv[2], dtype=np.uint16, offset=64).astype(np.int64))
n_step = ids.numel() // batch
streams = ids[: n_step * batch].view(batch, n_step)
mems = [torch.zeros(0, batch, model.config.d_model) for _ in range(model.config.n_layer)]
nll, count = 0.0, 0
with torch.no_grad():
    for s in range(segments):
        i = s * tgt
        length = min(tgt, n_step - 1 - i)
        out = model(input_ids=streams[:, i:i + length], mems=mems)
        target = streams[:, i + 1:i + 1 + length]
        nll -= out.prediction_scores.gather(2, target.unsqueeze(2)).sum().item()
        count += target.numel()
        mems = out.mems
print(f"{nll / count:.6f}")
)PY";

TEST(Import, ConvertedHuggingFaceModelEvaluatesInXl) {
  TempDir dir;
  write_file(dir / "make_model.py", kMakeModel);
  auto r = run_command(std::string(kPython) + " make_model.py hf", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;

  // A corpus whose vocabulary has the model's 1000 entries: <eos> and w0 ..
  // w998.
  std::string text;
  for (int line = 0; line < 40; ++line) {
    for (int w = 0; w < 999; w += 1 + line % 7) {
      text += "w" + std::to_string((w * 37 + line) % 999) + " ";
    }
    text += "\n";
  }
  for (int w = 0; w < 999; ++w) {
    text += "w" + std::to_string(w) + (w % 50 == 49 ? "\n" : " ");
  }
  write_file(dir / "corpus.txt", text);
  r = run_command(
      std::string(kBinDir) + "/xl-prep --train corpus.txt --valid corpus.txt --test " +
          "corpus.txt --out data",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_THAT(r.output, HasSubstr("vocabulary: 1000 word tokens"));

  r = run_command(
      std::string(kPython) + " " + kSourceDir +
          "/scripts/convert/hf_transfo_xl.py --model hf --out converted --data-dir data",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(
      std::string(kBinDir) + "/xl-import --config converted/config.yaml --weights " +
          "converted/weights.safetensors --set run.dir=runs/imported",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("imported converted/weights.safetensors"));
  r = run_command(std::string(kBinDir) + "/xl-eval --run runs/imported --max-steps 4", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(
      r.output, HasSubstr("tgt_len 128, batch 10, mem_len 24, clamp_len 20, same_length true"));
  const auto at = r.output.find("test | loss ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const double xl_loss = std::stod(r.output.substr(at + 12));
  write_file(dir / "reference.py", kReferenceLoss);
  const auto hf =
      run_command(std::string(kPython) + " reference.py hf data/test.bin 4", dir.path());
  ASSERT_EQ(hf.status, 0) << hf.output;
  const double hf_loss =
      std::stod(hf.output.substr(hf.output.find_last_of('\n', hf.output.size() - 2) + 1));
  EXPECT_NEAR(xl_loss, hf_loss, 1e-4); // xl-eval prints 4 decimals

  // Back to Hugging Face: the export loads with from_pretrained and scores as the original.
  r = run_command(
      std::string(kBinDir) + "/xl-export --run runs/imported --out exported", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("TransfoXLLMHeadModel.from_pretrained(\"exported\")"));
  EXPECT_TRUE(fs::exists(dir / "exported/vocab.txt"));
  const auto config = nlohmann::json::parse(read_text(dir / "exported/config.json"));
  EXPECT_EQ(config["mem_len"], 24);
  EXPECT_EQ(config["clamp_len"], 20);
  EXPECT_EQ(config["same_length"], true);
  EXPECT_EQ(config["tie_projs"], nlohmann::json({false, true, true}));
  const auto back =
      run_command(std::string(kPython) + " reference.py exported data/test.bin 4", dir.path());
  ASSERT_EQ(back.status, 0) << back.output;
  EXPECT_EQ(
      back.output.substr(back.output.find_last_of('\n', back.output.size() - 2) + 1),
      hf.output.substr(hf.output.find_last_of('\n', hf.output.size() - 2) + 1));

  // A vocabulary of another size is refused, naming the tensors that do not
  // fit.
  write_file(dir / "small.txt", "a b c\n");
  ASSERT_EQ(
      run_command(std::string(kBinDir) + "/xl-prep --train small.txt --out small", dir.path())
          .status,
      0);
  r = run_command(
      std::string(kBinDir) + "/xl-import --config converted/config.yaml --weights " +
          "converted/weights.safetensors --set data.dir=small --set model.transformer_xl.cutoffs=[1,2] " +
          "--set run.dir=runs/bad",
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("cannot import converted/weights.safetensors"));

  // A second import into the first one's folder (a best.pt, no last.pt) is refused before the
  // weights are read (they do not exist here), and the first import's weights stay.
  const auto imported = read_text(dir / "runs/imported/checkpoints/best.pt");
  r = run_command(
      std::string(kBinDir) +
          "/xl-import --config converted/config.yaml --weights missing.safetensors "
          "--set run.dir=runs/imported",
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(
      r.output,
      HasSubstr("run directory runs/imported already holds checkpoints (checkpoints/best.pt); "
                "choose another run.name or run.dir"));
  EXPECT_EQ(read_text(dir / "runs/imported/checkpoints/best.pt"), imported);
}

// A run trained by xl, exported: Hugging Face gives xl-eval's loss on the same segments.
TEST(Export, AnXlTrainedRunScoresTheSameInHuggingFace) {
  TempDir dir;
  std::string text;
  for (int line = 0; line < 300; ++line) {
    for (int w = 0; w < 40; ++w) {
      text += "w" + std::to_string((w * 37 + line * 11) % 600) + " ";
    }
    text += "\n";
  }
  write_file(dir / "corpus.txt", text);
  auto r = run_command(
      std::string(kBinDir) +
          "/xl-prep --train corpus.txt --valid corpus.txt --test corpus.txt --out data",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(
      std::string(kBinDir) + "/xl-train --config " + kSourceDir +
          "/configs/transformer_xl/tiny.yaml --set data.dir=data run.dir=run train.max_step=10 "
          "'model.transformer_xl.cutoffs=[100,300]' model.transformer_xl.clamp_len=12 "
          "eval.same_length=true eval.batch_size=10 eval.tgt_len=128",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(std::string(kBinDir) + "/xl-eval --run run --max-steps 3", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto at = r.output.find("test | loss ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const double xl_loss = std::stod(r.output.substr(at + 12));
  r = run_command(std::string(kBinDir) + "/xl-export --run run --out hf", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  write_file(dir / "reference.py", kReferenceLoss);
  const auto hf =
      run_command(std::string(kPython) + " reference.py hf data/test.bin 3", dir.path());
  ASSERT_EQ(hf.status, 0) << hf.output;
  const double hf_loss =
      std::stod(hf.output.substr(hf.output.find_last_of('\n', hf.output.size() - 2) + 1));
  EXPECT_NEAR(xl_loss, hf_loss, 1e-4);

  // What Hugging Face cannot hold is refused before anything is written; a config that asks
  // for it where the checkpoint has it not is named as such first.
  r = run_command(
      std::string(kBinDir) +
          "/xl-export --run run --out vanilla --set model.transformer_xl.attn_type=absolute",
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(
      r.output,
      HasSubstr("model.transformer_xl.attn_type: checkpoint relative, config "
                "absolute"));
  EXPECT_FALSE(fs::exists(dir / "vanilla"));
  write_file(dir / "a_file", "");
  r = run_command(std::string(kBinDir) + "/xl-export --run run --out a_file", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("--out a_file is a file"));
}

// HF's own tokenizer and model from an export: the raw sentence tokenized by HF (Moses), each
// token's log-probability under HF's model, and the tokens as one line of text for xl.
constexpr const char* kHFTokenizedScores = R"PY(
import sys, warnings
warnings.filterwarnings("ignore")
import torch
from transformers import AutoTokenizer, TransfoXLLMHeadModel
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
model = TransfoXLLMHeadModel.from_pretrained(sys.argv[1]).eval()
ids = tokenizer(sys.argv[2])["input_ids"]
tokens = tokenizer.convert_ids_to_tokens(ids)
open(sys.argv[3], "w").write(" ".join(tokens) + "\n")
# Without mems, HF's TransfoXLModel attends to mem_len states of zeros: an empty memory is the
# text alone, as xl scores it.
mems = [torch.zeros(0, 1, model.config.d_model) for _ in range(model.config.n_layer)]
with torch.no_grad():
    scores = model(input_ids=torch.tensor([ids]), mems=mems).prediction_scores[0]
for i in range(1, len(ids)):
    print(f"{i}\t{tokens[i]}\t{scores[i - 1, ids[i]].item():.9f}")
)PY";

// The per-token rows of an xl-eval listing: index -> (token, log_prob), scored ones only.
std::map<int64_t, std::pair<std::string, double>> listed_scores(const fs::path& tsv) {
  std::map<int64_t, std::pair<std::string, double>> out;
  std::istringstream rows(read_text(tsv));
  std::string row;
  std::getline(rows, row); // the header
  while (std::getline(rows, row)) {
    const auto f = tab_fields(row);
    if (f.size() > 2 && !f[2].empty()) {
      out[std::stoll(f[0])] = {f[1], std::stod(f[2])};
    }
  }
  return out;
}

// What xl-export writes, Hugging Face's AutoTokenizer and TransfoXLLMHeadModel load: the raw
// sentence, tokenized by HF and by xl (WikiText's rules, the same words), gets xl's
// log-probabilities, token for token (the vocabulary's ids are xl's: xl's header line is no
// symbol). xl-import reads HF's files back: the run it makes, without a data folder, lists the
// same rows.
TEST(Export, HuggingFacesTokenizerAndModelGiveXlsLogProbabilities) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--stop-at-step 10"), dir.path()).status, 0);
  auto r = run_command(std::string(kBinDir) + "/xl-export --run r --out hf", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("AutoTokenizer.from_pretrained(\"hf\")"));
  EXPECT_EQ(read_text(dir / "hf/vocab.txt").rfind("<eos>\n", 0), 0U);
  write_file(dir / "hf_scores.py", kHFTokenizedScores);
  const std::string sentence = "The game's sales, 1,500.5 units\u2014a well-known \u201chit\u201d.";
  write_file(dir / "raw.txt", sentence + "\n");
  const auto hf = run_command(
      std::string(kPython) + " hf_scores.py hf \"$(cat raw.txt)\" tokens.txt", dir.path());
  ASSERT_EQ(hf.status, 0) << hf.output;
  EXPECT_EQ(
      read_text(dir / "tokens.txt"),
      "The game 's sales , 1 @,@ 500 @.@ 5 units - a well @-@ known \" hit . \"\n");
  r = run_command(
      std::string(kBinDir) + "/xl-eval --run r --file raw.txt --per-token p.tsv", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  auto xl = listed_scores(dir / "p.tsv");
  std::istringstream lines(hf.output);
  std::string row;
  int64_t compared = 0;
  while (std::getline(lines, row)) {
    std::istringstream fields(row);
    int64_t index = 0;
    std::string token;
    double log_prob = 0.0;
    if (!(fields >> index >> token >> log_prob)) {
      continue; // not a row of the script's
    }
    ASSERT_EQ(xl.count(index), 1U) << row;
    EXPECT_EQ(xl[index].first, token) << row;
    EXPECT_NEAR(xl[index].second, log_prob, 1e-5) << row;
    ++compared;
  }
  EXPECT_EQ(compared, 19) << hf.output; // every token after the first
  // Back into xl from HF's files alone: the data folder named is none.
  r = run_command(
      std::string(kBinDir) +
          "/xl-import --config r/config.yaml --weights hf/model.safetensors --tokenizer hf "
          "--set data.dir=nowhere run.dir=back",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(
      std::string(kBinDir) + "/xl-eval --run back --file raw.txt --per-token back.tsv", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_text(dir / "back.tsv"), read_text(dir / "p.tsv"));
  write_file(dir / "pickled/vocab.pkl", "");
  r = run_command(
      std::string(kBinDir) +
          "/xl-import --config r/config.yaml --weights hf/model.safetensors --tokenizer pickled "
          "--set run.dir=pickled_run",
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("pickled/vocab.pkl is a Python pickle, which xl does not read"));
}

} // namespace
} // namespace xl::test
