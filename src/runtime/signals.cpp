#include "xl/runtime/signals.h"

#include <unistd.h>

#include <csignal>

#include "xl/util/files.h"

namespace xl::runtime {

namespace {

std::atomic<bool>& checkpoint_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

} // namespace

std::atomic<int>& stop_signal() {
  static std::atomic<int> signal{0};
  return signal;
}

void install_stop_handlers() {
  const auto handler = [](int sig) {
    if (stop_signal().exchange(sig) != 0) {
      remove_temporaries_in_progress(); // the files the process owns stay as they were
      ::_exit(128 + sig);
    }
  };
  std::signal(SIGINT, handler);
  std::signal(SIGTERM, handler);
  std::signal(SIGHUP, handler);
}

bool checkpoint_requested() {
  return checkpoint_flag().load();
}

void take_checkpoint_request() {
  checkpoint_flag().store(false);
}

void install_checkpoint_handler() {
  std::signal(SIGUSR1, [](int /*sig*/) { checkpoint_flag().store(true); });
}

} // namespace xl::runtime
