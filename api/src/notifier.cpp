#include "notifier.hpp"

#include <utility>
#include <vector>

#include "objects.hpp"
#include "parker.hpp"

namespace baton::core {

namespace notifier_detail {
thread_local constinit int tDepth __attribute__((tls_model("initial-exec"))) = 0;
thread_local constinit bool tPending __attribute__((tls_model("initial-exec"))) = false;
}  // namespace notifier_detail

namespace {

// What this thread's scopes have collected.
struct ThreadState {
  std::vector<Ref<Queue>> scheduled;
  std::vector<std::pair<Ref<Object>, Parker*>> wakes;
};

// Reached through a plain pointer in the initial-exec TLS model. libbaton is a shared library,
// where the default (global-dynamic) model makes every thread_local access a call to
// __tls_get_addr, several times per submit (its cost: docs/performance.md, 'Measurements behind
// design choices'); and a thread_local with a destructor (ThreadState's vectors) is also guarded by
// a hidden TLS flag that the attribute does not cover. The pointer is trivial, so neither applies:
// one load from the static TLS block (a library loaded with dlopen takes its slot from glibc's
// surplus).
thread_local ThreadState* tState __attribute__((tls_model("initial-exec"))) = nullptr;

// The owner of the thread's state, made on the thread's first Scope; it forgets the pointer when
// the thread exits.
struct ThreadStateOwner {
  ThreadState state;
  ~ThreadStateOwner() { tState = nullptr; }
};

[[gnu::noinline]] ThreadState& makeThreadState() {
  thread_local ThreadStateOwner owner;
  tState = &owner.state;
  return owner.state;
}

inline ThreadState& threadState() {
  if (ThreadState* t = tState) [[likely]]
    return *t;
  return makeThreadState();
}

void wakeAll(ThreadState& t) {
  // Swap out first: a woken owner's last reference may drop here, and nothing it runs may
  // append to the list being walked.
  std::vector<std::pair<Ref<Object>, Parker*>> now;
  now.swap(t.wakes);
  for (auto& [owner, parker] : now) parker->unpark();
}
}  // namespace

void Notifier::Scope::drain() {
  ThreadState& t = threadState();
  // Outermost scope: wake host waiters first (the latency-critical hand-off), then run the
  // scheduler passes. The depth stays 1 meanwhile, so the scopes that evaluate() opens nest
  // instead of draining recursively; what they schedule or wake joins this loop.
  while (!t.scheduled.empty() || !t.wakes.empty()) {
    wakeAll(t);
    if (t.scheduled.empty()) break;
    Ref<Queue> q = std::move(t.scheduled.back());
    t.scheduled.pop_back();
    q->evaluate();
  }
  notifier_detail::tPending = false;  // both lists are empty
  --notifier_detail::tDepth;
}

void Notifier::unparkLater(Ref<Object> owner, Parker* parker) {
  threadState().wakes.emplace_back(std::move(owner), parker);
  notifier_detail::tPending = true;
}

void Notifier::wakeWaitersNow() {
  if (ThreadState* t = tState; t && !t->wakes.empty()) wakeAll(*t);
}

void Notifier::schedule(Queue* queue) {
  std::vector<Ref<Queue>>& scheduled = threadState().scheduled;
  for (const Ref<Queue>& q : scheduled)
    if (q.get() == queue) return;
  scheduled.push_back(Ref<Queue>(queue));
  notifier_detail::tPending = true;
}

std::vector<Ref<Queue>> Notifier::takeScheduled() {
  return std::exchange(threadState().scheduled, {});
}

}  // namespace baton::core
