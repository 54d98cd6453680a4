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
void add_corpus_flags(CLI::App& app, xl::prep::PrepRequest& request) {
  std::vector<std::string> names;
  std::string help;
  for (const auto& format : xl::prep::prep_formats()) {
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

} // namespace

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-prep: build a vocabulary and encode corpora into xl token files"};
    xl::app::add_common_flags(app);
    xl::prep::PrepRequest request;
    add_corpus_flags(app, request);
    for (const auto* flags : xl::prep::prep_flag_sets()) { // each format's own
      flags->add(app, request);
    }
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
