#include "notifier.hpp"

#include <utility>
#include <vector>

#include "objects.hpp"

namespace baton::core {
namespace {
thread_local int depth = 0;
thread_local std::vector<Ref<Queue>> scheduled;
}  // namespace

Notifier::Scope::Scope() noexcept { ++depth; }

Notifier::Scope::~Scope() {
  if (depth > 1 || scheduled.empty()) {
    --depth;
    return;
  }
  // Outermost scope: drain. depth stays 1 while draining, so the scopes that evaluate() opens
  // nest instead of draining recursively; passes they schedule join this loop.
  while (!scheduled.empty()) {
    Ref<Queue> q = std::move(scheduled.back());
    scheduled.pop_back();
    q->evaluate();
  }
  --depth;
}

void Notifier::schedule(Queue* queue) {
  for (const Ref<Queue>& q : scheduled)
    if (q.get() == queue) return;
  scheduled.push_back(Ref<Queue>(queue));
}

std::vector<Ref<Queue>> Notifier::takeScheduled() { return std::exchange(scheduled, {}); }

}  // namespace baton::core
