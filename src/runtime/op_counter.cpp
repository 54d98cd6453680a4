#include "xl/runtime/op_counter.h"

#include <atomic>
#include <cstring>
#include <mutex>

#include "xl/runtime/cuda_graph.h"

namespace xl::runtime {

OpCounts OpCounts::operator-(const OpCounts& other) const {
  return {
      ops - other.ops,
      backward_nodes - other.backward_nodes,
      host_reads - other.host_reads,
      blocking_uploads - other.blocking_uploads,
      graphed - other.graphed,
      replays - other.replays};
}

namespace {

struct Totals {
  std::atomic<int64_t> ops{0};
  std::atomic<int64_t> backward_nodes{0};
  std::atomic<int64_t> host_reads{0};
  std::atomic<int64_t> blocking_uploads{0};
  std::atomic<int64_t> graphed{0};
  std::atomic<int64_t> replays{0};
};

thread_local int graphed_depth = 0;

Totals& totals() {
  static Totals t;
  return t;
}

// The callback is installed while at least one counter lives; names are counted while one
// that asked for them lives.
struct Registration {
  std::mutex mutex;
  int live = 0;
  at::CallbackHandle handle = 0;
  std::atomic<int> naming{0};
  std::mutex names_mutex;
  std::map<std::string, int64_t> names;
};

Registration& registration() {
  static Registration r;
  return r;
}

bool named(const at::RecordFunction& fn, const char* name) {
  return std::strcmp(fn.name(), name) == 0;
}

// aten::copy_(self, src, non_blocking): a read when src is on a device and self on the CPU, a
// blocking upload the other way round.
void count_copy(const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  if (inputs.size() < 3 || !inputs[0].isTensor() || !inputs[1].isTensor()) {
    return;
  }
  const bool to_cpu = inputs[0].toTensor().is_cpu();
  const bool from_cpu = inputs[1].toTensor().is_cpu();
  if (to_cpu && !from_cpu) {
    ++totals().host_reads;
  } else if (!to_cpu && from_cpu && !(inputs[2].isBool() && inputs[2].toBool())) {
    ++totals().blocking_uploads;
  }
}

// LibTorch's fused optimizer kernels read each CPU parameter's step count with item(); a CUDA
// one reads it on the device. Those reads are the kernel's own, not the host waiting.
thread_local int fused_kernels = 0;

bool fused_kernel(const at::RecordFunction& fn) {
  return std::strncmp(fn.name(), "aten::_fused_", 13) == 0;
}

void on_return(const at::RecordFunction& fn, at::ObserverContext* /*context*/) {
  if (fn.scope() == at::RecordScope::FUNCTION && fused_kernel(fn)) {
    --fused_kernels;
  }
}

std::unique_ptr<at::ObserverContext> on_call(const at::RecordFunction& fn) {
  Registration& r = registration();
  if (r.naming.load() > 0) {
    const std::lock_guard<std::mutex> lock(r.names_mutex);
    ++r.names[fn.name()];
  }
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    ++totals().backward_nodes;
    return nullptr;
  }
  ++totals().ops;
  if (graphed_depth > 0) {
    ++totals().graphed;
  }
  if (fused_kernel(fn)) {
    ++fused_kernels;
  } else if (fused_kernels > 0) {
    return nullptr;
  }
  if (named(fn, "aten::_local_scalar_dense") || named(fn, "aten::nonzero")) {
    ++totals().host_reads;
  } else if (named(fn, "aten::copy_")) {
    count_copy(fn);
  }
  return nullptr;
}

OpCounts snapshot() {
  const Totals& t = totals();
  return {
      t.ops.load(),
      t.backward_nodes.load(),
      t.host_reads.load(),
      t.blocking_uploads.load(),
      t.graphed.load(),
      t.replays.load()};
}

} // namespace

OpCounter::OpCounter(bool count_names) : by_name_(count_names) {
  // The graph code calls these (an emulated run's operators count as graphed too).
  static const bool hooked = [] {
    GraphHooks h;
    h.replayed = [] { ++totals().replays; };
    h.emulation_begins = [] { ++graphed_depth; };
    h.emulation_ends = [] { --graphed_depth; };
    set_graph_hooks(h);
    return true;
  }();
  (void)hooked;
  Registration& r = registration();
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (r.live++ == 0) {
    r.handle = at::addGlobalCallback(
        at::RecordFunctionCallback(on_call, on_return)
            .needsInputs(true)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  }
  if (by_name_) {
    ++r.naming;
    names_start_ = this->by_name();
  }
  start_ = snapshot();
}

OpCounter::~OpCounter() {
  Registration& r = registration();
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (by_name_) {
    --r.naming;
  }
  if (--r.live == 0) {
    at::removeCallback(r.handle);
  }
}

OpCounts OpCounter::counts() const {
  return snapshot() - start_;
}

std::map<std::string, int64_t> OpCounter::by_name() const {
  Registration& r = registration();
  const std::lock_guard<std::mutex> lock(r.names_mutex);
  std::map<std::string, int64_t> out;
  for (const auto& [name, calls] : r.names) {
    const auto before = names_start_.find(name);
    const int64_t since = calls - (before == names_start_.end() ? 0 : before->second);
    if (since > 0) {
      out.emplace(name, since);
    }
  }
  return out;
}

} // namespace xl::runtime
