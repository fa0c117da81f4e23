// A vector of trivially copyable elements that keeps its first N inline: most Earley
// sets hold one to four items, and a heap block per set was a fifth of a cold mask's
// instructions (malloc and free of the sets a walk interns).
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace xgr2 {

template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "SmallVector copies its elements with memcpy");

 public:
  SmallVector() = default;
  SmallVector(const SmallVector& other) { *this = other; }
  SmallVector(SmallVector&& other) noexcept { *this = std::move(other); }
  ~SmallVector() { Free(); }

  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      size_ = 0;
      Grow(other.size_);
      if (other.size_) std::memcpy(data_, other.data_, other.size_ * sizeof(T));
      size_ = other.size_;
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this == &other) return *this;
    if (other.data_ == other.inline_) {  // inline elements are copied
      *this = static_cast<const SmallVector&>(other);
      other.size_ = 0;
      return *this;
    }
    Free();  // take the other's heap block
    data_ = other.data_, size_ = other.size_, capacity_ = other.capacity_;
    other.data_ = other.inline_, other.size_ = 0, other.capacity_ = N;
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Bytes held outside the object (0 while the elements fit inline).
  size_t heap_bytes() const { return data_ == inline_ ? 0 : capacity_ * sizeof(T); }

  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

  void push_back(const T& value) {
    if (size_ == capacity_) {
      T copy = value;  // `value` may live in the block that grows
      Grow(2 * capacity_);
      data_[size_++] = copy;
      return;
    }
    data_[size_++] = value;
  }
  void clear() { size_ = 0; }
  // New elements are value-initialized.
  void resize(size_t n) {
    Grow(n);
    for (size_t i = size_; i < n; ++i) data_[i] = T{};
    size_ = n;
  }

 private:
  // Room for n elements, the first size_ kept.
  void Grow(size_t n) {
    if (n <= capacity_) return;
    T* block = static_cast<T*>(std::malloc(n * sizeof(T)));
    if (!block) throw std::bad_alloc();
    if (size_) std::memcpy(block, data_, size_ * sizeof(T));
    Free();
    data_ = block, capacity_ = n;
  }
  void Free() {
    if (data_ != inline_) std::free(data_);
    data_ = inline_, capacity_ = N;
  }

  T* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = N;
  T inline_[N];
};

}  // namespace xgr2
