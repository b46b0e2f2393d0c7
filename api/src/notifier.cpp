#include "notifier.hpp"

#include <utility>
#include <vector>

#include "objects.hpp"
#include "parker.hpp"

namespace baton::core {
namespace {
thread_local int depth = 0;
thread_local std::vector<Ref<Queue>> scheduled;
thread_local std::vector<std::pair<Ref<Object>, Parker*>> wakes;

void wakeAll() {
  // Swap out first: a woken owner's last reference may drop here, and nothing it runs may
  // append to the list being walked.
  std::vector<std::pair<Ref<Object>, Parker*>> now;
  now.swap(wakes);
  for (auto& [owner, parker] : now) parker->unpark();
}
}  // namespace

Notifier::Scope::Scope() noexcept { ++depth; }

Notifier::Scope::~Scope() {
  if (depth > 1 || (scheduled.empty() && wakes.empty())) {
    --depth;
    return;
  }
  // Outermost scope: wake host waiters first (the latency-critical hand-off), then run the
  // scheduler passes. depth stays 1 meanwhile, so the scopes that evaluate() opens nest instead
  // of draining recursively; what they schedule or wake joins this loop.
  while (!scheduled.empty() || !wakes.empty()) {
    wakeAll();
    if (scheduled.empty()) break;
    Ref<Queue> q = std::move(scheduled.back());
    scheduled.pop_back();
    q->evaluate();
  }
  --depth;
}

void Notifier::unparkLater(Ref<Object> owner, Parker* parker) {
  wakes.emplace_back(std::move(owner), parker);
}

void Notifier::schedule(Queue* queue) {
  for (const Ref<Queue>& q : scheduled)
    if (q.get() == queue) return;
  scheduled.push_back(Ref<Queue>(queue));
}

std::vector<Ref<Queue>> Notifier::takeScheduled() { return std::exchange(scheduled, {}); }

}  // namespace baton::core
