// The debug information stamp carries for the functions it emits: what a line table
// and a subprogram entry per function need (kiln-flat(5), version 6 on). Host-side only:
// the stages never read it; the DWARF writer (stamp_dwarf.h) reads it together with
// the stages' instruction offsets. Both exporters, LLVM's (lib/flat_export.cpp) and
// the direct reader's (direct_export.cpp), fill it by the same rules, written here,
// so that their flat files stay byte-identical.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// A source file, as its DIFile names it.
struct FlatDebugFile {
  std::string directory, name;
  bool operator==(const FlatDebugFile&) const = default;
};

// Where a flat instruction comes from: the LLVM instruction's DILocation itself (a
// line table gives the innermost frame), and the inlined call it sits in. `file` is
// 1 + an index into FlatDebugInfo::files, the file of the location's scope
// (DISubprogram, DILexicalBlock or DILexicalBlockFile); 0 means no location (the
// instruction has no !dbg, was made by kiln, or its scope names no file), and then
// the other fields are 0 too. `inline_site` is 1 + an index into inline_sites for a
// location with an inlinedAt, else 0.
struct FlatDebugLocation {
  uint32_t file = 0, line = 0, column = 0, inline_site = 0;
  uint32_t block = 0;  // 1 + index into FlatDebugInfo::blocks: the innermost lexical block; 0: none
  bool operator==(const FlatDebugLocation&) const = default;
};

// A DILexicalBlock a location or a variable is in. LLVM's lexical scopes pass over
// DILexicalBlockFile (a change of file, not of scope): a scope's block is the nearest
// DILexicalBlock on its chain of scopes, and that block's parent the next one out; the
// chain ends at the subprogram (parent 0). One entry per DILexicalBlock node, even where
// two have equal fields (macro expansions repeat positions: merged, their variables
// would share a block); a block's code is found per function and inline site, from
// the locations that name it.
struct FlatDebugBlock {
  uint32_t parent = 0;  // 1 + index into blocks; 0: the subprogram's (or inlined callee's) body
  uint32_t file = 0;    // 1 + index into files; 0: none
  uint32_t line = 0, column = 0;
  bool operator==(const FlatDebugBlock&) const = default;
};

// A scope a subprogram is declared in, which debuggers qualify its name with
// (regex::pikevm::Fsm<I>::add): a DINamespace (tag DW_TAG_namespace) or a
// DICompositeType (its own tag: structure, union, enumeration, class).
struct FlatDebugScope {
  uint32_t parent = 0;  // 1 + index into FlatDebugInfo::scopes; 0: the compile unit
  uint16_t tag = 0;
  std::string name;
  bool operator==(const FlatDebugScope&) const = default;
};
constexpr uint16_t kDwarfTagNamespace = 0x39;

// A stamp function's DISubprogram (the function's own !dbg attachment).
struct FlatDebugFunction {
  bool has_subprogram = false;  // false: no !dbg on the function; nothing else is set
  bool local_to_unit = false;   // DISPFlagLocalToUnit: no DW_AT_external
  bool main_subprogram = false;  // DISPFlagMainSubprogram: DW_AT_main_subprogram (Rust's fn main;
                                 // debuggers stop a backtrace there)
  uint32_t scope = 0;           // 1 + index into scopes; 0: the compile unit (or a scope of another kind)
  uint32_t file = 0;            // 1 + index into files; 0: none
  uint32_t line = 0, scope_line = 0;
  std::string name, linkage_name;  // linkage_name may be empty
  // Version 12: what `ptype f` and `finish` read. DIFlagPrototyped (a C prototype:
  // DW_AT_prototyped where the unit's language is C-like, as LLVM writes it), and the
  // return type, its DISubroutineType's types[0] (1 + index into types; 0: void, no
  // type, or emission other than full).
  bool prototyped = false;
  uint32_t type = 0;
  bool operator==(const FlatDebugFunction&) const = default;
};

// A call inlined into a function (DW_TAG_inlined_subroutine): the DILocation of an
// inlinedAt. For a location L whose inlinedAt is IA: the site's callee is the
// subprogram of L's scope, its call is IA's line and column in the file of IA's scope,
// and its parent is the site of IA's own inlinedAt (0: the call is in the function's
// own body). One site per pair of callee and inlinedAt nodes (version 9; before, sites
// equal in every field were one): calls a macro expands twice differ only in their
// scopes' discriminators, and are two calls with their own variables.
struct FlatDebugInlineSite {
  uint32_t parent = 0;     // 1 + index into inline_sites; 0: none
  uint32_t callee = 0;     // 1 + index into inlined (the callee's subprogram)
  uint32_t call_file = 0;  // 1 + index into files; 0: none
  uint32_t call_line = 0, call_column = 0;
  uint32_t block = 0;  // 1 + index into blocks: the block of IA's scope, where the call is; 0: none
  bool operator==(const FlatDebugInlineSite&) const = default;
};

// A type, or a part of one, that a variable's type reaches: one DI metadata node (or one
// element of a node's list), written as one DIE. Which fields a node fills depends on
// its kind:
//   DIBasicType       tag, name, size_bits, align_bits, encoding, flags
//   DIDerivedType     tag (pointer, reference, typedef, member, inheritance, const,
//                     volatile, ...), name, file, line, size_bits, align_bits,
//                     offset_bits, flags, type (its baseType); a member of a variant
//                     part: value, the discriminant (its extraData, when a ConstantInt);
//                     a pointer to member: containing_type (its extraData, the class)
//   DICompositeType   tag (structure, union, enumeration, array, variant part), name,
//                     file, line, size_bits, align_bits, flags, type (baseType: an
//                     enumeration's underlying type, an array's element type),
//                     discriminator (a variant part's), elements (its elements, then its
//                     templateParams)
//   DISubroutineType  tag 0x15, flags (artificial only), type (types[0], the return
//                     type), elements (types[1..]; a null one, or one of a kind left
//                     out below, is 0: unspecified parameters)
//   DISubrange        tag 0x21, value (its count, when a constant), flags
//   DIEnumerator      tag 0x28, name, value, flags (kDebugTypeUnsigned)
//   DITemplateTypeParameter tag 0x2f, name, type
// A node of another kind (a DIStringType, a DIFixedPointType, a
// DITemplateValueParameter, a DISubprogram among a type's elements, ...) is not
// interned, nor is a static member (DIFlagStaticMember): a reference to one is 0, as
// for none, and a composite type's elements and template parameters leave it out. Only a DICompositeType
// other than a variant part, and a typedef, have a scope: a DICompositeType scope is
// its parent_type, a chain of namespaces its scope; the others' are not interned (a
// member's DIE is in its owner's). A member's discriminant is read when its scope is a
// variant part, and is the constant's value sign-extended to 64 bits (a wider one's low
// 64 bits), as are a subrange's count and an enumerator's value.
struct FlatDebugType {
  uint16_t tag = 0;
  uint16_t encoding = 0;  // DW_ATE_* of a base type
  uint32_t flags = 0;     // kDebugType* below
  uint32_t scope = 0;     // 1 + index into scopes: the namespace chain it is declared in
  uint32_t parent_type = 0;  // 1 + index into types: the composite type it is declared in
  uint32_t file = 0, line = 0;
  uint32_t type = 0;           // 1 + index into types; 0: none (void)
  uint32_t discriminator = 0;  // 1 + index into types: a variant part's discriminator member
  // 1 + index into types: a pointer to member's class (version 12; DW_AT_containing_type,
  // without which gdb refuses the unit); 0: none
  uint32_t containing_type = 0;
  uint32_t align_bits = 0;
  uint64_t size_bits = 0, offset_bits = 0;
  int64_t value = 0;  // see above; meaningful with kDebugTypeHasValue
  std::string name;
  std::vector<uint32_t> elements;  // 1 + indices into types (0: unspecified parameters)
  bool operator==(const FlatDebugType&) const = default;
};
constexpr uint32_t kDebugTypeHasValue = 1;     // value is set (a discriminant, a count, an enumerator's)
constexpr uint32_t kDebugTypeArtificial = 2;   // DIFlagArtificial
constexpr uint32_t kDebugTypeDeclaration = 4;  // DIFlagFwdDecl: a declaration, no members
constexpr uint32_t kDebugTypeUnsigned = 8;     // DIEnumerator's isUnsigned
constexpr uint32_t kDebugTypeBitField = 16;    // DIFlagBitField: size_bits and offset_bits in bits
constexpr uint32_t kDebugTypeFlagMask = 31;

// A variable a #dbg_declare record gives a place in the frame: a DILocalVariable (a
// parameter when arg is not 0) at an alloca stamp gives a fixed frame slot, or at the
// memory an argument points to. Listed in flat function order, and in a function in
// the order of its records; a second record for the same variable and inline site adds
// nothing (its location's site is interned all the same). A record whose address is neither an alloca of the same function nor an
// argument, or whose expression has operations other than those below, adds nothing;
// nor does a variable of a function without a subprogram.
struct FlatDebugVariable {
  uint32_t function = 0;     // the flat function (0-based)
  uint32_t inline_site = 0;  // 1 + index into inline_sites: the record's location's site; 0: none
  uint32_t block = 0;        // 1 + index into blocks: the variable's scope's block; 0: none
  uint32_t arg = 0;          // DILocalVariable's arg: 0 for a local
  uint32_t file = 0, line = 0;
  uint32_t type = 0;   // 1 + index into types; 0: none
  uint32_t flags = 0;  // kDebugTypeArtificial
  uint32_t storage = 0;  // the alloca's flat instruction index, or the argument's number (0-based)
  uint8_t storage_kind = 0;  // kDebugStorage* below
  std::string name;
  // The DIExpression's operations after the address: DW_OP_deref (0x06) and
  // DW_OP_plus_uconst (0x23) with its operand, as LLVM lists them.
  std::vector<uint64_t> expression;
  bool operator==(const FlatDebugVariable&) const = default;
};
constexpr uint64_t kDwarfOpDeref = 0x06, kDwarfOpPlusUconst = 0x23;
constexpr uint8_t kDebugStorageAlloca = 0;    // the alloca's memory is the variable
constexpr uint8_t kDebugStorageArgument = 1;  // the argument is the variable's address

// A global variable stamp may write the memory of (version 13), with its
// DIGlobalVariable: a global variable definition (thread-local ones too), with a !dbg
// attachment that is a DIGlobalVariableExpression whose expression is empty (the
// variable is the global's memory) and whose variable is a definition of no static
// member. One per such attachment, in attachment order. A static declared inside a
// function (its scope a DISubprogram or a lexical block of one) is kept when that
// subprogram is a stamp function's, and written inside that function's DIE (where a
// block's static goes too); else left out. The DWARF writer writes it
// (DW_TAG_variable at DW_OP_addr of the symbol) only where the object defines the
// symbol: where stamp writes the module's data, not where LLVM's half does.
struct FlatDebugGlobal {
  uint32_t symbol = 0;  // index into FlatModuleData::symbols: the global itself
  uint32_t scope = 0;   // 1 + index into scopes; 0: the compile unit (or a scope of another kind)
  uint32_t function = 0;  // a static inside a function: 1 + the flat function (scope is then 0)
  uint32_t file = 0, line = 0;
  uint32_t type = 0;        // 1 + index into types; 0: none
  uint32_t align_bits = 0;  // DIGlobalVariable's alignInBits
  bool local_to_unit = false;
  std::string name, linkage_name;  // linkage_name may be empty
  bool operator==(const FlatDebugGlobal&) const = default;
};

// What DICompileUnit::DebugEmissionKind says: full, or line tables only (LLVM's
// DebugDirectivesOnly is read as line tables only).
enum class DebugEmission : uint8_t { none = 0, full = 1, line_tables = 2 };

struct FlatDebugInfo {
  // The DWARF version the module asks for (its "Dwarf Version" module flag; 4 when the
  // flag is absent or 0). 0: the module carries no debug information for stamp to
  // write: no compile unit in !llvm.dbg.cu other than NoDebug ones. The fields below
  // are the first unit's that is not NoDebug (what Module::debug_compile_units gives).
  uint32_t dwarf_version = 0;
  DebugEmission emission = DebugEmission::none;
  uint32_t language = 0;                     // DW_LANG_* of that compile unit
  std::string producer, name, directory;     // its producer and its DIFile
  std::vector<FlatDebugFile> files;          // every file named below, in first-use order
  std::vector<FlatDebugScope> scopes;        // every scope named below, parents first
  std::vector<FlatDebugFunction> functions;  // one per flat function (empty when dwarf_version is 0)
  std::vector<FlatDebugFunction> inlined;    // the subprograms of inlined calls (has_subprogram set)
  std::vector<FlatDebugInlineSite> inline_sites;
  std::vector<FlatDebugLocation> locations;  // one per flat instruction (empty when dwarf_version is 0)
  std::vector<FlatDebugBlock> blocks;        // every block named by a location or variable
  // Full emission only (line tables only leave both empty):
  std::vector<FlatDebugVariable> variables;
  std::vector<FlatDebugType> types;  // every type the variables and return types reach, in the order below
  std::vector<FlatDebugGlobal> globals;  // version 13: the module's global variables, in module order

  bool present() const { return dwarf_version != 0; }
  bool operator==(const FlatDebugInfo&) const = default;
};

// The order of `files`, which both exporters follow: walking the stamp functions in
// flat order, each function's subprogram file first, then the file of each of its flat
// instructions' locations in order; a (directory, name) pair already listed is not
// listed again. Functions that fall back add nothing. Returns the 1-based index.
// `scopes` in the same walk: each subprogram's scope chain is interned from the
// outermost scope in (a scope's parent before it), before its file; a scope chain
// ends at the first scope that is neither a DINamespace nor a DICompositeType.
// At full emission a subprogram then interns its return type, after its file, and the
// type queue (below) is run to its end.
// An instruction's location interns its file, then (with an inlinedAt) its site:
// site(callee, IA) interns, in order, the parent site (site of IA's scope's
// subprogram and IA's inlinedAt, when IA has one), the callee (its scope chain, its
// file, then the FlatDebugFunction itself into `inlined`, equal records being one),
// the file of IA's scope, the block of IA's scope (version 9), and then the site itself.
// Blocks: an instruction's location interns its block chain (outermost first) after
// its site; a block interns its parent, then its file, then itself. A function's variables come after all of its
// instructions' locations; a variable's record interns, in order: its location's site (as an instruction's location
// would), its scope's block chain, its file, then its type.
//
// Types are interned by node (one DI node is one entry, whatever its fields), as a
// queue: a reference to a node not seen yet appends it, unfilled; then the entries are
// filled in index order, each interning, in this order: its scope (a DICompositeType
// scope as parent_type, else the scope chain as a subprogram's), its file, its type
// (baseType, or types[0]), a pointer to member's class (version 12), its
// discriminator, then its elements (then template
// parameters, then for a subroutine type types[1..]). A variable interns its own type
// and then the queue is run to its end, before the next variable. The queue, not
// recursion: type graphs are deep and cyclic (a list node points at its own type).
//
// Globals (full emission only), after every function: each global variable definition
// in module order, each of its kept attachments (FlatDebugGlobal) in order, interns
// its symbol (the index a function's reference gave it, else the next one), then its
// scope chain (as a subprogram's; none for a static inside a function), its file,
// then its type, and runs the type queue to its end.
inline uint32_t intern_debug_file(std::vector<FlatDebugFile>& files, const FlatDebugFile& f) {
  for (size_t i = files.size(); i-- > 0;)  // the last ones are the likeliest
    if (files[i] == f) return static_cast<uint32_t>(i + 1);
  files.push_back(f);
  return static_cast<uint32_t>(files.size());
}

// How deep scope chains and inlined calls may nest: real code stays far below (a few
// dozen). An exporter cuts a longer chain at this depth (the scope or site there gets
// parent 0), so that hostile metadata (a chain that loops, say) ends; check_flat_module
// refuses a deeper one. The DWARF writer recurses once per level of one chain (scopes,
// a site's blocks, types), never deeper than this; blocks inside inlined calls inside
// blocks, whose depths multiply, it walks with a stack of its own.
constexpr uint32_t kMaxDebugNesting = 256;

// The kinds of node that are DIEs inside their owner's only (members, enumerators,
// subranges, template parameters, variant parts): never written on their own, nor
// named by a DW_AT_type.
inline bool debug_type_is_element(uint16_t tag) {
  return tag == 0x0d || tag == 0x1c || tag == 0x21 || tag == 0x28 || tag == 0x2f || tag == 0x30 || tag == 0x33;
}

// The DIEs a type's DIE contains, by 0-based index: a variant part's discriminator
// member, its elements (a subroutine type's are its parameters' types, which it does
// not contain), then the types declared inside it (parent_type). Entries are
// in range (checked before this is called).
// As one array, a type's children at [first[t], first[t + 1]): a vector per type was
// most of the DWARF writer's allocations.
struct DebugTypeChildren {
  std::vector<uint32_t> first, items;
  size_t count(size_t t) const { return first[t + 1] - first[t]; }
  const uint32_t* begin(size_t t) const { return items.data() + first[t]; }
  const uint32_t* end(size_t t) const { return items.data() + first[t + 1]; }
};
inline DebugTypeChildren debug_type_children(const std::vector<FlatDebugType>& types) {
  constexpr uint16_t kSubroutineType = 0x15;
  DebugTypeChildren c;
  c.first.assign(types.size() + 1, 0);
  // Count, then place: the discriminator, the elements, then the nested types.
  for (size_t t = 0; t < types.size(); ++t) {
    c.first[t + 1] += types[t].discriminator != 0;
    if (types[t].tag != kSubroutineType)
      for (uint32_t e : types[t].elements) c.first[t + 1] += e != 0;
    if (types[t].parent_type) ++c.first[types[t].parent_type];
  }
  for (size_t t = 0; t < types.size(); ++t) c.first[t + 1] += c.first[t];
  c.items.resize(c.first[types.size()]);
  std::vector<uint32_t> next(c.first.begin(), c.first.end() - 1);
  for (size_t t = 0; t < types.size(); ++t) {
    if (types[t].discriminator) c.items[next[t]++] = types[t].discriminator - 1;
    if (types[t].tag != kSubroutineType)
      for (uint32_t e : types[t].elements)
        if (e) c.items[next[t]++] = e - 1;
  }
  for (size_t t = 0; t < types.size(); ++t)
    if (types[t].parent_type) c.items[next[types[t].parent_type - 1]++] = static_cast<uint32_t>(t);
  return c;
}

template <class T>
uint32_t intern_debug_record(std::vector<T>& records, const T& r) {
  for (size_t i = records.size(); i-- > 0;)
    if (records[i] == r) return static_cast<uint32_t>(i + 1);
  records.push_back(r);
  return static_cast<uint32_t>(records.size());
}

inline uint32_t intern_debug_scope(std::vector<FlatDebugScope>& scopes, const FlatDebugScope& s) {
  for (size_t i = scopes.size(); i-- > 0;)
    if (scopes[i] == s) return static_cast<uint32_t>(i + 1);
  scopes.push_back(s);
  return static_cast<uint32_t>(scopes.size());
}

}  // namespace kiln
