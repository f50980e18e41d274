// ar archives (rlibs, static libraries) read into memory and written back, so that the
// rustc wrapper can replace an rlib's members by stamp's objects in process instead of
// running rustc a second time (-Zlink-only) to archive them. No LLVM: the plugin
// route's wrapper rewrites an rlib on every incremental rebuild, and LLVM's writer
// (which parses every member through its Object library to index it) was 10 of the 16
// ms that rewrite took for regex's 8 MB rlib, the part of an incremental rebuild that
// kiln adds to rustc's own. The output is byte for byte what LLVM's writer makes in its
// deterministic GNU form (a unit test holds the two side by side on real rlibs).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// One member: its name and a view of its bytes (in the archive read, or wherever the
// caller keeps the bytes that replace them; they must outlive the member). `listed`:
// the names the read archive's own symbol index gave the member (views into that
// archive), which the writer keeps for a member only LLVM can index (bitcode, as a
// static library built with -flto bundles into an rlib); it never reads them for an
// ELF member, so a caller that replaces a member's bytes by an object need not clear them.
struct ArchiveMember {
  std::string name;
  std::string_view bytes;
  std::vector<std::string_view> listed = {};
};

// The members of the GNU or System V archive `bytes` (read from `path`, named in
// errors), in order, without its symbol index and long-name table; views into `bytes`,
// each member with the names the index lists for it. Throws KilnError(kExitBadInput)
// naming the file and the reason when it is not an ar archive or is damaged (its index
// included), and for the forms rustc and cc do not write here (thin, BSD).
std::vector<ArchiveMember> read_archive(const std::string& path, std::string_view bytes);

// The names a linker finds `object` by in an archive's symbol index, as `ar s` and
// LLVM's writer list them: the defined, non-local symbols of a 64-bit little-endian
// ELF object, in its symbol table's order, less file and section symbols. None for a
// member that is not ELF (metadata, text); `label` names the member when an ELF member
// is damaged (KilnError kExitBadInput) or is bitcode, which only LLVM can index
// (kExitInternal).
std::vector<std::string_view> archive_symbols(std::string_view object, const std::string& label);

// A GNU-format archive of `members` in order, with a symbol index of their
// archive_symbols (which linkers need; a bitcode member's are its `listed` names, in
// their order, as LLVM's writer lists a bitcode member's own symbol table) and no
// timestamps or owners, so equal members make equal archives. `path` names the archive
// in errors.
std::string write_archive(const std::string& path, const std::vector<ArchiveMember>& members);

// The same archive as the pieces of its bytes in order: views of `text` (the headers,
// the index, the padding) and of the members' bytes, which must outlive it. Written
// with write_file_atomic's pieces form, each member is copied once, into the file:
// joining 12 MB first cost as much as LLVM's whole writer (page faults of a new buffer).
struct ArchiveBytes {
  std::string text;
  std::vector<std::string_view> pieces;
  std::string joined() const;
};
ArchiveBytes archive_bytes(const std::string& path, const std::vector<ArchiveMember>& members);

}  // namespace kiln
