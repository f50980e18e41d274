// The debug information stamp carries for the functions it emits: what a line table
// and a subprogram entry per function need (kiln-flat(5), version 6). Host-side only:
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
  bool operator==(const FlatDebugLocation&) const = default;
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
  bool operator==(const FlatDebugFunction&) const = default;
};

// A call inlined into a function (DW_TAG_inlined_subroutine): the DILocation of an
// inlinedAt. For a location L whose inlinedAt is IA: the site's callee is the
// subprogram of L's scope, its call is IA's line and column in the file of IA's scope,
// and its parent is the site of IA's own inlinedAt (0: the call is in the function's
// own body). Sites equal in every field are one site.
struct FlatDebugInlineSite {
  uint32_t parent = 0;     // 1 + index into inline_sites; 0: none
  uint32_t callee = 0;     // 1 + index into inlined (the callee's subprogram)
  uint32_t call_file = 0;  // 1 + index into files; 0: none
  uint32_t call_line = 0, call_column = 0;
  bool operator==(const FlatDebugInlineSite&) const = default;
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
// An instruction's location interns its file, then (with an inlinedAt) its site:
// site(callee, IA) interns, in order, the parent site (site of IA's scope's
// subprogram and IA's inlinedAt, when IA has one), the callee (its scope chain, its
// file, then the FlatDebugFunction itself into `inlined`, equal records being one),
// the file of IA's scope, and then the site itself.
inline uint32_t intern_debug_file(std::vector<FlatDebugFile>& files, const FlatDebugFile& f) {
  for (size_t i = files.size(); i-- > 0;)  // the last ones are the likeliest
    if (files[i] == f) return static_cast<uint32_t>(i + 1);
  files.push_back(f);
  return static_cast<uint32_t>(files.size());
}

// How deep scope chains and inlined calls may nest: real code stays far below (a few
// dozen), and the DWARF writer recurses once per level. An exporter cuts a longer chain
// at this depth (the scope or site there gets parent 0), so hostile metadata (a chain
// that loops, say) cannot exhaust the stack; check_flat_module refuses a deeper one.
constexpr uint32_t kMaxDebugNesting = 256;

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
