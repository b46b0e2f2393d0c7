// Elements of every collective type on the host, for the collective tests
// (collective_test_support.hpp) and the multi-process rank program (collective_rank.cpp): exact
// encoding and decoding of small values in all twelve ElementTypes (the float8, float16 and
// bfloat16 formats written out, not taken from the library under test), and the reduction a
// collective should compute, as the reference both check against. No gtest.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "baton/baton.hpp"

namespace baton_test {

using baton::elementSize;
using baton::ElementType;
using baton::ReduceOp;

// A small float format: `ebits` exponent bits, `mbits` mantissa bits, exponent bias `bias`; for
// the finite values the tests use (float16, bfloat16, float8 e4m3 and e5m2).
inline uint32_t encodeMini(double v, int ebits, int mbits, int bias) {
  uint32_t sign = 0;
  if (v < 0) {
    sign = 1u << (ebits + mbits);
    v = -v;
  }
  if (v == 0) return sign;
  int e = static_cast<int>(std::floor(std::log2(v)));
  if (e + bias <= 0) {  // subnormal
    const double m = v / std::ldexp(1.0, 1 - bias - mbits);
    return sign | static_cast<uint32_t>(std::nearbyint(m));
  }
  double frac = v / std::ldexp(1.0, e) - 1.0;
  uint32_t m = static_cast<uint32_t>(std::nearbyint(frac * (1u << mbits)));
  if (m == (1u << mbits)) {
    m = 0;
    ++e;
  }
  return sign | (static_cast<uint32_t>(e + bias) << mbits) | m;
}
inline double decodeMini(uint32_t bits, int ebits, int mbits, int bias) {
  const bool negative = (bits >> (ebits + mbits)) & 1;
  const uint32_t e = (bits >> mbits) & ((1u << ebits) - 1);
  const uint32_t m = bits & ((1u << mbits) - 1);
  double v =
      e == 0 ? std::ldexp(static_cast<double>(m), 1 - bias - mbits)
             : std::ldexp(1.0 + static_cast<double>(m) / (1u << mbits), static_cast<int>(e) - bias);
  return negative ? -v : v;
}

// Writes `v` (exactly representable in `type`) at p.
inline void encode(ElementType type, double v, void* p) {
  switch (type) {
    case ElementType::Int8: *static_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
    case ElementType::Uint8: *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v); break;
    case ElementType::Int32: *static_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
    case ElementType::Uint32: *static_cast<uint32_t*>(p) = static_cast<uint32_t>(v); break;
    case ElementType::Int64: *static_cast<int64_t*>(p) = static_cast<int64_t>(v); break;
    case ElementType::Uint64: *static_cast<uint64_t*>(p) = static_cast<uint64_t>(v); break;
    case ElementType::Float32: *static_cast<float*>(p) = static_cast<float>(v); break;
    case ElementType::Float64: *static_cast<double*>(p) = v; break;
    case ElementType::Float16: *static_cast<uint16_t*>(p) = encodeMini(v, 5, 10, 15); break;
    case ElementType::Bfloat16: *static_cast<uint16_t*>(p) = encodeMini(v, 8, 7, 127); break;
    case ElementType::Float8E4M3: *static_cast<uint8_t*>(p) = encodeMini(v, 4, 3, 7); break;
    case ElementType::Float8E5M2: *static_cast<uint8_t*>(p) = encodeMini(v, 5, 2, 15); break;
  }
}
inline double decode(ElementType type, const void* p) {
  switch (type) {
    case ElementType::Int8: return *static_cast<const int8_t*>(p);
    case ElementType::Uint8: return *static_cast<const uint8_t*>(p);
    case ElementType::Int32: return *static_cast<const int32_t*>(p);
    case ElementType::Uint32: return *static_cast<const uint32_t*>(p);
    case ElementType::Int64: return static_cast<double>(*static_cast<const int64_t*>(p));
    case ElementType::Uint64: return static_cast<double>(*static_cast<const uint64_t*>(p));
    case ElementType::Float32: return *static_cast<const float*>(p);
    case ElementType::Float64: return *static_cast<const double*>(p);
    case ElementType::Float16: return decodeMini(*static_cast<const uint16_t*>(p), 5, 10, 15);
    case ElementType::Bfloat16: return decodeMini(*static_cast<const uint16_t*>(p), 8, 7, 127);
    case ElementType::Float8E4M3: return decodeMini(*static_cast<const uint8_t*>(p), 4, 3, 7);
    case ElementType::Float8E5M2: return decodeMini(*static_cast<const uint8_t*>(p), 5, 2, 15);
  }
  return 0;
}

inline std::vector<uint8_t> encodeAll(ElementType type, const std::vector<double>& values) {
  std::vector<uint8_t> bytes(values.size() * elementSize(type));
  for (size_t i = 0; i < values.size(); ++i) encode(type, values[i], &bytes[i * elementSize(type)]);
  return bytes;
}

inline const ElementType kAllTypes[] = {
    ElementType::Int8,    ElementType::Uint8,    ElementType::Int32,      ElementType::Uint32,
    ElementType::Int64,   ElementType::Uint64,   ElementType::Float16,    ElementType::Float32,
    ElementType::Float64, ElementType::Bfloat16, ElementType::Float8E4M3, ElementType::Float8E5M2};

// The mantissa bits of a float type; -1 for an integer type.
inline int mantissaBits(ElementType type) {
  switch (type) {
    case ElementType::Float16: return 10;
    case ElementType::Float32: return 23;
    case ElementType::Float64: return 52;
    case ElementType::Bfloat16: return 7;
    case ElementType::Float8E4M3: return 3;
    case ElementType::Float8E5M2: return 2;
    default: return -1;
  }
}

// What a reduction of the ranks' values `v` (in rank order) gives, as NCCL defines it: Avg is the
// sum divided by the rank count, rounded toward zero for integer types.
inline double reduceHost(ReduceOp op, const std::vector<double>& v, ElementType type) {
  double acc = v[0];
  for (size_t k = 1; k < v.size(); ++k) {
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: acc += v[k]; break;
      case ReduceOp::Prod: acc *= v[k]; break;
      case ReduceOp::Max: acc = std::max(acc, v[k]); break;
      case ReduceOp::Min: acc = std::min(acc, v[k]); break;
    }
  }
  if (op == ReduceOp::Avg) {
    acc /= static_cast<double>(v.size());
    if (mantissaBits(type) < 0) acc = std::trunc(acc);  // integers: rounded toward zero
  }
  return acc;
}

}  // namespace baton_test
