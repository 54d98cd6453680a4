// Scores a text file with a trained run, as `xl-eval --run RUN --file FILE` does:
//   score_text RUN FILE [CHECKPOINT]
#include <xl/xl.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s RUN FILE [CHECKPOINT]\n", argv[0]);
    return 2;
  }
  try {
    xl::RunOptions options;
    if (argc == 4) {
      options.checkpoint = argv[3];
    }
    const xl::Model model = xl::open_run(argv[1], options);
    const xl::Score score = model.score_file(argv[2]);
    std::printf(
        "%s %.17g\ntokens %lld\nloss %.17g\n",
        score.metric.c_str(),
        score.unit == xl::Unit::kBitsPerCharacter ? score.bits_per_character : score.perplexity,
        static_cast<long long>(score.tokens),
        score.loss);
    return 0;
  } catch (const xl::UserError& e) { // the caller's to change
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const xl::Error& e) { // a fault inside xl
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
