// The guide's "Host waits" (docs/guide.md): ALL and ANY over several semaphores, polls and
// timeouts. Built and run by meson test (suite guide); the regions between the [name] lines are
// the guide's code blocks (tests/docs/check_examples.py).
#include <baton/baton.hpp>
#include <cstdio>

#include "check.hpp"

using guide::expect;
using guide::ok;

int main() {
  baton::UniqueInstance instance;
  expect(baton::createInstance({}, instance.put()) == baton::Result::Success, "createInstance");
  baton::UniqueSemaphore physics, audio;
  expect(instance->createSemaphore({}, physics.put()) == baton::Result::Success, "physics");
  expect(instance->createSemaphore({}, audio.put()) == baton::Result::Success, "audio");
  expect(physics->signal(10) == baton::Result::Success, "signal physics");

  // [all-any]
  baton::SemaphoreValue both[] = {{*physics, 10}, {*audio, 7}};
  // ANY: physics is at 10, so this returns at once.
  baton::Result any = instance->waitSemaphores(both, baton::WaitMode::Any, baton::kWaitForever);
  // ALL: audio is still below 7. A timeout of 0 polls; a finite one waits that long.
  baton::Result poll = instance->waitSemaphores(both, baton::WaitMode::All, 0);
  baton::Result late = instance->waitSemaphores(both, baton::WaitMode::All, 2'000'000);  // 2 ms
  // any == Success; poll == Timeout and late == Timeout: results, not errors
  // (baton::isError(Result::Timeout) is false).
  // [all-any]
  expect(any == baton::Result::Success, "ANY is met by one value");
  expect(poll == baton::Result::Timeout && late == baton::Result::Timeout, "ALL times out");
  expect(!baton::isError(poll), "a timeout is not an error");

  expect(audio->signal(7) == baton::Result::Success, "signal audio");
  expect(instance->waitSemaphores(both, baton::WaitMode::All, 0) == baton::Result::Success,
         "ALL is met once both are");

  return guide::finish("host_waits");
}
