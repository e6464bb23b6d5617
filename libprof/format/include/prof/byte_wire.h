// Values appended to a byte string in order and read back in the same order:
// what crosses processes in a distributed analysis and a rank file's
// description (RankTrace::describe). Both ends are the same build on the same
// kind of machine (one MPI job), so values travel as their bytes; a count is
// a uint64_t before its items.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace prof::wire {

struct Out {
  std::string buf;
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    buf.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  // The bytes put_array(p, n) appends (to reserve them at once).
  template <class T>
  static constexpr size_t array_bytes(size_t n) {
    return sizeof(uint64_t) + n * sizeof(T);
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

// Reads what Out wrote; reading past the end (a short or garbled string)
// throws std::runtime_error with `short_message`.
struct In {
  const char* p;
  const char* end;
  const char* short_message;
  In(const char* begin, const char* stop, const char* message) : p(begin), end(stop), short_message(message) {}
  bool done() const { return p == end; }
  void need(size_t n) const {
    if (static_cast<size_t>(end - p) < n) throw std::runtime_error(short_message);
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
    if (*n > static_cast<size_t>(end - p) / sizeof(T)) throw std::runtime_error(short_message);
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

}  // namespace prof::wire
