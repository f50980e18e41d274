// ar archives (rlibs, static libraries) read into memory and written back, so that the
// rustc wrapper can replace an rlib's bitcode members by objects in process instead of
// running rustc a second time (-Zlink-only) to archive them.
#pragma once
#include <string>
#include <vector>

namespace kiln {

struct ArchiveMember {
  std::string name;
  std::string bytes;
};

// The members of the archive `bytes` (read from `path`, named in errors), in order.
// Throws KilnError(kExitBadInput) naming the file and the reason when it is not an ar
// archive or is damaged.
std::vector<ArchiveMember> read_archive(const std::string& path, const std::string& bytes);

// A GNU-format archive of `members` in order, with a fresh symbol index (the defined
// global symbols of each object member, as `ar s` writes it, which linkers need), and
// no timestamps or owners, so equal members make equal archives.
std::string write_archive(const std::string& path, const std::vector<ArchiveMember>& members);

}  // namespace kiln
