#include "contract.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include "ar_archive.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "isolate.h"
#include "progress.h"

namespace kiln {

namespace {

using Difference = ContractDifference;

struct SymbolFacts {
  unsigned binding = 0, visibility = 0, type = 0;
  std::string section;  // section_kind(), "absolute" or "common"
};

// One object's symbols, as the contract sees them.
struct ObjectSymbols {
  std::map<std::string, SymbolFacts> defined;     // non-local, defined
  std::set<std::string> undefined;                // non-local references
  std::map<std::string, SymbolFacts> locals;      // the first local of each name
  std::map<std::string, SymbolFacts> kiln_named;  // section symbols too: .text.NAME.kiln.TAG
  std::set<std::string> names;                    // every symbol's name
};

std::string binding_name(unsigned b) {
  switch (b) {
    case llvm::ELF::STB_LOCAL:
      return "LOCAL";
    case llvm::ELF::STB_GLOBAL:
      return "GLOBAL";
    case llvm::ELF::STB_WEAK:
      return "WEAK";
    case llvm::ELF::STB_GNU_UNIQUE:
      return "GNU_UNIQUE";
  }
  return "binding " + std::to_string(b);
}

std::string visibility_name(unsigned v) {
  static const char* const names[] = {"default", "internal", "hidden", "protected"};
  return names[v & 3];
}

std::string type_name(unsigned t) {
  switch (t) {
    case llvm::ELF::STT_NOTYPE:
      return "NOTYPE";
    case llvm::ELF::STT_OBJECT:
      return "OBJECT";
    case llvm::ELF::STT_FUNC:
      return "FUNC";
    case llvm::ELF::STT_SECTION:
      return "SECTION";
    case llvm::ELF::STT_FILE:
      return "FILE";
    case llvm::ELF::STT_COMMON:
      return "COMMON";
    case llvm::ELF::STT_TLS:
      return "TLS";
    case llvm::ELF::STT_GNU_IFUNC:
      return "GNU_IFUNC";
  }
  return "type " + std::to_string(t);
}

// What the final link does with a section depends on its type and flags, not on its
// name (stamp's writer and LLVM's name some sections differently, .text.NAME or not).
std::string section_kind(unsigned type, uint64_t flags) {
  if (flags & llvm::ELF::SHF_TLS) return "tls";
  if (flags & llvm::ELF::SHF_EXECINSTR) return "text";
  if (!(flags & llvm::ELF::SHF_ALLOC)) return "other";
  if (type == llvm::ELF::SHT_NOBITS) return "bss";
  return (flags & llvm::ELF::SHF_WRITE) ? "data" : "rodata";
}

std::string describe(const SymbolFacts& s) {
  return binding_name(s.binding) + " " + type_name(s.type) + " " + visibility_name(s.visibility) + " " + s.section;
}

// How an object has a name, for the side of a difference where it is not defined.
std::string where(const ObjectSymbols& o, const std::string& name) {
  if (auto it = o.defined.find(name); it != o.defined.end()) return describe(it->second);
  if (o.undefined.count(name)) return "undefined";
  if (auto it = o.locals.find(name); it != o.locals.end()) return describe(it->second);
  return "absent";
}

template <typename T>
T must(llvm::Expected<T> value, const std::string& what) {
  if (!value) throw KilnError(kExitBadInput, what, "unreadable ELF object: " + llvm::toString(value.takeError()));
  return std::move(*value);
}

ObjectSymbols read_symbols(std::string_view bytes, const std::string& what) {
  using namespace llvm::object;
  // A copy: LLVM's ELF reader wants its headers aligned, which bytes in a string need not be.
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(bytes.data(), bytes.size()), what);
  auto file = must(ObjectFile::createObjectFile(buffer->getMemBufferRef()), what);
  auto* elf = llvm::dyn_cast<ELF64LEObjectFile>(file.get());
  if (!elf || elf->getELFFile().getHeader().e_machine != llvm::ELF::EM_X86_64)
    throw KilnError(kExitBadInput, what, "not an x86-64 ELF64 object");
  ObjectSymbols out;
  for (const ELFSymbolRef& s : elf->symbols()) {
    std::string name = must(s.getName(), what).str();
    uint32_t flags = must(s.getFlags(), what);
    SymbolFacts f{s.getBinding(), unsigned(s.getOther() & 3), s.getELFType(), ""};
    bool defined = !(flags & SymbolRef::SF_Undefined);
    if (flags & SymbolRef::SF_Common) f.section = "common";
    else if (flags & SymbolRef::SF_Absolute) f.section = "absolute";
    else if (defined) {
      section_iterator sec = must(s.getSection(), what);
      if (sec != elf->section_end())
        f.section = section_kind(ELFSectionRef(*sec).getType(), ELFSectionRef(*sec).getFlags());
    }
    out.names.insert(name);
    if (name.find(".kiln.") != std::string::npos) out.kiln_named.emplace(name, f);
    if (f.type == llvm::ELF::STT_SECTION || f.type == llvm::ELF::STT_FILE || name.empty()) continue;
    if (f.binding == llvm::ELF::STB_LOCAL) out.locals.emplace(name, f);
    else if (defined) out.defined[name] = f;
    else out.undefined.insert(name);
  }
  return out;
}

// The reference's definition against the candidate's: one difference per property.
void compare_defined(const std::string& name, const SymbolFacts& r, const SymbolFacts& c,
                     std::vector<Difference>& out) {
  if (r.binding != c.binding)
    out.push_back({Difference::kBinding, name, binding_name(r.binding), binding_name(c.binding)});
  if (r.visibility != c.visibility)
    out.push_back({Difference::kVisibility, name, visibility_name(r.visibility), visibility_name(c.visibility)});
  if (r.type != c.type) out.push_back({Difference::kType, name, type_name(r.type), type_name(c.type)});
  if (r.section != c.section) out.push_back({Difference::kSectionKind, name, r.section, c.section});
}

// What a worker sends back for one module: both objects, the reference's size first.
std::string emit_both(Backend& reference, Backend& candidate, std::string_view bitcode, const std::string& label) {
  std::string r = reference.emit(bitcode, label).object;
  return std::to_string(r.size()) + "\n" + r + candidate.emit(bitcode, label).object;
}

std::vector<Difference> compare_packed(const std::string& packed, const std::string& label) {
  size_t nl = packed.find('\n');
  size_t size = std::stoull(packed.substr(0, nl));
  std::string_view all(packed);
  return compare_contract(all.substr(nl + 1, size), all.substr(nl + 1 + size), label);
}

}  // namespace

const char* contract_kind_name(Difference::Kind kind) {
  switch (kind) {
    case Difference::kMissing:
      return "missing";
    case Difference::kExtra:
      return "extra";
    case Difference::kBinding:
      return "binding differs";
    case Difference::kVisibility:
      return "visibility differs";
    case Difference::kType:
      return "type differs";
    case Difference::kSectionKind:
      return "section kind differs";
    case Difference::kKilnName:
      return ".kiln. name";
  }
  return "?";
}

std::vector<Difference> compare_contract(std::string_view reference, std::string_view candidate,
                                         const std::string& label) {
  ObjectSymbols ref = read_symbols(reference, label + " (llvm's object)");
  ObjectSymbols cand = read_symbols(candidate, label + " (the candidate object)");
  std::vector<Difference> out;
  for (const auto& [name, r] : ref.defined) {
    auto c = cand.defined.find(name);
    if (c == cand.defined.end()) out.push_back({Difference::kMissing, name, describe(r), where(cand, name)});
    else compare_defined(name, r, c->second, out);
  }
  for (const auto& [name, c] : cand.defined)
    if (!ref.defined.count(name)) out.push_back({Difference::kExtra, name, where(ref, name), describe(c)});
  // A module may name a symbol ".kiln." itself (LLVM's object then has it too).
  for (const auto& [name, c] : cand.kiln_named)
    if (!ref.names.count(name)) out.push_back({Difference::kKilnName, name, "absent", describe(c)});
  std::stable_sort(out.begin(), out.end(), [](const Difference& a, const Difference& b) { return a.kind < b.kind; });
  return out;
}

std::string render_difference(const Difference& d, const std::string& candidate_name) {
  return d.symbol + ": " + contract_kind_name(d.kind) + ": llvm " + d.reference + ", " + candidate_name + " " +
      d.candidate;
}

std::vector<Difference> check_module_contract(std::string_view bitcode, const std::string& label,
                                              const std::string& backend_spec, Profile profile) {
  auto reference = make_backend("llvm", profile);
  auto candidate = make_backend(backend_spec, profile);
  return compare_packed(emit_both(*reference, *candidate, bitcode, label), label);
}

int run_contract_check(const std::string& input, bool corpus, const std::string& backend_spec, Profile profile,
                       unsigned jobs) {
  std::string name = make_backend(backend_spec, profile)->name();  // a bad spec: usage, before any work
  if (name.rfind("cmd:", 0) == 0) name = "cmd";  // its whole template on every line would drown the differences
  std::vector<std::string> labels;               // the file, or the corpus's module ids
  std::unique_ptr<Corpus> c;
  std::string file_bytes;
  if (corpus) {
    c = std::make_unique<Corpus>(Corpus::open(input));
    for (const ModuleRecord& m : c->modules()) labels.push_back(m.id);
  } else {
    file_bytes = read_file(input);
    labels.push_back(input);
  }
  // Both emissions run in worker processes, so that a module that crashes LLVM fails
  // alone; the comparison runs here.
  struct Outcome {
    std::vector<Difference> differences;
    std::string error;  // "LABEL: REASON" when the module could not be emitted or read
  };
  std::vector<Outcome> outcomes(labels.size());
  std::unique_ptr<Backend> reference, candidate;  // one of each per worker
  auto job = [&](size_t i) {
    if (!reference) reference = make_backend("llvm", profile), candidate = make_backend(backend_spec, profile);
    return emit_both(*reference, *candidate, corpus ? c->load_blob(labels[i]) : file_bytes, labels[i]);
  };
  Progress progress("checking the object contract", labels.size());
  auto done = [&](size_t i, IsolatedResult r) {
    progress.advance();
    // A single file that cannot be emitted is an error with its status, as in kiln-emit.
    if (!r.ok && !corpus) throw KilnError(static_cast<ExitCode>(r.code), "", r.text);
    if (!r.ok) return void(outcomes[i].error = r.text);
    try {
      outcomes[i].differences = compare_packed(r.text, labels[i]);
    } catch (const KilnError& e) {
      if (!corpus) throw;
      outcomes[i].error = e.what();
    }
  };
  run_isolated(labels.size(), std::max(1u, jobs), job, done, [&](size_t i) { return labels[i]; });
  progress.finish();

  size_t same = 0, different = 0, failed = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const Outcome& o = outcomes[i];
    if (!o.error.empty()) std::printf("%s\n", o.error.c_str());
    for (const Difference& d : o.differences)
      std::printf("%s: %s\n", labels[i].c_str(), render_difference(d, name).c_str());
    (!o.error.empty() ? failed : o.differences.empty() ? same : different)++;
  }
  std::printf("%zu modules: %zu same contract, %zu different, %zu failed\n", labels.size(), same, different, failed);
  return different || failed ? kExitFailed : kExitOk;
}

namespace {

// The name a member is paired by: its own, less the session of an incremental build's
// unit (rustc names those CRATE-HASH.CGU.SESSION.rcgu.o, SESSION differing between builds;
// other units are CRATE-HASH.CRATE.HASH-cgu.N.rcgu.o).
std::string pairing_name(const std::string& name) {
  const std::string suffix = ".rcgu.o";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return name;
  const std::string stem = name.substr(0, name.size() - suffix.size());
  if (std::count(stem.begin(), stem.end(), '.') != 2) return name;
  return stem.substr(0, stem.rfind('.')) + suffix;
}

// A file's objects by pairing name: the file itself, or an archive's ELF members
// (views into `bytes`, which holds the file).
std::vector<ArchiveMember> objects_of(const std::string& path, std::string& bytes) {
  bytes = read_file(path);
  if (bytes.compare(0, 8, "!<arch>\n") != 0) return {{path.substr(path.find_last_of('/') + 1), bytes}};
  std::vector<ArchiveMember> objects;
  for (ArchiveMember& m : read_archive(path, bytes))
    if (m.bytes.substr(0, 4) == "\x7f" "ELF") objects.push_back({pairing_name(m.name), m.bytes});
  std::sort(objects.begin(), objects.end(), [](const ArchiveMember& a, const ArchiveMember& b) { return a.name < b.name; });
  return objects;
}

}  // namespace

int run_contract_compare(const std::string& reference, const std::string& candidate) {
  std::string ref_bytes, cand_bytes;
  const std::vector<ArchiveMember> ref = objects_of(reference, ref_bytes), cand = objects_of(candidate, cand_bytes);
  const bool single = ref.size() == 1 && cand.size() == 1;  // two objects: compared whatever their names
  size_t same = 0, different = 0, unpaired = 0;
  size_t i = 0, j = 0;
  while (i < ref.size() || j < cand.size()) {
    const bool paired = single || (i < ref.size() && j < cand.size() && ref[i].name == cand[j].name);
    if (!paired) {
      const bool only_ref = j == cand.size() || (i < ref.size() && ref[i].name < cand[j].name);
      std::printf("%s: only in %s\n", (only_ref ? ref[i] : cand[j]).name.c_str(),
                  (only_ref ? reference : candidate).c_str());
      ++(only_ref ? i : j);
      ++unpaired;
      continue;
    }
    const std::string label = cand[j].name;
    std::vector<Difference> diffs = compare_contract(ref[i].bytes, cand[j].bytes, label);
    for (const Difference& d : diffs) std::printf("%s: %s\n", label.c_str(), render_difference(d, "candidate").c_str());
    (diffs.empty() ? same : different)++;
    ++i, ++j;
  }
  std::printf("%zu objects: %zu same contract, %zu different, %zu unpaired\n", same + different, same, different,
              unpaired);
  return different || unpaired ? kExitFailed : kExitOk;
}

}  // namespace kiln
