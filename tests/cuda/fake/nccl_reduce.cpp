// The fake NCCL's arithmetic (fake_cuda.hpp, "NCCL"): the twelve element types, the five reduction
// operators, and where each collective puts what, once every rank's input is known.
//
// Integers combine in their own type (sums and products wrap; ncclAvg sums, then divides with
// truncation toward zero, as NCCL's SumPostDiv does). Floating types are read into a double,
// combined, and rounded back to the element type after each step, in rank order 0..n-1, as
// NCCL's kernels round per step (a double holds float32, half, bfloat16 and fp8 values and their
// sums and products exactly enough that the one rounding to the type is the correct one). The
// small types are encoded here: half (IEEE binary16, overflow to infinity), bfloat16 (overflow to
// infinity), fp8 e4m3 (OCP: bias 7, max 448, no infinities, NaN S.1111.111) and e5m2 (OCP: bias
// 15, infinities), with round to nearest even; the fp8 types saturate to their largest finite
// value, as cuda_fp8.h's conversions (__NV_SATFINITE) that NCCL's fp8 kernels use do.
#include <nccl.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "fake_cuda.hpp"

namespace fake_cuda::nccl {
namespace {

// A binary floating-point format of at most 16 bits.
struct SmallFloat {
  int expBits, manBits, bias;
  bool infinities;  // the top exponent holds infinities and NaNs (IEEE-like)
  bool saturate;    // overflow gives the largest finite value, not infinity
  double maxFinite;
  uint32_t maxFiniteBits, infBits, nanBits;
};
constexpr SmallFloat kHalf{5, 10, 15, true, false, 65504.0, 0x7bff, 0x7c00, 0x7e00};
constexpr SmallFloat kBfloat16{8,      7,      127,   true, false, 3.3895313892515355e38,
                               0x7f7f, 0x7f80, 0x7fc0};
constexpr SmallFloat kE4m3{4, 3, 7, false, true, 448.0, 0x7e, 0x7f, 0x7f};
constexpr SmallFloat kE5m2{5, 2, 15, true, true, 57344.0, 0x7b, 0x7c, 0x7f};

double decode(uint32_t bits, const SmallFloat& f) {
  const uint32_t manMask = (1u << f.manBits) - 1, expMax = (1u << f.expBits) - 1;
  const uint32_t man = bits & manMask;
  const uint32_t exp = (bits >> f.manBits) & expMax;
  const double sign = (bits >> (f.expBits + f.manBits)) & 1 ? -1.0 : 1.0;
  if (f.infinities && exp == expMax) return man ? std::nan("") : sign * INFINITY;
  if (!f.infinities && exp == expMax && man == manMask) return std::nan("");
  if (exp == 0) return sign * std::ldexp(static_cast<double>(man), 1 - f.bias - f.manBits);
  return sign * std::ldexp(static_cast<double>(man | (1u << f.manBits)),
                           static_cast<int>(exp) - f.bias - f.manBits);
}

// Round to nearest even.
uint32_t encode(double v, const SmallFloat& f) {
  const uint32_t sign = std::signbit(v) ? 1u << (f.expBits + f.manBits) : 0;
  if (std::isnan(v)) return sign | f.nanBits;
  const double a = std::fabs(v);
  const uint32_t overflow = sign | (f.saturate ? f.maxFiniteBits : f.infBits);
  if (std::isinf(a)) return overflow;
  if (a == 0) return sign;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): the unbiased exponent is e - 1
  const int unbiased = e - 1, minExp = 1 - f.bias;
  const int quantum = (unbiased < minExp ? minExp : unbiased) - f.manBits;
  const double steps = std::nearbyint(std::ldexp(a, -quantum));  // the default mode: to even
  if (std::ldexp(steps, quantum) > f.maxFinite) return overflow;
  auto r = static_cast<uint32_t>(steps);
  // A subnormal's steps are its mantissa field; 2^manBits of them is the smallest normal, which
  // encodes the same way.
  if (unbiased < minExp) return sign | r;
  uint32_t exp = static_cast<uint32_t>(unbiased + f.bias);
  if (r == (2u << f.manBits)) {  // rounded up into the next binade
    r >>= 1;
    ++exp;
  }
  return sign | (exp << f.manBits) | (r - (1u << f.manBits));
}

double load(int type, const unsigned char* p, size_t i) {
  switch (type) {
    case ncclFloat32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case ncclFloat64: {
      double v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
    case ncclFloat16:
    case ncclBfloat16: {
      uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      return decode(b, type == ncclFloat16 ? kHalf : kBfloat16);
    }
    case ncclFloat8e4m3: return decode(p[i], kE4m3);
    default: return decode(p[i], kE5m2);
  }
}

void store(int type, unsigned char* p, size_t i, double v) {
  switch (type) {
    case ncclFloat32: {
      const auto f = static_cast<float>(v);  // round to nearest even, overflow to infinity
      std::memcpy(p + 4 * i, &f, 4);
      return;
    }
    case ncclFloat64: std::memcpy(p + 8 * i, &v, 8); return;
    case ncclFloat16:
    case ncclBfloat16: {
      const auto b = static_cast<uint16_t>(encode(v, type == ncclFloat16 ? kHalf : kBfloat16));
      std::memcpy(p + 2 * i, &b, 2);
      return;
    }
    case ncclFloat8e4m3: p[i] = static_cast<unsigned char>(encode(v, kE4m3)); return;
    default: p[i] = static_cast<unsigned char>(encode(v, kE5m2)); return;
  }
}

template <class T>
void combineIntegers(int op, unsigned char* accBytes, const unsigned char* inBytes, size_t count) {
  using U = std::make_unsigned_t<T>;
  for (size_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, accBytes + i * sizeof(T), sizeof(T));
    std::memcpy(&b, inBytes + i * sizeof(T), sizeof(T));
    switch (op) {
      case ncclProd:
        a = static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
        break;
      case ncclMax: a = b > a ? b : a; break;
      case ncclMin: a = b < a ? b : a; break;
      default:
        a = static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));  // sum, avg
    }
    std::memcpy(accBytes + i * sizeof(T), &a, sizeof(T));
  }
}

template <class T>
void divideIntegers(unsigned char* accBytes, size_t count, int n) {
  for (size_t i = 0; i < count; ++i) {
    T a;
    std::memcpy(&a, accBytes + i * sizeof(T), sizeof(T));
    a = static_cast<T>(a / static_cast<T>(n));  // C++ division truncates toward zero
    std::memcpy(accBytes + i * sizeof(T), &a, sizeof(T));
  }
}

// acc = acc (op) in, element by element, rounded to the type.
void combine(int type, int op, unsigned char* acc, const unsigned char* in, size_t count) {
  switch (type) {
    case ncclInt8: return combineIntegers<int8_t>(op, acc, in, count);
    case ncclUint8: return combineIntegers<uint8_t>(op, acc, in, count);
    case ncclInt32: return combineIntegers<int32_t>(op, acc, in, count);
    case ncclUint32: return combineIntegers<uint32_t>(op, acc, in, count);
    case ncclInt64: return combineIntegers<int64_t>(op, acc, in, count);
    case ncclUint64: return combineIntegers<uint64_t>(op, acc, in, count);
    default: break;
  }
  for (size_t i = 0; i < count; ++i) {
    const double a = load(type, acc, i), b = load(type, in, i);
    double r;
    switch (op) {
      case ncclProd: r = a * b; break;
      case ncclMax: r = std::fmax(a, b); break;
      case ncclMin: r = std::fmin(a, b); break;
      default: r = a + b;  // sum, avg
    }
    store(type, acc, i, r);
  }
}

// ncclAvg's last step: the sum divided by the number of ranks.
void divide(int type, unsigned char* acc, size_t count, int n) {
  switch (type) {
    case ncclInt8: return divideIntegers<int8_t>(acc, count, n);
    case ncclUint8: return divideIntegers<uint8_t>(acc, count, n);
    case ncclInt32: return divideIntegers<int32_t>(acc, count, n);
    case ncclUint32: return divideIntegers<uint32_t>(acc, count, n);
    case ncclInt64: return divideIntegers<int64_t>(acc, count, n);
    case ncclUint64: return divideIntegers<uint64_t>(acc, count, n);
    default: break;
  }
  for (size_t i = 0; i < count; ++i) store(type, acc, i, load(type, acc, i) / n);
}

// The reduction over every rank of `count` elements at element offset `offset` of each input.
std::vector<unsigned char> reduceSlot(int type, int op, size_t count, size_t offset,
                                      const std::vector<std::vector<unsigned char>>& inputs) {
  const size_t es = elementSize(type), bytes = count * es;
  std::vector<unsigned char> acc(inputs[0].begin() + static_cast<ptrdiff_t>(offset * es),
                                 inputs[0].begin() + static_cast<ptrdiff_t>(offset * es + bytes));
  for (size_t r = 1; r < inputs.size(); ++r)
    combine(type, op, acc.data(), inputs[r].data() + offset * es, count);
  if (op == ncclAvg) divide(type, acc.data(), count, static_cast<int>(inputs.size()));
  return acc;
}

void put(void* out, size_t offsetBytes, const unsigned char* src, size_t bytes) {
  if (out && bytes) std::memcpy(static_cast<unsigned char*>(out) + offsetBytes, src, bytes);
}

}  // namespace

size_t elementSize(int type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

void compute(Collective kind, int type, int op, size_t count, int root,
             const std::vector<std::vector<unsigned char>>& inputs,
             const std::vector<void*>& outputs) {
  const size_t n = inputs.size(), bytes = count * elementSize(type);
  switch (kind) {
    case Collective::AllReduce:
    case Collective::Reduce: {
      const std::vector<unsigned char> sum = reduceSlot(type, op, count, 0, inputs);
      for (size_t r = 0; r < n; ++r)
        if (kind == Collective::AllReduce || static_cast<int>(r) == root)
          put(outputs[r], 0, sum.data(), bytes);
      return;
    }
    case Collective::Broadcast:
      for (size_t r = 0; r < n; ++r) put(outputs[r], 0, inputs[root].data(), bytes);
      return;
    case Collective::AllGather:
      for (size_t r = 0; r < n; ++r)
        for (size_t p = 0; p < n; ++p) put(outputs[r], p * bytes, inputs[p].data(), bytes);
      return;
    case Collective::ReduceScatter:
      for (size_t r = 0; r < n; ++r) {
        if (!outputs[r]) continue;
        const std::vector<unsigned char> part = reduceSlot(type, op, count, r * count, inputs);
        put(outputs[r], 0, part.data(), bytes);
      }
      return;
    case Collective::AlltoAll:
      for (size_t r = 0; r < n; ++r)
        for (size_t p = 0; p < n; ++p)
          put(outputs[p], r * bytes, inputs[r].data() + p * bytes, bytes);
      return;
  }
}

}  // namespace fake_cuda::nccl
