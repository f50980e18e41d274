// Test helper: a bitstream writer small enough to trust by reading, for hand-built
// streams (the LLVM-free tests have no LLVM writer to make them).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln_test {

class BitWriter {
 public:
  BitWriter() {
    for (char c : std::string("BC\xC0\xDE", 4)) fixed(uint8_t(c), 8);
  }

  void fixed(uint64_t value, unsigned width) {
    for (unsigned i = 0; i < width; ++i, ++bit_) {
      if (bit_ / 8 >= bytes_.size()) bytes_.push_back(0);
      if ((value >> i) & 1) bytes_[bit_ / 8] = char(bytes_[bit_ / 8] | (1 << (bit_ % 8)));
    }
  }
  void vbr(uint64_t value, unsigned width) {
    const uint64_t more = uint64_t(1) << (width - 1);
    for (; value >= more; value >>= width - 1) fixed((value & (more - 1)) | more, width);
    fixed(value, width);
  }
  void align32() {
    while (bit_ % 32) fixed(0, 1);
  }
  void abbrev_id(uint64_t id) { fixed(id, width_); }

  void enter(uint64_t block_id, unsigned abbrev_width) {
    abbrev_id(1);
    vbr(block_id, 8);
    vbr(abbrev_width, 4);
    align32();
    open_.push_back({width_, bit_});
    fixed(0, 32);  // the length, backpatched by end()
    width_ = abbrev_width;
  }
  void end() {
    abbrev_id(0);
    align32();
    auto [outer_width, at] = open_.back();
    open_.pop_back();
    uint64_t words = (bit_ - at - 32) / 32;
    for (int i = 0; i < 4; ++i) bytes_[at / 8 + i] = char(words >> (8 * i));
    width_ = outer_width;
  }

  // Operands as (is literal, encoding or literal value, width): the DEFINE_ABBREV record.
  struct Op {
    bool literal;
    unsigned encoding;  // 1 fixed, 2 VBR, 3 array, 4 char6, 5 blob
    uint64_t value;     // the literal, or the width
  };
  void define_abbrev(const std::vector<Op>& ops) {
    abbrev_id(2);
    vbr(ops.size(), 5);
    for (const Op& op : ops) {
      fixed(op.literal, 1);
      if (op.literal) {
        vbr(op.value, 8);
        continue;
      }
      fixed(op.encoding, 3);
      if (op.encoding == 1 || op.encoding == 2) vbr(op.value, 5);
    }
  }
  void unabbrev(uint64_t code, const std::vector<uint64_t>& ops) {
    abbrev_id(3);
    vbr(code, 6);
    vbr(ops.size(), 6);
    for (uint64_t op : ops) vbr(op, 6);
  }
  void char6(char c) {
    std::string table = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._";
    fixed(table.find(c), 6);
  }
  void blob(const std::string& bytes) {
    vbr(bytes.size(), 6);
    align32();
    for (char c : bytes) fixed(uint8_t(c), 8);
    align32();
  }

  uint64_t bit() const { return bit_; }
  // The stream so far, padded to a whole word.
  std::string bytes() const {
    std::string out = bytes_;
    out.resize((out.size() + 3) / 4 * 4, '\0');
    return out;
  }

 private:
  std::string bytes_;
  uint64_t bit_ = 0;
  unsigned width_ = 2;
  std::vector<std::pair<unsigned, uint64_t>> open_;  // per open block: the outer width, where its length is
};

}  // namespace kiln_test
