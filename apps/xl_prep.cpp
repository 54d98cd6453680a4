// xl-prep: builds a vocabulary and encodes text corpora into token files.
//   xl-prep --format word --train wiki.train.tokens --valid wiki.valid.tokens
//           --test wiki.test.tokens --out data/prepared/wt2
#include <spdlog/spdlog.h>

#include "xl/app/cli.h"
#include "xl/data/corpus.h"
#include "xl/run/logging.h"

int main(int argc, char** argv) {
  return xl::app::run_main([&] {
    CLI::App app{
        "xl-prep: build a vocabulary and encode corpora into xl token files"};
    xl::data::PrepOptions options;
    std::string format = "word";
    std::string train, valid, test, out, vocab;
    app.add_option(
           "--format",
           format,
           "word (whitespace tokens + <eos> per line) or byte")
        ->check(CLI::IsMember({"word", "byte"}));
    app.add_option("--train", train, "training text file")->required();
    app.add_option("--valid", valid, "validation text file");
    app.add_option("--test", test, "test text file");
    app.add_option("--out", out, "output folder (vocab.txt, train.bin, ...)")
        ->required();
    app.add_option(
           "--vocab-from",
           options.vocab_from,
           "count the vocabulary over 'train' only or 'all' splits")
        ->check(CLI::IsMember({"train", "all"}));
    app.add_option(
        "--vocab",
        vocab,
        "encode with this existing vocab.txt instead of building");
    if (const int status = xl::app::parse_command_line(app, argc, argv);
        status >= 0) {
      return status;
    }
    xl::run::setup_logging("info");
    options.kind = format == "word" ? xl::data::VocabKind::kWord
                                    : xl::data::VocabKind::kByte;
    options.splits["train"] = train;
    if (!valid.empty()) {
      options.splits["valid"] = valid;
    }
    if (!test.empty()) {
      options.splits["test"] = test;
    }
    options.out = out;
    if (!vocab.empty()) {
      options.vocab = vocab;
    }
    const auto report = xl::data::prepare_corpus(options);
    spdlog::info("wrote {} (vocabulary {} tokens)", out, report.vocab_size);
    return 0;
  });
}
