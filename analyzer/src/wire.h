// Bytes that cross processes in a distributed analysis (exchange.h): values
// appended in order and read back in the same order. Both ends are the same
// build on the same kind of machine (one MPI job), so values travel as their
// bytes.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace prof::analysis::detail {

struct WireOut {
  std::string buf;
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    buf.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  template <class T>
  void put_array(const T* p, size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(n);
    buf.append(reinterpret_cast<const char*>(p), n * sizeof(T));
  }
  template <class T>
  void put_vec(const std::vector<T>& v) { put_array(v.data(), v.size()); }
  void put_str(const std::string& s) { put_array(s.data(), s.size()); }
};

struct WireIn {
  const char* p;
  const char* end;
  explicit WireIn(const std::string& s) : p(s.data()), end(s.data() + s.size()) {}
  bool done() const { return p == end; }
  void need(size_t n) const {
    if (static_cast<size_t>(end - p) < n) throw std::runtime_error("distributed analysis: short message");
  }
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  // n records of T, in place (the buffer outlives the use).
  template <class T>
  const char* get_array(size_t* n) {
    *n = get<uint64_t>();
    need(*n * sizeof(T));
    const char* at = p;
    p += *n * sizeof(T);
    return at;
  }
  template <class T>
  std::vector<T> get_vec() {
    size_t n;
    const char* at = get_array<T>(&n);
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), at, n * sizeof(T));
    return v;
  }
  std::string get_str() {
    size_t n;
    const char* at = get_array<char>(&n);
    return std::string(at, n);
  }
};

}  // namespace prof::analysis::detail
