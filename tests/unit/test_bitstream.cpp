// The bitstream container reader (lib/stamp/bitstream.h) on hand-built streams: each
// encoding, BLOCKINFO, skipping, and hostile streams refused with exit 3 naming the
// block and the bit offset. LLVM-free; test_bitstream_llvm.cpp checks real bitcode.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bitstream.h"
#include "bitstream_writer.h"
#include "error.h"
#include "fs.h"

using namespace kiln;
using kiln_test::BitWriter;

namespace {

const BitWriter::Op kCode7{true, 0, 7};  // a literal record code
BitWriter::Op fixed_op(unsigned width) { return {false, 1, width}; }
BitWriter::Op vbr_op(unsigned width) { return {false, 2, width}; }
const BitWriter::Op kArray{false, 3, 0}, kChar6{false, 4, 0}, kBlob{false, 5, 0};

// The next entry, which must be a record; its code and operands.
uint32_t next_record(BitstreamCursor& c, std::vector<uint64_t>& ops, std::string_view* blob = nullptr,
                     uint32_t* abbrev_id = nullptr) {
  BitstreamEntry e = c.advance();
  REQUIRE(e.kind == BitstreamEntry::kRecord);
  if (abbrev_id) *abbrev_id = e.id;
  return c.read_record(e.id, ops, blob);
}

void require_entry(BitstreamCursor& c, BitstreamEntry::Kind kind, uint32_t id = 0) {
  BitstreamEntry e = c.advance();
  REQUIRE(e.kind == kind);
  REQUIRE(e.id == id);
}

// Walks every record; a corrupt stream must throw KilnError(kExitBadInput).
void walk(const std::string& bytes) {
  BitstreamCursor c(bytes, "t.bc");
  std::vector<uint64_t> ops;
  for (BitstreamEntry e = c.advance(); e.kind != BitstreamEntry::kEndOfStream; e = c.advance())
    if (e.kind == BitstreamEntry::kRecord) c.read_record(e.id, ops);
}

// The reason a walk of the stream gives; it must be exit 3 naming where.
std::string refusal(const std::string& bytes) {
  try {
    walk(bytes);
  } catch (const KilnError& e) {
    REQUIRE(e.code() == kExitBadInput);
    REQUIRE(e.path() == "t.bc");
    return e.what();
  }
  FAIL("the stream was accepted");
  return "";
}

}  // namespace

TEST_CASE("bitstream: unabbreviated records carry VBR6 operands up to 64 bits", "[bitstream]") {
  BitWriter w;
  w.enter(8, 3);
  const std::vector<uint64_t> values = {0, 31, 32, 1023, uint64_t(1) << 40, ~uint64_t(0)};
  w.unabbrev(12, values);
  w.unabbrev(1u << 20, {});
  w.end();
  const std::string bytes = w.bytes();
  BitstreamCursor c(bytes, "t.bc");
  REQUIRE(c.bit_offset() == 32);
  require_entry(c, BitstreamEntry::kEnterBlock, 8);
  REQUIRE(c.block_id() == 8);
  REQUIRE(c.depth() == 1);
  std::vector<uint64_t> ops = {99};
  REQUIRE(next_record(c, ops) == 12);
  REQUIRE(ops == values);
  REQUIRE(next_record(c, ops) == 1u << 20);
  REQUIRE(ops.empty());
  require_entry(c, BitstreamEntry::kEndBlock, 8);
  REQUIRE(c.depth() == 0);
  REQUIRE(c.block_id() == BitstreamCursor::kNoBlock);
  require_entry(c, BitstreamEntry::kEndOfStream);
  REQUIRE(c.bit_offset() == w.bit());
}

TEST_CASE("bitstream: abbreviated records decode literal, fixed, VBR and char6 fields", "[bitstream]") {
  BitWriter w;
  w.enter(9, 4);
  w.define_abbrev({kCode7, fixed_op(3), fixed_op(32), vbr_op(5), vbr_op(32), kChar6, fixed_op(0), {true, 0, 200}});
  w.abbrev_id(4);
  w.fixed(5, 3);
  w.fixed(0xDEADBEEF, 32);
  w.vbr(1000, 5);
  w.vbr(~uint64_t(0), 32);
  w.char6('_');
  w.end();
  const std::string bytes = w.bytes();
  BitstreamCursor c(bytes, "t.bc");
  require_entry(c, BitstreamEntry::kEnterBlock, 9);
  std::vector<uint64_t> ops;
  uint32_t id = 0;
  REQUIRE(next_record(c, ops, nullptr, &id) == 7);
  REQUIRE(id == 4);
  // A zero-width fixed field reads as the literal 0, as in LLVM.
  REQUIRE(ops == std::vector<uint64_t>{5, 0xDEADBEEF, 1000, ~uint64_t(0), '_', 0, 200});
  REQUIRE(c.abbrevs_defined() == 1);
  require_entry(c, BitstreamEntry::kEndBlock, 9);
  require_entry(c, BitstreamEntry::kEndOfStream);
}

TEST_CASE("bitstream: arrays of char6 and of fixed fields", "[bitstream]") {
  BitWriter w;
  w.enter(9, 3);
  w.define_abbrev({kCode7, kArray, kChar6});
  w.define_abbrev({{true, 0, 8}, fixed_op(4), kArray, fixed_op(7)});
  const std::string text = "abc_XYZ.09";
  w.abbrev_id(4);
  w.vbr(text.size(), 6);
  for (char ch : text) w.char6(ch);
  w.abbrev_id(5);
  w.fixed(9, 4);
  w.vbr(3, 6);
  for (uint64_t v : {1, 64, 127}) w.fixed(v, 7);
  w.abbrev_id(4);
  w.vbr(0, 6);  // an empty array
  w.end();
  const std::string bytes = w.bytes();
  BitstreamCursor c(bytes, "t.bc");
  require_entry(c, BitstreamEntry::kEnterBlock, 9);
  std::vector<uint64_t> ops;
  REQUIRE(next_record(c, ops) == 7);
  REQUIRE(std::string(ops.begin(), ops.end()) == text);
  REQUIRE(next_record(c, ops) == 8);
  REQUIRE(ops == std::vector<uint64_t>{9, 1, 64, 127});
  REQUIRE(next_record(c, ops) == 7);
  REQUIRE(ops.empty());
  require_entry(c, BitstreamEntry::kEndBlock, 9);
}

// The cursor decodes a field from one 8-byte load where it can, and chunk by chunk near
// the end of a block or for a VBR longer than the load: values of every length, at every
// bit alignment, in every record form, both far from a block's end and in its last bits.
TEST_CASE("bitstream: VBR and fixed fields of every length read alike far from and near a block's end", "[bitstream]") {
  std::mt19937_64 rng(7);
  auto value = [&](unsigned bits) { return bits == 0 ? 0 : rng() >> (64 - bits); };
  for (int round = 0; round < 40; ++round) {
    BitWriter w;
    w.enter(9, 5);
    const unsigned vbr_width = 2 + unsigned(rng() % 31), fixed_width = 1 + unsigned(rng() % 32);
    w.define_abbrev({kCode7, vbr_op(6), vbr_op(vbr_width), fixed_op(fixed_width), kArray, vbr_op(vbr_width)});
    w.define_abbrev({{true, 0, 8}, kArray, fixed_op(fixed_width)});
    std::vector<std::pair<uint32_t, std::vector<uint64_t>>> records;
    for (int r = 0; r < 30; ++r) {
      std::vector<uint64_t> ops;
      switch (rng() % 3) {
        case 0:
          for (size_t i = rng() % 12; i > 0; --i) ops.push_back(value(rng() % 65));
          records.emplace_back(uint32_t(3 + rng() % 100), ops);
          w.unabbrev(records.back().first, ops);
          break;
        case 1: {
          ops = {value(rng() % 65), value(rng() % 65), value(fixed_width)};
          w.abbrev_id(4);
          w.vbr(ops[0], 6);
          w.vbr(ops[1], vbr_width);
          w.fixed(ops[2], fixed_width);
          size_t n = rng() % 6;
          w.vbr(n, 6);
          for (size_t i = 0; i < n; ++i) {
            ops.push_back(value(rng() % 65));
            w.vbr(ops.back(), vbr_width);
          }
          records.emplace_back(7, ops);
          break;
        }
        default: {
          size_t n = rng() % 9;
          w.abbrev_id(5);
          w.vbr(n, 6);
          for (size_t i = 0; i < n; ++i) {
            ops.push_back(value(fixed_width));
            w.fixed(ops.back(), fixed_width);
          }
          records.emplace_back(8, ops);
        }
      }
    }
    w.end();
    const std::string bytes = w.bytes();
    BitstreamCursor c(bytes, "t.bc");
    require_entry(c, BitstreamEntry::kEnterBlock, 9);
    std::vector<uint64_t> ops;
    for (const auto& [code, expected] : records) {
      REQUIRE(next_record(c, ops) == code);
      REQUIRE(ops == expected);
    }
    require_entry(c, BitstreamEntry::kEndBlock, 9);
    require_entry(c, BitstreamEntry::kEndOfStream);
  }
}

// Every record of a stream as "code:operands" lines, or the refusal at the end, read into
// a RecordOps through the compiled abbreviations (Abbrev::fast) or, with `general`, with
// none compiled. With `even`, into a vector with a filter that keeps the records of even
// codes and BLOCKINFO's SETBID (and the operands of the others are left out of the lines,
// as the filter leaves them out of the vector); with `even_ops`, the same into a RecordOps.
enum class Path { kCompiled, kGeneral, kEven, kEvenOps };
static bool even(uint32_t code) { return code % 2 == 0 || code == 1; }
static std::string transcript(const std::string& bytes, Path path, bool drop_odd = false) {
  std::string out;
  try {
    BitstreamCursor c(bytes, "t.bc");
    c.compile_abbrevs(path != Path::kGeneral);
    RecordOps record;
    std::vector<uint64_t> ops;
    for (BitstreamEntry e = c.advance(); e.kind != BitstreamEntry::kEndOfStream; e = c.advance()) {
      if (e.kind != BitstreamEntry::kRecord) continue;
      uint32_t code;
      if (path == Path::kEven) {
        code = c.read_record(e.id, ops, nullptr, even);
      } else if (path == Path::kEvenOps) {
        code = c.read_record(e.id, record, nullptr, even);
        ops.assign(record.begin(), record.end());
      } else {
        code = c.read_record(e.id, record);
        ops.assign(record.begin(), record.end());
      }
      out += std::to_string(code) + ":";
      if (!drop_odd || even(code))
        for (uint64_t v : ops) out += " " + std::to_string(v);
      out += "\n";
    }
  } catch (const KilnError& e) {
    REQUIRE(e.code() == kExitBadInput);
    out += std::string("refused: ") + e.what();
  }
  return out;
}

// The shapes read_fast() takes (a literal code, fixed and VBR fields, perhaps an array of
// fixed or VBR elements), defined in BLOCKINFO and in the block, with fields of every
// width, long VBRs and records at the block's end; and shapes it leaves to the general
// path (a literal or char6 field after the code, 16 fields). Both paths read the same
// operands, and refuse a corrupted stream with the same message at the same bit.
TEST_CASE("bitstream: compiled abbreviations read what the general path reads, and refuse alike", "[bitstream]") {
  std::mt19937_64 rng(11);
  auto value = [&](unsigned bits) { return bits == 0 ? 0 : rng() >> (64 - bits); };
  for (int round = 0; round < 60; ++round) {
    struct Shape {
      std::vector<BitWriter::Op> ops;
      size_t fields;  // ops[1..fields] are scalars; an array follows if ops.size() > fields + 1
    };
    std::vector<Shape> shapes;
    for (int i = 0; i < 4; ++i) {
      Shape s{{{true, 0, uint64_t(1 + rng() % 60)}}, 0};
      const size_t fields = i == 3 && round % 4 == 0 ? 16 : rng() % 16;
      for (size_t f = 0; f < fields; ++f) {
        unsigned kind = unsigned(rng() % 8);
        if (round % 3 == 0 && kind == 7) s.ops.push_back(kChar6);
        else if (round % 5 == 0 && kind == 6) s.ops.push_back({true, 0, rng() % 300});
        else s.ops.push_back(kind % 2 ? vbr_op(2 + unsigned(rng() % 31)) : fixed_op(1 + unsigned(rng() % 32)));
      }
      s.fields = fields;
      if (rng() % 2) {
        s.ops.push_back(kArray);
        s.ops.push_back(rng() % 3 == 0 ? fixed_op(1 + unsigned(rng() % 32))
                                       : vbr_op(rng() % 2 ? 6 : 2 + unsigned(rng() % 31)));
      }
      shapes.push_back(s);
    }
    BitWriter w;
    w.enter(0, 2);
    w.unabbrev(1, {12});  // SETBID 12: the first shape is BLOCKINFO's, id 4
    w.define_abbrev(shapes[0].ops);
    w.end();
    w.enter(12, 4);
    for (size_t i = 1; i < shapes.size(); ++i) w.define_abbrev(shapes[i].ops);
    // Each operand as written, so that the stream is checked against it too.
    std::string expected = "1: 12\n";
    auto put = [&](const BitWriter::Op& op) {
      uint64_t v = op.literal ? op.value
          : op.encoding == 4  ? uint64_t("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._"[rng() % 64])
          : op.encoding == 1  ? value(unsigned(op.value))
                              : value(unsigned(rng() % 65));
      if (op.encoding == 1 && !op.literal) w.fixed(v, unsigned(op.value));
      if (op.encoding == 2 && !op.literal) w.vbr(v, unsigned(op.value));
      if (op.encoding == 4 && !op.literal) w.char6(char(v));
      expected += " " + std::to_string(v);
    };
    for (int r = 0, records = 1 + int(rng() % 40); r < records; ++r) {
      if (rng() % 4 == 0) {
        std::vector<uint64_t> ops(rng() % 6);
        for (uint64_t& v : ops) v = value(unsigned(rng() % 65));
        w.unabbrev(5, ops);
        expected += "5:";
        for (uint64_t v : ops) expected += " " + std::to_string(v);
        expected += "\n";
        continue;
      }
      const size_t which = rng() % shapes.size();
      const Shape& s = shapes[which];
      w.abbrev_id(4 + which);
      expected += std::to_string(s.ops[0].value) + ":";
      for (size_t f = 1; f <= s.fields; ++f) put(s.ops[f]);
      if (s.ops.size() > s.fields + 1) {
        size_t n = rng() % 6;
        w.vbr(n, 6);
        for (size_t i = 0; i < n; ++i) put(s.ops.back());
      }
      expected += "\n";
    }
    w.end();
    const std::string bytes = w.bytes();
    REQUIRE(transcript(bytes, Path::kCompiled) == expected);
    REQUIRE(transcript(bytes, Path::kGeneral) == expected);
    REQUIRE(transcript(bytes, Path::kEven) == transcript(bytes, Path::kCompiled, true));
    REQUIRE(transcript(bytes, Path::kEvenOps) == transcript(bytes, Path::kEven));
    for (int corruption = 0; corruption < 100; ++corruption) {
      std::string bad = bytes;
      if (corruption % 4 == 0) {
        bad.resize(bad.size() - 4 * (1 + rng() % (bad.size() / 4 - 1)));
      } else {
        for (int flips = 1 + int(rng() % 3); flips > 0; --flips)
          bad[4 + rng() % (bad.size() - 4)] ^= char(1 << (rng() % 8));
      }
      REQUIRE(transcript(bad, Path::kCompiled) == transcript(bad, Path::kGeneral));
      REQUIRE(transcript(bad, Path::kEven) == transcript(bad, Path::kCompiled, true));
      REQUIRE(transcript(bad, Path::kEvenOps) == transcript(bad, Path::kEven));
    }
  }
}

TEST_CASE("bitstream: blobs are views of the file, or bytes among the operands", "[bitstream]") {
  BitWriter w;
  w.enter(9, 3);
  w.define_abbrev({kCode7, vbr_op(6), kBlob});
  for (std::string text : {"hello", "", "four"}) {
    w.abbrev_id(4);
    w.vbr(42, 6);
    w.blob(text);
  }
  w.unabbrev(3, {1});  // read after a blob: the blob's alignment was kept
  w.end();
  const std::string bytes = w.bytes();
  BitstreamCursor c(bytes, "t.bc");
  require_entry(c, BitstreamEntry::kEnterBlock, 9);
  std::vector<uint64_t> ops;
  std::string_view blob = "stale";
  REQUIRE(next_record(c, ops, &blob) == 7);
  REQUIRE(ops == std::vector<uint64_t>{42});
  REQUIRE(blob == "hello");
  REQUIRE(next_record(c, ops, &blob) == 7);
  REQUIRE(blob.empty());
  REQUIRE(next_record(c, ops) == 7);
  REQUIRE(ops == std::vector<uint64_t>{42, 'f', 'o', 'u', 'r'});
  REQUIRE(next_record(c, ops) == 3);
  REQUIRE(ops == std::vector<uint64_t>{1});
  require_entry(c, BitstreamEntry::kEndBlock, 9);
}

// A block of a record of each kind (unabbreviated, with a blob, with an array, of an odd
// code) and, last, an unabbreviated one whose count is far past the block's end.
static std::string records_stream() {
  BitWriter w;
  w.enter(9, 3);
  w.define_abbrev({kCode7, vbr_op(6), kBlob});
  w.define_abbrev({{true, 0, 8}, kArray, fixed_op(8)});
  w.unabbrev(4, {5, 6, 1234567});
  w.abbrev_id(4);
  w.vbr(42, 6);
  w.blob("hello");
  w.abbrev_id(5);
  w.vbr(3, 6);
  for (uint64_t v : {1, 2, 255}) w.fixed(v, 8);
  w.unabbrev(10, {1});
  w.abbrev_id(3);  // UNABBREV_RECORD 4 with 2^40 operands, one written
  w.vbr(4, 6);
  w.vbr(uint64_t(1) << 40, 6);
  w.vbr(1, 6);
  w.end();
  return w.bytes();
}

// One record as "code: operands [blob]", or the refusal; `Ops` is a vector or a RecordOps.
template <class Ops>
static std::string record_line(const std::function<uint32_t(Ops&, std::string_view*)>& read, bool with_blob) {
  Ops ops;
  std::string_view blob = "stale";
  try {
    uint32_t code = read(ops, with_blob ? &blob : nullptr);
    std::string line = std::to_string(code) + ":";
    for (uint64_t v : ops) line += " " + std::to_string(v);
    if (with_blob) line += " [" + std::string(blob) + "]";
    return line;
  } catch (const KilnError& e) {
    REQUIRE(e.code() == kExitBadInput);
    return std::string("refused: ") + e.what();
  }
}

// A RecordOps read with a blob and a filter gets what a vector gets: the same operands,
// blob and refusals. The hostile count is refused before room is made for it: room for
// 2^40 operands could not be had, and the read would fail otherwise than with exit 3.
TEST_CASE("bitstream: records read into a RecordOps with a blob and a filter as into a vector",
          "[bitstream][hostile]") {
  const std::string bytes = records_stream();
  for (BitstreamCursor::CodeFilter filter : {BitstreamCursor::CodeFilter(nullptr), even}) {
    for (bool with_blob : {false, true}) {
      BitstreamCursor a(bytes, "t.bc"), b(bytes, "t.bc");
      require_entry(a, BitstreamEntry::kEnterBlock, 9);
      require_entry(b, BitstreamEntry::kEnterBlock, 9);
      std::vector<std::string> lines;
      for (int r = 0; r < 5; ++r) {
        BitstreamEntry ea = a.advance(), eb = b.advance();
        REQUIRE(ea.kind == BitstreamEntry::kRecord);
        REQUIRE(eb.kind == BitstreamEntry::kRecord);
        std::string va = record_line<std::vector<uint64_t>>(
            [&](std::vector<uint64_t>& ops, std::string_view* blob) { return a.read_record(ea.id, ops, blob, filter); },
            with_blob);
        std::string vb = record_line<RecordOps>(
            [&](RecordOps& ops, std::string_view* blob) { return b.read_record(eb.id, ops, blob, filter); }, with_blob);
        REQUIRE(va == vb);
        lines.push_back(va);
      }
      const std::string blob = with_blob ? " [hello]" : filter ? "" : " 104 101 108 108 111";
      CHECK(lines[0] == "4: 5 6 1234567" + std::string(with_blob ? " []" : ""));
      CHECK(lines[1] == (filter ? "7:" + std::string(with_blob ? " []" : "") : "7: 42" + blob));
      CHECK(lines[2] == "8: 1 2 255" + std::string(with_blob ? " []" : ""));
      CHECK(lines[3] == "10: 1" + std::string(with_blob ? " []" : ""));
      CHECK(lines[4].find("refused: ") == 0);
      CHECK(lines[4].find("record of 1099511627776 operands runs past the end of the block") != std::string::npos);
    }
  }
}

// read_record_at into a RecordOps reads what it reads into a vector, after the block is
// left, and refuses alike: a position outside the block, one that is no record, and the
// hostile count (before room is made).
TEST_CASE("bitstream: records found by position read into a RecordOps as into a vector", "[bitstream][hostile]") {
  const std::string bytes = records_stream();
  BitstreamCursor c(bytes, "t.bc");
  require_entry(c, BitstreamEntry::kEnterBlock, 9);
  std::vector<uint64_t> at;
  std::optional<BitstreamCursor::BlockMark> mark;
  std::vector<uint64_t> ops;
  for (;;) {
    BitstreamEntry e = c.advance();
    REQUIRE(e.kind == BitstreamEntry::kRecord);
    at.push_back(c.bit_offset() - 3);  // the record's abbreviation id, 3 bits wide, just read
    if (at.size() == 5) break;         // the hostile one, not read here
    c.read_record(e.id, ops);
    if (!mark) mark = c.mark_block();  // after the abbreviations, which came first
  }
  const uint64_t end = c.bit_offset();
  c.skip_block();
  at.push_back(BitstreamCursor::block_begin(*mark));  // a DEFINE_ABBREV: no record
  at.push_back(end + 100000);                         // past the block
  std::vector<std::string> lines;
  for (uint64_t where : at) {
    for (bool with_blob : {false, true}) {
      std::string va = record_line<std::vector<uint64_t>>(
          [&](std::vector<uint64_t>& v, std::string_view* blob) { return c.read_record_at(*mark, where, v, blob); },
          with_blob);
      std::string vb = record_line<RecordOps>(
          [&](RecordOps& v, std::string_view* blob) { return c.read_record_at(*mark, where, v, blob); }, with_blob);
      REQUIRE(va == vb);
      lines.push_back(va);
      REQUIRE(c.depth() == 0);
    }
  }
  CHECK(lines[0] == "4: 5 6 1234567");
  CHECK(lines[2] == "7: 42 104 101 108 108 111");
  CHECK(lines[3] == "7: 42 [hello]");
  CHECK(lines[4] == "8: 1 2 255");
  CHECK(lines[6] == "10: 1");
  CHECK(lines[8].find("record of 1099511627776 operands runs past the end of the block") != std::string::npos);
  CHECK(lines[10].find("is no record") != std::string::npos);
  CHECK(lines[12].find("outside its block") != std::string::npos);
  require_entry(c, BitstreamEntry::kEndOfStream);
}

// A constants block's data records are read into bytes of their element width; the
// code, read first, says which records those are.
TEST_CASE("bitstream: chosen records' operands come as bytes of a width, the others as operands", "[bitstream]") {
  BitWriter w;
  w.enter(11, 3);
  w.define_abbrev({{true, 0, 22}, fixed_op(16), kArray, vbr_op(6)});  // a scalar, then an array
  w.define_abbrev({{true, 0, 8}, kBlob});
  w.define_abbrev({{true, 0, 22}, kArray, fixed_op(8)});
  w.unabbrev(22, {0x1234, 0xFFFF, 0x123456789});  // each operand's low bytes
  w.abbrev_id(4);
  w.fixed(0xBEEF, 16);
  w.vbr(2, 6);
  w.vbr(1, 6);
  w.vbr(0x10000, 6);
  w.abbrev_id(5);
  w.blob("hi");
  w.unabbrev(4, {5, 6});  // a code not chosen
  w.abbrev_id(6);
  w.vbr(0, 6);  // an empty array
  w.end();
  const std::string bytes = w.bytes();
  BitstreamCursor c(bytes, "t.bc");
  require_entry(c, BitstreamEntry::kEnterBlock, 11);
  RecordOps ops;
  ops.extend(1)[0] = 99;
  std::vector<uint8_t> data = {99};
  OperandBytes record{ops, data, uint64_t(1) << 22 | uint64_t(1) << 8, 2};
  auto next = [&] {
    BitstreamEntry e = c.advance();
    REQUIRE(e.kind == BitstreamEntry::kRecord);
    return c.read_record(e.id, record);
  };
  REQUIRE(next() == 22);
  CHECK((record.in_bytes && ops.empty() && data == std::vector<uint8_t>{0x34, 0x12, 0xFF, 0xFF, 0x89, 0x67}));
  REQUIRE(next() == 22);
  CHECK((record.in_bytes && data == std::vector<uint8_t>{0xEF, 0xBE, 1, 0, 0, 0}));
  record.width = 1;
  REQUIRE(next() == 8);
  CHECK((record.in_bytes && data == std::vector<uint8_t>{'h', 'i'}));
  REQUIRE(next() == 4);
  CHECK((!record.in_bytes && data.empty() &&
         std::vector<uint64_t>(ops.begin(), ops.end()) == std::vector<uint64_t>{5, 6}));
  record.width = 8;
  REQUIRE(next() == 22);
  CHECK((record.in_bytes && data.empty() && ops.empty()));
  require_entry(c, BitstreamEntry::kEndBlock, 11);
}

// An array's count is checked against the bits left before room is made for it, in
// bytes as in operands.
TEST_CASE("bitstream: a hostile array count read as bytes is refused before room is made", "[bitstream][hostile]") {
  BitWriter w;
  w.enter(11, 3);
  w.define_abbrev({{true, 0, 22}, kArray, fixed_op(8)});
  w.abbrev_id(4);
  w.vbr(uint64_t(1) << 40, 6);
  w.fixed(1, 8);
  w.end();
  const std::string bytes = w.bytes();
  BitstreamCursor c(bytes, "t.bc");
  require_entry(c, BitstreamEntry::kEnterBlock, 11);
  RecordOps ops;
  std::vector<uint8_t> data;
  OperandBytes record{ops, data, uint64_t(1) << 22, 8};
  BitstreamEntry e = c.advance();
  REQUIRE(e.kind == BitstreamEntry::kRecord);
  try {
    c.read_record(e.id, record);
    FAIL("read an array longer than its block");
  } catch (const KilnError& error) {
    CHECK(error.code() == kExitBadInput);
    CHECK(std::string(error.what()).find("runs past the end of the block") != std::string::npos);
  }
  CHECK(data.capacity() < 64);
}

// BLOCKINFO defines abbreviation 4 for block 8 (and, after a second SETBID, one for
// block 10); a block 8 then numbers its own abbreviations from 5.
std::string block_info_stream() {
  BitWriter w;
  w.enter(0, 2);
  w.unabbrev(1, {8});  // SETBID 8
  w.define_abbrev({kCode7, fixed_op(8)});
  w.unabbrev(2, {'b', '8'});  // BLOCKNAME, read as any record
  w.unabbrev(1, {10});
  w.define_abbrev({{true, 0, 11}});
  w.end();
  for (int i = 0; i < 2; ++i) {
    w.enter(8, 3);
    w.abbrev_id(4);
    w.fixed(200 + i, 8);
    w.define_abbrev({{true, 0, 9}, vbr_op(4)});
    w.abbrev_id(5);
    w.vbr(77, 4);
    w.end();
  }
  w.enter(10, 3);
  w.abbrev_id(4);
  w.end();
  return w.bytes();
}

TEST_CASE("bitstream: BLOCKINFO abbreviations come before a block's own", "[bitstream]") {
  std::string bytes = block_info_stream();
  BitstreamCursor c(bytes, "t.bc");
  std::vector<uint64_t> ops;
  require_entry(c, BitstreamEntry::kEnterBlock, 0);
  REQUIRE(next_record(c, ops) == 1);
  REQUIRE(next_record(c, ops) == 2);
  REQUIRE(next_record(c, ops) == 1);
  require_entry(c, BitstreamEntry::kEndBlock, 0);
  for (uint64_t i = 0; i < 2; ++i) {
    require_entry(c, BitstreamEntry::kEnterBlock, 8);
    REQUIRE(next_record(c, ops) == 7);
    REQUIRE(ops == std::vector<uint64_t>{200 + i});
    uint32_t id = 0;
    REQUIRE(next_record(c, ops, nullptr, &id) == 9);
    REQUIRE(id == 5);
    REQUIRE(ops == std::vector<uint64_t>{77});
    require_entry(c, BitstreamEntry::kEndBlock, 8);
  }
  require_entry(c, BitstreamEntry::kEnterBlock, 10);
  REQUIRE(next_record(c, ops) == 11);
  require_entry(c, BitstreamEntry::kEndBlock, 10);
  require_entry(c, BitstreamEntry::kEndOfStream);

  auto stats = bitstream_statistics(bytes, "t.bc");
  REQUIRE(stats.size() == 3);
  REQUIRE(stats[0] == BitstreamBlockStats{1, 3, 0, 2});
  REQUIRE(stats[8] == BitstreamBlockStats{2, 4, 4, 2});
  REQUIRE(stats[10] == BitstreamBlockStats{1, 1, 1, 0});
}

TEST_CASE("bitstream: a skipped BLOCKINFO defines nothing", "[bitstream]") {
  std::string bytes = block_info_stream();
  BitstreamCursor c(bytes, "t.bc");
  require_entry(c, BitstreamEntry::kEnterBlock, 0);
  c.skip_block();
  require_entry(c, BitstreamEntry::kEnterBlock, 8);
  try {
    c.advance();
    FAIL("abbreviation 4 was defined");
  } catch (const KilnError& e) {
    REQUIRE(std::string(e.what()).find("block 8 at bit") != std::string::npos);
    REQUIRE(std::string(e.what()).find("abbreviation id 4 not defined (0 are)") != std::string::npos);
  }
}

TEST_CASE("bitstream: skip_block jumps over a block, nested ones and all", "[bitstream]") {
  BitWriter w;
  w.enter(8, 3);
  w.unabbrev(1, {1});
  w.enter(15, 5);  // say, metadata: skipped
  w.define_abbrev({kCode7, kArray, fixed_op(8)});
  w.enter(16, 2);
  w.unabbrev(2, {2});
  w.end();
  w.unabbrev(3, {3});
  w.end();
  w.unabbrev(4, {4});
  w.end();
  const std::string bytes = w.bytes();
  BitstreamCursor c(bytes, "t.bc");
  std::vector<uint64_t> ops;
  require_entry(c, BitstreamEntry::kEnterBlock, 8);
  REQUIRE(next_record(c, ops) == 1);
  require_entry(c, BitstreamEntry::kEnterBlock, 15);
  REQUIRE(c.depth() == 2);
  c.skip_block();
  REQUIRE(c.depth() == 1);
  REQUIRE(c.block_id() == 8);
  REQUIRE(next_record(c, ops) == 4);
  REQUIRE(ops == std::vector<uint64_t>{4});
  REQUIRE(c.abbrevs_defined() == 0);
  require_entry(c, BitstreamEntry::kEndBlock, 8);
  require_entry(c, BitstreamEntry::kEndOfStream);

  auto stats = bitstream_statistics(w.bytes(), "t.bc");
  REQUIRE(stats[15] == BitstreamBlockStats{1, 1, 0, 1});
  REQUIRE(stats[16] == BitstreamBlockStats{1, 1, 0, 0});
}

TEST_CASE("bitstream: the wrapper header names where the stream is", "[bitstream]") {
  BitWriter w;
  w.enter(8, 3);
  w.unabbrev(5, {6});
  w.end();
  std::string stream = w.bytes();
  std::string file(20, '\0');
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) file[at + i] = char(v >> (8 * i));
  };
  put32(0, 0x0B17C0DE);
  put32(8, 24);  // the stream starts after 4 bytes of padding
  put32(12, uint32_t(stream.size()));
  file += std::string(4, 'x') + stream + "trailing";
  REQUIRE(unwrap_bitcode(file, "w.bc") == stream);
  REQUIRE(bitstream_statistics(file, "w.bc")[8] == BitstreamBlockStats{1, 1, 0, 0});

  put32(12, uint32_t(stream.size() + 100));
  REQUIRE_THROWS_WITH(unwrap_bitcode(file, "w.bc"), Catch::Contains("runs past the end of the file"));
  REQUIRE_THROWS_WITH(unwrap_bitcode("BC\xC0", "w.bc"), Catch::Contains("not LLVM bitcode"));
  REQUIRE_THROWS_WITH(unwrap_bitcode(std::string("\xDE\xC0\x17\x0B", 4), "w.bc"), Catch::Contains("truncated"));
}

TEST_CASE("bitstream: a stream cut at any byte is refused, naming where", "[bitstream][hostile]") {
  const std::string whole = block_info_stream();
  // Cut between two top-level blocks, a stream is whole: those cuts are read.
  std::vector<size_t> whole_at = {4};
  BitstreamCursor c(whole, "t.bc");
  std::vector<uint64_t> ops;
  for (BitstreamEntry e = c.advance(); e.kind != BitstreamEntry::kEndOfStream; e = c.advance()) {
    if (e.kind == BitstreamEntry::kRecord) c.read_record(e.id, ops);
    if (e.kind == BitstreamEntry::kEndBlock && c.depth() == 0) whole_at.push_back(c.bit_offset() / 8);
  }
  REQUIRE(whole_at.size() == 5);
  for (size_t size = 4; size < whole.size(); ++size) {
    CAPTURE(size);
    std::string cut = whole.substr(0, size);
    if (std::find(whole_at.begin(), whole_at.end(), size) != whole_at.end()) walk(cut);
    else  // a block's length runs past the cut, or the cut is not of whole words
      REQUIRE_THAT(refusal(cut), Catch::Matches(".*(top level|block [0-9]+) at bit [0-9]+: .*"));
    // Padded to whole words with zeros, a cut may be a stream whose last block ends
    // early (a zero abbreviation id is END_BLOCK), or is refused.
    cut.resize((size + 3) / 4 * 4, '\0');
    try {
      walk(cut);
    } catch (const KilnError& e) {
      REQUIRE(e.code() == kExitBadInput);
      REQUIRE_THAT(e.what(), Catch::Matches(".*(top level|block [0-9]+) at bit [0-9]+: .*"));
    }
  }
}

TEST_CASE("bitstream: hostile counts, lengths, ids and nesting are refused before use", "[bitstream][hostile]") {
  auto in_block = [](auto&& body) {
    BitWriter w;
    w.enter(8, 4);
    body(w);
    w.end();
    return w.bytes();
  };
  SECTION("an undefined abbreviation id") {
    std::string bytes = in_block([](BitWriter& w) {
      w.define_abbrev({kCode7});
      w.abbrev_id(6);
    });
    REQUIRE_THAT(refusal(bytes), Catch::Contains("block 8 at bit") && Catch::Contains("abbreviation id 6 not defined"));
  }
  SECTION("a block longer than the stream") {
    BitWriter w;
    w.enter(8, 3);
    w.unabbrev(1, {});
    w.end();
    std::string bytes = w.bytes();
    bytes[8] = char(0xFF);  // the length word's low byte: 255 words
    REQUIRE_THAT(refusal(bytes), Catch::Contains("top level at bit 96: block 8 of 255 words runs past the end"));
  }
  SECTION("an array of 2^40 elements") {
    std::string bytes = in_block([](BitWriter& w) {
      w.define_abbrev({kCode7, kArray, fixed_op(8)});
      w.abbrev_id(4);
      w.vbr(uint64_t(1) << 40, 6);
    });
    REQUIRE_THAT(refusal(bytes), Catch::Contains("block 8 at bit") && Catch::Contains("array of 1099511627776"));
  }
  SECTION("a blob of 2^50 bytes") {
    std::string bytes = in_block([](BitWriter& w) {
      w.define_abbrev({kCode7, kBlob});
      w.abbrev_id(4);
      w.vbr(uint64_t(1) << 50, 6);
    });
    REQUIRE_THAT(refusal(bytes), Catch::Contains("block 8 at bit") && Catch::Contains("blob of"));
  }
  SECTION("a record of 2^60 operands") {
    std::string bytes = in_block([](BitWriter& w) {
      w.abbrev_id(3);
      w.vbr(1, 6);
      w.vbr(uint64_t(1) << 60, 6);
    });
    REQUIRE_THAT(refusal(bytes), Catch::Contains("block 8 at bit") && Catch::Contains("record of 1152921504606846976"));
  }
  SECTION("an abbreviation of 2^30 operands") {
    std::string bytes = in_block([](BitWriter& w) {
      w.abbrev_id(2);
      w.vbr(uint64_t(1) << 30, 5);
    });
    REQUIRE_THAT(refusal(bytes), Catch::Contains("block 8 at bit") && Catch::Contains("abbreviation of 1073741824"));
  }
  SECTION("a VBR field over 64 bits") {
    std::string bytes = in_block([](BitWriter& w) {
      w.abbrev_id(3);
      for (int i = 0; i < 14; ++i) w.fixed(0x3F, 6);
      w.fixed(0, 6);
    });
    REQUIRE_THAT(refusal(bytes), Catch::Contains("block 8 at bit") && Catch::Contains("VBR field over 64 bits"));
  }
  SECTION("a fixed field 33 bits wide, an array in the wrong place, a blob as array element") {
    for (auto ops : {std::vector<BitWriter::Op>{kCode7, fixed_op(33)},
                     {kCode7, kArray, fixed_op(3), fixed_op(3)},
                     {kCode7, kArray, kBlob},
                     {kArray, kChar6},
                     {kCode7, vbr_op(1)}}) {
      std::string bytes = in_block([&](BitWriter& w) { w.define_abbrev(ops); });
      REQUIRE_THAT(refusal(bytes), Catch::Contains("block 8 at bit"));
    }
  }
  SECTION("blocks nested 100 deep") {
    BitWriter w;
    for (int i = 0; i < 100; ++i) w.enter(20 + i, 2);
    for (int i = 0; i < 100; ++i) w.end();
    REQUIRE_THAT(refusal(w.bytes()), Catch::Contains("block 83 at bit") && Catch::Contains("nested over 64 deep"));
  }
  SECTION("END_BLOCK before the block's length ends it") {
    std::string bytes = in_block([](BitWriter& w) { w.unabbrev(1, {}); });
    bytes[8] = char(bytes[8] + 1);
    bytes += std::string(4, '\0');
    REQUIRE_THAT(refusal(bytes), Catch::Contains("block 8 at bit") && Catch::Contains("END_BLOCK before the end"));
  }
  SECTION("a record at the top level, and a stream not of whole words") {
    BitWriter w;
    w.abbrev_id(3);
    REQUIRE_THAT(refusal(w.bytes()), Catch::Contains("top level at bit 34: abbreviation id 3 at the top level"));
    REQUIRE_THAT(refusal(w.bytes() + "x"), Catch::Contains("top level at bit 0: bitcode stream of 9 bytes"));
  }
}

TEST_CASE("bitstream: literal operands cannot expand a short stream without bound", "[bitstream][hostile]") {
  std::string bytes = [] {
    BitWriter w;
    w.enter(8, 3);
    std::vector<BitWriter::Op> ops(60, kCode7);
    w.define_abbrev(ops);
    for (int i = 0; i < 100000; ++i) w.abbrev_id(4);  // 3 bits a record, 59 operands each
    w.end();
    return w.bytes();
  }();
  REQUIRE_THAT(refusal(bytes), Catch::Contains("block 8 at bit") && Catch::Contains("more literal operands"));
}

TEST_CASE("bitstream: random corruption of a valid stream is read or refused, never worse", "[bitstream][hostile]") {
  const std::string whole = block_info_stream();
  std::mt19937 random(7);
  for (int round = 0; round < 20000; ++round) {
    std::string bytes = whole;
    for (int flips = 1 + int(random() % 4); flips > 0; --flips)
      bytes[4 + random() % (bytes.size() - 4)] ^= char(1 << (random() % 8));
    try {
      walk(bytes);
    } catch (const KilnError& e) {
      REQUIRE(e.code() == kExitBadInput);
    }
  }
}

TEST_CASE("bitstream: the modules that crashed LLVM's reader are refused, naming where", "[bitstream][hostile]") {
  for (const char* name : {"crash-sigsegv.bc", "crash-sigtrap.bc"}) {
    std::string path = std::string(KILN_TEST_DATA) + "/" + name, bytes = read_file(path);
    CAPTURE(path);
    try {
      bitstream_statistics(bytes, path);
      FAIL("accepted");
    } catch (const KilnError& e) {
      REQUIRE(e.code() == kExitBadInput);
      REQUIRE_THAT(e.what(), Catch::Matches(".*: block [0-9]+ at bit [0-9]+: .*"));
    }
  }
}

TEST_CASE("bitstream: a record not read is dropped by the next advance, SETBID still honoured", "[bitstream]") {
  const std::string bytes = block_info_stream();
  BitstreamCursor c(bytes, "t.bc");
  std::vector<uint64_t> ops;
  size_t records = 0;
  for (BitstreamEntry e = c.advance(); e.kind != BitstreamEntry::kEndOfStream; e = c.advance()) {
    records += e.kind == BitstreamEntry::kRecord;
    if (e.kind == BitstreamEntry::kRecord && c.block_id() == 10) REQUIRE(c.read_record(e.id, ops) == 11);
  }
  REQUIRE(records == 8);
  REQUIRE(c.bit_offset() == bytes.size() * 8);
}

TEST_CASE("bitstream: reading a record that was not announced is kiln's bug, not the file's", "[bitstream]") {
  const std::string bytes = block_info_stream();
  BitstreamCursor c(bytes, "t.bc");
  std::vector<uint64_t> ops;
  require_entry(c, BitstreamEntry::kEnterBlock, 0);
  BitstreamEntry e = c.advance();
  REQUIRE(e.kind == BitstreamEntry::kRecord);
  try {
    c.read_record(e.id + 1, ops);
    FAIL("read");
  } catch (const KilnError& error) {
    REQUIRE(error.code() == kExitInternal);
  }
  c.read_record(e.id, ops);
  REQUIRE_THROWS_AS(c.read_record(e.id, ops), KilnError);
}

TEST_CASE("bitstream: each BLOCKINFO replaces the last, as in a file of several modules", "[bitstream]") {
  BitWriter w;
  for (uint64_t module = 0; module < 2; ++module) {
    w.enter(8, 3);
    w.enter(0, 2);
    w.unabbrev(1, {9});
    w.define_abbrev({{true, 0, 20 + module}, fixed_op(unsigned(4 + module))});
    w.end();
    w.enter(9, 3);
    w.abbrev_id(4);
    w.fixed(module + 1, unsigned(4 + module));
    w.end();
    w.end();
  }
  const std::string bytes = w.bytes();
  BitstreamCursor c(bytes, "t.bc");
  std::vector<uint64_t> ops;
  std::vector<std::vector<uint64_t>> block9;  // code, operands
  for (BitstreamEntry e = c.advance(); e.kind != BitstreamEntry::kEndOfStream; e = c.advance()) {
    if (e.kind != BitstreamEntry::kRecord || c.block_id() != 9) continue;
    uint32_t code = c.read_record(e.id, ops);
    block9.push_back({code});
    block9.back().insert(block9.back().end(), ops.begin(), ops.end());
  }
  REQUIRE(block9 == std::vector<std::vector<uint64_t>>{{20, 1}, {21, 2}});
}
