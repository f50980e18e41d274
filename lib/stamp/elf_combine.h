// An in-process `ld -r` for the stamp back end's split route: the two relocatable
// x86-64 ELF objects of a split module (stamp's part and LLVM's part) become one,
// without starting a linker. Starting ld.lld costs ~100 ms a module, which dominated the
// split route; this does the same job in the time it takes to copy the bytes.
//
// What it does, and what it leaves to ld.lld -r (an "unsupported: REASON" result):
//   - every section of every input stays a section of its own (ELF allows several of
//     one name; the final link merges them as it would merge separate objects), except
//     the null section, the symbol and string tables (one combined set is written),
//     .llvm_addrsig (dropped, see elf_combine.cpp), and .eh_frame: the inputs' .eh_frame
//     sections are put end to end into one, with their relocations, as ld -r does
//     (GNU ld's --gc-sections handles one .eh_frame per object; see plan_sections);
//   - SHT_RELA and SHT_GROUP sections are rewritten for the new section and symbol
//     indexes, as are SHF_LINK_ORDER links; more than 65279 sections use extended
//     numbering (SHN_XINDEX, .symtab_shndx);
//   - symbols: every input's locals first, then one entry per global name: a definition
//     beats undefined references, a strong definition a weak one; two strong
//     definitions, or a COMMON symbol that meets any other definition, are unsupported;
//   - with a tag, the hidden symbols "NAME.kiln.TAG" that the split gave to the module's
//     local symbols (lib/fallback.h expose_local_symbols) and that the result defines
//     become local symbols named NAME again, as the module would have had them natively
//     (and sections named after them, .text.NAME.kiln.TAG, are named .text.NAME);
//   - the symbols named in `temporaries` (those of globals private in the bitcode, which
//     LLVM writes under .L names and mostly not at all) that the result defines get no
//     symbol: their references relocate against their section's symbol plus their
//     offset, as LLVM's own references do (a RIP-relative GOT load, R_X86_64_GOTPCRELX,
//     becomes the `lea` and R_X86_64_PC32 a linker relaxes it to). One that a reference
//     cannot be moved off (in a mergeable section: any reference with an addend, such
//     as a RIP-relative one's -4, as LLVM decides) stays as the local ".LNAME", which
//     linkers drop from mergeable sections.
// The result depends on the input bytes alone (no hash order): deterministic.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct CombineResult {
  std::string object;       // the combined relocatable object; empty when unsupported
  std::string unsupported;  // "unsupported: REASON" when the inputs are not handled
  size_t localized = 0;     // how many NAME.kiln.TAG symbols became local NAME
  size_t dropped = 0;       // how many of `temporaries` got no symbol
  bool ok() const { return unsupported.empty(); }
};

// Combines relocatable x86-64 ELF64 objects into one, as `ld.lld -r` would for the
// final link's purposes. Never throws for bad input (not ELF, truncated, a case it does
// not handle): the result says why instead. `tag` (12 hex digits; empty: none) names
// the suffix ".kiln.TAG" of the symbols to make local again. `temporaries`: names (as
// the inputs define them: NAME.kiln.TAG once renamed, else local NAME) of globals that
// were private in the bitcode.
CombineResult combine_relocatable(const std::vector<std::string_view>& objects, std::string_view tag = {},
                                  const std::vector<std::string>& temporaries = {});

}  // namespace kiln
