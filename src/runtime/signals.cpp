#include "xl/runtime/signals.h"

#include <unistd.h>

#include <csignal>

namespace xl::runtime {

std::atomic<int>& stop_signal() {
  static std::atomic<int> signal{0};
  return signal;
}

void install_stop_handlers() {
  const auto handler = [](int sig) {
    if (stop_signal().exchange(sig) != 0) {
      ::_exit(128 + sig);
    }
  };
  std::signal(SIGINT, handler);
  std::signal(SIGTERM, handler);
}

} // namespace xl::runtime
