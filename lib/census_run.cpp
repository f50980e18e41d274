// kiln-census's work: one file's or one module's census, and a whole corpus's, with
// LLVM in worker processes (lib/isolate.h) so that a module that crashes it is a
// rejected record, not the end of the census.
#include "census_run.h"

#include <cstdio>
#include <map>

#include "error.h"
#include "fs.h"
#include "hash.h"
#include "isolate.h"
#include "progress.h"

namespace kiln {

namespace {

// The census of a module that crashed LLVM (or hit one of its fatal errors) in a
// worker: rejected for both back ends, the reason says how. `why` has no label.
ModuleCensus crashed_census(const std::string& id, const std::string& label, uint64_t bytes, const std::string& why) {
  ModuleCensus c;
  c.id = id;
  c.label = label;
  c.facts.bytes = bytes;
  std::string reason = "read: " + why;
  c.verdicts.push_back({"llvm", "rejected", {reason}});
  c.verdicts.push_back({"stamp", "rejected", {"llvm: " + reason}});
  // The worker died before its record came back: what the reader made of the module is
  // not known (the crash may have been the reader's: `why` names the stage).
  c.reader.reason = "census crashed: " + why;
  return c;
}

std::string without_label(const std::string& text, const std::string& label) {
  return text.rfind(label + ": ", 0) == 0 ? text.substr(label.size() + 2) : text;
}

// Empty when the module was read as bitcode, else the reason it could not be.
std::string read_problem(const ModuleCensus& c) {
  const auto& reasons = c.verdicts.front().reasons;
  return !reasons.empty() && reasons.front().rfind("read: ", 0) == 0 ? reasons.front().substr(6) : "";
}

// One module's census in a worker process, shown as text or JSON; a crash becomes
// a rejected record saying how. Sets *problem to why it could not be read, if so.
std::string isolated_census(const std::string& bytes, const std::string& id, const std::string& label,
                            const std::string& crate, bool json, std::string* problem) {
  auto show = [&](ModuleCensus c) {
    c.crate = crate;
    return json ? c.to_json() : census_explain(c);
  };
  IsolatedResult result;
  run_isolated(
      1, 1,
      [&](size_t) {
        ModuleCensus c = census_of_bytes(bytes, id, label);
        return read_problem(c) + "\n" + show(c);
      },
      [&](size_t, IsolatedResult r) { result = std::move(r); }, [&](size_t) { return label; });
  if (!result.ok && !result.crashed) throw KilnError(static_cast<ExitCode>(result.code), "", result.text);
  if (result.crashed) {
    *problem = without_label(result.text, label);
    return show(crashed_census(id, label, bytes.size(), *problem));
  }
  size_t nl = result.text.find('\n');
  *problem = result.text.substr(0, nl);
  return result.text.substr(nl + 1);
}

}  // namespace

// One file: the record is printed either way; a file that cannot be read as bitcode
// also gets the one-line error on stderr, and exit status 3.
int census_file(const std::string& input, bool json) {
  std::string bytes = read_file(input), problem;
  std::string text = isolated_census(bytes, xxh3_128_hex(bytes), input, "", json, &problem);
  std::printf("%s\n", text.c_str());
  if (problem.empty()) return kExitOk;
  std::fflush(stdout);
  std::fprintf(stderr, "kiln-census: error: %s: %s\n", input.c_str(), problem.c_str());
  return kExitBadInput;
}

int explain_module(const Corpus& corpus, const ModuleRecord& m, bool json) {
  std::string problem;
  std::printf("%s\n",
              isolated_census(corpus.load_blob(m.id), m.id, corpus.blob_path(m.id), m.crate, json, &problem).c_str());
  return kExitOk;
}

// Every module's census, each taken once in a worker process so that a module that
// crashes LLVM fails alone. The worker sends back its record (to_json) and the record
// is read back here (census_from_json): the summary needs every census in this process.
std::vector<ModuleCensus> census_corpus(const Corpus& corpus, const std::vector<ModuleRecord>& modules, unsigned jobs) {
  std::vector<ModuleCensus> all(modules.size());
  Progress progress("kiln-census", modules.size());
  run_isolated(
      modules.size(), jobs,
      [&](size_t i) {
        const ModuleRecord& m = modules[i];
        ModuleCensus c = census_of_bytes(corpus.load_blob(m.id), m.id, corpus.blob_path(m.id));
        c.crate = m.crate;
        return c.to_json();
      },
      [&](size_t i, IsolatedResult r) {
        const ModuleRecord& m = modules[i];
        // A missing or corrupt blob is the corpus's fault: stop with its error.
        if (!r.ok && !r.crashed) throw KilnError(static_cast<ExitCode>(r.code), "", r.text);
        if (r.crashed) {
          all[i] = crashed_census(m.id, corpus.blob_path(m.id), m.bytes, without_label(r.text, corpus.blob_path(m.id)));
          all[i].crate = m.crate;
        } else {
          all[i] = census_from_json(r.text, corpus.blob_path(m.id));
        }
        progress.advance();
      },
      [&](size_t i) { return corpus.blob_path(modules[i].id); });
  progress.finish();
  return all;
}

// Records are read back through census_from_json, whose to_json() gives the same
// bytes: the merged file is line for line what one unsharded census writes.
std::vector<ModuleCensus> merge_census_shards(const Corpus& corpus, const std::vector<std::string>& files) {
  std::vector<ModuleRecord> modules = corpus.modules();
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < modules.size(); ++i) order.emplace(modules[i].id, i);
  std::vector<ModuleCensus> all(modules.size());
  std::vector<std::string> from(modules.size());  // the file each record came from
  for (const std::string& file : files) {
    std::string text = read_file(file);
    size_t pos = 0, line_no = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) throw KilnError(kExitBadInput, file, "its last record has no newline (cut short?)");
      std::string where = file + ":" + std::to_string(++line_no);
      std::string line = text.substr(pos, end - pos);
      pos = end + 1;
      if (line.empty()) continue;
      ModuleCensus c = census_from_json(line, where);
      auto it = order.find(c.id);
      if (it == order.end()) throw KilnError(kExitBadInput, where, "module " + c.id + " is not in " + corpus.dir());
      if (!from[it->second].empty())
        throw KilnError(kExitBadInput, where, "module " + c.id + " has a record in " + from[it->second] + " already");
      from[it->second] = where;
      all[it->second] = std::move(c);
    }
  }
  for (size_t i = 0; i < modules.size(); ++i)
    if (from[i].empty())
      throw KilnError(kExitBadInput, corpus.dir(),
                      "module " + modules[i].id + " has no census record in the shards given (a shard missing?)");
  return all;
}

}  // namespace kiln
