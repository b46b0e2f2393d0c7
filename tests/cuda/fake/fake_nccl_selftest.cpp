// Checks the fake NCCL's documented behaviours (fake_cuda.hpp, "NCCL") on its entry points: the
// module named by BATON_CUDA_DRIVER is opened with dlopen, as baton opens BATON_NCCL_LIBRARY, and
// used with 2 or 3 emulated devices (BATON_FAKE_CUDA_DEVICES=3) in one process: ranks made by
// ncclCommInitAll, by a group of init calls from one thread, or by one thread per rank.
// Every test ends with no communicator live and no NCCL stream op pending (TearDown).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "fake_cuda.hpp"

#define FAKE_SYM2(x) #x
#define FAKE_SYM(x) FAKE_SYM2(x)

// clang-format off
#define FAKE_NCCL_NAMES(X)                                                                   \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclGetErrorString) X(ncclGetLastError)             \
  X(ncclCommInitRankConfig) X(ncclCommInitRank) X(ncclCommInitAll) X(ncclCommFinalize)       \
  X(ncclCommDestroy) X(ncclCommAbort) X(ncclCommRevoke) X(ncclCommSplit) X(ncclCommShrink)   \
  X(ncclCommGetAsyncError) X(ncclCommCount) X(ncclCommCuDevice) X(ncclCommUserRank)          \
  X(ncclGroupStart) X(ncclGroupEnd) X(ncclAllReduce) X(ncclBroadcast) X(ncclReduce)          \
  X(ncclAllGather) X(ncclReduceScatter) X(ncclAlltoAll) X(ncclSend) X(ncclRecv)
// clang-format on

namespace {

using namespace std::chrono_literals;

class FakeNcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("BATON_CUDA_DRIVER");
    if (!path) GTEST_SKIP() << "BATON_CUDA_DRIVER not set";
    handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
#define FAKE_NCCL_LOAD(name)                                         \
  name = reinterpret_cast<decltype(&::name)>(dlsym(handle_, #name)); \
  ASSERT_NE(name, nullptr) << #name " is not exported";
    FAKE_NCCL_NAMES(FAKE_NCCL_LOAD)
#undef FAKE_NCCL_LOAD
    stats_ = sym<void (*)(BatonFakeNcclStats*)>("batonFakeNcclStats");
    inject_ = sym<int (*)(ncclComm_t, int)>("batonFakeNcclInjectAsyncError");
    ctxSet_ = sym<CUresult (*)(CUcontext)>(FAKE_SYM(cuCtxSetCurrent));
    streamCreate_ = sym<CUresult (*)(CUstream*, unsigned)>(FAKE_SYM(cuStreamCreate));
    streamDestroy_ = sym<CUresult (*)(CUstream)>(FAKE_SYM(cuStreamDestroy));
    streamSync_ = sym<CUresult (*)(CUstream)>(FAKE_SYM(cuStreamSynchronize));
    streamQuery_ = sym<CUresult (*)(CUstream)>(FAKE_SYM(cuStreamQuery));
    memAlloc_ = sym<CUresult (*)(CUdeviceptr*, size_t)>(FAKE_SYM(cuMemAlloc));
    memFree_ = sym<CUresult (*)(CUdeviceptr)>(FAKE_SYM(cuMemFree));
    auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>(FAKE_SYM(cuDevicePrimaryCtxRetain));
    auto count = sym<CUresult (*)(int*)>(FAKE_SYM(cuDeviceGetCount));
    ASSERT_TRUE(stats_ && inject_ && ctxSet_ && streamCreate_ && streamDestroy_ && streamSync_ &&
                streamQuery_ && memAlloc_ && memFree_ && retain && count);
    int devices = 0;
    ASSERT_EQ(count(&devices), CUDA_SUCCESS);
    ASSERT_GE(devices, 3) << "run with BATON_FAKE_CUDA_DEVICES=3";
    for (int d = 0; d < 3; ++d) ASSERT_EQ(retain(&ctx_[d], d), CUDA_SUCCESS);
    BatonFakeNcclStats st{};
    stats_(&st);
    aborted_ = st.opsAborted;
  }

  void TearDown() override {
    if (!handle_) return;
    for (CUstream s : streams_) {
      EXPECT_EQ(streamSync_(s), CUDA_SUCCESS);
      EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
    }
    ctxSet_(nullptr);
    for (CUdeviceptr p : allocations_) EXPECT_EQ(memFree_(p), CUDA_SUCCESS);
    BatonFakeNcclStats st{};
    stats_(&st);
    EXPECT_EQ(st.communicatorsLive, 0u) << "a communicator of this test was not destroyed";
    EXPECT_EQ(st.opsLive, 0u) << "an NCCL stream op of this test is still pending";
  }

  template <class F>
  F sym(const char* name) {
    return reinterpret_cast<F>(dlsym(handle_, name));
  }
  void use(int device) { ASSERT_EQ(ctxSet_(ctx_[device]), CUDA_SUCCESS); }
  CUstream stream(int device) {
    use(device);
    CUstream s = nullptr;
    EXPECT_EQ(streamCreate_(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    streams_.push_back(s);
    return s;
  }
  std::vector<CUstream> streams(int n) {
    std::vector<CUstream> s;
    for (int d = 0; d < n; ++d) s.push_back(stream(d));
    return s;
  }
  template <class T>
  T* alloc(size_t count, T fill = T()) {
    CUdeviceptr p = 0;
    EXPECT_EQ(memAlloc_(&p, count * sizeof(T) + 1), CUDA_SUCCESS);
    allocations_.push_back(p);
    T* t = reinterpret_cast<T*>(p);  // unified addressing: device memory is host memory here
    for (size_t i = 0; i < count; ++i) t[i] = fill;
    return t;
  }
  void sync(CUstream s) { ASSERT_EQ(streamSync_(s), CUDA_SUCCESS); }
  bool pending(CUstream s) { return streamQuery_(s) == CUDA_ERROR_NOT_READY; }
  std::vector<ncclComm_t> initAll(int n) {
    std::vector<ncclComm_t> comms(static_cast<size_t>(n), nullptr);
    EXPECT_EQ(ncclCommInitAll(comms.data(), n, nullptr), ncclSuccess);
    return comms;
  }
  void destroy(const std::vector<ncclComm_t>& comms) {
    for (ncclComm_t c : comms) {
      if (!c) continue;
      EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
    }
  }
  static ncclConfig_t nonBlocking() {
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    c.blocking = 0;
    return c;
  }
  // Polls until the communicator is no longer in progress (at most 2 s).
  ncclResult_t settle(ncclComm_t comm) {
    ncclResult_t state = ncclInProgress;
    for (int i = 0; i < 2000 && state == ncclInProgress; ++i) {
      EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
      if (state == ncclInProgress) std::this_thread::sleep_for(1ms);
    }
    return state;
  }
  uint64_t abortedSinceSetUp() {
    BatonFakeNcclStats st{};
    stats_(&st);
    return st.opsAborted - aborted_;
  }

#define FAKE_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  FAKE_NCCL_NAMES(FAKE_NCCL_MEMBER)
#undef FAKE_NCCL_MEMBER
  void* handle_ = nullptr;
  void (*stats_)(BatonFakeNcclStats*) = nullptr;
  int (*inject_)(ncclComm_t, int) = nullptr;
  CUresult (*ctxSet_)(CUcontext) = nullptr;
  CUresult (*streamCreate_)(CUstream*, unsigned) = nullptr;
  CUresult (*streamDestroy_)(CUstream) = nullptr;
  CUresult (*streamSync_)(CUstream) = nullptr;
  CUresult (*streamQuery_)(CUstream) = nullptr;
  CUresult (*memAlloc_)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*memFree_)(CUdeviceptr) = nullptr;
  CUcontext ctx_[3] = {};
  std::vector<CUstream> streams_;
  std::vector<CUdeviceptr> allocations_;
  uint64_t aborted_ = 0;
};

// ---- element encodings, written independently of the module's --------------------------------

// The bits of `v`, a value the format holds exactly (small integers here).
uint32_t exactBits(double v, int manBits, int bias) {
  if (v == 0) return 0;
  const int e = static_cast<int>(std::floor(std::log2(v)));
  const double mantissa = (std::ldexp(v, -e) - 1) * (1 << manBits);
  EXPECT_EQ(mantissa, std::floor(mantissa)) << v << " is not exact in this format";
  return (static_cast<uint32_t>(e + bias) << manBits) | static_cast<uint32_t>(mantissa);
}

size_t sizeOf(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    default: return 8;
  }
}

void put(ncclDataType_t t, void* buffer, size_t i, double v) {
  auto* b = static_cast<unsigned char*>(buffer) + i * sizeOf(t);
  auto store = [&](auto x) { std::memcpy(b, &x, sizeof x); };
  switch (t) {
    case ncclInt8: return store(static_cast<int8_t>(v));
    case ncclUint8: return store(static_cast<uint8_t>(v));
    case ncclInt32: return store(static_cast<int32_t>(v));
    case ncclUint32: return store(static_cast<uint32_t>(v));
    case ncclInt64: return store(static_cast<int64_t>(v));
    case ncclUint64: return store(static_cast<uint64_t>(v));
    case ncclFloat16: return store(static_cast<uint16_t>(exactBits(v, 10, 15)));
    case ncclFloat32: return store(static_cast<float>(v));
    case ncclFloat64: return store(v);
    case ncclBfloat16: {
      const auto f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return store(static_cast<uint16_t>(u >> 16));  // exact: the low half is zero
    }
    case ncclFloat8e4m3: return store(static_cast<uint8_t>(exactBits(v, 3, 7)));
    default: return store(static_cast<uint8_t>(exactBits(v, 2, 15)));
  }
}

// ---- basics
// --------------------------------------------------------------------------------------

TEST_F(FakeNcclTest, VersionErrorStringsAndCommunicatorQueries) {
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  const char* forced = std::getenv("BATON_FAKE_NCCL_VERSION");
  EXPECT_EQ(version, forced ? std::atoi(forced) : 22809);
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_STREQ(ncclGetErrorString(ncclRemoteError),
               "remote process exited or there was a network error");
  EXPECT_STREQ(ncclGetErrorString(ncclInProgress), "NCCL operation in progress");
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidUsage),
               "invalid usage (run with NCCL_DEBUG=WARN for details)");
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage) << "no group started";
  EXPECT_NE(std::strlen(ncclGetLastError(nullptr)), 0u);
  std::vector<ncclComm_t> comms = initAll(3);
  for (int r = 0; r < 3; ++r) {
    int count = 0, rank = -1, device = -1;
    EXPECT_EQ(ncclCommCount(comms[r], &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(comms[r], &rank), ncclSuccess);
    EXPECT_EQ(ncclCommCuDevice(comms[r], &device), ncclSuccess);
    EXPECT_EQ(count, 3);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(device, r);
  }
  BatonFakeNcclStats st{};
  stats_(&st);
  EXPECT_EQ(st.communicatorsLive, 3u);
  destroy(comms);
}

// Errors at arrival, with ncclGetLastError's message; no current context.
TEST_F(FakeNcclTest, InitErrors) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = nonBlocking();
  ncclComm_t a = nullptr, b = nullptr;
  use(0);
  EXPECT_EQ(ncclCommInitRankConfig(&b, 2, id, 2, &config), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRankConfig(&b, 0, id, 0, &config), ncclInvalidArgument);
  ASSERT_EQ(ncclCommInitRankConfig(&a, 2, id, 0, &config), ncclInProgress);
  use(1);
  EXPECT_EQ(ncclCommInitRankConfig(&b, 2, id, 0, &config), ncclInvalidUsage) << "rank taken";
  EXPECT_EQ(ncclCommInitRankConfig(&b, 3, id, 1, &config), ncclInvalidUsage) << "nranks differs";
  use(0);
  EXPECT_EQ(ncclCommInitRankConfig(&b, 2, id, 1, &config), ncclInvalidUsage);
  EXPECT_NE(std::strstr(ncclGetLastError(nullptr), "Duplicate GPU detected"), nullptr)
      << ncclGetLastError(nullptr);
  EXPECT_EQ(b, nullptr);
  ncclResult_t noContext = ncclSuccess;
  std::thread([&] { noContext = ncclCommInitRankConfig(&b, 2, id, 1, &config); }).join();
  EXPECT_EQ(noContext, ncclInvalidUsage);
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(ncclCommInitRankConfig(&b, 2, id, 1, &bad), ncclInvalidArgument);
  EXPECT_EQ(ncclCommAbort(a), ncclSuccess);
}

// ---- data
// ----------------------------------------------------------------------------------------

// Every type, 2 and 3 ranks, small integers (exact in every type, partial sums included).
TEST_F(FakeNcclTest, AllReduceSumEveryType) {
  for (int n = 2; n <= 3; ++n) {
    std::vector<ncclComm_t> comms = initAll(n);
    std::vector<CUstream> s = streams(n);
    constexpr size_t kCount = 4;
    for (int t = 0; t < ncclNumTypes; ++t) {
      const auto type = static_cast<ncclDataType_t>(t);
      std::vector<void*> in(n), out(n);
      for (int r = 0; r < n; ++r) {
        in[r] = alloc<unsigned char>(kCount * 8);
        out[r] = alloc<unsigned char>(kCount * 8, 0xee);
        for (size_t i = 0; i < kCount; ++i) put(type, in[r], i, (r + 1) * (1 + i % 2));
      }
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      for (int r = 0; r < n; ++r)
        ASSERT_EQ(ncclAllReduce(in[r], out[r], kCount, type, ncclSum, comms[r], s[r]), ncclSuccess);
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
      std::vector<unsigned char> expected(kCount * sizeOf(type));
      for (size_t i = 0; i < kCount; ++i)
        put(type, expected.data(), i, n * (n + 1) / 2 * (1 + i % 2));
      for (int r = 0; r < n; ++r) {
        sync(s[r]);
        EXPECT_EQ(std::memcmp(out[r], expected.data(), expected.size()), 0)
            << "type " << t << ", " << n << " ranks, rank " << r;
      }
    }
    destroy(comms);
  }
}

// Rounding to the type after each step: half overflows to infinity, the fp8 types saturate,
// bfloat16 rounds to nearest even.
TEST_F(FakeNcclTest, SmallFloatsRoundPerStep) {
  std::vector<ncclComm_t> comms = initAll(2);
  std::vector<CUstream> s = streams(2);
  struct Case {
    ncclDataType_t type;
    uint16_t in0, in1, expected;
  } cases[] = {
      {ncclFloat16, 0x7bff, 0x7bff, 0x7c00},   // 65504 + 65504 = inf
      {ncclFloat8e4m3, 0x7e, 0x7e, 0x7e},      // 448 + 448 saturates to 448
      {ncclFloat8e5m2, 0x7b, 0x7b, 0x7b},      // 57344 + 57344 saturates
      {ncclFloat8e4m3, 0x08, 0x01, 0x09},      // 2^-6 + 2^-9 (subnormal) = 0x09
      {ncclBfloat16, 0x3f80, 0x3b80, 0x3f80},  // 1 + 2^-8: a tie, to even (1)
      {ncclBfloat16, 0x3f81, 0x3b80, 0x3f82},  // (1 + 2^-7) + 2^-8: a tie, to even (up)
  };
  for (const Case& c : cases) {
    const size_t bytes = sizeOf(c.type);
    void* in[2] = {alloc<uint16_t>(1), alloc<uint16_t>(1)};
    void* out[2] = {alloc<uint16_t>(1), alloc<uint16_t>(1)};
    std::memcpy(in[0], &c.in0, bytes);
    std::memcpy(in[1], &c.in1, bytes);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(ncclAllReduce(in[r], out[r], 1, c.type, ncclSum, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    for (int r = 0; r < 2; ++r) {
      sync(s[r]);
      uint16_t got = 0;
      std::memcpy(&got, out[r], bytes);
      EXPECT_EQ(got, c.expected) << "type " << c.type << " in " << c.in0 << " + " << c.in1;
    }
  }
  destroy(comms);
}

TEST_F(FakeNcclTest, EveryOpFloat32AndInt32) {
  const float f[3][4] = {{1.5f, -2, 0.25f, 3}, {2, 0.5f, -1, 3}, {-4, 1, 0.5f, 3}};
  const int32_t k[3][4] = {{7, -7, 100, -1}, {3, -4, -50, -1}, {-2, 5, 25, -2}};
  std::vector<ncclComm_t> comms = initAll(3);
  std::vector<CUstream> s = streams(3);
  for (int op = 0; op < ncclNumOps; ++op) {
    std::vector<float*> fin(3), fout(3);
    std::vector<int32_t*> kin(3), kout(3);
    for (int r = 0; r < 3; ++r) {
      fin[r] = alloc<float>(4);
      fout[r] = alloc<float>(4);
      kin[r] = alloc<int32_t>(4);
      kout[r] = alloc<int32_t>(4);
      std::memcpy(fin[r], f[r], sizeof f[r]);
      std::memcpy(kin[r], k[r], sizeof k[r]);
    }
    const auto redOp = static_cast<ncclRedOp_t>(op);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 3; ++r) {
      ASSERT_EQ(ncclAllReduce(fin[r], fout[r], 4, ncclFloat32, redOp, comms[r], s[r]), ncclSuccess);
      ASSERT_EQ(ncclAllReduce(kin[r], kout[r], 4, ncclInt32, redOp, comms[r], s[r]), ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    for (int i = 0; i < 4; ++i) {
      float fe = f[0][i];
      int64_t ke = k[0][i];
      for (int r = 1; r < 3; ++r) {
        switch (redOp) {
          case ncclProd:
            fe *= f[r][i];
            ke *= k[r][i];
            break;
          case ncclMax:
            fe = std::max(fe, f[r][i]);
            ke = std::max<int64_t>(ke, k[r][i]);
            break;
          case ncclMin:
            fe = std::min(fe, f[r][i]);
            ke = std::min<int64_t>(ke, k[r][i]);
            break;
          default: fe += f[r][i]; ke += k[r][i];
        }
      }
      if (redOp == ncclAvg) {
        fe /= 3;
        ke /= 3;  // toward zero: -4 / 3 = -1
      }
      for (int r = 0; r < 3; ++r) {
        sync(s[r]);
        EXPECT_EQ(fout[r][i], fe) << "op " << op << " element " << i << " rank " << r;
        EXPECT_EQ(kout[r][i], ke) << "op " << op << " element " << i << " rank " << r;
      }
    }
  }
  destroy(comms);
}

TEST_F(FakeNcclTest, RootedGatheringAndScatteringCollectives) {
  constexpr int n = 3;
  std::vector<ncclComm_t> comms = initAll(n);
  std::vector<CUstream> s = streams(n);
  std::vector<int32_t*> bin(n), bout(n), rin(n), rout(n), gin(n), gout(n), sin(n), sout(n), ain(n),
      aout(n);
  for (int r = 0; r < n; ++r) {
    bin[r] = alloc<int32_t>(2, 10 * r + 1);
    bout[r] = alloc<int32_t>(2, -1);
    rin[r] = alloc<int32_t>(2, r + 1);
    rout[r] = alloc<int32_t>(2, -1);
    gin[r] = alloc<int32_t>(2, 100 + r);
    gout[r] = alloc<int32_t>(2 * n, -1);
    sin[r] = alloc<int32_t>(2 * n);
    sout[r] = alloc<int32_t>(2, -1);
    ain[r] = alloc<int32_t>(2 * n);
    aout[r] = alloc<int32_t>(2 * n, -1);
    for (int i = 0; i < 2 * n; ++i) {
      sin[r][i] = (r + 1) * 1000 + i;
      ain[r][i] = r * 100 + i;  // rank r's slot i / 2 goes to rank i / 2
    }
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(ncclBroadcast(r == 1 ? bin[r] : nullptr, bout[r], 2, ncclInt32, 1, comms[r], s[r]),
              ncclSuccess);
    ASSERT_EQ(ncclReduce(rin[r], rout[r], 2, ncclInt32, ncclSum, 2, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclAllGather(gin[r], gout[r], 2, ncclInt32, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclReduceScatter(sin[r], sout[r], 2, ncclInt32, ncclSum, comms[r], s[r]),
              ncclSuccess);
    ASSERT_EQ(ncclAlltoAll(ain[r], aout[r], 2, ncclInt32, comms[r], s[r]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    sync(s[r]);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(bout[r][i], 11) << "broadcast from root 1, rank " << r;
      EXPECT_EQ(rout[r][i], r == 2 ? 6 : -1) << "reduce to root 2 only, rank " << r;
      EXPECT_EQ(sout[r][i], 6000 + 3 * (2 * r + i)) << "reduce-scatter slot " << r;
    }
    for (int p = 0; p < n; ++p) {
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(gout[r][2 * p + i], 100 + p) << "all-gather slot " << p << ", rank " << r;
        EXPECT_EQ(aout[r][2 * p + i], p * 100 + 2 * r + i)
            << "all-to-all slot " << p << ", rank " << r;
      }
    }
  }
  destroy(comms);
}

// In-place layouts: allReduce sendbuff == recvbuff; allGather sendbuff = recvbuff + rank * count;
// reduceScatter recvbuff = sendbuff + rank * recvcount.
TEST_F(FakeNcclTest, InPlace) {
  constexpr int n = 3;
  std::vector<ncclComm_t> comms = initAll(n);
  std::vector<CUstream> s = streams(n);
  std::vector<int64_t*> ar(n), ag(n), rs(n);
  for (int r = 0; r < n; ++r) {
    ar[r] = alloc<int64_t>(2, r + 1);
    ag[r] = alloc<int64_t>(n, -1);
    ag[r][r] = 50 + r;
    rs[r] = alloc<int64_t>(n);
    for (int p = 0; p < n; ++p) rs[r][p] = 10 * (r + 1) + p;
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(ncclAllReduce(ar[r], ar[r], 2, ncclInt64, ncclSum, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclAllGather(ag[r] + r, ag[r], 1, ncclInt64, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclReduceScatter(rs[r], rs[r] + r, 1, ncclInt64, ncclSum, comms[r], s[r]),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    sync(s[r]);
    EXPECT_EQ(ar[r][0], 6);
    EXPECT_EQ(ar[r][1], 6);
    for (int p = 0; p < n; ++p) EXPECT_EQ(ag[r][p], 50 + p) << "rank " << r;
    EXPECT_EQ(rs[r][r], 60 + 3 * r) << "rank " << r;
  }
  destroy(comms);
}

// Both directions of a ring, and a send to self, in one group from one thread: no deadlock.
TEST_F(FakeNcclTest, GroupedRingExchange) {
  constexpr int n = 3;
  std::vector<ncclComm_t> comms = initAll(n);
  std::vector<CUstream> s = streams(n);
  std::vector<int32_t*> out(n), fromLeft(n), fromRight(n), self(n);
  for (int r = 0; r < n; ++r) {
    out[r] = alloc<int32_t>(4, 100 * (r + 1));
    fromLeft[r] = alloc<int32_t>(4, -1);
    fromRight[r] = alloc<int32_t>(4, -1);
    self[r] = alloc<int32_t>(4, -1);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    ASSERT_EQ(ncclSend(out[r], 4, ncclInt32, right, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclSend(out[r], 4, ncclInt32, left, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclRecv(fromLeft[r], 4, ncclInt32, left, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclRecv(fromRight[r], 4, ncclInt32, right, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclSend(out[r], 4, ncclInt32, r, comms[r], s[r]), ncclSuccess);
    ASSERT_EQ(ncclRecv(self[r], 4, ncclInt32, r, comms[r], s[r]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    sync(s[r]);
    EXPECT_EQ(fromLeft[r][3], 100 * ((r + n - 1) % n + 1));
    EXPECT_EQ(fromRight[r][0], 100 * ((r + 1) % n + 1));
    EXPECT_EQ(self[r][2], 100 * (r + 1));
  }
  destroy(comms);
}

// A send outside a group completes only once its receiver received it.
TEST_F(FakeNcclTest, SendCompletesWhenReceived) {
  std::vector<ncclComm_t> comms = initAll(2);
  std::vector<CUstream> s = streams(2);
  int32_t* src = alloc<int32_t>(8, 7);
  int32_t* dst = alloc<int32_t>(8, 0);
  ASSERT_EQ(ncclSend(src, 8, ncclInt32, 1, comms[0], s[0]), ncclSuccess);
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(pending(s[0])) << "the send completed with no receiver";
  ASSERT_EQ(ncclRecv(dst, 8, ncclInt32, 0, comms[1], s[1]), ncclSuccess);
  sync(s[0]);
  sync(s[1]);
  EXPECT_EQ(dst[7], 7);
  destroy(comms);
}

// ---- making communicators
// ------------------------------------------------------------------------

// Blocking inits from one thread inside a group complete at ncclGroupEnd.
TEST_F(FakeNcclTest, GroupOfInitsFromOneThread) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(3);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; ++r) {
    use(2 - r);  // rank r on device 2 - r
    ASSERT_EQ(ncclCommInitRank(&comms[r], 3, id, r), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 3; ++r) {
    int rank = -1, device = -1;
    EXPECT_EQ(ncclCommUserRank(comms[r], &rank), ncclSuccess);
    EXPECT_EQ(ncclCommCuDevice(comms[r], &device), ncclSuccess);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(device, 2 - r);
  }
  destroy(comms);
}

// One thread per rank (blocking init and calls), with a watchdog polling the communicators'
// states concurrently with the calls.
TEST_F(FakeNcclTest, OneThreadPerRankWithAWatchdog) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<CUstream> s = streams(2);
  std::vector<ncclComm_t> comms(2);
  std::vector<float*> buf = {alloc<float>(16), alloc<float>(16)};
  std::thread inits[2];
  for (int r = 0; r < 2; ++r)
    inits[r] = std::thread([&, r] {
      ASSERT_EQ(ctxSet_(ctx_[r]), CUDA_SUCCESS);
      EXPECT_EQ(ncclCommInitRank(&comms[r], 2, id, r), ncclSuccess);
    });
  for (auto& t : inits) t.join();
  ASSERT_TRUE(comms[0] && comms[1]);
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::thread watchdog([&] {
    while (!stop.load()) {
      for (ncclComm_t c : comms) {
        ncclResult_t state = ncclInternalError;
        if (ncclCommGetAsyncError(c, &state) != ncclSuccess || state != ncclSuccess) ++errors;
      }
    }
  });
  std::thread ranks[2];
  for (int r = 0; r < 2; ++r)
    ranks[r] = std::thread([&, r] {
      for (int i = 0; i < 50; ++i) {
        for (int j = 0; j < 16; ++j) buf[r][j] = static_cast<float>(r + i);
        EXPECT_EQ(ncclAllReduce(buf[r], buf[r], 16, ncclFloat32, ncclSum, comms[r], s[r]),
                  ncclSuccess);
        EXPECT_EQ(streamSync_(s[r]), CUDA_SUCCESS);
        EXPECT_EQ(buf[r][5], static_cast<float>(1 + 2 * i));
      }
    });
  for (auto& t : ranks) t.join();
  stop.store(true);
  watchdog.join();
  EXPECT_EQ(errors.load(), 0);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(ncclCommFinalize(comms[r]), ncclSuccess);
  destroy(comms);
}

// Non-blocking: init in progress until every rank arrived; a call answers ncclInProgress, the
// next poll too, then ncclSuccess; a second call before that is refused.
TEST_F(FakeNcclTest, NonBlockingInitAndCallsArePolled) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = nonBlocking();
  std::vector<ncclComm_t> comms(2);
  std::vector<CUstream> s = streams(2);
  use(0);
  ASSERT_EQ(ncclCommInitRankConfig(&comms[0], 2, id, 0, &config), ncclInProgress);
  ASSERT_NE(comms[0], nullptr);
  ncclResult_t state = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  int count = 0;
  EXPECT_EQ(ncclCommCount(comms[0], &count), ncclInvalidArgument) << "not ready yet";
  use(1);
  ASSERT_EQ(ncclCommInitRankConfig(&comms[1], 2, id, 1, &config), ncclInProgress);
  for (ncclComm_t c : comms) EXPECT_EQ(settle(c), ncclSuccess);
  int32_t* a = alloc<int32_t>(1, 1);
  int32_t* b = alloc<int32_t>(1, 2);
  EXPECT_EQ(ncclAllReduce(a, a, 1, ncclInt32, ncclSum, comms[0], s[0]), ncclInProgress);
  EXPECT_EQ(ncclAllReduce(a, a, 1, ncclInt32, ncclSum, comms[0], s[0]), ncclInvalidArgument)
      << "a second call before the first was polled to ncclSuccess";
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b, b, 1, ncclInt32, ncclSum, comms[1], s[1]), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInProgress);
  EXPECT_EQ(settle(comms[1]), ncclSuccess);
  sync(s[0]);
  sync(s[1]);
  EXPECT_EQ(*a, 3);
  EXPECT_EQ(*b, 3);
  for (ncclComm_t c : comms) {
    EXPECT_EQ(ncclCommFinalize(c), ncclInProgress);
    EXPECT_EQ(settle(c), ncclSuccess);
  }
  destroy(comms);
}

// What baton does: a non-blocking communicator split into a blocking one. The split is a call
// of the (non-blocking) parent: it reports progress; the new communicator blocks, as its config
// asks: its collective calls return ncclSuccess.
TEST_F(FakeNcclTest, NonBlockingParentSplitsIntoABlockingCommunicator) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = nonBlocking();
  std::vector<ncclComm_t> comms(2), next(2);
  std::vector<CUstream> s = streams(2);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    use(r);
    ASSERT_EQ(ncclCommInitRankConfig(&comms[r], 2, id, r, &config), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclInProgress);
  for (ncclComm_t c : comms) ASSERT_EQ(settle(c), ncclSuccess);
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 1;
  EXPECT_EQ(ncclCommSplit(comms[0], 0, 0, &next[0], &blocking), ncclInProgress);
  ncclResult_t state = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress) << "rank 1 has not called split yet";
  EXPECT_EQ(ncclCommSplit(comms[1], 0, 1, &next[1], &blocking), ncclInProgress);
  for (ncclComm_t c : comms) EXPECT_EQ(settle(c), ncclSuccess);
  for (ncclComm_t c : next) EXPECT_EQ(settle(c), ncclSuccess);
  int32_t* a = alloc<int32_t>(1, 1);
  int32_t* b = alloc<int32_t>(1, 2);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a, a, 1, ncclInt32, ncclSum, next[0], s[0]), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b, b, 1, ncclInt32, ncclSum, next[1], s[1]), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << "blocking: no progress to poll";
  sync(s[0]);
  sync(s[1]);
  EXPECT_EQ(*a, 3);
  EXPECT_EQ(*b, 3);
  destroy(next);
  for (ncclComm_t c : comms) {
    EXPECT_EQ(ncclCommFinalize(c), ncclInProgress);
    EXPECT_EQ(settle(c), ncclSuccess);
  }
  destroy(comms);
}

// A rank that never arrives leaves the others in progress for ever.
TEST_F(FakeNcclTest, RankThatNeverArrivesStaysInProgress) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = nonBlocking();
  ncclComm_t comm = nullptr;
  use(0);
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 2, id, 0, &config), ncclInProgress);
  const auto until = std::chrono::steady_clock::now() + 50ms;
  while (std::chrono::steady_clock::now() < until) {
    ncclResult_t state = ncclSuccess;
    ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    ASSERT_EQ(state, ncclInProgress);
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
}

// ---- failures
// ------------------------------------------------------------------------------------

// A collective whose peer never calls stays blocked (as a kernel spins) until ncclCommRevoke; its
// output is not written; later calls and finalize are refused.
TEST_F(FakeNcclTest, StuckCollectiveEndsOnRevoke) {
  std::vector<ncclComm_t> comms = initAll(2);
  std::vector<CUstream> s = streams(2);
  int32_t* in = alloc<int32_t>(4, 1);
  int32_t* out = alloc<int32_t>(4, -5);
  ASSERT_EQ(ncclAllReduce(in, out, 4, ncclInt32, ncclSum, comms[0], s[0]), ncclSuccess);
  std::this_thread::sleep_for(30ms);
  EXPECT_TRUE(pending(s[0]));
  EXPECT_EQ(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT), ncclSuccess);
  sync(s[0]);
  EXPECT_EQ(out[0], -5) << "a revoked collective wrote its output";
  EXPECT_EQ(abortedSinceSetUp(), 1u);
  EXPECT_EQ(ncclAllReduce(in, out, 4, ncclInt32, ncclSum, comms[0], s[0]), ncclInvalidUsage);
  EXPECT_EQ(ncclCommFinalize(comms[0]), ncclInvalidUsage);
  // The peer arriving later completes the round with the input rank 0 posted before its revoke,
  // and writes nothing of rank 0's.
  int32_t* peerOut = alloc<int32_t>(4, -5);
  ASSERT_EQ(ncclAllReduce(in, peerOut, 4, ncclInt32, ncclSum, comms[1], s[1]), ncclSuccess);
  sync(s[1]);
  EXPECT_EQ(peerOut[0], 2);
  EXPECT_EQ(out[0], -5);
  destroy(comms);
}

TEST_F(FakeNcclTest, AbortEndsAStuckCollective) {
  std::vector<ncclComm_t> comms = initAll(2);
  std::vector<CUstream> s = streams(2);
  int32_t* buf = alloc<int32_t>(4, 1);
  ASSERT_EQ(ncclBroadcast(nullptr, buf, 4, ncclInt32, 1, comms[0], s[0]), ncclSuccess);
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(pending(s[0]));
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  sync(s[0]);
  EXPECT_EQ(abortedSinceSetUp(), 1u);
  EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
}

// Like NCCL over sockets after a peer died: the error is reported, later calls return it, and ops
// already waiting keep waiting until revoke.
TEST_F(FakeNcclTest, InjectedAsyncError) {
  std::vector<ncclComm_t> comms = initAll(2);
  std::vector<CUstream> s = streams(2);
  float* buf = alloc<float>(2);
  ASSERT_EQ(ncclAllReduce(buf, buf, 2, ncclFloat32, ncclMax, comms[0], s[0]), ncclSuccess);
  ASSERT_EQ(inject_(comms[0], ncclRemoteError), 0);
  ncclResult_t state = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclRemoteError);
  EXPECT_EQ(ncclAllReduce(buf, buf, 2, ncclFloat32, ncclMax, comms[0], s[0]), ncclRemoteError);
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(pending(s[0]));
  EXPECT_EQ(ncclCommGetAsyncError(comms[1], &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess) << "the error is the injected rank's only";
  EXPECT_EQ(ncclCommRevoke(comms[0], 0), ncclSuccess);
  sync(s[0]);
  EXPECT_EQ(inject_(comms[1], ncclNumResults), -1) << "not a result code";
  destroy(comms);
  EXPECT_EQ(inject_(nullptr, ncclRemoteError), -1) << "null: every live communicator; none left";
}

// Ranks 0 and 1 of 3 are stuck in a collective rank 2 never calls: a non-blocking shrink with
// NCCL_SHRINK_ABORT ends their ops, and the 2-rank communicator works.
TEST_F(FakeNcclTest, ShrinkExcludesARankThatNeverCalls) {
  std::vector<ncclComm_t> comms = initAll(3);
  std::vector<CUstream> s = streams(3);
  std::vector<int32_t*> buf = {alloc<int32_t>(2, 1), alloc<int32_t>(2, 2)};
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(ncclAllReduce(buf[r], buf[r], 2, ncclInt32, ncclSum, comms[r], s[r]), ncclSuccess);
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(pending(s[0]) && pending(s[1]));
  int excluded[] = {2};
  ncclConfig_t config = nonBlocking();
  std::vector<ncclComm_t> next(2);
  // The parents block (ncclCommInitAll): so does their shrink, as a call of the parent, until
  // both survivors called; the new communicators are non-blocking, as the config asks.
  ncclResult_t other = ncclInternalError;
  // Taken before the thread starts: rank 1 calls at least 20 ms after it, however late this
  // thread runs again (ThreadSanitizer on a loaded machine once took 12 ms).
  const auto start = std::chrono::steady_clock::now();
  std::thread second([&] {
    std::this_thread::sleep_for(20ms);
    other = ncclCommShrink(comms[1], excluded, 1, &next[1], &config, NCCL_SHRINK_ABORT);
  });
  EXPECT_EQ(ncclCommShrink(comms[0], excluded, 1, &next[0], &config, NCCL_SHRINK_ABORT),
            ncclSuccess);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 15ms) << "it waited for rank 1's call";
  second.join();
  EXPECT_EQ(other, ncclSuccess);
  for (ncclComm_t c : next) EXPECT_EQ(settle(c), ncclSuccess);
  sync(s[0]);
  sync(s[1]);
  EXPECT_EQ(abortedSinceSetUp(), 2u);
  EXPECT_EQ(buf[0][0], 1) << "the aborted collective wrote its output";
  for (int r = 0; r < 2; ++r) {
    int count = 0, rank = -1;
    EXPECT_EQ(ncclCommCount(next[r], &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(next[r], &rank), ncclSuccess);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(rank, r);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(ncclAllReduce(buf[r], buf[r], 2, ncclInt32, ncclSum, next[r], s[r]), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInProgress);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(settle(next[r]), ncclSuccess);
    sync(s[r]);
    EXPECT_EQ(buf[r][1], 3);
  }
  destroy(next);
  destroy(comms);
}

// Split by color, one thread per parent rank (blocking): ordered by (key, parent rank);
// NCCL_SPLIT_NOCOLOR takes part and gets NULL.
TEST_F(FakeNcclTest, SplitByColor) {
  std::vector<ncclComm_t> comms = initAll(3);
  std::vector<CUstream> s = streams(3);
  const int colors[3] = {5, NCCL_SPLIT_NOCOLOR, 5}, keys[3] = {1, 0, 0};
  std::vector<ncclComm_t> next(3, reinterpret_cast<ncclComm_t>(1));
  std::thread threads[3];
  for (int r = 0; r < 3; ++r)
    threads[r] = std::thread([&, r] {
      EXPECT_EQ(ncclCommSplit(comms[r], colors[r], keys[r], &next[r], nullptr), ncclSuccess);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(next[1], nullptr);
  ASSERT_TRUE(next[0] && next[2]);
  int rank0 = -1, rank2 = -1, count = 0;
  EXPECT_EQ(ncclCommUserRank(next[0], &rank0), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(next[2], &rank2), ncclSuccess);
  EXPECT_EQ(ncclCommCount(next[0], &count), ncclSuccess);
  EXPECT_EQ(rank0, 1) << "key 1 after key 0";
  EXPECT_EQ(rank2, 0);
  EXPECT_EQ(count, 2);
  int64_t* x = alloc<int64_t>(1, 4);
  int64_t* y = alloc<int64_t>(1, 5);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclReduce(x, x, 1, ncclInt64, ncclProd, 1, next[0], s[0]), ncclSuccess);
  EXPECT_EQ(ncclReduce(y, y, 1, ncclInt64, ncclProd, 1, next[2], s[2]), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  sync(s[0]);
  sync(s[2]);
  EXPECT_EQ(*x, 20) << "new rank 1 (parent rank 0) is the root";
  EXPECT_EQ(*y, 5);
  destroy(next);
  destroy(comms);
}

// ---- what NCCL refuses at the call (N11)
// ---------------------------------------------------------

// The float8 types exist from 2.24: before (BATON_FAKE_NCCL_VERSION, the registration
// 'fake-nccl-selftest-2.23'), a call on them is an invalid type, whatever the operation.
TEST_F(FakeNcclTest, Float8TypesFollowTheVersionReported) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  std::vector<ncclComm_t> comms = initAll(1);
  std::vector<CUstream> s = streams(1);
  unsigned char* buf = alloc<unsigned char>(8);
  for (ncclDataType_t t : {ncclFloat8e4m3, ncclFloat8e5m2}) {
    const ncclResult_t want = version < 22400 ? ncclInvalidArgument : ncclSuccess;
    EXPECT_EQ(ncclAllReduce(buf, buf, 8, t, ncclSum, comms[0], s[0]), want) << version;
    EXPECT_EQ(ncclBroadcast(buf, buf, 8, t, 0, comms[0], s[0]), want) << version;
    if (want != ncclSuccess) {
      EXPECT_NE(std::strstr(ncclGetLastError(nullptr), "no float8 types"), nullptr)
          << ncclGetLastError(nullptr);
    }
  }
  EXPECT_EQ(ncclAllReduce(buf, buf, 8, ncclInt8, ncclSum, comms[0], s[0]), ncclSuccess);
  sync(s[0]);
  destroy(comms);
}

// With one rank, ncclAvg of float8 (allReduce, reduce, reduceScatter): NCCL's one-rank path has
// no float8 kernel for it. Sum of float8, avg of float16 and an empty call are taken; a blocking
// communicator stays usable after the refusal, a non-blocking one keeps the error.
TEST_F(FakeNcclTest, OneRankAverageOfFloat8IsRefused) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  if (version < 22400) GTEST_SKIP() << "no float8 types before 2.24";
  std::vector<ncclComm_t> comms = initAll(1);
  std::vector<CUstream> s = streams(1);
  unsigned char* buf = alloc<unsigned char>(8, 0x38);  // 1.0 in e4m3
  for (ncclDataType_t t : {ncclFloat8e4m3, ncclFloat8e5m2}) {
    EXPECT_EQ(ncclAllReduce(buf, buf, 8, t, ncclAvg, comms[0], s[0]), ncclInvalidArgument);
    EXPECT_NE(std::strstr(ncclGetLastError(nullptr), "one rank"), nullptr)
        << ncclGetLastError(nullptr);
    EXPECT_EQ(ncclReduce(buf, buf, 8, t, ncclAvg, 0, comms[0], s[0]), ncclInvalidArgument);
    EXPECT_EQ(ncclReduceScatter(buf, buf, 8, t, ncclAvg, comms[0], s[0]), ncclInvalidArgument);
    EXPECT_EQ(ncclAllReduce(buf, buf, 0, t, ncclAvg, comms[0], s[0]), ncclSuccess) << "empty";
    EXPECT_EQ(ncclAllReduce(buf, buf, 8, t, ncclSum, comms[0], s[0]), ncclSuccess);
  }
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat16, ncclAvg, comms[0], s[0]), ncclSuccess);
  // Inside a group the refusal comes from the call, and ncclGroupEnd runs nothing of the group.
  unsigned char* other = alloc<unsigned char>(8, 7);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf, other, 8, ncclUint8, ncclSum, comms[0], s[0]), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf, buf, 8, ncclFloat8e4m3, ncclAvg, comms[0], s[0]),
            ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  sync(s[0]);
  EXPECT_EQ(other[0], 7) << "nothing of the refused group ran";
  destroy(comms);

  // Non-blocking: the refusal stays as the communicator's asynchronous error.
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = nonBlocking();
  ncclComm_t nb = nullptr;
  use(0);
  ASSERT_EQ(ncclCommInitRankConfig(&nb, 1, id, 0, &config), ncclInProgress);
  ASSERT_EQ(settle(nb), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf, buf, 8, ncclFloat8e4m3, ncclAvg, nb, s[0]), ncclInvalidArgument);
  ncclResult_t state = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(nb, &state), ncclSuccess);
  EXPECT_EQ(state, ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, buf, 8, ncclInt8, ncclSum, nb, s[0]), ncclInvalidArgument)
      << "later calls fail";
  EXPECT_EQ(ncclCommAbort(nb), ncclSuccess);
}

// A float8 reduction needs every device of the group at compute capability 9.0 or later (the
// lowest one, as NCCL's comm->minCompCap, fixed when the group was made); moving float8 bytes
// (allGather, broadcast, sends) does not.
TEST_F(FakeNcclTest, Float8ReductionsNeedSm90OnEveryDevice) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  if (version < 22400) GTEST_SKIP() << "no float8 types before 2.24";
  auto setCapability = sym<int (*)(int, int, int)>("batonFakeCudaSetComputeCapability");
  auto attribute =
      sym<CUresult (*)(int*, CUdevice_attribute, CUdevice)>(FAKE_SYM(cuDeviceGetAttribute));
  ASSERT_TRUE(setCapability && attribute);
  EXPECT_EQ(setCapability(1, 10, 0), -1);
  EXPECT_EQ(setCapability(16, 8, 0), -1);
  ASSERT_EQ(setCapability(1, 8, 6), 0);
  int major = 0, minor = 0;
  EXPECT_EQ(attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 1), CUDA_SUCCESS);
  EXPECT_EQ(attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 1), CUDA_SUCCESS);
  EXPECT_EQ(major * 10 + minor, 86);
  std::vector<ncclComm_t> comms = initAll(2);
  ASSERT_EQ(setCapability(1, 9, 0), 0);  // the group keeps what it saw when it was made
  std::vector<CUstream> s = streams(2);
  std::vector<unsigned char*> buf = {alloc<unsigned char>(16, 0x38), alloc<unsigned char>(16)};
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ncclAllReduce(buf[r], buf[r], 8, ncclFloat8e4m3, ncclSum, comms[r], s[r]),
              ncclInvalidArgument)
        << "rank " << r;
    EXPECT_NE(std::strstr(ncclGetLastError(nullptr), "sm90"), nullptr) << ncclGetLastError(nullptr);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(ncclBroadcast(buf[r], buf[r], 8, ncclFloat8e5m2, 0, comms[r], s[r]), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 2; ++r) sync(s[r]);
  EXPECT_EQ(buf[1][0], 0x38) << "the broadcast ran";
  destroy(comms);
  // A group made now sees 9.0 on both devices.
  comms = initAll(2);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(ncclAllReduce(buf[r], buf[r], 8, ncclFloat8e4m3, ncclSum, comms[r], s[r]),
              ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 2; ++r) sync(s[r]);
  destroy(comms);
}

}  // namespace
