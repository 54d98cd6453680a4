// The signals that ask a run to checkpoint and stop (SIGINT, SIGTERM: a user's Ctrl-C, a
// scheduler's preemption). The first one is recorded for the loop to see at its next step or
// evaluation batch; a second one ends the process at once (saves are atomic, so the checkpoints
// on disk stay complete).
#pragma once

#include <atomic>

namespace xl::runtime {

/// The signal that arrived, or 0 when none did.
std::atomic<int>& stop_signal();

/// Installs the handlers that set stop_signal().
void install_stop_handlers();

} // namespace xl::runtime
