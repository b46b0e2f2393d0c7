/// \file
/// baton/span.hpp — a minimal non-owning view of contiguous elements (C++17 has no std::span).
///
/// Ownership: a Span never owns what it points at; the caller keeps the elements alive for the
/// duration of the call it is passed to. baton copies everything it needs before returning.
/// Thread safety: a Span is a value; reading it from several threads is safe.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <vector>

namespace baton {

/// A pointer and a count of contiguous elements of type `T`, the way baton takes lists
/// (SubmitInfo's waits, Queue::submit's batches, host waits). Made implicitly from one element,
/// a C array, a std::array, a std::vector or a braced list. Never owns the elements (see
/// baton/span.hpp).
template <class T>
class Span {
 public:
  /// An empty span (data() null, size() 0).
  constexpr Span() noexcept = default;
  /// The `size` elements starting at `data` (which may be null when size is 0).
  constexpr Span(T* data, size_t size) noexcept : data_(data), size_(size) {}
  /// One element, so that `submit(info)` reads like `submit({info})`.
  constexpr Span(T& one) noexcept : data_(&one), size_(1) {}  // NOLINT(google-explicit-constructor)
  /// The elements of a C array.
  template <size_t N>
  constexpr Span(T (&array)[N]) noexcept : data_(array), size_(N) {}  // NOLINT
  /// The elements of a std::array.
  template <class U, size_t N>
  constexpr Span(std::array<U, N>& array) noexcept : data_(array.data()), size_(N) {}  // NOLINT
  /// The elements of a const std::array.
  template <class U, size_t N>
  constexpr Span(const std::array<U, N>& array) noexcept  // NOLINT
      : data_(array.data()), size_(N) {}
  /// The elements of a std::vector, as they are now (a later resize may move them).
  template <class U, class A>
  Span(std::vector<U, A>& v) noexcept : data_(v.data()), size_(v.size()) {}  // NOLINT
  /// The elements of a const std::vector, as they are now.
  template <class U, class A>
  Span(const std::vector<U, A>& v) noexcept : data_(v.data()), size_(v.size()) {}  // NOLINT
  /// The elements of a braced list: `queue.submit({info1, info2})`.
  /// Valid only for the full expression that creates it: use it for arguments, never store it.
  /// (GCC's -Winit-list-lifetime flags exactly this intended use, hence the pragma.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr Span(std::initializer_list<std::remove_const_t<T>> list) noexcept  // NOLINT
      : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  /// The first element, or null for an empty span made without data.
  constexpr T* data() const noexcept { return data_; }
  /// The number of elements.
  constexpr size_t size() const noexcept { return size_; }
  /// True when size() is 0.
  constexpr bool empty() const noexcept { return size_ == 0; }
  /// Element `i`; `i` must be below size() (not checked).
  constexpr T& operator[](size_t i) const noexcept { return data_[i]; }
  /// The first element, for range-based for loops.
  constexpr T* begin() const noexcept { return data_; }
  /// One past the last element.
  constexpr T* end() const noexcept { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace baton
