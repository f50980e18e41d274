// Through LLVM's Object library: its writer computes the symbol index from each member
// as `llvm-ar` does, for ELF objects and for any bitcode member left.
#include "ar_archive.h"

#include <llvm/Object/Archive.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include "error.h"

namespace kiln {

std::vector<ArchiveMember> read_archive(const std::string& path, const std::string& bytes) {
  auto fail = [&](llvm::Error e) -> KilnError {
    return KilnError(kExitBadInput, path, "not a readable ar archive: " + llvm::toString(std::move(e)));
  };
  auto archive = llvm::object::Archive::create(llvm::MemoryBufferRef(bytes, path));
  if (!archive) throw fail(archive.takeError());
  std::vector<ArchiveMember> members;
  llvm::Error err = llvm::Error::success();
  for (const llvm::object::Archive::Child& child : (*archive)->children(err)) {
    auto name = child.getName();
    if (!name) throw fail(name.takeError());
    auto data = child.getBuffer();
    if (!data) throw fail(data.takeError());
    // LLVM's reader takes a member's size from its header: one past the end of a
    // truncated archive must not be read (AddressSanitizer found it).
    const char* first = bytes.data();
    if (data->data() < first || data->size() > bytes.size() ||
        static_cast<size_t>(data->data() - first) > bytes.size() - data->size())
      throw KilnError(kExitBadInput, path, "truncated ar archive: member " + name->str() + " ends past its end");
    members.push_back({name->str(), data->str()});
  }
  if (err) throw fail(std::move(err));
  return members;
}

std::string write_archive(const std::string& path, const std::vector<ArchiveMember>& members) {
  std::vector<llvm::NewArchiveMember> out;
  out.reserve(members.size());
  for (const ArchiveMember& m : members) {
    llvm::NewArchiveMember n;
    n.Buf = llvm::MemoryBuffer::getMemBuffer(m.bytes, m.name, /*RequiresNullTerminator=*/false);
    n.MemberName = m.name;
    out.push_back(std::move(n));
  }
  std::string warnings;
  auto buffer = llvm::writeArchiveToBuffer(out, llvm::SymtabWritingMode::NormalSymtab,
                                           llvm::object::Archive::K_GNU, /*Deterministic=*/true, /*Thin=*/false,
                                           [&](llvm::Error e) { warnings += llvm::toString(std::move(e)); });
  if (!buffer)
    throw KilnError(kExitInternal, path, "cannot write the archive: " + llvm::toString(buffer.takeError()));
  if (!warnings.empty()) throw KilnError(kExitInternal, path, "cannot index the archive: " + warnings);
  return (*buffer)->getBuffer().str();
}

}  // namespace kiln
