// stamp_dwarf.h. One DwarfBuilder per module runs the phases in order (build() below).
// DWARF's numbers are spelled out here (DWARF 5, section 7) rather than taken from
// LLVM's headers: the core builds without LLVM.
#include "stamp_dwarf.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "error.h"
#include "stamp_object.h"  // StampData
#include "stamp_emit.h"  // kReloc64, kReloc32
#include "stamp_stages.h"  // stamp_uses, stamp_frame
#include "string_hash.h"

namespace kiln {

namespace {

enum DwarfTag : uint16_t {
  kTagFormalParameter = 0x05,
  kTagLexicalBlock = 0x0b,
  kTagMember = 0x0d,
  kTagPointer = 0x0f,
  kTagReference = 0x10,
  kTagCompileUnit = 0x11,
  kTagSubroutineType = 0x15,
  kTagUnspecifiedParameters = 0x18,
  kTagVariant = 0x19,
  kTagInheritance = 0x1c,
  kTagInlinedSubroutine = 0x1d,
  kTagPtrToMember = 0x1f,
  kTagSubrange = 0x21,
  kTagEnumerator = 0x28,
  kTagSubprogram = 0x2e,
  kTagTemplateTypeParameter = 0x2f,
  kTagVariantPart = 0x33,
  kTagVariable = 0x34,
  kTagRvalueReference = 0x42,
  kTagArray = 0x01,
  kTagClass = 0x02,
  kTagEnumeration = 0x04,
  kTagStructure = 0x13,
  kTagUnion = 0x17,
  kTagBaseType = 0x24,
};
enum DwarfAttribute : uint16_t {
  kAtName = 0x03,
  kAtStmtList = 0x10,
  kAtLowPc = 0x11,
  kAtHighPc = 0x12,
  kAtLanguage = 0x13,
  kAtCompDir = 0x1b,
  kAtProducer = 0x25,
  kAtInline = 0x20,
  kAtPrototyped = 0x27,
  kAtContainingType = 0x1d,
  kAtAbstractOrigin = 0x31,
  kAtDeclaration = 0x3c,
  kAtCallColumn = 0x57,
  kAtCallFile = 0x58,
  kAtCallLine = 0x59,
  kAtDeclFile = 0x3a,
  kAtDeclLine = 0x3b,
  kAtExternal = 0x3f,
  kAtMainSubprogram = 0x6a,
  kAtFrameBase = 0x40,
  kAtRanges = 0x55,
  kAtLinkageName = 0x6e,
  kAtLocation = 0x02,
  kAtByteSize = 0x0b,
  kAtBitSize = 0x0d,
  kAtDiscr = 0x15,
  kAtDiscrValue = 0x16,
  kAtConstValue = 0x1c,
  kAtArtificial = 0x34,
  kAtCount = 0x37,
  kAtDataMemberLocation = 0x38,
  kAtEncoding = 0x3e,
  kAtType = 0x49,
  kAtDataBitOffset = 0x6b,
  kAtAlignment = 0x88,
};
enum DwarfForm : uint8_t {
  kFormAddr = 0x01,
  kFormData2 = 0x05,
  kFormData4 = 0x06,
  kFormData1 = 0x0b,
  kFormSdata = 0x0d,
  kFormRef4 = 0x13,
  kFormString = 0x08,
  kFormStrp = 0x0e,
  kFormUdata = 0x0f,
  kFormSecOffset = 0x17,
  kFormExprloc = 0x18,
  kFormFlagPresent = 0x19,
};
constexpr uint8_t kInlineInlined = 1;  // DW_INL_inlined
constexpr uint8_t kOpReg6 = 0x56;  // DW_OP_reg6: rbp, which every stamp frame is based on
constexpr uint8_t kOpAddr = 0x03;  // DW_OP_addr: an address (relocated)
constexpr uint8_t kOpConst8u = 0x0e;            // DW_OP_const8u: an 8-byte constant
constexpr uint8_t kOpGnuPushTlsAddress = 0xe0;  // DW_OP_GNU_push_tls_address: the TLS block's address plus the top
constexpr uint8_t kOpFbreg = 0x91;  // DW_OP_fbreg: frame base (rbp) + a signed offset
// DW_ATE_* that LLVM's isUnsignedDIType calls unsigned (a discriminant's form follows it).
constexpr uint16_t kAteBoolean = 0x02, kAteUnsigned = 0x07, kAteUnsignedChar = 0x08, kAteUtf = 0x10;
enum LineOpcode : uint8_t {
  kLnsCopy = 1,
  kLnsAdvancePc = 2,
  kLnsAdvanceLine = 3,
  kLnsSetFile = 4,
  kLnsSetColumn = 5,
  kLnsNegateStmt = 6,
  kLnsSetPrologueEnd = 10,
};
enum LineExtendedOpcode : uint8_t { kLneEndSequence = 1, kLneSetAddress = 2 };
enum LineContentType : uint8_t { kLnctPath = 1, kLnctDirectoryIndex = 2 };
constexpr uint8_t kUnitCompile = 1;  // DW_UT_compile
enum RangeListEntry : uint8_t { kRleEndOfList = 0, kRleStartLength = 7 };
// The line program's special opcodes: LLVM's choices, which suit short steps.
constexpr int kLineBase = -5;
constexpr int kLineRange = 14;
constexpr uint8_t kOpcodeBase = 13;
constexpr uint8_t kStandardOpcodeLengths[kOpcodeBase - 1] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};

// The sections, by their index in StampDwarf::sections.
enum DebugSection : uint32_t { kAbbrev, kInfo, kStr, kLine, kRanges, kDebugSectionCount };

// A section's bytes while they are written: room is made ahead (never zeroed, grown
// by realloc) and each write is a store or a copy and a count, where std::string's
// push_back and append, kept out of line, were a call with its checks for every
// write. take() gives them to the section.
class Bytes {
 public:
  Bytes() = default;
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  ~Bytes() { std::free(s_); }
  size_t size() const { return size_; }
  char* data() { return s_; }
  const char* data() const { return s_; }
  void reserve(size_t n) {
    if (n > capacity_) resize_to(n);
  }
  void push_back(char c) {
    if (size_ == capacity_) [[unlikely]]
      grow(1);
    s_[size_++] = c;
  }
  void append(const char* p, size_t n) {
    if (n > capacity_ - size_) [[unlikely]]
      grow(n);
    if (n) std::memcpy(s_ + size_, p, n);
    size_ += n;
  }
  void append(std::string_view v) { append(v.data(), v.size()); }
  // An encoder's bytes written straight into the section (ByteCursor): room for `most`
  // of them made first, with one check, and those written counted after (advance).
  // Made aside and appended, each DIE and line-table row was a copy by a call to
  // memcpy of a variable size.
  char* room(size_t most) {
    if (most > capacity_ - size_) [[unlikely]]
      grow(most);
    return s_ + size_;
  }
  void advance(size_t n) { size_ += n; }
  DwarfBytes take() {
    DwarfBytes out(std::exchange(s_, nullptr), size_);
    size_ = capacity_ = 0;
    return out;
  }

 private:
  // Doubled: the sections are reserved ahead from the counts they grow with, so that
  // this is rare, and realloc moves a large block's pages rather than its bytes.
  [[gnu::noinline]] void grow(size_t n) { resize_to(std::max(size_ + n, 2 * capacity_)); }
  void resize_to(size_t n) {
    char* p = static_cast<char*>(std::realloc(s_, n));
    if (!p) throw std::bad_alloc();
    s_ = p, capacity_ = n;
  }
  char* s_ = nullptr;
  size_t size_ = 0, capacity_ = 0;  // written, and room for
};

// The encoders build their bytes aside and append them once, or write them in a
// section's room (ByteCursor): a push_back per byte was a tenth of the writer's time
// on a module with its types.
template <class Out>
void put_u8(Out& s, uint8_t v) {
  s.push_back(static_cast<char>(v));
}
template <class T, class Out>
void put_le(Out& s, T v) {
  char bytes[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) bytes[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  s.append(bytes, sizeof(T));
}
// Encoders of bytes at `bytes`, n of them so far: into a section's room (Bytes::room),
// or a variable's location within it (put_location).
struct ByteCursor {
  char* bytes;
  size_t n = 0;
  void u8(uint8_t v) { bytes[n++] = static_cast<char>(v); }
  void uleb(uint64_t v) {
    do {
      const uint8_t byte = v & 0x7f;
      v >>= 7;
      bytes[n++] = static_cast<char>(byte | (v ? 0x80 : 0));
    } while (v);
  }
  void sleb(int64_t v) {
    for (bool more = true; more;) {
      const uint8_t byte = v & 0x7f;
      v >>= 7;  // arithmetic
      more = !((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40)));
      bytes[n++] = static_cast<char>(byte | (more ? 0x80 : 0));
    }
  }
  void zero4() { std::memset(bytes + n, 0, 4), n += 4; }
  void zero8() { std::memset(bytes + n, 0, 8), n += 8; }
  void u32(uint32_t v) {
    for (int k = 0; k < 4; ++k) bytes[n++] = static_cast<char>(v >> (8 * k));
  }
};
// A section's cursor at its end, with room for `most` bytes; Bytes::advance counts them.
ByteCursor cursor(Bytes& s, size_t most) { return ByteCursor{s.room(most)}; }
void advance(Bytes& s, ByteCursor& c) { s.advance(c.n), c.n = 0; }

// One LEB128 number straight to a section (ByteCursor's encoders, no copy of them).
void put_uleb(Bytes& s, uint64_t v) {
  if (v < 0x80) return put_u8(s, static_cast<uint8_t>(v));
  ByteCursor c = cursor(s, 10);
  c.uleb(v);
  advance(s, c);
}

void put_cstring(Bytes& s, std::string_view v) {
  s.append(v);
  s.push_back('\0');
}
// Whether n bytes at a and b are equal: up to 16 by two loads of 8 (4) bytes each,
// which may overlap, where a call to memcmp was most of looking a short name up.
bool same_bytes(const char* a, const char* b, size_t n) {
  auto load = [](const char* p, auto word) {
    std::memcpy(&word, p, sizeof word);
    return word;
  };
  if (n >= 8 && n <= 16)
    return load(a, uint64_t()) == load(b, uint64_t()) && load(a + n - 8, uint64_t()) == load(b + n - 8, uint64_t());
  if (n >= 4 && n < 8)
    return load(a, uint32_t()) == load(b, uint32_t()) && load(a + n - 4, uint32_t()) == load(b + n - 4, uint32_t());
  return n == 0 || std::memcmp(a, b, n) == 0;
}
// The bytes made aside and copied in one store: a store per byte through operator[]
// was most of patching the references to types, which are one per variable and member.
void patch_u32(Bytes& s, size_t at, uint32_t v) {
  const char bytes[4] = {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16),
                         static_cast<char>(v >> 24)};
  std::memcpy(s.data() + at, bytes, 4);
}

// A DIE's (attribute, form) pairs, held inline: every DIE makes one to look its
// abbreviation up, and a heap vector each was most of the writer's malloc and free.
class AttributeList {
 public:
  // A plain struct, so that the list is left unwritten past its count.
  struct Pair {
    uint16_t attribute;
    uint8_t form;
    bool operator==(const Pair&) const = default;
  };
  AttributeList(std::initializer_list<Pair> pairs = {}) { insert(end(), pairs); }
  void push_back(Pair p) {
    if (count_ == kMax) throw KilnError(kExitInternal, "", "a DIE with more than 16 attributes");
    pairs_[count_++] = p;
  }
  // Appends (the only place kiln inserts at).
  void insert(const Pair* at, std::initializer_list<Pair> pairs) {
    if (at != end()) throw KilnError(kExitInternal, "", "attributes inserted before the end");
    for (Pair p : pairs) push_back(p);
  }
  const Pair* begin() const { return pairs_; }
  const Pair* end() const { return pairs_ + count_; }
  bool operator==(const AttributeList& o) const { return count_ == o.count_ && std::equal(begin(), end(), o.begin()); }

 private:
  static constexpr uint8_t kMax = 16;
  Pair pairs_[kMax];
  uint8_t count_ = 0;
};

struct Abbreviation {
  uint16_t tag;
  bool children;
  AttributeList attributes;
};

[[noreturn]] [[gnu::cold]] void too_many_attributes() {
  throw KilnError(kExitInternal, "", "a DIE with more than 16 attributes");
}
// The (attribute, form) pairs a type's DIE may have, a bit each in DieValues::pairs:
// where one place adds the attributes, always in one order, which pairs a DIE of a
// given tag has fixes its list (type_abbreviation). A switch, which the compiler folds
// where add() is given constants.
constexpr uint64_t kOtherPair = uint64_t(1) << 63;  // a pair not listed: looked up by its list
constexpr uint64_t pair_bit(uint16_t attribute, uint8_t form) {
  auto bit = [form](uint8_t expected, int k) { return form == expected ? uint64_t(1) << k : kOtherPair; };
  switch (attribute) {
    case kAtType:
      return bit(kFormRef4, 0);
    case kAtName:
      return bit(kFormStrp, 1);
    case kAtDeclFile:
      return bit(kFormUdata, 2);
    case kAtDeclLine:
      return bit(kFormUdata, 3);
    case kAtBitSize:
      return bit(kFormUdata, 4);
    case kAtDataBitOffset:
      return bit(kFormUdata, 5);
    case kAtDataMemberLocation:
      return bit(kFormUdata, 6);
    case kAtAlignment:
      return bit(kFormUdata, 7);
    case kAtCount:
      return bit(kFormUdata, 8);
    case kAtConstValue:
      return form == kFormSdata ? uint64_t(1) << 9 : bit(kFormUdata, 10);
    case kAtDiscr:
      return bit(kFormRef4, 11);
    case kAtByteSize:
      return bit(kFormUdata, 12);
    case kAtEncoding:
      return bit(kFormData1, 13);
    case kAtContainingType:
      return bit(kFormRef4, 14);
    case kAtDeclaration:
      return bit(kFormFlagPresent, 15);
    case kAtArtificial:
      return bit(kFormFlagPresent, 16);
    default:
      return kOtherPair;
  }
}
// A DIE's attributes, for the DIEs whose attributes depend on which fields are set
// (types): the abbreviation follows from the list. The values are encoded as they are
// added, and the 4-byte fields of strings and references noted (fixups), so that
// put_die_values copies them in one piece once the abbreviation is known: held as
// values (32 bytes each) and encoded by a switch on their forms, they were stored and
// read back. Left uninitialized past the counts: one is made per DIE.
struct DieValues {
  static constexpr uint8_t kMost = 16;
  AttributeList::Pair list[kMost];
  uint8_t count = 0, fixup_count = 0, size = 0;
  uint64_t pairs = 0;  // pair_bit of each value
  char bytes[kMost * 10];  // the values: 10 bytes at most each
  struct Fixup {
    uint8_t at;  // in bytes
    bool strp;   // .debug_str's offset `value`, relocated; else type `value` (1-based)
    uint32_t value;
  } fixups[kMost];
  // Inline, so that pair_bit and the form's switch fold to constants. Numbers: udata,
  // sdata (two's complement), data1; ref4: 1 + the type's index; strp: the string's offset.
  [[gnu::always_inline]] void add(uint16_t attribute, uint8_t form, uint64_t number = 0) {
    if (count == kMost) [[unlikely]]
      too_many_attributes();
    list[count++] = {attribute, form};
    pairs |= pair_bit(attribute, form);
    ByteCursor c{bytes, size};
    switch (form) {
      case kFormUdata:
        c.uleb(number);
        break;
      case kFormSdata:
        c.sleb(static_cast<int64_t>(number));
        break;
      case kFormData1:
        c.u8(static_cast<uint8_t>(number));
        break;
      case kFormFlagPresent:
        break;
      case kFormStrp:
      case kFormRef4:
        fixups[fixup_count++] = {size, form == kFormStrp, static_cast<uint32_t>(number)};
        c.zero4();
        break;
      default:
        unknown_form(form);
    }
    size = static_cast<uint8_t>(c.n);
  }
  [[noreturn]] [[gnu::cold]] static void unknown_form(uint8_t form) {
    throw KilnError(kExitInternal, "", "a DIE value of form " + std::to_string(form));
  }
};

class DwarfBuilder {
 public:
  DwarfBuilder(const FlatModuleData& flat, const StampOutput& code, const std::string& source,
               const std::vector<StampData>* data)
      : flat_(flat),
        view_(flat.view()),
        code_(code),
        d_(flat.debug),
        source_(source),
        version_(d_.dwarf_version >= 5 ? 5 : 4) {
    if (!data || d_.globals.empty()) return;
    std::unordered_map<std::string_view, bool> defined;  // name -> thread-local
    for (const StampData& x : *data) defined.emplace(x.name, x.tls);
    for (uint32_t k = 0; k < d_.globals.size(); ++k) {
      if (d_.globals[k].symbol >= flat.symbols.size()) continue;
      auto it = defined.find(flat.symbols[d_.globals[k].symbol]);
      if (it == defined.end()) continue;
      globals_.push_back(k);
      thread_local_.push_back(it->second);
    }
  }

  StampDwarf build() {
    StampDwarf out;
    if (!d_.present()) return out;
    check_offsets();
    bool any = !globals_.empty();
    for (const FlatDebugFunction& f : d_.functions) any |= f.has_subprogram;
    if (!any) return out;  // nothing of this object's to describe: no unit to write
    s_.resize(kDebugSectionCount);
    s_[kAbbrev].name = ".debug_abbrev";
    s_[kInfo].name = ".debug_info";
    s_[kStr].name = ".debug_str", s_[kStr].strings = true;
    s_[kLine].name = ".debug_line";
    s_[kRanges].name = version_ >= 5 ? ".debug_rnglists" : ".debug_ranges";
    reserve_sections();
    write_line_table();
    write_unit_ranges();
    write_info();
    finish_ranges();
    write_abbreviations();
    for (uint32_t k = 0; k < kDebugSectionCount; ++k) s_[k].bytes = out_[k].take();
    out.sections = std::move(s_);
    return out;
  }

 private:
  const FlatModuleData& flat_;
  const FlatModuleView view_;
  const StampOutput& code_;
  const FlatDebugInfo& d_;
  const std::string& source_;
  const unsigned version_;
  std::vector<DwarfSection> s_;
  Bytes out_[kDebugSectionCount];  // s_'s bytes until build() gives them
  static constexpr uint32_t kNoString = ~0u;
  // A slot holds no view of its text: the text is compared where .debug_str holds it,
  // so that a slot is 16 bytes, not 32. The table is sized by the module's DIEs and
  // filled anew for every module, and touching its memory cost more than its lookups.
  struct StringSlot {
    uint64_t hash = 0;
    uint32_t offset = kNoString;
    uint32_t size = 0;
  };
  std::vector<StringSlot> string_slots_;  // string(): a power of two, at most half full
  size_t string_count_ = 0;
  std::vector<Abbreviation> abbreviations_;
  std::vector<std::pair<uint64_t, uint32_t>> abbreviation_slots_;  // (shape's hash, code); code 0: free
  uint32_t ranges_offset_ = 0;  // where the unit's range list starts
  // Per scope (0: the unit): the scopes and the subprograms directly inside it.
  // Items grouped by scope, each group in ascending order: a counting sort into one
  // array, where a vector per scope was an allocation for each (and its growth).
  struct ScopeLists {
    std::vector<uint32_t> start, items;  // scope s: items[start[s], start[s + 1])
    // Item i (of n) goes to scope scope_of(i), or nowhere for ~0u.
    template <class ScopeOf>
    void build(size_t scopes, uint32_t n, ScopeOf scope_of) {
      start.assign(scopes + 2, 0);
      for (uint32_t i = 0; i < n; ++i)
        if (const uint32_t sc = scope_of(i); sc != ~0u) ++start[sc + 2];
      for (size_t k = 2; k < start.size(); ++k) start[k] += start[k - 1];
      items.resize(start.back());
      for (uint32_t i = 0; i < n; ++i)
        if (const uint32_t sc = scope_of(i); sc != ~0u) items[start[sc + 1]++] = i;
    }
    const uint32_t* begin(uint32_t s) const { return items.data() + start[s]; }
    const uint32_t* end(uint32_t s) const { return items.data() + start[s + 1]; }
  };
  ScopeLists scope_children_, scope_functions_, scope_inlined_, scope_globals_;
  ScopeLists function_globals_;  // per flat function: the statics declared inside it (globals_ indices)
  // The global variables whose memory this object holds, by index into d_.globals: the
  // others' DIEs are the object's that defines them. Per entry: whether it is thread-local.
  std::vector<uint32_t> globals_;
  std::vector<bool> thread_local_;
  std::vector<uint32_t> abstract_offset_;                    // per inlined callee: its DIE in the unit
  std::vector<std::pair<uint32_t, uint32_t>> origin_fixups_;  // (where, callee) of each abstract origin
  // Lists of code ranges per inline site and per wanted block, each with its memory:
  // they are the thread's, kept from one module to the next (CodeLists), because
  // allocating them anew for every module was most of the writer's allocations.
  using CodeList = std::vector<std::pair<uint32_t, uint32_t>>;
  // A run of a function's instructions with code, one after another, of one inline
  // site and block, with a location (a file) or without.
  struct CodeRun {
    uint32_t site, block, at, end;
    bool located;
  };
  struct CodeLists {
    std::vector<CodeList> site_code, block_code;
    std::vector<uint32_t> used_sites;
    std::vector<CodeRun> runs;
  };
  static CodeLists& thread_code_lists() {
    thread_local CodeLists lists;
    return lists;
  }
  CodeLists& lists_ = thread_code_lists();
  std::vector<CodeList>& site_code_ = lists_.site_code;  // site_ranges's, per inline site
  std::vector<uint32_t>& used_sites_ = lists_.used_sites;  // the sites of site_code_ in use
  // The runs of the functions' code (write_line_sequence), function fn's at
  // [first_run_[fn], first_run_[fn + 1]): site_ranges and block_ranges read them, where
  // each walked the function's instructions again.
  std::vector<CodeRun>& runs_ = lists_.runs;
  std::vector<uint32_t> first_run_;
  // Types: per scope, the types written in it; per type, the DIE of its first copy
  // (0: none yet); the DW_AT_type and DW_AT_discr references to patch at the end.
  ScopeLists scope_types_;
  DebugTypeChildren type_children_;
  static constexpr uint64_t kMaxTypeDies = 1u << 24;
  uint64_t type_dies_ = 0;   // type DIEs written so far
  uint32_t type_depth_ = 0;  // write_type_die's nesting now
  std::vector<uint32_t> type_offset_;
  // Per type: type_written's answer, asked once, not at every reference (where it read
  // the type named, and its class's).
  std::vector<uint8_t> written_;
  std::vector<std::pair<uint32_t, uint32_t>> type_fixups_;  // (where, type)
  // Variables: where each function's start in d_.variables, and for the function being
  // written, per (inline site, block): its variables, and the code of the blocks that
  // hold some (scope_plan).
  std::vector<uint32_t> first_variable_;
  // (inline site, block) as one number, site high: sorted and searched as integers
  // (pairs' comparisons were a twentieth of the writer).
  using ScopeKey = uint64_t;
  using ScopeEntry = std::pair<ScopeKey, uint32_t>;
  static ScopeKey scope_key(uint32_t site, uint32_t block) { return uint64_t(site) << 32 | block; }
  static uint32_t key_site(ScopeKey k) { return static_cast<uint32_t>(k >> 32); }
  static uint32_t key_block(ScopeKey k) { return static_cast<uint32_t>(k); }
  // Sorted by scope: (scope, variable), (scope, site) and (enclosing scope, block's scope).
  std::vector<ScopeEntry> scope_variables_, scope_sites_, scope_blocks_;
  // The function's scopes, each (inline site, block) an index (scope_keys_): the bodies
  // (index 0 the function's, then its used sites') and the wanted blocks. Found by a
  // hash, where sorted keys were searched and sorted again for every variable's chain.
  // The slots of other functions are told apart by their epoch, so that the table is
  // never cleared.
  struct ScopeSlot {
    ScopeKey key;
    uint32_t scope, epoch;
  };
  std::vector<ScopeSlot> scope_slots_;
  uint32_t scope_epoch_ = 0;
  std::vector<ScopeKey> scope_keys_;
  // Per scope: where its entries are in scope_variables_, scope_blocks_ and scope_sites_.
  enum ScopeTable { kVariables, kBlocks, kSites, kScopeTables };
  struct ScopeSpans {
    const ScopeEntry *begin[kScopeTables], *end[kScopeTables];
  };
  std::vector<ScopeSpans> spans_;
  std::vector<CodeList>& block_code_ = lists_.block_code;  // per scope: a wanted block's code
  std::vector<int8_t> contents_;                           // per scope: has_contents' answer, -1 not asked yet
  std::vector<uint32_t> targets_;                          // block_ranges' scratch
  std::vector<int32_t> alloca_mem_, arg_slot_;  // stamp_frame's, per instruction and argument
  // The frame layout variables are placed by: the executor's (StampOutput), else the
  // one laid out again here per function (alloca_mem_, arg_slot_, frame_.frame_size).
  bool frames_given_ = false;
  const int32_t *alloca_mem_at_ = nullptr, *arg_slot_at_ = nullptr;
  const uint32_t* frame_size_at_ = nullptr;
  struct FrameScratch {                         // the rest of what stamp_uses and stamp_frame write
    std::vector<uint32_t> use_count;
    std::vector<uint8_t> home;
    std::vector<uint64_t> keys;
    std::vector<int32_t> inst_slot;
    std::vector<uint32_t> frame_size;
  } frame_;

  [[noreturn]] void fail(const std::string& why) const { throw KilnError(kExitInternal, source_, why); }

  // The stages' offsets must fit the module, or the line table would point anywhere.
  void check_offsets() const {
    if (code_.inst_offset.size() != flat_.insts.size() || code_.code_size.size() != flat_.functions.size())
      fail("stamp's output has no instruction offsets for this module's debug information");
    // The types' containment is bounded where it is walked (write_type_die), not by a
    // walk of its own first: that was a twentieth of the writer.
    if (const char* defect = check_debug_scope_nesting(d_)) fail(std::string("debug information: ") + defect);
    // The offsets' order is checked where the line table walks them (write_line_sequence),
    // before anything else reads them: only functions with a subprogram do.
  }

  // Room for the sections up front, from the counts they grow with (generously: pages
  // reserved and never written cost nothing): growing them by doubling copied each one
  // over and over, a twentieth of the writer on large modules.
  void reserve_sections() {
    const size_t types = d_.types.size(), vars = d_.variables.size(), fns = d_.functions.size(),
                 sites = d_.inline_sites.size(), blocks = d_.blocks.size(), inlined = d_.inlined.size();
    out_[kInfo].reserve(1024 + 48 * types + 32 * vars + 96 * fns + 48 * sites + 24 * blocks + 64 * inlined);
    s_[kInfo].relocs.reserve(16 + types + vars + 4 * fns + 2 * sites + blocks + 2 * inlined);
    out_[kStr].reserve(1024 + 32 * types + 16 * vars + 128 * (fns + inlined));
    out_[kLine].reserve(1024 + 6 * d_.locations.size() + 64 * fns + 64 * d_.files.size());
    s_[kLine].relocs.reserve(fns + 1);
    out_[kRanges].reserve(1024 + 32 * fns + 24 * (sites + blocks));
  }

  [[noreturn]] void offsets_out_of_order(uint32_t fn) const {
    fail("stamp's instruction offsets are out of order in function " + std::to_string(fn));
  }

  // A string's offset in .debug_str, each string written once. Open addressing in one
  // array: a map node per string was most of the writer's allocations.
  uint32_t string(std::string_view s) {
    if (2 * (string_count_ + 1) > string_slots_.size()) grow_strings(2 * (string_count_ + 1));
    const size_t h = string_hash(s), mask = string_slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      StringSlot& slot = string_slots_[i];
      if (slot.offset == kNoString) {
        slot = {h, static_cast<uint32_t>(out_[kStr].size()), static_cast<uint32_t>(s.size())};
        put_cstring(out_[kStr], s);
        ++string_count_;
        return slot.offset;
      }
      if (slot.hash == h && slot.size == s.size() && same_bytes(out_[kStr].data() + slot.offset, s.data(), s.size()))
        return slot.offset;
    }
  }
  void grow_strings(size_t want) {
    size_t size = 64;
    while (size < want) size *= 2;
    std::vector<StringSlot> old;
    old.swap(string_slots_);
    string_slots_.assign(size, StringSlot{});
    for (const StringSlot& slot : old) {
      if (slot.offset == kNoString) continue;
      size_t i = slot.hash & (size - 1);
      while (string_slots_[i].offset != kNoString) i = (i + 1) & (size - 1);
      string_slots_[i] = slot;
    }
  }
  // A relocation appended with the vector's growth inlined (flatten): called out of
  // line, push_back was a call per relocation, hundreds of thousands per hundred
  // modules at debuginfo 2.
  [[gnu::flatten]] static void add_reloc(std::vector<DwarfReloc>& relocs, const DwarfReloc& r) { relocs.push_back(r); }
  // A 4-byte offset into another debug section, relocated against its start.
  void put_section_offset(DebugSection in, DebugSection to, uint32_t offset) {
    Bytes& b = out_[in];
    add_reloc(s_[in].relocs, {static_cast<uint32_t>(b.size()), kReloc32, kDwarfSectionTarget + to, offset});
    put_le<uint32_t>(b, 0);
  }
  void put_strp(DebugSection in, std::string_view s) { put_section_offset(in, kStr, string(s)); }
  // An 8-byte address: function `fn`'s start plus `addend`.
  void put_address(DebugSection in, uint32_t fn, int64_t addend) {
    Bytes& b = out_[in];
    add_reloc(s_[in].relocs, {static_cast<uint32_t>(b.size()), kReloc64, fn, addend});
    put_le<uint64_t>(b, 0);
  }

  // ---- .debug_line --------------------------------------------------------------

  // Directory 0 is the compile unit's; a file in it, or in none, names directory 0.
  std::vector<std::string_view> line_directories(std::vector<uint32_t>& file_directory) const {
    std::vector<std::string_view> dirs{d_.directory};
    file_directory.assign(d_.files.size(), 0);
    std::unordered_map<std::string_view, uint32_t> index{{d_.directory, 0}};
    for (size_t f = 0; f < d_.files.size(); ++f) {
      const std::string& dir = d_.files[f].directory;
      if (dir.empty()) continue;
      auto [it, inserted] = index.emplace(dir, static_cast<uint32_t>(dirs.size()));
      if (inserted) dirs.push_back(dir);
      file_directory[f] = it->second;
    }
    return dirs;
  }

  // The header's directory and file tables. Files are numbered as flat_debug.h numbers
  // them (from 1); version 5's file 0 is the unit's own source file.
  void write_line_files(Bytes& b) const {
    std::vector<uint32_t> file_directory;
    std::vector<std::string_view> dirs = line_directories(file_directory);
    if (version_ >= 5) {
      put_u8(b, 1), put_uleb(b, kLnctPath), put_uleb(b, kFormString);
      put_uleb(b, dirs.size());
      for (std::string_view dir : dirs) put_cstring(b, dir);
      put_u8(b, 2), put_uleb(b, kLnctPath), put_uleb(b, kFormString), put_uleb(b, kLnctDirectoryIndex),
          put_uleb(b, kFormUdata);
      put_uleb(b, d_.files.size() + 1);
      put_cstring(b, d_.name), put_uleb(b, 0);
      for (size_t f = 0; f < d_.files.size(); ++f) put_cstring(b, d_.files[f].name), put_uleb(b, file_directory[f]);
      return;
    }
    for (size_t i = 1; i < dirs.size(); ++i) put_cstring(b, dirs[i]);
    put_u8(b, 0);
    for (size_t f = 0; f < d_.files.size(); ++f)
      put_cstring(b, d_.files[f].name), put_uleb(b, file_directory[f]), put_uleb(b, 0), put_uleb(b, 0);
    put_u8(b, 0);
  }

  void write_line_table() {
    Bytes& b = out_[kLine];
    put_le<uint32_t>(b, 0);  // unit_length, patched below
    put_le<uint16_t>(b, static_cast<uint16_t>(version_));
    if (version_ >= 5) put_u8(b, 8), put_u8(b, 0);  // address and segment selector sizes
    const size_t header_length_at = b.size();
    put_le<uint32_t>(b, 0);
    put_u8(b, 1);  // minimum_instruction_length
    put_u8(b, 1);  // maximum_operations_per_instruction
    put_u8(b, 1);  // default_is_stmt
    put_u8(b, static_cast<uint8_t>(static_cast<int8_t>(kLineBase)));
    put_u8(b, kLineRange);
    put_u8(b, kOpcodeBase);
    b.append(reinterpret_cast<const char*>(kStandardOpcodeLengths), sizeof kStandardOpcodeLengths);
    write_line_files(b);
    patch_u32(b, header_length_at, static_cast<uint32_t>(b.size() - header_length_at - 4));
    runs_.clear(), first_run_.assign(flat_.functions.size() + 1, 0);
    for (uint32_t fn = 0; fn < flat_.functions.size(); ++fn) {
      if (d_.functions[fn].has_subprogram) write_line_sequence(fn);
      first_run_[fn + 1] = static_cast<uint32_t>(runs_.size());
    }
    patch_u32(b, 0, static_cast<uint32_t>(b.size() - 4));
  }

  // The line program's registers as the rows so far left them.
  struct LineState {
    uint32_t address = 0, file = 1, line = 1, column = 0;
    bool is_stmt = true;  // the header's default_is_stmt
  };

  // A row at `address` for `loc`: the registers that changed, then a special opcode
  // when the step fits one, else DW_LNS_copy.
  [[gnu::always_inline]] void put_row(LineState& st, uint32_t address, const FlatDebugLocation& loc, bool prologue_end,
                                      bool is_stmt) {
    ByteCursor b = cursor(out_[kLine], 64);
    if (is_stmt != st.is_stmt) b.u8(kLnsNegateStmt), st.is_stmt = is_stmt;
    if (loc.file != st.file) b.u8(kLnsSetFile), b.uleb(loc.file), st.file = loc.file;
    if (loc.column != st.column) b.u8(kLnsSetColumn), b.uleb(loc.column), st.column = loc.column;
    if (prologue_end) b.u8(kLnsSetPrologueEnd);
    int64_t line_step = int64_t(loc.line) - int64_t(st.line);
    uint64_t address_step = address - st.address;
    if (line_step < kLineBase || line_step >= kLineBase + kLineRange) {
      b.u8(kLnsAdvanceLine), b.sleb(line_step);
      line_step = 0;
    }
    uint64_t special = uint64_t(line_step - kLineBase) + kLineRange * address_step + kOpcodeBase;
    if (special > 255) {
      b.u8(kLnsAdvancePc), b.uleb(address_step);
      special = uint64_t(line_step - kLineBase) + kOpcodeBase;
    }
    b.u8(static_cast<uint8_t>(special));
    advance(out_[kLine], b);
    st.address = address, st.line = loc.line;
  }

  // One sequence per function: a row at its start for the subprogram's scope line (as
  // LLVM's prologue has), then a row wherever the location of the instruction whose
  // code starts there changes; instructions without code or location add none. The
  // function's runs of code (runs_) are noted on the way.
  void write_line_sequence(uint32_t fn) {
    Bytes& b = out_[kLine];
    const FlatFunction& f = flat_.functions[fn];
    const FlatDebugFunction& sp = d_.functions[fn];
    put_u8(b, 0), put_uleb(b, 9), put_u8(b, kLneSetAddress);
    put_address(kLine, fn, 0);
    LineState st;
    FlatDebugLocation current{0, 0, 0};
    if (sp.file) {
      current = {sp.file, sp.scope_line ? sp.scope_line : sp.line, 0};
      put_row(st, 0, current, false, true);
    }
    // The prologue ends at the first row with a line, as LLVM's findPrologueEndLoc finds
    // it: a debugger stops there on `break f`, and at a line-0 row it would show no
    // source line.
    bool first = true, in_prologue = true;
    const uint32_t end = f.first_inst + f.inst_count, code_size = code_.code_size[fn];
    if (f.inst_count && code_.inst_offset[f.first_inst] > code_size) offsets_out_of_order(fn);
    CodeRun run{0, 0, 0, 0, false};
    for (uint32_t i = f.first_inst; i < end; ++i) {
      const uint32_t at = code_.inst_offset[i], next = i + 1 < end ? code_.inst_offset[i + 1] : code_size;
      if (next < at || next > code_size) offsets_out_of_order(fn);
      if (next == at) continue;
      const FlatDebugLocation& loc = d_.locations[i];
      const bool located = loc.file != 0;
      if (loc.inline_site == run.site && loc.block == run.block && located == run.located && at == run.end) {
        run.end = next;
      } else {
        if (run.end) runs_.push_back(run);
        run = {loc.inline_site, loc.block, at, next, located};
      }
      if (!located || (!first && loc == current)) continue;
      const bool prologue_end = in_prologue && loc.line != 0;
      // A statement starts where the line changes, as LLVM marks its rows: a row that
      // changes the column only is no place for a breakpoint by line (gdb would stop at
      // each such row that starts a lexical block).
      put_row(st, at, loc, prologue_end, prologue_end || (loc.line != 0 && loc.line != current.line));
      current = loc, first = false;
      if (prologue_end) in_prologue = false;
    }
    if (run.end) runs_.push_back(run);
    if (code_size > st.address) put_u8(b, kLnsAdvancePc), put_uleb(b, code_size - st.address);
    put_u8(b, 0), put_uleb(b, 1), put_u8(b, kLneEndSequence);
  }

  // ---- the unit's code ranges ----------------------------------------------------

  void write_unit_ranges() {
    Bytes& b = out_[kRanges];
    if (version_ >= 5) {
      put_le<uint32_t>(b, 0);  // unit_length, patched below
      put_le<uint16_t>(b, 5);
      put_u8(b, 8), put_u8(b, 0);
      put_le<uint32_t>(b, 0);  // offset_entry_count: the unit names its list by offset
    }
    ranges_offset_ = static_cast<uint32_t>(b.size());
    for (uint32_t fn = 0; fn < flat_.functions.size(); ++fn) {
      if (!d_.functions[fn].has_subprogram) continue;
      if (version_ >= 5) {
        put_u8(b, kRleStartLength), put_address(kRanges, fn, 0), put_uleb(b, code_.code_size[fn]);
      } else {
        put_address(kRanges, fn, 0), put_address(kRanges, fn, code_.code_size[fn]);
      }
    }
    end_range_list();
  }

  void end_range_list() {
    Bytes& b = out_[kRanges];
    if (version_ >= 5) put_u8(b, kRleEndOfList);
    else put_le<uint64_t>(b, 0), put_le<uint64_t>(b, 0);
  }

  // Version 5's lists share one header, whose length counts them all.
  void finish_ranges() {
    if (version_ >= 5) patch_u32(out_[kRanges], 0, static_cast<uint32_t>(out_[kRanges].size() - 4));
  }

  // A list of code ranges of function `fn`; returns where it starts.
  uint32_t range_list(uint32_t fn, const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
    Bytes& b = out_[kRanges];
    const uint32_t at = static_cast<uint32_t>(b.size());
    // Each entry encoded at once in the section's room (its addresses relocated), where
    // each of its fields was a write of its own, with its check for room.
    std::vector<DwarfReloc>& relocs = s_[kRanges].relocs;
    for (auto [begin, end] : ranges) {
      ByteCursor c = cursor(b, 16);
      const uint32_t entry = static_cast<uint32_t>(b.size());
      if (version_ >= 5) {
        add_reloc(relocs, {entry + 1, kReloc64, fn, begin});
        c.u8(kRleStartLength), c.zero8(), c.uleb(end - begin);
      } else {
        add_reloc(relocs, {entry, kReloc64, fn, begin}), add_reloc(relocs, {entry + 8, kReloc64, fn, end});
        c.zero8(), c.zero8();
      }
      advance(b, c);
    }
    end_range_list();
    return at;
  }

  // ---- .debug_info and .debug_abbrev ---------------------------------------------

  // Found by a hash of its shape, in an open-addressing table: a module's types make
  // a few hundred shapes, and every DIE asks for one.
  uint32_t abbreviation(Abbreviation a) {
    uint64_t h = a.tag * 2 + a.children;
    for (auto [attribute, form] : a.attributes) h = (h * 0x100000001b3ull) ^ (uint64_t(attribute) << 8 | form);
    if (2 * (abbreviations_.size() + 1) > abbreviation_slots_.size()) grow_abbreviations();
    const size_t mask = abbreviation_slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      auto& [hash, code] = abbreviation_slots_[i];
      if (code == 0) {
        abbreviations_.push_back(std::move(a));
        hash = h, code = static_cast<uint32_t>(abbreviations_.size());
        return code;
      }
      const Abbreviation& b = abbreviations_[code - 1];
      if (hash == h && b.tag == a.tag && b.children == a.children && b.attributes == a.attributes) return code;
    }
  }
  // abbreviation() for a DIE's values, without building the list unless it is new: the
  // shape's hash is the same one abbreviation() computes.
  uint32_t die_abbreviation(uint16_t tag, bool children, const DieValues& die) {
    uint64_t h = tag * 2 + children;
    for (uint8_t k = 0; k < die.count; ++k)
      h = (h * 0x100000001b3ull) ^ (uint64_t(die.list[k].attribute) << 8 | die.list[k].form);
    if (!abbreviation_slots_.empty()) {
      const size_t mask = abbreviation_slots_.size() - 1;
      for (size_t i = h & mask; abbreviation_slots_[i].second; i = (i + 1) & mask) {
        if (abbreviation_slots_[i].first != h) continue;
        const Abbreviation& a = abbreviations_[abbreviation_slots_[i].second - 1];
        if (a.tag != tag || a.children != children || a.attributes.end() - a.attributes.begin() != die.count) continue;
        bool same = true;
        for (uint8_t k = 0; same && k < die.count; ++k) same = a.attributes.begin()[k] == die.list[k];
        if (same) return abbreviation_slots_[i].second;
      }
    }
    Abbreviation a{tag, children, {}};
    for (uint8_t k = 0; k < die.count; ++k) a.attributes.push_back(die.list[k]);
    return abbreviation(std::move(a));
  }

  // The DIEs whose attribute list follows from their kind and a few bits of their
  // fields (variables, subprograms, inlined calls, blocks: most of a unit's DIEs) keep
  // their abbreviation code by those bits, where the list was made and looked up for
  // every DIE. 0: not known yet.
  enum ShapeKind { kShapeVariable, kShapeSubprogram, kShapeAbstract, kShapeSite, kShapeBlock, kShapeKinds };
  static constexpr uint32_t kShapeBits = 7;
  std::array<std::array<uint32_t, 1u << kShapeBits>, kShapeKinds> shape_codes_{};
  uint32_t& shaped_code(ShapeKind kind, uint32_t bits) { return shape_codes_[kind][bits]; }

  // A type's DIE's code, kept by its tag, children flag and pairs (write_type_die_at
  // adds each kind of type's attributes in one order): most types' lists were hashed
  // and compared with their shape's.
  struct TypeShapeSlot {
    uint64_t pairs;
    uint32_t tag_children, code;  // tag_children: the count, tag and children flag; code 0: free
  };
  std::vector<TypeShapeSlot> type_shapes_;
  size_t type_shape_count_ = 0;
  uint32_t type_abbreviation(uint16_t tag, bool children, const DieValues& die) {
    if (die.pairs & kOtherPair) [[unlikely]]
      return die_abbreviation(tag, children, die);
    if (2 * (type_shape_count_ + 1) > type_shapes_.size()) grow_type_shapes();
    // (The count too: a pair added twice would not show in the pairs.)
    const uint32_t tag_children = uint32_t(die.count) << 17 | uint32_t(tag) << 1 | children;
    const size_t mask = type_shapes_.size() - 1;
    for (size_t i = type_shape_hash(die.pairs, tag_children) & mask;; i = (i + 1) & mask) {
      TypeShapeSlot& slot = type_shapes_[i];
      if (slot.code == 0) {
        ++type_shape_count_;
        slot = {die.pairs, tag_children, die_abbreviation(tag, children, die)};
        return slot.code;
      }
      if (slot.pairs == die.pairs && slot.tag_children == tag_children) return slot.code;
    }
  }
  static size_t type_shape_hash(uint64_t pairs, uint32_t tag_children) {
    return hash_fold(pairs ^ 0x9e3779b97f4a7c15ull, tag_children);
  }
  void grow_type_shapes() {
    std::vector<TypeShapeSlot> old(std::max<size_t>(64, 2 * type_shapes_.size()), TypeShapeSlot{0, 0, 0});
    old.swap(type_shapes_);
    const size_t mask = type_shapes_.size() - 1;
    for (const TypeShapeSlot& slot : old) {
      if (!slot.code) continue;
      size_t i = type_shape_hash(slot.pairs, slot.tag_children) & mask;
      while (type_shapes_[i].code) i = (i + 1) & mask;
      type_shapes_[i] = slot;
    }
  }

  void grow_abbreviations() {
    std::vector<std::pair<uint64_t, uint32_t>> old(std::max<size_t>(64, 2 * abbreviation_slots_.size()));
    old.swap(abbreviation_slots_);
    const size_t mask = abbreviation_slots_.size() - 1;
    for (auto [hash, code] : old) {
      if (!code) continue;
      size_t i = hash & mask;
      while (abbreviation_slots_[i].second) i = (i + 1) & mask;
      abbreviation_slots_[i] = {hash, code};
    }
  }

  void write_unit_die() {
    Bytes& b = out_[kInfo];
    Abbreviation a{kTagCompileUnit, true, {{kAtProducer, kFormStrp}}};
    if (d_.language) a.attributes.push_back({kAtLanguage, kFormData2});
    a.attributes.insert(a.attributes.end(), {{kAtName, kFormStrp},
                                             {kAtStmtList, kFormSecOffset},
                                             {kAtCompDir, kFormStrp},
                                             {kAtLowPc, kFormAddr},
                                             {kAtRanges, kFormSecOffset}});
    put_uleb(b, abbreviation(std::move(a)));
    put_strp(kInfo, d_.producer);
    if (d_.language) put_le<uint16_t>(b, static_cast<uint16_t>(d_.language));
    put_strp(kInfo, d_.name);
    put_section_offset(kInfo, kLine, 0);
    put_strp(kInfo, d_.directory);
    put_le<uint64_t>(b, 0);  // low_pc 0: the ranges are addresses
    put_section_offset(kInfo, kRanges, ranges_offset_);
  }

  // The DIEs inside scope `s` (0: the unit): its scopes, its types, then the
  // subprograms of inlined calls, then the functions' subprograms, then the global
  // variables.
  void write_children(uint32_t s) {
    for (const uint32_t* c = scope_children_.begin(s); c != scope_children_.end(s); ++c) write_scope_die(*c + 1);
    for (const uint32_t* t = scope_types_.begin(s); t != scope_types_.end(s); ++t) write_type_die(*t);
    for (const uint32_t* k = scope_inlined_.begin(s); k != scope_inlined_.end(s); ++k) write_abstract_die(*k);
    for (const uint32_t* fn = scope_functions_.begin(s); fn != scope_functions_.end(s); ++fn) write_subprogram_die(*fn);
    for (const uint32_t* k = scope_globals_.begin(s); k != scope_globals_.end(s); ++k) write_global_die(*k);
  }

  // Global variable globals_[w], in LLVM's order (DwarfCompileUnit's
  // getOrCreateGlobalVariableDIE): its name, type, external flag, declaration, alignment,
  // then its location, then its linkage name. The location is the symbol's address
  // (DW_OP_addr, relocated); a thread-local's, its offset in the module's TLS block
  // (DW_OP_const8u, relocated DTPOFF64) and the debugger's TLS lookup
  // (DW_OP_GNU_push_tls_address), as LLVM writes it for gdb on Linux.
  void write_global_die(uint32_t w) {
    Bytes& b = out_[kInfo];
    const FlatDebugGlobal& g = d_.globals[globals_[w]];
    const bool typed = g.type && written_[g.type - 1];
    const bool declared = g.file && g.line, aligned = g.align_bits / 8 != 0;
    Abbreviation a{kTagVariable, false, {}};
    if (!g.name.empty()) a.attributes.push_back({kAtName, kFormStrp});
    if (typed) a.attributes.push_back({kAtType, kFormRef4});
    if (!g.local_to_unit) a.attributes.push_back({kAtExternal, kFormFlagPresent});
    if (declared) a.attributes.insert(a.attributes.end(), {{kAtDeclFile, kFormUdata}, {kAtDeclLine, kFormUdata}});
    if (aligned) a.attributes.push_back({kAtAlignment, kFormUdata});
    a.attributes.push_back({kAtLocation, kFormExprloc});
    if (!g.linkage_name.empty()) a.attributes.push_back({kAtLinkageName, kFormStrp});
    put_uleb(b, abbreviation(std::move(a)));
    if (!g.name.empty()) put_strp(kInfo, g.name);
    if (typed) type_fixups_.push_back({static_cast<uint32_t>(b.size()), g.type - 1}), put_le<uint32_t>(b, 0);
    if (declared) put_uleb(b, g.file), put_uleb(b, g.line);
    if (aligned) put_uleb(b, g.align_bits / 8);
    const bool tls = thread_local_[w];
    put_uleb(b, tls ? 10 : 9), put_u8(b, tls ? kOpConst8u : kOpAddr);
    s_[kInfo].relocs.push_back(
        {static_cast<uint32_t>(b.size()), tls ? kRelocDtpOff64 : kReloc64, kDwarfSymbolTarget + g.symbol, 0});
    put_le<uint64_t>(b, 0);
    if (tls) put_u8(b, kOpGnuPushTlsAddress);
    if (!g.linkage_name.empty()) put_strp(kInfo, g.linkage_name);
  }

  // The abstract subprogram of an inlined callee, which its inlined calls point to.
  void write_abstract_die(uint32_t k) {
    Bytes& b = out_[kInfo];
    const FlatDebugFunction& sp = d_.inlined[k];
    abstract_offset_[k] = static_cast<uint32_t>(b.size());
    uint32_t& code = shaped_code(kShapeAbstract, subprogram_shape(sp));
    if (!code) {
      Abbreviation a{kTagSubprogram, false, {}};
      add_subprogram_attributes(a, sp);
      a.attributes.push_back({kAtInline, kFormData1});
      code = abbreviation(std::move(a));
    }
    put_uleb(b, code);
    put_subprogram_values(sp);
    put_u8(b, kInlineInlined);
  }

  // What a subprogram's DIE says of its DISubprogram, in LLVM's order (DwarfUnit's
  // applySubprogramAttributes), and its values (put_subprogram_values). LLVM writes
  // DW_AT_prototyped for a prototyped C function only, and neither it nor the return
  // type at line tables only; a void function has no DW_AT_type (DWARF 5 section 3.3.2).
  bool linkage_differs(const FlatDebugFunction& sp) const {
    return !sp.linkage_name.empty() && sp.linkage_name != sp.name;
  }
  bool prototyped_in_unit(const FlatDebugFunction& sp) const {
    return sp.prototyped && d_.emission == DebugEmission::full && language_is_c(d_.language);
  }
  // dwarf::isC: C89, C, C99, ObjC, C11, C17.
  static bool language_is_c(uint32_t language) {
    return language == 0x01 || language == 0x02 || language == 0x0c || language == 0x10 || language == 0x1d ||
        language == 0x2c;
  }
  bool has_return_type(const FlatDebugFunction& sp) const { return sp.type && written_[sp.type - 1]; }
  // Which of add_subprogram_attributes' optional attributes a subprogram has.
  uint32_t subprogram_shape(const FlatDebugFunction& sp) const {
    return (linkage_differs(sp) ? 1 : 0) | (sp.file ? 2 : 0) | (prototyped_in_unit(sp) ? 4 : 0) |
        (has_return_type(sp) ? 8 : 0) | (!sp.local_to_unit ? 16 : 0) | (sp.main_subprogram ? 32 : 0);
  }
  void add_subprogram_attributes(Abbreviation& a, const FlatDebugFunction& sp) const {
    if (linkage_differs(sp)) a.attributes.push_back({kAtLinkageName, kFormStrp});
    a.attributes.push_back({kAtName, kFormStrp});
    if (sp.file) a.attributes.insert(a.attributes.end(), {{kAtDeclFile, kFormUdata}, {kAtDeclLine, kFormUdata}});
    if (prototyped_in_unit(sp)) a.attributes.push_back({kAtPrototyped, kFormFlagPresent});
    if (has_return_type(sp)) a.attributes.push_back({kAtType, kFormRef4});
    if (!sp.local_to_unit) a.attributes.push_back({kAtExternal, kFormFlagPresent});
    if (sp.main_subprogram) a.attributes.push_back({kAtMainSubprogram, kFormFlagPresent});
  }
  void put_subprogram_values(const FlatDebugFunction& sp) {
    Bytes& b = out_[kInfo];
    if (linkage_differs(sp)) put_strp(kInfo, sp.linkage_name);
    put_strp(kInfo, sp.name);
    if (sp.file) put_uleb(b, sp.file), put_uleb(b, sp.line);
    if (has_return_type(sp))
      type_fixups_.push_back({static_cast<uint32_t>(b.size()), sp.type - 1}), put_le<uint32_t>(b, 0);
  }

  // Per inline site used by function `fn` (site_code_[s], sites in used_sites_ in
  // ascending order): the code of the instructions inside it (its own and its inner
  // sites'), as ranges merged where they touch. The tables are the builder's, emptied
  // for each function, so that no function allocates its own.
  void site_ranges(uint32_t fn) {
    // (used_sites_ may still name the last module's: cleared before they are resized.)
    for (uint32_t s : used_sites_) site_code_[s].clear();
    used_sites_.clear();
    if (site_code_.size() < d_.inline_sites.size() + 1) site_code_.resize(d_.inline_sites.size() + 1);
    // A run of code of one site is one range of code: its chain of sites is walked once
    // per run, not once per instruction.
    uint32_t run_site = 0, run_at = 0, run_end = 0;
    for (const CodeRun *r = runs_.data() + first_run_[fn], *end = runs_.data() + first_run_[fn + 1]; r != end; ++r) {
      if (r->site == run_site && r->at == run_end) {
        run_end = r->end;
        continue;
      }
      add_site_code(run_site, run_at, run_end);
      run_site = r->site, run_at = r->at, run_end = r->end;
    }
    add_site_code(run_site, run_at, run_end);
    std::sort(used_sites_.begin(), used_sites_.end());
  }
  // Code [at, end) to site s's list and its enclosing sites'.
  void add_site_code(uint32_t s, uint32_t at, uint32_t end) {
    for (; s; s = d_.inline_sites[s - 1].parent) {
      CodeList& list = site_code_[s];
      if (list.empty()) used_sites_.push_back(s);
      add_code(list, at, end);
    }
  }
  // Code [at, end) to a list of ranges, merged with the last where they touch.
  static void add_code(CodeList& list, uint32_t at, uint32_t end) {
    if (!list.empty() && list.back().second == at) list.back().second = end;
    else list.push_back({at, end});
  }

  // An inlined call's DIE up to its contents: where its code is, its callee, its call.
  // Returns whether it has contents (write_scope_contents writes them, then its end).
  bool write_site_header(uint32_t fn, uint32_t s, uint32_t body) {
    Bytes& b = out_[kInfo];
    const FlatDebugInlineSite& site = d_.inline_sites[s - 1];
    const auto& code = site_code_[s];
    const bool inner = has_contents(body);
    uint32_t& abbreviation_code =
        shaped_code(kShapeSite, (inner ? 1 : 0) | (code.size() == 1 ? 2 : 0) | (site.call_file ? 4 : 0));
    if (!abbreviation_code) {
      Abbreviation a{kTagInlinedSubroutine, inner, {{kAtAbstractOrigin, kFormRef4}}};
      if (code.size() == 1) a.attributes.insert(a.attributes.end(), {{kAtLowPc, kFormAddr}, {kAtHighPc, kFormData4}});
      else a.attributes.push_back({kAtRanges, kFormSecOffset});
      if (site.call_file)
        a.attributes.insert(a.attributes.end(),
                            {{kAtCallFile, kFormUdata}, {kAtCallLine, kFormUdata}, {kAtCallColumn, kFormUdata}});
      abbreviation_code = abbreviation(std::move(a));
    }
    put_uleb(b, abbreviation_code);
    origin_fixups_.push_back({static_cast<uint32_t>(b.size()), site.callee - 1});
    put_le<uint32_t>(b, 0);
    put_code_ranges(fn, code);
    if (site.call_file) put_uleb(b, site.call_file), put_uleb(b, site.call_line), put_uleb(b, site.call_column);
    return inner;
  }

  // low_pc and high_pc for one range, else a range list (the abbreviation says which).
  void put_code_ranges(uint32_t fn, const std::vector<std::pair<uint32_t, uint32_t>>& code) {
    Bytes& b = out_[kInfo];
    if (code.size() != 1) return put_section_offset(kInfo, kRanges, range_list(fn, code));
    add_reloc(s_[kInfo].relocs, {static_cast<uint32_t>(b.size()), kReloc64, fn, code[0].first});
    ByteCursor c = cursor(b, 12);
    c.zero8(), c.u32(code[0].second - code[0].first);
    advance(b, c);
  }

  // A namespace, or a declaration of the type a method belongs to: what a debugger
  // qualifies the subprograms inside it with.
  void write_scope_die(uint32_t s) {
    Bytes& b = out_[kInfo];
    const FlatDebugScope& scope = d_.scopes[s - 1];
    Abbreviation a{scope.tag, true, {}};
    if (!scope.name.empty()) a.attributes.push_back({kAtName, kFormStrp});
    if (scope.tag != kDwarfTagNamespace) a.attributes.push_back({kAtDeclaration, kFormFlagPresent});
    put_uleb(b, abbreviation(std::move(a)));
    if (!scope.name.empty()) put_strp(kInfo, scope.name);
    write_children(s);
    put_u8(b, 0);
  }

  void write_subprogram_die(uint32_t fn) {
    Bytes& b = out_[kInfo];
    const FlatDebugFunction& sp = d_.functions[fn];
    site_ranges(fn);
    scope_plan(fn);
    const bool contents = has_contents(kFunctionBody);
    const uint32_t *statics = function_globals_.begin(fn + 1), *statics_end = function_globals_.end(fn + 1);
    const bool children = contents || statics != statics_end;
    uint32_t& code = shaped_code(kShapeSubprogram, subprogram_shape(sp) | (children ? 64 : 0));
    if (!code) {
      Abbreviation a{kTagSubprogram,
                     children,
                     {{kAtLowPc, kFormAddr}, {kAtHighPc, kFormData4}, {kAtFrameBase, kFormExprloc}}};
      add_subprogram_attributes(a, sp);
      code = abbreviation(std::move(a));
    }
    put_uleb(b, code);
    put_address(kInfo, fn, 0);
    put_le<uint32_t>(b, code_.code_size[fn]);
    put_uleb(b, 1), put_u8(b, kOpReg6);
    put_subprogram_values(sp);
    if (!children) return;
    if (contents) write_scope_contents(fn, kFunctionBody);
    for (; statics != statics_end; ++statics) write_global_die(*statics);
    put_u8(b, 0);
  }

  // ---- variables and lexical blocks ------------------------------------------------

  // For function `fn`: its variables by (inline site, block), and the code of each
  // block that holds a variable or an inlined call, itself or inside it (the other
  // blocks are not written: no debugger would see them). A block's code is that of the
  // instructions whose location is in it or in a block inside it, or in a call inlined
  // there. A variable whose block or site has no code is not written, as LLVM makes no
  // scope for it. The tables are sorted vectors the builder keeps from function to
  // function: per-function maps were most of the writer's malloc and free.
  void scope_plan(uint32_t fn) {
    scope_variables_.clear(), scope_sites_.clear(), scope_blocks_.clear();
    clear_scopes();
    add_scope(scope_key(0, 0));  // kFunctionBody
    for (uint32_t s : used_sites_) {
      add_scope(scope_key(s, 0));
      scope_sites_.push_back({scope_key(d_.inline_sites[s - 1].parent, d_.inline_sites[s - 1].block), s});
    }
    std::sort(scope_sites_.begin(), scope_sites_.end());
    if (!(d_.blocks.empty() && d_.variables.empty()) && d_.functions[fn].has_subprogram) plan_blocks(fn);
    spans_.assign(scope_keys_.size(), ScopeSpans{});
    contents_.assign(scope_keys_.size(), -1);
    find_spans(kVariables, scope_variables_), find_spans(kBlocks, scope_blocks_), find_spans(kSites, scope_sites_);
  }

  // scope_plan's variables and blocks.
  void plan_blocks(uint32_t fn) {
    const size_t bodies = scope_keys_.size();
    for (uint32_t v = first_variable_[fn]; v < first_variable_[fn + 1]; ++v) {
      const FlatDebugVariable& var = d_.variables[v];
      if (var.inline_site && !std::binary_search(used_sites_.begin(), used_sites_.end(), var.inline_site)) continue;
      scope_variables_.push_back({scope_key(var.inline_site, var.block), v});
      want_blocks(var.inline_site, var.block);
    }
    // Parameters by number first, then the other variables in order. The variables were
    // pushed in order, so with the index as the last key std::sort gives what a stable
    // sort by (scope, parameter number) gives, without the buffer std::stable_sort
    // allocated at every call (a few variables a function).
    auto arg_rank = [&](uint32_t v) { return d_.variables[v].arg ? uint64_t(d_.variables[v].arg) : uint64_t(1) << 32; };
    std::sort(scope_variables_.begin(), scope_variables_.end(), [&](const ScopeEntry& x, const ScopeEntry& y) {
      if (x.first != y.first) return x.first < y.first;
      const uint64_t rx = arg_rank(x.second), ry = arg_rank(y.second);
      return rx != ry ? rx < ry : x.second < y.second;
    });
    for (uint32_t s : used_sites_) want_blocks(d_.inline_sites[s - 1].parent, d_.inline_sites[s - 1].block);
    if (scope_keys_.size() == bodies && scope_variables_.empty()) return;
    if (!scope_variables_.empty() && !frames_given_) {  // the frame as stamp's stages lay it out (the same functions)
      stamp_uses(view_, fn, frame_.use_count.data(), frame_.home.data());
      stamp_frame(view_, fn, frame_.use_count.data(), frame_.home.data(), frame_.keys.data(), frame_.inst_slot.data(),
                  alloca_mem_.data(), arg_slot_.data(), frame_.frame_size.data());
    }
    if (block_code_.size() < scope_keys_.size()) block_code_.resize(scope_keys_.size());
    for (size_t k = 0; k < scope_keys_.size(); ++k) block_code_[k].clear();
    block_ranges(fn);
    for (size_t k = bodies; k < scope_keys_.size(); ++k)
      if (!block_code_[k].empty()) {
        const ScopeKey key = scope_keys_[k];
        scope_blocks_.push_back({scope_key(key_site(key), d_.blocks[key_block(key) - 1].parent), k});
      }
    // By enclosing scope, then by block.
    std::sort(scope_blocks_.begin(), scope_blocks_.end(), [&](const ScopeEntry& x, const ScopeEntry& y) {
      return x.first != y.first ? x.first < y.first
                                : key_block(scope_keys_[x.second]) < key_block(scope_keys_[y.second]);
    });
  }

  // Each scope's entries in a table sorted by scope (spans_).
  void find_spans(ScopeTable t, const std::vector<ScopeEntry>& table) {
    for (const ScopeEntry *at = table.data(), *end = at + table.size(); at != end;) {
      const ScopeEntry* run = at;
      while (at != end && at->first == run->first) ++at;
      if (const uint32_t scope = find_scope(run->first); scope != kNoScope)
        spans_[scope].begin[t] = run, spans_[scope].end[t] = at;
    }
  }

  // The code of each wanted block, from the instructions' locations.
  void block_ranges(uint32_t fn) {
    targets_.clear();  // the block lists of the last location's scope
    ScopeKey last = ~0ull;
    // As in site_ranges: a run of one scope's code is one range.
    uint32_t run_at = 0, run_end = 0;
    for (const CodeRun *r = runs_.data() + first_run_[fn], *end = runs_.data() + first_run_[fn + 1]; r != end; ++r) {
      if (!r->located) continue;
      const ScopeKey key = scope_key(r->site, r->block);
      if (key == last && r->at == run_end) {
        run_end = r->end;
        continue;
      }
      for (uint32_t scope : targets_) add_code(block_code_[scope], run_at, run_end);
      run_at = r->at, run_end = r->end;
      if (key != last) {
        last = key, targets_.clear();
        for (uint32_t site = r->site, block = r->block;;) {
          for (uint32_t k = block; k; k = d_.blocks[k - 1].parent)
            if (uint32_t scope = find_scope(scope_key(site, k)); scope != kNoScope) targets_.push_back(scope);
          if (!site) break;
          block = d_.inline_sites[site - 1].block, site = d_.inline_sites[site - 1].parent;
        }
      }
    }
    for (uint32_t scope : targets_) add_code(block_code_[scope], run_at, run_end);
  }

  // Marks the blocks that hold (site, block): its block chain at its site, then the
  // chain of the block each enclosing inlined call is made in. A block marked before
  // has its chain marked: the walk stops there.
  void want_blocks(uint32_t site, uint32_t block) {
    for (;;) {
      for (uint32_t k = block; k; k = d_.blocks[k - 1].parent)
        if (!add_scope(scope_key(site, k))) return;
      if (!site) return;
      block = d_.inline_sites[site - 1].block, site = d_.inline_sites[site - 1].parent;
    }
  }

  static constexpr uint32_t kNoScope = ~0u, kFunctionBody = 0;
  static size_t scope_hash(ScopeKey k) { return (k * 0x9e3779b97f4a7c15ull) >> 32; }
  uint32_t find_scope(ScopeKey k) const {
    const size_t mask = scope_slots_.size() - 1;
    for (size_t i = scope_hash(k) & mask; scope_slots_[i].epoch == scope_epoch_; i = (i + 1) & mask)
      if (scope_slots_[i].key == k) return scope_slots_[i].scope;
    return kNoScope;
  }
  // Gives scope k the next index unless it has one; returns whether it was new.
  bool add_scope(ScopeKey k) {
    if (2 * (scope_keys_.size() + 1) > scope_slots_.size()) grow_scopes();
    const size_t mask = scope_slots_.size() - 1;
    for (size_t i = scope_hash(k) & mask;; i = (i + 1) & mask) {
      ScopeSlot& slot = scope_slots_[i];
      if (slot.epoch != scope_epoch_) {
        slot = {k, static_cast<uint32_t>(scope_keys_.size()), scope_epoch_};
        scope_keys_.push_back(k);
        return true;
      }
      if (slot.key == k) return false;
    }
  }
  void grow_scopes() {
    scope_slots_.assign(std::max<size_t>(64, 2 * scope_slots_.size()), ScopeSlot{0, 0, 0});
    const size_t mask = scope_slots_.size() - 1;
    for (uint32_t scope = 0; scope < scope_keys_.size(); ++scope) {
      size_t i = scope_hash(scope_keys_[scope]) & mask;
      while (scope_slots_[i].epoch == scope_epoch_) i = (i + 1) & mask;
      scope_slots_[i] = {scope_keys_[scope], scope, scope_epoch_};
    }
  }
  // A new function's scopes: the slots of the last one's are empty by their epoch.
  void clear_scopes() {
    scope_keys_.clear();
    if (++scope_epoch_ == 0) scope_slots_.assign(scope_slots_.size(), ScopeSlot{0, 0, 0}), scope_epoch_ = 1;
    if (scope_slots_.empty()) grow_scopes();
  }

  bool variable_written(const FlatDebugVariable& v) const {
    if (!v.block) return true;
    const uint32_t scope = find_scope(scope_key(v.inline_site, v.block));
    return scope != kNoScope && !block_code_[scope].empty();
  }

  // A scope's entries in one of its tables.
  std::pair<const ScopeEntry*, const ScopeEntry*> in_scope(ScopeTable t, uint32_t scope) const {
    return {spans_[scope].begin[t], spans_[scope].end[t]};
  }

  bool has_own_variables(uint32_t scope) const {
    for (auto [v, end] = in_scope(kVariables, scope); v != end; ++v)
      if (variable_written(d_.variables[v->second])) return true;
    return false;
  }

  // Whether a subprogram, an inlined call or a block has DIEs inside it: a variable, a
  // block with some, or an inlined call. The answer is kept: the writer asks again for
  // every block on the way down.
  bool has_contents(uint32_t scope) {
    if (contents_[scope] >= 0) return contents_[scope];
    auto [s, s_end] = in_scope(kSites, scope);
    bool any = s != s_end || has_own_variables(scope);
    for (auto [c, end] = in_scope(kBlocks, scope); !any && c != end; ++c) any = has_contents(c->second);
    contents_[scope] = any;
    return any;
  }

  // The DIEs inside a subprogram, an inlined call or a block: its parameters by number,
  // its other variables in order, its blocks, then the calls inlined in it. A block
  // without variables of its own is no DIE: what is inside it goes to the enclosing
  // one, as LLVM does with a scope whose children are all scopes.
  // A walk with a stack of its own, not recursion: blocks nest inside each inlined
  // call, so the depth is the product of the two chains' (256 each at most, 65536 in
  // all), which the thread's stack would not hold.
  void write_scope_contents(uint32_t fn, uint32_t scope) {
    contents_walk_.clear();
    open_scope(scope, false);
    while (!contents_walk_.empty()) {
      ContentsFrame& f = contents_walk_.back();
      if (f.block_at != f.block_end) {
        const uint32_t inner = (f.block_at++)->second;
        if (!has_contents(inner)) continue;
        const bool die = has_own_variables(inner);
        if (die) write_block_header(fn, inner);
        open_scope(inner, die);  // invalidates f
      } else if (f.site_at != f.site_end) {
        const uint32_t s = (f.site_at++)->second, body = find_scope(scope_key(s, 0));
        if (write_site_header(fn, s, body)) open_scope(body, true);  // invalidates f
      } else {
        const bool ends_die = f.ends_die;
        contents_walk_.pop_back();
        if (ends_die) put_u8(out_[kInfo], 0);
      }
    }
  }

  // One scope of write_scope_contents' walk: its variables are written when it is
  // opened, then its blocks and its inlined calls one by one.
  struct ContentsFrame {
    const ScopeEntry *block_at, *block_end, *site_at, *site_end;
    bool ends_die;  // the scope is a DIE of its own, whose children end with it
  };
  std::vector<ContentsFrame> contents_walk_;

  void open_scope(uint32_t scope, bool ends_die) {
    for (auto [v, end] = in_scope(kVariables, scope); v != end; ++v)
      if (variable_written(d_.variables[v->second])) write_variable_die(d_.variables[v->second]);
    auto [blocks, blocks_end] = in_scope(kBlocks, scope);
    auto [sites, sites_end] = in_scope(kSites, scope);
    contents_walk_.push_back({blocks, blocks_end, sites, sites_end, ends_die});
  }

  // A lexical block's DIE up to its contents (write_scope_contents writes them).
  void write_block_header(uint32_t fn, uint32_t scope) {
    const auto& code = block_code_[scope];
    uint32_t& abbreviation_code = shaped_code(kShapeBlock, code.size() == 1 ? 1 : 0);
    if (!abbreviation_code) {
      Abbreviation a{kTagLexicalBlock, true, {}};
      if (code.size() == 1) a.attributes.insert(a.attributes.end(), {{kAtLowPc, kFormAddr}, {kAtHighPc, kFormData4}});
      else a.attributes.push_back({kAtRanges, kFormSecOffset});
      abbreviation_code = abbreviation(std::move(a));
    }
    put_uleb(out_[kInfo], abbreviation_code);
    put_code_ranges(fn, code);
  }

  // Where a variable is: its alloca's memory, or the memory its argument points to,
  // both at fixed distances below the frame's top, which is the function's frame_bias
  // above rbp (the frame base); then the record's expression.
  // An alloca aligned beyond 16 is aligned at run time: no fixed place, no location.
  bool has_location(const FlatDebugVariable& v) const {
    return v.storage_kind != kDebugStorageAlloca || flat_.insts[v.storage].imm <= 16;
  }
  // The location's length, then its expression (at most location_bound(v) bytes): the
  // expression is encoded after room for the longest length the bound allows, and moved
  // down where its length took fewer bytes (an expression of 11 operations or more).
  static size_t location_bound(const FlatDebugVariable& v) { return 12 + 11 * v.expression.size(); }
  void put_location(const FlatDebugVariable& v, ByteCursor& c) const {
    size_t length_room = 1;
    while (location_bound(v) >> (7 * length_room)) ++length_room;
    ByteCursor e{c.bytes + c.n + length_room};
    const int64_t bias = frame_bias(frame_size_at_[v.function]);  // stamp_frame's, for this function
    if (v.storage_kind == kDebugStorageAlloca) {
      e.u8(kOpFbreg), e.sleb(bias - int64_t(alloca_mem_at_[v.storage]));
    } else {
      e.u8(kOpFbreg), e.sleb(bias - int64_t(arg_slot_at_[flat_.functions[v.function].first_arg + v.storage]));
      e.u8(static_cast<uint8_t>(kDwarfOpDeref));
    }
    for (size_t k = 0; k < v.expression.size(); ++k) {
      e.u8(static_cast<uint8_t>(v.expression[k]));
      if (v.expression[k] == kDwarfOpPlusUconst) e.uleb(v.expression[++k]);
    }
    const size_t length_at = c.n;
    c.uleb(e.n);
    if (c.n - length_at < length_room) std::memmove(c.bytes + c.n, e.bytes, e.n);
    c.n += e.n;
  }

  // A variable's DIE, encoded straight into .debug_info: its attribute list follows
  // from which attributes it has (shaped_code). Made as DieValues and then encoded, its
  // values were stored twice and dispatched on their forms.
  static constexpr uint32_t kVarParameter = 1, kVarLocated = 2, kVarNamed = 4, kVarDeclared = 8, kVarTyped = 16,
                            kVarArtificial = 32;
  void write_variable_die(const FlatDebugVariable& v) {
    const uint32_t shape = (v.arg ? kVarParameter : 0) | (has_location(v) ? kVarLocated : 0) |
        (!v.name.empty() ? kVarNamed : 0) | (v.file ? kVarDeclared : 0) |
        (v.type && written_[v.type - 1] ? kVarTyped : 0) | (v.flags & kDebugTypeArtificial ? kVarArtificial : 0);
    uint32_t& code = shaped_code(kShapeVariable, shape);
    if (!code) code = variable_abbreviation(shape);
    Bytes& b = out_[kInfo];
    ByteCursor c = cursor(b, 5 + 5 + location_bound(v) + 4 + 20 + 4);  // code, location, name, file and line, type
    c.uleb(code);
    if (shape & kVarLocated) put_location(v, c);
    if (shape & kVarNamed) {
      // (.debug_str grows, not .debug_info: the cursor stays valid.)
      add_reloc(s_[kInfo].relocs,
                {static_cast<uint32_t>(b.size() + c.n), kReloc32, kDwarfSectionTarget + kStr, string(v.name)});
      c.zero4();
    }
    if (shape & kVarDeclared) c.uleb(v.file), c.uleb(v.line);
    if (shape & kVarTyped) type_fixups_.push_back({static_cast<uint32_t>(b.size() + c.n), v.type - 1}), c.zero4();
    advance(b, c);
  }
  uint32_t variable_abbreviation(uint32_t shape) {
    Abbreviation a{(shape & kVarParameter) ? kTagFormalParameter : kTagVariable, false, {}};
    if (shape & kVarLocated) a.attributes.push_back({kAtLocation, kFormExprloc});
    if (shape & kVarNamed) a.attributes.push_back({kAtName, kFormStrp});
    if (shape & kVarDeclared)
      a.attributes.insert(a.attributes.end(), {{kAtDeclFile, kFormUdata}, {kAtDeclLine, kFormUdata}});
    if (shape & kVarTyped) a.attributes.push_back({kAtType, kFormRef4});
    if (shape & kVarArtificial) a.attributes.push_back({kAtArtificial, kFormFlagPresent});
    return abbreviation(std::move(a));
  }

  // ---- types ------------------------------------------------------------------

  // The DIE's code, then its values (encoded as they were added) in one copy;
  // relocations and references note where their fields land.
  void put_die(uint16_t tag, bool children, const DieValues& die) {
    put_die_values(die_abbreviation(tag, children, die), die);
  }
  void put_die_values(uint32_t code, const DieValues& die) {
    Bytes& b = out_[kInfo];
    ByteCursor c = cursor(b, 5 + sizeof die.bytes);
    c.uleb(code);
    std::memcpy(c.bytes + c.n, die.bytes, die.size);
    const size_t values_at = b.size() + c.n;
    for (uint8_t k = 0; k < die.fixup_count; ++k) {
      const DieValues::Fixup& f = die.fixups[k];
      const uint32_t at = static_cast<uint32_t>(values_at + f.at);
      if (f.strp) add_reloc(s_[kInfo].relocs, {at, kReloc32, kDwarfSectionTarget + kStr, f.value});
      else type_fixups_.push_back({at, f.value - 1});
    }
    c.n += die.size;
    advance(b, c);
  }

  // DW_AT_type (or DW_AT_discr, DW_AT_containing_type) naming type `t` (1-based): none
  // for 0, for an element, which has no DIE of its own (DW_AT_discr names one inside its
  // owner), and for a type not written (type_written).
  void add_type(DieValues& die, uint16_t attribute, uint32_t t) {
    if (t && (attribute == kAtDiscr || written_[t - 1])) die.add(attribute, kFormRef4, t);
  }

  // Whether a type has a DIE among its scope's: not an element, nor a pointer to member
  // without its class (DW_AT_containing_type, DWARF 5 section 5.7; files before version
  // 12 do not carry it), for which gdb refuses the whole unit; left out, what names it
  // has no type, as a void would. The class is looked at by its tag, not recursively: a
  // hostile file's pointers to member could name each other in a loop.
  bool type_written(const FlatDebugType& t) const {
    if (debug_type_is_element(t.tag)) return false;
    if (t.tag != kTagPtrToMember) return true;
    if (!t.containing_type) return false;
    const uint16_t owner = d_.types[t.containing_type - 1].tag;
    return !debug_type_is_element(owner) && owner != kTagPtrToMember;
  }

  void add_name_and_line(DieValues& die, const FlatDebugType& t) {
    if (!t.name.empty()) die.add(kAtName, kFormStrp, string(t.name));
    if (t.file && !(t.flags & kDebugTypeDeclaration))
      die.add(kAtDeclFile, kFormUdata, t.file), die.add(kAtDeclLine, kFormUdata, t.line);
  }

  // Whether a discriminant is written unsigned: as LLVM's isUnsignedDIType says of the
  // discriminator member's type.
  bool discriminant_unsigned(uint32_t discriminator) const {
    if (!discriminator || !d_.types[discriminator - 1].type) return false;
    const FlatDebugType& t = d_.types[d_.types[discriminator - 1].type - 1];
    if (t.tag != kTagBaseType) return true;  // pointers and the like
    return t.encoding == kAteUnsigned || t.encoding == kAteUnsignedChar || t.encoding == kAteBoolean ||
        t.encoding == kAteUtf;
  }

  // A base, derived or composite type's attributes, as LLVM's DwarfUnit gives them: a
  // base type always has its size, a structure, union, class or enumeration its size
  // (0 too) and alignment unless only declared, a derived type a size that is not 0
  // (and pointers none), an array none.
  void add_type_attributes(DieValues& die, const FlatDebugType& ty) {
    const bool aggregate = ty.tag == kTagStructure || ty.tag == kTagUnion || ty.tag == kTagClass ||
        ty.tag == kTagEnumeration;
    const bool pointer = ty.tag == kTagPointer || ty.tag == kTagReference || ty.tag == kTagRvalueReference ||
        ty.tag == kTagPtrToMember;
    add_type(die, kAtType, ty.type);
    add_name_and_line(die, ty);
    if (ty.tag == kTagBaseType) {
      die.add(kAtByteSize, kFormUdata, ty.size_bits / 8);
      die.add(kAtEncoding, kFormData1, ty.encoding);
    } else if (aggregate && !(ty.flags & kDebugTypeDeclaration)) {
      die.add(kAtByteSize, kFormUdata, ty.size_bits / 8);
      if (ty.align_bits / 8) die.add(kAtAlignment, kFormUdata, ty.align_bits / 8);
    } else if (!aggregate && !pointer && ty.tag != kTagArray && ty.tag != kTagSubroutineType && ty.size_bits) {
      die.add(kAtByteSize, kFormUdata, ty.size_bits / 8);
    }
    if (ty.tag == kTagPtrToMember) add_type(die, kAtContainingType, ty.containing_type);
    if (ty.flags & kDebugTypeDeclaration) die.add(kAtDeclaration, kFormFlagPresent);
  }

  // A type's DIE and, inside it, the DIEs it contains (debug_type_children).
  void write_type_die(uint32_t t) {
    Bytes& b = out_[kInfo];
    const FlatDebugType& ty = d_.types[t];
    // As debug_type_nesting_defect bounds a flat file's types: a type that contains
    // itself would recurse without end, and shared elements could multiply the DIEs.
    if (++type_dies_ > kMaxTypeDies) fail("debug information: debug types expand to too many entries");
    if (type_depth_ >= kMaxDebugNesting) fail("debug information: debug types nested too deep or contain themselves");
    ++type_depth_;
    write_type_die_at(t, ty, b);
    --type_depth_;
  }
  void write_type_die_at(uint32_t t, const FlatDebugType& ty, Bytes& b) {
    if (!type_offset_[t]) type_offset_[t] = static_cast<uint32_t>(b.size());
    DieValues die;
    switch (ty.tag) {
      case kTagMember:
      case kTagInheritance:
        add_name_and_line(die, ty);
        add_type(die, kAtType, ty.type);
        if (ty.flags & kDebugTypeBitField)
          die.add(kAtBitSize, kFormUdata, ty.size_bits), die.add(kAtDataBitOffset, kFormUdata, ty.offset_bits);
        else die.add(kAtDataMemberLocation, kFormUdata, ty.offset_bits / 8);
        if (ty.align_bits / 8) die.add(kAtAlignment, kFormUdata, ty.align_bits / 8);
        break;
      case kTagSubrange:
        if ((ty.flags & kDebugTypeHasValue) && ty.value >= 0) die.add(kAtCount, kFormUdata, ty.value);
        break;
      case kTagEnumerator:
        die.add(kAtName, kFormStrp, string(ty.name));
        die.add(kAtConstValue, (ty.flags & kDebugTypeUnsigned) ? kFormUdata : kFormSdata, ty.value);
        break;
      case kTagTemplateTypeParameter:
        add_type(die, kAtType, ty.type);
        if (!ty.name.empty()) die.add(kAtName, kFormStrp, string(ty.name));
        break;
      case kTagVariantPart: add_type(die, kAtDiscr, ty.discriminator); break;
      default: add_type_attributes(die, ty);
    }
    if (ty.flags & kDebugTypeArtificial) die.add(kAtArtificial, kFormFlagPresent);
    const bool children = type_children_.count(t) || (ty.tag == kTagSubroutineType && !ty.elements.empty());
    put_die_values(type_abbreviation(ty.tag, children, die), die);
    if (!children) return;
    if (ty.tag == kTagSubroutineType) {
      write_parameter_types(ty);
    } else if (ty.tag == kTagVariantPart) {
      write_variants(t);
    } else {
      // Template parameters first, as LLVM writes them.
      for (const uint32_t* c = type_children_.begin(t); c != type_children_.end(t); ++c)
        if (d_.types[*c].tag == kTagTemplateTypeParameter) write_type_die(*c);
      for (const uint32_t* c = type_children_.begin(t); c != type_children_.end(t); ++c)
        if (d_.types[*c].tag != kTagTemplateTypeParameter) write_type_die(*c);
    }
    put_u8(b, 0);
  }

  void write_parameter_types(const FlatDebugType& routine) {
    for (uint32_t p : routine.elements) {
      DieValues die;
      add_type(die, kAtType, p);
      put_die(p ? kTagFormalParameter : kTagUnspecifiedParameters, false, die);
    }
  }

  // A variant part: its discriminator member, then each member in a DW_TAG_variant
  // with its discriminant value (none: the default variant), as LLVM writes Rust's enums.
  void write_variants(uint32_t t) {
    Bytes& b = out_[kInfo];
    const FlatDebugType& part = d_.types[t];
    const bool is_unsigned = discriminant_unsigned(part.discriminator);
    for (const uint32_t* it = type_children_.begin(t); it != type_children_.end(t); ++it) {
      const uint32_t c = *it;
      const FlatDebugType& member = d_.types[c];
      if (c + 1 == part.discriminator || member.tag != kTagMember) {
        write_type_die(c);
        continue;
      }
      DieValues die;
      if (member.flags & kDebugTypeHasValue) {
        uint64_t value = static_cast<uint64_t>(member.value);
        const uint64_t bits = part.discriminator ? d_.types[part.discriminator - 1].size_bits : 64;
        if (is_unsigned && bits && bits < 64) value &= (uint64_t(1) << bits) - 1;
        die.add(kAtDiscrValue, is_unsigned ? kFormUdata : kFormSdata, value);
      }
      put_die(kTagVariant, true, die);
      write_type_die(c);
      put_u8(b, 0);
    }
  }

  // Which types are written where: the types declared in a namespace chain or in
  // the unit at that scope, the others inside their owners.
  void plan_types() {
    type_children_ = debug_type_children(d_.types);
    type_offset_.assign(d_.types.size(), 0);
    written_.resize(d_.types.size());
    for (size_t t = 0; t < d_.types.size(); ++t) written_[t] = type_written(d_.types[t]);
    scope_types_.build(d_.scopes.size() + 1, static_cast<uint32_t>(d_.types.size()),
                       [&](uint32_t t) { return !d_.types[t].parent_type && written_[t] ? d_.types[t].scope : ~0u; });
    first_variable_.assign(flat_.functions.size() + 1, 0);
    for (const FlatDebugVariable& v : d_.variables) ++first_variable_[v.function + 1];
    for (size_t fn = 0; fn < flat_.functions.size(); ++fn) first_variable_[fn + 1] += first_variable_[fn];
    frames_given_ = code_.alloca_mem.size() == flat_.insts.size() && code_.arg_slot.size() == flat_.arg_widths.size() &&
        code_.frame_size.size() == flat_.functions.size();
    if (frames_given_) {
      alloca_mem_at_ = code_.alloca_mem.data(), arg_slot_at_ = code_.arg_slot.data();
      frame_size_at_ = code_.frame_size.data();
    } else if (!d_.variables.empty()) {
      const size_t n = flat_.insts.size();
      alloca_mem_.assign(n, 0), arg_slot_.assign(flat_.arg_widths.size(), 0);
      frame_.use_count.assign(n, 0), frame_.home.assign(n, 0), frame_.keys.assign(n, 0), frame_.inst_slot.assign(n, 0);
      frame_.frame_size.assign(flat_.functions.size(), 0);
      alloca_mem_at_ = alloca_mem_.data(), arg_slot_at_ = arg_slot_.data();
      frame_size_at_ = frame_.frame_size.data();
    }
  }

  void write_info() {
    Bytes& b = out_[kInfo];
    // Room for what the types and variables will need, found once rather than by
    // growing (a DIE takes some 12 bytes and a string relocation or two).
    const size_t dies =
        d_.types.size() + d_.variables.size() + d_.functions.size() + d_.inline_sites.size() + globals_.size();
    b.reserve(16 * dies);
    s_[kInfo].relocs.reserve(2 * dies);
    // The strings' table for a quarter as many distinct strings as DIEs (names repeat:
    // variables' most of all); it grows past that, from the hashes it keeps. Sized for
    // one string per DIE, its memory was filled for little use in every module.
    grow_strings(dies / 2);
    put_le<uint32_t>(b, 0);  // unit_length, patched below
    put_le<uint16_t>(b, static_cast<uint16_t>(version_));
    if (version_ >= 5) {
      put_u8(b, kUnitCompile), put_u8(b, 8);
      put_section_offset(kInfo, kAbbrev, 0);
    } else {
      put_section_offset(kInfo, kAbbrev, 0);
      put_u8(b, 8);
    }
    write_unit_die();
    const size_t scopes = d_.scopes.size() + 1;
    // (A scope's children are held 0-based: write_children names scope s + 1.)
    scope_children_.build(scopes, static_cast<uint32_t>(d_.scopes.size()),
                          [&](uint32_t s) { return d_.scopes[s].parent; });
    scope_functions_.build(scopes, static_cast<uint32_t>(flat_.functions.size()),
                           [&](uint32_t fn) { return d_.functions[fn].has_subprogram ? d_.functions[fn].scope : ~0u; });
    scope_inlined_.build(scopes, static_cast<uint32_t>(d_.inlined.size()),
                         [&](uint32_t k) { return d_.inlined[k].scope; });
    scope_globals_.build(scopes, static_cast<uint32_t>(globals_.size()), [&](uint32_t k) {
      return d_.globals[globals_[k]].function ? ~0u : d_.globals[globals_[k]].scope;
    });
    // (ScopeLists' scope 0 is a list too: function fn's statics are held at fn + 1.)
    function_globals_.build(flat_.functions.size() + 1, static_cast<uint32_t>(globals_.size()), [&](uint32_t k) {
      return d_.globals[globals_[k]].function ? d_.globals[globals_[k]].function : ~0u;
    });
    abstract_offset_.assign(d_.inlined.size(), 0);
    plan_types();
    write_children(0);
    put_u8(b, 0);  // the unit's children end
    // An inlined call may come before its callee's abstract subprogram, a variable
    // before its type.
    for (auto [at, k] : origin_fixups_) patch_u32(b, at, abstract_offset_[k]);
    for (auto [at, t] : type_fixups_) patch_u32(b, at, type_offset_[t]);
    patch_u32(b, 0, static_cast<uint32_t>(b.size() - 4));
  }

  void write_abbreviations() {
    Bytes& b = out_[kAbbrev];
    for (size_t i = 0; i < abbreviations_.size(); ++i) {
      const Abbreviation& a = abbreviations_[i];
      put_uleb(b, i + 1), put_uleb(b, a.tag), put_u8(b, a.children ? 1 : 0);
      for (auto [attribute, form] : a.attributes) put_uleb(b, attribute), put_uleb(b, form);
      put_u8(b, 0), put_u8(b, 0);
    }
    put_u8(b, 0);
  }
};

}  // namespace

StampDwarf build_stamp_dwarf(const FlatModuleData& flat, const StampOutput& code, const std::string& source_name,
                             const std::vector<StampData>* data) {
  return DwarfBuilder(flat, code, source_name, data).build();
}

}  // namespace kiln
