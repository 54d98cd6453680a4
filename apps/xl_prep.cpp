// xl-prep: builds a vocabulary and encodes text corpora into xl token files.
//   xl-prep --format word --train wiki.train.tokens --valid wiki.valid.tokens
//           --test wiki.test.tokens --out data/prepared/wt2
// New text with an existing vocabulary (no --train needed):
//   xl-prep --format word --vocab data/prepared/wt2/vocab.txt --test my.txt --out data/prepared/my
// XLNet: NSMC's tsv into a raw corpus and labelled files, then SentencePiece and pieces files.
//   xl-prep --format nsmc --train ratings_train.txt --test ratings_test.txt --holdout 5000
//           --out nsmc
//   xl-prep --format xlnet --train nsmc/train.txt --test nsmc/test.txt --out nsmc
//           [--spm-model spiece.model] [--vocab-size 32000] [--character-coverage 0.99995]
#include "xl/app/cli.h"
#include "xl/app/prep.h"

namespace {

// What to read and where to write.
void add_corpus_flags(CLI::App& app, xl::app::PrepRequest& request) {
  std::vector<std::string> names;
  std::string help;
  for (const auto& format : xl::app::prep_formats()) {
    help += (names.empty() ? "" : ", ") + format.name + " (" + format.help + ")";
    names.push_back(format.name);
  }
  app.add_option("--format", request.format, help)->check(CLI::IsMember(names));
  app.add_option(
      "--train",
      request.train,
      "training text file (needed to build a vocabulary or train SentencePiece, not with "
      "--vocab or --spm-model)");
  app.add_option("--valid", request.valid, "validation text file");
  app.add_option("--test", request.test, "test text file");
  app.add_option("--out", request.out, "output folder (vocab.txt, train.bin, ...)")->required();
}

// How a word or byte vocabulary is built, or which one encodes.
void add_vocabulary_flags(CLI::App& app, xl::app::PrepRequest& request) {
  app.add_option(
         "--vocab-from",
         request.options.vocab_from,
         "count the vocabulary over 'train' only or 'all' splits, in the order train, "
         "valid, test (kimiyoung's and NVIDIA's order for WikiText)")
      ->check(CLI::IsMember({"train", "all"}));
  app.add_flag(
      "--unk",
      request.options.unk,
      "word: add <unk>, to which words outside the vocabulary map (implied by --min-freq "
      "and --max-size)");
  app.add_option(
         "--min-freq",
         request.options.min_freq,
         "word: leave out words seen fewer times (they map to <unk>)")
      ->check(xl::app::count_from(0));
  app.add_option(
         "--max-size",
         request.options.max_size,
         "word: at most this many tokens, <eos> and <unk> included (the rarest map to "
         "<unk>)")
      ->check(xl::app::count_from(1));
  app.add_option(
      "--vocab", request.vocab, "encode with this existing vocab.txt instead of building");
}

// SentencePiece (xlnet) and NSMC's split (nsmc).
void add_xlnet_flags(CLI::App& app, xl::app::PrepRequest& request) {
  app.add_option(
      "--spm-model",
      request.spm_model,
      "xlnet: encode with this SentencePiece model instead of training one");
  app.add_option(
      "--vocab-size",
      request.xlnet.sentencepiece.vocab_size,
      "xlnet: SentencePiece vocabulary size");
  app.add_option(
         "--holdout", request.holdout, "nsmc: the last N training documents become the valid split")
      ->check(xl::app::count_from(0));
  app.add_option(
      "--character-coverage",
      request.xlnet.sentencepiece.character_coverage,
      "xlnet: the share of characters SentencePiece covers, from 0.98 to 1");
  app.add_option(
         "--progress-seconds",
         request.xlnet.sentencepiece.progress_seconds,
         "xlnet: a line that SentencePiece's training goes on at least this often")
      ->check(xl::app::number_between(0.1, 86400.0));
}

} // namespace

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-prep: build a vocabulary and encode corpora into xl token files"};
    xl::app::add_common_flags(app);
    xl::app::PrepRequest request;
    add_corpus_flags(app, request);
    add_vocabulary_flags(app, request);
    add_xlnet_flags(app, request);
    app.add_flag("--force", request.force, "replace the files of an earlier xl-prep in --out");
    if (const int status = xl::app::parse_command_line(app, argc, argv); status >= 0) {
      return status;
    }
    for (const auto* option : app.get_options()) {
      if (option->count() > 0) {
        request.given.insert(option->get_name());
      }
    }
    return xl::app::run_prep(request);
  });
}
