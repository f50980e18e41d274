// Metadata records (METADATA_BLOCK 15 and its kin) as MetadataLoader.cpp's
// parseOneMetadata numbers them, decoded only as far as stamp's debug information goes.
#include "bitcode_debug.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <memory>

#include "bitcode_reader_internal.h"
#include "codegen_requests.h"

namespace kiln::bc::detail {

namespace {

using namespace md;

// Sets of record codes, one bit per code: codes past 63 are in none of them.
constexpr uint64_t codes(std::initializer_list<uint32_t> list) {
  uint64_t bits = 0;
  for (uint32_t code : list) bits |= uint64_t(1) << code;
  return bits;
}
constexpr bool in(uint64_t set, uint32_t code) { return code < 64 && (set >> code) & 1; }

// The records that define the next metadata id: every one parseOneMetadata gives
// NextMetadataNo to. METADATA_STRINGS defines one per string; NAME, KIND, NAMED_NODE,
// GLOBAL_DECL_ATTACHMENT, the index records and unknown codes define none (LLVM
// ignores what it does not know).
constexpr uint64_t kDefinesId = (((uint64_t(1) << 35) - 2) & ~codes({kName, kKind, kNamedNode, kAttachment})) |
    codes({37, 40, 41, 44, 45, 46, 47, 48, 49});
bool defines_id(uint32_t code) { return in(kDefinesId, code); }

// The records whose fields stamp reads; the others are counted, their operands passed
// over. Tuples and values matter only as module flags; locations, namespaces and
// composite types as inlined calls and the scopes subprograms are declared in.
constexpr uint64_t kReadInFunction = codes({kStrings, kName, kKind, kFile, kSubprogram, kLexicalBlock,
                                            kLexicalBlockFile, kLocation, kNamespace, kCompositeType});
// At full emission, a body's variables and the types and values they name too.
constexpr uint64_t kReadTypes = codes({kSubrange, kEnumerator, kBasicType, kDerivedType, kSubroutineType, kTemplateType,
                                       kLocalVar, kExpression, kStringType, kSubrangeType, kFixedPointType});
constexpr uint64_t kReadInFunctionFull = kReadInFunction | kReadTypes | codes({kNode, kDistinctNode, kValue});
// The module's records are read in order only when it has no index (small modules):
// its types are then kept whatever the emission, which is not known yet.
constexpr uint64_t kReadInModule = kReadInFunction | kReadTypes |
    codes({kCompileUnit, kNode, kDistinctNode, kValue, kIndexOffset, kGlobalVar, kGlobalVarExpr,
           kGlobalDeclAttachment});
// The cursor's filters (none at full emission in a body, where nearly all are read).
bool read_in_function(uint32_t code) { return in(kReadInFunction, code); }
bool read_in_module(uint32_t code) { return in(kReadInModule, code); }

constexpr size_t kMaxIds = 0xFFFFFFF0u;                  // ids are 32-bit in LLVM
constexpr uint64_t kLangVersioned = 1ull << 63;          // COMPILE_UNIT's language: a versioned name
constexpr uint64_t kSpFlagsPresent = 4, kSpHasUnit = 2;  // SUBPROGRAM's first field
constexpr uint64_t kSpFlagLocalToUnit = 4;               // DISubprogram::SPFlagLocalToUnit
constexpr uint64_t kSpFlagMainSubprogram = 1u << 8;      // DISubprogram::SPFlagMainSubprogram
constexpr uint64_t kFlagPrototyped = 1u << 8;            // DINode::FlagPrototyped, of SUBPROGRAM's DIFlags
constexpr uint64_t kDebugMetadataVersion = 3;            // llvm::DEBUG_METADATA_VERSION
constexpr uint16_t kTagNamespace = 0x39;                 // DW_TAG_namespace
constexpr uint32_t kMaxColumn = 0xFFFF;  // DILocation keeps 16 bits of column; more is unknown (0)

}  // namespace

}  // namespace kiln::bc::detail

namespace kiln::bc {

// A long name gets a block of its own, so that the block being filled stays in use.
std::string_view BcNames::add(std::string_view name) {
  if (name.empty()) return {};
  if (name.size() > left_) {
    if (name.size() > kBlock / 4) {
      blocks_.push_back(std::make_unique_for_overwrite<char[]>(name.size()));
      std::memcpy(blocks_.back().get(), name.data(), name.size());
      return {blocks_.back().get(), name.size()};
    }
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(kBlock));
    free_ = blocks_.back().get();
    left_ = kBlock;
  }
  std::memcpy(free_, name.data(), name.size());
  const std::string_view kept(free_, name.size());
  free_ += name.size();
  left_ -= name.size();
  return kept;
}

}  // namespace kiln::bc

namespace kiln::bc::detail {

void DebugMetadata::decline(const std::string& why) {
  if (m_.declined.empty()) m_.declined = "reader: " + why;
}

void DebugMetadata::read_kinds(BitstreamCursor& c) {
  for (;;) {
    BitstreamEntry e = c.advance();
    if (e.kind == BitstreamEntry::kEndBlock) return;
    if (e.kind == BitstreamEntry::kEndOfStream) c.fail("stream ends inside the metadata kinds");
    if (e.kind == BitstreamEntry::kEnterBlock) {
      c.skip_block();
      continue;
    }
    if (c.read_record(e.id, ops_) == kKind && kind_record()) return c.skip_block();  // one kind is enough
  }
}

// KIND [id, name...]: stamp asks of one kind only. True when this is it.
bool DebugMetadata::kind_record() {
  static constexpr std::string_view kDbg = "dbg";
  if (ops_.size() != 1 + kDbg.size() || !std::equal(kDbg.begin(), kDbg.end(), ops_.begin() + 1)) return false;
  dbg_kind_ = ops_[0];
  return true;
}

void DebugMetadata::read_module_block(BitstreamCursor& c) {
  if (++module_blocks_ > 1) {
    // LLVM writes one; a second would continue the numbering after records the
    // first one's index may have left unread.
    decline("a second module-level metadata block");
    return c.skip_block();
  }
  read_block(c, true);
}

// A body's block is passed over where it stands and read when one of its ids is first
// needed, only as far as that id: the scopes locations name come early (LLVM writes
// distinct nodes before uniqued ones), the variables, types and locations of the debug
// records after them, unread.
void DebugMetadata::read_function_block(BitstreamCursor& c) {
  BitstreamCursor::BlockMark mark = c.mark_block();
  const uint64_t begin = BitstreamCursor::block_begin(mark);
  deferred_.push_back({std::move(mark), begin});
  c.skip_block();
}

void DebugMetadata::read_deferred(BitstreamCursor& c, uint64_t id) {
  while (entries_.size() <= id && read_deferred_ < deferred_.size()) {
    Deferred& d = deferred_[read_deferred_];
    c.resume_block(d.block, d.at);
    const bool ended = read_block(c, false, id);
    d.at = c.leave_block(d.block);
    if (ended) ++read_deferred_;
  }
}

// Reads records to the block's END_BLOCK (true), or until id `until` is defined.
bool DebugMetadata::read_block(BitstreamCursor& c, bool module_level, uint64_t until) {
  const uint64_t read = module_level ? kReadInModule : full_ ? kReadInFunctionFull : kReadInFunction;
  // At full emission a body's records are nearly all read: with no filter, the cursor
  // reads those of a compiled abbreviation (its locations) by its fast path.
  const BitstreamCursor::CodeFilter filter = module_level ? read_in_module : full_ ? nullptr : read_in_function;
  while (entries_.size() <= until) {
    BitstreamEntry e = c.advance();
    if (e.kind == BitstreamEntry::kEndBlock) return true;
    if (e.kind == BitstreamEntry::kEndOfStream) c.fail("stream ends inside a metadata block");
    if (e.kind == BitstreamEntry::kEnterBlock) {
      c.skip_block();
      continue;
    }
    std::string_view blob;
    uint32_t code = c.read_record(e.id, ops_, &blob, filter);
    switch (code) {
      case kStrings:
        strings(c, blob);
        break;
      case kName:
        named_node(c);
        break;
      case kKind:
        kind_record();  // older files keep the kinds here
        break;
      case kIndexOffset:
        if (module_level) index(c);  // LLVM's reader uses a module's index only
        break;
      case kGlobalDeclAttachment:
        if (module_level) global_attachment(c);
        break;
      default:
        if (!defines_id(code)) break;
        if (entries_.size() >= kMaxIds) c.fail("more metadata than 32-bit ids number");
        entries_.push_back(in(read, code) ? decode(c, code) : Entry{Kind::kOther, 0});
        break;
    }
  }
  return false;
}

// STRINGS [count, offset to the bytes] and a blob: the strings take the next `count`
// ids. Their lengths are decoded when one of them is first used.
void DebugMetadata::strings(BitstreamCursor& c, std::string_view blob) {
  if (ops_.size() != 2 || ops_[0] == 0 || ops_[1] > blob.size()) c.fail("invalid metadata strings record");
  // Each length takes six bits at least: a count the lengths cannot hold is corrupt.
  if (ops_[0] > ops_[1] * 8 / 6 || entries_.size() + ops_[0] > kMaxIds) c.fail("metadata strings record of too many");
  Strings s{uint32_t(entries_.size()), uint32_t(ops_[0]), blob.substr(0, ops_[1]), blob.substr(ops_[1]), {}};
  entries_.insert(entries_.end(), s.count, Entry{Kind::kString, uint32_t(strings_.size())});
  strings_.push_back(std::move(s));
}

// NAME [chars] and then NAMED_NODE [node ids]: two named nodes are stamp's.
void DebugMetadata::named_node(BitstreamCursor& c) {
  std::string name(ops_.begin(), ops_.end());
  BitstreamEntry e = c.advance();
  if (e.kind != BitstreamEntry::kRecord || c.read_record(e.id, ops_) != kNamedNode)
    c.fail("METADATA_NAME not followed by METADATA_NAMED_NODE");
  std::vector<uint32_t>* named = name == "llvm.dbg.cu" ? &units_named_
      : name == "llvm.module.flags"                    ? &flags_named_
                                                       : nullptr;
  if (!named) return;
  for (uint64_t id : ops_) {
    if (id >= kMaxIds) c.fail("named metadata operand out of range");
    named->push_back(uint32_t(id));
  }
}

// INDEX_OFFSET [low 32 bits, high 32 bits]: how far METADATA_INDEX lies past this
// record's end. The index holds, delta by delta from there, where each record up to it
// starts, one per id after the strings: those records are left unread and the cursor
// moves on to the index, after which come the named nodes.
void DebugMetadata::index(BitstreamCursor& c) {
  if (ops_.size() != 2) c.fail("invalid metadata index offset record");
  const uint64_t begin = c.bit_offset(), offset = ops_[0] + (ops_[1] << 32);
  if (offset > ~uint64_t(0) - begin) c.fail("metadata index offset out of range");
  indexed_block_ = c.mark_block();
  c.skip_to(begin + offset);
  BitstreamEntry e = c.advance();
  if (e.kind != BitstreamEntry::kRecord || c.read_record(e.id, ops_) != kIndex)
    c.fail("metadata index offset points to no METADATA_INDEX record");
  if (entries_.size() + ops_.size() > kMaxIds) c.fail("metadata index of too many records");
  uint64_t at = begin;
  for (uint64_t delta : ops_) {
    if (delta >= begin + offset - at) c.fail("metadata index entry past the index");
    at += delta;
    entries_.push_back({Kind::kUnread, uint32_t(positions_.size())});
    positions_.push_back(at);
  }
}

// A record that defines an id, in ops_: what stamp keeps of it.
DebugMetadata::Entry DebugMetadata::decode(BitstreamCursor& c, uint32_t code) {
  auto id_field = [&](size_t i) {
    if (ops_[i] >= kMaxIds) c.fail("metadata operand " + std::to_string(ops_[i]) + " out of range");
    return uint32_t(ops_[i]);
  };
  switch (code) {
    case kFile:  // [distinct, filename, directory, (checksum kind, checksum), (source)]
      if (ops_.size() != 3 && ops_.size() != 5 && ops_.size() != 6) c.fail("invalid DIFile record");
      files_.push_back({id_field(1), id_field(2)});
      return {Kind::kFile, uint32_t(files_.size() - 1)};
    case kLexicalBlock:      // [distinct, scope, file, line, column]
    case kLexicalBlockFile:  // [distinct, scope, file, discriminator]
      if (ops_.size() != (code == kLexicalBlock ? 5u : 4u)) c.fail("invalid lexical block record");
      if (code == kLexicalBlockFile) blocks_.push_back({id_field(1), id_field(2), false, 0, 0});
      else blocks_.push_back({id_field(1), id_field(2), true, uint32_t(ops_[3]), uint16_t(ops_[4])});
      return {Kind::kBlock, uint32_t(blocks_.size() - 1)};
    case kSubprogram:
      return subprogram(c);
    case kNamespace:
      return scope(c, code);
    case kCompositeType: {
      Entry e = scope(c, code);
      composite_type(c);
      return e;
    }
    case kBasicType:
    case kDerivedType:
    case kSubroutineType:
      return type_record(c, code);
    case kSubrange:
    case kEnumerator:
    case kTemplateType:
      return type_parts(c, code);
    case kStringType:
    case kSubrangeType:
    case kFixedPointType:
      return {Kind::kOtherType, 0};
    case kLocalVar:
      return variable_record(c);
    case kExpression:
      return expression_record(c);
    case kGlobalVar:
      return global_variable_record(c);
    case kGlobalVarExpr:
      return global_expression_record(c);
    case kLocation:
      return location_record(c);
    case kCompileUnit:
      return unit(c);
    case kNode:
    case kDistinctNode:
      return node(c);
    case kValue:  // [type, value id]
      if (ops_.size() != 2) c.fail("invalid metadata value record");
      return ops_[1] < kMetadataOperand ? Entry{Kind::kValue, uint32_t(ops_[1])} : Entry{Kind::kOther, 0};
    default:
      return {Kind::kOther, 0};
  }
}

// SUBPROGRAM [flags, scope, name, linkage name, file, line, type, ...]. Since LLVM 8
// (flag 4) its DISPFlags are field 9, its DIFlags field 11 and the scope line field 7;
// older records are declined.
DebugMetadata::Entry DebugMetadata::subprogram(BitstreamCursor& c) {
  if (ops_.size() < 18 || ops_.size() > 22) c.fail("invalid DISubprogram record");
  const bool sp_flags = ops_[0] & kSpFlagsPresent, has_unit = ops_[0] & kSpHasUnit;
  if (sp_flags ? !has_unit : has_unit && ops_.size() < 19) c.fail("invalid DISubprogram record");
  if (!sp_flags) {
    // Before LLVM 8 the main-subprogram flag was one of the DIFlags, which LLVM moves
    // into the SP flags as it reads them; not worth mirroring for such old bitcode.
    decline("a subprogram record without SP flags (debug information before LLVM 8)");
    return {Kind::kOther, 0};
  }
  for (size_t i : {2, 3, 4, 6})
    if (ops_[i] >= kMaxIds) c.fail("DISubprogram operand out of range");
  if (ops_[1] >= kMaxIds) c.fail("DISubprogram operand out of range");
  Subprogram s{uint32_t(ops_[1]),
               uint32_t(ops_[2]),
               uint32_t(ops_[3]),
               uint32_t(ops_[4]),
               uint32_t(ops_[5]),
               uint32_t(ops_[7]),
               (ops_[9] & kSpFlagLocalToUnit) != 0,
               (ops_[9] & kSpFlagMainSubprogram) != 0,
               (ops_[11] & kFlagPrototyped) != 0,
               uint32_t(ops_[6])};
  subprograms_.push_back(s);
  return {Kind::kSubprogram, uint32_t(subprograms_.size() - 1)};
}

// NAMESPACE [distinct | export symbols << 1, scope, name] (LLVM 5 on; before, [distinct,
// scope, file, name, line]) or COMPOSITE_TYPE [flags, tag, name, file, line, scope, ...]:
// a scope a subprogram may be declared in. Ids are + 1.
DebugMetadata::Entry DebugMetadata::scope(BitstreamCursor& c, uint32_t code) {
  size_t name, scope;
  if (code == kNamespace) {
    if (ops_.size() != 3 && ops_.size() != 5) c.fail("invalid DINamespace record");
    name = ops_.size() == 3 ? 2 : 3, scope = 1;
  } else {
    if (ops_.size() < 16 || ops_.size() > 26) c.fail("invalid DICompositeType record");
    name = 2, scope = 5;
  }
  if (ops_[name] >= kMaxIds || ops_[scope] >= kMaxIds) c.fail("debug scope operand out of range");
  // DINode keeps 16 bits of tag.
  const uint16_t tag = code == kNamespace ? kTagNamespace : uint16_t(ops_[1]);
  scopes_.push_back({tag, uint32_t(ops_[name]), uint32_t(ops_[scope])});
  return {Kind::kScope, uint32_t(scopes_.size() - 1)};
}

// LOCATION [distinct, line, column, scope, inlined-at + 1, (implicit, (atom group, rank))]:
// its scope is an id, not id + 1 (LLVM's getMD).
DebugMetadata::Entry DebugMetadata::location_record(BitstreamCursor& c) {
  if (ops_.size() != 5 && ops_.size() != 6 && ops_.size() != 8) c.fail("invalid DILocation record");
  if (ops_[3] >= kMaxIds - 1 || ops_[4] >= kMaxIds) c.fail("DILocation operand out of range");
  const uint32_t column = uint32_t(ops_[2]);
  locations_.push_back({uint32_t(ops_[1]), column > kMaxColumn ? 0 : column, uint32_t(ops_[3] + 1), uint32_t(ops_[4])});
  return {Kind::kLocation, uint32_t(locations_.size() - 1)};
}

// COMPILE_UNIT [distinct, language, file, producer, optimized, flags, runtime version,
// split file, emission kind, ...].
DebugMetadata::Entry DebugMetadata::unit(BitstreamCursor& c) {
  if (ops_.size() < 14 || ops_.size() > 23) c.fail("invalid DICompileUnit record");
  if (ops_[2] >= kMaxIds || ops_[3] >= kMaxIds) c.fail("DICompileUnit operand out of range");
  units_.push_back({ops_[1], ops_[8], uint32_t(ops_[2]), uint32_t(ops_[3])});
  return {Kind::kUnit, uint32_t(units_.size() - 1)};
}

// NODE [ids + 1]: a module flag {behaviour, key, value}, or a type's list of elements.
DebugMetadata::Entry DebugMetadata::node(BitstreamCursor& c) {
  Entry e{Kind::kNode, uint32_t(node_ops_.size())};
  if (node_ops_.size() + ops_.size() >= kMaxIds) c.fail("metadata nodes of too many operands");
  node_ops_.push_back(uint32_t(ops_.size()));
  for (uint64_t op : ops_) node_ops_.push_back(uint32_t(std::min<uint64_t>(op, kMaxIds)));
  return e;
}

// Metadata `id` not read yet: from the body's block, or from the module block where the
// index left it.
DebugMetadata::Entry DebugMetadata::entry_slow(BitstreamCursor& c, uint64_t id) {
  if (id >= entries_.size()) read_deferred(c, id);
  if (id >= entries_.size()) c.fail("metadata id " + std::to_string(id) + " is never defined");
  if (entries_[id].kind != Kind::kUnread) return entries_[id];
  std::string_view blob;
  uint32_t code = c.read_record_at(indexed_block_, positions_[entries_[id].index], ops_, &blob);
  if (!defines_id(code) || code == kStrings)
    c.fail("metadata index entry of record code " + std::to_string(code) + ", which defines no id");
  Entry e = decode(c, code);
  entries_[id] = e;
  return e;
}

// The string of a name field (id + 1); "" for none, as LLVM's getStringOperand gives:
// a view of the stream's bytes.
std::string_view DebugMetadata::chars(BitstreamCursor& c, uint32_t id_plus_one) {
  if (id_plus_one == 0) return {};
  Entry e = entry(c, id_plus_one - 1);
  if (e.kind != Kind::kString) {
    decline("a debug information name that is no string");
    return {};
  }
  Strings& s = strings_[e.index];
  const uint32_t i = id_plus_one - 1 - s.first_id;
  while (s.ends.size() <= i) s.ends.push_back(next_end(c, s));
  uint32_t begin = i ? s.ends[i - 1] : 0;
  return s.chars.substr(begin, s.ends[i] - begin);
}

// Where the next string of `s` ends in its bytes: its length is the next VBR6 field of
// `lengths`, packed from bit 0 as LLVM's writer packs them.
uint32_t DebugMetadata::next_end(BitstreamCursor& c, Strings& s) {
  uint64_t length = 0;
  for (unsigned shift = 0;; shift += 5) {
    if (uint64_t(s.lengths.size()) * 8 - s.bit < 6) c.fail("metadata string lengths run past their bytes");
    if (shift > 30) c.fail("metadata string length over 32 bits");
    const size_t byte = size_t(s.bit / 8);
    unsigned pair = uint8_t(s.lengths[byte]);
    if (byte + 1 < s.lengths.size()) pair |= unsigned(uint8_t(s.lengths[byte + 1])) << 8;
    const unsigned chunk = (pair >> (s.bit % 8)) & 63;
    s.bit += 6;
    length |= uint64_t(chunk & 31) << shift;
    if (!(chunk & 32)) break;
  }
  const uint64_t end = (s.ends.empty() ? 0 : s.ends.back()) + length;
  if (end > s.chars.size()) c.fail("metadata strings run past their bytes");
  return uint32_t(end);
}

// A scope's or subprogram's file, metadata `e`, as a BcDebug::files number: made when
// reader_file() first meets it.
uint32_t DebugMetadata::make_file(BitstreamCursor& c, Entry e) {
  if (e.kind != Kind::kFile) {
    decline("a debug scope's file that is no DIFile");
    return 0;
  }
  const File f = files_[e.index];  // the strings below may read records into files_
  FlatDebugFile named{string(c, f.directory), string(c, f.name)};
  m_.debug.files.push_back(std::move(named));
  return files_[e.index].reader_file = uint32_t(m_.debug.files.size());
}

// A ConstantInt's value, zero-extended (LLVM's getZExtValue); false for any other value.
bool DebugMetadata::integer_value(uint32_t value_id, uint64_t& value) const {
  uint32_t width = 0;
  return constant_int(value_id, value, width);
}

// Module::getModuleFlag: the value of the first valid flag {behaviour, key, value} of
// `key` (a behaviour is an integer from Error, 1, to Min, 8); false when there is none.
bool DebugMetadata::flag(BitstreamCursor& c, std::string_view key, Entry& value) {
  constexpr uint64_t kFirstBehaviour = 1, kLastBehaviour = 8;
  for (uint32_t id : flags_named_) {
    Entry flag = entry(c, id);
    if (flag.kind != Kind::kNode || node_ops_[flag.index] < 3) continue;
    // Behaviour, key, value (ids + 1), copied: reading them may add to node_ops_.
    const uint32_t ops[3] = {node_ops_[flag.index + 1], node_ops_[flag.index + 2], node_ops_[flag.index + 3]};
    uint64_t behaviour = 0;
    Entry b = ops[0] ? entry(c, ops[0] - 1) : Entry{Kind::kOther, 0};
    if (b.kind != Kind::kValue || !integer_value(b.index, behaviour) || behaviour < kFirstBehaviour ||
        behaviour > kLastBehaviour)
      continue;
    if (ops[1] == 0 || entry(c, ops[1] - 1).kind != Kind::kString || chars(c, ops[1]) != key) continue;
    value = ops[2] ? entry(c, ops[2] - 1) : Entry{Kind::kOther, 0};
    return true;
  }
  return false;
}

void DebugMetadata::finish_module(BitstreamCursor& c) {
  // Not debug information, but module flags too, which only this class reads.
  Entry value;
  for (std::string_view key : kCfProtectionFlags) m_.cf_protection = m_.cf_protection || flag(c, key, value);
  read_header(c);
  if (full_ && present()) read_globals(c);
  module_ids_ = entries_.size();
  module_strings_ = strings_.size();
}

// What LLVM's exporter reads of the module: the first compile unit that is not NoDebug
// (Module::debug_compile_units skips those) and the DWARF version (getDwarfVersion, 4
// for none or 0). LLVM's reader drops all debug information of a "Debug Info Version"
// other than its own (UpgradeDebugInfo): such a module has none here either.
void DebugMetadata::read_header(BitstreamCursor& c) {
  Entry v;
  uint64_t version = 0, dwarf = 0;
  if (!flag(c, "Debug Info Version", v) || v.kind != Kind::kValue || !integer_value(v.index, version) ||
      version != kDebugMetadataVersion)
    return;
  const Unit* unit = nullptr;
  for (uint32_t id : units_named_) {
    Entry e = entry(c, id);
    if (e.kind != Kind::kUnit) return decline("!llvm.dbg.cu names what is no compile unit");
    if (units_[e.index].emission != 0) {
      unit = &units_[e.index];
      break;
    }
  }
  if (!unit) return;
  const Unit u = *unit;  // the strings below may read records into units_
  if (u.emission > 3) return decline("compile unit of emission kind " + std::to_string(u.emission));
  if (flag(c, "Dwarf Version", v) && !(v.kind == Kind::kValue && integer_value(v.index, dwarf)))
    return decline("a \"Dwarf Version\" flag that is no integer");
  BcDebug& d = m_.debug;
  d.emission = uint8_t(u.emission);
  full_ = u.emission == 1;  // FullDebug
  d.language = u.language & kLangVersioned ? 0 : uint16_t(u.language);
  d.producer = string(c, u.producer);
  if (u.file) {
    Entry f = entry(c, u.file - 1);
    if (f.kind != Kind::kFile) return decline("a compile unit's file that is no DIFile");
    const File file = files_[f.index];
    d.name = string(c, file.name);
    d.directory = string(c, file.directory);
  }
  d.dwarf_version = uint32_t(dwarf) ? uint32_t(dwarf) : 4;
}

// GLOBAL_VAR [distinct | version << 1, scope, name, linkage name, file, line, type,
// local, definition, static member declaration, template params, (align,
// (annotations))]: version 2 (LLVM 6 on; before, LLVM's reader moves an expression out
// of the record, which this one does not). Ids are + 1.
DebugMetadata::Entry DebugMetadata::global_variable_record(BitstreamCursor& c) {
  if (ops_.size() < 11 || ops_.size() > 13) c.fail("invalid DIGlobalVariable record");
  if (ops_[0] >> 1 != 2) {
    decline("a global variable record before LLVM 6");
    return {Kind::kOther, 0};
  }
  for (size_t i : {1, 2, 3, 4, 6, 9})
    if (ops_[i] >= kMaxIds) c.fail("DIGlobalVariable operand out of range");
  // LLVM's reader refuses an alignment past 32 bits.
  if (ops_.size() > 11 && ops_[11] > 0xFFFFFFFFu) c.fail("DIGlobalVariable alignment value is too large");
  global_vars_.push_back({uint32_t(ops_[1]), uint32_t(ops_[2]), uint32_t(ops_[3]), uint32_t(ops_[4]), uint32_t(ops_[5]),
                          uint32_t(ops_[6]), ops_.size() > 11 ? uint32_t(ops_[11]) : 0, uint32_t(ops_[9]), ops_[7] != 0,
                          ops_[8] != 0});
  return {Kind::kGlobalVar, uint32_t(global_vars_.size() - 1)};
}

// GLOBAL_VAR_EXPR [distinct, variable, expression]: ids + 1.
DebugMetadata::Entry DebugMetadata::global_expression_record(BitstreamCursor& c) {
  if (ops_.size() != 3) c.fail("invalid DIGlobalVariableExpression record");
  if (ops_[1] >= kMaxIds || ops_[2] >= kMaxIds) c.fail("DIGlobalVariableExpression operand out of range");
  global_var_exprs_.push_back({uint32_t(ops_[1]), uint32_t(ops_[2])});
  return {Kind::kGlobalVarExpr, uint32_t(global_var_exprs_.size() - 1)};
}

// GLOBAL_DECL_ATTACHMENT [value id, (kind, node id)*]: a global object's attachments
// (LLVM writes them after the named nodes). The !dbg ones are kept for read_globals.
void DebugMetadata::global_attachment(BitstreamCursor& c) {
  if (ops_.size() % 2 == 0) c.fail("invalid global metadata attachment record");
  for (size_t i = 1; i < ops_.size(); i += 2) {
    if (ops_[i] != dbg_kind_) continue;
    if (ops_[0] >= kMaxIds || ops_[i + 1] >= kMaxIds) c.fail("global metadata attachment operand out of range");
    global_attachments_.push_back({uint32_t(ops_[0]), uint32_t(ops_[i + 1])});
  }
}

// The global variables' !dbg attachments flat_debug.h keeps (FlatDebugGlobal), as
// BcDebug::globals in module order, each global's in attachment order.
void DebugMetadata::read_globals(BitstreamCursor& c) {
  std::vector<BcDebugGlobal> kept;
  for (auto [value, node] : global_attachments_) {
    // LLVM's reader refuses a value it does not know, and passes over one that is no
    // global object.
    if (value >= m_.module_value_count) c.fail("global metadata attachment of an unknown value");
    const ValueRef& r = m_.values[value];
    if (r.kind != ValueKind::kGlobal || r.index >= m_.globals.size()) continue;
    const Global& g = m_.globals[r.index];
    if (g.kind != GlobalKind::kVariable) continue;
    // The verifier checks every global variable's attachments, kept or not.
    const bool eligible = !g.declaration && !g.name.empty();
    BcDebugGlobal out;
    out.global = r.index;
    if (global_variable(c, node, eligible, out)) kept.push_back(std::move(out));
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const BcDebugGlobal& a, const BcDebugGlobal& b) { return a.global < b.global; });
  m_.debug.globals = std::move(kept);
}

// One !dbg attachment (a node id): whether flat_debug.h keeps it, and then its fields.
// What the verifier calls broken declines the module, as LLVM's reader then drops all
// debug information.
bool DebugMetadata::global_variable(BitstreamCursor& c, uint32_t id, bool eligible, BcDebugGlobal& g) {
  const Entry ge = entry(c, id);
  if (ge.kind != Kind::kGlobalVarExpr) {
    decline("a global's !dbg that is no DIGlobalVariableExpression");
    return false;
  }
  const GlobalVarExpr pair = global_var_exprs_[ge.index];
  if (!pair.variable) {
    decline("a DIGlobalVariableExpression without a variable");
    return false;
  }
  const Entry var = entry(c, pair.variable - 1);
  const Entry expr = pair.expression ? entry(c, pair.expression - 1) : Entry{Kind::kOther, 0};
  if (var.kind != Kind::kGlobalVar || (pair.expression && expr.kind != Kind::kExpression)) {
    decline("a DIGlobalVariableExpression of no variable or expression");
    return false;
  }
  const Expression e = pair.expression ? expressions_[expr.index] : Expression{0, 0, kExprOther};
  if (e.state == kExprBroken) {
    decline("a global variable's expression before LLVM 5, or malformed");
    return false;
  }
  const GlobalVar v = global_vars_[var.index];  // a copy: reading more records may add to it
  if (!valid_global_variable(c, v)) return false;
  if (!eligible || e.state != kExprKept || e.count != 0 || !v.definition || v.member) return false;
  // A static inside a function goes inside its function's DIE (the exporter keeps it
  // when that function is stamp's).
  if (v.scope) {
    const Entry scope = entry(c, v.scope - 1);
    if (scope.kind == Kind::kSubprogram || scope.kind == Kind::kBlock) {
      const uint32_t sp = subprogram_of(c, v.scope);
      if (sp == kNone) return false;
      g.subprogram = sp + 1;
    }
  }
  if (!g.subprogram) g.scope = reader_scope(c, v.scope);
  g.file = reader_file(c, v.file);
  g.type = reader_type(c, v.type, true);
  fill_types(c);
  g.line = v.line;
  g.align_bits = v.align_bits;
  g.local_to_unit = v.local_to_unit;
  g.name = string(c, v.name);
  g.linkage_name = string(c, v.linkage_name);
  return true;
}

// The verifier's rules for a DIGlobalVariable (visitDIVariable, visitDIGlobalVariable):
// a scope that is a DIScope, a file that is a DIFile, a type that is a DIType (present
// on a definition), a static member's declaration that is a DIDerivedType. A broken
// one declines the module.
bool DebugMetadata::valid_global_variable(BitstreamCursor& c, const GlobalVar& v) {
  const char* broken = nullptr;
  if (v.scope) {
    const Entry s = entry(c, v.scope - 1);
    const bool part = s.kind == Kind::kType &&
        (types_[s.index].code == kSubrange || types_[s.index].code == kEnumerator ||
         types_[s.index].code == kTemplateType);
    if (part || s.kind == Kind::kLocation || s.kind == Kind::kExpression || s.kind == Kind::kVariable ||
        s.kind == Kind::kGlobalVar || s.kind == Kind::kGlobalVarExpr || s.kind == Kind::kNode ||
        s.kind == Kind::kValue || s.kind == Kind::kString)
      broken = "a global variable's scope that is no scope";
  }
  if (v.file && entry(c, v.file - 1).kind != Kind::kFile) broken = "a global variable's file that is no DIFile";
  if (v.definition && !v.type) broken = "a global variable definition without a type";
  if (v.member) {
    const Entry m = entry(c, v.member - 1);
    if (m.kind != Kind::kType || types_[m.index].code != kDerivedType)
      broken = "a static member's declaration that is no DIDerivedType";
  }
  if (broken) {
    decline(broken);
    return false;
  }
  if (v.type) reader_type(c, v.type, true), fill_types(c);  // declines a reference to what is no type
  return m_.declined.empty();
}

void DebugMetadata::read_attachments(BitstreamCursor& c, BcFunction& f) {
  uint64_t sp = ~uint64_t(0);
  for (;;) {
    BitstreamEntry e = c.advance();
    if (e.kind == BitstreamEntry::kEndBlock) break;
    if (e.kind == BitstreamEntry::kEndOfStream) c.fail("stream ends inside metadata attachments");
    if (e.kind == BitstreamEntry::kEnterBlock) {
      c.skip_block();
      continue;
    }
    if (c.read_record(e.id, ops_) != kAttachment) continue;
    if (ops_.empty()) c.fail("empty metadata attachment record");
    // [kind, node]* attaches to the function; an odd count, to an instruction.
    if (ops_.size() % 2 == 0)
      for (size_t i = 0; i < ops_.size() && sp == ~uint64_t(0); i += 2)
        if (ops_[i] == dbg_kind_) sp = ops_[i + 1];
  }
  if (sp == ~uint64_t(0)) return;
  Entry e = entry(c, sp);
  if (e.kind != Kind::kSubprogram) return decline("a function's !dbg that is no subprogram");
  f.subprogram = describe(c, subprograms_[e.index]);
  f.subprogram.node = e.index + 1;
}

// A subprogram as BcSubprogram gives it, its scope chain, file and names read. `s` is a
// copy: reading them may add to subprograms_.
BcSubprogram DebugMetadata::describe(BitstreamCursor& c, Subprogram s) {
  BcSubprogram out;
  out.present = true;
  out.local_to_unit = s.local_to_unit;
  out.main_subprogram = s.main_subprogram;
  out.scope = reader_scope(c, s.scope);
  out.file = reader_file(c, s.file);
  out.line = s.line;
  out.scope_line = s.scope_line;
  out.name = name(c, s.name);
  out.linkage_name = name(c, s.linkage_name);
  out.prototyped = s.prototyped;
  if (full_) out.type = return_type(c, s.type);
  return out;
}

// A subprogram's return type: the first of its DISubroutineType's types, as a
// BcDebug::types number (0: none, void), with the types it reaches made. The verifier
// calls a subprogram's type of another kind broken.
uint32_t DebugMetadata::return_type(BitstreamCursor& c, uint32_t routine_plus_one) {
  if (!routine_plus_one) return 0;
  const Entry e = entry(c, routine_plus_one - 1);
  if (e.kind != Kind::kType || types_[e.index].code != kSubroutineType) {
    decline("a subprogram's type that is no subroutine type");
    return 0;
  }
  const uint32_t n = tuple(c, types_[e.index].list, "a subroutine type's types");
  if (n == kNone || node_ops_[n] == 0) return 0;
  const uint32_t type = reader_type(c, node_ops_[n + 1], true);
  fill_types(c);
  return type;
}

// A subprogram's scope field (id + 1) as a BcDebug::scopes number: its namespaces and
// composite types, each with the one it is in, up to the first scope of another kind
// (a file, the compile unit, none), where the chain ends (flat_debug.h).
uint32_t DebugMetadata::reader_scope(BitstreamCursor& c, uint32_t id_plus_one, unsigned depth) {
  if (id_plus_one == 0) return 0;
  Entry e = entry(c, id_plus_one - 1);
  if (e.kind == Kind::kString) {
    // LLVM's reader would look the type up by this identifier; the reader does not.
    decline("a debug scope named by a type identifier (debug information before LLVM 3.9)");
    return 0;
  }
  if (e.kind != Kind::kScope) return 0;
  const uint32_t i = e.index;
  if (scopes_[i].reader_scope == kResolving || depth > kMaxNesting) return nested_too_deep(), 0;
  if (scopes_[i].reader_scope) return scopes_[i].reader_scope;
  const Scope s = scopes_[i];  // reading the others may add to scopes_
  scopes_[i].reader_scope = kResolving;
  const uint32_t parent = reader_scope(c, s.scope, depth + 1);
  // Counted through scopes made before, which depth does not see.
  const uint16_t height = uint16_t(1 + (parent ? scope_heights_[parent - 1] : 0));
  if (height > kMaxNesting) return nested_too_deep(), 0;
  m_.debug.scopes.push_back({parent, s.tag, name(c, s.name)});
  scope_heights_.push_back(height);
  return scopes_[i].reader_scope = uint32_t(m_.debug.scopes.size());
}

void DebugMetadata::nested_too_deep() {
  decline("debug scopes or inlined calls nested deeper than " + std::to_string(kMaxNesting) + " (or in a loop)");
}

// getSubprogram() of a location's scope (id + 1): lexical blocks are followed out to
// their subprogram. Its subprograms_ index, or kNone (declining) where the chain meets
// anything else, which the verifier calls broken.
uint32_t DebugMetadata::subprogram_of(BitstreamCursor& c, uint32_t scope_plus_one) {
  // Lexical blocks nest as deep as the source; a loop of them ends here too.
  for (unsigned depth = 0; scope_plus_one && depth < (1u << 16); ++depth) {
    Entry e = entry(c, scope_plus_one - 1);
    if (e.kind == Kind::kSubprogram) return e.index;
    if (e.kind != Kind::kBlock) break;
    scope_plus_one = blocks_[e.index].scope;
  }
  decline("a debug location's scope that is in no subprogram");
  return kNone;
}

// subprograms_[sp]'s BcDebug::subprograms entry, when reader_subprogram() first meets it.
uint32_t DebugMetadata::make_subprogram(BitstreamCursor& c, uint32_t sp) {
  BcSubprogram out = describe(c, subprograms_[sp]);
  m_.debug.subprograms.push_back(std::move(out));
  return subprograms_[sp].reader_subprogram = uint32_t(m_.debug.subprograms.size());
}

// The file of a location's scope (id + 1, a subprogram or a lexical block) as a
// BcDebug::files number.
uint32_t DebugMetadata::scope_file(BitstreamCursor& c, uint32_t scope_plus_one) {
  Entry scope = entry(c, scope_plus_one - 1);
  if (scope.kind == Kind::kSubprogram) return reader_file(c, subprograms_[scope.index].file);
  if (scope.kind == Kind::kBlock) return reader_file(c, blocks_[scope.index].file);
  decline("a debug location's scope that is no subprogram or lexical block");
  return 0;
}

// An inlinedAt, metadata `e`, as a BcDebug::calls number, made once, with the call it
// is itself inlined in and that one's caller: the parent site the exporter will make.
// reader_call() returns one made before without it.
uint32_t DebugMetadata::make_call(BitstreamCursor& c, Entry e, unsigned depth) {
  if (e.kind != Kind::kLocation) {
    decline("an inlinedAt that is no location");
    return 0;
  }
  const uint32_t i = e.index;
  if (locations_[i].reader_call == kResolving || depth > kMaxNesting) return nested_too_deep(), 0;
  if (locations_[i].reader_call) return locations_[i].reader_call;
  const Location at = locations_[i];  // reading the others may add to locations_
  locations_[i].reader_call = kResolving;
  unsigned length = 0;
  BcInlineCall call{0, 0, scope_file(c, at.scope), at.line, at.column, reader_block(c, at.scope, 1, length)};
  if (at.inlined_at) {
    call.outer = reader_call(c, at.inlined_at, depth + 1);
    call.caller = reader_subprogram(c, subprogram_of(c, at.scope));
  }
  const uint16_t height = uint16_t(1 + (call.outer ? call_heights_[call.outer - 1] : 0));
  if (height > kMaxNesting) return nested_too_deep(), 0;
  m_.debug.calls.push_back(call);
  call_heights_.push_back(height);
  return locations_[i].reader_call = uint32_t(m_.debug.calls.size());
}

// The innermost DILexicalBlock of a scope (id + 1) as a BcDebug::blocks number (0 for
// none), with those it is in: DILexicalBlockFiles are passed over, the chain ends at
// anything else (flat_debug.h). `depth` is where the scope stands in the chain LLVM's
// exporter walks (1 for a location's own); `length` becomes how many blocks and block
// files the chain holds from it. LLVM's exporter cuts a chain at kMaxNesting: one that
// would reach it declines, as does a loop.
uint32_t DebugMetadata::reader_block(BitstreamCursor& c, uint32_t scope_plus_one, unsigned depth, unsigned& length) {
  length = 0;
  uint32_t i = kNone;
  while (scope_plus_one && i == kNone) {
    if (depth + length >= kMaxNesting) return nested_too_deep(), 0;
    Entry e = entry(c, scope_plus_one - 1);
    if (e.kind != Kind::kBlock) return 0;
    ++length;
    if (blocks_[e.index].lexical) i = e.index;
    else scope_plus_one = blocks_[e.index].scope;
  }
  if (i == kNone) return 0;
  if (blocks_[i].reader_block == kResolving) return nested_too_deep(), 0;
  if (!blocks_[i].reader_block) {
    const Block b = blocks_[i];  // reading the others may add to blocks_
    blocks_[i].reader_block = kResolving;
    unsigned above = 0;
    const uint32_t parent = reader_block(c, b.scope, depth + length, above);
    const uint32_t file = reader_file(c, b.file);
    m_.debug.blocks.push_back({parent, file, b.line, b.column});
    block_lengths_.push_back(uint16_t(std::min<unsigned>(1 + above, kMaxNesting + 1)));
    blocks_[i].reader_block = uint32_t(m_.debug.blocks.size());
  }
  const uint32_t block = blocks_[i].reader_block;
  length += block_lengths_[block - 1] - 1u;
  if (depth + length > kMaxNesting) nested_too_deep();
  return block;
}

// DEBUG_LOC's DILocation: line and column as DILocation keeps them, the file of its
// scope, and with an inlinedAt the callee (its scope's subprogram) and the call.
BcDebugLoc DebugMetadata::location(BitstreamCursor& c, uint64_t line, uint64_t column, uint64_t scope_plus_one,
                                   uint64_t inlined_at_plus_one) {
  if (scope_plus_one == 0 || scope_plus_one > kMaxIds) c.fail("debug location without a scope");
  if (inlined_at_plus_one > kMaxIds) c.fail("debug location's inlinedAt out of range");
  if (scope_plus_one != located_scope_) {
    located_file_ = scope_file(c, uint32_t(scope_plus_one));
    located_scope_ = scope_plus_one;
    located_callee_ = 0;
    unsigned length = 0;
    // A subprogram's own locations (most scopes) are in no block: reader_block() would
    // find none at once.
    const bool block = located_file_ && entry(c, scope_plus_one - 1).kind == Kind::kBlock;
    located_block_ = block ? reader_block(c, uint32_t(scope_plus_one), 1, length) : 0;
  }
  if (!located_file_) return {};  // LLVM's exporter keeps no site or block either
  const uint32_t col = uint32_t(column);
  BcDebugLoc loc{located_file_, uint32_t(line), col > kMaxColumn ? 0 : col};
  loc.block = located_block_;
  if (inlined_at_plus_one) {
    if (!located_callee_) located_callee_ = reader_subprogram(c, subprogram_of(c, uint32_t(scope_plus_one)));
    loc.callee = located_callee_;
    loc.call = reader_call(c, uint32_t(inlined_at_plus_one));
  }
  return loc;
}

// The body's ids go; what they decoded into files_, subprograms_ and the others stays, next to
// what the module's own records, read from the index while the body was read, put there.
void DebugMetadata::end_function() {
  located_scope_ = 0;
  located_callee_ = 0;
  located_block_ = 0;
  declares_.clear();
  deferred_.clear();
  read_deferred_ = 0;
  entries_.resize(module_ids_);
  strings_.resize(module_strings_);
}

}  // namespace kiln::bc::detail
