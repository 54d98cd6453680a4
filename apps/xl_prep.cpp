// xl-prep: builds a vocabulary and encodes text corpora into xl token files.
//   xl-prep --format word --train wiki.train.tokens --valid wiki.valid.tokens
//           --test wiki.test.tokens --out data/prepared/wt2
// New text with an existing vocabulary (no --train needed):
//   xl-prep --format word --vocab data/prepared/wt2/vocab.txt --test my.txt --out data/prepared/my
// XLNet: NSMC's tsv into a raw corpus and labelled files, then SentencePiece and pieces files.
//   xl-prep --format nsmc --train ratings_train.txt --test ratings_test.txt --holdout 5000
//           --out nsmc
//   xl-prep --format pieces --train nsmc/train.txt --test nsmc/test.txt --out nsmc
//           [--spm-model spiece.model] [--vocab-size 32000] [--character-coverage 0.99995]
#include "xl/app/cli.h"
#include "xl/app/prep.h"

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-prep: build a vocabulary and encode corpora into xl token files"};
    xl::app::add_common_flags(app);
    xl::prep::PrepRequest request;
    xl::app::add_prep_flags(app, request);
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
