// xl-prep: builds a vocabulary and encodes text corpora into xl token files.
//   xl-prep --format word --train wiki.train.tokens --valid wiki.valid.tokens
//           --test wiki.test.tokens --out data/prepared/wt2
// XLNet: NSMC's tsv into a raw corpus and labelled files, then SentencePiece and pieces files.
//   xl-prep --format nsmc --train ratings_train.txt --test ratings_test.txt --holdout 5000
//           --out nsmc
//   xl-prep --format xlnet --train nsmc/train.txt --test nsmc/test.txt --out nsmc
//           [--spm-model spiece.model] [--vocab-size 32000] [--character-coverage 0.99995]
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "xl/app/cli.h"
#include "xl/data/corpus.h"
#include "xl/data/labelled_texts.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/util/error.h"

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{
        "xl-prep: build a vocabulary and encode corpora into xl token files"};
    xl::app::add_common_flags(app);
    xl::data::PrepOptions options;
    xl::data::XLNetPrepOptions xlnet;
    std::string format = "word";
    std::string train, valid, test, out, vocab, spm_model;
    int64_t holdout = 0;
    app.add_option(
           "--format",
           format,
           "word (whitespace tokens + <eos> per line), byte, xlnet (SentencePiece "
           "pieces with sentence boundaries) or nsmc (NSMC tsv to a raw corpus "
           "<split>.txt and labelled <split>.tsv)")
        ->check(CLI::IsMember({"word", "byte", "xlnet", "nsmc"}));
    app.add_option("--train", train, "training text file")->required();
    app.add_option("--valid", valid, "validation text file");
    app.add_option("--test", test, "test text file");
    app.add_option("--out", out, "output folder (vocab.txt, train.bin, ...)")
        ->required();
    app.add_option(
           "--vocab-from",
           options.vocab_from,
           "count the vocabulary over 'train' only or 'all' splits, in the order train, "
           "valid, test (kimiyoung's and NVIDIA's order for WikiText)")
        ->check(CLI::IsMember({"train", "all"}));
    app.add_flag(
        "--unk",
        options.unk,
        "word: add <unk>, to which words outside the vocabulary map (implied by --min-freq "
        "and --max-size)");
    app.add_option(
           "--min-freq",
           options.min_freq,
           "word: leave out words seen fewer times (they map to <unk>)")
        ->check(xl::app::count_from(0));
    app.add_option(
           "--max-size",
           options.max_size,
           "word: at most this many tokens, <eos> and <unk> included (the rarest map to "
           "<unk>)")
        ->check(xl::app::count_from(1));
    app.add_option(
        "--vocab",
        vocab,
        "encode with this existing vocab.txt instead of building");
    app.add_option(
        "--spm-model",
        spm_model,
        "xlnet: encode with this SentencePiece model instead of training one");
    app.add_option(
        "--vocab-size",
        xlnet.sentencepiece.vocab_size,
        "xlnet: SentencePiece vocabulary size");
    app.add_option(
           "--holdout",
           holdout,
           "nsmc: the last N training documents become the valid split")
        ->check(xl::app::count_from(0));
    app.add_option(
        "--character-coverage",
        xlnet.sentencepiece.character_coverage,
        "xlnet: characters SentencePiece covers");
    bool force = false;
    app.add_flag(
        "--force", force, "replace the files of an earlier xl-prep in --out");
    if (const int status = xl::app::parse_command_line(app, argc, argv);
        status >= 0) {
      return status;
    }
    // A flag of another format would be ignored: refused, all alike.
    const std::vector<std::string> words{"word"};
    const std::vector<std::string> token_files{"word", "byte"};
    const std::vector<std::string> pieces{"xlnet"};
    for (const auto& [flag, formats] :
         std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"--vocab-from", token_files},
             {"--vocab", token_files},
             {"--unk", words},
             {"--min-freq", words},
             {"--max-size", words},
             {"--spm-model", pieces},
             {"--vocab-size", pieces},
             {"--character-coverage", pieces},
             {"--holdout", {"nsmc"}}}) {
      if (app.count(flag) > 0 &&
          std::find(formats.begin(), formats.end(), format) == formats.end()) {
        throw xl::UserError(fmt::format(
            "{} applies to --format {} only, not to --format {}",
            flag,
            fmt::join(formats, " or "),
            format));
      }
    }
    xl::run::setup_logging("info");
    std::map<std::string, std::filesystem::path> splits;
    for (const auto& [name, path] :
         {std::pair{"train", train}, {"valid", valid}, {"test", test}}) {
      if (!path.empty()) {
        splits[name] = path;
      }
    }
    // Every file it will write is checked before anything is read: the folder may hold
    // other formats' files (nsmc's .txt beside xlnet's .pieces), never one it replaces unasked.
    xl::run::check_output_folder("--out", out, true);
    const std::filesystem::path folder(out);
    std::vector<std::string> files;
    for (const auto& [name, path] : splits) {
      if (format == "nsmc") {
        files.insert(files.end(), {name + ".txt", name + ".tsv"});
      } else {
        files.push_back(name + (format == "xlnet" ? ".pieces" : ".bin"));
      }
    }
    if (format == "nsmc" && holdout > 0) {
      files.insert(files.end(), {"valid.txt", "valid.tsv"});
    }
    // A vocabulary reused from the folder itself is rewritten unchanged.
    const auto reused = format == "xlnet" ? spm_model : vocab;
    const std::string vocabulary =
        format == "xlnet" ? "spiece.model" : "vocab.txt";
    std::error_code ec;
    if (format != "nsmc" &&
        (reused.empty() ||
         !std::filesystem::equivalent(reused, folder / vocabulary, ec))) {
      files.push_back(vocabulary);
    }
    for (const auto& file : files) {
      xl::run::check_output_file("--out", (folder / file).string(), force);
    }
    xl::run::create_output_folder("--out", folder);
    if (format == "nsmc") {
      for (const auto& [name, path] : splits) {
        const std::filesystem::path dir = out;
        const int64_t held = name == "train" ? holdout : 0;
        const auto counts = xl::data::convert_nsmc(
            path,
            dir / (name + ".txt"),
            dir / (name + ".tsv"),
            held,
            dir / "valid.txt",
            dir / "valid.tsv");
        if (held > 0) {
          spdlog::info("valid: the last {} training documents, held out", held);
        }
        spdlog::info(
            "{}: {} documents ({} sentences), {} empty ones left out",
            name,
            counts.documents,
            counts.sentences,
            counts.empty);
      }
      return 0;
    }
    if (format == "xlnet") {
      xlnet.splits = splits;
      xlnet.out = out;
      if (!spm_model.empty()) {
        xlnet.model = spm_model;
      }
      const auto report = xl::data::prepare_xlnet_corpus(xlnet);
      spdlog::info(
          "wrote {} (SentencePiece {} pieces)", out, report.vocab_size);
      return 0;
    }
    options.kind = format == "word" ? xl::data::VocabKind::kWord
                                    : xl::data::VocabKind::kByte;
    options.splits = splits;
    options.out = out;
    if (!vocab.empty()) {
      options.vocab = vocab;
    }
    const auto report = xl::data::prepare_corpus(options);
    spdlog::info("wrote {} (vocabulary {} tokens)", out, report.vocab_size);
    return 0;
  });
}
