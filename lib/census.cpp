#include "census.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <cstdio>

#include "bitcode.h"
#include "direct_export.h"
#include "error.h"
#include "flat_export.h"
#include "selection.h"
#include "hash.h"
#include "isolate.h"
#include "json.h"

namespace kiln {

static std::string calling_convention_name(unsigned cc) {
  switch (cc) {
    case llvm::CallingConv::C:
      return "c";
    case llvm::CallingConv::Fast:
      return "fast";
    case llvm::CallingConv::Cold:
      return "cold";
    case llvm::CallingConv::PreserveMost:
      return "preserve_most";
    case llvm::CallingConv::X86_64_SysV:
      return "x86_64_sysv";
    case llvm::CallingConv::Win64:
      return "win64";
    default:
      return "cc" + std::to_string(cc);
  }
}

static bool is_atomic(const llvm::Instruction& inst) {
  if (llvm::isa<llvm::AtomicRMWInst>(inst) || llvm::isa<llvm::AtomicCmpXchgInst>(inst) ||
      llvm::isa<llvm::FenceInst>(inst))
    return true;
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) return load->isAtomic();
  if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) return store->isAtomic();
  return false;
}

static bool touches_vectors(const llvm::Instruction& inst) {
  if (inst.getType()->isVectorTy()) return true;
  for (const auto& op : inst.operands())
    if (op->getType()->isVectorTy()) return true;
  return false;
}

ModuleFacts collect_facts(const llvm::Module& module) {
  ModuleFacts f;
  f.triple = module.getTargetTriple().str();
  f.module_asm_bytes = module.getModuleInlineAsm().size();
  f.comdats = module.getComdatSymbolTable().size();
  f.debug_info = module.debug_compile_units_begin() != module.debug_compile_units_end();
  for (const auto& g : module.globals()) {
    ++f.globals;
    if (g.hasInitializer()) ++f.globals_with_initializer;
    if (g.isThreadLocal()) ++f.tls_globals;
  }
  f.aliases = module.alias_size();
  for (const auto& fn : module) {
    if (fn.isDeclaration()) {
      ++f.functions_declared;
      continue;
    }
    ++f.functions_defined;
    f.calling_conventions[calling_convention_name(fn.getCallingConv())]++;
    if (fn.hasPersonalityFn()) ++f.personalities;
    for (const auto& bb : fn) {
      ++f.blocks;
      for (const auto& inst : bb) {
        ++f.instructions;
        f.opcodes[inst.getOpcodeName()]++;
        if (inst.getDebugLoc()) ++f.instructions_with_debug_location;
        f.debug_records +=
            static_cast<uint64_t>(std::distance(inst.getDbgRecordRange().begin(), inst.getDbgRecordRange().end()));
        if (is_atomic(inst)) ++f.atomic_instructions;
        if (touches_vectors(inst)) ++f.vector_instructions;
        if (llvm::isa<llvm::InvokeInst>(inst)) ++f.invokes;
        if (llvm::isa<llvm::LandingPadInst>(inst)) ++f.landingpads;
        if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) {
          if (call->isInlineAsm()) ++f.inline_asm_calls;
          if (const llvm::Function* callee = call->getCalledFunction())
            if (callee->isIntrinsic()) f.intrinsics[callee->getName().str()]++;
        }
      }
    }
  }
  return f;
}

// stamp's contract is per function: a module is eligible when stamp compiles every
// function, partial when it compiles some (the rest fall back to llvm). The reasons
// are every distinct per-function reason, with how many functions it stopped.
static Verdict stamp_contract(llvm::Module& module, ModuleCensus& c) {
  Verdict v{"stamp", "eligible", {}};
  materialize_aggregate_constants(module);  // as the stamp back end does before exporting
  FlatExport flat = export_flat(module, selection_filter(c.id));
  std::map<std::string, uint64_t> reason_functions;
  std::vector<std::string> order;
  for (const auto& f : flat.verdicts) {
    c.function_verdicts.push_back(f);
    if (f.stamp()) {
      v.functions_stamp++;
      v.instructions_stamp += f.instructions;
      continue;
    }
    v.functions_fallback++;
    v.instructions_fallback += f.instructions;
    for (const auto& r : f.reasons)
      if (reason_functions[r]++ == 0) order.push_back(r);
  }
  for (const auto& r : order) v.reasons.push_back(r + " (" + std::to_string(reason_functions[r]) + " functions)");
  if (const Selection* s = active_selection()) {
    const size_t total = flat.verdicts.size(), refused = reason_functions[kNotSelected];
    c.selection = s->path() + " (digest " + s->digest_for(c.id) + "): " + std::to_string(total - refused) + " of " +
        std::to_string(total) + " functions selected";
  }
  if (v.functions_fallback) v.verdict = v.functions_stamp ? "partial" : "rejected";
  return v;
}

// The direct reader's view of the module, judged as the stamp back end's direct route
// judges it (StampBackend::emit_direct): the census says which modules need no LLVM.
static ReaderRecord read_directly(const std::string& bytes, const std::string& id, const std::string& label) {
  ReaderRecord r;
  DirectExport direct;
  try {
    LlvmStage stage("reading directly");  // names the reader if the worker crashes in it
    direct = export_direct(bytes, label, xxh3_128_hex(bytes).substr(0, 12), selection_filter(id));
  } catch (const KilnError& e) {
    // Without the label: the summary counts modules per reason.
    std::string what = e.what();
    if (!e.path().empty() && what.rfind(e.path() + ": ", 0) == 0) what = what.substr(e.path().size() + 2);
    r.reason = "reader: " + what;
    return r;
  }
  if (!direct.declined.empty()) {
    r.reason = direct.declined;
    return r;
  }
  r.functions_declined = direct.declined_function_count;
  for (const auto& v : direct.verdicts)
    if (!v.reasons.empty() && v.reasons[0].rfind("reader: ", 0) == 0) {
      r.reason = v.reasons[0];
      return r;
    }
  r.read = true;
  if (!direct.whole) {
    r.reason = direct.globals_reason.empty() ? "functions fall back to llvm" : direct.globals_reason;
    return r;
  }
  // Whole, but for another target: the back end refuses it there, it emits nothing.
  if (std::string problem = triple_problem(direct.triple); !problem.empty()) {
    r.reason = "target: " + problem.substr(problem.rfind("target ", 0) == 0 ? 7 : 0);
    return r;
  }
  r.direct = true;
  return r;
}

ModuleCensus census_of_bytes(const std::string& bytes, const std::string& id, const std::string& label) {
  ModuleCensus c;
  c.id = id;
  c.label = label;
  c.facts.bytes = bytes.size();
  c.reader = read_directly(bytes, id, label);
  // A module the reader declined whole (or could not read) had none of its functions read.
  const bool module_declined = !c.reader.read && c.reader.functions_declined == 0;
  Verdict llvm_verdict{"llvm", "eligible", {}};
  Verdict stamp_verdict{"stamp", "rejected", {}};
  try {
    llvm::LLVMContext ctx;
    ModuleProblems problems;
    auto module = parse_checked_module(ctx, bytes, label, {.problems = &problems});
    c.facts = collect_facts(*module);
    c.facts.bytes = bytes.size();
    const std::string& triple = problems.triple;
    // triple_problem() says "target X is ..."; the reason's category is "target".
    if (!triple.empty())
      llvm_verdict.reasons.push_back("target: " + triple.substr(triple.rfind("target ", 0) == 0 ? 7 : 0));
    if (!problems.verify.empty()) llvm_verdict.reasons.push_back("verify: " + problems.verify);
    if (llvm_verdict.reasons.empty()) stamp_verdict = stamp_contract(*module, c);
  } catch (const KilnError& e) {
    std::string what = e.what();
    llvm_verdict.reasons.push_back("read: " +
                                   what.substr(what.find(": ") == std::string::npos ? 0 : what.find(": ") + 2));
  }
  if (!llvm_verdict.reasons.empty()) {
    llvm_verdict.verdict = "rejected";
    // stamp reads, splits and falls back through llvm: what llvm cannot take, it cannot.
    stamp_verdict.verdict = "rejected";
    stamp_verdict.reasons = {"llvm: " + llvm_verdict.reasons.front()};
  }
  if (module_declined) c.reader.functions_declined = c.facts.functions_defined;
  c.verdicts.push_back(llvm_verdict);
  c.verdicts.push_back(stamp_verdict);
  return c;
}

static void write_count_map(JsonWriter& w, const char* key, const std::map<std::string, uint64_t>& m) {
  w.key(key).begin_object();
  for (const auto& [k, v] : m) w.field(k, v);
  w.end_object();
}

std::string ModuleCensus::to_json() const {
  const ModuleFacts& f = facts;
  JsonWriter w;
  w.begin_object().field("v", kCensusSchemaVersion).field("id", id).field("input", label).field("crate", crate);
  w.key("facts")
      .begin_object()
      .field("bytes", f.bytes)
      .field("triple", f.triple)
      .field("functions_defined", f.functions_defined)
      .field("functions_declared", f.functions_declared)
      .field("blocks", f.blocks)
      .field("instructions", f.instructions)
      .field("globals", f.globals)
      .field("globals_with_initializer", f.globals_with_initializer)
      .field("aliases", f.aliases)
      .field("comdats", f.comdats)
      .field("tls_globals", f.tls_globals)
      .field("inline_asm_calls", f.inline_asm_calls)
      .field("module_asm_bytes", f.module_asm_bytes)
      .field("invokes", f.invokes)
      .field("landingpads", f.landingpads)
      .field("personalities", f.personalities)
      .field("vector_instructions", f.vector_instructions)
      .field("atomic_instructions", f.atomic_instructions)
      .field("debug_info", f.debug_info)
      .field("instructions_with_debug_location", f.instructions_with_debug_location)
      .field("debug_records", f.debug_records);
  write_count_map(w, "opcodes", f.opcodes);
  write_count_map(w, "intrinsics", f.intrinsics);
  write_count_map(w, "calling_conventions", f.calling_conventions);
  w.end_object();
  w.key("verdicts").begin_object();
  for (const auto& v : verdicts) {
    w.key(v.backend).begin_object().field("verdict", v.verdict).string_array("reasons", v.reasons);
    if (v.backend == "stamp")
      w.field("functions_stamp", v.functions_stamp)
          .field("functions_fallback", v.functions_fallback)
          .field("instructions_stamp", v.instructions_stamp)
          .field("instructions_fallback", v.instructions_fallback);
    w.end_object();
  }
  w.end_object();
  w.key("reader")
      .begin_object()
      .field("read", reader.read)
      .field("direct", reader.direct)
      .field("reason", reader.reason)
      .field("functions_declined", reader.functions_declined)
      .end_object();
  // stamp's DWARF has line tables, subprograms, inlined calls, blocks, variables with an
  // address, global variables and their types; not yet static members, variables
  // without an address or subprograms' types: say so per module.
  w.field("stamp_drops_debug_info", facts.debug_info);
  w.key("stamp_fallback_functions").begin_array();
  for (const auto& f : function_verdicts) {
    if (f.reasons.empty()) continue;
    w.begin_object()
        .field("name", f.name)
        .field("instructions", f.instructions)
        .string_array("reasons", f.reasons)
        .end_object();
  }
  w.end_array().end_object();
  return w.str();
}

namespace {
// Reading a record back: every field to_json() writes must be there with its type, so
// that a record cut short or from another kiln is refused instead of read as zeros.
[[noreturn]] void bad_record(const JsonContext& ctx, const std::string& why) {
  throw KilnError(kExitBadInput, ctx.where(), "not a census record: " + why);
}
simdjson::dom::object get_object(simdjson::dom::element e, const char* key, const JsonContext& ctx) {
  simdjson::dom::object obj;
  if (e[key].get(obj) != simdjson::SUCCESS) bad_record(ctx, std::string("missing or non-object field '") + key + "'");
  return obj;
}
uint64_t get_count(simdjson::dom::element e, const char* key, const JsonContext& ctx) {
  uint64_t v = 0;
  if (e[key].get(v) != simdjson::SUCCESS) bad_record(ctx, std::string("missing or non-count field '") + key + "'");
  return v;
}
bool get_flag(simdjson::dom::element e, const char* key, const JsonContext& ctx) {
  bool v = false;
  if (e[key].get(v) != simdjson::SUCCESS) bad_record(ctx, std::string("missing or non-boolean field '") + key + "'");
  return v;
}
// get_string_array skips what is not a string; here that would lose a reason.
std::vector<std::string> get_strings(simdjson::dom::element e, const char* key, const JsonContext& ctx) {
  simdjson::dom::array arr;
  if (e[key].get(arr) != simdjson::SUCCESS) bad_record(ctx, std::string("missing or non-array field '") + key + "'");
  for (auto item : arr)
    if (!item.is_string()) bad_record(ctx, std::string("field '") + key + "' holds a non-string");
  return get_string_array(e, key);
}
std::map<std::string, uint64_t> get_count_map(simdjson::dom::element e, const char* key, const JsonContext& ctx) {
  std::map<std::string, uint64_t> m;
  for (auto field : get_object(e, key, ctx)) {
    uint64_t n = 0;
    if (field.value.get(n) != simdjson::SUCCESS) bad_record(ctx, std::string("field '") + key + "' holds a non-count");
    m[json_string_bytes(field.key)] = n;  // keys are written like strings: kiln's byte encoding
  }
  return m;
}

ModuleFacts facts_from_json(simdjson::dom::element doc, const JsonContext& ctx) {
  simdjson::dom::element e;
  if (doc["facts"].get(e) != simdjson::SUCCESS || !e.is_object())
    bad_record(ctx, "missing or non-object field 'facts'");
  ModuleFacts f;
  f.bytes = get_count(e, "bytes", ctx);
  f.triple = get_string(e, "triple", ctx);
  f.functions_defined = get_count(e, "functions_defined", ctx);
  f.functions_declared = get_count(e, "functions_declared", ctx);
  f.blocks = get_count(e, "blocks", ctx);
  f.instructions = get_count(e, "instructions", ctx);
  f.globals = get_count(e, "globals", ctx);
  f.globals_with_initializer = get_count(e, "globals_with_initializer", ctx);
  f.aliases = get_count(e, "aliases", ctx);
  f.comdats = get_count(e, "comdats", ctx);
  f.tls_globals = get_count(e, "tls_globals", ctx);
  f.inline_asm_calls = get_count(e, "inline_asm_calls", ctx);
  f.module_asm_bytes = get_count(e, "module_asm_bytes", ctx);
  f.invokes = get_count(e, "invokes", ctx);
  f.landingpads = get_count(e, "landingpads", ctx);
  f.personalities = get_count(e, "personalities", ctx);
  f.vector_instructions = get_count(e, "vector_instructions", ctx);
  f.atomic_instructions = get_count(e, "atomic_instructions", ctx);
  f.debug_info = get_flag(e, "debug_info", ctx);
  f.instructions_with_debug_location = get_count(e, "instructions_with_debug_location", ctx);
  f.debug_records = get_count(e, "debug_records", ctx);
  f.opcodes = get_count_map(e, "opcodes", ctx);
  f.intrinsics = get_count_map(e, "intrinsics", ctx);
  f.calling_conventions = get_count_map(e, "calling_conventions", ctx);
  return f;
}

// Verdicts in the order written (simdjson keeps it): the summary lists back ends so.
std::vector<Verdict> verdicts_from_json(simdjson::dom::element e, const JsonContext& ctx) {
  std::vector<Verdict> out;
  for (auto field : get_object(e, "verdicts", ctx)) {
    Verdict v;
    v.backend = json_string_bytes(field.key);
    if (!field.value.is_object()) bad_record(ctx, "verdict of " + v.backend + " is not an object");
    v.verdict = get_string(field.value, "verdict", ctx);
    v.reasons = get_strings(field.value, "reasons", ctx);
    if (v.backend == "stamp") {
      v.functions_stamp = get_count(field.value, "functions_stamp", ctx);
      v.functions_fallback = get_count(field.value, "functions_fallback", ctx);
      v.instructions_stamp = get_count(field.value, "instructions_stamp", ctx);
      v.instructions_fallback = get_count(field.value, "instructions_fallback", ctx);
    }
    out.push_back(std::move(v));
  }
  return out;
}

ReaderRecord reader_from_json(simdjson::dom::element doc, const JsonContext& ctx) {
  simdjson::dom::element e;
  if (doc["reader"].get(e) != simdjson::SUCCESS || !e.is_object())
    bad_record(ctx, "missing or non-object field 'reader'");
  ReaderRecord r;
  r.read = get_flag(e, "read", ctx);
  r.direct = get_flag(e, "direct", ctx);
  r.reason = get_string(e, "reason", ctx);
  r.functions_declined = get_count(e, "functions_declined", ctx);
  // census_of_bytes never writes these: the summary's counts rest on them.
  if (r.direct && !r.read) bad_record(ctx, "the reader record is direct but not read");
  if (r.direct != r.reason.empty()) bad_record(ctx, "the reader record has a reason exactly when it is not direct");
  return r;
}
}  // namespace

ModuleCensus census_from_json(const std::string& json, const std::string& where) {
  JsonContext ctx{where, 0};
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(json).get(doc); err != simdjson::SUCCESS) bad_record(ctx, json_error_reason(err));
  if (!doc.is_object()) bad_record(ctx, "not a JSON object");
  int64_t version = get_int(doc, "v", ctx);
  if (version != kCensusSchemaVersion)
    bad_record(ctx, "version " + std::to_string(version) + ", this kiln reads " + std::to_string(kCensusSchemaVersion));
  ModuleCensus c;
  c.id = get_string(doc, "id", ctx);
  c.label = get_string(doc, "input", ctx);
  c.crate = get_string(doc, "crate", ctx);
  c.facts = facts_from_json(doc, ctx);
  c.verdicts = verdicts_from_json(doc, ctx);
  c.reader = reader_from_json(doc, ctx);
  // stamp_drops_debug_info is facts.debug_info again: to_json() writes it from there.
  simdjson::dom::array fallback;
  if (doc["stamp_fallback_functions"].get(fallback) != simdjson::SUCCESS)
    bad_record(ctx, "missing or non-array field 'stamp_fallback_functions'");
  for (auto f : fallback) {
    if (!f.is_object()) bad_record(ctx, "a stamp fallback function is not an object");
    c.function_verdicts.push_back(
        {get_string(f, "name", ctx), get_count(f, "instructions", ctx), get_strings(f, "reasons", ctx)});
    // A function with no reason is stamp's and is never listed: to_json() would drop it.
    if (c.function_verdicts.back().reasons.empty()) bad_record(ctx, "a stamp fallback function without reasons");
  }
  return c;
}

namespace {
struct Tally {
  uint64_t modules = 0, functions = 0, instructions = 0;
};
void tally(Tally& t, const ModuleFacts& f) {
  t.modules++;
  t.functions += f.functions_defined;
  t.instructions += f.instructions;
}
std::string first_reason_key(const Verdict& v) {
  if (v.reasons.empty()) return "(none)";
  std::string r = v.reasons.front();
  // stamp's reasons end with how many functions they stopped: not part of the key.
  auto count = r.rfind(" (");
  if (count != std::string::npos && r.back() == ')') r = r.substr(0, count);
  auto colon = r.find(':');
  return colon == std::string::npos ? r : r.substr(0, colon);
}
std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(s[i]);
  }
  return out;
}
}  // namespace

namespace {
// stamp decides per function: shares of functions and instructions, and the reasons
// that stopped it, by each function's first reason and by every reason.
struct StampTally {
  uint64_t functions_stamp = 0, functions_fallback = 0, instructions_stamp = 0, instructions_fallback = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> first_reason, any_reason;  // functions, instructions
};
// Totals come from each module's stamp verdict, reasons from its fallback functions:
// a record read back (census_from_json) lists only the functions that fall back.
StampTally tally_stamp(const std::vector<ModuleCensus>& all) {
  StampTally t;
  for (const auto& c : all) {
    for (const auto& v : c.verdicts)
      if (v.backend == "stamp") {
        t.functions_stamp += v.functions_stamp;
        t.functions_fallback += v.functions_fallback;
        t.instructions_stamp += v.instructions_stamp;
        t.instructions_fallback += v.instructions_fallback;
      }
    for (const auto& f : c.function_verdicts) {
      if (f.reasons.empty()) continue;
      auto& first = t.first_reason[f.reasons.front()];
      first.first++;
      first.second += f.instructions;
      for (const auto& r : f.reasons) {
        auto& any = t.any_reason[r];
        any.first++;
        any.second += f.instructions;
      }
    }
  }
  return t;
}
double share(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// The direct reader over the corpus: what it read, what needs no LLVM, and why the
// rest does, by exact reason (each module has at most one).
struct ReaderTally {
  uint64_t modules = 0, modules_read = 0, modules_direct = 0, functions = 0, functions_read = 0;
  std::vector<std::pair<std::string, uint64_t>> reasons;  // most modules first, then by reason
};
ReaderTally tally_reader(const std::vector<ModuleCensus>& all) {
  ReaderTally t;
  std::map<std::string, uint64_t> by_reason;
  for (const auto& c : all) {
    t.modules++;
    t.modules_read += c.reader.read;
    t.modules_direct += c.reader.direct;
    t.functions += c.facts.functions_defined;
    t.functions_read += c.facts.functions_defined - std::min(c.reader.functions_declined, c.facts.functions_defined);
    if (!c.reader.reason.empty()) by_reason[c.reader.reason]++;
  }
  t.reasons.assign(by_reason.begin(), by_reason.end());
  std::stable_sort(t.reasons.begin(), t.reasons.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return t;
}

std::string reader_summary_table(const std::vector<ModuleCensus>& all) {
  ReaderTally t = tally_reader(all);
  std::string out = "direct reader\n";
  char line[512];
  auto row = [&](const char* what, uint64_t part, uint64_t whole) {
    std::snprintf(line, sizeof line, "  %-36s %10s of %s (%.1f%%)\n", what, with_commas(part).c_str(),
                  with_commas(whole).c_str(), share(part, whole));
    out += line;
  };
  row("modules read directly", t.modules_read, t.modules);
  row("functions read directly", t.functions_read, t.functions);
  row("modules that take the direct route", t.modules_direct, t.modules);
  if (!t.reasons.empty()) out += "  not direct, by reason                   modules\n";
  // The reason last and whole: reader reasons are long, and cutting them could merge two.
  for (const auto& [r, n] : t.reasons) {
    std::snprintf(line, sizeof line, "  %-36s %10s  %s\n", "", with_commas(n).c_str(), r.c_str());
    out += line;
  }
  return out;
}
}  // namespace

std::string census_summary_table(const std::vector<ModuleCensus>& all) {
  std::string out;
  char line[256];
  Tally total;
  std::map<std::string, uint64_t> opcodes;
  for (const auto& c : all) {
    tally(total, c.facts);
    for (const auto& [k, v] : c.facts.opcodes) opcodes[k] += v;
  }
  std::snprintf(line, sizeof line, "%s modules, %s functions defined, %s IR instructions\n\n",
                with_commas(total.modules).c_str(), with_commas(total.functions).c_str(),
                with_commas(total.instructions).c_str());
  out += line;
  std::vector<std::string> backends;
  for (const auto& c : all)
    for (const auto& v : c.verdicts)
      if (std::find(backends.begin(), backends.end(), v.backend) == backends.end()) backends.push_back(v.backend);
  for (const auto& b : backends) {
    std::map<std::string, Tally> by_verdict, by_reason;
    for (const auto& c : all)
      for (const auto& v : c.verdicts)
        if (v.backend == b) {
          tally(by_verdict[v.verdict], c.facts);
          if (!v.reasons.empty()) tally(by_reason[first_reason_key(v)], c.facts);
        }
    out += "back end " + b + "\n";
    std::snprintf(line, sizeof line, "  %-28s %10s %12s %14s\n", "verdict / first reason", "modules", "functions",
                  "instructions");
    out += line;
    for (const auto& [k, t] : by_verdict) {
      std::snprintf(line, sizeof line, "  %-28s %10s %12s %14s\n", k.c_str(), with_commas(t.modules).c_str(),
                    with_commas(t.functions).c_str(), with_commas(t.instructions).c_str());
      out += line;
    }
    for (const auto& [k, t] : by_reason) {
      std::snprintf(line, sizeof line, "    reason %-19.40s %10s %12s %14s\n", k.c_str(),
                    with_commas(t.modules).c_str(), with_commas(t.functions).c_str(),
                    with_commas(t.instructions).c_str());
      out += line;
    }
    out += "\n";
  }
  StampTally st = tally_stamp(all);
  std::snprintf(
      line, sizeof line,
      "stamp per function: %s of %s functions (%.1f%%) and %s of %s instructions (%.1f%%) compiled by stamp\n",
      with_commas(st.functions_stamp).c_str(), with_commas(st.functions_stamp + st.functions_fallback).c_str(),
      share(st.functions_stamp, st.functions_stamp + st.functions_fallback), with_commas(st.instructions_stamp).c_str(),
      with_commas(st.instructions_stamp + st.instructions_fallback).c_str(),
      share(st.instructions_stamp, st.instructions_stamp + st.instructions_fallback));
  out += line;
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> reasons(st.first_reason.begin(),
                                                                             st.first_reason.end());
  std::sort(reasons.begin(), reasons.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
  std::snprintf(line, sizeof line, "  %-44s %10s %14s\n", "fallback, by first reason", "functions", "instructions");
  out += line;
  for (const auto& [r, n] : reasons) {
    std::snprintf(line, sizeof line, "  %-44.44s %10s %14s\n", r.c_str(), with_commas(n.first).c_str(),
                  with_commas(n.second).c_str());
    out += line;
  }
  out += "\n" + reader_summary_table(all) + "\n";
  std::vector<std::pair<std::string, uint64_t>> sorted(opcodes.begin(), opcodes.end());
  std::sort(sorted.begin(), sorted.end(),
            [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  out += "opcodes\n";
  for (const auto& [k, v] : sorted) {
    std::snprintf(line, sizeof line, "  %-16s %12s %6.2f%%\n", k.c_str(), with_commas(v).c_str(),
                  total.instructions ? 100.0 * static_cast<double>(v) / static_cast<double>(total.instructions) : 0.0);
    out += line;
  }
  return out;
}

std::string census_summary_json(const std::vector<ModuleCensus>& all) {
  JsonWriter w;
  w.begin_object().field("schema", "kiln-census-summary").field("v", kCensusSchemaVersion);
  Tally total;
  std::map<std::string, uint64_t> opcodes;
  std::map<std::string, std::map<std::string, Tally>> verdicts, reasons;
  for (const auto& c : all) {
    tally(total, c.facts);
    for (const auto& [k, v] : c.facts.opcodes) opcodes[k] += v;
    for (const auto& v : c.verdicts) {
      tally(verdicts[v.backend][v.verdict], c.facts);
      if (!v.reasons.empty()) tally(reasons[v.backend][first_reason_key(v)], c.facts);
    }
  }
  w.field("modules", total.modules).field("functions", total.functions).field("instructions", total.instructions);
  write_count_map(w, "opcodes", opcodes);
  auto write_tallies = [&](const char* key, std::map<std::string, std::map<std::string, Tally>>& m) {
    w.key(key).begin_object();
    for (auto& [backend, inner] : m) {
      w.key(backend).begin_object();
      for (auto& [k, t] : inner)
        w.key(k)
            .begin_object()
            .field("modules", t.modules)
            .field("functions", t.functions)
            .field("instructions", t.instructions)
            .end_object();
      w.end_object();
    }
    w.end_object();
  };
  write_tallies("verdicts", verdicts);
  write_tallies("first_reasons", reasons);
  StampTally st = tally_stamp(all);
  w.key("stamp_functions")
      .begin_object()
      .field("functions_stamp", st.functions_stamp)
      .field("functions_fallback", st.functions_fallback)
      .field("instructions_stamp", st.instructions_stamp)
      .field("instructions_fallback", st.instructions_fallback);
  auto write_reasons = [&](const char* key, const std::map<std::string, std::pair<uint64_t, uint64_t>>& m) {
    w.key(key).begin_object();
    for (const auto& [r, n] : m)
      w.key(r).begin_object().field("functions", n.first).field("instructions", n.second).end_object();
    w.end_object();
  };
  write_reasons("first_reasons", st.first_reason);
  write_reasons("reasons", st.any_reason);
  w.end_object();
  ReaderTally rt = tally_reader(all);
  w.key("reader")
      .begin_object()
      .field("modules", rt.modules)
      .field("modules_read", rt.modules_read)
      .field("modules_direct", rt.modules_direct)
      .field("functions", rt.functions)
      .field("functions_read", rt.functions_read);
  // An array, not an object: it keeps the order, most modules first.
  w.key("reasons").begin_array();
  for (const auto& [r, n] : rt.reasons) w.begin_object().field("reason", r).field("modules", n).end_object();
  w.end_array().end_object();
  w.end_object();
  return w.str();
}

static std::string reader_line(const ReaderRecord& r) {
  if (r.direct) return "direct (read whole: stamp emits it without llvm)";
  std::string out = (r.read ? "read, not direct: " : "not read: ") + r.reason;
  if (r.functions_declined) out += " (" + std::to_string(r.functions_declined) + " functions declined)";
  return out;
}

std::string census_explain(const ModuleCensus& c) {
  const ModuleFacts& f = c.facts;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "module %s\n  input %s\n  crate %s\n  triple %s, %s bytes\n", c.id.c_str(),
                c.label.c_str(), c.crate.c_str(), f.triple.c_str(), with_commas(f.bytes).c_str());
  out += line;
  std::snprintf(
      line, sizeof line,
      "  functions: %llu defined, %llu declared; %llu blocks; %llu instructions\n"
      "  globals: %llu (%llu initialised), aliases %llu, comdats %llu, thread-local %llu\n"
      "  exceptions: %llu invokes, %llu landingpads; inline asm: %llu calls, %llu bytes module asm\n"
      "  vectors: %llu instructions; atomics: %llu; debug info: %s (%llu located instructions, %llu records)\n",
      (unsigned long long)f.functions_defined, (unsigned long long)f.functions_declared, (unsigned long long)f.blocks,
      (unsigned long long)f.instructions, (unsigned long long)f.globals, (unsigned long long)f.globals_with_initializer,
      (unsigned long long)f.aliases, (unsigned long long)f.comdats, (unsigned long long)f.tls_globals,
      (unsigned long long)f.invokes, (unsigned long long)f.landingpads, (unsigned long long)f.inline_asm_calls,
      (unsigned long long)f.module_asm_bytes, (unsigned long long)f.vector_instructions,
      (unsigned long long)f.atomic_instructions, f.debug_info ? "yes" : "no",
      (unsigned long long)f.instructions_with_debug_location, (unsigned long long)f.debug_records);
  out += line;
  out += "  opcodes:";
  for (const auto& [k, v] : f.opcodes) out += " " + k + "=" + std::to_string(v);
  out += "\n  intrinsics:";
  for (const auto& [k, v] : f.intrinsics) out += " " + k + "=" + std::to_string(v);
  out += "\n";
  for (const auto& v : c.verdicts) {
    out += "  " + v.backend + ": " + v.verdict;
    if (v.backend == "stamp")
      out += " (" + std::to_string(v.functions_stamp) + " functions by stamp, " + std::to_string(v.functions_fallback) +
          " fall back to llvm)";
    out += "\n";
    for (const auto& r : v.reasons) out += "    - " + r + "\n";
  }
  out += "  reader: " + reader_line(c.reader) + "\n";
  if (!c.selection.empty()) out += "  selection: " + c.selection + "\n";
  if (f.debug_info)
    out +=
        "  note: stamp's functions carry line tables, subprograms, inlined calls, blocks, variables in memory, global "
        "variables and their types; not yet static members, variables without an address "
        "(#dbg_value) or subprograms' types\n";
  for (const auto& fn : c.function_verdicts) {
    if (fn.reasons.empty()) continue;
    out += "  fallback " + fn.name + " (" + std::to_string(fn.instructions) + " instructions):";
    for (const auto& r : fn.reasons) out += " [" + r + "]";
    out += "\n";
  }
  return out;
}

}  // namespace kiln
