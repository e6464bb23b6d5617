// CRC-32C of the trace format's sealed chunks (trace_layout.h, ChunkHeader).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace prof::format {

// CRC-32C (Castagnoli, reflected): SSE4.2 hardware when the CPU has it (sealing
// a chunk must cost little per event), a compile-time table otherwise.
namespace detail {
struct Crc32cTable {
  uint32_t t[256];
  constexpr Crc32cTable() : t{} {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (0x82F63B78u ^ (c >> 1)) : (c >> 1);
      t[i] = c;
    }
  }
};
inline constexpr Crc32cTable kCrcTable{};

inline uint32_t crc32c_sw(const unsigned char* p, size_t n, uint32_t c) {
  for (size_t i = 0; i < n; ++i) c = kCrcTable.t[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c;
}
// Lane length of the hardware CRC's three-lane blocks (see crc32c_hw).
inline constexpr size_t kCrcLane = 2048;
#if defined(__x86_64__)
// One dependent chain of crc32 instructions runs at a third of their
// throughput (latency 3, one per cycle). So blocks of 3 x kCrcLane bytes are
// checksummed as three independent lanes and joined: the raw CRC register is
// linear, so crc(A B C) = shift(shift(crc(A)) ^ crc0(B)) ^ crc0(C), where crc0
// starts from 0 and shift() advances a register over kCrcLane zero bytes. That
// shift is a fixed linear map of 32 bits, applied as four byte tables built
// once from the images of the 32 unit vectors.

__attribute__((target("sse4.2"))) inline uint32_t crc32c_hw_1(const unsigned char* p, size_t n,
                                                                 uint32_t c) {
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = __builtin_ia32_crc32di(c64, v);
  }
  c = static_cast<uint32_t>(c64);
  for (; n > 0; --n, ++p) c = __builtin_ia32_crc32qi(c, *p);
  return c;
}

struct CrcLaneShift {
  uint32_t t[4][256];
  __attribute__((target("sse4.2"))) CrcLaneShift() {
    static const unsigned char zeros[kCrcLane] = {};
    uint32_t unit[32];
    for (int i = 0; i < 32; ++i) unit[i] = crc32c_hw_1(zeros, kCrcLane, 1u << i);
    for (int k = 0; k < 4; ++k)
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = 0;
        for (int j = 0; j < 8; ++j)
          if (b >> j & 1) v ^= unit[8 * k + j];
        t[k][b] = v;
      }
  }
  uint32_t operator()(uint32_t c) const {
    return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
  }
};

__attribute__((target("sse4.2"))) inline uint32_t crc32c_hw(const unsigned char* p, size_t n,
                                                               uint32_t c) {
  if (n >= 3 * kCrcLane) {
    static const CrcLaneShift shift;
    do {
      uint64_t a = c, b = 0, d = 0;
      for (size_t i = 0; i < kCrcLane; i += 8) {
        uint64_t va, vb, vd;
        std::memcpy(&va, p + i, 8);
        std::memcpy(&vb, p + kCrcLane + i, 8);
        std::memcpy(&vd, p + 2 * kCrcLane + i, 8);
        a = __builtin_ia32_crc32di(a, va);
        b = __builtin_ia32_crc32di(b, vb);
        d = __builtin_ia32_crc32di(d, vd);
      }
      c = shift(shift(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(d);
      p += 3 * kCrcLane;
      n -= 3 * kCrcLane;
    } while (n >= 3 * kCrcLane);
  }
  return crc32c_hw_1(p, n, c);
}
#endif
}  // namespace detail

inline uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2")) return ~detail::crc32c_hw(p, n, c);
#endif
  return ~detail::crc32c_sw(p, n, c);
}

}  // namespace prof::format
