#include "bitstream.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>
#include <utility>

#include "error.h"

namespace kiln {

static_assert(std::endian::native == std::endian::little, "fields are read as little-endian words");

namespace {

constexpr uint32_t kWrapperMagic = 0x0B17C0DE;
constexpr unsigned kTopLevelAbbrevWidth = 2;
constexpr unsigned kMaxChunkWidth = 32;  // LLVM's MaxChunkSize: wider fixed or VBR fields are refused
constexpr uint32_t kBlockInfoId = 0;
constexpr uint32_t kSetBid = 1;
enum : uint32_t {
  kEndBlockId = 0,
  kEnterSubblockId = 1,
  kDefineAbbrevId = 2,
  kUnabbrevRecordId = 3,
  kFirstAbbrevId = 4
};

uint32_t le32(std::string_view bytes, size_t at) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + at, 4);
  return v;
}

constexpr char kChar6Alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._";

// The fewest bits one operand of this encoding can take: what bounds an array's count.
unsigned min_bits(const AbbrevOp& op) { return op.kind == AbbrevOp::kChar6 ? 6 : unsigned(op.value); }

// Where a record's operands go: room(n) before a run of n (a count checked against the
// bits left, or an abbreviation's scalars), then put() for each, or put_each(n, next)
// for an array's n, next() giving each in turn. A vector is appended to operand by
// operand, as it always was; a RecordOps is made room in once per run and written
// through a pointer kept in a register.
template <class Ops>
struct OpsWriter;
template <>
struct OpsWriter<std::vector<uint64_t>> {
  std::vector<uint64_t>& ops;
  void room(size_t) {}
  void put(uint64_t value) { ops.push_back(value); }
  template <class Next>
  [[gnu::always_inline]] void put_each(uint64_t n, Next&& next) {
    for (uint64_t i = 0; i < n; ++i) put(next());
  }
};
template <>
struct OpsWriter<RecordOps> {
  RecordOps& ops;
  uint64_t* at = nullptr;
  void room(size_t n) { at = ops.extend(n); }
  void put(uint64_t value) { *at++ = value; }
  template <class Next>
  [[gnu::always_inline]] void put_each(uint64_t n, Next&& next) {
    for (uint64_t i = 0; i < n; ++i) put(next());
  }
};
// A RecordOps for a reader whose records' VBR6 fields are often three chunks long (the
// debug metadata's: line numbers, metadata ids in the thousands): in unabbreviated
// records and compiled abbreviations alike, they are tested for a third chunk before
// the general path. For a function block's records (relative ids and type ids, most two
// chunks at most) that test cost more than it spared, in registers as much as in
// instructions, at debug info 2 as well.
struct LongFieldOps {
  RecordOps& ops;
  void clear() { ops.clear(); }
  bool empty() const { return ops.empty(); }
  uint64_t operator[](size_t i) const { return ops[i]; }
};
template <>
struct OpsWriter<LongFieldOps> : OpsWriter<RecordOps> {
  explicit OpsWriter(LongFieldOps& o) : OpsWriter<RecordOps>{o.ops} {}
};
// An OperandBytes's record goes to its bytes, `width` of them an operand, or to its
// operands, eight bytes each (the host is little-endian like the stream): start_record()
// chose where when the code was read.
template <>
struct OpsWriter<OperandBytes> {
  OperandBytes& ops;
  const unsigned width = ops.in_bytes ? ops.width : 8;
  uint8_t* at = nullptr;
  void room(size_t n) {
    if (!ops.in_bytes) {
      at = reinterpret_cast<uint8_t*>(ops.ops.extend(n));
      return;
    }
    // n was checked against the bits left (or is an abbreviation's scalars): at most
    // 64 bytes a bit, as for operands.
    const size_t size = ops.bytes.size();
    ops.bytes.resize(size + n * width);
    at = ops.bytes.data() + size;
  }
  void put(uint64_t value) {
    if (width == 8) {
      std::memcpy(at, &value, 8);
    } else if (width == 1) {
      *at = uint8_t(value);
    } else if (width == 2) {
      std::memcpy(at, &value, 2);
    } else {  // 4, as read_record() checked
      std::memcpy(at, &value, 4);
    }
    at += width;
  }
  // An array's elements (a string's characters, a data record's), the width chosen once
  // for all of them rather than at each as put() does.
  template <class Next>
  [[gnu::always_inline]] void put_each(uint64_t n, Next&& next) {
    switch (width) {
      case 1:
        for (uint64_t i = 0; i < n; ++i) *at++ = uint8_t(next());
        break;
      case 2:
        put_each_le<uint16_t>(n, next);
        break;
      case 4:
        put_each_le<uint32_t>(n, next);
        break;
      default:  // 8, as read_record() checked
        put_each_le<uint64_t>(n, next);
        break;
    }
  }
  // `n` 8-bit fields from bit `pos` of `stream` into bytes (a string's characters; 64
  // bits of the stream at least follow them): eight a step, each load's bytes shifted
  // into place, as the fields need not start on a byte.
  void put_bytes(const char* stream, uint64_t pos, uint64_t n) {
    const char* from = stream + (pos >> 3);
    const unsigned shift = pos & 7;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t word;
      std::memcpy(&word, from + i, 8);
      word >>= shift;
      if (shift) word |= uint64_t(uint8_t(from[i + 8])) << (64 - shift);
      std::memcpy(at + i, &word, 8);
    }
    for (; i < n; ++i) {
      uint16_t pair;
      std::memcpy(&pair, from + i, 2);
      at[i] = uint8_t(pair >> shift);
    }
    at += n;
  }
  template <class Word, class Next>
  [[gnu::always_inline]] void put_each_le(uint64_t n, Next& next) {
    for (uint64_t i = 0; i < n; ++i, at += sizeof(Word)) {
      const Word value = Word(next());
      std::memcpy(at, &value, sizeof(Word));
    }
  }
};

// Once a record's code is read, before its operands: an OperandBytes chooses where they go.
template <class Ops>
void start_record(Ops&, uint64_t) {}
void start_record(OperandBytes& ops, uint64_t code) { ops.in_bytes = code < 64 && (ops.codes >> code & 1); }

}  // namespace

void RecordOps::grow(size_t n) {
  size_t capacity = std::max({2 * capacity_, size_ + n, size_t(16)});
  std::unique_ptr<uint64_t[]> data(new uint64_t[capacity]);
  if (size_) std::memcpy(data.get(), data_.get(), size_ * sizeof(uint64_t));
  data_ = std::move(data);
  capacity_ = capacity;
}

std::string_view unwrap_bitcode(std::string_view file, const std::string& path) {
  if (file.size() >= 4 && le32(file, 0) == kWrapperMagic) {
    // The wrapper: magic, version, offset, size, CPU type (five 32-bit words).
    if (file.size() < 20) throw KilnError(kExitBadInput, path, "bitcode wrapper header truncated");
    uint64_t offset = le32(file, 8), size = le32(file, 12);
    if (offset + size > file.size())
      throw KilnError(kExitBadInput, path,
                      "bitcode wrapper's range (offset " + std::to_string(offset) + ", size " + std::to_string(size) +
                          ") runs past the end of the file (" + std::to_string(file.size()) + " bytes)");
    file = file.substr(offset, size);
  }
  if (file.size() < 4 || file.substr(0, 4) != std::string_view("BC\xC0\xDE", 4))
    throw KilnError(kExitBadInput, path, "not LLVM bitcode (no 'BC' 0xC0DE magic)");
  return file;
}

BitstreamCursor::BitstreamCursor(std::string_view file, std::string path)
    : bytes_(unwrap_bitcode(file, path)), path_(std::move(path)) {
  if (bytes_.size() % 4 != 0)
    fail("bitcode stream of " + std::to_string(bytes_.size()) + " bytes is not a whole number of 32-bit words");
  end_ = limit_ = uint64_t(bytes_.size()) * 8;
  pos_ = 32;  // past the magic
  literal_budget_ = 4 * end_ + (1u << 20);
}

void BitstreamCursor::fail(const std::string& why) const {
  std::string where = scopes_.empty() ? "top level" : "block " + std::to_string(scopes_.back().block_id);
  throw KilnError(kExitBadInput, path_, where + " at bit " + std::to_string(pos_) + ": " + why);
}

void BitstreamCursor::fail_past_end(unsigned width) const {
  fail("a field of " + std::to_string(width) + " bits runs past the end of the " +
       (scopes_.empty() ? "stream" : "block") + " (" + std::to_string(limit_ - pos_) + " bits left)");
}

uint64_t BitstreamCursor::read_slow(unsigned width) {
  if (width == 0) return 0;
  if (width > 56) {  // one 8-byte load holds 56 bits wherever they start in a byte
    uint64_t low = read(32);
    return low | read(width - 32) << 32;
  }
  if (width > limit_ - pos_) fail_past_end(width);
  size_t byte = pos_ >> 3;
  uint64_t word = 0;
  if (byte + 8 <= bytes_.size()) std::memcpy(&word, bytes_.data() + byte, 8);
  else  // the stream's last 7 bytes
    std::memcpy(&word, bytes_.data() + byte, bytes_.size() - byte);
  uint64_t value = (word >> (pos_ & 7)) & ((uint64_t(1) << width) - 1);
  pos_ += width;
  return value;
}

namespace {

// A VBR field of `width`-bit chunks that ends within `word`, a peek() (57 bits at
// least): its value, and in `used` its bits. False if it does not end there. The k-th
// chunk ends at bit k * width <= 57 and its payload at bit k * (width - 1), so no value
// decoded here can pass 64 bits: the slow path's check is not needed.
[[gnu::always_inline]] inline bool vbr_in_word(uint64_t word, unsigned width, uint64_t& value, unsigned& used) {
  const uint64_t more = uint64_t(1) << (width - 1);
  if (!(word & more)) [[likely]] {  // one chunk (a width is at most 32): most fields, tested first
    value = word & (more - 1);
    used = width;
    return true;
  }
  uint64_t v = word & (more - 1);
  word >>= width;
  for (unsigned end = 2 * width, shift = width - 1; end <= 57; end += width, shift += width - 1, word >>= width) {
    v |= (word & (more - 1)) << shift;
    if (!(word & more)) {
      value = v;
      used = end;
      return true;
    }
  }
  return false;
}

// The same for a width known at compile time (VBR6: unabbreviated records, array
// counts and most abbreviated fields). The first continuation bit that is clear gives
// the field's length; chunk i's payload then moves right by i bits into the value.
// kThree: a third chunk is tested for before the general path, for records whose fields
// are often that long (see LongFieldOps).
template <unsigned kWidth, bool kThree = false>
[[gnu::always_inline]] inline bool vbr_in_word(uint64_t word, uint64_t& value, unsigned& used) {
  constexpr uint64_t kMore = uint64_t(1) << (kWidth - 1), kPayload = kMore - 1;
  constexpr uint64_t kContinues = [] {
    uint64_t bits = 0;
    for (unsigned end = kWidth; end <= 57; end += kWidth) bits |= kMore << (end - kWidth);
    return bits;
  }();
  if (!(word & kMore)) [[likely]] {
    value = word & kPayload;
    used = kWidth;
    return true;
  }
  uint64_t v = (word & kPayload) | ((word >> 1) & (kPayload << (kWidth - 1)));
  if (!(word & kMore << kWidth)) [[likely]] {  // two chunks: most relative value ids and type ids
    value = v;
    used = 2 * kWidth;
    return true;
  }
  if constexpr (kThree) {
    v |= (word >> 2) & (kPayload << 2 * (kWidth - 1));
    if (!(word & kMore << 2 * kWidth)) [[likely]] {
      value = v;
      used = 3 * kWidth;
      return true;
    }
  }
  uint64_t last = ~word & kContinues;
  if (!last) return false;
  unsigned end = unsigned(std::countr_zero(last)) + 1;
  // The chunks after those taken, unrolled: each is taken while it ends within the
  // field, and the fold stops at the first that does not.
  static_assert(57 / kWidth == 9, "the chunks below are VBR6's nine");
  auto gather = [&]<unsigned... kChunk>(std::integer_sequence<unsigned, kChunk...>) {
    (void)(((kChunk + 1) * kWidth <= end && (v |= (word >> kChunk) & (kPayload << kChunk * (kWidth - 1)), true)) &&
           ...);
  };
  if constexpr (kThree) gather(std::integer_sequence<unsigned, 3, 4, 5, 6, 7, 8>{});
  else gather(std::integer_sequence<unsigned, 2, 3, 4, 5, 6, 7, 8>{});
  value = v;
  used = end;
  return true;
}

}  // namespace

uint64_t BitstreamCursor::read_vbr_slow(unsigned width) {
  // Near a block's end (its limit, not the stream's), the load is still within the
  // stream: a field that ends within it and within the block is taken from it, as most
  // of a small block's are.
  if (end_ - pos_ >= 64) {
    uint64_t value;
    unsigned used;
    if (vbr_in_word(peek(bytes_.data(), pos_), width, value, used) && used <= limit_ - pos_) {
      pos_ += used;
      return value;
    }
  }
  // Near the stream's end or the block's, or over 57 bits: chunk by chunk, each read
  // checked (a field the block cannot hold fails where its chunk does).
  const uint64_t more = uint64_t(1) << (width - 1);
  uint64_t piece = read(width);
  uint64_t value = piece & (more - 1);
  for (unsigned shift = width - 1; piece & more; shift += width - 1) {
    piece = read(width);
    uint64_t chunk = piece & (more - 1);
    if (shift >= 64 || (chunk >> (64 - shift)) != 0) fail("VBR field over 64 bits");
    value |= chunk << shift;
  }
  return value;
}

void BitstreamCursor::align32() {
  uint64_t aligned = (pos_ + 31) & ~uint64_t(31);
  if (aligned > limit()) fail("alignment runs past the end of the block");
  pos_ = aligned;
}

namespace {

// Out of line, so that the lookup before it is inlined into advance().
[[noreturn, gnu::noinline, gnu::cold]] void undefined_abbrev(const BitstreamCursor& c, uint32_t abbrev_id,
                                                             size_t defined) {
  c.fail("abbreviation id " + std::to_string(abbrev_id) + " not defined (" + std::to_string(defined) + " are)");
}

}  // namespace

[[gnu::always_inline]] inline const Abbrev& BitstreamCursor::abbrev(uint32_t abbrev_id) const {
  const Scope& scope = scopes_.back();
  size_t index = abbrev_id - kFirstAbbrevId;
  if (index < scope.info_abbrevs) return (*scope.info)[index];
  if (index < scope.abbrevs) return scope.local[index - scope.info_abbrevs];
  undefined_abbrev(*this, abbrev_id, scope.abbrevs);
}

BitstreamEntry BitstreamCursor::advance_slow() {
  if (pending_record_) read_record(pending_record_, dropped_);
  for (;;) {
    if (scopes_.empty()) {
      if (pos_ == end_) return {BitstreamEntry::kEndOfStream, 0};
      uint32_t id = uint32_t(read(kTopLevelAbbrevWidth));
      if (id != kEnterSubblockId)
        fail("abbreviation id " + std::to_string(id) + " at the top level, where only blocks may be");
      enter_block();
      return {BitstreamEntry::kEnterBlock, scopes_.back().block_id};
    }
    uint32_t id = uint32_t(read(scopes_.back().abbrev_width));
    if (id >= kUnabbrevRecordId) [[likely]] {  // records are most entries
      // Refuses an undefined abbreviation here, where the record starts.
      pending_abbrev_ = id == kUnabbrevRecordId ? nullptr : &abbrev(id);
      pending_record_ = id;
      return {BitstreamEntry::kRecord, id};
    }
    if (id == kEnterSubblockId) {
      enter_block();
      return {BitstreamEntry::kEnterBlock, scopes_.back().block_id};
    }
    if (id == kEndBlockId) {
      uint32_t block = scopes_.back().block_id;
      end_block();
      return {BitstreamEntry::kEndBlock, block};
    }
    define_abbrev();  // kDefineAbbrevId, the one id left
  }
}

void BitstreamCursor::enter_block() {
  uint64_t block_id = read_vbr(8);
  if (block_id >= kNoBlock) fail("block id " + std::to_string(block_id) + " over 32 bits");
  if (scopes_.size() >= kMaxDepth) fail("blocks nested over " + std::to_string(kMaxDepth) + " deep");
  uint64_t width = read_vbr(4);
  if (width == 0 || width > kMaxChunkWidth)
    fail("block " + std::to_string(block_id) + " has abbreviation ids " + std::to_string(width) + " bits wide");
  align32();
  uint64_t words = read(32);
  if (words * 32 > limit() - pos_)
    fail("block " + std::to_string(block_id) + " of " + std::to_string(words) + " words runs past the end of the " +
         (scopes_.empty() ? "stream" : "block around it"));
  Scope scope{uint32_t(block_id), unsigned(width), pos_, pos_ + words * 32, nullptr, 0, {}, 0};
  if (scope.block_id == kBlockInfoId) {
    block_info_target_ = kNoBlock;
    if (!block_info_->empty()) {
      replaced_block_info_.push_back(std::move(block_info_));
      block_info_ = std::make_unique<BlockInfo>();
    }
  }
  if (auto it = block_info_->find(scope.block_id); it != block_info_->end()) {
    scope.info = &it->second;
    scope.info_abbrevs = scope.abbrevs = it->second.size();
  }
  limit_ = scope.end;
  scopes_.push_back(std::move(scope));
}

void BitstreamCursor::pop_scope() {
  scopes_.pop_back();
  limit_ = scopes_.empty() ? end_ : scopes_.back().end;
}

void BitstreamCursor::end_block() {
  align32();
  // A writer backpatches the length after the block is written, so the two agree.
  if (pos_ != scopes_.back().end)
    fail("END_BLOCK before the end its header gives (bit " + std::to_string(scopes_.back().end) + ")");
  pop_scope();
}

void BitstreamCursor::skip_block() {
  if (scopes_.empty()) throw KilnError(kExitInternal, path_, "skip_block at the top level");
  pos_ = scopes_.back().end;
  pending_record_ = 0;
  pop_scope();
}

BitstreamCursor::BlockMark BitstreamCursor::mark_block() const {
  if (scopes_.empty()) throw KilnError(kExitInternal, path_, "mark_block at the top level");
  BlockMark mark;
  mark.scope_ = scopes_.back();
  return mark;
}

// Over std::vector<uint64_t> and RecordOps, as read_record().
template <class Ops>
uint32_t BitstreamCursor::read_record_at_into(BlockMark& block, uint64_t at, Ops& ops, std::string_view* blob) {
  if (pending_record_) throw KilnError(kExitInternal, path_, "read_record_at with a record announced and not read");
  if (at < block.scope_.begin || at >= block.scope_.end)
    fail("record index entry " + std::to_string(at) + " outside its block (bits " + std::to_string(block.scope_.begin) +
         " to " + std::to_string(block.scope_.end) + ")");
  // The marked block becomes the innermost for one record; its abbreviations are moved
  // in and back out, not copied.
  const uint64_t resume = pos_;
  Scope& scope =
      scopes_.emplace_back(block.scope_.block_id, block.scope_.abbrev_width, block.scope_.begin, block.scope_.end,
                           block.scope_.info, block.scope_.info_abbrevs, std::vector<Abbrev>{}, block.scope_.abbrevs);
  scope.local.swap(block.scope_.local);
  struct Restore {
    BitstreamCursor& c;
    BlockMark& block;
    uint64_t resume;
    ~Restore() {
      c.scopes_.back().local.swap(block.scope_.local);
      c.pop_scope();
      c.pos_ = resume;
      c.pending_record_ = 0;
    }
  } restore{*this, block, resume};
  pos_ = at;
  limit_ = scope.end;
  uint32_t id = uint32_t(read(scope.abbrev_width));
  if (id < kUnabbrevRecordId) fail("record index entry " + std::to_string(at) + " is no record");
  pending_abbrev_ = id == kUnabbrevRecordId ? nullptr : &abbrev(id);
  pending_record_ = id;
  return read_record(id, ops, blob, nullptr);
}

uint32_t BitstreamCursor::read_record_at(BlockMark& block, uint64_t at, std::vector<uint64_t>& ops,
                                         std::string_view* blob) {
  return read_record_at_into(block, at, ops, blob);
}

uint32_t BitstreamCursor::read_record_at(BlockMark& block, uint64_t at, RecordOps& ops, std::string_view* blob) {
  return read_record_at_into(block, at, ops, blob);
}

void BitstreamCursor::resume_block(BlockMark& block, uint64_t at) {
  if (pending_record_) throw KilnError(kExitInternal, path_, "resume_block with a record announced and not read");
  if (at < block.scope_.begin || at >= block.scope_.end)
    fail("resuming block " + std::to_string(block.scope_.block_id) + " at bit " + std::to_string(at) + ", outside it");
  block.outer_ = pos_;
  block.depth_ = scopes_.size();
  scopes_.push_back(std::move(block.scope_));
  limit_ = scopes_.back().end;
  pos_ = at;
}

uint64_t BitstreamCursor::leave_block(BlockMark& block) {
  if (pending_record_) throw KilnError(kExitInternal, path_, "leave_block with a record announced and not read");
  const uint64_t at = pos_;
  if (scopes_.size() == block.depth_ + 1) {
    block.scope_ = std::move(scopes_.back());
    pop_scope();
  } else if (scopes_.size() != block.depth_) {  // else its END_BLOCK was read, which left it
    throw KilnError(kExitInternal, path_, "leave_block inside another block");
  }
  pos_ = block.outer_;
  return at;
}

void BitstreamCursor::skip_to(uint64_t at) {
  if (scopes_.empty() || pending_record_)
    throw KilnError(kExitInternal, path_, "skip_to outside a block or mid-record");
  if (at < pos_ || at > limit_)
    fail("skip to bit " + std::to_string(at) + ", behind the cursor or past the block's end (bit " +
         std::to_string(limit_) + ")");
  pos_ = at;
}

AbbrevOp BitstreamCursor::read_abbrev_op() {
  if (read(1)) return {AbbrevOp::kLiteral, read_vbr(8)};
  uint64_t kind = read(3);
  if (kind < AbbrevOp::kFixed || kind > AbbrevOp::kBlob)
    fail("abbreviation operand of unknown encoding " + std::to_string(kind));
  if (kind != AbbrevOp::kFixed && kind != AbbrevOp::kVbr) return {AbbrevOp::Kind(kind), 0};
  uint64_t width = read_vbr(5);
  if (width == 0) return {AbbrevOp::kLiteral, 0};  // as LLVM reads a zero-width field
  if (width > kMaxChunkWidth || (kind == AbbrevOp::kVbr && width < 2))
    fail(std::string(kind == AbbrevOp::kVbr ? "VBR" : "fixed") + " operand " + std::to_string(width) + " bits wide");
  return {AbbrevOp::Kind(kind), width};
}

namespace {

// A fixed or VBR operand as one of Abbrev::field; 0 for any other.
uint8_t as_field(const AbbrevOp& op) {
  // define_abbrev() allows widths of 1 to 32 bits (2 on for a VBR): 7 bits hold them.
  if (op.kind == AbbrevOp::kFixed) return uint8_t(op.value);
  if (op.kind == AbbrevOp::kVbr) return uint8_t(op.value) | Abbrev::kVbrField;
  return 0;
}

// Sets `a.fast` and the fields read_fast() reads for an abbreviation of a literal code
// (one that passes the 32-bit check), fixed and VBR fields, and perhaps an array of fixed
// or VBR elements: all a function block's abbreviations, from clang and rustc alike.
void compile(Abbrev& a) {
  const std::vector<AbbrevOp>& ops = a.ops;
  if (ops[0].kind != AbbrevOp::kLiteral || ops[0].value >= BitstreamCursor::kNoBlock) return;
  size_t end = ops.size();
  uint8_t element = 0;
  if (end >= 3 && ops[end - 2].kind == AbbrevOp::kArray) {
    element = as_field(ops[end - 1]);
    if (!element) return;
    end -= 2;
  }
  if (end - 1 > Abbrev::kMaxFastFields) return;
  for (size_t i = 1; i < end; ++i) {
    a.field[i - 1] = as_field(ops[i]);
    if (!a.field[i - 1]) return;
  }
  a.fields = uint8_t(end - 1);
  // A field read from a load takes 57 bits at most: with this many bits left, each one
  // has 64 left where it starts (and so does the array's count after them).
  a.fit_bits = uint16_t(64 + 57 * a.fields);
  a.element = element;
  a.code = uint32_t(ops[0].value);
  a.fast = true;
}

}  // namespace

// A definition whose bits are those of one read lately is a copy of that one, not read
// again: a body's own blocks define the abbreviations the last body's did (its metadata
// block, at debug info 2, most of all). The bits decide the definition, and with
// 128 bits left in the block none of the checks made reading it can fail, as they did
// not before: its operands lie within its 114 bits at most, and their count (4 bits an
// operand at least, after 5 of its own) is below a quarter of the bits left after it.
// Its bits are compared as two loads' 57 (the second empty for a short one). Only the
// definitions of blocks nested kRecallDepth deep are kept and recalled: in LLVM's
// layout those are a body's own blocks, which come again in every body, where BLOCKINFO
// and the module's blocks come once, their definitions all different.
namespace {
constexpr unsigned kLoadBits = 57;
constexpr size_t kRecallDepth = 3;
uint64_t low_bits(uint64_t word, uint64_t n) { return n >= 64 ? word : word & ((uint64_t(1) << n) - 1); }
}  // namespace

bool BitstreamCursor::recall_abbrev(Abbrev& a) {
  if (limit_ - pos_ < 128) return false;
  const uint64_t first = peek(bytes_.data(), pos_), second = peek(bytes_.data(), pos_ + kLoadBits);
  for (const KnownAbbrev& known : known_abbrevs_) {
    if (known.length == 0 || known.compiled != compile_abbrevs_ ||
        low_bits(first, std::min<uint64_t>(known.length, kLoadBits)) != known.bits[0] ||
        (known.length > kLoadBits && low_bits(second, known.length - kLoadBits) != known.bits[1]))
      continue;
    a = known.abbrev;
    pos_ += known.length;
    return true;
  }
  return false;
}

void BitstreamCursor::define_abbrev() {
  Abbrev a;
  if (scopes_.size() < kRecallDepth || !recall_abbrev(a)) read_abbrev_definition(a);
  ++abbrevs_defined_;
  Scope& scope = scopes_.back();
  const bool local = scope.block_id != kBlockInfoId;
  if (!local && block_info_target_ == kNoBlock) fail("DEFINE_ABBREV in BLOCKINFO before SETBID");
  std::vector<Abbrev>& list = local ? scope.local : (*block_info_)[block_info_target_];
  // A block defines a few (BLOCKINFO a few for each block id): room for 8 at the first
  // spares the regrowth of 1, 2 and 4, each a copy and a free. A definition takes 10
  // bits at least: some 40 bytes a bit, within the 64 a record's operands may take.
  if (list.empty()) list.reserve(8);
  list.push_back(std::move(a));
  if (local) ++scope.abbrevs;
}

// The definition at the cursor read into `a` (compiled as compile_abbrevs_ says), and
// kept for recall_abbrev() when that may recall it.
[[gnu::always_inline]] inline void BitstreamCursor::read_abbrev_definition(Abbrev& a) {
  const uint64_t start = pos_;
  uint64_t count = read_vbr(5);
  // An operand takes at least 4 bits (a literal takes 9).
  if (count == 0 || count > (limit() - pos_) / 4)
    fail("abbreviation of " + std::to_string(count) + " operands runs past the end of the block");
  std::vector<AbbrevOp>& ops = a.ops;
  ops.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    AbbrevOp op = read_abbrev_op();
    bool array = op.kind == AbbrevOp::kArray, blob = op.kind == AbbrevOp::kBlob;
    if ((array || blob) && i == 0) fail("abbreviation whose code is an array or a blob");
    if ((array && i + 2 != count) || (blob && i + 1 != count))
      fail(std::string(array ? "array" : "blob") + " operand not where it may be in an abbreviation");
    if (i > 0 && ops.back().kind == AbbrevOp::kArray && (op.kind == AbbrevOp::kLiteral || array || blob))
      fail("array element that is not a fixed, VBR or char6 field");
    ops.push_back(op);
  }
  if (compile_abbrevs_) compile(a);
  const uint64_t length = pos_ - start;
  if (scopes_.size() < kRecallDepth || limit_ - start < 128 || length > 2 * kLoadBits) return;
  KnownAbbrev& known = known_abbrevs_[next_known_++ % known_abbrevs_.size()];
  known.bits[0] = low_bits(peek(bytes_.data(), start), std::min<uint64_t>(length, kLoadBits));
  known.bits[1] = length > kLoadBits ? low_bits(peek(bytes_.data(), start + kLoadBits), length - kLoadBits) : 0;
  known.length = unsigned(length);
  known.compiled = compile_abbrevs_;
  known.abbrev = a;  // into the room of the one it replaces
}

uint64_t BitstreamCursor::read_scalar(const AbbrevOp& op) {
  switch (op.kind) {
    case AbbrevOp::kLiteral:
      if (literal_budget_ == 0) fail("more literal operands than a stream of this size may expand to");
      --literal_budget_;
      return op.value;
    case AbbrevOp::kFixed:
      return read(unsigned(op.value));
    case AbbrevOp::kVbr:
      return read_vbr(unsigned(op.value));
    case AbbrevOp::kChar6:
      return uint64_t(kChar6Alphabet[read(6)]);
    default:
      fail("array or blob operand read as a scalar");  // define_abbrev placed them; not reached
  }
}

template <class Ops>
void BitstreamCursor::read_blob(Ops& ops, std::string_view* blob) {
  uint64_t size = read_vbr(6);
  align32();
  if (size > (limit() - pos_) / 8) fail("blob of " + std::to_string(size) + " bytes runs past the end of the block");
  std::string_view bytes = bytes_.substr(pos_ / 8, size);
  pos_ += size * 8;
  align32();
  if (blob) {
    *blob = bytes;
    return;
  }
  OpsWriter<Ops> out{ops};
  out.room(size);
  for (char c : bytes) out.put(uint8_t(c));
}

// Fields of an abbreviation, read with the position, the limit and the literal budget
// in registers (stores to the operands, 64-bit like them, would otherwise make the
// compiler reload them). Fields the inline path cannot take go through read_scalar()
// with the cursor in step, so their values and errors are those of the field alone.
struct BitstreamCursor::FieldReader {
  BitstreamCursor& c;
  const char* bytes = c.bytes_.data();
  const uint64_t limit = c.limit_;
  uint64_t pos = c.pos_, budget = c.literal_budget_;

  void sync() {
    c.pos_ = pos;
    c.literal_budget_ = budget;
  }
  // Inline like the rest: a call given this reader would keep its fields in memory.
  [[noreturn, gnu::always_inline]] void fail(const std::string& why) {
    sync();
    c.fail(why);
  }
  [[gnu::always_inline]] uint64_t slow(const AbbrevOp& op) {
    sync();
    uint64_t value = c.read_scalar(op);
    pos = c.pos_;
    return value;
  }
  [[gnu::always_inline]] uint64_t fixed(const AbbrevOp& op) {
    if (limit - pos < 64) [[unlikely]]
      return slow(op);
    uint64_t value = peek(bytes, pos) & ((uint64_t(1) << op.value) - 1);
    pos += op.value;
    return value;
  }
  [[gnu::always_inline]] uint64_t vbr(const AbbrevOp& op) {
    uint64_t value;
    unsigned used;
    if (limit - pos >= 64) [[likely]] {
      uint64_t word = peek(bytes, pos);
      if (op.value == 6 ? vbr_in_word<6>(word, value, used) : vbr_in_word(word, unsigned(op.value), value, used)) {
        pos += used;
        return value;
      }
    }
    return slow(op);
  }
  [[gnu::always_inline]] uint64_t char6(const AbbrevOp& op) {
    if (limit - pos < 64) [[unlikely]]
      return slow(op);
    uint64_t value = uint64_t(kChar6Alphabet[peek(bytes, pos) & 63]);
    pos += 6;
    return value;
  }
  // An array of `count` fixed-width or char6 elements, `count` checked against the bits
  // left (count * width <= limit - pos, width 6 for char6): with 64 bits more after
  // them, no element needs the test of its own that fixed() and char6() make, so each
  // is read from its load untested (a fixed field's mask made once). Else each is read
  // as they read it. Neither can fail: the elements lie within the limit.
  template <class Ops>
  [[gnu::always_inline]] void fixed_array(OpsWriter<Ops>& out, uint64_t count, const AbbrevOp& element) {
    const uint64_t width = element.value;
    if (limit - pos - count * width >= 64) [[likely]] {
      if constexpr (std::is_same_v<Ops, OperandBytes>) {
        if (width == 8 && out.width == 1) {
          out.put_bytes(bytes, pos, count);
          pos += 8 * count;
          return;
        }
      }
      const uint64_t mask = (uint64_t(1) << width) - 1;
      out.put_each(count, [&] {
        const uint64_t value = peek(bytes, pos) & mask;
        pos += width;
        return value;
      });
    } else {
      out.put_each(count, [&] { return fixed(element); });
    }
  }
  template <class Ops>
  [[gnu::always_inline]] void char6_array(OpsWriter<Ops>& out, uint64_t count, const AbbrevOp& element) {
    if (limit - pos - count * 6 >= 64) [[likely]] {
      out.put_each(count, [&] {
        const uint64_t value = uint64_t(kChar6Alphabet[peek(bytes, pos) & 63]);
        pos += 6;
        return value;
      });
    } else {
      out.put_each(count, [&] { return char6(element); });
    }
  }
  // One of Abbrev::field.
  [[gnu::always_inline]] uint64_t field(uint8_t f) {
    return f & Abbrev::kVbrField ? vbr(AbbrevOp{AbbrevOp::kVbr, uint64_t(f & ~Abbrev::kVbrField)})
                                 : fixed(AbbrevOp{AbbrevOp::kFixed, f});
  }
  [[gnu::always_inline]] uint64_t scalar(const AbbrevOp& op) {
    switch (op.kind) {
      case AbbrevOp::kLiteral:
        if (budget == 0) fail("more literal operands than a stream of this size may expand to");
        --budget;
        return op.value;
      case AbbrevOp::kFixed:
        return fixed(op);
      case AbbrevOp::kVbr:
        return vbr(op);
      default:  // char6: define_abbrev() placed arrays and blobs where scalars are not read
        return char6(op);
    }
  }
};

// Out of line: the records of compiled abbreviations and unabbreviated ones, most of
// them, are read inline in read_record() (read_fast() and read_unabbreviated()).
template <class Ops>
[[gnu::noinline]] uint32_t BitstreamCursor::read_abbreviated(const Abbrev& a, Ops& ops, std::string_view* blob,
                                                             CodeFilter wanted) {
  // define_abbrev() allows an array only second to last and a blob only last: the
  // scalars come first, the code among them.
  const AbbrevOp* first = a.ops.data();
  const AbbrevOp* end = first + a.ops.size();
  const AbbrevOp* tail = end[-1].kind == AbbrevOp::kBlob      ? end - 1
      : a.ops.size() >= 2 && end[-2].kind == AbbrevOp::kArray ? end - 2
                                                              : end;
  FieldReader r{*this};
  uint64_t code = r.scalar(*first);
  if (code >= kNoBlock) r.fail("record code " + std::to_string(code) + " over 32 bits");
  const bool keep = !wanted || wanted(uint32_t(code));
  start_record(ops, code);
  if (!keep) {
    for (const AbbrevOp* op = first + 1; op != tail; ++op) r.scalar(*op);
  } else {
    // Operands are appended to the caller's vector, whose capacity outlives the record:
    // nothing is allocated once it has grown, and nothing is reserved from a count in the
    // file, so a record that fails part way has taken only what it decoded.
    OpsWriter<Ops> out{ops};
    out.room(size_t(tail - first - 1));
    for (const AbbrevOp* op = first + 1; op != tail; ++op) out.put(r.scalar(*op));
  }
  if (tail == end) {
    r.sync();
    return uint32_t(code);
  }
  if (tail->kind == AbbrevOp::kBlob) {
    r.sync();
    std::string_view passed;
    read_blob(ops, keep ? blob : &passed);
    return uint32_t(code);
  }
  const AbbrevOp& element = tail[1];
  uint64_t count = r.vbr(AbbrevOp{AbbrevOp::kVbr, 6});
  if (count > (limit_ - r.pos) / min_bits(element))
    r.fail("array of " + std::to_string(count) + " elements runs past the end of the block");
  if (!keep) {
    // Fixed-width and char6 elements are passed over at once; VBR ones one by one.
    if (element.kind == AbbrevOp::kVbr) {
      for (uint64_t i = 0; i < count; ++i) r.vbr(element);
    } else {
      r.pos += count * min_bits(element);
    }
    r.sync();
    return uint32_t(code);
  }
  // One loop per element encoding: char6 strings and fixed-width arrays are most of them.
  OpsWriter<Ops> out{ops};
  out.room(count);
  switch (element.kind) {
    case AbbrevOp::kFixed:
      r.fixed_array(out, count, element);
      break;
    case AbbrevOp::kVbr:
      for (uint64_t i = 0; i < count; ++i) out.put(r.vbr(element));
      break;
    default:  // char6, the only other element define_abbrev() allows
      r.char6_array(out, count, element);
      break;
  }
  r.sync();
  return uint32_t(code);
}

// A record of a compiled abbreviation (Abbrev::fast), kept whole: what read_abbreviated()
// reads of it, read in the same order with the same checks, failures and slow paths.
template <class Ops>
[[gnu::always_inline]] inline uint32_t BitstreamCursor::read_fast(const Abbrev& a, Ops& ops) {
  FieldReader r{*this};
  // The code, a literal, takes one of the budget as in read_scalar().
  if (r.budget == 0) r.fail("more literal operands than a stream of this size may expand to");
  --r.budget;
  start_record(ops, a.code);
  OpsWriter<Ops> out{ops};
  out.room(a.fields);
  const uint8_t* f = a.field;
  const uint8_t* const fields_end = f + a.fields;
  // With fit_bits left, no field needs a test of its own. A VBR longer than its load
  // goes to the tested loop after, with the fields that follow it.
  if (r.limit - r.pos >= a.fit_bits) [[likely]] {
    for (; f != fields_end; ++f) {
      const uint64_t word = peek(r.bytes, r.pos);
      uint64_t value;
      if (*f & Abbrev::kVbrField) {
        const unsigned width = *f & ~Abbrev::kVbrField;
        unsigned used;
        if (!(width == 6 ? vbr_in_word<6, std::is_same_v<Ops, LongFieldOps>>(word, value, used)
                         : vbr_in_word(word, width, value, used)))
          break;
        r.pos += used;
      } else {
        value = word & ((uint64_t(1) << *f) - 1);
        r.pos += *f;
      }
      out.put(value);
    }
  }
  for (; f != fields_end; ++f) out.put(r.field(*f));
  if (a.element) {
    uint64_t count = r.vbr(AbbrevOp{AbbrevOp::kVbr, 6});
    // An element takes its width at least (a VBR's first chunk).
    if (count > (r.limit - r.pos) / (a.element & ~Abbrev::kVbrField))
      r.fail("array of " + std::to_string(count) + " elements runs past the end of the block");
    out.room(count);
    const AbbrevOp element{a.element & Abbrev::kVbrField ? AbbrevOp::kVbr : AbbrevOp::kFixed,
                           uint64_t(a.element & ~Abbrev::kVbrField)};
    if (a.element == (6 | Abbrev::kVbrField)) {  // a GEP's indices
      for (uint64_t i = 0; i < count; ++i) out.put(r.vbr(AbbrevOp{AbbrevOp::kVbr, 6}));
    } else if (element.kind == AbbrevOp::kVbr) {
      for (uint64_t i = 0; i < count; ++i) out.put(r.vbr(element));
    } else {
      r.fixed_array(out, count, element);
    }
  }
  r.sync();
  return a.code;
}

template <class Ops>
[[gnu::always_inline]] inline uint32_t BitstreamCursor::read_unabbreviated(Ops& ops, CodeFilter wanted) {
  // Code, count and operands are VBR6 fields, most of a function block at debug info 2
  // (DEBUG_LOC and debug records): decoded with the position in a register, which
  // stores to `ops` would otherwise make the compiler reload.
  const char* bytes = bytes_.data();
  const uint64_t limit = limit_;
  uint64_t pos = pos_;
  constexpr bool kThree = std::is_same_v<Ops, LongFieldOps>;
  auto vbr6 = [&] {
    uint64_t value;
    unsigned used;
    if (limit - pos >= 64 && vbr_in_word<6, kThree>(peek(bytes, pos), value, used)) [[likely]] {
      pos += used;
      return value;
    }
    pos_ = pos;
    value = read_vbr_slow(6);
    pos = pos_;
    return value;
  };
  uint64_t raw_code = vbr6(), count = vbr6();
  pos_ = pos;
  if (raw_code >= kNoBlock) fail("record code " + std::to_string(raw_code) + " over 32 bits");
  // Each operand is a VBR6 field: 6 bits at least.
  if (count > (limit - pos) / 6)
    fail("record of " + std::to_string(count) + " operands runs past the end of the block");
  if (wanted && !wanted(uint32_t(raw_code))) {
    skip_vbr6(count);
    return uint32_t(raw_code);
  }
  start_record(ops, raw_code);
  OpsWriter<Ops> out{ops};
  out.room(count);
  for (uint64_t left = count; left > 0;) {
    // The operands that end within one load's 57 bits are taken from it one after
    // another (the bits past them read as zeros, so a field is taken only when it ends
    // within them); one the load does not hold goes through vbr6().
    unsigned used = 0;
    if (limit - pos >= 64) [[likely]] {
      uint64_t word = peek(bytes, pos), value;
      for (unsigned n; vbr_in_word<6, kThree>(word, value, n) && used + n <= 57;) {
        out.put(value);
        word >>= n;
        used += n;
        if (--left == 0) break;
      }
      pos += used;
    }
    if (used == 0) {
      out.put(vbr6());  // appended, as in read_abbreviated()
      --left;
    }
  }
  pos_ = pos;
  return uint32_t(raw_code);
}

// Passes over `count` VBR6 fields, up to nine chunks a step: a chunk whose continuation
// bit is clear ends a field. A field longer than the load, and fields near the limit,
// go through read_vbr_slow(), which checks them.
void BitstreamCursor::skip_vbr6(uint64_t count) {
  constexpr uint64_t kContinues = [] {
    uint64_t bits = 0;
    for (unsigned end = 6; end <= 57; end += 6) bits |= uint64_t(1) << (end - 1);
    return bits;
  }();
  while (count > 0) {
    uint64_t ends = can_peek() ? ~peek(bytes_.data(), pos_) & kContinues : 0;
    if (!ends) {
      read_vbr_slow(6);
      --count;
      continue;
    }
    unsigned n = unsigned(std::popcount(ends));
    if (n > count) {
      for (uint64_t k = 1; k < count; ++k) ends &= ends - 1;  // keep the count-th end lowest
      n = unsigned(count);
      pos_ += unsigned(std::countr_zero(ends)) + 1;
    } else {
      pos_ += 64 - unsigned(std::countl_zero(ends));
    }
    count -= n;
  }
}

// Inline in each read_record(), whose constant arguments drop the tests of a blob and a filter.
template <class Ops>
[[gnu::always_inline]] inline uint32_t BitstreamCursor::read_record_into(uint32_t abbrev_id, Ops& ops,
                                                                         std::string_view* blob, CodeFilter wanted) {
  if (abbrev_id != pending_record_)
    throw KilnError(kExitInternal, path_,
                    "read_record of abbreviation id " + std::to_string(abbrev_id) + ", not the record announced");
  pending_record_ = 0;
  ops.clear();
  if (blob) *blob = {};
  // advance() found the abbreviation; none is defined between it and here. A compiled
  // one's code is known before it is read: a record the filter refuses is passed over by
  // the general path (which asks the filter again: a filter is a function of the code).
  uint32_t code = abbrev_id == kUnabbrevRecordId ? read_unabbreviated(ops, wanted)
      : pending_abbrev_->fast && (!wanted || wanted(pending_abbrev_->code))
      ? read_fast(*pending_abbrev_, ops)
      : read_abbreviated(*pending_abbrev_, ops, blob, wanted);
  if (code == kSetBid && scopes_.back().block_id == kBlockInfoId) {
    if (ops.empty() || ops[0] >= kNoBlock) fail("SETBID without a 32-bit block id");
    block_info_target_ = uint32_t(ops[0]);
  }
  return code;
}

uint32_t BitstreamCursor::read_record(uint32_t abbrev_id, std::vector<uint64_t>& ops, std::string_view* blob) {
  return read_record_into(abbrev_id, ops, blob, nullptr);
}

uint32_t BitstreamCursor::read_record(uint32_t abbrev_id, std::vector<uint64_t>& ops, std::string_view* blob,
                                      CodeFilter wanted) {
  return read_record_into(abbrev_id, ops, blob, wanted);
}

uint32_t BitstreamCursor::read_record(uint32_t abbrev_id, RecordOps& ops) {
  return read_record_into(abbrev_id, ops, nullptr, nullptr);
}

uint32_t BitstreamCursor::read_record(uint32_t abbrev_id, RecordOps& ops, std::string_view* blob, CodeFilter wanted) {
  LongFieldOps long_fields{ops};  // the debug metadata reader's records
  return read_record_into(abbrev_id, long_fields, blob, wanted);
}

uint32_t BitstreamCursor::read_record(uint32_t abbrev_id, OperandBytes& ops) {
  if (ops.width != 1 && ops.width != 2 && ops.width != 4 && ops.width != 8)
    throw KilnError(kExitInternal, path_, "operands as bytes " + std::to_string(ops.width) + " wide");
  return read_record_into(abbrev_id, ops, nullptr, nullptr);
}

std::map<uint32_t, BitstreamBlockStats> bitstream_statistics(std::string_view file, const std::string& path) {
  BitstreamCursor cursor(file, path);
  std::map<uint32_t, BitstreamBlockStats> stats;
  std::vector<uint64_t> ops;
  for (;;) {
    uint32_t block = cursor.block_id();
    uint64_t defined = cursor.abbrevs_defined();
    BitstreamEntry entry = cursor.advance();
    if (cursor.abbrevs_defined() != defined) stats[block].abbrevs_defined += cursor.abbrevs_defined() - defined;
    switch (entry.kind) {
      case BitstreamEntry::kEndOfStream:
        return stats;
      case BitstreamEntry::kEnterBlock:
        ++stats[entry.id].blocks;
        break;
      case BitstreamEntry::kEndBlock:
        break;
      case BitstreamEntry::kRecord: {
        BitstreamBlockStats& s = stats[cursor.block_id()];
        ++s.records;
        s.abbreviated_records += entry.id >= kFirstAbbrevId;
        cursor.read_record(entry.id, ops);
        break;
      }
    }
  }
}

}  // namespace kiln
