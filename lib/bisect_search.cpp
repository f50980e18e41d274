// The search of kiln-bisect, apart from builds and tests so that unit tests can drive
// it with a simulated test.
#include <algorithm>
#include <map>

#include "bisect.h"

namespace kiln {

namespace {

std::vector<size_t> united(std::vector<size_t> a, const std::vector<size_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

// Zeller's delta debugging in its binary form (as Go's bisect and bugpoint use it):
// `forced` always goes to the candidate, and forced + candidates fails while forced
// alone passes. When neither half fails with `forced`, the failure needs items from
// both halves: first the least of A needed with all of B, then the least of B needed
// with that.
std::vector<size_t> narrow(const std::vector<size_t>& candidates, const std::vector<size_t>& forced,
                           const FailsProbe& fails) {
  if (candidates.size() <= 1) return candidates;
  const auto middle = candidates.begin() + static_cast<std::ptrdiff_t>(candidates.size() / 2);
  std::vector<size_t> a(candidates.begin(), middle), b(middle, candidates.end());
  if (fails(united(forced, a), candidates.size())) return narrow(a, forced, fails);
  if (fails(united(forced, b), candidates.size())) return narrow(b, forced, fails);
  std::vector<size_t> need_a = narrow(a, united(forced, b), fails);
  std::vector<size_t> need_b = narrow(b, united(forced, need_a), fails);
  return united(need_a, need_b);
}

}  // namespace

std::vector<size_t> narrow_culprits(const std::vector<size_t>& candidates, const FailsProbe& fails) {
  std::vector<size_t> sorted = united(candidates, {});
  return narrow(sorted, {}, fails);
}

std::string selection_text(const std::vector<BisectItem>& items, const std::vector<size_t>& chosen,
                           const std::set<std::string>& listed) {
  std::map<std::string, size_t> per_module;  // items of each module
  for (const auto& item : items) per_module[item.module]++;
  std::map<std::string, std::vector<std::string>> picked;  // sorted by module, then name
  for (size_t i : chosen) picked[items.at(i).module].push_back(items[i].function);
  std::string text = "# kiln-selection 1\n";
  for (auto& [module, functions] : picked) {
    std::sort(functions.begin(), functions.end());
    if (functions.front().empty() || (functions.size() == per_module[module] && !listed.count(module))) {
      text += "module " + module + "\n";
      continue;
    }
    for (const auto& f : functions) text += "function " + module + " " + f + "\n";
  }
  return text;
}

}  // namespace kiln
