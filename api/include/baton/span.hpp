// baton/span.hpp — a minimal non-owning view of contiguous elements (C++17 has no std::span).
//
// Ownership: a Span never owns what it points at; the caller keeps the elements alive for the
// duration of the call it is passed to. baton copies everything it needs before returning.
// Thread safety: a Span is a value; reading it from several threads is safe.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <vector>

namespace baton {

template <class T>
class Span {
 public:
  constexpr Span() noexcept = default;
  constexpr Span(T* data, size_t size) noexcept : data_(data), size_(size) {}
  // One element, so that `submit(info)` reads like `submit({info})`.
  constexpr Span(T& one) noexcept : data_(&one), size_(1) {}  // NOLINT(google-explicit-constructor)
  template <size_t N>
  constexpr Span(T (&array)[N]) noexcept : data_(array), size_(N) {}  // NOLINT
  template <class U, size_t N>
  constexpr Span(std::array<U, N>& array) noexcept : data_(array.data()), size_(N) {}  // NOLINT
  template <class U, size_t N>
  constexpr Span(const std::array<U, N>& array) noexcept  // NOLINT
      : data_(array.data()), size_(N) {}
  template <class U, class A>
  Span(std::vector<U, A>& v) noexcept : data_(v.data()), size_(v.size()) {}  // NOLINT
  template <class U, class A>
  Span(const std::vector<U, A>& v) noexcept : data_(v.data()), size_(v.size()) {}  // NOLINT
  // Valid only for the full expression that creates it: use it for arguments, never store it.
  // (GCC's -Winit-list-lifetime flags exactly this intended use, hence the pragma.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr Span(std::initializer_list<std::remove_const_t<T>> list) noexcept  // NOLINT
      : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  constexpr T* data() const noexcept { return data_; }
  constexpr size_t size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr T& operator[](size_t i) const noexcept { return data_[i]; }
  constexpr T* begin() const noexcept { return data_; }
  constexpr T* end() const noexcept { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace baton
