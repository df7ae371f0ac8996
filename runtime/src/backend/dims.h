// SPDX-License-Identifier: Apache-2.0
// Internal: Dims, the shape and strides of a kernel view (backend/kernels.h), a SmallVector of
// int64_t. Up to kInline elements live inside the object, more on the heap, so that making and
// copying the views of the common ranks allocates nothing: a small op makes half a dozen views, and
// their allocations were a third of its cost. It converts implicitly from and to Shape
// (std::vector<int64_t>), so views take a Shape where they took one before; the conversion to Shape
// allocates, and hot paths avoid it. (Boost's and Abseil's inline vectors would do the storage, but
// neither converts from and to std::vector, and this much code does not warrant a new dependency.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <type_traits>
#include <vector>

namespace spmd::internal {

// A vector of trivially copyable T that holds up to kInline elements without allocating.
template <class T, size_t kInline>
class SmallVector {
 public:
  static constexpr size_t kCapacity = kInline;
  SmallVector() = default;
  explicit SmallVector(size_t n, T value = T{}) : size_(n) {
    if (n <= kInline) {
      for (size_t i = 0; i < kInline; ++i) inline_[i] = value;  // (fixed count: no memset call)
    } else {
      heap_.assign(n, value);
    }
  }
  SmallVector(std::initializer_list<T> values) : SmallVector(values.begin(), values.end()) {}
  template <class It>
  requires(!std::is_integral_v<It>) SmallVector(It first, It last) {
    if constexpr (std::random_access_iterator<It>) {
      size_ = static_cast<size_t>(last - first);
      if (size_ <= kInline) {
        // A fixed count, unrolled, instead of a memmove call for a handful of elements.
        for (size_t i = 0; i < kInline; ++i) {
          if (i < size_) inline_[i] = first[i];
        }
      } else {
        heap_.assign(first, last);
      }
    } else {
      for (; first != last; ++first) push_back(*first);
    }
  }
  SmallVector(const std::vector<T>& values)  // NOLINT(google-explicit-constructor)
      : SmallVector(values.begin(), values.end()) {}
  // Copies touch the heap only when it is in use: views are copied and moved on every op, and the
  // vector's own copy costs more than the inline elements. A moved-from vector is empty if it held
  // its elements on the heap, else unchanged; either way usable.
  SmallVector(const SmallVector& other) : size_(other.size_) {
    std::copy_n(other.inline_, kInline, inline_);
    if (size_ > kInline) heap_ = other.heap_;
  }
  SmallVector(SmallVector&& other) noexcept : size_(other.size_) {
    std::copy_n(other.inline_, kInline, inline_);
    if (size_ > kInline) {
      heap_ = std::move(other.heap_);
      other.size_ = 0;
    }
  }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this == &other) return *this;
    std::copy_n(other.inline_, kInline, inline_);
    if (other.size_ > kInline) {
      heap_ = std::move(other.heap_);
    } else if (size_ > kInline) {
      heap_.clear();
    }
    size_ = other.size_;
    if (size_ > kInline) other.size_ = 0;
    return *this;
  }
  operator std::vector<T>() const { return {begin(), end()}; }  // NOLINT

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return size_ <= kInline ? inline_ : heap_.data(); }
  const T* data() const { return size_ <= kInline ? inline_ : heap_.data(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(const T& v) {
    if (size_ < kInline) {
      inline_[size_++] = v;
      return;
    }
    if (size_ == kInline) heap_.assign(inline_, inline_ + kInline);
    heap_.push_back(v);
    ++size_;
  }
  template <class It>
  void assign(It first, It last) {
    const auto n = static_cast<size_t>(last - first);
    if (n <= kInline) {
      heap_.clear();
      std::copy(first, last, inline_);
    } else {
      heap_.assign(first, last);
    }
    size_ = n;
  }
  void clear() {
    size_ = 0;
    heap_.clear();
  }
  void resize(size_t n, T value = T{}) {
    while (size_ > n) pop_back();
    while (size_ < n) push_back(value);
  }
  void pop_back() {
    if (size_ == kInline + 1) {
      std::copy_n(heap_.begin(), kInline, inline_);
      heap_.clear();
    } else if (size_ > kInline) {
      heap_.pop_back();
    }
    --size_;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  size_t size_ = 0;
  T inline_[kInline] = {};
  std::vector<T> heap_;  // every element, when there are more than kInline
};

// Shapes and strides of kernel views, in elements.
using Dims = SmallVector<int64_t, 6>;

}  // namespace spmd::internal
