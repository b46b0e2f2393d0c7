// What the cross-process buffer tests (shared_tests.cpp, shared_peer.cpp) write into a shared
// buffer and check on the other side: a fill of a 32-bit pattern over the whole buffer, then an
// update of its first kTagBytes bytes, so that both command kinds are seen across processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace baton_test {

constexpr size_t kTagBytes = 16;

// The bytes of the update that follows the fill of `pattern`.
inline std::vector<uint8_t> tagOf(uint32_t pattern) {
  std::vector<uint8_t> tag(kTagBytes);
  for (size_t i = 0; i < kTagBytes; ++i) tag[i] = static_cast<uint8_t>(pattern * 7 + i * 13 + 1);
  return tag;
}

// Byte `i` of a buffer written with `pattern`.
inline uint8_t expectedByte(uint32_t pattern, size_t i) {
  if (i < kTagBytes) return tagOf(pattern)[i];
  uint8_t word[4];
  std::memcpy(word, &pattern, 4);
  return word[i % 4];
}

// "" when `data` holds what `pattern` writes, else where it first differs.
inline std::string checkBytes(const uint8_t* data, size_t size, uint32_t pattern) {
  for (size_t i = 0; i < size; ++i)
    if (data[i] != expectedByte(pattern, i))
      return "byte " + std::to_string(i) + " is " + std::to_string(data[i]) + ", expected " +
             std::to_string(expectedByte(pattern, i)) + " (pattern " + std::to_string(pattern) +
             ")";
  return "";
}

}  // namespace baton_test
