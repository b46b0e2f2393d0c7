#include "lazy_observers.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

#include "mutex.hpp"

namespace baton::core {
namespace {

struct Registry {
  Mutex mutex;
  std::vector<LazyObserver*> observers;
};

// Never destroyed: queues may be destroyed by static destructors of the program.
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

void addLazyObserver(LazyObserver* observer) {
  Registry& r = registry();
  std::lock_guard<Mutex> lock(r.mutex);
  r.observers.push_back(observer);
}

void removeLazyObserver(LazyObserver* observer) {
  Registry& r = registry();
  std::lock_guard<Mutex> lock(r.mutex);
  r.observers.erase(std::remove(r.observers.begin(), r.observers.end(), observer),
                    r.observers.end());
}

void lookNowEverywhere() {
  Registry& r = registry();
  std::lock_guard<Mutex> lock(r.mutex);
  for (LazyObserver* o : r.observers) o->lookNow();
}

}  // namespace baton::core
