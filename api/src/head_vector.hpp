// HeadVector: a vector whose oldest elements leave from the front without moving the others, in
// place of erasing there (which moves every later element) or of a std::deque (which allocates a
// node every few elements and divides on each index). Dropped elements are reset to a
// default-constructed value, so what they held goes at once; the dropped front is reclaimed when
// it is at least as long as what is left, so that the move of the rest is paid for by the
// elements dropped and the storage stays bounded by twice the live elements (plus kCompactAfter).
//
// Used for what a queue has in flight (the completion thread's records) and a semaphore's
// pending device signals: both are appended at the back and retired from the front, and both
// used to retire by erasing, which cost O(live elements) per retirement with a lock held while
// a queue ran ahead of its completions.
//
// Not thread safe: its owner's lock or thread guards it.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace baton::core {

template <class T, size_t kCompactAfter>
class HeadVector {
 public:
  bool empty() const noexcept { return head_ == v_.size(); }
  size_t size() const noexcept { return v_.size() - head_; }
  T& operator[](size_t i) noexcept { return v_[head_ + i]; }
  const T& operator[](size_t i) const noexcept { return v_[head_ + i]; }
  T& front() noexcept { return v_[head_]; }
  T& back() noexcept { return v_.back(); }
  const T& back() const noexcept { return v_.back(); }
  T* begin() noexcept { return v_.data() + head_; }
  T* end() noexcept { return v_.data() + v_.size(); }
  const T* begin() const noexcept { return v_.data() + head_; }
  const T* end() const noexcept { return v_.data() + v_.size(); }

  void push_back(T&& x) { v_.push_back(std::move(x)); }
  // Inserts before `at` (an element of this vector, or end()).
  void insert(const T* at, T&& x) { v_.insert(v_.begin() + (at - v_.data()), std::move(x)); }

  // Takes every element of `in`, which is left empty. When nothing is live, `in`'s storage is
  // swapped in (no element moves) and `in` gets this one's, emptied.
  void append(std::vector<T>& in) {
    if (empty()) {
      v_.clear();  // dropped elements, already reset (popFront)
      head_ = 0;
      v_.swap(in);
      return;
    }
    for (T& x : in) v_.push_back(std::move(x));
    in.clear();
  }

  // Drops the n oldest elements (n <= size()).
  void popFront(size_t n) {
    if (n == size()) {
      clear();  // keeps the storage
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      T& x = v_[head_ + i];
      std::destroy_at(&x);
      std::construct_at(&x);  // an empty element in its place, destroyed cheaply later
    }
    head_ += n;
    if (head_ >= kCompactAfter && head_ >= size()) {
      v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  void clear() noexcept {
    v_.clear();
    head_ = 0;
  }

 private:
  std::vector<T> v_;
  size_t head_ = 0;  // v_[0, head_) are dropped, default-constructed elements
};

}  // namespace baton::core
