// kiln-capture's LLVM half: the object cache's key, emission for the bitcode route's
// compiler wrappers, and `kiln-capture add`. The driver that runs the build links no
// LLVM: capture_driver.cpp.
#include "capture.h"

#include <elf.h>
#include <link.h>

#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "backend.h"
#include "bitcode.h"
#include "corpus.h"
#include "emit.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "hwprofile.h"
#include "isolate.h"
#include "kiln_config.h"
#include "selection.h"
#include "timeutil.h"

namespace kiln {

// This program's GNU build ID (or, without one, the hash of its file): kiln's object
// cache must not hand one build's objects to another build of kiln with the same
// version number, as happens while kiln itself is being developed.
static int note_of_main_program(dl_phdr_info* info, size_t, void* out) {
  auto* id = static_cast<std::string*>(out);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        *id = xxh3_128_hex(std::string_view(desc, note->n_descsz));
        return 1;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // the first object is the main program: stop after it
}

static const std::string& kiln_build_identity() {
  static const std::string identity = [] {
    std::string id;
    ::dl_iterate_phdr(note_of_main_program, &id);
    if (id.empty()) id = xxh3_128_hex(read_file("/proc/self/exe"));
    return id;
  }();
  return identity;
}

std::string object_cache_key(const std::string& bitcode_id, const std::string& backend, const std::string& profile) {
  const char* reader = std::getenv("KILN_READER");
  // A selection and test faults change the object: only this module's lines of the
  // selection count (digest_for), so that a bisect step keeps the other modules' hits.
  const bool llvm = backend == "llvm";  // follows neither
  const char* faults = llvm ? nullptr : std::getenv(kEnvTestFault);
  const std::string selection = llvm ? "" : selection_digest(bitcode_id);
  std::string parts = bitcode_id + '\0' + backend + '\0' + profile + '\0' + (reader ? reader : "") + '\0' +
      KILN_VERSION + '\0' + LLVM_VERSION_STRING + '\0' + kiln_build_identity();
  if (!selection.empty()) parts += std::string("\0selection ", 11) + selection;
  if (faults && *faults) parts += std::string("\0test-fault ", 12) + faults;
  return xxh3_128_hex(parts);
}

// One back end per emitting thread, back end and profile, made on first use, so that a
// crate's units do not each pay for making one.
static Backend& capture_backend(const std::string& spec, Profile profile) {
  thread_local std::map<std::string, std::unique_ptr<Backend>> made;
  std::unique_ptr<Backend>& backend = made[spec + '\0' + profile_name(profile)];
  if (!backend) backend = make_backend(spec, profile);
  return *backend;
}

std::string emit_for_capture(const WrapperSettings& s, const std::string& bytes, const std::string& id,
                             const std::string& label) {
  Profile profile = parse_profile(s.profile);
  Corpus corpus = Corpus::open(s.corpus_dir);
  // cmd: back ends run a tool kiln cannot see change, so their objects are not cached.
  const bool cached = s.backend == "llvm" || s.backend == "stamp";
  const std::string key = cached ? object_cache_key(id, s.backend, profile_name(profile)) : "";
  EmitResult r;
  std::string name = s.backend;
  if (std::optional<std::string> hit = cached ? corpus.cached_object(key) : std::nullopt) {
    r.object = std::move(*hit);
    r.cache = "hit";
    if (s.backend == "stamp") r.selection = selection_digest(id);  // as the back end would have said
  } else {
    Backend& backend = capture_backend(s.backend, profile);
    name = backend.name();
    r = backend.emit(bytes, label);
    if (cached) {
      corpus.store_object(key, r.object);
      r.cache = "miss";
    }
  }
  corpus.append_receipt(receipt_json({id, label, name, profile_name(profile), "kiln-capture"}, r));
  return std::move(r.object);
}

size_t capture_add(const std::string& corpus_dir, const std::vector<std::string>& files) {
  CorpusManifest m;
  m.kiln_version = KILN_VERSION;
  m.llvm_version = LLVM_VERSION_STRING;
  m.host = host_description();
  m.hardware_json = hardware_profile_json();
  m.origin = "add";
  // Read every file in full before storing any, so that a bad or truncated file
  // leaves the corpus (or its absence) unchanged.
  std::vector<std::string> contents;
  for (const auto& f : files) {
    contents.push_back(read_file(f));
    // In a worker: mutated bitcode can crash LLVM's reader; that is this file's
    // error line (exit 3), not a crash of kiln-capture.
    check_bitcode_magic(contents.back(), f);
    run_isolated_one(f, [&] {
      llvm::LLVMContext ctx;
      LlvmStage stage("parsing");
      parse_bitcode(ctx, contents.back(), f);
      return std::string();
    });
  }
  Corpus corpus = Corpus::create_or_open(corpus_dir, m);
  std::set<std::string> known;
  for (const auto& k : corpus.modules()) known.insert(k.id);
  size_t added = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& bytes = contents[i];
    ModuleRecord rec;
    rec.id = corpus.store_blob(bytes);
    rec.bytes = bytes.size();
    rec.triple = bitcode_triple(bytes);
    rec.producer = bitcode_producer(bytes);
    rec.tool = "import";
    rec.crate = basename_of(files[i]);
    rec.cgu = basename_of(files[i]);
    rec.args = {absolute_path(files[i])};
    rec.args_hash = args_hash(rec.args);
    rec.cwd = current_directory();
    rec.invocation = new_invocation_id(rec.args);
    rec.time = iso8601_now();
    if (known.insert(rec.id).second) ++added;
    corpus.append_module(rec);
  }
  corpus.save_manifest();
  return added;
}

}  // namespace kiln
