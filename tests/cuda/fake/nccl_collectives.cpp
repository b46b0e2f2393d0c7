// The fake NCCL's collectives, sends and receives, and groups (fake_cuda.hpp, "NCCL").
//
// A call (outside a group) becomes one Task: one op on its stream (fake_cuda::enqueue) that, when
// the stream reaches it, posts its contributions to the clique under the clique's mutex, then
// waits (on the clique's condition variable) for what it needs from the other ranks:
//   - collective k of a rank (its per-communicator sequence number) meets collective k of every
//     other rank in a Round; the last to post computes every rank's output (nccl_reduce.cpp) into
//     the outputs the ranks posted, and marks the round done;
//   - send k from rank a to rank b (per ordered pair) posts a copy of its data as a Message;
//     receive k of b from a waits for it, copies it out and marks it consumed; the send's op
//     returns once its message was consumed.
// Inputs are copied when posted, so in-place calls work. At the outermost ncclGroupEnd the calls
// collected become one Task per (communicator, stream): everything posted first, then each
// collective and receive waited for in call order, then the sends — no deadlock within a group.
// Revoke (and abort, NCCL_SHRINK_ABORT) sets the rank's flag under the clique's mutex and wakes
// the clique: a waiting op withdraws its outputs (nothing is written to them afterwards) and
// returns; a later op of that rank returns at once.
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include "fake_cuda.hpp"

namespace fake_cuda::nccl {

// The calls; the first six in the order of Collective.
enum class Call { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll, Send, Recv };

struct Item {
  Call call;
  const void* send;
  void* recv;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;  // Broadcast, Reduce: the root; Send, Recv: the peer
  uint64_t seq = 0;
  bool finished = false;
};

struct Round {
  Item shape{};  // the first rank's call, to which the others' must match
  std::vector<std::vector<unsigned char>> inputs;
  std::vector<void*> outputs;
  int arrived = 0, left = 0;
  bool done = false, mismatch = false;
};

struct Message {
  std::vector<unsigned char> data;
  bool consumed = false, senderLeft = false;
};

std::atomic<uint64_t> gCliqueIds{0};

struct Clique {
  explicit Clique(int n) : nranks(n), id(gCliqueIds.fetch_add(1) + 1) {}
  const int nranks;
  const uint64_t id;  // names split and shrink rendezvous (nccl.cpp)
  std::mutex mutex;
  std::condition_variable cv;  // a round done, a message posted or consumed, a rank revoked
  std::map<uint64_t, Round> rounds;
  std::map<std::tuple<int, int, uint64_t>, Message> messages;  // (sender, receiver, sequence)
  // BATON_FAKE_NCCL_CONNECT_IN_CALL=1 (connectInCall): the ranks whose first blocking call came,
  // and how many ranks were destroyed or aborted (a waiting first call then fails, as NCCL's
  // connection set-up does when a peer's process is gone).
  std::vector<bool> connected = std::vector<bool>(static_cast<size_t>(nranks), false);
  int gone = 0;
};

std::shared_ptr<Clique> makeClique(int nranks) { return std::make_shared<Clique>(nranks); }
uint64_t cliqueId(const Clique& clique) { return clique.id; }

void departed(Rank& r) {
  if (!r.ready.load(std::memory_order_acquire) || !r.clique) return;
  Clique& c = *r.clique;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    ++c.gone;
  }
  c.cv.notify_all();
}

void revoke(Rank& r) {
  if (!r.ready.load(std::memory_order_acquire)) {  // no ops yet
    r.revoked.store(true);
    return;
  }
  Clique& c = *r.clique;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    r.revoked.store(true);
  }
  c.cv.notify_all();
}

namespace {

struct Task {
  std::shared_ptr<Rank> rank;
  Stream* stream = nullptr;
  std::vector<Item> items;
  bool aborted = false;  // revoked before it posted
  bool ended = false;    // revoked while it waited (and withdrawn then)
};

bool isCollective(Call c) { return c != Call::Send && c != Call::Recv; }
bool isReduction(Call c) {
  return c == Call::AllReduce || c == Call::Reduce || c == Call::ReduceScatter;
}
bool isRooted(Call c) { return c == Call::Broadcast || c == Call::Reduce; }

size_t inputBytes(const Item& it, int rank, int n) {
  const size_t bytes = it.count * elementSize(it.type);
  switch (it.call) {
    case Call::Broadcast: return rank == it.root ? bytes : 0;
    case Call::ReduceScatter:
    case Call::AlltoAll: return bytes * static_cast<size_t>(n);
    case Call::Recv: return 0;
    default: return bytes;
  }
}

void* outputOf(const Item& it, int rank) {
  if (it.call == Call::Reduce && rank != it.root) return nullptr;
  return it.count ? it.recv : nullptr;
}

bool sameShape(const Item& a, const Item& b) {
  return a.call == b.call && a.type == b.type && a.count == b.count &&
         (!isReduction(a.call) || a.op == b.op) && (!isRooted(a.call) || a.root == b.root);
}

const char* callName(Call c) {
  static const char* const names[] = {"ncclAllReduce", "ncclBroadcast",     "ncclReduce",
                                      "ncclAllGather", "ncclReduceScatter", "ncclAlltoAll",
                                      "ncclSend",      "ncclRecv"};
  return names[static_cast<int>(c)];
}

// The last rank to post computes everyone's output. Called with the clique's mutex held.
void completeRound(Round& rd, uint64_t seq) {
  if (rd.mismatch) {
    std::fprintf(stderr,
                 "fake NCCL: collective %llu of a communicator differs between ranks (call, type, "
                 "count, op or root): no output written\n",
                 static_cast<unsigned long long>(seq));
  } else {
    const Item& s = rd.shape;
    compute(static_cast<Collective>(s.call), s.type, s.op, s.count, s.root, rd.inputs, rd.outputs);
  }
  rd.done = true;
}

void leaveRound(Clique& c, uint64_t seq, Round& rd) {
  if (++rd.left == c.nranks) c.rounds.erase(seq);
}

void post(Task& t) {
  Rank& r = *t.rank;
  Clique& c = *r.clique;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (r.revoked.load()) {
      t.aborted = true;
      return;
    }
    for (Item& it : t.items) {
      if (it.call == Call::Recv) continue;
      const auto* src = static_cast<const unsigned char*>(it.send);
      const size_t bytes = inputBytes(it, r.rank, c.nranks);
      if (it.call == Call::Send) {
        c.messages[{r.rank, it.root, it.seq}].data.assign(src, src + bytes);
        wake = true;
        continue;
      }
      Round& rd = c.rounds[it.seq];
      if (rd.inputs.empty()) {
        rd.shape = it;
        rd.inputs.resize(static_cast<size_t>(c.nranks));
        rd.outputs.assign(static_cast<size_t>(c.nranks), nullptr);
      } else if (!sameShape(rd.shape, it)) {
        rd.mismatch = true;
      }
      rd.inputs[static_cast<size_t>(r.rank)].assign(src, src + bytes);
      rd.outputs[static_cast<size_t>(r.rank)] = outputOf(it, r.rank);
      if (++rd.arrived == c.nranks) {
        completeRound(rd, it.seq);
        wake = true;
      }
    }
  }
  if (wake) c.cv.notify_all();
}

// After a revoke: the unfinished items leave their rounds (their outputs withdrawn) and messages.
void withdraw(Task& t, Clique& c, int rank) {
  for (Item& it : t.items) {
    if (it.finished || it.call == Call::Recv) continue;
    if (it.call == Call::Send) {
      auto m = c.messages.find({rank, it.root, it.seq});
      if (m == c.messages.end()) continue;
      if (m->second.consumed)
        c.messages.erase(m);
      else
        m->second.senderLeft = true;  // still there for its receiver
      continue;
    }
    Round& rd = c.rounds.at(it.seq);
    if (!rd.done) rd.outputs[static_cast<size_t>(rank)] = nullptr;
    leaveRound(c, it.seq, rd);
  }
}

// The collectives and receives, in call order.
void awaitIncoming(Task& t) {
  if (t.aborted || t.ended) return;
  Rank& r = *t.rank;
  Clique& c = *r.clique;
  auto revoked = [&] { return r.revoked.load(); };
  std::unique_lock<std::mutex> lock(c.mutex);
  for (Item& it : t.items) {
    if (it.call == Call::Send) continue;
    if (it.call == Call::Recv) {
      const auto key = std::make_tuple(it.root, r.rank, it.seq);
      c.cv.wait(lock, [&] { return c.messages.count(key) || revoked(); });
      auto m = c.messages.find(key);
      if (m == c.messages.end()) {
        t.ended = true;
        withdraw(t, c, r.rank);
        return;
      }
      const size_t want = it.count * elementSize(it.type), got = m->second.data.size();
      if (got != want)
        std::fprintf(stderr,
                     "fake NCCL: ncclRecv of %zu bytes from rank %d matched a send of %zu\n", want,
                     it.root, got);
      if (it.recv && std::min(want, got))
        std::memcpy(it.recv, m->second.data.data(), std::min(want, got));
      m->second.consumed = true;
      if (m->second.senderLeft) c.messages.erase(m);
      it.finished = true;
      gNccl.p2pExecuted.fetch_add(1, std::memory_order_relaxed);
      c.cv.notify_all();
      continue;
    }
    Round& rd = c.rounds.at(it.seq);
    c.cv.wait(lock, [&] { return rd.done || revoked(); });
    if (!rd.done) {
      t.ended = true;
      withdraw(t, c, r.rank);
      return;
    }
    it.finished = true;
    leaveRound(c, it.seq, rd);
    gNccl.collectivesExecuted.fetch_add(1, std::memory_order_relaxed);
  }
}

// Then the sends: until their receivers took them.
void awaitSends(Task& t) {
  if (t.aborted || t.ended) return;
  Rank& r = *t.rank;
  Clique& c = *r.clique;
  std::unique_lock<std::mutex> lock(c.mutex);
  for (Item& it : t.items) {
    if (it.call != Call::Send) continue;
    const auto key = std::make_tuple(r.rank, it.root, it.seq);
    c.cv.wait(lock, [&] { return c.messages.at(key).consumed || r.revoked.load(); });
    auto m = c.messages.find(key);
    if (!m->second.consumed) {
      t.ended = true;
      withdraw(t, c, r.rank);
      return;
    }
    c.messages.erase(m);
    it.finished = true;
    gNccl.p2pExecuted.fetch_add(1, std::memory_order_relaxed);
  }
}

void finish(Task& t) {
  if (t.aborted || t.ended) gNccl.opsAborted.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(t.rank->mutex);
    ++t.rank->opsFinished;
  }
  t.rank->idle.notify_all();
  gNccl.opsLive.fetch_sub(1, std::memory_order_relaxed);
}

// Gives the tasks' calls their sequence numbers (per communicator, per peer) and counts the ops.
void number(const std::vector<std::shared_ptr<Task>>& tasks) {
  for (const auto& t : tasks) {
    Rank& r = *t->rank;
    std::lock_guard<std::mutex> lock(r.mutex);
    for (Item& it : t->items) {
      const auto peer = static_cast<size_t>(it.root);
      if (it.call == Call::Send)
        it.seq = r.sends[peer]++;
      else if (it.call == Call::Recv)
        it.seq = r.recvs[peer]++;
      else
        it.seq = r.collectives++;
    }
    ++r.opsEnqueued;
    gNccl.opsLive.fetch_add(1, std::memory_order_relaxed);
  }
}

// A captured task's hold on its rank (N10; NCCL: a graph's persistent plan): one per capture,
// shared by every copy of the captured op (the graph's, its executable graphs', each launch's).
struct PersistentRef {
  explicit PersistentRef(std::shared_ptr<Rank> r) : rank(std::move(r)) {
    std::lock_guard<std::mutex> lock(rank->mutex);
    ++rank->persistentRefs;
    gNccl.persistentLive.fetch_add(1, std::memory_order_relaxed);
  }
  ~PersistentRef() {
    {
      std::lock_guard<std::mutex> lock(rank->mutex);
      --rank->persistentRefs;
    }
    gNccl.persistentLive.fetch_sub(1, std::memory_order_relaxed);
    rank->idle.notify_all();
  }
  std::shared_ptr<Rank> rank;
};

// Runs a captured task once (a launch of a graph that holds it): a copy of its calls, numbered
// now, through every phase.
void replay(const Task& captured) {
  auto t = std::make_shared<Task>();
  t->rank = captured.rank;
  t->stream = captured.stream;
  t->items = captured.items;
  number({t});
  post(*t);
  awaitIncoming(*t);
  awaitSends(*t);
  finish(*t);
}

// Numbers the tasks' calls, then enqueues one op per task. A task on a capturing stream becomes
// a node of the capture instead (N10), numbered at each launch.
void launch(const std::vector<std::shared_ptr<Task>>& tasks) {
  std::vector<std::shared_ptr<Task>> now;
  for (const auto& t : tasks) {
    if (!fake_cuda::capturing(*t->stream)) {
      now.push_back(t);
      continue;
    }
    auto ref = std::make_shared<PersistentRef>(t->rank);
    fake_cuda::enqueue(*t->stream, [t, ref] { replay(*t); });
  }
  number(now);
  if (fake_cuda::config().async) {
    for (const auto& t : now)
      fake_cuda::enqueue(*t->stream, [t] {
        post(*t);
        awaitIncoming(*t);
        awaitSends(*t);
        finish(*t);
      });
    return;
  }
  // Sync mode runs each op inside enqueue, so one task's op would wait for a peer's not run yet:
  // the group's tasks go through each phase together here (the work before them on every stream
  // has run already), and their ops only finish them.
  for (const auto& t : now) post(*t);
  for (const auto& t : now) awaitIncoming(*t);
  for (const auto& t : now) awaitSends(*t);
  for (const auto& t : now) fake_cuda::enqueue(*t->stream, [t] { finish(*t); });
}

// ---- groups
// --------------------------------------------------------------------------------------

struct Pending {
  std::shared_ptr<Rank> rank;
  Stream* stream;
  Item item;
};
struct GroupState {
  std::vector<Pending> calls;
  std::vector<std::shared_ptr<Rank>> blockingInits;
  bool nonBlocking = false;  // a non-blocking creation call inside
  ncclResult_t error = ncclSuccess;
};
thread_local int tGroupDepth FAKE_CUDA_TLS = 0;
thread_local GroupState* tGroup FAKE_CUDA_TLS = nullptr;

// A null stream is the default stream of the communicator's device, whatever is current here.
Stream* streamFor(const Rank& r, cudaStream_t stream) {
  CUcontext saved = fake_cuda::tCurrent;
  fake_cuda::tCurrent = reinterpret_cast<CUcontext>(&fake_cuda::gContexts[r.device]);
  Stream* s = fake_cuda::resolve(reinterpret_cast<CUstream>(stream));
  fake_cuda::tCurrent = saved;
  return s;
}

// The float8 types, and what NCCL refuses of them (N11).
bool isFloat8(ncclDataType_t t) { return t == ncclFloat8e4m3 || t == ncclFloat8e5m2; }
ncclResult_t refuseUnsupported(const Rank& r, const Item& it, const char* api) {
  if (!isFloat8(it.type) || it.count == 0) return ncclSuccess;  // NCCL drops empty collectives
  if (version() < 22400)
    return fail(ncclInvalidArgument, "%s: invalid type %d (this NCCL has no float8 types)", api,
                static_cast<int>(it.type));
  if (!isReduction(it.call)) return ncclSuccess;
  if (r.minComputeCapability < 90)
    return fail(ncclInvalidArgument,
                "%s: FP8 reduction support begins with sm90 capable devices (the group's lowest: "
                "%d.%d)",
                api, r.minComputeCapability / 10, r.minComputeCapability % 10);
  if (it.op == ncclAvg && r.nranks == 1)
    return fail(ncclInvalidArgument,
                "%s: ncclAvg of type %d with one rank: no one-rank kernel for the type", api,
                static_cast<int>(it.type));
  return ncclSuccess;
}

ncclResult_t checkArguments(const Rank& r, const Item& it, const char* api) {
  if (elementSize(it.type) == 0)
    return fail(ncclInvalidArgument, "%s: invalid type %d", api, static_cast<int>(it.type));
  if (isReduction(it.call) && (it.op < 0 || it.op >= ncclNumOps))
    return fail(ncclInvalidArgument, "%s: invalid reduction operation %d", api,
                static_cast<int>(it.op));
  if ((isRooted(it.call) || !isCollective(it.call)) && (it.root < 0 || it.root >= r.nranks))
    return fail(ncclInvalidArgument, "%s: invalid %s %d (nranks %d)", api,
                isRooted(it.call) ? "root" : "peer", it.root, r.nranks);
  if (it.count > 0) {
    const bool needSend =
        it.call != Call::Recv && !(it.call == Call::Broadcast && r.rank != it.root);
    const bool needRecv = it.call != Call::Send && !(it.call == Call::Reduce && r.rank != it.root);
    if (needSend && !it.send) return fail(ncclInvalidArgument, "%s: sendbuff is NULL", api);
    if (needRecv && !it.recv) return fail(ncclInvalidArgument, "%s: recvbuff is NULL", api);
  }
  return refuseUnsupported(r, it, api);
}

ncclResult_t check(ncclComm_t comm, cudaStream_t stream, const Item& it, std::shared_ptr<Rank>* out,
                   Stream** s) {
  const char* api = callName(it.call);
  std::shared_ptr<Rank> r = lookup(comm);
  if (!r) return fail(ncclInvalidArgument, "%s: invalid communicator", api);
  if (ncclResult_t e = ensureUsable(*r, api)) return e;
  if (ncclResult_t e = checkArguments(*r, it, api)) {
    // NCCL's ncclEnqueueCheck: a non-blocking communicator keeps the error (N11).
    if (!r->blocking) {
      std::lock_guard<std::mutex> lock(r->mutex);
      if (r->injected == ncclSuccess) r->injected = e;
    }
    return e;
  }
  *s = streamFor(*r, stream);
  *out = std::move(r);
  return ncclSuccess;
}

// BATON_FAKE_NCCL_CONNECT_IN_CALL=1: a blocking communicator's first collective call waits in the
// library (ncclGroupEnd, or the call outside a group) until every rank of the communicator made
// its first call, as NCCL sets up its connections at the first collectives; a revoke or abort of
// the rank ends the wait (ncclInternalError), so does a peer destroyed or aborted meanwhile
// (ncclRemoteError). Off by default: a test that calls ranks one by one from one thread, outside
// a group, would wait for ever (as with NCCL).
bool connectInCallEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("BATON_FAKE_NCCL_CONNECT_IN_CALL");
    return v && std::string(v) == "1";
  }();
  return on;
}
ncclResult_t connectInCall(const std::vector<std::shared_ptr<Rank>>& ranks) {
  if (!connectInCallEnabled()) return ncclSuccess;
  std::vector<Rank*> waiting;
  for (const auto& r : ranks) {
    if (!r->blocking || !r->clique) continue;
    Clique& c = *r->clique;
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.connected[static_cast<size_t>(r->rank)]) {
      bool all = true;
      for (bool b : c.connected) all = all && b;
      if (all) continue;
    }
    c.connected[static_cast<size_t>(r->rank)] = true;
    waiting.push_back(r.get());
  }
  for (Rank* r : waiting) r->clique->cv.notify_all();
  for (Rank* r : waiting) {
    Clique& c = *r->clique;
    std::unique_lock<std::mutex> lock(c.mutex);
    c.cv.wait(lock, [&] {
      bool all = true;
      for (bool b : c.connected) all = all && b;
      return all || r->revoked.load() || c.gone > 0;
    });
    bool all = true;
    for (bool b : c.connected) all = all && b;
    if (all) continue;
    if (r->revoked.load())
      return fail(ncclInternalError, "connection set-up ended: the communicator was revoked");
    return fail(ncclRemoteError, "connection set-up failed: a peer's communicator is gone");
  }
  return ncclSuccess;
}

ncclResult_t submit(ncclComm_t comm, cudaStream_t stream, Item it) {
  std::shared_ptr<Rank> r;
  Stream* s = nullptr;
  if (ncclResult_t e = check(comm, stream, it, &r, &s)) {
    if (tGroupDepth > 0 && tGroup->error == ncclSuccess) tGroup->error = e;
    return e;
  }
  if (tGroupDepth > 0) {
    tGroup->calls.push_back({std::move(r), s, it});
    return ncclSuccess;
  }
  if (ncclResult_t e = connectInCall({r})) return e;
  auto t = std::make_shared<Task>();
  t->rank = r;
  t->stream = s;
  t->items.push_back(it);
  launch({t});
  if (r->blocking) return ncclSuccess;
  std::lock_guard<std::mutex> lock(r->mutex);
  r->pollsInProgress = 1;
  return ncclInProgress;
}

}  // namespace

bool inGroup() { return tGroupDepth > 0; }

void deferToGroup(const std::shared_ptr<Rank>& state, bool callBlocks) {
  if (callBlocks)
    tGroup->blockingInits.push_back(state);
  else
    tGroup->nonBlocking = true;
}

}  // namespace fake_cuda::nccl

using namespace fake_cuda::nccl;

extern "C" {

ncclResult_t ncclGroupStart() {
  if (tGroupDepth++ == 0) tGroup = new GroupState();
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (tGroupDepth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart before it");
  if (--tGroupDepth > 0) return ncclSuccess;
  std::unique_ptr<GroupState> g(tGroup);
  tGroup = nullptr;
  if (g->error != ncclSuccess) return g->error;  // nothing of the group runs
  std::vector<std::shared_ptr<Task>> tasks;
  for (Pending& p : g->calls) {
    auto t = std::find_if(tasks.begin(), tasks.end(), [&](const std::shared_ptr<Task>& x) {
      return x->rank == p.rank && x->stream == p.stream;
    });
    if (t == tasks.end()) {
      tasks.push_back(std::make_shared<Task>());
      tasks.back()->rank = p.rank;
      tasks.back()->stream = p.stream;
      t = tasks.end() - 1;
    }
    (*t)->items.push_back(p.item);
  }
  {
    std::vector<std::shared_ptr<Rank>> ranks;
    for (const auto& t : tasks) ranks.push_back(t->rank);
    if (ncclResult_t e = connectInCall(ranks)) return e;
  }
  launch(tasks);
  bool inProgress = g->nonBlocking;
  for (const auto& t : tasks) {
    if (t->rank->blocking) continue;
    std::lock_guard<std::mutex> lock(t->rank->mutex);
    t->rank->pollsInProgress = 1;
    inProgress = true;
  }
  if (!g->blockingInits.empty()) waitReady(g->blockingInits);
  return inProgress ? ncclInProgress : ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return submit(comm, stream, {Call::AllReduce, sendbuff, recvbuff, count, datatype, op, 0});
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return submit(comm, stream,
                {Call::Broadcast, sendbuff, recvbuff, count, datatype, ncclSum, root});
}

// The in-place broadcast of old (still in nccl.h).
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Call::Reduce, sendbuff, recvbuff, count, datatype, op, root});
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream,
                {Call::AllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0});
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return submit(comm, stream,
                {Call::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0});
}

ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Call::AlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0});
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Call::Send, sendbuff, nullptr, count, datatype, ncclSum, peer});
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, stream, {Call::Recv, nullptr, recvbuff, count, datatype, ncclSum, peer});
}

}  // extern "C"
