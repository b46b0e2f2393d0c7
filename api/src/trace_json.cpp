// The timeline trace's JSON writer: turns a session's records (trace_records.hpp) into the Chrome
// trace-event file that trace.hpp describes — the submissions' slices on their queues' tracks,
// the host threads' slices, and the flows from each signal to the waits it released.
//
// Runs on the thread that writes the file, under the session's lock, on a copy of the records;
// it costs nothing while the traced program runs.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "baton/fwd.hpp"
#include "baton/result.hpp"
#include "trace.hpp"
#include "trace_records.hpp"

namespace baton::core::trace {
namespace {

struct Op {
  uint64_t semaphore;
  uint64_t value;
};

// What the records say about one submission.
struct Sub {
  uint64_t id = 0;
  uint32_t track = 0;
  uint64_t submitted = 0, submitEnd = 0, released = 0, issued = 0, completed = 0, failedAt = 0;
  std::vector<Op> waits, signals, left;  // left: the waits left in it at release (met GPU-side)
  bool isReleased = false, isFailed = false;
  std::string error;
  std::vector<std::pair<std::string, uint64_t>> collectives;  // what, bytes
  // Derived: the slices on its queue's tracks.
  bool hasExec = false, hasHeld = false;
  uint64_t execBegin = 0, execEnd = 0, heldBegin = 0, heldEnd = 0;
  const char* status = "ok";
};

struct QueueInfo {
  std::string label;
  BackendKind backend = BackendKind::Host;
  std::vector<Sub*> subs;
  bool anyHeld = false;
};

// A host signal, or a value that came from outside baton (external: a Vulkan timeline's value
// forwarded by the interop bridge, or a signal submitted before the session began).
struct HostSignal {
  uint32_t tid;
  uint64_t begin, end;
  Op op;
  bool external = false;
};

struct HostWait {
  uint32_t tid;
  uint64_t begin, end;
  WaitMode mode;
  std::vector<Op> entries;
};

struct Value {
  uint64_t value, ts;
  uint32_t tid = 0;  // the thread that recorded it
};

// A signal that released a wait: a submission's (id) or a host signal (index into hostSignals).
struct Source {
  bool host;
  uint64_t index;
  uint64_t ts;
};

struct Event {
  char ph;
  std::string name, cat;
  uint64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  std::string args;   // a JSON object, or empty
  std::string extra;  // more fields, each starting with a comma
};

// ---- JSON text ------------------------------------------------------------------------------

// Appends `s` as a JSON string; bytes that are not valid UTF-8 become U+FFFD.
void appendString(std::string& out, const std::string& s) {
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    if (len == 3 && c > 0xef) len = 0;
    bool valid = len != 0 && i + len <= n;
    for (size_t k = 1; valid && k < len; ++k) valid = (p[i + k] & 0xc0) == 0x80;
    // Overlong forms and surrogates.
    if (valid && len == 3 && ((c == 0xe0 && p[i + 1] < 0xa0) || (c == 0xed && p[i + 1] >= 0xa0)))
      valid = false;
    if (valid && len == 4 && ((c == 0xf0 && p[i + 1] < 0x90) || (c == 0xf4 && p[i + 1] >= 0x90)))
      valid = false;
    if (valid) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
}

std::string quoted(const std::string& s) {
  std::string out;
  appendString(out, s);
  return out;
}

class Json {
 public:
  explicit Json(uint64_t t0) : t0_(t0) {}

  // ns since the session began, as µs with three decimals.
  std::string micros(uint64_t ts) const { return duration(ts > t0_ ? ts - t0_ : 0); }
  static std::string duration(uint64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
    return buf;
  }

 private:
  uint64_t t0_;
};

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// ---- the writer -----------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(const Snapshot& snap) : snap_(snap), json_(snap.t0) {
    queuesPid_ = snap.pid + 1000000;  // a pseudo process for the queue tracks
  }

  std::string run() {
    // Names first: the slices' names and arguments use them.
    for (const ThreadRecords& t : snap_.threads)
      for (const Record& r : t.records) {
        if (r.kind == RecordKind::SemaphoreName) names_[r.a] = text(t, r);
        if (r.kind == RecordKind::QueueName) {
          QueueInfo& q = queues_[static_cast<uint32_t>(r.a)];
          q.label = text(t, r);
          q.backend = static_cast<BackendKind>(r.b);
        }
      }
    for (const ThreadRecords& t : snap_.threads) parseThread(t);
    for (auto& [sem, list] : reaches_)
      std::sort(list.begin(), list.end(), [](const Value& a, const Value& b) {
        return a.value != b.value ? a.value < b.value : a.ts < b.ts;
      });
    for (auto& [id, sub] : subs_) {
      if (!sub.track) continue;  // submitted before the session: only its later records
      for (const Op& s : sub.signals)
        sources_[{s.semaphore, s.value}].push_back(Source{false, id, sub.submitted});
      queues_[sub.track].subs.push_back(&sub);
    }
    for (size_t i = 0; i < hostSignals_.size(); ++i) {
      const HostSignal& h = hostSignals_[i];
      sources_[{h.op.semaphore, h.op.value}].push_back(Source{true, i, h.begin});
    }
    // Values nobody traced signalling arrived from outside: a short "signal" slice where they
    // were reached, for their arrows to start from.
    for (const auto& [sem, list] : reaches_)
      for (const Value& v : list) {
        if (sources_.count({sem, v.value})) continue;
        HostSignal h{v.tid, v.ts, v.ts + 2, Op{sem, v.value}, true};
        Event& e =
            add('X', "signal " + opText(h.op) + " = " + std::to_string(v.value) + " (external)",
                "signal", h.begin, snap_.pid, h.tid);
        e.dur = h.end - h.begin;
        e.args = opJson(h.op);
        e.args.back() = ',';
        e.args += "\"external\":true}";
        sources_[{sem, v.value}].push_back(Source{true, hostSignals_.size(), h.begin});
        hostSignals_.push_back(h);
      }
    for (auto& [track, q] : queues_) layOut(q);
    for (auto& [track, q] : queues_) emitQueue(track, q);
    for (auto& [id, sub] : subs_)
      if (sub.track) flowsInto(sub);
    for (const HostWait& w : hostWaits_) flowsInto(w);
    return serialize();
  }

 private:
  // The string of record `r` of thread `t` (c), or "".
  static const std::string& text(const ThreadRecords& t, const Record& r) {
    static const std::string none;
    return r.c < t.strings.size() ? t.strings[r.c] : none;
  }

  std::string semaphoreName(uint64_t key) const {
    auto it = names_.find(key);
    return it != names_.end() ? it->second : std::string();
  }
  // {"semaphore": "0x..", "name": "..", "value": N}
  std::string opJson(const Op& op) const {
    return "{\"semaphore\":\"" + hex(op.semaphore) +
           "\",\"name\":" + quoted(semaphoreName(op.semaphore)) +
           ",\"value\":" + std::to_string(op.value) + "}";
  }
  std::string opsJson(const std::vector<Op>& ops) const {
    std::string s = "[";
    for (size_t i = 0; i < ops.size(); ++i) s += (i ? "," : "") + opJson(ops[i]);
    return s + "]";
  }
  std::string opText(const Op& op) const {
    std::string name = semaphoreName(op.semaphore);
    return "'" + (name.empty() ? hex(op.semaphore) : name) + "'";
  }

  void touch(uint64_t ts) { end_ = std::max(end_, ts); }

  Event& add(char ph, std::string name, std::string cat, uint64_t ts, uint32_t pid, uint32_t tid) {
    events_.push_back(Event{ph, std::move(name), std::move(cat), ts, 0, pid, tid, {}, {}});
    return events_.back();
  }

  // Reads `count` operands after record i.
  static std::vector<Op> operands(const ThreadRecords& t, size_t& i, uint64_t count) {
    std::vector<Op> ops;
    for (uint64_t k = 0; k < count && i + 1 < t.records.size(); ++k) {
      const Record& r = t.records[i + 1];
      if (r.kind != RecordKind::Operand) break;
      ops.push_back(Op{r.a, r.b});
      ++i;
    }
    return ops;
  }

  void parseThread(const ThreadRecords& t) {
    const uint32_t pid = snap_.pid, tid = t.tid;
    threads_.push_back(&t);
    dropped_ += t.dropped;
    std::vector<uint64_t> submitStack;  // ids of this thread's submit calls in progress
    std::vector<size_t> open;           // B events without their E
    std::vector<size_t> openWaits;      // hostWaits_ indices of open "wait" slices
    std::unordered_map<uint64_t, uint64_t> issueBegins;  // id -> ts
    uint64_t last = 0;
    for (size_t i = 0; i < t.records.size(); ++i) {
      const Record& r = t.records[i];
      last = std::max(last, r.ts);
      touch(r.ts);
      switch (r.kind) {
        case RecordKind::Submitted: {
          Sub& s = subs_[r.a];
          s.id = r.a;
          s.track = static_cast<uint32_t>(r.b);
          s.submitted = r.ts;
          s.waits = operands(t, i, r.small);
          s.signals = operands(t, i, r.c);
          submitStack.push_back(r.a);
          break;
        }
        case RecordKind::Operand: break;  // read with its record
        case RecordKind::SubmitEnd: {
          std::vector<uint64_t> ids;
          for (uint64_t k = 0; k < r.b && !submitStack.empty(); ++k) {
            ids.push_back(submitStack.back());
            submitStack.pop_back();
          }
          std::reverse(ids.begin(), ids.end());
          if (ids.empty()) break;
          uint64_t begin = r.ts;
          std::string list;
          uint32_t track = 0;
          for (uint64_t id : ids) {
            Sub& s = subs_[id];
            s.submitEnd = r.ts;
            begin = std::min(begin, s.submitted);
            track = s.track;
            list += (list.empty() ? "" : ",") + std::to_string(id);
          }
          std::string name = "submit #" + std::to_string(ids.front());
          if (ids.size() > 1) name += "..#" + std::to_string(ids.back());
          Event& e = add('X', name, "submit", begin, pid, tid);
          e.dur = r.ts - begin;
          e.args = "{\"submissions\":[" + list + "],\"queue_track\":" + std::to_string(track) + "}";
          break;
        }
        case RecordKind::Released: {
          Sub& s = subs_[r.a];
          s.isReleased = true;
          s.released = r.ts;
          s.left = operands(t, i, r.small);
          break;
        }
        case RecordKind::IssueBegin: issueBegins[r.a] = r.ts; break;
        case RecordKind::Issued: {
          Sub& s = subs_[r.a];
          s.issued = r.ts;
          auto it = issueBegins.find(r.a);
          if (it != issueBegins.end()) {
            Event& e = add('X', "issue #" + std::to_string(r.a), "issue", it->second, pid, tid);
            e.dur = r.ts - it->second;
            e.args = "{\"submission\":" + std::to_string(r.a) + "}";
            issueBegins.erase(it);
          }
          break;
        }
        case RecordKind::Completed: {
          Sub& s = subs_[r.a];
          if (!s.completed) s.completed = r.ts;
          break;
        }
        case RecordKind::Failed: {
          Sub& s = subs_[r.a];
          if (!s.isFailed) {
            s.isFailed = true;
            s.failedAt = r.ts;
            s.error = text(t, r);
          }
          break;
        }
        case RecordKind::CallBegin: {
          const uint32_t kind = r.small;
          Event& e = add('B',
                         (kind == kNativeCall    ? "native #"
                          : kind == kLibraryCall ? "library call #"
                                                 : "host call #") +
                             std::to_string(r.a),
                         kind == kNativeCall    ? "native"
                         : kind == kLibraryCall ? "library_call"
                                                : "host_call",
                         r.ts, pid, tid);
          e.args = "{\"submission\":" + std::to_string(r.a) + "}";
          open.push_back(events_.size() - 1);
          break;
        }
        case RecordKind::HostWaitBegin: {
          HostWait w{tid, r.ts, 0, static_cast<WaitMode>(r.small), operands(t, i, r.b)};
          std::string name;
          if (w.entries.size() == 1)
            name = "wait " + opText(w.entries[0]) + " >= " + std::to_string(w.entries[0].value);
          else
            name = std::string(w.mode == WaitMode::Any ? "wait any of " : "wait all of ") +
                   std::to_string(w.entries.size());
          Event& e = add('B', name, "host_wait", r.ts, pid, tid);
          e.args = std::string("{\"mode\":\"") + (w.mode == WaitMode::Any ? "any" : "all") +
                   "\",\"entries\":" + opsJson(w.entries) + "}";
          open.push_back(events_.size() - 1);
          openWaits.push_back(hostWaits_.size());
          hostWaits_.push_back(std::move(w));
          break;
        }
        case RecordKind::WaitIdleBegin: {
          Event& e = add('B', "waitIdle", "host_wait", r.ts, pid, tid);
          e.args = "{\"of\":" + quoted(text(t, r)) + "}";
          open.push_back(events_.size() - 1);
          break;
        }
        case RecordKind::CallEnd:
        case RecordKind::HostWaitEnd:
        case RecordKind::WaitIdleEnd: {
          if (open.empty()) break;  // its begin was before the session or dropped
          const Event& b = events_[open.back()];
          open.pop_back();
          Event& e = add('E', b.name, b.cat, r.ts, pid, tid);
          if (r.kind != RecordKind::CallEnd)
            e.args = std::string("{\"result\":\"") + resultName(static_cast<Result>(r.b)) + "\"}";
          if (r.kind == RecordKind::HostWaitEnd && !openWaits.empty()) {
            hostWaits_[openWaits.back()].end = r.ts;
            openWaits.pop_back();
          }
          break;
        }
        case RecordKind::HostSignal: {
          HostSignal h{tid, r.c, r.ts, Op{r.a, r.b}};
          Event& e = add('X', "signal " + opText(h.op) + " = " + std::to_string(r.b), "signal",
                         h.begin, pid, tid);
          e.dur = h.end - h.begin;
          e.args = opJson(h.op);
          hostSignals_.push_back(h);
          break;
        }
        case RecordKind::Span: {
          static const char* const kNames[] = {"completion: spin on event",
                                               "completion: sleep in driver",
                                               "completion: poll",
                                               "completion: lazy park",
                                               "completion: idle",
                                               "issue: sleep",
                                               "caller: sleep",
                                               "issue: wait for caller",
                                               "completion: poll inbox",
                                               "issue: graph launch",
                                               "build graphs"};
          const char* name = r.small < sizeof kNames / sizeof kNames[0] ? kNames[r.small] : "span";
          Event& e = add('X', r.a ? std::string(name) + " #" + std::to_string(r.a) : name, "thread",
                         r.c, pid, tid);
          e.dur = r.ts - r.c;
          std::string args;
          if (r.a) args = "\"submission\":" + std::to_string(r.a);
          if (r.b)
            args += (args.empty() ? "" : ",") + std::string("\"commands\":") + std::to_string(r.b);
          if (!args.empty()) e.args = "{" + args + "}";
          break;
        }
        case RecordKind::Reached: reaches_[r.a].push_back(Value{r.b, r.ts, tid}); break;
        case RecordKind::Published: publishes_[r.a].push_back(Value{r.b, r.ts}); break;
        case RecordKind::SemaphoreFailed: {
          Event& e =
              add('i', "semaphore " + opText(Op{r.a, 0}) + " failed", "failure", r.ts, pid, tid);
          e.extra = ",\"s\":\"t\"";
          e.args = "{\"semaphore\":\"" + hex(r.a) + "\",\"name\":" + quoted(semaphoreName(r.a)) +
                   ",\"result\":\"" + resultName(static_cast<Result>(r.b)) +
                   "\",\"reason\":" + quoted(text(t, r)) + "}";
          break;
        }
        case RecordKind::DeviceLost: {
          Event& e = add('i', "device lost", "failure", r.ts, pid, tid);
          e.extra = ",\"s\":\"g\"";
          e.args = "{\"reason\":" + quoted(text(t, r)) + "}";
          break;
        }
        case RecordKind::CommunicatorFailed: {
          Event& e = add('i', "communicator failed", "failure", r.ts, pid, tid);
          e.extra = ",\"s\":\"g\"";
          e.args = "{\"reason\":" + quoted(text(t, r)) + "}";
          break;
        }
        case RecordKind::Collective: subs_[r.a].collectives.emplace_back(text(t, r), r.b); break;
        case RecordKind::SemaphoreName:
        case RecordKind::QueueName: break;  // read first (run)
      }
    }
    // Slices still open when the file was written end with the thread's last record.
    while (!open.empty()) {
      const Event& b = events_[open.back()];
      open.pop_back();
      Event& e = add('E', b.name, b.cat, std::max(last, b.ts), pid, tid);
      e.args = "{\"unfinished\":true}";
    }
    for (size_t w : openWaits) hostWaits_[w].end = std::max(last, hostWaits_[w].begin);
  }

  // The signal that released a wait for `value` of `semaphore` (`covered`: met GPU-side on a
  // recorded signal, `by`: when it was released): the value it signalled and when that became
  // available; false when none was recorded.
  bool releaser(uint64_t semaphore, uint64_t value, bool covered, uint64_t by, Value* out) const {
    if (covered) {
      auto it = publishes_.find(semaphore);
      const Value* best = nullptr;
      if (it != publishes_.end())
        for (const Value& p : it->second)
          if (p.value >= value && p.ts <= by &&
              (!best || p.value < best->value || (p.value == best->value && p.ts < best->ts)))
            best = &p;
      if (best) {
        *out = *best;
        return true;
      }
    }
    auto it = reaches_.find(semaphore);
    if (it == reaches_.end()) return false;
    auto at = std::lower_bound(it->second.begin(), it->second.end(), value,
                               [](const Value& v, uint64_t x) { return v.value < x; });
    if (at == it->second.end()) return false;
    *out = *at;
    return true;
  }

  // Who signalled `value` of `semaphore`: the latest signaller submitted before `when`.
  const Source* source(uint64_t semaphore, uint64_t value, uint64_t when) const {
    auto it = sources_.find({semaphore, value});
    if (it == sources_.end()) return nullptr;
    const Source* best = nullptr;
    for (const Source& s : it->second)
      if (s.ts <= when && (!best || s.ts > best->ts)) best = &s;
    return best ? best : &it->second.front();
  }

  // Places each submission of a queue on its tracks (trace.hpp: the execution slice, the held
  // slice), in queue order: the order of release (under the queue's lock), failures in place.
  void layOut(QueueInfo& q) {
    auto key = [](const Sub* s) {
      return s->isReleased ? s->released : s->isFailed ? s->failedAt : s->submitted;
    };
    std::sort(q.subs.begin(), q.subs.end(), [&](const Sub* a, const Sub* b) {
      return key(a) != key(b) ? key(a) < key(b) : a->id < b->id;
    });
    uint64_t execEnd = 0, heldEnd = 0;
    for (Sub* s : q.subs) {
      // Held: still waiting in the scheduler when its submit call returned.
      const bool decided = s->isReleased || s->isFailed;
      const uint64_t decidedAt = s->isReleased ? s->released : s->isFailed ? s->failedAt : end_;
      if (!decided || (s->submitEnd && decidedAt > s->submitEnd)) {
        s->hasHeld = true;
        s->heldBegin = std::max(s->submitted, heldEnd);
        s->heldEnd = std::max(decidedAt, s->heldBegin + 2);
        heldEnd = s->heldEnd;
        q.anyHeld = true;
      }
      if (!s->isReleased) {
        s->status = s->isFailed ? "failed" : "held";
        continue;
      }
      uint64_t begin = s->issued ? s->issued : s->released;
      if (q.backend != BackendKind::Host) {
        // A stream queue's GPU waits for the signals it was released on: it cannot run before
        // they completed (as far as the host saw: a value from outside baton, such as a Vulkan
        // timeline's, when it was observed).
        for (const Op& w : s->left) {
          Value v;
          if (!releaser(w.semaphore, w.value, true, s->released, &v)) continue;
          const Source* src = source(w.semaphore, v.value, v.ts);
          if (src && !src->host) {
            const Sub& from = subs_.at(src->index);
            if (from.completed) begin = std::max(begin, from.completed);
          } else if (src) {  // a host signal, or a value from outside (an imported semaphore)
            begin = std::max(begin, hostSignals_[src->index].begin);
          }
        }
      }
      uint64_t end = s->completed                                ? s->completed
                     : s->isFailed && s->failedAt >= s->released ? s->failedAt
                                                                 : end_;
      if (q.backend != BackendKind::Host) {
        // A host waiter (or another queue's completion thread) may see a signal complete before
        // this queue's completion thread does: the work was done when the first one saw it.
        for (const Op& sig : s->signals) {
          auto it = reaches_.find(sig.semaphore);
          if (it == reaches_.end()) continue;
          auto at = std::lower_bound(it->second.begin(), it->second.end(), sig.value,
                                     [](const Value& v, uint64_t x) { return v.value < x; });
          if (at != it->second.end() && at->value == sig.value && at->ts >= begin)
            end = std::min(end, at->ts);
        }
      }
      if (!s->completed && !s->isFailed) s->status = "in flight";
      if (s->isFailed) s->status = "failed";
      begin = std::max(std::min(begin, end), execEnd);
      end = std::max(end, begin + 2);  // room for a flow's end inside
      s->hasExec = true;
      s->execBegin = begin;
      s->execEnd = end;
      execEnd = end;
    }
  }

  // A time inside [begin, end] near its end or its start, where a flow's end binds to that
  // slice (not to one that begins or ends at the same time).
  static uint64_t lastInside(uint64_t begin, uint64_t end) { return end > begin ? end - 1 : begin; }
  static uint64_t firstInside(uint64_t begin, uint64_t end) {
    return end > begin ? begin + 1 : begin;
  }

  uint32_t execTid(uint32_t track) const { return 2 * track; }
  uint32_t heldTid(uint32_t track) const { return 2 * track + 1; }

  void emitQueue(uint32_t track, const QueueInfo& q) {
    for (const Sub* s : q.subs) {
      const std::string id = std::to_string(s->id);
      if (s->hasExec) {
        Event& e = add('X', "#" + id, "submission", s->execBegin, queuesPid_, execTid(track));
        e.dur = s->execEnd - s->execBegin;
        std::string a = "{\"id\":" + id + ",\"queue\":" + quoted(q.label) +
                        ",\"waits\":" + opsJson(s->waits) + ",\"signals\":" + opsJson(s->signals) +
                        ",\"submitted_us\":" + json_.micros(s->submitted);
        if (s->isReleased) a += ",\"released_us\":" + json_.micros(s->released);
        if (s->issued) a += ",\"issued_us\":" + json_.micros(s->issued);
        if (s->completed) a += ",\"completed_us\":" + json_.micros(s->completed);
        a += std::string(",\"held\":") + (s->hasHeld ? "true" : "false") + ",\"status\":\"" +
             s->status + "\"";
        if (s->isFailed) a += ",\"error\":" + quoted(s->error);
        e.args = a + "}";
        // Its collectives, inside it (their own times on the GPU are not observed).
        for (const auto& [what, bytes] : s->collectives) {
          const size_t cut = what.rfind(": ");
          Event& c = add('X', cut == std::string::npos ? what : what.substr(cut + 2), "collective",
                         s->execBegin, queuesPid_, execTid(track));
          c.dur = s->execEnd - s->execBegin;
          c.args = "{\"id\":" + id + ",\"what\":" + quoted(what) +
                   ",\"bytes\":" + std::to_string(bytes) + "}";
        }
      }
      if (s->hasHeld) {
        Event& e = add('X', "#" + id + " held", "held", s->heldBegin, queuesPid_, heldTid(track));
        e.dur = s->heldEnd - s->heldBegin;
        e.args = "{\"id\":" + id + ",\"waits\":" + opsJson(s->waits) + ",\"status\":\"" +
                 s->status + "\"}";
      }
      if (s->isFailed) {
        Event& e =
            add('i', "#" + id + " failed", "failure", s->failedAt, queuesPid_, execTid(track));
        e.extra = ",\"s\":\"t\"";
        e.args = "{\"id\":" + id + ",\"error\":" + quoted(s->error) + "}";
      }
    }
  }

  void flow(uint64_t fromTs, uint32_t fromPid, uint32_t fromTid, uint64_t toTs, uint32_t toPid,
            uint32_t toTid, const std::string& args) {
    const std::string id = std::to_string(++flows_);
    Event& s = add('s', "dependency", "dependency", fromTs, fromPid, fromTid);
    s.extra = ",\"id\":" + id;
    s.args = args;
    Event& f = add('f', "dependency", "dependency", toTs, toPid, toTid);
    f.extra = ",\"id\":" + id + ",\"bp\":\"e\"";
    f.args = args;
  }

  // Where a flow from `src` starts: the end of the signaller's slice (just inside it).
  bool sourceSlice(const Source& src, uint64_t* ts, uint32_t* pid, uint32_t* tid,
                   uint64_t* fromId) const {
    if (src.host) {
      const HostSignal& h = hostSignals_[src.index];
      *ts = lastInside(h.begin, h.end);
      *pid = snap_.pid;
      *tid = h.tid;
      *fromId = 0;
      return true;
    }
    const Sub& s = subs_.at(src.index);
    if (!s.hasExec) return false;
    *ts = lastInside(s.execBegin, s.execEnd);
    *pid = queuesPid_;
    *tid = execTid(s.track);
    *fromId = s.id;
    return true;
  }

  std::string flowArgs(const Op& wait, uint64_t signalled, uint64_t from, uint64_t to) const {
    return "{\"semaphore\":\"" + hex(wait.semaphore) +
           "\",\"name\":" + quoted(semaphoreName(wait.semaphore)) +
           ",\"waited\":" + std::to_string(wait.value) +
           ",\"signalled\":" + std::to_string(signalled) + ",\"from\":" + std::to_string(from) +
           ",\"to\":" + std::to_string(to) + "}";
  }

  void flowsInto(const Sub& w) {
    if (!w.isReleased) return;  // failed or still held: nothing released it
    for (const Op& wait : w.waits) {
      bool covered = false;
      for (const Op& l : w.left) covered |= l.semaphore == wait.semaphore && l.value == wait.value;
      Value v;
      if (!releaser(wait.semaphore, wait.value, covered, w.released, &v)) continue;
      const Source* src = source(wait.semaphore, v.value, v.ts);
      uint64_t fromTs, fromId;
      uint32_t fromPid, fromTid;
      if (!src || !sourceSlice(*src, &fromTs, &fromPid, &fromTid, &fromId)) continue;
      // A wait the scheduler saw reached ends at the held slice's end (its release); one met
      // GPU-side on a recorded signal (covered), or never held, at the start of its execution.
      const bool toHeld = w.hasHeld && !covered;
      const uint64_t toTs =
          toHeld ? lastInside(w.heldBegin, w.heldEnd) : firstInside(w.execBegin, w.execEnd);
      const uint32_t toTid = toHeld ? heldTid(w.track) : execTid(w.track);
      flow(fromTs, fromPid, fromTid, toTs, queuesPid_, toTid,
           flowArgs(wait, v.value, fromId, w.id));
    }
  }

  void flowsInto(const HostWait& w) {
    for (const Op& wait : w.entries) {
      Value v;
      if (!releaser(wait.semaphore, wait.value, false, w.end, &v)) continue;
      if (v.ts < w.begin || v.ts > w.end) continue;  // reached before the wait, or after it
      const Source* src = source(wait.semaphore, v.value, v.ts);
      uint64_t fromTs, fromId;
      uint32_t fromPid, fromTid;
      if (!src || !sourceSlice(*src, &fromTs, &fromPid, &fromTid, &fromId)) continue;
      flow(fromTs, fromPid, fromTid, lastInside(w.begin, w.end), snap_.pid, w.tid,
           flowArgs(wait, v.value, fromId, 0));
    }
  }

  void metadata(std::string& out, const char* what, uint32_t pid, uint32_t tid,
                const std::string& args) {
    out += ",\n{\"ph\":\"M\",\"name\":\"";
    out += what;
    out += "\",\"ts\":0,\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
           ",\"args\":" + args + "}";
  }

  std::string serialize() {
    std::string out = "{\"traceEvents\":[\n";
    // Metadata first: the tracks' names and order.
    out +=
        "{\"ph\":\"M\",\"name\":\"process_name\",\"ts\":0,\"pid\":" + std::to_string(queuesPid_) +
        ",\"tid\":0,\"args\":{\"name\":\"baton queues\"}}";
    metadata(out, "process_sort_index", queuesPid_, 0, "{\"sort_index\":0}");
    metadata(
        out, "process_name", snap_.pid, 0,
        "{\"name\":" +
            quoted("host threads (" + snap_.processName + " " + std::to_string(snap_.pid) + ")") +
            "}");
    metadata(out, "process_sort_index", snap_.pid, 0, "{\"sort_index\":1}");
    // Queue tracks by device, then queue index ("queue 1 of device #2 ..." -> device #2, 1).
    std::vector<std::pair<std::pair<std::string, unsigned long>, uint32_t>> order;
    for (const auto& [track, q] : queues_) {
      const size_t of = q.label.find(" of ");
      unsigned long index = 0;
      std::string device = q.label;
      if (q.label.rfind("queue ", 0) == 0 && of != std::string::npos) {
        index = std::strtoul(q.label.c_str() + 6, nullptr, 10);
        device = q.label.substr(of + 4);
      }
      order.push_back({{device, index}, track});
    }
    std::sort(order.begin(), order.end());
    uint32_t rank = 0;
    for (const auto& [key, track] : order) {
      const QueueInfo& q = queues_.at(track);
      const std::string label = q.label.empty() ? "queue track " + std::to_string(track) : q.label;
      metadata(out, "thread_name", queuesPid_, execTid(track), "{\"name\":" + quoted(label) + "}");
      metadata(out, "thread_sort_index", queuesPid_, execTid(track),
               "{\"sort_index\":" + std::to_string(++rank) + "}");
      if (!q.anyHeld) continue;
      metadata(out, "thread_name", queuesPid_, heldTid(track),
               "{\"name\":" + quoted(label + " \xc2\xb7 held") + "}");
      metadata(out, "thread_sort_index", queuesPid_, heldTid(track),
               "{\"sort_index\":" + std::to_string(++rank) + "}");
    }
    rank = 0;
    for (const ThreadRecords* t : threads_) {
      metadata(out, "thread_name", snap_.pid, t->tid,
               "{\"name\":" + quoted(t->name.empty() ? "thread" : t->name) + "}");
      metadata(out, "thread_sort_index", snap_.pid, t->tid,
               "{\"sort_index\":" + std::to_string(++rank) + "}");
    }
    for (const Event& e : events_) {
      out += ",\n{\"ph\":\"";
      out += e.ph;
      out += "\",\"name\":";
      appendString(out, e.name);
      out += ",\"cat\":\"" + e.cat + "\",\"ts\":" + json_.micros(e.ts);
      if (e.ph == 'X') out += ",\"dur\":" + Json::duration(e.dur);
      out += ",\"pid\":" + std::to_string(e.pid) + ",\"tid\":" + std::to_string(e.tid);
      out += e.extra;
      if (!e.args.empty()) out += ",\"args\":" + e.args;
      out += "}";
    }
    out +=
        "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"baton\","
        "\"clock\":\"CLOCK_MONOTONIC\",\"process\":" +
        quoted(snap_.processName) + ",\"pid\":" + std::to_string(snap_.pid) +
        ",\"queues_pid\":" + std::to_string(queuesPid_) + ",\"flows\":" + std::to_string(flows_) +
        ",\"dropped_records\":" + std::to_string(dropped_) + "}}\n";
    return out;
  }

  const Snapshot& snap_;
  Json json_;
  uint32_t queuesPid_ = 0;
  uint64_t end_ = 0;  // the last record's time
  uint64_t dropped_ = 0;
  uint64_t flows_ = 0;
  std::vector<const ThreadRecords*> threads_;
  std::vector<Event> events_;
  std::unordered_map<uint64_t, Sub> subs_;
  std::map<uint32_t, QueueInfo> queues_;
  std::unordered_map<uint64_t, std::string> names_;
  std::unordered_map<uint64_t, std::vector<Value>> reaches_, publishes_;
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Source>> sources_;
  std::vector<HostSignal> hostSignals_;
  std::vector<HostWait> hostWaits_;
};

}  // namespace

std::string toJson(const Snapshot& snapshot) { return Writer(snapshot).run(); }

}  // namespace baton::core::trace
