// The signals a user or a scheduler sends a run. SIGINT, SIGTERM and SIGHUP (a Ctrl-C, a
// preemption, a closed terminal or ssh session) ask it to checkpoint and stop: the first one is
// recorded for the loop to see at its next step or evaluation batch; a second one ends the
// process at once (saves are atomic, so the checkpoints on disk stay complete, and the
// temporaries of the writes in progress are removed). SIGUSR1, which
// batch schedulers send ahead of a time limit, asks a trainer for a checkpoint now, and it goes
// on.
#pragma once

#include <atomic>

namespace xl::runtime {

/// The signal that asked to stop, or 0 when none did.
std::atomic<int>& stop_signal();

/// Installs the handlers that set stop_signal() (SIGINT, SIGTERM, SIGHUP).
void install_stop_handlers();

/// Whether a SIGUSR1 asked for a checkpoint since the last take_checkpoint_request(), which
/// clears it.
bool checkpoint_requested();
void take_checkpoint_request();

/// Installs the SIGUSR1 handler that sets checkpoint_requested() (a trainer's).
void install_checkpoint_handler();

} // namespace xl::runtime
