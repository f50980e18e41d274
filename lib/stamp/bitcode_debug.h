// The metadata of a module read without LLVM, as far as its debug information for stamp
// goes (bitcode_ir.h's BcDebug, BcSubprogram, BcDebugLoc): the records of LLVM's
// MetadataLoader.cpp, numbered as it numbers them, and decoded only where an id is
// needed. A module's METADATA_BLOCK usually carries an index of its records
// (METADATA_INDEX_OFFSET, METADATA_INDEX): then its records are skipped and each is read
// where the index says, when a location, a subprogram, a scope, an inlined call, a
// variable's type or the compile unit needs it, most never. Without an index (small
// modules) and in function bodies, whose own metadata blocks have none, the records are
// read in order, each kept as an id and, for the kinds asked about, its fields; a body's
// variables and types are asked about at full emission only.
//
// What LLVM's reader would refuse throws KilnError(kExitBadInput) through the cursor;
// debug information LLVM reads but the verifier would call broken (which makes LLVM's
// reader drop all of it) declines the module ("reader: ...").
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bitcode_ir.h"
#include "bitstream.h"

namespace kiln::bc::detail {

// METADATA_* record codes (LLVMBitCodes.h) the reader looks at.
namespace md {
enum Code : uint32_t {
  kValue = 2,
  kNode = 3,
  kName = 4,
  kDistinctNode = 5,
  kKind = 6,
  kLocation = 7,
  kNamedNode = 10,
  kAttachment = 11,
  kSubrange = 13,
  kEnumerator = 14,
  kBasicType = 15,
  kFile = 16,
  kDerivedType = 17,
  kCompositeType = 18,
  kSubroutineType = 19,
  kCompileUnit = 20,
  kSubprogram = 21,
  kLexicalBlock = 22,
  kLexicalBlockFile = 23,
  kNamespace = 24,
  kTemplateType = 25,
  kGlobalVar = 27,
  kLocalVar = 28,
  kExpression = 29,
  kStrings = 35,
  kGlobalDeclAttachment = 36,
  kGlobalVarExpr = 37,
  kIndexOffset = 38,
  kIndex = 39,
  kStringType = 41,
  kSubrangeType = 48,
  kFixedPointType = 49,
};
}  // namespace md

class DebugMetadata {
 public:
  explicit DebugMetadata(BcModule& m) : m_(m) {}

  // --- The module, before its first body: each block just entered (advance() returned
  // kEnterBlock for it) is read to its END_BLOCK.
  void read_kinds(BitstreamCursor& c);  // METADATA_KIND_BLOCK: which attachment kind is "dbg"
  void read_module_block(BitstreamCursor& c);
  // With the module's metadata and constants read: fills BcModule::debug.
  void finish_module(BitstreamCursor& c);
  bool present() const { return m_.debug.dwarf_version != 0; }

  // --- A body, when present(): its own metadata takes the ids after the module's, and
  // is dropped at its end.
  void read_function_block(BitstreamCursor& c);
  void read_attachments(BitstreamCursor& c, BcFunction& f);  // the METADATA_ATTACHMENT block: f.subprogram
  // A DEBUG_LOC's fields: line, column, its scope's and its inlinedAt's ids + 1.
  BcDebugLoc location(BitstreamCursor& c, uint64_t line, uint64_t column, uint64_t scope_plus_one,
                      uint64_t inlined_at_plus_one);
  // At full emission, variables and the types they reach are wanted (else the records
  // that name them are not read): a DEBUG_RECORD_DECLARE's operands (metadata ids) are
  // kept as the body is read, and made f.debug_vars when it ends (bitcode_debug_types.cpp).
  bool wants_variables() const { return full_; }
  void declare(BitstreamCursor& c, const RecordOps& record);
  void variables(BitstreamCursor& c, BcFunction& f);
  void end_function();

 private:
  // An id's metadata, by what stamp asks of it.
  enum class Kind : uint8_t {
    kOther,          // anything else: only counted
    kString,         // index: its METADATA_STRINGS record (strings_)
    kFile,           // index: files_
    kBlock,          // DILexicalBlock or DILexicalBlockFile; index: blocks_
    kSubprogram,     // index: subprograms_
    kScope,          // DINamespace or DICompositeType; index: scopes_
    kLocation,       // DILocation; index: locations_
    kUnit,           // index: units_
    kNode,           // MDTuple; index: its operand count in node_ops_, its operands after it
    kValue,          // ValueAsMetadata; index: the value id
    kUnread,         // in the module's index, not read yet; index: positions_
    kType,           // a type node flat_debug.h keeps, or a part of one (not a composite); index: types_
    kOtherType,      // a DIType flat_debug.h leaves out (string, subrange or fixed-point type)
    kVariable,       // DILocalVariable; index: variables_
    kExpression,     // DIExpression; index: expressions_
    kGlobalVar,      // DIGlobalVariable; index: global_vars_
    kGlobalVarExpr,  // DIGlobalVariableExpression; index: global_var_exprs_
  };
  struct Entry {
    Kind kind;
    uint32_t index;
  };
  // One METADATA_STRINGS record: `count` strings, their VBR6 lengths then their bytes.
  struct Strings {
    uint32_t first_id, count;
    std::string_view lengths, chars;
    std::vector<uint32_t> ends;  // where each string ends in chars, as far as one was asked for
    uint64_t bit = 0;            // in lengths, where the next one's length starts
  };
  // Fields that are metadata ids are kept as the record has them: id + 1, 0 for none.
  struct File {
    uint32_t name, directory;
    uint32_t reader_file = 0;  // its BcDebug::files number once a location reached it
  };
  struct Block {
    uint32_t scope, file;
    bool lexical;               // a DILexicalBlock; else a DILexicalBlockFile, which has no line
    uint32_t line, column;      // as DILexicalBlock keeps them (a 16-bit column)
    uint32_t reader_block = 0;  // its BcDebug::blocks number once a location or variable reached it
  };
  struct Subprogram {
    uint32_t scope, name, linkage_name, file, line, scope_line;
    bool local_to_unit, main_subprogram;
    bool prototyped;                 // DIFlagPrototyped
    uint32_t type;                   // its DISubroutineType (id + 1)
    uint32_t reader_subprogram = 0;  // its BcDebug::subprograms number once an inlined call reached it
  };
  struct Scope {
    uint16_t tag;
    uint32_t name, scope;
    uint32_t reader_scope = 0;  // its BcDebug::scopes number once a subprogram reached it
    uint32_t type = kNone;      // a DICompositeType's fields as a type: its types_ index
  };
  // A type node's record, kept as read (ids + 1); its fields are looked at when a
  // variable reaches it, and its BcDebug::types entry made then, once per node.
  struct TypeRecord {
    uint32_t code;    // METADATA_*: basic, derived, composite, subroutine, subrange, enumerator,
                      // template type parameter
    uint16_t tag;     // DINode keeps 16 bits
    bool size_is_md;  // size and offset (a subrange: its count) are ids + 1, not constants
    bool upper;       // a subrange: an upper bound is given
    uint32_t name, file, line, scope, base;
    uint32_t extra;                   // derived: extraData; composite: discriminator
    uint32_t list, list2;             // composite: elements and templateParams; subroutine: types
    uint32_t align, encoding, flags;  // flags: DIFlags (an enumerator: kDebugType*)
    uint64_t size, offset;            // or a subrange's count
    int64_t value;                    // an enumerator's
    uint32_t reader_type = 0;         // its BcDebug::types number once a variable reached it
  };
  struct Variable {  // DILocalVariable's fields, ids + 1
    uint32_t scope, name, file, line, type, arg, flags;
  };
  struct GlobalVar {  // DIGlobalVariable's fields, ids + 1
    uint32_t scope, name, linkage_name, file, line, type, align_bits;
    uint32_t member;  // a static member's definition: its declaration
    bool local_to_unit, definition;
  };
  struct GlobalVarExpr {  // DIGlobalVariableExpression: ids + 1
    uint32_t variable, expression;
  };
  // A DIExpression's operations as FlatDebugVariable keeps them (expr_ops_[first..+count]),
  // and whether it has others.
  struct Expression {
    uint32_t first, count;
    uint8_t state;  // kExprKept, kExprOther or kExprBroken
  };
  // Kept: of the operations FlatDebugVariable keeps (or none); other: of others;
  // broken: of an expression version before LLVM 5's, or malformed.
  static constexpr uint8_t kExprKept = 0, kExprOther = 1, kExprBroken = 2;
  struct Declare {  // DEBUG_RECORD_DECLARE: [location, variable, expression, address] (ids)
    uint32_t location, variable, expression, address;
  };
  struct Location {
    uint32_t line, column, scope, inlined_at;  // scope and inlined_at: ids + 1
    uint32_t reader_call = 0;                  // its BcDebug::calls number once an inlined location reached it
  };
  struct Unit {
    uint64_t language, emission;
    uint32_t file, producer;
  };
  // How deep scope chains and inlined calls may nest: real code stays at a few dozen. A
  // deeper chain, or a loop (which LLVM's exporter would follow without end), declines
  // the module rather than have the reader guess where an exporter cuts it.
  static constexpr unsigned kMaxNesting = 256;
  static constexpr uint32_t kResolving = ~0u;  // a reader_* cache while its entry is being made

  bool read_block(BitstreamCursor& c, bool module_level, uint64_t until = ~uint64_t(0));
  void read_deferred(BitstreamCursor& c, uint64_t id);
  void strings(BitstreamCursor& c, std::string_view blob);
  void named_node(BitstreamCursor& c);
  bool kind_record();
  void index(BitstreamCursor& c);
  Entry decode(BitstreamCursor& c, uint32_t code);
  Entry subprogram(BitstreamCursor& c);
  Entry scope(BitstreamCursor& c, uint32_t code);
  Entry location_record(BitstreamCursor& c);
  Entry unit(BitstreamCursor& c);
  Entry node(BitstreamCursor& c);
  Entry type_record(BitstreamCursor& c, uint32_t code);
  Entry type_parts(BitstreamCursor& c, uint32_t code);
  Entry variable_record(BitstreamCursor& c);
  Entry expression_record(BitstreamCursor& c);
  Entry global_variable_record(BitstreamCursor& c);
  Entry global_expression_record(BitstreamCursor& c);
  void global_attachment(BitstreamCursor& c);
  void read_globals(BitstreamCursor& c);
  bool global_variable(BitstreamCursor& c, uint32_t id, bool eligible, BcDebugGlobal& g);
  bool valid_global_variable(BitstreamCursor& c, const GlobalVar& v);
  void composite_type(BitstreamCursor& c);

  // Metadata `id`, read first if it is not yet: inline, as most are read already and
  // the reader asks for ids several times each.
  Entry entry(BitstreamCursor& c, uint64_t id) {
    if (id < entries_.size() && entries_[id].kind != Kind::kUnread) [[likely]]
      return entries_[id];
    return entry_slow(c, id);
  }
  Entry entry_slow(BitstreamCursor& c, uint64_t id);
  std::string_view chars(BitstreamCursor& c, uint32_t id_plus_one);
  std::string string(BitstreamCursor& c, uint32_t id_plus_one) { return std::string(chars(c, id_plus_one)); }
  // For BcDebug's names: a copy in BcDebug::names.
  std::string_view name(BitstreamCursor& c, uint32_t id_plus_one) { return m_.debug.names.add(chars(c, id_plus_one)); }
  uint32_t next_end(BitstreamCursor& c, Strings& s);
  // A file (id + 1) as a BcDebug::files number: most are made already, which is
  // looked at inline; make_file() makes one, or declines.
  uint32_t reader_file(BitstreamCursor& c, uint32_t id_plus_one) {
    if (id_plus_one == 0) return 0;
    const Entry e = entry(c, id_plus_one - 1);
    if (e.kind == Kind::kFile && files_[e.index].reader_file) [[likely]]
      return files_[e.index].reader_file;
    return make_file(c, e);
  }
  uint32_t make_file(BitstreamCursor& c, Entry e);
  uint32_t reader_scope(BitstreamCursor& c, uint32_t id_plus_one, unsigned depth = 1);
  void nested_too_deep();
  BcSubprogram describe(BitstreamCursor& c, Subprogram s);
  uint32_t return_type(BitstreamCursor& c, uint32_t routine_plus_one);
  uint32_t subprogram_of(BitstreamCursor& c, uint32_t scope_plus_one);
  // subprograms_[sp] as a BcDebug::subprograms number (0 for kNone), made once by
  // make_subprogram().
  uint32_t reader_subprogram(BitstreamCursor& c, uint32_t sp) {
    if (sp == kNone) return 0;
    if (subprograms_[sp].reader_subprogram) [[likely]]
      return subprograms_[sp].reader_subprogram;
    return make_subprogram(c, sp);
  }
  uint32_t make_subprogram(BitstreamCursor& c, uint32_t sp);
  uint32_t scope_file(BitstreamCursor& c, uint32_t scope_plus_one);
  // An inlinedAt (id + 1) as a BcDebug::calls number: most are made already, which is
  // looked at inline; make_call() makes one, or declines.
  uint32_t reader_call(BitstreamCursor& c, uint32_t id_plus_one, unsigned depth = 1) {
    const Entry e = entry(c, id_plus_one - 1);
    if (e.kind == Kind::kLocation && locations_[e.index].reader_call && locations_[e.index].reader_call != kResolving &&
        depth <= kMaxNesting) [[likely]]
      return locations_[e.index].reader_call;
    return make_call(c, e, depth);
  }
  uint32_t make_call(BitstreamCursor& c, Entry e, unsigned depth);
  uint32_t reader_block(BitstreamCursor& c, uint32_t scope_plus_one, unsigned depth, unsigned& length);
  // bitcode_debug_types.cpp: a declare record's variable, and the types it reaches.
  bool variable(BitstreamCursor& c, const Declare& d, const BcFunction& f, BcDebugVariable& v);
  bool storage(BitstreamCursor& c, uint32_t address, const BcFunction& f, BcDebugVariable& v);
  // A type node (id + 1) as a BcDebug::types number: one made already is looked at
  // inline; make_type() has the rules.
  uint32_t reader_type(BitstreamCursor& c, uint32_t id_plus_one, bool must_be_type) {
    if (!id_plus_one) return 0;
    const Entry e = entry(c, id_plus_one - 1);
    const uint32_t rec = e.kind == Kind::kType ? e.index : e.kind == Kind::kScope ? scopes_[e.index].type : kNone;
    if (rec != kNone && types_[rec].reader_type && (!must_be_type || is_di_type(types_[rec].code))) [[likely]]
      return types_[rec].reader_type;
    return make_type(c, e, must_be_type);
  }
  uint32_t make_type(BitstreamCursor& c, Entry e, bool must_be_type);
  // The records that make a DIType (the other type records kept are parts of one).
  static bool is_di_type(uint32_t code) {
    return code == md::kBasicType || code == md::kDerivedType || code == md::kCompositeType ||
        code == md::kSubroutineType;
  }
  void fill_types(BitstreamCursor& c);
  void fill_type(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t);
  void fill_scoped(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t);
  void fill_composite(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t);
  void fill_subroutine(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t);
  void fill_subrange(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t);
  void discriminant(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t);
  uint32_t tuple(BitstreamCursor& c, uint32_t id_plus_one, const char* what);
  uint64_t size_value(BitstreamCursor& c, bool is_metadata, uint64_t field);
  bool constant_int(uint32_t value_id, uint64_t& bits, uint32_t& width) const;
  bool flag(BitstreamCursor& c, std::string_view key, Entry& value);
  void read_header(BitstreamCursor& c);
  bool integer_value(uint32_t value_id, uint64_t& value) const;
  void decline(const std::string& why);

  BcModule& m_;
  RecordOps ops_;               // the record just read, filled in place (no push_back per operand)
  std::vector<Entry> entries_;  // by metadata id
  std::vector<Strings> strings_;
  std::vector<File> files_;
  std::vector<Block> blocks_;
  std::vector<Subprogram> subprograms_;
  std::vector<Scope> scopes_;
  std::vector<Location> locations_;
  std::vector<TypeRecord> types_;
  std::vector<Variable> variables_;
  std::vector<Expression> expressions_;
  std::vector<uint64_t> expr_ops_;
  std::vector<GlobalVar> global_vars_;
  std::vector<GlobalVarExpr> global_var_exprs_;
  // GLOBAL_DECL_ATTACHMENT's !dbg attachments, in record order: (value id, metadata id).
  std::vector<std::pair<uint32_t, uint32_t>> global_attachments_;
  std::vector<Declare> declares_;  // the body's, in record order
  // Per BcDebug::blocks entry: how many blocks and block files its chain holds (itself
  // and those it is in), which with the depth it is reached at may not pass kMaxNesting.
  std::vector<uint16_t> block_lengths_;
  // BcDebug::types entries made but not filled yet, with their types_ index: filled as a
  // queue, not by recursion (type graphs are deep and cyclic).
  std::vector<std::pair<uint32_t, uint32_t>> type_queue_;
  bool full_ = false;  // the compile unit asks for full debug information
  // Per BcDebug::scopes and BcDebug::calls entry: how many it chains (itself and those
  // it is in), which may not pass kMaxNesting.
  std::vector<uint16_t> scope_heights_, call_heights_;
  std::vector<Unit> units_;
  std::vector<uint32_t> node_ops_;                   // per node: its operand count, then its operands (id + 1)
  std::vector<uint64_t> positions_;                  // kUnread's: the bit where its record starts
  BitstreamCursor::BlockMark indexed_block_;         // the module block, to read those records in
  std::vector<uint32_t> units_named_, flags_named_;  // !llvm.dbg.cu and !llvm.module.flags (ids)
  uint64_t dbg_kind_ = ~uint64_t(0);
  // The body's own metadata blocks, passed over, and where reading them goes on.
  struct Deferred {
    BitstreamCursor::BlockMark block;
    uint64_t at;
  };
  std::vector<Deferred> deferred_;
  size_t read_deferred_ = 0;  // the first not read to its end
  int module_blocks_ = 0;
  // The scope (id + 1) of the body's last location, its file and (once an inlined
  // location asked) its subprogram's BcDebug::subprograms number: most share one.
  uint64_t located_scope_ = 0;
  uint32_t located_file_ = 0, located_callee_ = 0, located_block_ = 0;
  size_t module_ids_ = 0, module_strings_ = 0;  // the module's own, which outlive a body's
};

}  // namespace kiln::bc::detail
