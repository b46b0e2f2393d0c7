// The fake NCCL's communicators (fake_cuda.hpp, "NCCL"): the handles, the rendezvous that make
// them (init by unique id, split, shrink), their states as ncclCommGetAsyncError reports them,
// finalize, revoke, abort and destroy. The collectives are in nccl_collectives.cpp, the arithmetic
// in nccl_reduce.cpp.
//
// Locks, in the order they may nest: Management::mutex (every rendezvous of communicator
// creation), then Rank::mutex (one rank's state), then Clique::mutex (the ops of one group); the
// handle registry's and the messages' mutexes are leaves. Blocking calls wait on condition
// variables (never holding a lock while they sleep).
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <unordered_map>

#include "fake_cuda.hpp"

namespace fake_cuda::nccl {

NcclCounters gNccl;

namespace {

// ncclGetLastError's texts, interned: the pointer handed out stays valid for the process, whatever
// any thread reports next. Never destroyed.
struct Messages {
  std::mutex mutex;
  std::set<std::string> texts;
};
Messages& messages() {
  static auto* m = new Messages();
  return *m;
}
thread_local const char* tLastError FAKE_CUDA_TLS = nullptr;

// The live handles (ncclComm_t) and their ranks. Never destroyed: a communicator the program never
// destroys stays reachable (no leak report).
struct Handles {
  std::mutex mutex;
  std::unordered_map<const ncclComm*, std::shared_ptr<Rank>> live;
};
Handles& handles() {
  static auto* h = new Handles();
  return *h;
}

// A rendezvous of communicator creation: the ranks of an id (init), or of a parent communicator
// (its split number k, its shrink number k).
enum class Kind { Init, Split, Shrink };
struct Arrival {
  std::shared_ptr<Rank> state;   // the new communicator's rank (split without color: a placeholder)
  std::shared_ptr<Rank> parent;  // split, shrink
  int rank = 0;                  // init: the rank asked for; split, shrink: the parent's rank
  int device = 0;
  int color = 0, key = 0;   // split
  bool parentBusy = false;  // a non-blocking split or shrink: the parent reports in progress
};
struct Gathering {
  Kind kind = Kind::Init;
  int expected = 0;
  std::vector<int> excluded;  // shrink
  std::vector<Arrival> arrivals;
};
struct Management {
  std::mutex mutex;
  std::condition_variable cv;  // a rank became ready
  std::map<std::string, Gathering> gatherings;
  uint64_t uniqueIds = 0;
};
Management& management() {
  static auto* m = new Management();
  return *m;
}

void fill(Rank& s, std::shared_ptr<Clique> clique, int rank, int nranks, int minCompCap) {
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.clique = std::move(clique);
    s.rank = rank;
    s.nranks = nranks;
    s.minComputeCapability = minCompCap;
    s.sends.assign(static_cast<size_t>(nranks), 0);
    s.recvs.assign(static_cast<size_t>(nranks), 0);
  }
  s.ready.store(true, std::memory_order_release);
}

// The last arrival: makes the cliques, numbers the ranks. Called with the management lock held.
void completeLocked(Management& m, std::map<std::string, Gathering>::iterator it) {
  Gathering g = std::move(it->second);
  m.gatherings.erase(it);
  switch (g.kind) {
    case Kind::Init: {
      auto clique = makeClique(g.expected);
      int minCompCap = 100;
      for (const Arrival& a : g.arrivals)
        minCompCap = std::min(minCompCap, fake_cuda::computeCapability(a.device));
      for (Arrival& a : g.arrivals) fill(*a.state, clique, a.rank, g.expected, minCompCap);
      break;
    }
    case Kind::Split: {
      std::map<int, std::vector<Arrival*>> byColor;
      for (Arrival& a : g.arrivals) {
        if (a.color == NCCL_SPLIT_NOCOLOR)
          a.state->ready.store(true, std::memory_order_release);  // took part; no communicator
        else
          byColor[a.color].push_back(&a);
      }
      for (auto& [color, members] : byColor) {
        std::sort(members.begin(), members.end(), [](const Arrival* x, const Arrival* y) {
          return std::make_pair(x->key, x->rank) < std::make_pair(y->key, y->rank);
        });
        const int n = static_cast<int>(members.size());
        auto clique = makeClique(n);
        int minCompCap = 100;
        for (const Arrival* a : members)
          minCompCap = std::min(minCompCap, fake_cuda::computeCapability(a->device));
        for (int i = 0; i < n; ++i)
          fill(*members[static_cast<size_t>(i)]->state, clique, i, n, minCompCap);
      }
      break;
    }
    case Kind::Shrink: {
      std::sort(g.arrivals.begin(), g.arrivals.end(),
                [](const Arrival& x, const Arrival& y) { return x.rank < y.rank; });
      const int n = static_cast<int>(g.arrivals.size());
      auto clique = makeClique(n);
      int minCompCap = 100;
      for (const Arrival& a : g.arrivals)
        minCompCap = std::min(minCompCap, fake_cuda::computeCapability(a.device));
      for (int i = 0; i < n; ++i)
        fill(*g.arrivals[static_cast<size_t>(i)].state, clique, i, n, minCompCap);
      break;
    }
  }
  for (Arrival& a : g.arrivals) {
    if (!a.parentBusy) continue;
    std::lock_guard<std::mutex> lock(a.parent->mutex);
    --a.parent->gatheringsPending;
  }
  m.cv.notify_all();
}

// A rank taken back before its init completed (abort, destroy) leaves its rendezvous.
void leaveInit(const Rank* state) {
  Management& m = management();
  std::lock_guard<std::mutex> lock(m.mutex);
  for (auto it = m.gatherings.begin(); it != m.gatherings.end(); ++it) {
    if (it->second.kind != Kind::Init) continue;
    auto& arrivals = it->second.arrivals;
    auto a = std::find_if(arrivals.begin(), arrivals.end(),
                          [&](const Arrival& x) { return x.state.get() == state; });
    if (a == arrivals.end()) continue;
    arrivals.erase(a);
    if (arrivals.empty()) m.gatherings.erase(it);
    return;
  }
}

ncclResult_t arriveInit(const ncclUniqueId& id, int nranks, int rank,
                        const std::shared_ptr<Rank>& state, const char* api) {
  Management& m = management();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto [it, created] = m.gatherings.try_emplace("I" + std::string(id.internal, sizeof id.internal));
  Gathering& g = it->second;
  if (created) {
    g.kind = Kind::Init;
    g.expected = nranks;
  } else {
    if (g.expected != nranks)
      return fail(ncclInvalidUsage, "%s: rank %d gives nranks %d, the ranks before it %d", api,
                  rank, nranks, g.expected);
    for (const Arrival& a : g.arrivals) {
      if (a.rank == rank)
        return fail(ncclInvalidUsage, "%s: rank %d of this unique id is already taken", api, rank);
      if (a.device == state->device)
        return fail(ncclInvalidUsage,
                    "%s: Duplicate GPU detected : rank %d and rank %d both on CUDA device %d", api,
                    a.rank, rank, state->device);
    }
  }
  Arrival a;
  a.state = state;
  a.rank = rank;
  a.device = state->device;
  g.arrivals.push_back(std::move(a));
  if (static_cast<int>(g.arrivals.size()) == g.expected) completeLocked(m, it);
  return ncclSuccess;
}

ncclComm_t newHandle(std::shared_ptr<Rank> state) {
  auto* handle = new ncclComm();
  Handles& h = handles();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.live.emplace(handle, std::move(state));
  gNccl.communicatorsLive.fetch_add(1, std::memory_order_relaxed);
  gNccl.communicatorsMade.fetch_add(1, std::memory_order_relaxed);
  return handle;
}

// Takes a handle out of the registry and frees it; its rank lives on while ops hold it.
std::shared_ptr<Rank> takeHandle(ncclComm_t comm) {
  std::shared_ptr<Rank> state;
  {
    Handles& h = handles();
    std::lock_guard<std::mutex> lock(h.mutex);
    auto it = h.live.find(comm);
    if (it == h.live.end()) return nullptr;
    state = std::move(it->second);
    h.live.erase(it);
  }
  delete comm;
  gNccl.communicatorsLive.fetch_sub(1, std::memory_order_relaxed);
  return state;
}

// How a config asks to block: NULL inherits `fallback`; NCCL_CONFIG_UNDEF_INT blocks (NCCL's
// default, NCCL_COMM_BLOCKING unset).
ncclResult_t readConfig(const ncclConfig_t* config, bool fallback, bool* blocking,
                        const char* api) {
  *blocking = fallback;
  if (!config) return ncclSuccess;
  if (config->magic != 0xcafebeef)
    return fail(ncclInvalidArgument,
                "%s: ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER", api);
  *blocking = config->blocking != 0;  // NCCL_CONFIG_UNDEF_INT (INT_MIN) blocks too
  return ncclSuccess;
}

// After a rank arrived at a creation rendezvous: a blocking call waits (at ncclGroupEnd inside a
// group), a non-blocking one reports progress. An init call blocks as its new communicator does;
// a split or shrink as its parent does (NCCL runs it as a call of the parent), whatever the
// config asks of the new one (`callBlocks`).
ncclResult_t afterArrival(const std::shared_ptr<Rank>& state, bool callBlocks) {
  if (inGroup()) {
    deferToGroup(state, callBlocks);
    return ncclSuccess;
  }
  if (!callBlocks) return ncclInProgress;
  waitReady({state});
  return ncclSuccess;
}

// The parent of a split or shrink: it must be ready.
ncclResult_t parentOf(ncclComm_t comm, std::shared_ptr<Rank>* parent, const char* api) {
  *parent = lookup(comm);
  if (!*parent) return fail(ncclInvalidArgument, "%s: invalid communicator", api);
  if (!(*parent)->ready.load(std::memory_order_acquire))
    return fail(ncclInvalidArgument, "%s: the communicator's initialisation is in progress", api);
  return ncclSuccess;
}

// A split or shrink rendezvous; the arrival made here joins it.
void arriveChild(Kind kind, Rank& parent, Arrival a, const std::vector<int>& excluded,
                 ncclResult_t* error, const char* api) {
  Management& m = management();
  std::lock_guard<std::mutex> lock(m.mutex);
  uint64_t seq;
  {
    std::lock_guard<std::mutex> l(parent.mutex);
    seq = kind == Kind::Split ? parent.splits++ : parent.shrinks++;
  }
  const std::string key = std::string(kind == Kind::Split ? "S" : "K") +
                          std::to_string(cliqueId(*parent.clique)) + ":" + std::to_string(seq);
  auto [it, created] = m.gatherings.try_emplace(key);
  Gathering& g = it->second;
  if (created) {
    g.kind = kind;
    g.expected = parent.nranks - static_cast<int>(excluded.size());
    g.excluded = excluded;
  } else if (g.excluded != excluded) {
    *error = fail(ncclInvalidUsage, "%s: rank %d excludes other ranks than the ranks before it",
                  api, parent.rank);
    return;
  }
  if (a.parentBusy) {
    std::lock_guard<std::mutex> l(parent.mutex);
    ++parent.gatheringsPending;
  }
  g.arrivals.push_back(std::move(a));
  if (static_cast<int>(g.arrivals.size()) == g.expected) completeLocked(m, it);
}

// BATON_FAKE_CUDA_STATS=1: a line next to the driver's, when NCCL was used.
__attribute__((destructor)) void atUnload() {
  if (!fake_cuda::config().stats || gNccl.communicatorsMade.load() == 0) return;
  auto get = [](const std::atomic<uint64_t>& a) {
    return static_cast<unsigned long long>(a.load(std::memory_order_relaxed));
  };
  std::fprintf(stderr,
               "fake NCCL: %llu communicators made, %llu live; %llu collectives (per rank), %llu "
               "sends and receives; %llu stream ops ended by revoke or abort, %llu not finished; "
               "%llu captures held\n",
               get(gNccl.communicatorsMade), get(gNccl.communicatorsLive),
               get(gNccl.collectivesExecuted), get(gNccl.p2pExecuted), get(gNccl.opsAborted),
               get(gNccl.opsLive), get(gNccl.persistentLive));
}

}  // namespace

int version() {
  static const int code = [] {
    const char* v = std::getenv("BATON_FAKE_NCCL_VERSION");
    const int n = v ? std::atoi(v) : 0;
    return n >= 21900 && n < 100000 ? n : NCCL_VERSION_CODE;
  }();
  return code;
}

ncclResult_t fail(ncclResult_t result, const char* format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  Messages& m = messages();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.texts.find(text);
  if (it == m.texts.end() && m.texts.size() < 4096) it = m.texts.insert(text).first;
  tLastError = it != m.texts.end()
                   ? it->c_str()
                   : "(fake NCCL: too many distinct error messages to keep this one)";
  return result;
}

std::shared_ptr<Rank> lookup(const ncclComm* comm) {
  Handles& h = handles();
  std::lock_guard<std::mutex> lock(h.mutex);
  auto it = h.live.find(comm);
  return it == h.live.end() ? nullptr : it->second;
}

void waitReady(const std::vector<std::shared_ptr<Rank>>& states) {
  Management& m = management();
  std::unique_lock<std::mutex> lock(m.mutex);
  m.cv.wait(lock, [&] {
    return std::all_of(states.begin(), states.end(), [](const std::shared_ptr<Rank>& s) {
      return s->ready.load(std::memory_order_acquire);
    });
  });
}

ncclResult_t ensureUsable(Rank& r, const char* api) {
  if (!r.ready.load(std::memory_order_acquire))
    return fail(ncclInvalidArgument, "%s: the communicator's initialisation is in progress", api);
  if (r.revoked.load()) return fail(ncclInvalidUsage, "%s: the communicator was revoked", api);
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.injected != ncclSuccess)
    return fail(r.injected, "%s: the communicator has an asynchronous error (%s)", api,
                ncclGetErrorString(r.injected));
  if (r.finalizing) return fail(ncclInvalidUsage, "%s: the communicator was finalized", api);
  if (r.pollsInProgress > 0 || r.gatheringsPending > 0)
    return fail(ncclInvalidArgument,
                "%s: Attempt to use communicator before the previous operation returned "
                "ncclSuccess",
                api);
  return ncclSuccess;
}

}  // namespace fake_cuda::nccl

using namespace fake_cuda::nccl;

// N10: NCCL's destroy and abort return once every graph holding captured calls of the
// communicator is gone; here for up to 10 s, then an error instead of a hang.
static ncclResult_t awaitGraphs(Rank& r, const char* api) {
  std::unique_lock<std::mutex> lock(r.mutex);
  if (r.idle.wait_for(lock, std::chrono::seconds(10), [&] { return r.persistentRefs == 0; }))
    return ncclSuccess;
  return fail(ncclInvalidUsage,
              "%s: %d graph capture(s) of this communicator's calls still held by graphs or "
              "executable graphs after 10 s (NCCL waits for them to be destroyed: a hang)",
              api, r.persistentRefs);
}

extern "C" {

// ---- version, ids, errors ----------------------------------------------------------------------

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = fake_cuda::nccl::version();
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (!uniqueId) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  static const uint64_t salt = std::random_device{}();
  uint64_t n;
  {
    Management& m = management();
    std::lock_guard<std::mutex> lock(m.mutex);
    n = ++m.uniqueIds;
  }
  std::memset(uniqueId->internal, 0, sizeof uniqueId->internal);
  std::snprintf(uniqueId->internal, sizeof uniqueId->internal, "baton-fake-nccl");
  std::memcpy(uniqueId->internal + 16, &salt, sizeof salt);
  std::memcpy(uniqueId->internal + 24, &n, sizeof n);
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

// The calling thread's last error, whatever the communicator (NCCL keeps one for the process).
const char* ncclGetLastError(ncclComm_t) { return tLastError ? tLastError : ""; }

// ---- creation ----------------------------------------------------------------------------------

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  const char* api = "ncclCommInitRankConfig";
  if (!comm) return fail(ncclInvalidArgument, "%s: comm is NULL", api);
  *comm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "%s: Invalid rank requested : %d/%d", api, rank, nranks);
  bool blocking = true;
  if (ncclResult_t e = readConfig(config, true, &blocking, api)) return e;
  if (!fake_cuda::tCurrent)
    return fail(ncclInvalidUsage,
                "%s: no current CUDA context on this thread (cuCtxSetCurrent or cudaSetDevice "
                "first)",
                api);
  const int device = reinterpret_cast<fake_cuda::Context*>(fake_cuda::tCurrent)->ordinal;
  auto state = std::make_shared<Rank>(device, blocking);
  if (ncclResult_t e = arriveInit(commId, nranks, rank, state, api)) return e;
  *comm = newHandle(state);
  return afterArrival(state, blocking);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const char* api = "ncclCommInitAll";
  if (!comms) return fail(ncclInvalidArgument, "%s: comm is NULL", api);
  if (ndev < 1) return fail(ncclInvalidArgument, "%s: invalid ndev %d", api, ndev);
  std::vector<int> devices(static_cast<size_t>(ndev));
  for (int i = 0; i < ndev; ++i) {
    const int d = devlist ? devlist[i] : i;
    if (d < 0 || d >= fake_cuda::config().devices)
      return fail(ncclInvalidArgument, "%s: invalid device %d (of %d)", api, d,
                  fake_cuda::config().devices);
    for (int j = 0; j < i; ++j)
      if (devices[static_cast<size_t>(j)] == d)
        return fail(ncclInvalidUsage,
                    "%s: Duplicate GPU detected : rank %d and rank %d both on CUDA device %d", api,
                    j, i, d);
    devices[static_cast<size_t>(i)] = d;
  }
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  std::vector<std::shared_ptr<Rank>> states;
  for (int i = 0; i < ndev; ++i) {
    states.push_back(std::make_shared<Rank>(devices[static_cast<size_t>(i)], true));
    arriveInit(id, ndev, i, states.back(), api);  // distinct ranks and devices: cannot fail
  }
  waitReady(states);
  for (int i = 0; i < ndev; ++i) comms[i] = newHandle(states[static_cast<size_t>(i)]);
  return ncclSuccess;
}

// Every rank of the parent calls it; ranks of one color make a communicator, ordered by (key,
// parent rank); NCCL_SPLIT_NOCOLOR takes part and gets NULL.
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  const char* api = "ncclCommSplit";
  if (!newcomm) return fail(ncclInvalidArgument, "%s: newcomm is NULL", api);
  *newcomm = nullptr;
  std::shared_ptr<Rank> parent;
  if (ncclResult_t e = parentOf(comm, &parent, api)) return e;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return fail(ncclInvalidArgument, "%s: invalid color %d", api, color);
  bool blocking = parent->blocking;
  if (ncclResult_t e = readConfig(config, parent->blocking, &blocking, api)) return e;
  auto state = std::make_shared<Rank>(parent->device, blocking);
  Arrival a;
  a.state = state;
  a.parent = parent;
  a.rank = parent->rank;
  a.device = parent->device;
  a.color = color;
  a.key = key;
  a.parentBusy = !parent->blocking;
  ncclResult_t error = ncclSuccess;
  arriveChild(Kind::Split, *parent, std::move(a), {}, &error, api);
  if (error) return error;
  if (color != NCCL_SPLIT_NOCOLOR) *newcomm = newHandle(state);
  return afterArrival(state, parent->blocking);
}

// Every surviving rank calls it with the same list; survivors are renumbered in parent order.
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  const char* api = "ncclCommShrink";
  if (!newcomm) return fail(ncclInvalidArgument, "%s: newcomm is NULL", api);
  *newcomm = nullptr;
  std::shared_ptr<Rank> parent;
  if (ncclResult_t e = parentOf(comm, &parent, api)) return e;
  if (shrinkFlags & ~NCCL_SHRINK_ABORT)
    return fail(ncclInvalidArgument, "%s: invalid shrinkFlags %d", api, shrinkFlags);
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList))
    return fail(ncclInvalidArgument, "%s: invalid excludeRanksList", api);
  std::vector<int> excluded(excludeRanksList, excludeRanksList + excludeRanksCount);
  std::sort(excluded.begin(), excluded.end());
  for (size_t i = 0; i < excluded.size(); ++i) {
    if (excluded[i] < 0 || excluded[i] >= parent->nranks || (i && excluded[i] == excluded[i - 1]))
      return fail(ncclInvalidArgument, "%s: invalid rank %d in excludeRanksList", api, excluded[i]);
    if (excluded[i] == parent->rank)
      return fail(ncclInvalidArgument, "%s: rank %d excludes itself", api, parent->rank);
  }
  bool blocking = parent->blocking;
  if (ncclResult_t e = readConfig(config, parent->blocking, &blocking, api)) return e;
  if (shrinkFlags & NCCL_SHRINK_ABORT) revoke(*parent);
  auto state = std::make_shared<Rank>(parent->device, blocking);
  Arrival a;
  a.state = state;
  a.parent = parent;
  a.rank = parent->rank;
  a.device = parent->device;
  a.parentBusy = !parent->blocking;
  ncclResult_t error = ncclSuccess;
  arriveChild(Kind::Shrink, *parent, std::move(a), excluded, &error, api);
  if (error) return error;
  *newcomm = newHandle(state);
  return afterArrival(state, parent->blocking);
}

// ---- state -------------------------------------------------------------------------------------

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  const char* api = "ncclCommGetAsyncError";
  if (!asyncError) return fail(ncclInvalidArgument, "%s: asyncError is NULL", api);
  std::shared_ptr<Rank> r = lookup(comm);
  if (!r) return fail(ncclInvalidArgument, "%s: invalid communicator", api);
  std::lock_guard<std::mutex> lock(r->mutex);
  if (r->injected != ncclSuccess)
    *asyncError = r->injected;
  else if (!r->ready.load(std::memory_order_acquire) || r->gatheringsPending > 0)
    *asyncError = ncclInProgress;
  else if (r->finalizing && r->opsFinished < r->opsEnqueued)
    *asyncError = ncclInProgress;
  else if (r->pollsInProgress > 0) {
    --r->pollsInProgress;
    *asyncError = ncclInProgress;
  } else {
    *asyncError = ncclSuccess;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  std::shared_ptr<Rank> r = lookup(comm);
  if (!r || !count) return fail(ncclInvalidArgument, "ncclCommCount: invalid argument");
  if (!r->ready.load(std::memory_order_acquire))
    return fail(ncclInvalidArgument,
                "ncclCommCount: the communicator's initialisation is in progress");
  *count = r->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  std::shared_ptr<Rank> r = lookup(comm);
  if (!r || !device) return fail(ncclInvalidArgument, "ncclCommCuDevice: invalid argument");
  *device = r->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  std::shared_ptr<Rank> r = lookup(comm);
  if (!r || !rank) return fail(ncclInvalidArgument, "ncclCommUserRank: invalid argument");
  if (!r->ready.load(std::memory_order_acquire))
    return fail(ncclInvalidArgument,
                "ncclCommUserRank: the communicator's initialisation is in progress");
  *rank = r->rank;
  return ncclSuccess;
}

// ---- the end of a communicator -----------------------------------------------------------------

// Waits (blocking) or reports progress (non-blocking) until this rank's ops of the communicator
// ran.
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  const char* api = "ncclCommFinalize";
  std::shared_ptr<Rank> r = lookup(comm);
  if (!r) return fail(ncclInvalidArgument, "%s: invalid communicator", api);
  if (!r->ready.load(std::memory_order_acquire))
    return fail(ncclInvalidArgument, "%s: the communicator's initialisation is in progress", api);
  if (r->revoked.load())
    return fail(ncclInvalidUsage, "%s: the communicator was revoked (ncclCommRevoke)", api);
  std::unique_lock<std::mutex> lock(r->mutex);
  if (r->finalizing)
    return fail(ncclInvalidUsage, "%s: the communicator is already finalized", api);
  r->finalizing = true;
  if (!r->blocking) return ncclInProgress;
  r->idle.wait(lock, [&] { return r->opsFinished == r->opsEnqueued; });
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  std::shared_ptr<Rank> r = takeHandle(comm);
  if (!r) return fail(ncclInvalidArgument, "ncclCommDestroy: invalid communicator");
  if (!r->ready.load(std::memory_order_acquire)) leaveInit(r.get());
  departed(*r);
  return awaitGraphs(*r, "ncclCommDestroy");
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  std::shared_ptr<Rank> r = takeHandle(comm);
  if (!r) return fail(ncclInvalidArgument, "ncclCommAbort: invalid communicator");
  revoke(*r);
  if (!r->ready.load(std::memory_order_acquire)) leaveInit(r.get());
  departed(*r);
  return awaitGraphs(*r, "ncclCommAbort");
}

// Ends this rank's ops of the communicator at once (quiescent at once: a non-blocking communicator
// reports ncclInProgress on one poll); the communicator stays for split, shrink and destroy.
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  const char* api = "ncclCommRevoke";
  std::shared_ptr<Rank> r = lookup(comm);
  if (!r) return fail(ncclInvalidArgument, "%s: invalid communicator", api);
  if (revokeFlags != NCCL_REVOKE_DEFAULT)
    return fail(ncclInvalidArgument, "%s: revokeFlags must be NCCL_REVOKE_DEFAULT", api);
  revoke(*r);
  if (r->blocking) return ncclSuccess;
  std::lock_guard<std::mutex> lock(r->mutex);
  r->pollsInProgress = 1;
  return ncclInProgress;
}

// ---- test hooks --------------------------------------------------------------------------------

__attribute__((visibility("default"))) int batonFakeNcclInjectAsyncError(ncclComm_t comm,
                                                                         int ncclResult) {
  if (ncclResult < 0 || ncclResult >= ncclNumResults) return -1;
  std::vector<std::shared_ptr<Rank>> targets;
  if (comm) {
    if (std::shared_ptr<Rank> r = lookup(comm)) targets.push_back(std::move(r));
  } else {  // null: every live communicator (a test that cannot see the library's handles)
    Handles& h = handles();
    std::lock_guard<std::mutex> lock(h.mutex);
    for (auto& [handle, state] : h.live) targets.push_back(state);
  }
  if (targets.empty()) return -1;
  for (const std::shared_ptr<Rank>& r : targets) {
    std::lock_guard<std::mutex> lock(r->mutex);
    r->injected = static_cast<ncclResult_t>(ncclResult);
  }
  return 0;
}

__attribute__((visibility("default"))) void batonFakeNcclStats(BatonFakeNcclStats* out) {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  out->communicatorsLive = get(gNccl.communicatorsLive);
  out->collectivesExecuted = get(gNccl.collectivesExecuted);
  out->p2pExecuted = get(gNccl.p2pExecuted);
  out->opsAborted = get(gNccl.opsAborted);
  out->opsLive = get(gNccl.opsLive);
  out->persistentLive = get(gNccl.persistentLive);
}

}  // extern "C"
