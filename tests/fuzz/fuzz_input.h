// The byte layout the wire codec fuzzer reads, shared by the fuzzer and the
// seed corpus generator so both agree on it.
//
//   byte 0        bits 0-4: number of data frames (0..31)
//                 bit 5: wrap frame 0 in a valid wire prefix (so mutations
//                        reach the Meta parser and the checks after it)
//                 bit 6: place data frames at odd addresses (misaligned)
//   then, for frame 0 (header) and each data frame:
//     2 bytes     little-endian length L
//     L bytes     the frame (fewer if the input ends first)
//
// Thread safety: stateless functions.
#ifndef PETREL_TESTS_FUZZ_FUZZ_INPUT_H_
#define PETREL_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "van/buffer.h"

namespace petrel {

struct FuzzInput {
  Buffer header;
  std::vector<Buffer> frames;
};

// Splits `data` into frames as laid out above. Each frame gets its own
// allocation, so reading past a frame's end is caught by ASan.
FuzzInput ParseFuzzInput(const uint8_t* data, size_t size);

// Lays out `frames` (frame 0 first) in the format above. When
// `add_prefix`, frames[0] is the serialized Meta only.
std::string EncodeFuzzInput(const std::vector<std::string>& frames,
                            bool add_prefix, bool misalign);

}  // namespace petrel

#endif  // PETREL_TESTS_FUZZ_FUZZ_INPUT_H_
