// The timeline trace (api/src/trace.hpp): a small graph — several queues, host calls, a native
// callback, wait-before-signal, a host signal, a failed semaphore, a failing host call, host
// waits — runs with tracing on, once per backend (TraceTest.<test>/host, /cuda, /hip; absent
// backends skip). The trace is parsed and checked: its structure (every event has ph, ts, pid and
// tid; B/E balanced and nested per thread; every track named), that every flow arrow joins the
// slice of a signal to the slice of a submission (or host wait) that waited on that semaphore for
// a value <= the signalled one, and that every waiting submission released by a signal has its
// arrow. The graph's own edges are checked by name too.
//
// BATON_TRACE_TEST_OUT=<dir> keeps each test's trace there as <suite>.<test>.json (the renderer's
// test, check_render.py, uses it); otherwise traces go to the test's temporary directory and are
// removed.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"
#include "json.hpp"
#include "test_support.hpp"
#include "trace.hpp"
#if BATON_TRACE_TEST_CUDA
#include "cuda_symbols.hpp"  // fault injection at the driver wrapper, for device loss
#endif

namespace baton_test {
namespace {

using baton::Result;
using json::Value;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tracePathFor(const std::string& name) {
  std::string safe = name;
  for (char& c : safe)
    if (c == '/') c = '.';
  if (const char* dir = std::getenv("BATON_TRACE_TEST_OUT"); dir && *dir)
    return std::string(dir) + "/" + safe + ".json";
  return ::testing::TempDir() + "baton-trace-" + std::to_string(getpid()) + "-" + safe + ".json";
}

bool keepTraces() {
  const char* dir = std::getenv("BATON_TRACE_TEST_OUT");
  return dir && *dir;
}

// ---- what a trace holds, indexed for the checks ---------------------------------------------

struct Slice {
  const Value* event;  // the X, or the B of a B/E pair
  double ts, end;
  uint64_t pid, tid;
  const Value* endEvent = nullptr;  // the E of a B/E pair
};

struct Trace {
  Value doc;
  std::vector<const Value*> events;
  std::map<std::pair<uint64_t, uint64_t>, std::string> threadNames;
  std::map<uint64_t, std::string> processNames;
  std::map<uint64_t, Slice> submissions;  // id -> execution slice
  std::map<uint64_t, Slice> held;         // id -> held slice
  std::vector<Slice> hostWaits;           // B/E "host_wait" slices of host waits
  std::vector<Slice> signals;             // X "signal" slices
  std::vector<Slice> calls;               // B/E host_call and native slices
  std::map<uint64_t, std::pair<const Value*, const Value*>> flows;  // id -> (s, f)
};

// Checks the structure and indexes the trace. Adds a failure for each violation.
Trace load(const std::string& path) {
  Trace t;
  const std::string text = readFile(path);
  EXPECT_FALSE(text.empty()) << "no trace written to " << path;
  try {
    t.doc = json::parse(text);
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << ": " << e.what();
    return t;
  }
  EXPECT_EQ(t.doc.kind, Value::Object);
  const Value& list = t.doc["traceEvents"];
  EXPECT_EQ(list.kind, Value::Array) << "no traceEvents array";
  EXPECT_EQ(t.doc["otherData"]["dropped_records"].num(), 0);
  const std::set<std::string> phases = {"X", "B", "E", "i", "s", "f", "M"};
  std::map<std::pair<uint64_t, uint64_t>, std::vector<const Value*>> open;
  for (const Value& e : list.array) {
    t.events.push_back(&e);
    EXPECT_EQ(e.kind, Value::Object);
    EXPECT_EQ(e["ph"].kind, Value::String) << "event without ph";
    EXPECT_EQ(e["ts"].kind, Value::Number) << "event without ts: " << e["name"].str();
    EXPECT_EQ(e["pid"].kind, Value::Number) << "event without pid: " << e["name"].str();
    EXPECT_EQ(e["tid"].kind, Value::Number) << "event without tid: " << e["name"].str();
    EXPECT_EQ(e["name"].kind, Value::String);
    const std::string& ph = e["ph"].str();
    EXPECT_TRUE(phases.count(ph)) << "unexpected phase " << ph;
    const auto key = std::make_pair(e["pid"].u64(), e["tid"].u64());
    if (ph == "M") {
      if (e["name"].str() == "thread_name") t.threadNames[key] = e["args"]["name"].str();
      if (e["name"].str() == "process_name") t.processNames[key.first] = e["args"]["name"].str();
      continue;
    }
    const double ts = e["ts"].num();
    EXPECT_GE(ts, 0);
    if (ph == "X") {
      EXPECT_EQ(e["dur"].kind, Value::Number) << "X without dur";
      EXPECT_GE(e["dur"].num(), 0);
      const Slice s{&e, ts, ts + e["dur"].num(), key.first, key.second};
      const std::string& cat = e["cat"].str();
      if (cat == "submission") {
        EXPECT_EQ(t.submissions.count(e["args"]["id"].u64()), 0u) << "two slices of one id";
        t.submissions[e["args"]["id"].u64()] = s;
      } else if (cat == "held") {
        t.held[e["args"]["id"].u64()] = s;
      } else if (cat == "signal") {
        t.signals.push_back(s);
      }
    } else if (ph == "B") {
      open[key].push_back(&e);
    } else if (ph == "E") {
      auto& stack = open[key];
      if (stack.empty()) {
        ADD_FAILURE() << "E without B: " << e["name"].str();
        continue;
      }
      const Value* b = stack.back();
      stack.pop_back();
      EXPECT_EQ((*b)["name"].str(), e["name"].str()) << "B/E not nested";
      EXPECT_LE((*b)["ts"].num(), ts);
      const Slice s{b, (*b)["ts"].num(), ts, key.first, key.second, &e};
      const std::string& cat = (*b)["cat"].str();
      if (cat == "host_wait" && (*b)["args"].has("entries")) {
        t.hostWaits.push_back(s);
      } else if (cat == "host_call" || cat == "native") {
        t.calls.push_back(s);
      }
    } else if (ph == "s" || ph == "f") {
      EXPECT_EQ(e["id"].kind, Value::Number) << "flow without id";
      auto& pair = t.flows[e["id"].u64()];
      (ph == "s" ? pair.first : pair.second) = &e;
      if (ph == "f") {
        EXPECT_EQ(e["bp"].str(), "e") << "flow end not bound to its enclosing slice";
      }
    }
  }
  for (const auto& [key, stack] : open) EXPECT_TRUE(stack.empty()) << "B without E";
  for (const Value* e : t.events) {
    if ((*e)["ph"].str() == "M") continue;
    const auto key = std::make_pair((*e)["pid"].u64(), (*e)["tid"].u64());
    EXPECT_TRUE(t.threadNames.count(key))
        << "track " << key.first << "/" << key.second << " has no thread_name";
    EXPECT_TRUE(t.processNames.count(key.first)) << "process " << key.first << " has no name";
  }
  return t;
}

bool inside(const Slice& s, const Value& e) {
  const double ts = e["ts"].num();
  return s.pid == e["pid"].u64() && s.tid == e["tid"].u64() && ts >= s.ts && ts <= s.end;
}

bool hasOp(const Value& ops, const std::string& semaphore, uint64_t value) {
  for (const Value& op : ops.array)
    if (op["semaphore"].str() == semaphore && op["value"].u64() == value) return true;
  return false;
}

// Every flow joins a signal to a wait it could have released; every waiting submission that
// ran has an arrow for each of its waits. Returns the flows as (from, to, semaphore name).
std::set<std::tuple<uint64_t, uint64_t, std::string>> checkFlows(const Trace& t) {
  std::set<std::tuple<uint64_t, uint64_t, std::string>> edges;
  std::set<std::tuple<uint64_t, std::string, uint64_t>> arrived;  // (to, semaphore, waited)
  for (const auto& [id, pair] : t.flows) {
    const Value* s = pair.first;
    const Value* f = pair.second;
    if (!s || !f) {
      ADD_FAILURE() << "flow " << id << " lacks its " << (s ? "end" : "start");
      continue;
    }
    const Value& a = (*s)["args"];
    EXPECT_EQ(a["semaphore"].str(), (*f)["args"]["semaphore"].str());
    const std::string& sem = a["semaphore"].str();
    const uint64_t waited = a["waited"].u64(), signalled = a["signalled"].u64();
    const uint64_t from = a["from"].u64(), to = a["to"].u64();
    EXPECT_LE(waited, signalled) << "flow " << id << " from a lower value than the wait's";
    // The start: inside the signaller's slice, which signals that value.
    if (from) {
      auto it = t.submissions.find(from);
      if (it == t.submissions.end()) {
        ADD_FAILURE() << "flow " << id << " from unknown submission " << from;
        continue;
      }
      EXPECT_TRUE(inside(it->second, *s)) << "flow " << id << " does not start in #" << from;
      EXPECT_TRUE(hasOp((*it->second.event)["args"]["signals"], sem, signalled))
          << "flow " << id << ": #" << from << " does not signal " << sem << " = " << signalled;
    } else {
      bool found = false;
      for (const Slice& h : t.signals)
        found |= inside(h, *s) && (*h.event)["args"]["semaphore"].str() == sem &&
                 (*h.event)["args"]["value"].u64() == signalled;
      EXPECT_TRUE(found) << "flow " << id << " does not start in a host signal of " << sem;
    }
    // The end: inside the waiter's slice (held, or execution), which waits for that value.
    if (to) {
      auto it = t.submissions.find(to);
      auto held = t.held.find(to);
      const Value* sub = it != t.submissions.end() ? it->second.event : nullptr;
      if (!sub) {
        ADD_FAILURE() << "flow " << id << " to unknown submission " << to;
        continue;
      }
      const bool in = (held != t.held.end() && inside(held->second, *f)) || inside(it->second, *f);
      EXPECT_TRUE(in) << "flow " << id << " does not end in #" << to;
      EXPECT_TRUE(hasOp((*sub)["args"]["waits"], sem, waited))
          << "flow " << id << ": #" << to << " did not wait for " << sem << " >= " << waited;
      arrived.insert({to, sem, waited});
    } else {
      bool found = false;
      for (const Slice& w : t.hostWaits)
        found |= inside(w, *f) && hasOp((*w.event)["args"]["entries"], sem, waited);
      EXPECT_TRUE(found) << "flow " << id << " does not end in a host wait for " << sem;
    }
    edges.insert({from, to, a["name"].str()});
  }
  for (const auto& [id, slice] : t.submissions) {
    const Value& args = (*slice.event)["args"];
    if (args["status"].str() != "ok") continue;
    for (const Value& w : args["waits"].array)
      EXPECT_TRUE(arrived.count({id, w["semaphore"].str(), w["value"].u64()}))
          << "#" << id << " waited for " << w["name"].str() << " >= " << w["value"].u64()
          << " but no arrow shows what released it";
  }
  return edges;
}

// The id of the submission whose slice has `list` ("waits"/"signals") holding `name` = value.
uint64_t submissionWith(const Trace& t, const char* list, const std::string& name, uint64_t value) {
  for (const auto& [id, slice] : t.submissions)
    for (const Value& op : (*slice.event)["args"][list].array)
      if (op["name"].str() == name && op["value"].u64() == value) return id;
  return 0;
}

// ---- the traced graph -----------------------------------------------------------------------

Result sleepCall(void*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  return Result::Success;
}
Result okCall(void*) { return Result::Success; }
Result failingCall(void*) { return Result::ErrorInvalidState; }
Result nativeCall(const baton::NativeQueue&, void*) { return Result::Success; }

class TraceTest : public ::testing::TestWithParam<baton::BackendKind> {
 protected:
  void SetUp() override {
    using namespace baton;
    const BackendKind kind = GetParam();
    path_ = tracePathFor(
        ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() +
        std::string(".") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::remove(path_.c_str());
    InstanceCreateInfo info = sink_.instanceInfo(backendBit(kind));
    info.tracePath = path_.c_str();
    ASSERT_OK(createInstance(info, instance_.put()));
    uint32_t count = 0;
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, nullptr));
    std::vector<PhysicalDevice> all(count);
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, all.data()));
    for (PhysicalDevice p : all) {
      PhysicalDeviceProperties props;
      ASSERT_OK(p.getProperties(&props));
      if (props.backend == kind) {
        physical_ = p;
        break;
      }
    }
    if (!physical_) {
      if (backendRequired(kind)) FAIL() << backendName(kind) << " has no device here";
      GTEST_SKIP() << backendName(kind) << ": no device here";
    }
    DeviceCreateInfo deviceInfo;
    deviceInfo.queueCount = 3;
    deviceInfo.debugName = "traced";
    ASSERT_OK(instance_->createDevice(physical_, deviceInfo, device_.put()));
    for (uint32_t i = 0; i < 3; ++i) ASSERT_OK(device_->getQueue(i, &q_[i]));
  }

  void TearDown() override {
    // The instance writes its trace when it is destroyed: first, so that the file is gone after
    // (a test that skipped or failed before destroying them left it in the temporary folder).
    device_.reset();
    instance_.reset();
    if (!keepTraces()) std::remove(path_.c_str());
  }

  baton::UniqueSemaphore semaphore(const char* name) {
    baton::SemaphoreCreateInfo info;
    info.debugName = name;
    baton::UniqueSemaphore s;
    EXPECT_OK(instance_->createSemaphore(info, s.put()));
    return s;
  }
  baton::UniqueCommandBuffer commands(baton::HostCallback host, baton::NativeCallback native) {
    baton::UniqueCommandBuffer cb;
    EXPECT_OK(device_->createCommandBuffer(cb.put()));
    EXPECT_OK(cb->begin());
    if (host) {
      EXPECT_OK(cb->hostCall(host, nullptr));
    }
    if (native) {
      EXPECT_OK(cb->native(native, nullptr));
    }
    EXPECT_OK(cb->end());
    return cb;
  }

  // Destroys everything: the last instance going writes the trace.
  void finish() {
    EXPECT_OK(device_.release().destroy()) << sink_.dump();
    EXPECT_OK(instance_.release().destroy()) << sink_.dump();
  }

  MessageSink sink_;
  std::string path_;
  baton::UniqueInstance instance_;
  baton::PhysicalDevice physical_;
  baton::UniqueDevice device_;
  baton::Queue q_[3];
};

TEST_P(TraceTest, GraphTraceIsWellFormedAndArrowsMatchWaits) {
  using baton::SemaphoreValue;
  using baton::SubmitInfo;
  {
    auto a = semaphore("A"), b = semaphore("B"), c = semaphore("C"), h = semaphore("H");
    auto f = semaphore("F"), d = semaphore("D"), e = semaphore("E"), g = semaphore("G");
    auto sleepy = commands(sleepCall, nullptr), host = commands(okCall, nullptr);
    auto native = commands(nullptr, nativeCall), failing = commands(failingCall, nullptr);
    baton::CommandBuffer sleepyCb = *sleepy, hostCb = *host, nativeCb = *native,
                         failingCb = *failing;
    // Wait-before-signal: queue 1 waits for A before anything promises it; queue 2 for B (queue
    // 1's) and H (the host's).
    SemaphoreValue a1{*a, 1}, b1{*b, 1}, c1{*c, 1}, h1{*h, 1}, f1{*f, 1}, d1{*d, 1}, e1{*e, 1},
        g1{*g, 1}, g2{*g, 2};
    ASSERT_OK(q_[1].submit(SubmitInfo{a1, hostCb, b1}));
    SemaphoreValue q2waits[] = {b1, h1};
    ASSERT_OK(q_[2].submit(SubmitInfo{q2waits, nativeCb, c1}));
    ASSERT_OK(q_[0].submit(SubmitInfo{{}, sleepyCb, a1}));
    // Two submissions in one call, the second waiting for the first.
    SubmitInfo pair[] = {SubmitInfo{{}, {}, g1}, SubmitInfo{g1, {}, g2}};
    ASSERT_OK(q_[0].submit(pair));
    // The host signals H from another thread while this one waits for C.
    std::thread signaller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      EXPECT_OK(h->signal(1));
    });
    EXPECT_OK(c->wait(1, kLongNs));
    signaller.join();
    // A failed semaphore: the submission waiting for it fails its signal.
    ASSERT_OK(q_[1].submit(SubmitInfo{f1, {}, d1}));
    EXPECT_OK(f->fail("trace test failure"));
    EXPECT_EQ(d->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
    // A failing host call.
    ASSERT_OK(q_[0].submit(SubmitInfo{{}, failingCb, e1}));
    EXPECT_EQ(e->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
    EXPECT_OK(g->wait(2, kLongNs));
    EXPECT_OK(device_->waitIdle());
  }
  finish();

  const Trace t = load(path_);
  ASSERT_FALSE(HasFailure()) << path_;
  // Tracks: the three queues, named after their labels, and their submissions on them.
  std::set<std::string> queueTracks;
  for (const auto& [key, name] : t.threadNames)
    if (name.rfind("queue ", 0) == 0 && name.find("held") == std::string::npos)
      queueTracks.insert(name.substr(0, 8));
  EXPECT_EQ(queueTracks, (std::set<std::string>{"queue 0 ", "queue 1 ", "queue 2 "}));
  for (const auto& [id, slice] : t.submissions) {
    const std::string& label = t.threadNames.at({slice.pid, slice.tid});
    EXPECT_EQ(label, (*slice.event)["args"]["queue"].str()) << "#" << id << " on another track";
    EXPECT_NE(label.find("'traced'"), std::string::npos) << label;
  }

  const auto edges = checkFlows(t);
  const uint64_t signalsA = submissionWith(t, "signals", "A", 1);
  const uint64_t waitsA = submissionWith(t, "waits", "A", 1);
  const uint64_t waitsB = submissionWith(t, "waits", "B", 1);
  const uint64_t signalsG1 = submissionWith(t, "signals", "G", 1);
  const uint64_t waitsG1 = submissionWith(t, "waits", "G", 1);
  ASSERT_TRUE(signalsA && waitsA && waitsB && signalsG1 && waitsG1);
  EXPECT_TRUE(edges.count({signalsA, waitsA, "A"})) << "no arrow A: queue 0 -> queue 1";
  EXPECT_TRUE(edges.count({waitsA, waitsB, "B"})) << "no arrow B: queue 1 -> queue 2";
  EXPECT_TRUE(edges.count({0, waitsB, "H"})) << "no arrow H: host signal -> queue 2";
  EXPECT_TRUE(edges.count({waitsB, 0, "C"})) << "no arrow C: queue 2 -> the host wait";
  EXPECT_TRUE(edges.count({signalsG1, waitsG1, "G"})) << "no arrow G within queue 0";
  // Queue 1 waited for A before queue 0's submission existed: it was held.
  EXPECT_TRUE(t.held.count(waitsA)) << "the wait-before-signal submission has no held slice";

  // Host calls and the native callback, with their submissions.
  std::set<std::pair<std::string, uint64_t>> calls;
  for (const Slice& s : t.calls)
    calls.insert({(*s.event)["cat"].str(), (*s.event)["args"]["submission"].u64()});
  EXPECT_TRUE(calls.count({"host_call", waitsA})) << "no host call slice of #" << waitsA;
  EXPECT_TRUE(calls.count({"host_call", signalsA})) << "no host call slice of #" << signalsA;
  EXPECT_TRUE(calls.count({"native", waitsB})) << "no native callback slice of #" << waitsB;

  // Failures: the semaphore's, with its reason; the submission that waited for it; the failing
  // host call's submission.
  bool semaphoreFailure = false, waiterFailure = false, hostCallFailure = false;
  const uint64_t signalsE = submissionWith(t, "signals", "E", 1);
  for (const Value* e : t.events) {
    if ((*e)["ph"].str() != "i" || (*e)["cat"].str() != "failure") continue;
    const Value& args = (*e)["args"];
    if (args["name"].str() == "F" && containsText(args["reason"].str(), "trace test failure"))
      semaphoreFailure = true;
    if (containsText(args["error"].str(), "semaphore 'F'")) waiterFailure = true;
    if (args["id"].u64() == signalsE && signalsE) hostCallFailure = true;
  }
  EXPECT_TRUE(semaphoreFailure) << "no instant for F's failure with its reason";
  EXPECT_TRUE(waiterFailure) << "no instant for the submission that waited for F";
  EXPECT_TRUE(hostCallFailure) << "no instant for the failing host call's submission";
  ASSERT_TRUE(t.submissions.count(signalsE));
  EXPECT_EQ((*t.submissions.at(signalsE).event)["args"]["status"].str(), "failed");

  // Host waits are slices of the waiting thread, with their results.
  std::set<std::pair<std::string, std::string>> waits;  // (semaphore name, result)
  for (const Slice& w : t.hostWaits)
    for (const Value& entry : (*w.event)["args"]["entries"].array)
      waits.insert({entry["name"].str(), (*w.endEvent)["args"]["result"].str()});
  EXPECT_TRUE(waits.count({"C", "Success"}));
  EXPECT_TRUE(waits.count({"D", "ErrorSemaphoreFailed"}));
}

// Device loss (a sticky driver error, injected at the CUDA driver wrapper) is marked across the
// trace with its reason, and the semaphore it failed with ErrorDeviceLost.
TEST_P(TraceTest, DeviceLossIsMarked) {
#if BATON_TRACE_TEST_CUDA
  if (GetParam() != baton::BackendKind::Cuda)
    GTEST_SKIP() << "device loss is injected through the CUDA driver wrapper";
  {
    auto s = semaphore("lost");
    baton::cuda::clearFaults();
    ASSERT_TRUE(baton::cuda::injectFault("cuEventRecord", CUDA_ERROR_ILLEGAL_ADDRESS));
    baton::SemaphoreValue one{*s, 1};
    ASSERT_OK(q_[0].submit(baton::SubmitInfo{{}, {}, one}));
    EXPECT_EQ(s->wait(1, kLongNs), Result::ErrorDeviceLost);
    baton::cuda::clearFaults();
  }
  (void)device_.release().destroy();  // ErrorDeviceLost is expected from what it waits for
  EXPECT_OK(instance_.release().destroy());
  const Trace t = load(path_);
  bool lost = false, failed = false;
  for (const Value* e : t.events) {
    if ((*e)["ph"].str() != "i") continue;
    if ((*e)["name"].str() == "device lost" && (*e)["s"].str() == "g" &&
        containsText((*e)["args"]["reason"].str(), "CUDA_ERROR_ILLEGAL_ADDRESS"))
      lost = true;
    if ((*e)["args"]["name"].str() == "lost" && (*e)["args"]["result"].str() == "ErrorDeviceLost")
      failed = true;
  }
  EXPECT_TRUE(lost) << "no global 'device lost' instant naming the driver's error";
  EXPECT_TRUE(failed) << "no instant for the semaphore that failed with ErrorDeviceLost";
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// Graph command buffers: building their graphs is a slice of the thread that called end(), each
// launch a slice of the thread that issued it, naming the submission and the commands it covers.
TEST_P(TraceTest, GraphCommandBuffersShowTheirBuildAndLaunches) {
  if (GetParam() == baton::BackendKind::Host)
    GTEST_SKIP() << "the host backend replays graph command buffers: nothing to build or launch";
  {
    auto s = semaphore("graph");
    baton::CommandBufferCreateInfo info;
    info.usage = baton::CommandBufferUsage::Graph;
    baton::UniqueCommandBuffer cb;
    ASSERT_OK(device_->createCommandBuffer(info, cb.put()));
    ASSERT_OK(cb->begin());
    ASSERT_OK(cb->hostCall(okCall, nullptr));
    ASSERT_OK(cb->native(nativeCall, nullptr, baton::kNativeCapturable));
    ASSERT_OK(cb->end());
    for (uint64_t v = 1; v <= 2; ++v) {
      baton::SemaphoreValue signal{*s, v};
      baton::SubmitInfo submit;
      const baton::CommandBuffer one = *cb;
      submit.commandBuffers = {&one, 1};
      submit.signals = {&signal, 1};
      ASSERT_OK(q_[0].submit(submit));
    }
    ASSERT_OK(s->wait(2, kLongNs));
  }
  finish();
  const Trace t = load(path_);
  int builds = 0, launches = 0;
  for (const Value* e : t.events) {
    if ((*e)["ph"].str() != "X") continue;
    const std::string name = (*e)["name"].str();
    if (name == "build graphs" && (*e)["args"]["commands"].num() == 2) ++builds;
    // Two graphs per submission: the host call ends the first (the native's graph waits for it).
    if (name.rfind("issue: graph launch #", 0) == 0 && (*e)["args"]["commands"].num() == 1 &&
        (*e)["args"]["submission"].num() > 0)
      ++launches;
  }
  EXPECT_EQ(builds, 1) << "no 'build graphs' slice covering the 2 commands";
  EXPECT_EQ(launches, 4) << "2 submissions of 2 graphs each: 4 'issue: graph launch' slices";
}

// Tracing off (no path, no BATON_TRACE): nothing is written, and submissions carry no trace id.
TEST(TraceOff, NothingIsWrittenWithoutAPath) {
  ASSERT_EQ(std::getenv("BATON_TRACE"), nullptr) << "the test expects BATON_TRACE unset";
  baton::UniqueInstance instance;
  ASSERT_OK(baton::createInstance({}, instance.put()));
  EXPECT_FALSE(baton::core::trace::on());
  EXPECT_EQ(baton::core::trace::path(), "");
  EXPECT_OK(instance.release().destroy());
}

// BATON_TRACE=<path> enables the trace for every instance, and lasts until the process exits
// (stopped here explicitly, so that the other tests run their own sessions).
TEST(TraceEnvironment, BatonTraceWritesTheFile) {
  const std::string path = tracePathFor("TraceEnvironment.BatonTraceWritesTheFile");
  std::remove(path.c_str());
  ASSERT_EQ(setenv("BATON_TRACE", path.c_str(), 1), 0);
  {
    baton::UniqueInstance instance;
    baton::InstanceCreateInfo info;
    info.tracePath = "/nonexistent-dir/ignored.json";  // the environment wins
    ASSERT_OK(baton::createInstance(info, instance.put()));
    unsetenv("BATON_TRACE");
    EXPECT_EQ(baton::core::trace::path(), path);
    baton::UniqueSemaphore s;
    ASSERT_OK(instance->createSemaphore({0, "env"}, s.put()));
    EXPECT_OK(s->signal(1));
    EXPECT_OK(s->wait(1, kLongNs));
    s.reset();
    EXPECT_OK(instance.release().destroy());
  }
  EXPECT_TRUE(baton::core::trace::on()) << "a BATON_TRACE session ended with its instance";
  const Trace t = load(path);
  EXPECT_EQ(t.signals.size(), 1u);
  EXPECT_EQ(t.hostWaits.size(), 1u);
  EXPECT_TRUE(baton::core::trace::stop().ok());
  EXPECT_FALSE(baton::core::trace::on());
  if (!keepTraces()) std::remove(path.c_str());
}

// Names with quotes, control characters and bytes that are not UTF-8 still make valid JSON.
TEST(TraceJson, NamesAreEscaped) {
  const std::string path = tracePathFor("TraceJson.NamesAreEscaped");
  std::remove(path.c_str());
  const std::string name = "q\"uote\\ new\nline \x01 bad\xff utf8 \xc3\xa9";
  {
    baton::UniqueInstance instance;
    baton::InstanceCreateInfo info;
    info.tracePath = path.c_str();
    ASSERT_OK(baton::createInstance(info, instance.put()));
    baton::UniqueSemaphore s;
    ASSERT_OK(instance->createSemaphore({0, name.c_str()}, s.put()));
    EXPECT_OK(s->signal(1));
    EXPECT_OK(s->fail("reason with \"quotes\"\tand a tab"));
    s.reset();
    EXPECT_OK(instance.release().destroy());
  }
  const Trace t = load(path);
  ASSERT_EQ(t.signals.size(), 1u);
  EXPECT_EQ((*t.signals[0].event)["args"]["name"].str(),
            "q\"uote\\ new\nline \x01 bad\xef\xbf\xbd utf8 \xc3\xa9");
  if (!keepTraces()) std::remove(path.c_str());
}

BATON_INSTANTIATE_FOR_BACKENDS(TraceTest);

}  // namespace
}  // namespace baton_test
