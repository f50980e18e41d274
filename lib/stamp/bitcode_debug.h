// The metadata of a module read without LLVM, as far as its debug information for stamp
// goes (bitcode_ir.h's BcDebug, BcSubprogram, BcDebugLoc): the records of LLVM's
// MetadataLoader.cpp, numbered as it numbers them, and decoded only where an id is
// needed. A module's METADATA_BLOCK usually carries an index of its records
// (METADATA_INDEX_OFFSET, METADATA_INDEX): then its records are skipped and each is read
// where the index says, when a location, a subprogram, a scope, an inlined call or the
// compile unit needs it, most never. Without an index (small modules) and in function bodies, whose own
// metadata blocks have none, the records are read in order, each kept as an id and,
// for the few kinds asked about, its fields.
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
  void end_function();

 private:
  // An id's metadata, by what stamp asks of it.
  enum class Kind : uint8_t {
    kOther,       // anything else: only counted
    kString,      // index: its METADATA_STRINGS record (strings_)
    kFile,        // index: files_
    kBlock,       // DILexicalBlock or DILexicalBlockFile; index: blocks_
    kSubprogram,  // index: subprograms_
    kScope,       // DINamespace or DICompositeType; index: scopes_
    kLocation,    // DILocation; index: locations_
    kUnit,        // index: units_
    kNode,        // MDTuple; index: its first operands in node_ops_
    kValue,       // ValueAsMetadata; index: the value id
    kUnread,      // in the module's index, not read yet; index: positions_
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
  };
  struct Subprogram {
    uint32_t scope, name, linkage_name, file, line, scope_line;
    bool local_to_unit, main_subprogram;
    uint32_t reader_subprogram = 0;  // its BcDebug::subprograms number once an inlined call reached it
  };
  struct Scope {
    uint16_t tag;
    uint32_t name, scope;
    uint32_t reader_scope = 0;  // its BcDebug::scopes number once a subprogram reached it
  };
  struct Location {
    uint32_t line, column, scope, inlined_at;  // scope and inlined_at: ids + 1
    uint32_t reader_call = 0;                  // its BcDebug::calls number once an inlined location reached it
  };
  struct Unit {
    uint64_t language, emission;
    uint32_t file, producer;
  };
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
  Entry node();

  Entry entry(BitstreamCursor& c, uint64_t id);
  std::string string(BitstreamCursor& c, uint32_t id_plus_one);
  uint32_t next_end(BitstreamCursor& c, Strings& s);
  uint32_t reader_file(BitstreamCursor& c, uint32_t id_plus_one);
  uint32_t reader_scope(BitstreamCursor& c, uint32_t id_plus_one, unsigned depth = 1);
  void nested_too_deep();
  BcSubprogram describe(BitstreamCursor& c, Subprogram s);
  uint32_t subprogram_of(BitstreamCursor& c, uint32_t scope_plus_one);
  uint32_t reader_subprogram(BitstreamCursor& c, uint32_t subprogram);
  uint32_t scope_file(BitstreamCursor& c, uint32_t scope_plus_one);
  uint32_t reader_call(BitstreamCursor& c, uint32_t id_plus_one, unsigned depth = 1);
  bool flag(BitstreamCursor& c, std::string_view key, Entry& value);
  void read_header(BitstreamCursor& c);
  bool integer_value(uint32_t value_id, uint64_t& value) const;
  void decline(const std::string& why);

  BcModule& m_;
  std::vector<uint64_t> ops_;
  std::vector<Entry> entries_;  // by metadata id
  std::vector<Strings> strings_;
  std::vector<File> files_;
  std::vector<Block> blocks_;
  std::vector<Subprogram> subprograms_;
  std::vector<Scope> scopes_;
  std::vector<Location> locations_;
  // Per BcDebug::scopes and BcDebug::calls entry: how many it chains (itself and those
  // it is in), which may not pass kMaxNesting.
  std::vector<uint16_t> scope_heights_, call_heights_;
  std::vector<Unit> units_;
  std::vector<uint32_t> node_ops_;            // per node: how many operands are kept (3 at most), then those (id + 1)
  std::vector<uint64_t> positions_;           // kUnread's: the bit where its record starts
  BitstreamCursor::BlockMark indexed_block_;  // the module block, to read those records in
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
  uint32_t located_file_ = 0, located_callee_ = 0;
  size_t module_ids_ = 0, module_strings_ = 0;  // the module's own, which outlive a body's
};

}  // namespace kiln::bc::detail
