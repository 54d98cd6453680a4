// Continues a prompt with a trained run, as `xl-sample --run RUN --prompt PROMPT --tokens N
// --seed S` does, streaming the text as it is drawn:
//   generate_text RUN PROMPT TOKENS SEED
#include <xl/xl.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s RUN PROMPT TOKENS SEED\n", argv[0]);
    return 2;
  }
  try {
    const xl::Model model = xl::open_run(argv[1]);
    xl::GenerateOptions options;
    options.tokens = std::stoll(argv[3]);
    options.seed = std::stoull(argv[4]);
    std::fputs(argv[2], stdout);
    model.generate(argv[2], options, [](const std::string& piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout); // bytes may hold a NUL
      std::fflush(stdout);
      return true; // false would stop the generation here
    });
    std::fputs("\n", stdout);
    return 0;
  } catch (const xl::UserError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) { // TOKENS or SEED not a number
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
