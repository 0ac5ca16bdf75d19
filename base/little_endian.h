// Little-endian loads of unaligned bytes, for hashes and checksums whose
// values must not depend on the machine's byte order.
//
// Thread safety: pure functions.
#ifndef PETREL_BASE_LITTLE_ENDIAN_H_
#define PETREL_BASE_LITTLE_ENDIAN_H_

#include <cstdint>
#include <cstring>

namespace petrel {

inline uint64_t LoadLittleEndian64(const unsigned char* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  x = __builtin_bswap64(x);
#endif
  return x;
}

inline uint32_t LoadLittleEndian32(const unsigned char* p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  x = __builtin_bswap32(x);
#endif
  return x;
}

}  // namespace petrel

#endif  // PETREL_BASE_LITTLE_ENDIAN_H_
