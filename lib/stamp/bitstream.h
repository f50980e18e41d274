// The LLVM bitstream container (llvm.org/docs/BitCodeFormat.html) read without LLVM:
// the layer under a direct bitcode reader. It knows blocks, abbreviations, BLOCKINFO
// and records, nothing of what a record means. Input is untrusted: every count, length
// and index is checked against the bits that remain before anything is allocated or
// looped over, and a corrupt stream throws KilnError(kExitBadInput) naming the block
// and the bit offset.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln {

// The stream inside a bitcode file: the range the 0x0B17C0DE wrapper names, if there
// is one, starting at the 'BC' 0xC0DE magic. Throws KilnError(kExitBadInput) naming
// `path` for a foreign or truncated file.
std::string_view unwrap_bitcode(std::string_view file, const std::string& path);

struct BitstreamEntry {
  enum Kind : uint8_t { kEnterBlock, kEndBlock, kRecord, kEndOfStream };
  Kind kind;
  uint32_t id;  // the block's id (kEnterBlock, kEndBlock) or the record's abbreviation id
};

struct AbbrevOp {
  enum Kind : uint8_t { kLiteral, kFixed, kVbr, kArray, kChar6, kBlob };
  Kind kind;
  uint64_t value;  // the literal's value, or the width of kFixed and kVbr
};
// An abbreviation as defined, and for the shapes function blocks use (a literal code,
// then fixed and VBR fields, then perhaps an array of fixed or VBR elements) the same
// compiled when it is defined, so that a record of it is read by a loop over its fields'
// widths with no test of each operand's kind.
struct Abbrev {
  static constexpr unsigned kMaxFastFields = 15;
  static constexpr uint8_t kVbrField = 0x80;  // with a field's width in `field`: a VBR field

  std::vector<AbbrevOp> ops;
  bool fast = false;    // the shape above; the rest is set only then
  uint8_t fields = 0;   // fixed and VBR fields after the code, at most kMaxFastFields
  uint8_t element = 0;  // the array's element as a field (0: no array)
  uint8_t field[kMaxFastFields] = {};
  uint16_t fit_bits = 0;  // bits left with which every field may be read from a load untested
  uint32_t code = 0;      // the literal code (below 2^32 - 1)
};

// A record's operands as BitstreamCursor reads them for a reader of many records (a
// function body's): an array filled in place, where a std::vector tests its capacity at
// each operand. Room is made for each run of operands before it is read: the scalars of
// an abbreviation, or a count read from the stream and checked against the bits left,
// so that memory is bounded by the stream as it is with a vector.
class RecordOps {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const uint64_t& operator[](size_t i) const { return data_[i]; }
  const uint64_t* begin() const { return data_.get(); }
  const uint64_t* end() const { return data_.get() + size_; }
  uint64_t back() const { return data_[size_ - 1]; }
  void clear() { size_ = 0; }
  // Drops the first `n` operands (at most size()).
  void drop_front(size_t n) {
    if (n) std::memmove(data_.get(), data_.get() + n, (size_ - n) * sizeof(uint64_t));
    size_ -= n;
  }
  // Room for `n` more operands, written through the pointer returned.
  uint64_t* extend(size_t n) {
    if (capacity_ - size_ < n) [[unlikely]]
      grow(n);
    uint64_t* at = data_.get() + size_;
    size_ += n;
    return at;
  }

 private:
  void grow(size_t n);
  std::unique_ptr<uint64_t[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

// A record's operands for a reader that wants those of some records as bytes (a
// constants block's data, where include_bytes!'s megabytes would take eight bytes an
// operand): the code is read first, and a record whose code (below 64) has its bit in
// `codes` has each operand's low `width` bytes (1, 2, 4 or 8) written to `bytes`,
// little-endian, one after another, with `ops` left empty; any other record's operands
// go to `ops`. The room made is bounded by the stream as for operands (a count is
// checked against the bits left first).
struct OperandBytes {
  RecordOps& ops;
  std::vector<uint8_t>& bytes;
  uint64_t codes = 0;
  unsigned width = 1;
  bool in_bytes = false;  // the record just read went to `bytes`

  void clear() {
    ops.clear();
    bytes.clear();
    in_bytes = false;
  }
  bool empty() const { return ops.empty(); }
  uint64_t operator[](size_t i) const { return ops[i]; }
};

// Reads a stream entry by entry. advance() enters blocks, leaves them and defines
// abbreviations itself; a record it announces is read with read_record(), or else read
// and dropped by the next advance(). BLOCKINFO (block 0) is read like any block, its
// SETBID records and abbreviations taking effect as they are read (replacing those of
// an earlier BLOCKINFO); a skipped BLOCKINFO defines nothing.
//
// Memory is bounded by the stream: a record's operands take at most 64 bytes per bit
// of it (an array of 1-bit fields), and literal operands, which take no bits, are
// limited to 4 per bit (plus a million), so neither time nor memory can grow faster
// than the stream.
class BitstreamCursor {
  struct Scope {
    uint32_t block_id = kNoBlock;
    unsigned abbrev_width = 0;
    uint64_t begin = 0, end = 0;                // bit offsets of the block's first entry and just past its END_BLOCK
    const std::vector<Abbrev>* info = nullptr;  // BLOCKINFO's abbreviations for the block (ids 4 on)
    size_t info_abbrevs = 0;                    // how many of them it sees: those defined before it
    std::vector<Abbrev> local;                  // the block's own, after those
    size_t abbrevs = 0;                         // info_abbrevs + local.size(), kept for advance()'s test
  };

 public:
  // `file` as a whole (see unwrap_bitcode); it must outlive the cursor.
  BitstreamCursor(std::string_view file, std::string path);
  BitstreamCursor(std::string&& file, std::string path) = delete;  // it would not outlive the cursor

  BitstreamEntry advance() {
    // Records are most entries: one of a defined abbreviation (or none) whose id is in the
    // load is announced here, inline; everything else, errors included, by advance_slow().
    if (!pending_record_ && !scopes_.empty() && can_peek()) [[likely]] {
      const Scope& scope = scopes_.back();
      const uint32_t id = uint32_t(peek(bytes_.data(), pos_) & ((uint64_t(1) << scope.abbrev_width) - 1));
      const uint64_t index = uint64_t(id) - kFirstAbbrev;
      if (id == kUnabbrevRecord || (id > kUnabbrevRecord && index < scope.abbrevs)) {
        pos_ += scope.abbrev_width;
        pending_abbrev_ = id == kUnabbrevRecord ? nullptr
            : index < scope.info_abbrevs        ? &(*scope.info)[index]
                                                : &scope.local[index - scope.info_abbrevs];
        pending_record_ = id;
        return {BitstreamEntry::kRecord, id};
      }
    }
    return advance_slow();
  }
  // The record advance() just announced, whose abbreviation id it gave: returns its
  // code; its operands replace `ops`. A blob is returned in `blob` (a view into the
  // file) or, with no `blob`, appended to `ops` byte by byte, as LLVM's reader does.
  uint32_t read_record(uint32_t abbrev_id, std::vector<uint64_t>& ops, std::string_view* blob = nullptr);
  // The same for a reader that wants few of a block's records: the code is read first,
  // and the operands of a record whose code `wanted` refuses are passed over, not kept
  // (`ops` and `blob` are then left empty). `wanted` may be asked twice of a record.
  using CodeFilter = bool (*)(uint32_t code);
  uint32_t read_record(uint32_t abbrev_id, std::vector<uint64_t>& ops, std::string_view* blob, CodeFilter wanted);
  // The same into a RecordOps (a blob appended byte by byte).
  uint32_t read_record(uint32_t abbrev_id, RecordOps& ops);
  // The same into a RecordOps with a blob and a filter, as the vector form above: a
  // reader that keeps one buffer for all its records (the debug metadata reader).
  uint32_t read_record(uint32_t abbrev_id, RecordOps& ops, std::string_view* blob, CodeFilter wanted);
  // The same into `ops.ops`, or `ops.bytes` for a record whose code `ops.codes` names
  // (a blob's bytes are operands there too); sets ops.in_bytes.
  uint32_t read_record(uint32_t abbrev_id, OperandBytes& ops);
  // Leaves the innermost open block, decoding nothing more of it: jumps past its
  // END_BLOCK by the length its header gave. Right after advance() returned kEnterBlock,
  // that skips the whole block.
  void skip_block();

  uint64_t bit_offset() const { return pos_; }
  // What is left of the innermost block (of the stream at the top level), in bits: what
  // bounds the room a reader may reserve from a count the stream gives.
  uint64_t bits_left() const { return limit_ - pos_; }

  // --- Records found by position: a block that carries an index of its own records
  // (LLVM's METADATA_INDEX) is read where the index points, not record by record.
  // The innermost open block as it is now: where it lies and the abbreviations defined
  // in it so far, kept for reading its records again after it is left.
  class BlockMark {
    friend class BitstreamCursor;
    Scope scope_;
    uint64_t outer_ = 0;  // while resumed: where the cursor was, and how deep
    size_t depth_ = 0;
  };
  BlockMark mark_block() const;
  // The marked block entered again at bit `at`, one of its entries, as the innermost
  // block: advance() and read_record() read it on (it may end) until leave_block() comes
  // back to where the cursor was. A block skipped at first can so be read later, part by
  // part: leave_block() returns where the reading stopped, and the mark keeps the
  // abbreviations defined so far. No record may be announced and not read at either.
  void resume_block(BlockMark& block, uint64_t at);
  uint64_t leave_block(BlockMark& block);
  // Where the marked block's first entry starts.
  static uint64_t block_begin(const BlockMark& block) { return block.scope_.begin; }
  // Reads the record whose abbreviation id starts at bit `at` of the marked block, and
  // comes back to where the cursor was; no record may be announced and not read. Fails
  // unless a record starts there (not a block, an END_BLOCK or an abbreviation).
  uint32_t read_record_at(BlockMark& block, uint64_t at, std::vector<uint64_t>& ops, std::string_view* blob = nullptr);
  uint32_t read_record_at(BlockMark& block, uint64_t at, RecordOps& ops, std::string_view* blob = nullptr);
  // Moves forward to bit `at` of the innermost block, decoding nothing between (what is
  // skipped must define no abbreviation that follows). Fails for a bit behind the cursor
  // or past the block's end; no record may be announced and not read.
  void skip_to(uint64_t at);

  // For tests, which compare the two: abbreviations defined from now on are read by the
  // general path, not compiled (Abbrev::fast).
  void compile_abbrevs(bool on) { compile_abbrevs_ = on; }

  size_t depth() const { return scopes_.size(); }
  // How many DEFINE_ABBREVs advance() has read so far, in all blocks.
  uint64_t abbrevs_defined() const { return abbrevs_defined_; }
  // The innermost open block's id; kNoBlock at the top level.
  uint32_t block_id() const { return scopes_.empty() ? kNoBlock : scopes_.back().block_id; }
  // Throws KilnError(kExitBadInput) whose reason names the current block and bit offset
  // (for the record layer's own checks too).
  [[noreturn]] void fail(const std::string& why) const;

  static constexpr uint32_t kNoBlock = ~0u;
  static constexpr size_t kMaxDepth = 64;  // LLVM nests a few deep; a bound keeps the stack small

 private:
  // Fields are read from one 8-byte load at pos_'s byte, which holds the 57 bits from
  // pos_ at least. With 64 bits left before the limit that load cannot pass the end of
  // the stream either (limit_ <= end_, the stream's size), so the common path, inline,
  // needs that one check. Fields near the limit, VBRs that do not end within the load,
  // and errors take the out-of-line slow path, which reads the field from its start
  // chunk by chunk: what it returns or throws, and where, is what it always was.
  bool can_peek() const { return limit_ - pos_ >= 64; }
  static uint64_t peek(const char* bytes, uint64_t pos) {
    uint64_t word;
    std::memcpy(&word, bytes + (pos >> 3), 8);
    return word >> (pos & 7);
  }
  // `width` is at most kMaxChunkWidth (32) at every call, so it lies in the load.
  uint64_t read(unsigned width) {
    if (can_peek()) [[likely]] {
      uint64_t value = peek(bytes_.data(), pos_) & ((uint64_t(1) << width) - 1);
      pos_ += width;
      return value;
    }
    return read_slow(width);
  }
  // A VBR of one chunk inline; longer ones out of line (from the same load where they fit).
  uint64_t read_vbr(unsigned width) {
    if (can_peek()) [[likely]] {
      uint64_t word = peek(bytes_.data(), pos_), more = uint64_t(1) << (width - 1);
      if (!(word & more)) {
        pos_ += width;
        return word & (more - 1);
      }
    }
    return read_vbr_slow(width);
  }
  uint64_t read_slow(unsigned width);
  BitstreamEntry advance_slow();
  static constexpr uint32_t kUnabbrevRecord = 3, kFirstAbbrev = 4;  // UNABBREV_RECORD, the first defined id
  uint64_t read_vbr_slow(unsigned width);
  void align32();
  uint64_t limit() const { return limit_; }
  void pop_scope();
  [[noreturn]] void fail_past_end(unsigned width) const;
  void enter_block();
  void end_block();
  void define_abbrev();
  bool recall_abbrev(Abbrev& a);
  void read_abbrev_definition(Abbrev& a);
  AbbrevOp read_abbrev_op();
  const Abbrev& abbrev(uint32_t abbrev_id) const;
  uint64_t read_scalar(const AbbrevOp& op);
  // Over std::vector<uint64_t> and RecordOps (bitstream.cpp's OpsWriter).
  template <class Ops>
  uint32_t read_record_into(uint32_t abbrev_id, Ops& ops, std::string_view* blob, CodeFilter wanted);
  template <class Ops>
  uint32_t read_unabbreviated(Ops& ops, CodeFilter wanted);
  template <class Ops>
  uint32_t read_fast(const Abbrev& a, Ops& ops);
  void skip_vbr6(uint64_t count);
  struct FieldReader;
  template <class Ops>
  void read_blob(Ops& ops, std::string_view* blob);
  template <class Ops>
  uint32_t read_record_at_into(BlockMark& block, uint64_t at, Ops& ops, std::string_view* blob);
  template <class Ops>
  uint32_t read_abbreviated(const Abbrev& a, Ops& ops, std::string_view* blob, CodeFilter wanted);

  std::string_view bytes_;  // the stream, magic included; a whole number of 32-bit words
  std::string path_;
  uint64_t pos_ = 0, end_ = 0;
  uint64_t limit_ = 0;  // where the innermost block ends (end_ at the top level): what no read may pass
  std::vector<Scope> scopes_;
  // BLOCKINFO's abbreviations by block id. Each BLOCKINFO replaces the last, as in LLVM
  // (a file of several modules has one in each); blocks open keep the abbreviations they
  // entered with, so a replaced one is kept until the end.
  using BlockInfo = std::unordered_map<uint32_t, std::vector<Abbrev>>;
  std::unique_ptr<BlockInfo> block_info_ = std::make_unique<BlockInfo>();
  std::vector<std::unique_ptr<BlockInfo>> replaced_block_info_;
  uint32_t block_info_target_ = kNoBlock;  // SETBID's block, in BLOCKINFO
  // Literal operands cost no bits, so an abbreviation of many of them would make a short
  // stream expand into a huge one; they are limited to a few per bit of the stream.
  uint64_t literal_budget_ = 0;
  uint64_t abbrevs_defined_ = 0;
  bool compile_abbrevs_ = true;
  // Definitions read lately, each of 114 bits at most, recalled by their bits (recall_abbrev()).
  struct KnownAbbrev {
    uint64_t bits[2] = {};  // its first 57 bits, and those after
    unsigned length = 0;    // how many; 0: none yet
    bool compiled = false;  // compile_abbrevs_ when it was read
    Abbrev abbrev;
  };
  std::array<KnownAbbrev, 4> known_abbrevs_;
  unsigned next_known_ = 0;
  uint32_t pending_record_ = 0;             // the abbreviation id of a record announced and not read; 0: none
  const Abbrev* pending_abbrev_ = nullptr;  // its abbreviation, found by advance(); null for UNABBREV_RECORD
  std::vector<uint64_t> dropped_;
};

// Per block id, what a walk of every record of a stream finds (llvm-bcanalyzer's counts).
struct BitstreamBlockStats {
  uint64_t blocks = 0, records = 0, abbreviated_records = 0, abbrevs_defined = 0;
  bool operator==(const BitstreamBlockStats&) const = default;
};
std::map<uint32_t, BitstreamBlockStats> bitstream_statistics(std::string_view file, const std::string& path);

}  // namespace kiln
