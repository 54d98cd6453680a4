// Scores one text many times with one Model, as a program serving requests does, and prints the
// mean time per call and the text's loss:
//   time_score RUN TEXT REPEAT [THREADS]
#include <xl/xl.h>

#include <chrono>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: %s RUN TEXT REPEAT [THREADS]\n", argv[0]);
    return 2;
  }
  try {
    xl::RunOptions options;
    if (argc == 5) {
      options.threads = std::stoi(argv[4]);
    }
    const xl::Model model = xl::open_run(argv[1], options);
    const int repeat = std::stoi(argv[3]);
    double loss = model.score(argv[2]).loss; // the first call warms the caches up
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < repeat; ++i) {
      loss = model.score(argv[2]).loss;
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::printf("seconds_per_call %.9g\nloss %.17g\n", took.count() / repeat, loss);
    return 0;
  } catch (const xl::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) { // REPEAT or THREADS not a number
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
