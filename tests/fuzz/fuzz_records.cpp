// libFuzzer target: the JSON kiln reads back from a corpus (kiln-corpus(5)): JSON Lines
// records as modules and invocations, and the corpus manifest. Any input must end in a
// value or a KilnError, never a crash; what was read must write back and read again
// to the same value.
#include <cstdint>
#include <string>

#include "corpus.h"
#include "error.h"

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for_each_record(text, "fuzz.jsonl", [](const JsonLine& l) {
      ModuleRecord m = module_from_json(l.value, JsonContext{l.file, l.line});
      std::string again = m.to_json() + "\n";
      for_each_record(again, "again.jsonl", [&](const JsonLine& r) {
        ModuleRecord back = module_from_json(r.value, JsonContext{r.file, r.line});
        if (back.to_json() != m.to_json()) __builtin_trap();
      });
    });
  } catch (const KilnError&) {}
  try {
    CorpusManifest m = manifest_from_json(text, "fuzz.json");
    if (manifest_to_json(manifest_from_json(manifest_to_json(m), "again.json")) != manifest_to_json(m))
      __builtin_trap();
  } catch (const KilnError&) {}
  return 0;
}
