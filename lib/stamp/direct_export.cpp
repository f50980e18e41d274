// The direct exporter: lib/flat_export.cpp's decisions, one for one, over the reader's
// BcModule instead of LLVM's IR. Where LLVM's in-memory IR differs from the bitcode's
// records (uniqued constants, the loads materialize_aggregate_constants adds, the
// renaming of local symbols), the differences are reproduced here; where this file
// cannot be sure to say what LLVM's exporter says, it declines the function or the
// module with a "reader: ..." reason instead of guessing.
#include "direct_export.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "bitcode_ir.h"
#include "bitcode_layout.h"
#include "codegen_requests.h"
#include "error.h"
#include "timeutil.h"
#include "vector_abi.h"

namespace kiln {

namespace {

using namespace bc;

// Thrown inside the exporter when the reader cannot reproduce LLVM's answer: it
// declines the function (or, from module-wide code, the module).
struct Decline {
  std::string why;
};

// The classes of LLVM's in-memory values that the exporter tells apart (with
// llvm::Value's ids where its reasons print them).
enum class Class : uint8_t {
  kGlobal,
  kArgument,
  kInstruction,
  kMetadata,
  kInt,      // ConstantInt (scalar)
  kFP,       // ConstantFP (scalar)
  kNullPtr,  // ConstantPointerNull
  kZero,     // ConstantAggregateZero
  kUndef,    // UndefValue and PoisonValue
  kDataSeq,  // ConstantDataArray / ConstantDataVector
  kStruct,   // ConstantStruct
  kArray,    // ConstantArray
  kVector,   // ConstantVector
  kExpr,     // ConstantExpr
  kOtherConstant,
};

// llvm::Value::ValueTy of the constants the exporter's "constant kind N" reasons name.
constexpr int kValueIdCda = 3, kValueIdCdv = 4, kValueIdTargetNone = 7, kValueIdTokenNone = 9, kValueIdVector = 12,
              kValueIdBlockAddress = 17, kValueIdDsoLocalEquivalent = 19, kValueIdNoCfi = 20, kValueIdPtrAuth = 21,
              kValueIdInlineAsm = 25;

// Bitcode cast and binary operator codes (LLVMBitCodes.h).
enum : uint32_t {
  kCastTrunc = 0,
  kCastZExt = 1,
  kCastSExt = 2,
  kCastPtrToInt = 9,
  kCastIntToPtr = 10,
  kCastBitCast = 11,
  kCastAddrSpaceCast = 12,
};
const char* cast_name(uint32_t code) {
  static const char* kNames[] = {"trunc",   "zext",  "sext",     "fptoui",   "fptosi",  "uitofp",        "sitofp",
                                 "fptrunc", "fpext", "ptrtoint", "inttoptr", "bitcast", "addrspacecast", "ptrtoaddr"};
  return code < sizeof(kNames) / sizeof(kNames[0]) ? kNames[code] : nullptr;
}
const char* binop_name(uint32_t code, bool fp) {
  static const char* kInt[] = {"add", "sub",  "mul",  "udiv", "sdiv", "urem", "srem",
                               "shl", "lshr", "ashr", "and",  "or",   "xor"};
  static const char* kFp[] = {"fadd", "fsub", "fmul", nullptr, "fdiv", nullptr, "frem"};
  if (fp) return code < 7 ? kFp[code] : nullptr;
  return code < 13 ? kInt[code] : nullptr;
}

// One global value as the exporter sees it: the module's, then the constant globals
// materialize_aggregate_constants adds; names, linkage and visibility change when
// local symbols are exposed.
// Its name and section are views: of the reader's strings (BcModule::globals, which no
// global is added to after the first body) until renamed or made by the exporter, then
// of ModuleContext::names. Copying every global's name cost more than the rest of the
// module's setup.
struct GlobalInfo {
  GlobalKind kind;
  std::string_view name;
  Linkage linkage;
  Visibility visibility;
  bool declaration, constant, thread_local_, has_comdat;
  uint32_t value_type;
  std::string_view section;
  uint64_t align;
  uint32_t init_fn = kNone, init = kNone;  // initializer: value id in function init_fn's scope
  uint32_t body = kNone;
  uint32_t source = kNone;  // index into BcModule::globals, kNone for a materialized constant
};

bool local_linkage(Linkage l) { return l == Linkage::kInternal || l == Linkage::kPrivate; }
bool reserved_name(std::string_view n) { return n.size() >= 5 && std::memcmp(n.data(), "llvm.", 5) == 0; }

SymbolBinding binding_of(const GlobalInfo& g) {
  if (local_linkage(g.linkage)) return SymbolBinding::local;
  switch (g.linkage) {
    case Linkage::kWeakAny:
    case Linkage::kWeakOdr:
    case Linkage::kLinkOnceAny:
    case Linkage::kLinkOnceOdr:
    case Linkage::kExternalWeak:
      return SymbolBinding::weak;
    default:
      return SymbolBinding::global;
  }
}
SymbolVisibility visibility_of(const GlobalInfo& g) {
  if (g.visibility == Visibility::kHidden) return SymbolVisibility::hidden;
  if (g.visibility == Visibility::kProtected) return SymbolVisibility::protected_;
  return SymbolVisibility::default_;
}

uint32_t round8(uint64_t n) { return static_cast<uint32_t>((n + 7) / 8 * 8); }

// flat_debug.h's intern_debug_record (equal records are one; the number is 1 + the
// index) through a hash of each record: a body's own metadata is read again for each
// body, so its callees, scopes and sites come back to be interned once per function,
// and a scan of all the module's records each time would grow with their square.
// Open addressing over (hash, number) pairs: a multimap's node per record cost an
// allocation and a free. Records are never equal to one another, so the first equal one
// found is the one.
template <class T, class Hash>
class HashedRecords {
 public:
  uint32_t intern(std::vector<T>& records, T&& r) {
    const size_t h = Hash{}(r);
    if (2 * (count_ + 1) > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    for (; slots_[i].number; i = (i + 1) & mask)
      if (slots_[i].hash == h && records[slots_[i].number - 1] == r) return slots_[i].number;
    records.push_back(std::move(r));
    slots_[i] = {h, uint32_t(records.size())};
    ++count_;
    return uint32_t(records.size());
  }

 private:
  struct Slot {
    size_t hash = 0;
    uint32_t number = 0;  // 1 + the record's index, 0 for an empty slot
  };
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (!s.number) continue;
      size_t i = s.hash & mask;
      while (slots_[i].number) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

inline size_t hash_mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }
struct HashScope {
  size_t operator()(const FlatDebugScope& s) const {
    return hash_mix(hash_mix(s.parent, s.tag), std::hash<std::string>{}(s.name));
  }
};
struct HashFunction {
  size_t operator()(const FlatDebugFunction& f) const {
    size_t h = hash_mix(hash_mix(f.scope, f.file), hash_mix(f.line, f.scope_line));
    h = hash_mix(h, f.has_subprogram + 2 * f.local_to_unit + 4 * f.main_subprogram);
    return hash_mix(hash_mix(h, std::hash<std::string>{}(f.name)), std::hash<std::string>{}(f.linkage_name));
  }
};

// A set of at most n keys, made for each function: open addressing in an array kept
// from function to function, so that no key costs an allocation.
class SeenKeys {
 public:
  void reset(size_t n) {
    bits_ = 4;
    while ((size_t(1) << bits_) < 2 * n) ++bits_;
    slots_.assign(size_t(1) << bits_, 0);
  }
  // False when `key` is in the set already.
  bool insert(uint64_t key) {
    const uint64_t stored = key + 1;  // 0 marks an empty slot
    const size_t mask = slots_.size() - 1;
    // Fibonacci hashing: the product's top bits mix the variable's and the site's.
    for (size_t i = size_t((key * 0x9e3779b97f4a7c15ull) >> (64 - bits_));; i = (i + 1) & mask) {
      if (slots_[i] == stored) return false;
      if (slots_[i] == 0) return slots_[i] = stored, true;
    }
  }

 private:
  std::vector<uint64_t> slots_;
  unsigned bits_ = 4;
};

// The reader's debug numbering (BcDebug) turned into FlatDebugInfo's as the stamp
// functions are committed, in flat_debug.h's order. FlatDebugInfo interns files, scopes
// and subprograms by value, and sites, blocks and types by node (one reader number each),
// so a reader entry's flat number, once found, holds for the rest of the module: each
// is kept, and what it interned is not walked again.
class DebugInterner {
 public:
  explicit DebugInterner(bc::BcDebug& in) : in_(in) {}

  // A stamp function's subprogram, then its flat instructions' locations (each its file,
  // site and block, in that order), then its variables. `inst_flat`: the flat index of
  // each of the body's instructions; `fn`: the flat function.
  void function(const bc::BcFunction& f, const std::vector<BcDebugLoc>& locs, const std::vector<uint32_t>& inst_flat,
                uint32_t fn, FlatDebugInfo& out) {
    const bc::BcSubprogram& sp = f.subprogram;
    out.functions.push_back(sp.present ? subprogram(sp, out) : FlatDebugFunction{});
    if (sp.present && sp.node) function_of_subprogram_.emplace(sp.node, fn + 1);
    // No reserve() here: reserving each function's exact need would move the module's
    // locations once per function (quadratic); push_back's doubling does not.
    // The last file, inlined site and block, each asked again only when a location's
    // differs: a body's locations mostly share them with the one before, and once an
    // entry is interned, asking for it again returns the same number and changes nothing.
    uint32_t reader = 0, flat = 0;
    uint32_t callee = 0, call = 0, site = 0;
    uint32_t reader_block = 0, flat_block = 0;  // block(0) is 0
    for (const BcDebugLoc& l : locs) {
      if (l.file != reader) reader = l.file, flat = file(l.file, out);
      if (l.call && (l.call != call || l.callee != callee)) call = l.call, callee = l.callee, site = call_site(l, out);
      if (l.block != reader_block) reader_block = l.block, flat_block = block(l.block, out);
      out.locations.push_back({flat, l.line, l.column, l.call ? site : 0, flat_block});
    }
    if (out.emission == DebugEmission::full && sp.present) variables(f, inst_flat, fn, out);
  }

  // Whether flat_debug.h keeps global `g`: a static inside a function only when that
  // function is stamp's (committed before).
  bool keeps(const bc::BcDebugGlobal& g) const { return !g.subprogram || function_of(g); }
  // A global variable, after every function, for the global whose flat symbol is
  // `symbol`: its scope chain, file, then type, the types it reaches run to the
  // queue's end (flat_debug.h).
  void global(const bc::BcDebugGlobal& g, uint32_t symbol, FlatDebugInfo& out) {
    FlatDebugGlobal fg;
    fg.symbol = symbol;
    fg.function = function_of(g);
    if (!fg.function) fg.scope = scope(g.scope, out);
    fg.file = file(g.file, out);
    fg.type = type(g.type, out);
    fill_types(out);
    fg.line = g.line;
    fg.align_bits = g.align_bits;
    fg.local_to_unit = g.local_to_unit;
    fg.name = g.name;
    fg.linkage_name = g.linkage_name;
    out.globals.push_back(std::move(fg));
  }

 private:
  // The body's variables, in the order of their records: each its site, then (unless
  // the same variable at the same site came before) its block, file and type, the
  // types it reaches run to the queue's end.
  void variables(const bc::BcFunction& f, const std::vector<uint32_t>& inst_flat, uint32_t fn, FlatDebugInfo& out) {
    seen_.reset(f.debug_vars.size());
    for (const bc::BcDebugVariable& r : f.debug_vars) {
      FlatDebugVariable v;
      v.function = fn;
      v.storage_kind = r.storage_kind;
      v.storage = r.storage;
      if (r.storage_kind == kDebugStorageAlloca) {
        if (r.storage >= inst_flat.size()) throw Decline{"reader: debug variable's alloca out of range"};
        v.storage = inst_flat[r.storage];
      }
      if (r.call) v.inline_site = site(r.callee, r.call, out);
      if (!seen_.insert(uint64_t(r.variable) << 32 | v.inline_site)) continue;
      v.block = block(r.block, out);
      v.file = file(r.file, out);
      v.line = r.line;
      v.arg = r.arg;
      v.flags = r.flags;
      v.name = r.name;
      v.expression = r.expression;
      v.type = type(r.type, out);
      fill_types(out);
      out.variables.push_back(std::move(v));
    }
  }

  // A type node's flat entry: appended unfilled when first named (flat_debug.h's queue).
  uint32_t type(uint32_t reader, FlatDebugInfo& out) {
    if (!reader) return 0;
    uint32_t& flat = slot(types_, reader, in_.types.size());
    if (!flat) {
      out.types.emplace_back();
      type_queue_.push_back(reader);
      flat = uint32_t(out.types.size());
    }
    return flat;
  }

  // The queue's entries filled in index order, each interning its scope (or the type
  // it is declared in), its file, its type, a pointer to member's class, its
  // discriminator, then its elements. A reader entry is filled into one flat entry, the
  // only one it has: it gives its name and its elements up, renumbered in place, where
  // copying them cost an allocation each.
  void fill_types(FlatDebugInfo& out) {
    while (types_filled_ < out.types.size()) {
      FlatDebugType& in = in_.types[type_queue_[types_filled_] - 1];
      FlatDebugType t;  // filled aside: filling appends to out.types
      t.tag = in.tag;
      t.encoding = in.encoding;
      t.flags = in.flags;
      t.line = in.line;
      t.align_bits = in.align_bits;
      t.size_bits = in.size_bits;
      t.offset_bits = in.offset_bits;
      t.value = in.value;
      t.name = std::move(in.name);
      if (in.parent_type) t.parent_type = type(in.parent_type, out);
      else t.scope = scope(in.scope, out);
      t.file = file(in.file, out);
      t.type = type(in.type, out);
      t.containing_type = type(in.containing_type, out);
      t.discriminator = type(in.discriminator, out);
      t.elements = std::move(in.elements);
      for (uint32_t& e : t.elements) e = type(e, out);
      out.types[types_filled_++] = std::move(t);
    }
  }

  // A block after the one it is in, then its file: one entry per DILexicalBlock node,
  // which is one reader number (a body's own nodes are new numbers in each body).
  uint32_t block(uint32_t reader, FlatDebugInfo& out) {
    if (!reader) return 0;
    if (uint32_t flat = slot(blocks_, reader, in_.blocks.size())) return flat;
    const bc::BcDebugBlock& b = in_.blocks[reader - 1];
    FlatDebugBlock fb;
    fb.parent = block(b.parent, out);
    fb.file = file(b.file, out);
    fb.line = b.line;
    fb.column = b.column;
    out.blocks.push_back(fb);
    return slot(blocks_, reader, in_.blocks.size()) = uint32_t(out.blocks.size());
  }

  // The site of an inlined location: of its own callee (its scope's subprogram) at its
  // inlinedAt, as LLVM's exporter finds it.
  uint32_t call_site(const BcDebugLoc& l, FlatDebugInfo& out) { return site(l.callee, l.call, out); }

  // The site of a call to `callee` (BcDebug::subprograms) at `call` (BcDebug::calls):
  // its parent site, the callee, the call's file, its block, then the site itself, one
  // per pair of nodes (each a reader number; a body's own are new numbers in each body).
  uint32_t site(uint32_t callee, uint32_t call, FlatDebugInfo& out) {
    const bc::BcInlineCall& c = in_.calls.at(call - 1);
    if (call_sites_.size() < in_.calls.size()) call_sites_.resize(in_.calls.size());
    CallSite& first = call_sites_[call - 1];
    if (first.flat && first.callee == callee) return first.flat;
    const uint64_t key = uint64_t(callee) << 32 | call;
    if (first.flat)
      if (auto it = sites_.find(key); it != sites_.end()) return it->second;
    FlatDebugInlineSite s;
    if (c.outer) s.parent = site(c.caller, c.outer, out);
    s.callee = inlined(callee, out);
    s.call_file = file(c.file, out);
    s.call_line = c.line;
    s.call_column = c.column;
    s.block = block(c.block, out);
    out.inline_sites.push_back(s);
    const uint32_t flat = uint32_t(out.inline_sites.size());
    if (!first_site(call, callee, flat)) sites_.emplace(key, flat);
    return flat;
  }

  // Keeps `flat` as the first site at `call` (its callee `callee`) unless there is one:
  // false then. The slot is found again: making the site may have grown call_sites_.
  bool first_site(uint32_t call, uint32_t callee, uint32_t flat) {
    CallSite& first = call_sites_[call - 1];
    if (first.flat) return false;
    first = {callee, flat};
    return true;
  }

  uint32_t inlined(uint32_t reader, FlatDebugInfo& out) {
    if (!reader) return 0;
    uint32_t& flat = slot(inlined_, reader, in_.subprograms.size());
    if (!flat) flat = inlined_index_.intern(out.inlined, subprogram(in_.subprograms[reader - 1], out));
    return flat;
  }

  // A subprogram: its scope chain, then its file, then its return type (read at full
  // emission only) with the types that one reaches.
  FlatDebugFunction subprogram(const bc::BcSubprogram& sp, FlatDebugInfo& out) {
    FlatDebugFunction fd;
    fd.has_subprogram = true;
    fd.local_to_unit = sp.local_to_unit;
    fd.main_subprogram = sp.main_subprogram;
    fd.prototyped = sp.prototyped;
    fd.scope = scope(sp.scope, out);
    fd.file = file(sp.file, out);
    fd.type = type(sp.type, out);
    fill_types(out);
    fd.line = sp.line;
    fd.scope_line = sp.scope_line;
    fd.name = sp.name;
    fd.linkage_name = sp.linkage_name;
    return fd;
  }

  // A scope after the one it is in (outermost first).
  uint32_t scope(uint32_t reader, FlatDebugInfo& out) {
    if (!reader) return 0;
    if (uint32_t flat = slot(scopes_, reader, in_.scopes.size())) return flat;
    const bc::BcDebugScope& s = in_.scopes[reader - 1];
    const uint32_t parent = scope(s.parent, out);
    return slot(scopes_, reader, in_.scopes.size()) =
               scopes_index_.intern(out.scopes, {parent, s.tag, std::string(s.name)});
  }

  uint32_t file(uint32_t reader, FlatDebugInfo& out) {
    if (!reader) return 0;
    uint32_t& flat = slot(files_, reader, in_.files.size());
    if (!flat) flat = intern_debug_file(out.files, in_.files[reader - 1]);
    return flat;
  }

  // The flat number kept for a reader number (0: none yet); the reader's arrays grow
  // from body to body.
  static uint32_t& slot(std::vector<uint32_t>& flat, uint32_t reader, size_t reader_count) {
    if (reader > reader_count) throw Decline{"reader: debug entry out of range"};
    if (flat.size() < reader) flat.resize(reader_count);
    return flat[reader - 1];
  }

  uint32_t function_of(const bc::BcDebugGlobal& g) const {
    auto it = g.subprogram ? function_of_subprogram_.find(g.subprogram) : function_of_subprogram_.end();
    return it == function_of_subprogram_.end() ? 0 : it->second;
  }

  bc::BcDebug& in_;  // its types' names and elements are moved out as they are filled
  // Per stamp function's subprogram (BcSubprogram::node): 1 + its flat function.
  std::unordered_map<uint32_t, uint32_t> function_of_subprogram_;
  // Per reader number - 1: the flat one, 0 for none yet.
  std::vector<uint32_t> files_, scopes_, inlined_, blocks_, types_;
  // Per call (reader number - 1): the first callee's flat site there, 0 for none yet; a
  // call seldom has another, which sites_ keeps (a hash lookup per location cost more
  // than the rest of the site).
  struct CallSite {
    uint32_t callee = 0, flat = 0;
  };
  std::vector<CallSite> call_sites_;
  std::unordered_map<uint64_t, uint32_t> sites_;  // (callee, call) -> flat site, after the first
  std::vector<uint32_t> type_queue_;              // per flat type: its reader number
  size_t types_filled_ = 0;
  SeenKeys seen_;  // a function's (variable, flat site) pairs
  HashedRecords<FlatDebugFunction, HashFunction> inlined_index_;
  HashedRecords<FlatDebugScope, HashScope> scopes_index_;
};

// The module with the exporter's questions about types and constants.
class ModuleContext {
 public:
  // `reader_debug` is m's, whose types the interner moves from (DebugInterner::fill_types).
  ModuleContext(const BcModule& m, bc::BcDebug& reader_debug, const Layout& dl) : m(m), dl(dl), debug(reader_debug) {}
  const BcModule& m;
  const Layout& dl;
  std::vector<GlobalInfo> globals;
  // The names (and sections) of globals that the reader's strings do not hold: renamed
  // ones and materialized constants (a deque: its strings stay where they are).
  std::deque<std::string> names;
  std::string_view keep(std::string s) { return names.emplace_back(std::move(s)); }
  // The module's functions named like the C library functions stamp calls (memcpy,
  // memmove, memset, _Unwind_Resume): LLVM's exporter calls the module's when there is one.
  std::unordered_map<std::string, uint32_t> library_functions;
  // What the exporter asks of a type for nearly every operand, once per type id.
  struct TypeFacts {
    TypeKind kind;
    uint8_t scalar_width;   // scalar_width of lib/flat_export.cpp
    uint8_t operand_width;  // operand_width: kWideBits for i128
  };
  mutable std::vector<TypeFacts> facts_;
  mutable std::vector<int8_t> plain_;    // is_plain_aggregate per type id (-1: not yet known)
  mutable std::vector<int8_t> plain_wide_;  // the same with i128 leaves allowed
  mutable std::vector<int8_t> intrinsics_;  // intrinsic_of per global (-1: not yet known)
  bool has_vector_types = true;    // a vector type in the table (else no value is one)
  // Whether a module-level value (a global or a module constant) is a vector, or an i128:
  // with none, and none among a body's own values, no operand of the body can be one.
  bool module_vector_values = true, module_wide_values = true;
  // Whether any of `values` has a type that `pred` accepts.
  template <typename Pred>
  bool any_value_type(const ValueRef* values, size_t count, Pred&& pred) const {
    for (size_t i = 0; i < count; ++i)
      if (values[i].type != kNone && pred(facts(values[i].type))) return true;
    return false;
  }
  static bool vector_facts(const TypeFacts& f) { return bc::is_vector(f.kind); }
  static bool wide_facts(const TypeFacts& f) { return f.operand_width == kWideBits; }
  bool has_aggregate_data = true;  // an aggregate or data constant (else nothing to materialize)
  DebugInterner debug;

  const Type& type(uint32_t t) const {
    if (t >= m.types.size()) throw Decline{"reader: type out of range"};
    return m.types[t];
  }
  // One comparison on the way: a type once read does not change, so the facts of the
  // first facts_count_ types hold while the table grows.
  [[gnu::always_inline]] const TypeFacts& facts(uint32_t t) const {
    if (t >= facts_count_) [[unlikely]]
      return facts_slow(t);
    return facts_[t];
  }
  [[gnu::noinline]] const TypeFacts& facts_slow(uint32_t t) const {
    if (facts_.size() != m.types.size()) compute_facts();
    if (t >= facts_.size()) type_out_of_range();
    return facts_[t];
  }
  [[noreturn, gnu::noinline]] static void type_out_of_range() { throw Decline{"reader: type out of range"}; }
  // Per module value id: whether it is an i128, or one that touches_i128 would fail on
  // (none, forward, a type out of range); made once per module (its values are all
  // read before the first body).
  const uint8_t* module_i128() const {
    if (module_i128_.size() != m.module_value_count) {
      const TypeFacts* f = all_facts();
      module_i128_.resize(m.module_value_count);
      for (uint32_t id = 0; id < m.module_value_count; ++id) {
        const ValueRef* r = id < m.values.size() ? &m.values[id] : nullptr;
        module_i128_[id] =
            !r || r->kind == ValueKind::kForward || r->type >= m.types.size() || f[r->type].operand_width == kWideBits;
      }
    }
    return module_i128_.data();
  }
  mutable std::vector<uint8_t> module_i128_;
  // The facts of every type in the table, for a loop that reads them in place.
  const TypeFacts* all_facts() const {
    if (facts_count_ != m.types.size()) compute_facts();
    return facts_.data();
  }
  mutable uint32_t facts_count_ = 0;
  [[gnu::noinline]] void compute_facts() const {
    facts_count_ = 0;
    facts_.resize(m.types.size());
    for (uint32_t i = 0; i < m.types.size(); ++i) {
      const Type& ty = m.types[i];
      unsigned w = compute_scalar_width(i);
      bool wide = ty.kind == TypeKind::kInteger && ty.width == kWideBits;
      facts_[i] = {ty.kind, static_cast<uint8_t>(w), static_cast<uint8_t>(wide ? kWideBits : w)};
    }
    facts_count_ = static_cast<uint32_t>(facts_.size());
  }
  [[gnu::always_inline]] TypeKind kind(uint32_t t) const { return facts(t).kind; }
  bool is_float(uint32_t t) const { return is_floating_point(kind(t)); }
  // is_float_or_double of lib/flat_export.cpp: the types stamp computes on.
  bool is_float_or_double(uint32_t t) const {
    TypeKind k = kind(t);
    return k == TypeKind::kFloat || k == TypeKind::kDouble;
  }
  bool is_vector(uint32_t t) const { return bc::is_vector(kind(t)); }
  bool is_integer(uint32_t t) const { return kind(t) == TypeKind::kInteger; }
  bool is_pointer(uint32_t t) const { return kind(t) == TypeKind::kPointer; }
  bool is_void(uint32_t t) const { return kind(t) == TypeKind::kVoid; }

  unsigned scalar_width(uint32_t t) const { return facts(t).scalar_width; }
  unsigned compute_scalar_width(uint32_t t) const {
    const Type& ty = type(t);
    switch (ty.kind) {
      case TypeKind::kPointer:
        return ty.address_space == 0 ? 64 : 0;
      case TypeKind::kInteger:
        return (ty.width == 1 || (ty.width % 8 == 0 && ty.width <= 64)) ? ty.width : 0;
      case TypeKind::kFloat:
        return 32;
      case TypeKind::kDouble:
        return 64;
      default:
        return 0;
    }
  }
  bool is_int_like(uint32_t t) const {
    const TypeFacts& f = facts(t);
    return (f.kind == TypeKind::kInteger || f.kind == TypeKind::kPointer) && f.scalar_width != 0;
  }
  bool is_i128(uint32_t t) const { return facts(t).operand_width == kWideBits; }
  // operand_width of lib/flat_export.cpp.
  unsigned operand_width(uint32_t t) const { return facts(t).operand_width; }

  // is_plain_aggregate of lib/flat_export.cpp (wide_leaves: i128 leaves too).
  bool is_plain_aggregate(uint32_t t, bool wide_leaves = false) const {
    std::vector<int8_t>& cache = wide_leaves ? plain_wide_ : plain_;
    // A type once read does not change: an answer kept holds while the table grows.
    if (t < cache.size() && cache[t] >= 0) return cache[t] > 0;
    if (cache.size() != m.types.size()) cache.assign(m.types.size(), -1);
    if (t >= cache.size()) throw Decline{"reader: type out of range"};
    if (cache[t] < 0) {
      cache[t] = 0;  // a type met again while it is being decided is not plain
      cache[t] = compute_plain_aggregate(t, wide_leaves) ? 1 : 0;
    }
    return cache[t] > 0;
  }
  bool compute_plain_aggregate(uint32_t t, bool wide_leaves) const {
    const Type& ty = type(t);
    auto leaf = [&](uint32_t e) { return scalar_width(e) || (wide_leaves && is_i128(e)) || is_plain_aggregate(e, wide_leaves); };
    if (ty.kind == TypeKind::kStruct) {
      if (ty.opaque || ty.packed) return false;
      for (uint32_t e : ty.elements)
        if (!leaf(e)) return false;
      return true;
    }
    if (ty.kind == TypeKind::kArray) return leaf(ty.elements.at(0));
    if (ty.kind == TypeKind::kFixedVector) {
      uint32_t e = ty.elements.at(0);
      return scalar_width(e) >= 8 && (is_integer(e) || is_pointer(e) || is_float(e));
    }
    return false;
  }

  // is_scalar_pair of lib/flat_export.cpp, once per type: a call's return type is asked
  // at every call of it.
  bool is_scalar_pair(uint32_t t, unsigned* w0, unsigned* w1, uint64_t* off1, unsigned* float_leaves) const {
    if (scalar_pairs_.size() != m.types.size()) scalar_pairs_.assign(m.types.size(), ScalarPair{});
    if (t >= scalar_pairs_.size()) return compute_scalar_pair(t, w0, w1, off1, float_leaves);
    ScalarPair& p = scalar_pairs_[t];
    if (p.known == 0) {
      unsigned a = 0, b = 0, floats = 0;
      uint64_t offset = 0;
      p.pair = compute_scalar_pair(t, &a, &b, &offset, &floats);
      p = {1, p.pair, static_cast<uint8_t>(a), static_cast<uint8_t>(b), static_cast<uint8_t>(floats), offset};
    }
    if (!p.pair) return false;
    *w0 = p.w0, *w1 = p.w1, *off1 = p.off1, *float_leaves = p.floats;
    return true;
  }
  struct ScalarPair {
    uint8_t known = 0;
    bool pair = false;
    uint8_t w0 = 0, w1 = 0, floats = 0;
    uint64_t off1 = 0;
  };
  mutable std::vector<ScalarPair> scalar_pairs_;  // per type id
  bool compute_scalar_pair(uint32_t t, unsigned* w0, unsigned* w1, uint64_t* off1, unsigned* float_leaves) const {
    if (!is_plain_aggregate(t)) return false;
    std::vector<std::pair<unsigned, uint64_t>> leaves;
    unsigned floats = 0;
    bool ok = true;
    std::function<void(uint32_t, uint64_t)> walk = [&](uint32_t x, uint64_t base) {
      const Type& ty = type(x);
      if (ty.kind == TypeKind::kStruct) {
        for (uint32_t i = 0; i < ty.elements.size(); ++i) walk(ty.elements[i], base + dl.field_offset(m, x, i));
      } else if (ty.kind == TypeKind::kArray) {
        for (uint64_t i = 0; i < ty.count && ok && leaves.size() <= 2; ++i)
          walk(ty.elements[0], base + i * dl.alloc_size(m, ty.elements[0]));
      } else if (is_int_like(x) || is_float_or_double(x)) {
        if (is_float_or_double(x) && leaves.size() < 2) floats |= 1u << leaves.size();
        leaves.push_back({scalar_width(x), base});
      } else {
        ok = false;
      }
    };
    walk(t, 0);
    if (!ok || leaves.size() != 2 || leaves[0].second != 0) return false;
    *w0 = leaves[0].first;
    *w1 = leaves[1].first;
    *off1 = leaves[1].second;
    *float_leaves = floats;
    return true;
  }

  // intrinsic_of a function's name, once per function.
  Intrinsic intrinsic(uint32_t global) const {
    if (intrinsics_.size() < globals.size()) intrinsics_.resize(globals.size(), -1);
    if (intrinsics_[global] < 0) intrinsics_[global] = static_cast<int8_t>(intrinsic_of(globals[global].name));
    return static_cast<Intrinsic>(intrinsics_[global]);
  }

  std::string type_name(uint32_t t) const {
    std::string s = bc::type_name(m, t);
    if (s.size() > 40) s = s.substr(0, 40) + "...";
    return s;
  }

  // --- Values in the scope of function `fn` (kNone: module scope).
  [[gnu::always_inline]] const ValueRef& ref(uint32_t fn, uint32_t id) const {
    // The body being exported asks most: its values without the functions' array.
    // Below the body's first id, `local` wraps past every count.
    if (const uint32_t local = id - current_first_id_; fn == current_fn_ && local < current_values_size_) {
      const ValueRef& r = current_values_[local];
      if (r.kind != ValueKind::kForward) [[likely]]
        return r;
    }
    return ref_slow(fn, id);
  }
  // Set while function `fn`'s body is exported (its values do not move then).
  void set_current_function(uint32_t fn) {
    current_fn_ = fn;
    current_values_ = fn == kNone ? nullptr : m.functions[fn].values.data();
    current_values_size_ = fn == kNone ? 0 : m.functions[fn].values.size();
    current_first_id_ = m.module_value_count;
    if (current_first_id_ + uint64_t(current_values_size_) > UINT32_MAX) current_values_size_ = 0;  // ids are 32-bit
  }
  uint32_t current_fn_ = kNone;
  const ValueRef* current_values_ = nullptr;
  size_t current_values_size_ = 0;
  uint32_t current_first_id_ = 0;  // the body's first value id (module_value_count)
  const ValueRef& ref_slow(uint32_t fn, uint32_t id) const {
    const ValueRef* r = nullptr;
    if (id < m.module_value_count) r = &m.values[id];
    else if (fn != kNone && id != kMetadataOperand && id - m.module_value_count < m.functions[fn].values.size())
      r = &m.functions[fn].values[id - m.module_value_count];
    if (!r || r->kind == ValueKind::kForward) bad_value(fn, id);
    return *r;
  }
  [[noreturn]] void bad_value(uint32_t fn, uint32_t id) const {
    if (id == kMetadataOperand) throw Decline{"reader: metadata operand"};
    if (fn == kNone && id >= m.module_value_count) throw Decline{"reader: value out of scope"};
    throw Decline{"reader: value " + std::to_string(id) + " out of range or never defined"};
  }
  uint32_t type_of(uint32_t fn, uint32_t id) const { return ref(fn, id).type; }
  const Constant& constant(uint32_t fn, uint32_t id) const { return m.constants.at(ref(fn, id).index); }

  Class klass(uint32_t fn, uint32_t id, int* value_id = nullptr) const {
    if (id == kMetadataOperand) return Class::kMetadata;
    const ValueRef& r = ref(fn, id);
    switch (r.kind) {
      case ValueKind::kGlobal:
        return Class::kGlobal;
      case ValueKind::kArgument:
        return Class::kArgument;
      case ValueKind::kInstruction:
        return Class::kInstruction;
      default:
        break;
    }
    const Constant& c = m.constants.at(r.index);
    auto other = [&](int vid) {
      if (value_id) *value_id = vid;
      return Class::kOtherConstant;
    };
    switch (c.kind) {
      case ConstKind::kNull:
        if (is_integer(c.type)) return Class::kInt;
        if (is_float(c.type)) return Class::kFP;
        if (is_pointer(c.type)) return Class::kNullPtr;
        if (type(c.type).kind == TypeKind::kToken) return other(kValueIdTokenNone);
        if (type(c.type).kind == TypeKind::kTargetExt) return other(kValueIdTargetNone);
        return Class::kZero;
      case ConstKind::kUndef:
      case ConstKind::kPoison:
        return Class::kUndef;
      case ConstKind::kInteger:
        if (!is_integer(c.type)) throw Decline{"reader: vector splat integer constant"};
        return Class::kInt;
      case ConstKind::kFloat:
        if (!is_float(c.type)) throw Decline{"reader: vector splat floating-point constant"};
        return Class::kFP;
      case ConstKind::kData: {
        bool zero = std::all_of(c.bytes.begin(), c.bytes.end(), [](uint8_t b) { return b == 0; });
        return zero ? Class::kZero : Class::kDataSeq;
      }
      case ConstKind::kAggregate: {
        bool all_null = !c.operands.empty();
        for (uint32_t e : c.operands) all_null = all_null && is_null_value(fn, e);
        if (all_null) return Class::kZero;
        TypeKind k = type(c.type).kind;
        if (k == TypeKind::kStruct) return Class::kStruct;
        if (k == TypeKind::kArray) return Class::kArray;
        return Class::kVector;
      }
      case ConstKind::kCast:
      case ConstKind::kBinary:
      case ConstKind::kGep:
        return Class::kExpr;
      case ConstKind::kBlockAddress:
        return other(kValueIdBlockAddress);
      case ConstKind::kDsoLocalEquivalent:
        return other(kValueIdDsoLocalEquivalent);
      case ConstKind::kNoCfi:
        return other(kValueIdNoCfi);
      case ConstKind::kPtrAuth:
        return other(kValueIdPtrAuth);
      case ConstKind::kInlineAsm:
        return other(kValueIdInlineAsm);
      case ConstKind::kTokenNone:
        return other(kValueIdTokenNone);
      case ConstKind::kTargetNone:
        return other(kValueIdTargetNone);
      case ConstKind::kOther:
        throw Decline{"reader: constant record " + std::to_string(c.opcode)};
    }
    throw Decline{"reader: constant kind"};
  }

  // Constant::isNullValue.
  bool is_null_value(uint32_t fn, uint32_t id) const {
    int vid = -1;
    Class k = klass(fn, id, &vid);
    switch (k) {
      case Class::kInt:
      case Class::kFP: {
        const Constant& c = constant(fn, id);
        return std::all_of(c.words.begin(), c.words.end(), [](uint64_t w) { return w == 0; });
      }
      case Class::kNullPtr:
      case Class::kZero:
        return true;
      case Class::kOtherConstant:
        return vid == kValueIdTokenNone || vid == kValueIdTargetNone;
      default:
        return false;
    }
  }

  // The constant `id` when klass(fn, id) is kInt, else null; it fails where klass does.
  // Most are integer records, told without klass's other questions (the indices of
  // every getelementptr, the count of every alloca).
  const Constant* int_constant(uint32_t fn, uint32_t id) const {
    if (id == kMetadataOperand) return nullptr;
    const ValueRef& r = ref(fn, id);
    if (r.kind != ValueKind::kConstant) return nullptr;
    const Constant& c = m.constants.at(r.index);
    if (c.kind == ConstKind::kInteger && is_integer(c.type)) return &c;
    return klass(fn, id) == Class::kInt ? &c : nullptr;
  }

  // A scalar integer constant's bits, zero-extended (width at most 64).
  uint64_t int_value(uint32_t fn, uint32_t id) const { return int_value(constant(fn, id)); }
  uint64_t int_value(const Constant& c) const {
    uint64_t v = c.words.empty() ? 0 : c.words[0];
    unsigned w = type(c.type).width;
    if (w < 64) v &= (uint64_t(1) << w) - 1;
    return v;
  }
  int64_t int_sext(uint32_t fn, uint32_t id) const { return int_sext(constant(fn, id)); }
  int64_t int_sext(const Constant& c) const {
    uint64_t v = int_value(c);
    unsigned w = type(c.type).width;
    if (w < 64 && w > 0 && (v >> (w - 1)) & 1) v |= ~uint64_t(0) << w;
    return static_cast<int64_t>(v);
  }
  unsigned int_width(uint32_t fn, uint32_t id) const { return type(type_of(fn, id)).width; }
  // APInt::getActiveBits of a ConstantInt.
  unsigned active_bits(const Constant& c) const {
    unsigned w = type(c.type).width;
    for (size_t i = c.words.size(); i-- > 0;) {
      uint64_t word = c.words[i];
      if (i * 64 + 64 > w && w > i * 64 && w - i * 64 < 64) word &= (uint64_t(1) << (w - i * 64)) - 1;
      if (word) return static_cast<unsigned>(i * 64 + 64 - __builtin_clzll(word));
    }
    return 0;
  }

  // Value::stripPointerCasts: bitcasts, address space casts and all-zero GEPs.
  uint32_t strip_pointer_casts(uint32_t fn, uint32_t id) const {
    for (int depth = 0; depth < 64; ++depth) {
      if (klass(fn, id) != Class::kExpr) return id;
      const Constant& c = constant(fn, id);
      if (c.kind == ConstKind::kCast && (c.opcode == kCastBitCast || c.opcode == kCastAddrSpaceCast)) {
        id = c.operands.at(0);
        continue;
      }
      if (c.kind == ConstKind::kGep) {
        bool zero = true;
        for (size_t i = 1; i < c.operands.size(); ++i) zero = zero && is_null_value(fn, c.operands[i]);
        if (zero) {
          id = c.operands.at(0);
          continue;
        }
      }
      return id;
    }
    throw Decline{"reader: constant expressions nested too deep"};
  }

  // GEPOperator::accumulateConstantOffset over a source type and index values: false
  // when an index is not a constant integer. 64-bit wrapping arithmetic, as APInt(64).
  bool accumulate_offset(uint32_t fn, uint32_t source, const uint32_t* indices, size_t count, uint64_t& offset) const {
    uint32_t cur = source;
    for (size_t k = 0; k < count; ++k) {
      const Constant* index = int_constant(fn, indices[k]);
      if (!index) return false;
      if (k > 0 && type(cur).kind == TypeKind::kStruct) {
        uint64_t field = int_value(*index);
        if (field >= type(cur).elements.size()) throw Decline{"reader: struct index out of range"};
        offset += dl.field_offset(m, cur, static_cast<uint32_t>(field));
        cur = type(cur).elements[field];
        continue;
      }
      if (k > 0) {
        if (type(cur).kind != TypeKind::kArray) throw Decline{"reader: getelementptr into a vector"};
        cur = type(cur).elements.at(0);
      }
      offset += static_cast<uint64_t>(int_sext(*index)) * dl.alloc_size(m, cur);
    }
    return true;
  }

  // A structural key of a constant: equal keys for the constants LLVM uniques into one.
  std::string constant_key(uint32_t fn, uint32_t id, int depth = 0) const {
    if (depth > 64) throw Decline{"reader: constants nested too deep"};
    const ValueRef& r = ref(fn, id);
    if (r.kind == ValueKind::kGlobal) return "g" + std::to_string(r.index);
    if (r.kind != ValueKind::kConstant) throw Decline{"reader: constant refers to a non-constant"};
    const Constant& c = m.constants.at(r.index);
    std::string key = "(" + std::to_string(int(klass(fn, id))) + ":" + std::to_string(c.type) + ":" +
        std::to_string(int(c.kind)) + ":" + std::to_string(c.opcode) + ":" + std::to_string(c.flags) + ":" +
        std::to_string(c.source_type);
    for (uint64_t w : c.words) key += "," + std::to_string(w);
    // A data constant's bytes as they are: as many as its type gives, so the key stays unique.
    if (!c.bytes.empty()) key.append(1, ',').append(reinterpret_cast<const char*>(c.bytes.data()), c.bytes.size());
    key += "|";
    for (uint32_t o : c.operands) key += constant_key(fn, o, depth + 1) + ",";
    return key + ")";
  }
};

// Operands of a function after materialization: a value id, a block (kBlockTag), or one
// of the loads materialize_aggregate_constants inserted (kLoadTag | load).
constexpr uint32_t kLoadTag = 0x40000000u;

// One load materialize_aggregate_constants inserts: `load T, ptr @__kiln_const...`.
struct MaterializedLoad {
  uint32_t type;
  uint32_t global;  // index into ModuleContext::globals
};

// What materialize_aggregate_constants did to one function.
struct Materialized {
  std::vector<MaterializedLoad> loads;
  std::vector<std::vector<uint32_t>> before;  // per instruction, the loads inserted just before it
  // The operands loads replace, in the order of their instructions, then of their
  // positions: the exporter finds an instruction's once, where a map's look-up for each
  // operand cost more than the operand.
  struct Replaced {
    uint32_t inst, operand, load;
  };
  std::vector<Replaced> replaced;
};

// A function's arrays while it is exported, kept from function to function so that
// their memory is allocated once per module.
struct ExportScratch {
  std::vector<uint32_t> inst_flat, load_flat;
  std::vector<BcDebugLoc> flat_locs;  // per flat instruction of the function, with debug information
  // library_symbol's answers by the address of the name asked: every name it is given
  // is a string of static storage, and a call asks for a few of them over and over.
  std::vector<std::pair<const char*, uint32_t>> library_by_address;
  // FunctionExporter::known_operand's, by value id: the module's values kept for the
  // module, the body's own cleared for each body.
  std::vector<uint8_t> known;
  std::vector<FlatOperand> known_operands;
  // FunctionExporter::alloc_size_of's and store_size_of's, by type id (kUnknownSize:
  // not yet asked, or failed).
  std::vector<uint64_t> alloc_sizes, store_sizes;
};

// The flat symbol of global `gi` (lib/flat_export.cpp's symbol_index): the index its
// first reference took, else the next one. `index` is per global (kNone: none yet).
uint32_t intern_symbol(uint32_t gi, std::vector<uint32_t>& index, std::vector<uint32_t>& values,
                       std::vector<std::string>& fixed_names) {
  if (gi >= index.size()) index.resize(gi + 1, kNone);
  uint32_t& k = index[gi];
  if (k == kNone) {
    k = static_cast<uint32_t>(values.size());
    values.push_back(gi);
    fixed_names.resize(values.size());
  }
  return k;
}

class FunctionExporter {
 public:
  // symbol_index: per global (ModuleContext::globals), its flat symbol or kNone.
  FunctionExporter(ModuleContext& ctx, FlatModuleData& out, std::vector<uint32_t>& symbol_values,
                   std::vector<std::string>& fixed_names, std::vector<uint32_t>& symbol_index,
                   std::unordered_map<std::string, uint32_t>& library_index, uint32_t fn, const Materialized& mat,
                   ExportScratch& scratch)
      : ctx_(ctx),
        m_(ctx.m),
        out_(out),
        symbol_values_(symbol_values),
        fixed_names_(fixed_names),
        symbol_index_(symbol_index),
        library_index_(library_index),
        fn_index_in_module_(fn),
        f_(ctx.m.functions[fn]),
        g_(ctx.globals[f_.global]),
        mat_(mat),
        inst_flat_(scratch.inst_flat),
        load_flat_(scratch.load_flat),
        flat_locs_(scratch.flat_locs),
        library_by_address_(scratch.library_by_address),
        known_(scratch.known),
        known_operands_(scratch.known_operands),
        alloc_sizes_(scratch.alloc_sizes),
        store_sizes_(scratch.store_sizes),
        insts_(out.insts),
        operands_(out.operands),
        blocks_(out.blocks) {}

  std::vector<std::string> reasons;
  // The blocks (indices in the body) whose address a blockaddress constant takes.
  const std::vector<uint32_t>* address_taken = nullptr;

  bool run() {
    vectors_ = ctx_.has_vector_types &&
        (ctx_.module_vector_values ||
         ctx_.any_value_type(f_.values.data(), f_.values.size(), ModuleContext::vector_facts));
    wide_ = ctx_.module_wide_values
        ? may_touch_i128()
        : ctx_.any_value_type(f_.values.data(), f_.values.size(), ModuleContext::wide_facts);
    base_inst_ = static_cast<uint32_t>(out_.insts.size());
    base_block_ = static_cast<uint32_t>(out_.blocks.size());
    base_operand_ = static_cast<uint32_t>(out_.operands.size());
    base_arg_ = static_cast<uint32_t>(out_.arg_widths.size());
    fn_index_ = static_cast<uint32_t>(out_.functions.size());
    flat_locs_.clear();
    const size_t module_values = m_.module_value_count, values = module_values + f_.values.size();
    // operand()'s own values: only where no id of them can carry a tag.
    module_values_ = m_.module_value_count;
    own_values_ = f_.values.data();
    own_value_count_ = values < kLoadTag ? static_cast<uint32_t>(f_.values.size()) : 0;
    if (known_.size() < module_values) known_.resize(module_values, 0);
    known_.resize(values);
    std::fill(known_.begin() + static_cast<ptrdiff_t>(module_values), known_.end(), 0);
    known_operands_.resize(values);
    check_function();
    number_instructions();
    // The body's arrays, asked once rather than at each instruction (as far as the
    // compiler knows, exporting one could change them).
    const Inst* insts = f_.insts.data();
    const std::vector<uint32_t>* before = mat_.before.empty() ? nullptr : mat_.before.data();
    const bool replaced = !mat_.replaced.empty(), located = !f_.debug_locs.empty();
    for (uint32_t b = 0; b < f_.block_count; ++b) {
      FlatBlock fb{static_cast<uint32_t>(insts_.size()), 0, fn_index_};
      // LLVM's exporter asks BasicBlock::hasAddressTaken before the block's instructions.
      if (address_taken && std::find(address_taken->begin(), address_taken->end(), b) != address_taken->end())
        reason("block address taken");
      if (b == 0 && !vector_args_.empty()) {
        export_vector_args();
        locate({});  // the copies have no location
      }
      for (uint32_t i = block_begin(b), end = block_end(b); i < end; ++i) {
        if (before && !before[i].empty()) {
          for (uint32_t load : before[i]) export_materialized_load(b, load);
          locate({});  // kiln's loads have no location
        }
        current_ = i;
        if (replaced) find_replaced(i);
        export_inst(insts[i]);
        if (located) locate(f_.debug_locs.at(i));
      }
      fb.inst_count = static_cast<uint32_t>(insts_.size()) - fb.first_inst;
      blocks_.push_back(fb);
    }
    if (frame_bound(insts_.data() + base_inst_, static_cast<uint32_t>(insts_.size()) - base_inst_, f_.arg_count) >
        static_cast<uint64_t>(kMaxFrameBytes))
      reason("frame larger than 1 GiB");
    if (!reasons.empty()) {
      rollback();
      return false;
    }
    commit();
    return true;
  }

  // The function's flat instructions, operands and blocks are written straight into
  // the module's arrays (no copy); a function that is not stamp's takes them back out.
  void rollback() {
    insts_.resize(base_inst_);
    operands_.resize(base_operand_);
    blocks_.resize(base_block_);
  }

 private:
  uint32_t block_begin(uint32_t b) const { return f_.block_first.at(b); }
  uint32_t block_end(uint32_t b) const {
    return b + 1 < f_.block_count ? f_.block_first.at(b + 1) : static_cast<uint32_t>(f_.insts.size());
  }

  // Flat instruction indices in export order: each instruction after the loads
  // materialized before it.
  void number_instructions() {
    load_flat_.assign(mat_.loads.size(), 0);
    uint32_t n = base_inst_ + static_cast<uint32_t>(vector_args_.size());  // the vector arguments' copies first
    if (mat_.before.empty()) {  // most bodies: no loads among the instructions
      inst_flat_.resize(f_.insts.size());
      std::iota(inst_flat_.begin(), inst_flat_.end(), n);
      return;
    }
    inst_flat_.assign(f_.insts.size(), 0);
    for (uint32_t i = 0; i < f_.insts.size(); ++i) {
      if (!mat_.before.empty())
        for (uint32_t load : mat_.before[i]) load_flat_[load] = n++;
      inst_flat_[i] = n++;
    }
  }

  void commit() {
    FlatFunction ff{};
    ff.symbol = symbol(f_.global);
    ff.first_block = base_block_;
    ff.block_count = static_cast<uint32_t>(blocks_.size()) - base_block_;
    ff.first_inst = base_inst_;
    ff.inst_count = static_cast<uint32_t>(insts_.size()) - base_inst_;
    ff.first_arg = base_arg_;
    ff.arg_count = f_.arg_count;
    ff.flags = fn_flags_;
    ff.float_args = float_args_;
    ff.ret_width = static_cast<uint8_t>(ctx_.operand_width(return_type()));
    ff.ret_leaf_float = ret_leaf_float_;
    ff.ret_leaf0_width = ret_w0_;
    ff.ret_leaf1_width = ret_w1_;
    ff.ret_leaf1_offset = static_cast<uint32_t>(ret_off1_);
    ff.sret_arg = sret_arg_;
    ff.personality = personality_;
    for (uint32_t a = 0; a < f_.arg_count; ++a)  // a vector argument counts as a double (float_args)
      out_.arg_widths.push_back(static_cast<uint8_t>(vector_arg_of(a) != kNone ? 64 : ctx_.operand_width(param_type(a))));
    out_.functions.push_back(ff);
    if (m_.debug.dwarf_version) commit_debug();
  }

  // The flat instructions emitted since the last call come from an instruction at `loc`.
  void locate(const BcDebugLoc& loc) {
    if (!m_.debug.dwarf_version) return;
    const size_t flat = insts_.size() - base_inst_;  // most often one more than located
    for (size_t located = flat_locs_.size(); located < flat; ++located) flat_locs_.push_back(loc);
  }

  // The function's subprogram and its instructions' locations, only for a function that
  // is stamp's.
  void commit_debug() {
    locate({});
    ctx_.debug.function(f_, flat_locs_, inst_flat_, fn_index_, out_.debug);
  }

  void reason(const std::string& r) {
    ++reason_calls_;
    if (std::find(reasons.begin(), reasons.end(), r) == reasons.end()) reasons.push_back(r);
  }

  uint32_t symbol(uint32_t global) { return intern_symbol(global, symbol_index_, symbol_values_, fixed_names_); }

  uint32_t return_type() const { return ctx_.type(g_.value_type).elements.at(0); }
  uint32_t param_type(uint32_t a) const { return ctx_.type(g_.value_type).elements.at(1 + a); }
  const AttrList* attrs(uint32_t list) const {
    if (list == kNone) return nullptr;
    if (list >= m_.attribute_lists.size()) throw Decline{"reader: attribute list out of range"};
    return &m_.attribute_lists[list];
  }

  void check_atomic_access(uint32_t t, uint64_t align) {
    unsigned w = ctx_.is_int_like(t) ? ctx_.scalar_width(t) : 0;
    if (!(w == 8 || w == 16 || w == 32 || w == 64)) reason("atomics: on " + ctx_.type_name(t));
    else if (align < w / 8) reason("atomics: under-aligned");
  }

  void check_function() {
    const Global& src = m_.globals[g_.source];
    if (!stamp_calling_convention(src.calling_conv)) reason("calling convention " + std::to_string(src.calling_conv));
    if (ctx_.type(g_.value_type).vararg) reason("variadic definition");
    if (src.personality != kNone) {
      uint32_t pers = ctx_.strip_pointer_casts(kNone, src.personality);
      if (ctx_.klass(kNone, pers) != Class::kGlobal) reason("exceptions: personality is not a symbol");
      else {
        fn_flags_ |= kFnHasPersonality;
        personality_ = symbol(ctx_.ref(kNone, pers).index);
      }
    }
    if (g_.has_comdat) reason("comdat");
    if (src.prefix_or_prologue) reason("prefix or prologue data");
    if (src.gc) reason("garbage collector");
    const AttrList* fa = attrs(src.attributes);
    if (fa && fa->function.has(kAttrNaked)) reason("naked function");
    // What LLVM's code generator would add and stamp does not (codegen_requests.h).
    if (fa &&
        (fa->function.has(kAttrStackProtect) || fa->function.has(kAttrStackProtectStrong) ||
         fa->function.has(kAttrStackProtectReq)))
      reason(kReasonStackProtector);
    if (m_.cf_protection) reason(kReasonCfProtection);
    if (fa && fa->function.has(kAttrKilnInstrumented)) reason(kReasonInstrumented);
    if (fa && fa->function.has(kAttrKilnPatchable)) reason(kReasonPatchable);
    if (src.align > kStampFunctionAlign) reason(kReasonAlignment);
    if (g_.linkage == Linkage::kAvailableExternally) reason("available_externally");
    avx_ = fa && fa->function.has(kAttrKilnAvx);
    may_fuse_ = fa && fa->function.has(kAttrKilnMayFuse);
    vector_args_.clear();
    vector_arg_of_.clear();
    uint32_t xmm = 0;  // the vector registers the arguments so far take
    for (uint32_t i = 0; i < f_.arg_count; ++i) {
      uint32_t t = param_type(i);
      const uint32_t vector_bytes = vector_arg_bytes_of(t);
      if (ctx_.is_float_or_double(t) && i >= kMaxFloatArgs) reason("floating-point argument after the 16th");
      else if (ctx_.is_float_or_double(t)) float_args_ |= static_cast<uint16_t>(1u << i), ++xmm;
      else if (vector_bytes && (i >= kMaxFloatArgs || xmm >= kVectorArgRegisters))
        reason("vector argument past xmm7 or after the 16th argument");
      else if (vector_bytes) {
        float_args_ |= static_cast<uint16_t>(1u << i);
        vector_arg_of_.resize(f_.arg_count, kNone);
        vector_arg_of_[i] = static_cast<uint32_t>(vector_args_.size());
        vector_args_.push_back({xmm++, vector_lane_width(t), vector_lanes(t)});
      } else if (!ctx_.is_int_like(t) && !ctx_.is_i128(t)) reason("argument type " + ctx_.type_name(t));
      if (fa &&
          (fa->param_has(i, kAttrByVal) || fa->param_has(i, kAttrInAlloca) || fa->param_has(i, kAttrPreallocated) ||
           fa->param_has(i, kAttrNest)))
        reason("byval, inalloca, preallocated or nest argument");
      if (fa && fa->param_has(i, kAttrStructRet)) {
        fn_flags_ |= kFnHasSret;
        sret_arg_ = i;
      }
    }
    uint32_t r = return_type();
    if (!ctx_.is_void(r)) {
      unsigned w0 = 0, w1 = 0;
      const uint32_t vector_bytes = vector_arg_bytes_of(r);
      if (ctx_.is_float_or_double(r)) fn_flags_ |= kFnRetFloat;  // in xmm0
      else if (vector_bytes) fn_flags_ |= vector_bytes == 32 ? kFnRetVector256 : kFnRetVector;  // in xmm0 or ymm0
      else if (ctx_.is_i128(r)) {
        // in rax (low half) and rdx (high half): encode_ret
      } else if (ctx_.is_int_like(r)) {
        if (fa && fa->ret.has(kAttrSExt)) fn_flags_ |= kFnRetSignExt;
      } else if (unsigned floats = 0; ctx_.is_scalar_pair(r, &w0, &w1, &ret_off1_, &floats)) {
        fn_flags_ |= kFnRetPair;
        ret_leaf_float_ = static_cast<uint8_t>(floats);
        ret_w0_ = static_cast<uint8_t>(w0);
        ret_w1_ = static_cast<uint8_t>(w1);
      } else {
        reason("return type " + ctx_.type_name(r));
      }
    }
  }

  // The operands of the instruction being exported, materialized loads in place.
  [[gnu::always_inline]] uint32_t op_id(const Inst& in, uint32_t k) const {
    if (replaced_ != replaced_end_) [[unlikely]]
      return replaced_op_id(in, k);
    return f_.operands[in.first_operand + k];
  }
  uint32_t replaced_op_id(const Inst& in, uint32_t k) const {
    for (const Materialized::Replaced* r = replaced_; r != replaced_end_; ++r)
      if (r->operand == k) return kLoadTag | r->load;
    return f_.operands[in.first_operand + k];
  }
  // The operands of instruction i that loads replace (replaced_ to replaced_end_).
  void find_replaced(uint32_t i) {
    auto [first, last] = std::equal_range(mat_.replaced.begin(), mat_.replaced.end(), Materialized::Replaced{i, 0, 0},
                                          [](const Materialized::Replaced& a, const Materialized::Replaced& b) {
                                            return a.inst < b.inst;
                                          });
    replaced_ = mat_.replaced.data() + (first - mat_.replaced.begin());
    replaced_end_ = mat_.replaced.data() + (last - mat_.replaced.begin());
  }
  [[gnu::always_inline]] uint32_t operand_type(uint32_t id) const {
    // The body's own values first, as operand() takes them (no id with a tag is among them).
    if (const uint32_t local = id - module_values_; local < own_value_count_) {
      const ValueRef& r = own_values_[local];
      if (r.kind != ValueKind::kForward) return r.type;
    }
    return operand_type_slow(id);
  }
  [[gnu::noinline]] uint32_t operand_type_slow(uint32_t id) const {
    if (id != kMetadataOperand && (id & kBlockTag)) throw Decline{"reader: block used as a value"};
    if (id != kMetadataOperand && (id & kLoadTag) && id >= kLoadTag) return mat_.loads.at(id & ~kLoadTag).type;
    return ctx_.type_of(fn_index_in_module_, id);
  }
  bool is_materialized(uint32_t id) const { return id != kMetadataOperand && !(id & kBlockTag) && (id & kLoadTag); }

  // Most operands are a block, a scalar result of the body's own instructions, or a
  // constant or global made before (known_operand; one of width 0 goes the long way,
  // which gives its type's reason again): those are made here, the rest (and anything
  // operand_slow declines) out of line.
  [[gnu::always_inline]] FlatOperand operand(uint32_t id) {
    FlatOperand op{};
    if (id & kBlockTag) {  // kMetadataOperand has no kBlockTag
      if (const uint32_t b = id & ~kBlockTag; b < f_.block_count) {
        op.kind = kOperandBlock;
        op.index = base_block_ + b;
        return op;
      }
    } else if (const uint32_t local = id - module_values_; local < own_value_count_) {
      // The body's instructions and arguments first, the most operands (never known_'s).
      const ValueRef& r = own_values_[local];
      if (r.kind == ValueKind::kInstruction && r.index < inst_flat_.size()) {
        const ModuleContext::TypeFacts& facts = ctx_.facts(r.type);
        op.width = facts.operand_width;
        // An aggregate result (extractvalue's, insertvalue's) as operand_slow takes it
        // when its type gives no reason.
        if (op.width ||
            (facts.kind != TypeKind::kLabel && facts.kind != TypeKind::kVoid &&
             ctx_.is_plain_aggregate(r.type, true))) {
          op.kind = kOperandValue;
          op.index = inst_flat_[r.index];
          return op;
        }
      } else if (r.kind == ValueKind::kArgument) {
        op.width = ctx_.facts(r.type).operand_width;
        if (op.width) return argument_operand(r.index, op);
      }
    }
    if (!(id & kBlockTag) && id < known_.size() && known_[id] && known_operands_[id].width) return known_operands_[id];
    return operand_slow(id);
  }
  FlatOperand argument_operand(uint32_t a, FlatOperand op) const {
    if (!vector_arg_operand(a, op)) {
      op.kind = kOperandArg;
      op.index = base_arg_ + a;
    }
    return op;
  }
  [[gnu::noinline]] FlatOperand operand_slow(uint32_t id) {
    const uint32_t fn = fn_index_in_module_;
    FlatOperand op{};
    if (id != kMetadataOperand && (id & kBlockTag)) {
      uint32_t b = id & ~kBlockTag;
      if (b >= f_.block_count) throw Decline{"reader: block out of range"};
      op.kind = kOperandBlock;
      op.index = base_block_ + b;
      return op;
    }
    if (is_materialized(id)) {
      uint32_t load = id & ~kLoadTag;
      op.width = static_cast<uint8_t>(ctx_.operand_width(mat_.loads.at(load).type));
      op.kind = kOperandValue;
      op.index = load_flat_.at(load);
      return op;
    }
    if (id == kMetadataOperand) throw Decline{"reader: metadata as an operand"};
    const ValueRef& r = ctx_.ref(fn, id);
    const uint32_t t = r.type;
    const auto& facts = ctx_.facts(t);
    op.width = facts.operand_width;
    if (!op.width && facts.kind != TypeKind::kLabel && facts.kind != TypeKind::kVoid &&
        !ctx_.is_plain_aggregate(t, true))
      reason("value type " + ctx_.type_name(t));
    // Instructions and arguments, most operands, without klass's look-ups.
    if (r.kind == ValueKind::kInstruction) {
      op.kind = kOperandValue;
      op.index = inst_flat_.at(r.index);
      return op;
    }
    if (r.kind == ValueKind::kArgument) return argument_operand(r.index, op);
    return known_operand(id, t, op);
  }

  // A constant's or a global's operand is the same wherever the module or the body reads
  // it: kept by value id once made, unless making it gave a reason (which each function
  // must give again).
  FlatOperand known_operand(uint32_t id, uint32_t t, FlatOperand op) {
    const bool keep = id < known_.size();
    if (keep && known_[id]) return known_operands_[id];
    const size_t reasons_before = reason_calls_;
    constant_operand(id, t, op);
    if (keep && reason_calls_ == reasons_before) known_[id] = 1, known_operands_[id] = op;
    return op;
  }

  void constant_operand(uint32_t id, uint32_t t, FlatOperand& op) {
    const uint32_t fn = fn_index_in_module_;
    // An integer record, the commonest (a body's own constants come anew in each body),
    // without klass's other questions: klass says kInt of it.
    if (id != kMetadataOperand && ctx_.ref(fn, id).kind == ValueKind::kConstant) {
      const Constant& c = ctx_.constant(fn, id);
      if (c.kind == ConstKind::kInteger && ctx_.is_integer(c.type)) return scalar_constant(c, op);
    }
    int vid = -1;
    switch (ctx_.klass(fn, id, &vid)) {
      case Class::kInstruction:
      case Class::kArgument:
        break;  // taken above
      case Class::kInt:
      case Class::kFP:
        scalar_constant(ctx_.constant(fn, id), op);
        break;
      case Class::kNullPtr:
        op.kind = kOperandConst;
        break;
      case Class::kUndef:
        op.kind = kOperandUndef;
        break;
      case Class::kZero:
        op.kind = kOperandZero;
        break;
      case Class::kGlobal: {
        uint32_t g = ctx_.ref(fn, id).index;
        if (ctx_.globals[g].kind == GlobalKind::kVariable && ctx_.globals[g].thread_local_)
          reason("thread-local variable");
        op.kind = kOperandSymbol;
        op.index = symbol(g);
        break;
      }
      case Class::kExpr:
        constant_expression(fn, id, op);
        break;
      case Class::kStruct:
      case Class::kArray:
        reason("constant aggregate");
        break;
      case Class::kVector:
        reason("constant kind " + std::to_string(kValueIdVector));
        break;
      case Class::kDataSeq:
        reason("constant kind " + std::to_string(ctx_.is_vector(t) ? kValueIdCdv : kValueIdCda));
        break;
      case Class::kOtherConstant:
        reason("constant kind " + std::to_string(vid));
        break;
      case Class::kMetadata:
        throw Decline{"reader: metadata as an operand"};
    }
  }

  void scalar_constant(const Constant& c, FlatOperand& op) {
    op.kind = kOperandConst;
    if (ctx_.is_integer(c.type)) {
      if (ctx_.type(c.type).width == kWideBits) return wide_constant(c, op);
      if (ctx_.type(c.type).width > 64) return reason("integer constant wider than 64 bits");
      op.imm = static_cast<int64_t>(ctx_.int_value(c));
      return;
    }
    TypeKind k = ctx_.type(c.type).kind;
    if (k == TypeKind::kX86Fp80 || k == TypeKind::kFp128 || k == TypeKind::kPpcFp128)
      return reason("floating-point constant wider than 64 bits");
    uint64_t bits = c.words.empty() ? 0 : c.words[0];
    unsigned w = k == TypeKind::kDouble ? 64 : k == TypeKind::kFloat ? 32 : 16;
    if (w < 64) bits &= (uint64_t(1) << w) - 1;
    op.imm = static_cast<int64_t>(bits);
  }

  // wide_constant of lib/flat_export.cpp: the value's two words, as the reader keeps them.
  void wide_constant(const Constant& c, FlatOperand& op) {
    int64_t high = static_cast<int64_t>(c.words.size() > 1 ? c.words[1] : 0);
    if (!wide_immediate_fits(high)) return reason("i128 constant beyond 96 signed bits");
    op.imm = static_cast<int64_t>(c.words.empty() ? 0 : c.words[0]);
    op.index = static_cast<uint32_t>(static_cast<int32_t>(high));
  }

  void constant_expression(uint32_t fn, uint32_t id, FlatOperand& op) {
    const Constant& c = ctx_.constant(fn, id);
    if (c.kind == ConstKind::kGep) {
      uint64_t offset = 0;
      uint32_t base = ctx_.strip_pointer_casts(fn, c.operands.at(0));
      bool global = ctx_.klass(fn, base) == Class::kGlobal;
      if (global && ctx_.accumulate_offset(fn, c.source_type, c.operands.data() + 1, c.operands.size() - 1, offset) &&
          static_cast<int64_t>(offset) >= -(int64_t(1) << 30) && static_cast<int64_t>(offset) < (int64_t(1) << 30)) {
        uint32_t g = ctx_.ref(fn, base).index;
        op.kind = kOperandSymbol;
        op.index = symbol(g);
        op.imm = static_cast<int64_t>(offset);
        if (ctx_.globals[g].kind == GlobalKind::kVariable && ctx_.globals[g].thread_local_)
          reason("thread-local variable");
        return;
      }
      reason("constant expression getelementptr");
      return;
    }
    if (c.kind == ConstKind::kCast &&
        (c.opcode == kCastPtrToInt || c.opcode == kCastIntToPtr || c.opcode == kCastBitCast)) {
      FlatOperand inner = operand(c.operands.at(0));
      uint8_t w = op.width;
      op = inner;
      op.width = w;
      if (w != 64 && op.kind == kOperandSymbol) reason("constant expression truncating a pointer");
      return;
    }
    const char* name = c.kind == ConstKind::kCast ? cast_name(c.opcode)
        : c.kind == ConstKind::kBinary            ? binop_name(c.opcode, ctx_.is_float(c.type))
                                                  : nullptr;
    if (!name) throw Decline{"reader: constant expression " + std::to_string(c.opcode)};
    reason(std::string("constant expression ") + name);
  }

  // A flat instruction of the current block with result type `t`.
  // Made in place, its result slot found first (a failure there declines the function,
  // whose arrays are then cut back).
  [[gnu::always_inline]] FlatInst& emit_typed(uint32_t block, uint32_t t, uint16_t op,
                                              std::initializer_list<FlatOperand> ops = {}) {
    const uint8_t width = static_cast<uint8_t>(ctx_.scalar_width(t));
    const uint32_t slot_size = width ? 8 : result_slot_size(t);
    const uint32_t first_operand = static_cast<uint32_t>(operands_.size());
    for (const auto& o : ops) operands_.push_back(o);
    FlatInst& fi = insts_.emplace_back();
    fi.op = op;
    fi.width = width;
    fi.block = base_block_ + block;
    fi.first_operand = first_operand;
    fi.operand_count = static_cast<uint32_t>(ops.size());
    fi.slot_size = slot_size;
    return fi;
  }
  // The slot of a result that is no scalar (none for void).
  [[gnu::noinline]] uint32_t result_slot_size(uint32_t t) const {
    return ctx_.is_void(t) ? 0 : round8(alloc_size_of(t));
  }
  [[gnu::always_inline]] FlatInst& emit(const Inst& in, uint16_t op, std::initializer_list<FlatOperand> ops = {}) {
    return emit_typed(in.block, in.type, op, ops);
  }
  // A size of a sized type; an unsized one is beyond what the reader reproduces.
  uint64_t sized(uint32_t t, uint64_t (Layout::*fn)(const BcModule&, uint32_t) const) const {
    switch (ctx_.type(t).kind) {
      case TypeKind::kVoid:
      case TypeKind::kLabel:
      case TypeKind::kMetadata:
      case TypeKind::kToken:
      case TypeKind::kFunction:
      case TypeKind::kScalableVector:
      case TypeKind::kTargetExt:
        throw Decline{"reader: size of " + ctx_.type_name(t)};
      default:
        if (ctx_.type(t).kind == TypeKind::kStruct && ctx_.type(t).opaque)
          throw Decline{"reader: size of opaque struct"};
        return (ctx_.dl.*fn)(m_, t);
    }
  }
  // sized(t, &Layout::alloc_size) and sized(t, &Layout::store_size), kept per type id
  // for the module: asked at every aggregate result, getelementptr index, alloca, and
  // load or store of an aggregate. A size that fails is not kept (it fails again).
  uint64_t alloc_size_of(uint32_t t) const { return size_of(t, alloc_sizes_, &Layout::alloc_size); }
  uint64_t store_size_of(uint32_t t) const { return size_of(t, store_sizes_, &Layout::store_size); }
  static constexpr uint64_t kUnknownSize = ~uint64_t(0);
  uint64_t size_of(uint32_t t, std::vector<uint64_t>& known,
                   uint64_t (Layout::*fn)(const BcModule&, uint32_t) const) const {
    if (t < known.size() && known[t] != kUnknownSize) return known[t];
    const uint64_t size = sized(t, fn);
    if (known.size() < m_.types.size()) known.resize(m_.types.size(), kUnknownSize);
    if (t < known.size()) known[t] = size;
    return size;
  }
  void add_operand(FlatInst& fi, const FlatOperand& o) {
    operands_.push_back(o);
    fi.operand_count++;
  }

  void export_materialized_load(uint32_t block, uint32_t load) {
    const MaterializedLoad& l = mat_.loads.at(load);
    FlatOperand ptr{};
    ptr.kind = kOperandSymbol;
    ptr.width = 64;
    ptr.index = symbol(l.global);
    FlatInst& fi = emit_typed(block, l.type, kOpLoad, {ptr});
    if (!fi.width) fi.aux32 = static_cast<uint32_t>(store_size_of(l.type));
    if (ctx_.is_i128(l.type)) fi.width = kWideBits;  // a wide constant's load, as export_wide's
  }

  // --- One instruction (export_inst of lib/flat_export.cpp).
  // A dispatch to each kind's export, every one out of line ([[gnu::noinline]]): so
  // this needs no frame of its own, where the ones it took in cost each instruction
  // a frame's saves and restores.
  void export_inst(const Inst& in) {
    // Most bodies use no vector and no i128 (vectors_ and wide_ say so): then the
    // questions of export_vector_or_wide are not asked.
    if ((vectors_ || wide_) && export_vector_or_wide(in)) return;
    switch (in.opcode) {
      case Opcode::kAlloca:
        return export_alloca(in);
      case Opcode::kLoad:
        return export_load(in);
      case Opcode::kStore:
        return export_store(in);
      case Opcode::kGetElementPtr:
        return export_gep(in);
      case Opcode::kAdd:
      case Opcode::kSub:
      case Opcode::kMul:
      case Opcode::kAnd:
      case Opcode::kOr:
      case Opcode::kXor:
      case Opcode::kShl:
      case Opcode::kLShr:
      case Opcode::kAShr:
      case Opcode::kUDiv:
      case Opcode::kSDiv:
      case Opcode::kURem:
      case Opcode::kSRem:
        return export_binary(in);
      case Opcode::kICmp:
        return export_icmp(in);
      case Opcode::kFAdd:
      case Opcode::kFSub:
      case Opcode::kFMul:
      case Opcode::kFDiv:
      case Opcode::kFNeg:
      case Opcode::kFCmp:
      case Opcode::kFPExt:
      case Opcode::kFPTrunc:
      case Opcode::kSIToFP:
      case Opcode::kUIToFP:
      case Opcode::kFPToSI:
      case Opcode::kFPToUI:
        return export_float(in);
      case Opcode::kFRem:
        return export_frem(in);
      case Opcode::kSelect:
        return export_select(in);
      case Opcode::kZExt:
      case Opcode::kIntToPtr:
      case Opcode::kFreeze:
      case Opcode::kBitCast:
      case Opcode::kTrunc:
      case Opcode::kPtrToInt:
      case Opcode::kSExt:
        return export_cast(in);
      case Opcode::kExtractValue:
        return export_extract_value(in);
      case Opcode::kInsertValue:
        return export_insert_value(in);
      case Opcode::kPhi:
        return export_phi(in);
      case Opcode::kCall:
      case Opcode::kInvoke:
        return export_call(in);
      case Opcode::kBr:
        return export_br(in);
      case Opcode::kSwitch:
        return export_switch(in);
      case Opcode::kRet:
        return export_ret(in);
      case Opcode::kUnreachable:
        return export_unreachable(in);
      case Opcode::kLandingPad:
        return export_landing_pad(in);
      case Opcode::kResume:
        return export_resume(in);
      case Opcode::kCleanupPad:
      case Opcode::kCatchPad:
      case Opcode::kCatchSwitch:
      case Opcode::kCleanupRet:
      case Opcode::kCatchRet:
        return refuse_funclet(in);
      case Opcode::kAtomicRmw:
        return export_atomic_rmw(in);
      case Opcode::kAtomicCmpXchg:
        return export_cmpxchg(in);
      case Opcode::kFence:
        return export_fence(in);
      default:
        return refuse_instruction(in);
    }
  }
  // What export_inst asks first where a body may use vectors or i128s: true when
  // export_vector or export_wide took the instruction.
  [[gnu::noinline]] bool export_vector_or_wide(const Inst& in) {
    if (vectors_ && computes_on_vectors(in)) {
      export_vector(in);
      return true;
    }
    check_vector_use(in);
    if (touches_i128(in)) {
      export_wide(in);
      return true;
    }
    return false;
  }
  [[gnu::noinline]] void export_frem(const Inst& in) {
    export_libm_call(in, "instruction frem", "frem", in.operand_count);
  }
  [[gnu::noinline]] void export_ret(const Inst& in) {
    if (in.operand_count) emit(in, kOpRet, {operand(op_id(in, 0))});
    else emit(in, kOpRet);
  }
  [[gnu::noinline]] void export_unreachable(const Inst& in) {
    emit(in, kOpUnreachable);
    if (current_ > block_begin(in.block) && call_does_not_return(f_.insts[current_ - 1]))
      insts_.back().aux = kUnreachableAfterNoreturn;
  }
  [[gnu::noinline]] void refuse_funclet(const Inst& in) {
    refuse(in, "exceptions: " + std::string(opcode_name(in.opcode)));
  }
  [[gnu::noinline]] void export_fence(const Inst& in) {
    FlatInst& fi = emit(in, kOpFence);
    fi.aux = in.ordering == Ordering::kSeqCst && !in.single_thread;
  }
  [[gnu::noinline]] void refuse_instruction(const Inst& in) {
    refuse(in, std::string("instruction ") + opcode_name(in.opcode));
  }

  static const char* opcode_name(Opcode op) {
    switch (op) {
      case Opcode::kIndirectBr:
        return "indirectbr";
      case Opcode::kCallBr:
        return "callbr";
      case Opcode::kFNeg:
        return "fneg";
      case Opcode::kFAdd:
        return "fadd";
      case Opcode::kFSub:
        return "fsub";
      case Opcode::kFMul:
        return "fmul";
      case Opcode::kFDiv:
        return "fdiv";
      case Opcode::kFRem:
        return "frem";
      case Opcode::kFPToUI:
        return "fptoui";
      case Opcode::kFPToSI:
        return "fptosi";
      case Opcode::kUIToFP:
        return "uitofp";
      case Opcode::kSIToFP:
        return "sitofp";
      case Opcode::kFPTrunc:
        return "fptrunc";
      case Opcode::kFPExt:
        return "fpext";
      case Opcode::kAddrSpaceCast:
        return "addrspacecast";
      case Opcode::kPtrToAddr:
        return "ptrtoaddr";
      case Opcode::kCleanupPad:
        return "cleanuppad";
      case Opcode::kCatchPad:
        return "catchpad";
      case Opcode::kCatchSwitch:
        return "catchswitch";
      case Opcode::kCleanupRet:
        return "cleanupret";
      case Opcode::kCatchRet:
        return "catchret";
      case Opcode::kFCmp:
        return "fcmp";
      case Opcode::kVAArg:
        return "va_arg";
      case Opcode::kExtractElement:
        return "extractelement";
      case Opcode::kInsertElement:
        return "insertelement";
      case Opcode::kShuffleVector:
        return "shufflevector";
      default:
        throw Decline{"reader: instruction " + std::to_string(int(op))};
    }
  }

  // --- 128-bit integers (export_wide of lib/flat_export.cpp).

  // A call's arguments (operands before the callee) and result; any other
  // instruction's operands and result; never an alloca (its count is a number).
  bool touches_i128(const Inst& in) const {
    if (in.opcode == Opcode::kAlloca) return false;
    if (!wide_) return false;  // no value the body uses is an i128, its own result included
    if (ctx_.is_i128(in.type)) return true;
    const uint32_t count = i128_operand_count(in);
    for (uint32_t k = 0; k < count; ++k) {
      uint32_t id = op_id(in, k);
      if (id == kMetadataOperand || (!is_materialized(id) && (id & kBlockTag))) continue;
      if (ctx_.is_i128(operand_type(id))) return true;
    }
    return false;
  }

  // The operands touches_i128 looks at: a call's arguments, any other instruction's all.
  static uint32_t i128_operand_count(const Inst& in) {
    return in.opcode == Opcode::kCall  ? (in.operand_count ? in.operand_count - 1 : 0)
        : in.opcode == Opcode::kInvoke ? (in.operand_count >= 3 ? in.operand_count - 3 : 0)
                                       : in.operand_count;
  }
  // In a module with an i128 among its values, whether touches_i128 can say yes for
  // one of the body's instructions: only where its type or an operand's is an i128, or
  // where it would fail (an id or a type out of range, a forward value), which these
  // cheaper questions leave to it. Most bodies of such a module name none, and
  // export_inst then asks nothing of their operands' types. It looks at every operand,
  // the callees' and the invokes' blocks too (more than touches_i128 asks, never less);
  // a replaced operand's load has the type of the value it replaces
  // (Materializer::operand), which is the one asked here.
  bool may_touch_i128() const {
    const uint8_t* module_i128 = ctx_.module_i128();
    const ModuleContext::TypeFacts* facts = ctx_.all_facts();
    const size_t types = m_.types.size();
    auto wide_or_odd = [&](uint32_t t) { return t >= types || facts[t].operand_width == kWideBits; };
    // The body's own values: with none an i128 (nor forward), an operand among them
    // needs no more look.
    for (const ValueRef& r : f_.values)
      if (r.kind == ValueKind::kForward || wide_or_odd(r.type)) return true;
    for (const Inst& in : f_.insts)
      if (in.opcode != Opcode::kAlloca && wide_or_odd(in.type)) return true;
    const uint32_t module_values = m_.module_value_count;
    const size_t own = f_.values.size();
    for (const uint32_t id : f_.operands) {
      if (id == kMetadataOperand || (id & kBlockTag)) continue;
      // operand_type takes an id with kLoadTag for a load's
      if (id < module_values ? module_i128[id] : id >= kLoadTag || id - module_values >= own) return true;
    }
    return false;
  }

  void export_wide(const Inst& in) {
    const std::string refused = std::string("i128 ") + wide_opcode_name(in.opcode);
    uint32_t t = in.type;
    bool wide = ctx_.is_i128(t);
    // The source type of a cast (only casts look at it).
    auto source = [&] { return operand_type(op_id(in, 0)); };
    switch (in.opcode) {
      case Opcode::kLoad:
        if (in.ordering != Ordering::kNotAtomic) return refuse(in, "i128 atomic load");
        export_load(in);
        insts_.back().width = kWideBits;
        return;
      case Opcode::kStore:
        if (in.ordering != Ordering::kNotAtomic) return refuse(in, "i128 atomic store");
        return export_store(in);
      case Opcode::kICmp:
        export_wide_op(in, kWideIcmp, 2).aux32 = icmp_predicate(in);
        return;
      case Opcode::kTrunc:
        if (!ctx_.is_i128(source()) || !ctx_.is_integer(t) || !ctx_.scalar_width(t)) return refuse(in, refused);
        export_wide_op(in, kWideTrunc, 1);
        return;
      case Opcode::kZExt:
      case Opcode::kSExt:
        if (!wide || !ctx_.is_integer(source()) || !ctx_.scalar_width(source())) return refuse(in, refused);
        export_wide_op(in, in.opcode == Opcode::kZExt ? kWideZext : kWideSext, 1).aux32 = ctx_.scalar_width(source());
        return;
      case Opcode::kBitCast:
      case Opcode::kFreeze:
        if (!wide || !ctx_.is_i128(source())) return refuse(in, refused);
        export_wide_op(in, kWideCopy, 1);
        return;
      case Opcode::kSelect: {
        if (!wide) return refuse(in, refused);
        FlatOperand c = operand(op_id(in, 0));
        FlatOperand a = operand(op_id(in, 1));
        FlatOperand b = operand(op_id(in, 2));
        emit(in, kOpSelect, {c, a, b}).width = kWideBits;
        return;
      }
      case Opcode::kExtractValue:  // an i128 field: 16 bytes of the aggregate's slot
        if (!wide) return refuse(in, refused);
        export_extract_value(in);
        insts_.back().width = kWideBits;
        return;
      case Opcode::kInsertValue:
        return export_insert_value(in);
      case Opcode::kPhi:
        return export_phi(in);
      case Opcode::kSwitch:
        return export_switch(in);
      case Opcode::kRet:
        emit(in, kOpRet, {operand(op_id(in, 0))});
        return;
      case Opcode::kCall:
      case Opcode::kInvoke:
        return export_wide_call(in);
      case Opcode::kUDiv:
      case Opcode::kSDiv:
      case Opcode::kURem:
      case Opcode::kSRem:
        return export_wide_division(in, wide_division_function(in.opcode == Opcode::kSDiv || in.opcode == Opcode::kSRem,
                                                               in.opcode == Opcode::kURem || in.opcode == Opcode::kSRem));
      case Opcode::kFPToSI:
      case Opcode::kFPToUI:
      case Opcode::kSIToFP:
      case Opcode::kUIToFP:
        return export_wide_conversion(in);
      default:
        break;
    }
    static const std::map<Opcode, uint8_t> kBinary = {
        {Opcode::kAdd, kWideAdd}, {Opcode::kSub, kWideSub}, {Opcode::kAnd, kWideAnd},   {Opcode::kOr, kWideOr},
        {Opcode::kXor, kWideXor}, {Opcode::kShl, kWideShl}, {Opcode::kLShr, kWideLshr}, {Opcode::kAShr, kWideAshr},
        {Opcode::kMul, kWideMul}};
    auto it = kBinary.find(in.opcode);
    if (it == kBinary.end()) return refuse(in, refused);
    export_wide_op(in, it->second, 2);
  }

  // export_wide_conversion of lib/flat_export.cpp: compiler-rt's call.
  void export_wide_conversion(const Inst& in) {
    const bool to_float = in.opcode == Opcode::kSIToFP || in.opcode == Opcode::kUIToFP;
    const uint32_t from = operand_type(op_id(in, 0));
    const uint32_t f = to_float ? in.type : from, i = to_float ? from : in.type;
    if (!ctx_.is_float_or_double(f) || !ctx_.is_i128(i))
      return refuse(in, std::string("i128 ") + wide_opcode_name(in.opcode));
    const size_t at = emit_library_call(in, wide_conversion_function(
        to_float, in.opcode == Opcode::kSIToFP || in.opcode == Opcode::kFPToSI, ctx_.scalar_width(f) == 64));
    FlatOperand a = operand(op_id(in, 0));
    if (!to_float) a.flags |= kOperandFloat;
    add_operand(insts_[at], a);
    if (to_float) insts_[at].aux |= kCallRetFloat;
    else insts_[at].width = kWideBits;
  }

  // export_wide_division of lib/flat_export.cpp: compiler-rt's call.
  void export_wide_division(const Inst& in, const char* function) {
    if (!ctx_.is_i128(in.type)) return refuse(in, std::string("i128 ") + wide_opcode_name(in.opcode));
    const size_t at = emit_library_call(in, function);
    for (uint32_t a = 0; a < 2; ++a) add_operand(insts_[at], operand(op_id(in, a)));
    insts_[at].width = kWideBits;
  }

  FlatInst& export_wide_op(const Inst& in, uint8_t kind, unsigned count) {
    FlatOperand a = operand(op_id(in, 0));
    FlatOperand b{};
    if (count == 2) b = operand(op_id(in, 1));
    FlatInst& fi = count == 1 ? emit(in, kOpWide, {a}) : emit(in, kOpWide, {a, b});
    fi.aux = kind;
    if (ctx_.is_i128(in.type)) fi.width = kWideBits;
    return fi;
  }

  void export_wide_call(const Inst& in) {
    const bool invoke = in.opcode == Opcode::kInvoke;
    if (in.operand_count < (invoke ? 3u : 1u)) throw Decline{"reader: call operands"};
    const uint32_t arg_count = in.operand_count - (invoke ? 3 : 1);
    const uint32_t callee = op_id(in, arg_count);
    if (is_inline_asm(callee)) return refuse(in, "i128 inline asm");
    const uint32_t callee_fn = called_function(in, callee);
    if (callee_fn != kNone && reserved_name(ctx_.globals[callee_fn].name))
      return export_wide_intrinsic(in, ctx_.intrinsic(callee_fn), invoke, arg_count);
    export_call(in);
  }

  // export_wide_call of lib/flat_export.cpp: the *.with.overflow intrinsics on i128
  // operands; every other intrinsic with an i128 is refused.
  void export_wide_intrinsic(const Inst& in, Intrinsic id, bool invoke, uint32_t arg_count) {
    if (id == Intrinsic::kFptosiSat || id == Intrinsic::kFptouiSat)
      return export_wide_saturating_conversion(in, id == Intrinsic::kFptosiSat, invoke, arg_count);
    const int kind = id == Intrinsic::kUaddWithOverflow   ? kWideUaddOverflow
                     : id == Intrinsic::kSaddWithOverflow ? kWideSaddOverflow
                     : id == Intrinsic::kUsubWithOverflow ? kWideUsubOverflow
                     : id == Intrinsic::kSsubWithOverflow ? kWideSsubOverflow
                     : id == Intrinsic::kUcmp             ? kWideUcmp
                     : id == Intrinsic::kScmp             ? kWideScmp
                     : id == Intrinsic::kCtpop            ? kWideCtpop
                     : id == Intrinsic::kBitreverse       ? kWideBitreverse
                     : id == Intrinsic::kUmulWithOverflow ? kWideUmulOverflow
                     : id == Intrinsic::kAbs              ? kWideAbs
                     : id == Intrinsic::kUmin             ? kWideUmin
                     : id == Intrinsic::kUmax             ? kWideUmax
                     : id == Intrinsic::kSmin             ? kWideSmin
                     : id == Intrinsic::kSmax             ? kWideSmax
                                                          : -1;
    const bool three_way = kind == kWideUcmp || kind == kWideScmp;
    // llvm.abs has a second argument, the i1 that makes INT_MIN poison: not read.
    const uint32_t args = kind == kWideAbs ? 2 : kind < 0 ? 0 : wide_operands(static_cast<uint32_t>(kind));
    if (kind < 0 || invoke || arg_count != args ||
        !ctx_.is_i128(operand_type(op_id(in, 0))) ||
        (three_way && !(ctx_.is_integer(in.type) && ctx_.scalar_width(in.type) >= 8)))
      return refuse(in, "i128 intrinsic");
    if (is_wide_overflow(kind) && ctx_.type(in.type).kind != TypeKind::kStruct)
      throw Decline{"reader: overflow intrinsic type"};
    FlatInst& fi = export_wide_op(in, static_cast<uint8_t>(kind), wide_operands(static_cast<uint32_t>(kind)));
    if (is_wide_overflow(kind)) fi.imm = static_cast<int64_t>(ctx_.dl.field_offset(m_, in.type, 1));
  }

  // LLVM's Instruction::getOpcodeName of the instructions an i128 can meet.
  // export_wide_saturating_conversion of lib/flat_export.cpp.
  void export_wide_saturating_conversion(const Inst& in, bool is_signed, bool invoke, uint32_t arg_count) {
    if (arg_count != 1) throw Decline{"reader: conversion intrinsic arguments"};
    const uint32_t f = operand_type(op_id(in, 0));
    if (invoke || !ctx_.is_float_or_double(f) || !ctx_.is_i128(in.type)) return refuse(in, "i128 intrinsic");
    FlatOperand x = operand(op_id(in, 0));
    FlatOperand convert{};
    convert.kind = kOperandSymbol;
    convert.width = 64;
    convert.index = library_symbol(wide_conversion_function(false, is_signed, ctx_.scalar_width(f) == 64));
    FlatInst& fi = emit(in, kOpWide, {x, convert});
    fi.aux = kWideFromFloatSat;
    fi.width = kWideBits;
    fi.aux32 = ctx_.scalar_width(f);
    fi.imm = is_signed;
  }
  static const char* wide_opcode_name(Opcode op) {
    switch (op) {
      case Opcode::kRet: return "ret";
      case Opcode::kBr: return "br";
      case Opcode::kSwitch: return "switch";
      case Opcode::kInvoke: return "invoke";
      case Opcode::kResume: return "resume";
      case Opcode::kUnreachable: return "unreachable";
      case Opcode::kAdd: return "add";
      case Opcode::kSub: return "sub";
      case Opcode::kMul: return "mul";
      case Opcode::kUDiv: return "udiv";
      case Opcode::kSDiv: return "sdiv";
      case Opcode::kURem: return "urem";
      case Opcode::kSRem: return "srem";
      case Opcode::kShl: return "shl";
      case Opcode::kLShr: return "lshr";
      case Opcode::kAShr: return "ashr";
      case Opcode::kAnd: return "and";
      case Opcode::kOr: return "or";
      case Opcode::kXor: return "xor";
      case Opcode::kAlloca: return "alloca";
      case Opcode::kLoad: return "load";
      case Opcode::kStore: return "store";
      case Opcode::kGetElementPtr: return "getelementptr";
      case Opcode::kFence: return "fence";
      case Opcode::kAtomicCmpXchg: return "cmpxchg";
      case Opcode::kAtomicRmw: return "atomicrmw";
      case Opcode::kTrunc: return "trunc";
      case Opcode::kZExt: return "zext";
      case Opcode::kSExt: return "sext";
      case Opcode::kPtrToInt: return "ptrtoint";
      case Opcode::kIntToPtr: return "inttoptr";
      case Opcode::kBitCast: return "bitcast";
      case Opcode::kICmp: return "icmp";
      case Opcode::kPhi: return "phi";
      case Opcode::kCall: return "call";
      case Opcode::kSelect: return "select";
      case Opcode::kExtractValue: return "extractvalue";
      case Opcode::kInsertValue: return "insertvalue";
      case Opcode::kLandingPad: return "landingpad";
      case Opcode::kFreeze: return "freeze";
      default: return opcode_name(op);
    }
  }

  void refuse(const Inst& in, const std::string& why) {
    reason(why);
    emit(in, kOpNop);
  }

  // --- Vectors (export_vector of lib/flat_export.cpp).

  // The lane width of a vector type kOpVector computes on, or 0.
  uint32_t vector_lane_width(uint32_t t) const {
    if (ctx_.kind(t) != TypeKind::kFixedVector) return 0;  // most types, without a look at the Type
    const Type& v = ctx_.type(t);
    if (v.kind != TypeKind::kFixedVector || v.count == 0 || v.count > kMaxVectorLanes || v.elements.empty()) return 0;
    const Type& e = ctx_.type(v.elements[0]);
    return e.kind == TypeKind::kInteger && is_vector_lane_width(e.width) ? e.width : 0;
  }
  uint32_t vector_lanes(uint32_t t) const { return static_cast<uint32_t>(ctx_.type(t).count); }

  // The StampOp a llvm.vector.reduce.* call folds with, or 0.
  uint16_t reduction_kind(const Inst& in) const {
    if (in.opcode != Opcode::kCall || in.operand_count < 1) return 0;
    const uint32_t callee = op_id(in, in.operand_count - 1);
    const uint32_t fn = called_function(in, callee);
    if (fn == kNone) return 0;
    switch (ctx_.intrinsic(fn)) {
      case Intrinsic::kVectorReduceAdd: return kOpAdd;
      case Intrinsic::kVectorReduceMul: return kOpMul;
      case Intrinsic::kVectorReduceAnd: return kOpAnd;
      case Intrinsic::kVectorReduceOr: return kOpOr;
      case Intrinsic::kVectorReduceXor: return kOpXor;
      default: return 0;
    }
  }
  bool computes_on_vectors(const Inst& in) const {
    if (in.opcode == Opcode::kCall) return reduction_kind(in) != 0 || byte_shuffle(in);
    switch (in.opcode) {
      case Opcode::kAdd: case Opcode::kSub: case Opcode::kMul: case Opcode::kShl: case Opcode::kLShr:
      case Opcode::kAShr: case Opcode::kAnd: case Opcode::kOr: case Opcode::kXor: case Opcode::kICmp:
      case Opcode::kTrunc: case Opcode::kZExt: case Opcode::kSExt: case Opcode::kBitCast:
      case Opcode::kExtractElement: case Opcode::kInsertElement: case Opcode::kShuffleVector:
        break;
      default:
        return false;
    }
    if (ctx_.is_vector(in.type)) return true;
    const uint32_t count = in.opcode == Opcode::kShuffleVector ? std::min(in.operand_count, 2u) : in.operand_count;
    for (uint32_t k = 0; k < count; ++k) {
      uint32_t id = op_id(in, k);
      if (id == kMetadataOperand || (!is_materialized(id) && (id & kBlockTag))) continue;
      if (ctx_.is_vector(operand_type(id))) return true;
    }
    return false;
  }

  uint64_t vector_lanes_or_0(uint32_t t) const { return vector_lane_width(t) ? vector_lanes(t) : 0; }
  // vector_arg_bytes of a value of type t: most types are no vector, which their facts
  // say without a look at the Type (asked of every call's result and arguments).
  [[gnu::always_inline]] uint32_t vector_arg_bytes_of(uint32_t t) const {
    if (ctx_.kind(t) != TypeKind::kFixedVector) return 0;
    return vector_arg_bytes(vector_lane_width(t), vector_lanes_or_0(t), avx_);
  }
  uint32_t vector_arg_of(uint32_t a) const { return a < vector_arg_of_.size() ? vector_arg_of_[a] : kNone; }
  // The kVecArgument copy of each vector argument, at the start of the entry block
  // (export_vector_args of lib/flat_export.cpp).
  void export_vector_args() {
    for (const VectorArg& va : vector_args_)
      insts_.push_back(vector_argument_copy(base_block_, static_cast<uint32_t>(operands_.size()), va.reg, va.width,
                                            va.lanes));
  }
  // A use of argument `a` if it is a vector argument: its copy's value.
  bool vector_arg_operand(uint32_t a, FlatOperand& op) const {
    const uint32_t k = vector_arg_of(a);
    if (k == kNone) return false;
    op.kind = kOperandValue;
    op.index = base_inst_ + k;
    return true;
  }

  // vector_operand of lib/flat_export.cpp.
  FlatOperand vector_operand(uint32_t id) {
    FlatOperand op{};
    if (is_materialized(id)) {
      op.kind = kOperandValue;
      op.index = load_flat_.at(id & ~kLoadTag);
      return op;
    }
    if (id == kMetadataOperand || (id & kBlockTag)) throw Decline{"reader: vector operand"};
    const uint32_t fn = fn_index_in_module_;
    switch (ctx_.klass(fn, id)) {
      case Class::kInstruction:
        op.kind = kOperandValue;
        op.index = inst_flat_.at(ctx_.ref(fn, id).index);
        break;
      case Class::kUndef:
        op.kind = kOperandUndef;
        break;
      case Class::kZero:
        op.kind = kOperandZero;
        break;
      case Class::kArgument:
        if (!vector_arg_operand(ctx_.ref(fn, id).index, op)) reason("vector argument");
        break;
      default:
        reason("vector constant of " + ctx_.type_name(ctx_.type_of(fn, id)));
        break;
    }
    return op;
  }
  FlatInst& emit_vector(const Inst& in, uint8_t kind, std::initializer_list<FlatOperand> ops) {
    FlatInst& fi = emit(in, kOpVector, ops);
    fi.aux = kind;
    if (uint32_t w = vector_lane_width(in.type)) {
      fi.width = static_cast<uint8_t>(w);
      fi.aux32 = vector_lanes(in.type);
      fi.slot_size = round8(fi.aux32 * vector_lane_bytes(w));
    }
    return fi;
  }
  // A constant lane number (an extractelement or insertelement index) below `lanes`.
  bool lane_index(uint32_t id, uint32_t lanes, uint64_t* index) const {
    if (is_materialized(id) || id == kMetadataOperand || (id & kBlockTag)) return false;
    if (ctx_.klass(fn_index_in_module_, id) != Class::kInt) return false;
    *index = ctx_.int_value(fn_index_in_module_, id);
    return *index < lanes;
  }
  // A shufflevector's mask as ShuffleVectorInst::getShuffleMask gives it (-1: undef).
  std::vector<int64_t> shuffle_mask(uint32_t id, uint32_t lanes) const {
    const uint32_t fn = fn_index_in_module_;
    if (id == kMetadataOperand || (id & kBlockTag)) throw Decline{"reader: shufflevector mask"};
    const Class c = ctx_.klass(fn, id);
    if (c == Class::kZero) return std::vector<int64_t>(lanes, 0);
    if (c == Class::kUndef) return std::vector<int64_t>(lanes, -1);
    const Constant& k = ctx_.constant(fn, id);
    std::vector<int64_t> mask;
    if (c == Class::kDataSeq) {
      for (size_t i = 0; i < k.element_count(); ++i)
        mask.push_back(static_cast<int64_t>(static_cast<uint32_t>(k.element(i))));
    } else if (c == Class::kVector) {
      for (uint32_t e : k.operands) {
        Class ec = ctx_.klass(fn, e);
        if (ec == Class::kUndef) mask.push_back(-1);
        else if (ec == Class::kInt) mask.push_back(static_cast<int64_t>(static_cast<uint32_t>(ctx_.int_value(fn, e))));
        else throw Decline{"reader: shufflevector mask element"};
      }
    } else {
      throw Decline{"reader: shufflevector mask"};
    }
    if (mask.size() != lanes) throw Decline{"reader: shufflevector mask length"};
    return mask;
  }

  // A call of pshufb (llvm.x86.ssse3.pshuf.b.128 or llvm.x86.avx2.pshuf.b).
  bool byte_shuffle(const Inst& in) const {
    if (in.opcode != Opcode::kCall || in.operand_count < 1) return false;
    const uint32_t fn = called_function(in, op_id(in, in.operand_count - 1));
    if (fn == kNone) return false;
    const Intrinsic id = ctx_.intrinsic(fn);
    return id == Intrinsic::kX86PshufB128 || id == Intrinsic::kX86PshufB256;
  }
  void export_vector(const Inst& in) {
    const uint32_t t = in.type, w = vector_lane_width(t);
    auto refuse_vector = [&](const std::string& why) {
      reason("vectors");
      refuse(in, why);
    };
    if (byte_shuffle(in)) {  // <N x i8> table, <N x i8> selectors
      const uint32_t lanes = w == 8 ? vector_lanes(t) : 0;
      if (in.operand_count != 3 || (lanes != 16 && lanes != 32) || operand_type(op_id(in, 0)) != t ||
          operand_type(op_id(in, 1)) != t)
        return refuse_vector("byte shuffle of " + ctx_.type_name(t));
      FlatOperand table = vector_operand(op_id(in, 0));
      FlatOperand selectors = vector_operand(op_id(in, 1));
      emit_vector(in, kVecShuffleBytes, {table, selectors});
      return;
    }
    if (in.opcode == Opcode::kCall) {  // llvm.vector.reduce.*
      if (in.operand_count != 2) return refuse_vector("reduction of " + ctx_.type_name(t));
      const uint32_t from = operand_type(op_id(in, 0)), lane = vector_lane_width(from);
      if (!lane || lane != ctx_.scalar_width(t)) return refuse_vector("reduction of " + ctx_.type_name(from));
      FlatInst& fi = emit_vector(in, kVecReduce, {vector_operand(op_id(in, 0))});
      fi.aux32 = vector_lanes(from);
      fi.imm = reduction_kind(in);
      return;
    }
    switch (in.opcode) {
      case Opcode::kAdd:
      case Opcode::kSub:
      case Opcode::kMul:
      case Opcode::kShl:
      case Opcode::kLShr:
      case Opcode::kAShr:
      case Opcode::kAnd:
      case Opcode::kOr:
      case Opcode::kXor: {
        static const std::map<Opcode, uint16_t> kOps = {
            {Opcode::kAdd, kOpAdd}, {Opcode::kSub, kOpSub}, {Opcode::kMul, kOpMul},   {Opcode::kAnd, kOpAnd},
            {Opcode::kOr, kOpOr},   {Opcode::kXor, kOpXor}, {Opcode::kShl, kOpShl},   {Opcode::kLShr, kOpLshr},
            {Opcode::kAShr, kOpAshr}};
        const uint16_t op = kOps.at(in.opcode);
        if (!w || (w == 1 && op != kOpAnd && op != kOpOr && op != kOpXor))
          return refuse_vector("arithmetic on " + ctx_.type_name(t));
        FlatOperand a = vector_operand(op_id(in, 0));
        FlatOperand b = vector_operand(op_id(in, 1));
        emit_vector(in, kVecBinary, {a, b}).imm = op;
        return;
      }
      case Opcode::kICmp: {
        const uint32_t from = vector_lane_width(operand_type(op_id(in, 0)));
        if (!w || !from) return refuse_vector("compare of " + ctx_.type_name(operand_type(op_id(in, 0))));
        const uint8_t predicate = icmp_predicate(in);
        FlatOperand a = vector_operand(op_id(in, 0));
        FlatOperand b = vector_operand(op_id(in, 1));
        emit_vector(in, kVecIcmp, {a, b}).imm = predicate | (from << 8);
        return;
      }
      case Opcode::kTrunc:
      case Opcode::kZExt:
      case Opcode::kSExt: {
        const uint32_t from = vector_lane_width(operand_type(op_id(in, 0)));
        const char* name = in.opcode == Opcode::kTrunc ? "trunc" : in.opcode == Opcode::kZExt ? "zext" : "sext";
        if (!w || !from) return refuse_vector(std::string(name) + " of " + ctx_.type_name(t));
        const uint8_t kind = in.opcode == Opcode::kTrunc ? kVecTrunc : in.opcode == Opcode::kZExt ? kVecZext : kVecSext;
        emit_vector(in, kind, {vector_operand(op_id(in, 0))}).imm = from;
        return;
      }
      case Opcode::kBitCast:
        return export_vector_bitcast(in);
      case Opcode::kExtractElement: {
        const uint32_t from = operand_type(op_id(in, 0)), lane = vector_lane_width(from);
        uint64_t index = 0;
        if (in.operand_count < 2 || !lane || lane != ctx_.scalar_width(t) ||
            !lane_index(op_id(in, 1), vector_lanes(from), &index))
          return refuse_vector("instruction extractelement");
        FlatInst& fi = emit_vector(in, kVecExtract, {vector_operand(op_id(in, 0))});
        fi.aux32 = vector_lanes(from);
        fi.imm = static_cast<int64_t>(index);
        return;
      }
      case Opcode::kInsertElement: {
        uint64_t index = 0;
        if (in.operand_count < 3 || !w || !lane_index(op_id(in, 2), vector_lanes(t), &index))
          return refuse_vector("instruction insertelement");
        FlatOperand v = vector_operand(op_id(in, 0));
        FlatOperand x = operand(op_id(in, 1));
        emit_vector(in, kVecInsert, {v, x}).imm = static_cast<int64_t>(index);
        return;
      }
      case Opcode::kShuffleVector: {
        if (in.operand_count < 3 || !w || vector_lane_width(operand_type(op_id(in, 0))) != w)
          return refuse_vector("instruction shufflevector");
        FlatOperand a = vector_operand(op_id(in, 0));
        FlatOperand b = vector_operand(op_id(in, 1));
        std::vector<int64_t> mask = shuffle_mask(f_.operands[in.first_operand + 2], vector_lanes(t));
        FlatInst& fi = emit_vector(in, kVecShuffle, {a, b});
        fi.imm = vector_lanes(operand_type(op_id(in, 0)));
        for (int64_t pick : mask) {
          FlatOperand lane{};
          lane.kind = kOperandConst;
          lane.width = 64;
          lane.imm = pick;
          operands_.push_back(lane);
          insts_.back().operand_count++;
        }
        return;
      }
      default:  // not taken by computes_on_vectors
        throw Decline{"reader: vector instruction"};
    }
  }

  // export_vector_bitcast of lib/flat_export.cpp.
  void export_vector_bitcast(const Inst& in) {
    const uint32_t from = operand_type(op_id(in, 0)), t = in.type;
    const uint32_t lane = vector_lane_width(from);
    if (lane == 1 && ctx_.scalar_width(t) == vector_lanes(from) && ctx_.is_integer(t)) {
      emit_vector(in, kVecMaskToInt, {vector_operand(op_id(in, 0))}).aux32 = vector_lanes(from);
      return;
    }
    const uint32_t to = vector_lane_width(t);
    if (lane >= 8 && to >= 8 && alloc_size_of(from) == alloc_size_of(t)) {
      FlatInst& fi = emit(in, kOpExtract, {vector_operand(op_id(in, 0))});
      fi.aux32 = static_cast<uint32_t>(alloc_size_of(t));
      return;
    }
    reason("vectors");
    refuse(in, "bitcast of " + ctx_.type_name(from));
  }

  void check_vector_use(const Inst& in) {
    if (!vectors_) return;  // no value the body uses can be a vector
    if (in.opcode == Opcode::kLoad || in.opcode == Opcode::kStore || in.opcode == Opcode::kPhi) return;
    if (calls_a_function(in)) {  // export_call takes or refuses each vector argument itself
      if (ctx_.is_vector(in.type) && !vector_arg_bytes_of(in.type)) reason("vectors");
      return;
    }
    if (in.opcode == Opcode::kRet && (fn_flags_ & (kFnRetVector | kFnRetVector256))) return;  // in xmm0 or ymm0
    for (uint32_t k = 0; k < in.operand_count; ++k) {
      uint32_t id = op_id(in, k);
      if (id != kMetadataOperand && (id & kBlockTag)) continue;
      if (id == kMetadataOperand) continue;  // metadata is not a vector
      if (ctx_.is_vector(operand_type(id))) reason("vectors");
    }
    if (in.opcode == Opcode::kAlloca && in.aux != kNone && ctx_.is_vector(ctx_.type_of(fn_index_in_module_, in.aux)))
      reason("vectors");
    if (ctx_.is_vector(in.type)) reason("vectors");
  }

  // --- Memory.

  [[gnu::noinline]] void export_alloca(const Inst& in) {
    const uint32_t fn = fn_index_in_module_;
    const Constant* count = in.aux != kNone ? ctx_.int_constant(fn, in.aux) : nullptr;
    if (!in.static_alloca_candidate || !count) reason("dynamic alloca");
    if (in.align > 4096) reason("alloca aligned beyond 4096 bytes");
    FlatInst& fi = emit(in, kOpAlloca);
    uint64_t elems = !count ? 1 : ctx_.active_bits(*count) <= 31 ? ctx_.int_value(*count) : (1ull << 31);
    uint64_t elem_size = alloc_size_of(in.source_type);
    uint64_t size = elem_size > (1ull << 31) ? (1ull << 31) : elem_size * elems;
    if (size > (1u << 30)) reason("alloca larger than 1 GiB");
    insts_.back().aux32 = static_cast<uint32_t>(size);
    insts_.back().imm = static_cast<int64_t>(in.align);
    (void)fi;
  }

  bool pointer_in_other_space(uint32_t id) const {
    uint32_t t = operand_type(id);
    return ctx_.is_pointer(t) && ctx_.type(t).address_space != 0;
  }

  [[gnu::noinline]] void export_load(const Inst& in) {
    if (in.ordering != Ordering::kNotAtomic) check_atomic_access(in.type, in.align);
    uint32_t ptr = op_id(in, 0);
    if (pointer_in_other_space(ptr)) reason("address spaces");
    FlatInst& fi = emit(in, kOpLoad, {operand(ptr)});
    if (!insts_.back().width) insts_.back().aux32 = static_cast<uint32_t>(store_size_of(in.type));
    (void)fi;
  }

  [[gnu::noinline]] void export_store(const Inst& in) {
    uint32_t value = op_id(in, 0), ptr = op_id(in, 1);
    uint32_t vt = operand_type(value);
    if (in.ordering != Ordering::kNotAtomic) check_atomic_access(vt, in.align);
    if (pointer_in_other_space(ptr)) reason("address spaces");
    FlatOperand v = operand(value);
    FlatOperand p = operand(ptr);
    FlatInst& fi = emit(in, kOpStore, {v, p});
    if (in.ordering == Ordering::kSeqCst && !in.single_thread) fi.aux = kStoreSeqCst;
    if (!ctx_.scalar_width(vt)) fi.aux32 = static_cast<uint32_t>(store_size_of(vt));
  }

  [[gnu::noinline]] void export_gep(const Inst& in) {
    if (in.vector_gep || ctx_.is_vector(in.type)) return refuse(in, "vector getelementptr");
    const uint32_t fn = fn_index_in_module_;
    emit(in, kOpGep, {operand(op_id(in, 0))});
    size_t at = insts_.size() - 1;
    int64_t constant = 0;
    uint32_t cur = in.source_type;
    for (uint32_t k = 1; k < in.operand_count; ++k) {
      uint32_t idx = op_id(in, k);
      if (k > 1 && ctx_.type(cur).kind == TypeKind::kStruct) {
        const Constant* index = is_materialized(idx) ? nullptr : ctx_.int_constant(fn, idx);
        if (!index) throw Decline{"reader: struct index"};
        uint64_t field = ctx_.int_value(*index);
        if (field >= ctx_.type(cur).elements.size()) throw Decline{"reader: struct index out of range"};
        constant += static_cast<int64_t>(ctx_.dl.field_offset(m_, cur, static_cast<uint32_t>(field)));
        cur = ctx_.type(cur).elements[field];
        continue;
      }
      if (k > 1) {
        if (ctx_.type(cur).kind != TypeKind::kArray) throw Decline{"reader: getelementptr into a vector"};
        cur = ctx_.type(cur).elements.at(0);
      }
      int64_t stride = static_cast<int64_t>(alloc_size_of(cur));
      if (const Constant* index = is_materialized(idx) ? nullptr : ctx_.int_constant(fn, idx)) {
        int64_t term = 0;
        if (ctx_.int_width(fn, idx) > 64) reason("getelementptr index wider than 64 bits");
        else if (__builtin_mul_overflow(ctx_.int_sext(*index), stride, &term) ||
                 __builtin_add_overflow(constant, term, &constant))
          reason("getelementptr offset beyond 2 GiB");
        continue;
      }
      if (stride > INT32_MAX) reason("getelementptr stride beyond 2 GiB");
      FlatOperand o = operand(idx);
      o.imm = stride;
      add_operand(insts_[at], o);
    }
    if (constant > INT32_MAX || constant < INT32_MIN) reason("getelementptr offset beyond 2 GiB");
    insts_[at].imm = constant;
  }

  // --- Arithmetic, compares, selects, casts.

  [[gnu::noinline]] void export_binary(const Inst& in) {
    static const std::map<Opcode, uint16_t> kOps = {{Opcode::kAdd, kOpAdd},   {Opcode::kSub, kOpSub},
                                                    {Opcode::kMul, kOpMul},   {Opcode::kAnd, kOpAnd},
                                                    {Opcode::kOr, kOpOr},     {Opcode::kXor, kOpXor},
                                                    {Opcode::kShl, kOpShl},   {Opcode::kLShr, kOpLshr},
                                                    {Opcode::kAShr, kOpAshr}, {Opcode::kUDiv, kOpUdiv},
                                                    {Opcode::kSDiv, kOpSdiv}, {Opcode::kURem, kOpUrem},
                                                    {Opcode::kSRem, kOpSrem}};
    if (!ctx_.is_integer(in.type)) reason("arithmetic on " + ctx_.type_name(in.type));
    FlatOperand a = operand(op_id(in, 0));
    FlatOperand b = operand(op_id(in, 1));
    emit(in, kOps.at(in.opcode), {a, b});
  }

  static uint8_t icmp_predicate(const Inst& in) {
    static const uint8_t kPred[] = {kPredEq,  kPredNe,  kPredUgt, kPredUge, kPredUlt,
                                    kPredUle, kPredSgt, kPredSge, kPredSlt, kPredSle};
    if (in.aux < 32 || in.aux > 41) throw Decline{"reader: icmp predicate " + std::to_string(in.aux)};
    return kPred[in.aux - 32];
  }
  [[gnu::noinline]] void export_icmp(const Inst& in) {
    uint8_t predicate = icmp_predicate(in);
    FlatOperand a = operand(op_id(in, 0));
    FlatOperand b = operand(op_id(in, 1));
    emit(in, kOpIcmp, {a, b}).aux = predicate;
  }

  // export_libm_call of lib/flat_export.cpp: a call of the C function.
  void export_libm_call(const Inst& in, const std::string& refusal, std::string_view base, uint32_t arg_count) {
    if (!ctx_.is_float_or_double(in.type)) return refuse(in, refusal);
    if (arg_count > in.operand_count) throw Decline{"reader: libm call operands"};
    const size_t at = emit_library_call(in, libm_function(base, ctx_.type(in.type).kind == TypeKind::kDouble));
    insts_[at].aux |= kCallRetFloat;
    for (uint32_t a = 0; a < arg_count; ++a) {
      uint32_t v = op_id(in, a);
      if (v == kMetadataOperand) throw Decline{"reader: metadata argument"};
      FlatOperand o = operand(v);
      if (ctx_.is_float_or_double(operand_type(v))) o.flags |= kOperandFloat;
      add_operand(insts_[at], o);
    }
  }

  // Floating point (export_float of lib/flat_export.cpp).
  [[gnu::noinline]] void export_float(const Inst& in) {
    static const std::map<Opcode, uint8_t> kKinds = {
        {Opcode::kFAdd, kFloatAdd},          {Opcode::kFSub, kFloatSub},         {Opcode::kFMul, kFloatMul},
        {Opcode::kFDiv, kFloatDiv},          {Opcode::kFNeg, kFloatNeg},         {Opcode::kFCmp, kFloatCmp},
        {Opcode::kFPExt, kFloatExt},         {Opcode::kFPTrunc, kFloatTrunc},    {Opcode::kSIToFP, kFloatFromSigned},
        {Opcode::kUIToFP, kFloatFromUnsigned}, {Opcode::kFPToSI, kFloatToSigned}, {Opcode::kFPToUI, kFloatToUnsigned}};
    uint8_t kind = kKinds.at(in.opcode);
    bool binary = float_kind_is_binary(kind);
    if (in.operand_count < (binary ? 2u : 1u)) throw Decline{"reader: floating-point operands"};
    uint32_t from = operand_type(op_id(in, 0)), to = in.type;
    bool fits = false;
    switch (kind) {
      case kFloatFromSigned:
      case kFloatFromUnsigned:
        fits = ctx_.is_float_or_double(to) && ctx_.is_integer(from) && ctx_.scalar_width(from);
        break;
      case kFloatToSigned:
      case kFloatToUnsigned:
        fits = ctx_.is_float_or_double(from) && ctx_.is_integer(to) && ctx_.scalar_width(to);
        break;
      case kFloatCmp:
        fits = ctx_.is_float_or_double(from);
        break;
      default:
        fits = ctx_.is_float_or_double(from) && ctx_.is_float_or_double(to);
        break;
    }
    if (!fits) reason(std::string(opcode_name(in.opcode)) + " of " + ctx_.type_name(from) + " to " + ctx_.type_name(to));
    FlatOperand a = operand(op_id(in, 0));
    if (binary) {
      FlatOperand b = operand(op_id(in, 1));
      emit(in, kOpFloat, {a, b});
    } else {
      emit(in, kOpFloat, {a});
    }
    FlatInst& fi = insts_.back();
    fi.aux = kind;
    if (kind == kFloatCmp) {
      if (in.aux > kFcmpTrue) throw Decline{"reader: fcmp predicate " + std::to_string(in.aux)};
      fi.imm = in.aux;
    }
  }

  [[gnu::noinline]] void export_select(const Inst& in) {
    TypeKind k = ctx_.type(in.type).kind;
    bool aggregate = (k == TypeKind::kStruct || k == TypeKind::kArray) && ctx_.is_plain_aggregate(in.type);
    if (!ctx_.scalar_width(in.type) && !aggregate) reason("select of " + ctx_.type_name(in.type));
    FlatOperand c = operand(op_id(in, 0));
    FlatOperand t = operand(op_id(in, 1));
    FlatOperand f = operand(op_id(in, 2));
    FlatInst& fi = emit(in, kOpSelect, {c, t, f});
    if (aggregate) fi.aux32 = static_cast<uint32_t>(alloc_size_of(in.type));
  }

  [[gnu::noinline]] void export_cast(const Inst& in) {
    uint32_t src = op_id(in, 0);
    switch (in.opcode) {
      case Opcode::kBitCast: {
        uint32_t from = operand_type(src);
        if (ctx_.scalar_width(from) != ctx_.scalar_width(in.type) || !ctx_.scalar_width(from))
          reason("bitcast of " + ctx_.type_name(from));
        emit(in, kOpCopy, {operand(src)});
        return;
      }
      case Opcode::kTrunc:
      case Opcode::kPtrToInt:
        emit(in, kOpTrunc, {operand(src)});
        return;
      case Opcode::kSExt: {
        FlatOperand o = operand(src);
        emit(in, kOpSext, {o}).aux = static_cast<uint8_t>(ctx_.scalar_width(operand_type(src)));
        return;
      }
      default: {
        const char* name = in.opcode == Opcode::kZExt ? "zext" : in.opcode == Opcode::kIntToPtr ? "inttoptr" : "freeze";
        if (!ctx_.scalar_width(in.type)) reason(std::string(name) + " of " + ctx_.type_name(in.type));
        emit(in, kOpCopy, {operand(src)});
        return;
      }
    }
  }

  // --- Aggregates and phis.

  uint64_t aggregate_offset(uint32_t t, const Inst& in, uint32_t* field) const {
    uint64_t offset = 0;
    for (uint32_t k = 0; k < in.index_count; ++k) {
      uint32_t idx = f_.indices.at(in.first_index + k);
      const Type& ty = ctx_.type(t);
      if (ty.kind == TypeKind::kStruct) {
        if (idx >= ty.elements.size()) throw Decline{"reader: aggregate index out of range"};
        offset += ctx_.dl.field_offset(m_, t, idx);
        t = ty.elements[idx];
      } else if (ty.kind == TypeKind::kArray) {
        t = ty.elements.at(0);
        offset += alloc_size_of(t) * idx;
      } else {
        throw Decline{"reader: aggregate index into " + ctx_.type_name(t)};
      }
    }
    *field = t;
    return offset;
  }

  [[gnu::noinline]] void export_extract_value(const Inst& in) {
    uint32_t agg = op_id(in, 0);
    uint32_t field = kNone;
    uint64_t offset = aggregate_offset(operand_type(agg), in, &field);
    FlatInst& fi = emit(in, kOpExtract, {operand(agg)});
    fi.imm = static_cast<int64_t>(offset);
    if (!fi.width) fi.aux32 = static_cast<uint32_t>(alloc_size_of(field));
  }

  [[gnu::noinline]] void export_insert_value(const Inst& in) {
    uint32_t field = kNone;
    uint64_t offset = aggregate_offset(in.type, in, &field);
    FlatOperand a = operand(op_id(in, 0));
    FlatOperand v = operand(op_id(in, 1));
    FlatInst& fi = emit(in, kOpInsert, {a, v});
    fi.imm = static_cast<int64_t>(offset);
    if (!ctx_.scalar_width(field)) fi.aux32 = static_cast<uint32_t>(alloc_size_of(field));
  }

  [[gnu::noinline]] void export_phi(const Inst& in) {
    emit(in, kOpPhi);
    size_t at = insts_.size() - 1;
    if (ctx_.scalar_width(in.type)) {
      insts_[at].slot_size = 16;
    } else if (ctx_.is_i128(in.type)) {
      insts_[at].width = kWideBits;
      insts_[at].aux32 = 16;
      insts_[at].slot_size = 32;
    } else {
      uint32_t bytes = static_cast<uint32_t>(alloc_size_of(in.type));
      insts_[at].aux32 = bytes;
      insts_[at].slot_size = 2 * round8(bytes);
    }
    if (in.operand_count % 2) throw Decline{"reader: phi operands"};
    for (uint32_t k = 0; k < in.operand_count; k += 2) {
      FlatOperand v = operand(op_id(in, k));
      add_operand(insts_[at], v);
      add_operand(insts_[at], operand(op_id(in, k + 1)));
    }
  }

  // --- Control flow.

  [[gnu::noinline]] void export_br(const Inst& in) {
    if (in.operand_count == 1) {
      emit(in, kOpBr, {operand(op_id(in, 0))});
      return;
    }
    FlatOperand c = operand(op_id(in, 0));
    FlatOperand t = operand(op_id(in, 1));
    FlatOperand f = operand(op_id(in, 2));
    emit(in, kOpCondBr, {c, t, f});
  }

  [[gnu::noinline]] void export_switch(const Inst& in) {
    FlatOperand c = operand(op_id(in, 0));
    FlatOperand d = operand(op_id(in, 1));
    emit(in, kOpSwitch, {c, d});
    size_t at = insts_.size() - 1;
    for (uint32_t k = 2; k + 1 < in.operand_count; k += 2) {
      FlatOperand v = operand(op_id(in, k));
      add_operand(insts_[at], v);
      add_operand(insts_[at], operand(op_id(in, k + 1)));
    }
  }

  [[gnu::noinline]] void export_landing_pad(const Inst& in) {
    const Type& st = ctx_.type(in.type);
    if (st.kind != TypeKind::kStruct || st.elements.size() != 2 || !ctx_.is_pointer(st.elements[0]) ||
        !(ctx_.is_integer(st.elements[1]) && ctx_.type(st.elements[1]).width == 32))
      reason("landingpad of " + ctx_.type_name(in.type));
    bool catch_all = false, empty_filter = false;
    for (uint32_t c = 0; c < in.operand_count; ++c) {
      uint32_t clause = op_id(in, c);
      bool filter = f_.clause_filter.at(in.first_operand + c);
      if (!filter) {
        if (ctx_.is_null_value(fn_index_in_module_, clause)) catch_all = true;
        else reason("exceptions: catch clause with a type");
      } else {
        const Type& at = ctx_.type(operand_type(clause));
        if (at.kind == TypeKind::kArray && at.count == 0) empty_filter = true;
        else reason("exceptions: filter clause with types");
      }
    }
    if (catch_all && empty_filter) reason("exceptions: catch and filter in one landing pad");
    FlatInst& fi = emit(in, kOpLandingPad);
    fi.aux = catch_all ? kLandingPadCatchAll : empty_filter ? kLandingPadEmptyFilter : kLandingPadCleanup;
    fi.slot_size = 16;
  }

  [[gnu::noinline]] void export_resume(const Inst& in) {
    FlatOperand resume{};
    resume.kind = kOperandSymbol;
    resume.width = 64;
    resume.index = library_symbol("_Unwind_Resume");
    FlatOperand value = operand(op_id(in, 0));
    if (value.kind != kOperandValue) reason("resume of a constant");
    emit(in, kOpResume, {value, resume});
  }

  // --- Atomics.

  [[gnu::noinline]] void export_atomic_rmw(const Inst& in) {
    uint32_t ptr = op_id(in, 0), val = op_id(in, 1);
    check_atomic_access(operand_type(val), in.align);
    if (pointer_in_other_space(ptr)) reason("address spaces");
    FlatOperand p = operand(ptr);
    FlatOperand v = operand(val);
    FlatInst& fi = emit(in, kOpAtomicRmw, {p, v});
    static const uint8_t kKinds[] = {kRmwXchg, kRmwAdd, kRmwSub, kRmwAnd, kRmwNand, kRmwOr, kRmwXor};
    // RMW_MAX (7) to RMW_FMINIMUM (20) by LLVM's names (AtomicRMWInst::getOperationName).
    static const char* kOthers[] = {"max",  "min",       "umax",      "umin",      "fadd",     "fsub",     "fmax",
                                    "fmin", "uinc_wrap", "udec_wrap", "usub_cond", "usub_sat", "fmaximum", "fminimum"};
    const uint32_t first_other = uint32_t(RmwOp::kMax);
    if (in.aux <= uint32_t(RmwOp::kXor)) fi.aux = kKinds[in.aux];
    else if (in.aux - first_other < std::size(kOthers))
      reason(std::string("atomics: atomicrmw ") + kOthers[in.aux - first_other]);
    else throw Decline{"reader: atomicrmw operation " + std::to_string(in.aux)};
  }

  [[gnu::noinline]] void export_cmpxchg(const Inst& in) {
    uint32_t ptr = op_id(in, 0), cmp = op_id(in, 1), nv = op_id(in, 2);
    check_atomic_access(operand_type(cmp), in.align);
    if (pointer_in_other_space(ptr)) reason("address spaces");
    FlatOperand p = operand(ptr);
    FlatOperand c = operand(cmp);
    FlatOperand n = operand(nv);
    FlatInst& fi = emit(in, kOpCmpXchg, {p, c, n});
    fi.imm = static_cast<int64_t>(ctx_.dl.field_offset(m_, in.type, 1));
    if (fi.slot_size < 8) fi.slot_size = 8;
  }

  // --- Calls (export_call and export_intrinsic of lib/flat_export.cpp).

  // CallBase::getCalledFunction: the callee when it is a function of the call's type.
  // A call or invoke of a function: not an intrinsic, not inline asm (as export_call
  // tells them apart).
  bool calls_a_function(const Inst& in) const {
    const bool invoke = in.opcode == Opcode::kInvoke;
    if ((in.opcode != Opcode::kCall && !invoke) || in.operand_count < (invoke ? 3u : 1u)) return false;
    const uint32_t callee = op_id(in, in.operand_count - (invoke ? 3 : 1));
    if (is_inline_asm(callee)) return false;
    const uint32_t callee_fn = called_function(in, callee);
    return callee_fn == kNone || !reserved_name(ctx_.globals[callee_fn].name);
  }

  // A callee that is an inline asm constant. klass() is asked of constants only (as of
  // anything else it would say what ref() says).
  bool is_inline_asm(uint32_t callee) const {
    if (is_materialized(callee) || callee == kMetadataOperand || (callee & kBlockTag)) return false;
    const uint32_t fn = fn_index_in_module_;
    if (ctx_.ref(fn, callee).kind != ValueKind::kConstant) return false;
    int vid = -1;
    return ctx_.klass(fn, callee, &vid) == Class::kOtherConstant && vid == kValueIdInlineAsm;
  }

  uint32_t called_function(const Inst& in, uint32_t callee) const {
    const uint32_t f = callee_operand_function(callee);
    return f != kNone && ctx_.globals[f].value_type == in.source_type ? f : kNone;
  }
  // The callee operand as a function whatever the call's type, as LLVM's
  // CallBase::hasFnAttrOnCalledFunction takes it (called_function is getCalledFunction).
  uint32_t callee_operand_function(uint32_t callee) const {
    if (is_materialized(callee) || callee == kMetadataOperand || (callee & kBlockTag)) return kNone;
    const ValueRef& r = ctx_.ref(fn_index_in_module_, callee);
    if (r.kind != ValueKind::kGlobal || ctx_.globals[r.index].kind != GlobalKind::kFunction) return kNone;
    return r.index;
  }

  // CallBase::paramHasAttr for every kind at once: the call site's attributes (`call`,
  // attrs(in.attributes)), then the called function's (`callee`; an attribute in
  // either counts).
  static AttrSet param_attrs(const AttrList* call, const AttrList* callee, uint32_t arg) {
    AttrSet set;
    if (call && arg < call->params.size()) set.add(call->params[arg]);
    if (callee && arg < callee->params.size()) set.add(callee->params[arg]);
    return set;
  }

  // LLVM's CallInst::doesNotReturn: noreturn on the call or on the function it calls.
  bool call_does_not_return(const Inst& call) const {
    if (call.opcode != Opcode::kCall || call.operand_count == 0) return false;
    if (const AttrList* a = attrs(call.attributes); a && a->function.has(kAttrNoReturn)) return true;
    const uint32_t callee_fn = callee_operand_function(op_id(call, call.operand_count - 1));
    if (callee_fn == kNone) return false;
    const AttrList* fa = attrs(m_.globals[ctx_.globals[callee_fn].source].attributes);
    return fa && fa->function.has(kAttrNoReturn);
  }

  [[gnu::noinline]] void export_call(const Inst& in) {
    const bool invoke = in.opcode == Opcode::kInvoke;
    const uint32_t arg_count = in.operand_count - (invoke ? 3 : 1);
    if (in.operand_count < (invoke ? 3u : 1u)) throw Decline{"reader: call operands"};
    const uint32_t callee = op_id(in, arg_count);
    if (is_inline_asm(callee)) return export_inline_asm(in, ctx_.constant(fn_index_in_module_, callee));
    const uint32_t callee_fn = called_function(in, callee);
    if (callee_fn != kNone && reserved_name(ctx_.globals[callee_fn].name)) {
      if (invoke) return refuse(in, "invoke of intrinsic " + std::string(ctx_.globals[callee_fn].name));
      return export_intrinsic(in, callee_fn, arg_count);
    }
    if (!stamp_calling_convention(in.calling_conv)) reason("call with calling convention " + std::to_string(in.calling_conv));
    if (in.has_bundles) reason("operand bundles");
    if (in.musttail) reason("musttail call");
    const uint32_t fnty = in.source_type;
    const uint32_t r = ctx_.type(fnty).elements.at(0);
    bool pair = false;
    unsigned w0 = 0, w1 = 0, floats = 0;
    uint64_t off1 = 0;
    const uint32_t ret_vector = vector_arg_bytes_of(r);
    if (!ctx_.is_void(r) && !ctx_.is_int_like(r) && !ctx_.is_i128(r) && !ctx_.is_float_or_double(r) && !ret_vector) {
      if (ctx_.is_scalar_pair(r, &w0, &w1, &off1, &floats)) pair = true;
      else reason("call returning " + ctx_.type_name(r));
    }
    FlatOperand callee_op = operand(callee);
    emit(in, invoke ? kOpInvoke : kOpCall, {callee_op});
    size_t at = insts_.size() - 1;
    if (pair) {
      insts_[at].aux32 = w0 | (w1 << 8) | (floats << 16);
      insts_[at].imm = static_cast<int64_t>(off1);
    }
    if (ctx_.is_i128(r)) insts_[at].width = kWideBits;  // in rax and rdx
    if (ctx_.type(fnty).vararg) insts_[at].aux |= kCallVarargs;
    if (ctx_.is_float_or_double(r)) insts_[at].aux |= kCallRetFloat;  // in xmm0
    if (ret_vector) insts_[at].aux |= ret_vector == 32 ? kCallRetVector256 : kCallRetVector;  // in xmm0 or ymm0
    uint32_t xmm = 0;  // the vector registers the arguments so far take
    // The call's and the callee's attribute lists, found at the first argument (where
    // one out of range is declined) and kept for the others.
    const AttrList *call_attrs = nullptr, *callee_attrs = nullptr;
    for (uint32_t a = 0; a < arg_count; ++a) {
      uint32_t v = op_id(in, a);
      if (v == kMetadataOperand) throw Decline{"reader: metadata argument"};
      uint32_t t = operand_type(v);
      const uint32_t vector_bytes = vector_arg_bytes_of(t);
      if (vector_bytes && xmm >= kVectorArgRegisters) reason("vector call argument past xmm7");
      else if (!vector_bytes && !ctx_.is_int_like(t) && !ctx_.is_float_or_double(t) && !ctx_.is_i128(t))
        reason("call argument type " + ctx_.type_name(t));
      xmm += vector_bytes || ctx_.is_float_or_double(t);
      if (a == 0) {
        call_attrs = attrs(in.attributes);
        if (callee_fn != kNone) callee_attrs = attrs(m_.globals[ctx_.globals[callee_fn].source].attributes);
      }
      bool sign_extended = false;
      if (call_attrs || callee_attrs) {  // without either list, no attribute to ask of
        const AttrSet pa = param_attrs(call_attrs, callee_attrs, a);
        if (pa.has(kAttrByVal) || pa.has(kAttrInAlloca) || pa.has(kAttrPreallocated))
          reason("byval, inalloca or preallocated call argument");
        sign_extended = pa.has(kAttrSExt);
      }
      // A vector's value or zero (its flags name its register class and size).
      FlatOperand o = vector_bytes ? vector_operand(v) : operand(v);
      if (sign_extended) o.flags |= kOperandSignExt;
      if (ctx_.is_float_or_double(t)) o.flags |= kOperandFloat;
      if (vector_bytes) o.flags = kOperandFloat | (vector_bytes == 32 ? kOperandVector256 : kOperandVector);
      add_operand(insts_[at], o);
    }
    if (invoke) {
      add_operand(insts_[at], operand(op_id(in, arg_count + 1)));
      add_operand(insts_[at], operand(op_id(in, arg_count + 2)));
    }
  }

  // An empty asm with inputs and clobbers only is no code (stamp_empty_asm); the
  // constant holds the template's characters, then the constraints'.
  void export_inline_asm(const Inst& in, const Constant& c) {
    if (c.kind != ConstKind::kInlineAsm || c.flags > c.words.size()) throw Decline{"reader: inline asm constant"};
    std::string text;
    for (uint64_t ch : c.words) text += static_cast<char>(ch);  // LLVM keeps each character's low byte
    std::string_view all(text);
    bool is_void = ctx_.is_void(ctx_.type(in.source_type).elements.at(0));
    if (in.opcode == Opcode::kCall && is_void && !in.has_bundles &&
        stamp_empty_asm(all.substr(0, c.flags), all.substr(c.flags))) {
      emit(in, kOpNop);
      return;
    }
    refuse(in, "inline asm");
  }

  void export_intrinsic(const Inst& in, uint32_t callee_fn, uint32_t arg_count) {
    // The reader's string (an intrinsic is a declaration the reader read, never renamed).
    const std::string_view name = ctx_.m.globals[ctx_.globals[callee_fn].source].name;
    auto arg = [&](uint32_t a) {
      if (a >= arg_count) throw Decline{"reader: intrinsic arguments"};
      return op_id(in, a);
    };
    switch (Intrinsic id = ctx_.intrinsic(callee_fn)) {
      case Intrinsic::kLifetimeStart:
      case Intrinsic::kLifetimeEnd:
      case Intrinsic::kAssume:
      case Intrinsic::kNoaliasScopeDecl:
      case Intrinsic::kDoNothing:
      case Intrinsic::kSideEffect:
      case Intrinsic::kDbgDeclare:
      case Intrinsic::kDbgValue:
      case Intrinsic::kDbgLabel:
        emit(in, kOpNop);
        return;
      case Intrinsic::kExpect:
        emit(in, kOpCopy, {operand(arg(0))});
        return;
      case Intrinsic::kThreadlocalAddress:
        return export_tls_address(in, arg(0), name);
      case Intrinsic::kTrap:
      case Intrinsic::kUbsanTrap:
        emit(in, kOpUnreachable);
        return;
      case Intrinsic::kMemcpy:
      case Intrinsic::kMemmove:
      case Intrinsic::kMemset: {
        const char* lib = id == Intrinsic::kMemcpy ? "memcpy" : id == Intrinsic::kMemmove ? "memmove" : "memset";
        const size_t at = emit_library_call(in, lib);
        for (uint32_t a = 0; a < 3; ++a) add_operand(insts_[at], operand(arg(a)));
        return;
      }
      case Intrinsic::kUaddWithOverflow:
      case Intrinsic::kSaddWithOverflow:
      case Intrinsic::kUsubWithOverflow:
      case Intrinsic::kSsubWithOverflow:
      case Intrinsic::kUmulWithOverflow:
      case Intrinsic::kSmulWithOverflow:
        return export_overflow_intrinsic(in, id, arg(0), arg(1));
      case Intrinsic::kIsConstant: {
        FlatOperand zero{};
        zero.kind = kOperandConst;
        zero.width = 1;
        emit(in, kOpCopy, {zero});
        return;
      }
      case Intrinsic::kFabs:
      case Intrinsic::kSqrt:
      case Intrinsic::kMinnum:
      case Intrinsic::kMaxnum: {  // export_float_intrinsic of lib/flat_export.cpp
        if (!ctx_.is_float_or_double(in.type)) reason("intrinsic " + std::string(name));
        const uint8_t kind = id == Intrinsic::kFabs ? kFloatAbs
                             : id == Intrinsic::kSqrt ? kFloatSqrt
                             : id == Intrinsic::kMinnum ? kFloatMin
                                                        : kFloatMax;
        FlatOperand a = operand(arg(0));
        FlatInst& fi = float_kind_is_binary(kind) ? emit(in, kOpFloat, {a, operand(arg(1))}) : emit(in, kOpFloat, {a});
        fi.aux = kind;
        return;
      }
      case Intrinsic::kFmuladd: {  // export_fmuladd of lib/flat_export.cpp
        if (!ctx_.is_float_or_double(in.type)) reason("intrinsic " + std::string(name));
        if (may_fuse_) reason("intrinsic " + std::string(name) + " on a target that may fuse it");
        FlatInst& fi = emit(in, kOpFloat, {operand(arg(0)), operand(arg(1)), operand(arg(2))});
        fi.aux = kFloatMulAdd;
        return;
      }
      case Intrinsic::kFptosiSat:
      case Intrinsic::kFptouiSat: {  // export_saturating_conversion of lib/flat_export.cpp
        if (!ctx_.is_float_or_double(operand_type(arg(0))) || !ctx_.is_integer(in.type) || !ctx_.scalar_width(in.type))
          reason("intrinsic " + std::string(name));
        FlatInst& fi = emit(in, kOpFloat, {operand(arg(0))});
        fi.aux = id == Intrinsic::kFptosiSat ? kFloatToSignedSat : kFloatToUnsignedSat;
        return;
      }
      case Intrinsic::kLibmCall:
        return export_libm_call(in, "intrinsic " + std::string(name), intrinsic_base(name), arg_count);
      case Intrinsic::kNotIntrinsic:
      case Intrinsic::kUnknownIntrinsic:
        return refuse(in, "intrinsic " + std::string(name));
      default:
        return export_bit_intrinsic(in, id, name, arg_count);
    }
  }

  void export_overflow_intrinsic(const Inst& in, Intrinsic id, uint32_t a, uint32_t b) {
    uint32_t t = operand_type(a);
    unsigned w = ctx_.scalar_width(t);
    if (!(w == 8 || w == 16 || w == 32 || w == 64)) reason("overflow intrinsic on " + ctx_.type_name(t));
    FlatOperand x = operand(a);
    FlatOperand y = operand(b);
    FlatInst& fi = emit(in, kOpOverflow, {x, y});
    fi.aux = id == Intrinsic::kUaddWithOverflow ? kOvfUadd
        : id == Intrinsic::kSaddWithOverflow    ? kOvfSadd
        : id == Intrinsic::kUsubWithOverflow    ? kOvfUsub
        : id == Intrinsic::kSsubWithOverflow    ? kOvfSsub
        : id == Intrinsic::kUmulWithOverflow    ? kOvfUmul
                                                : kOvfSmul;
    if (ctx_.type(in.type).kind != TypeKind::kStruct) throw Decline{"reader: overflow intrinsic type"};
    fi.imm = static_cast<int64_t>(ctx_.dl.field_offset(m_, in.type, 1));
    if (fi.slot_size < 8) fi.slot_size = 8;
  }

  void export_bit_intrinsic(const Inst& in, Intrinsic id, std::string_view name, uint32_t arg_count) {
    static const std::map<Intrinsic, uint8_t> kKinds = {
        {Intrinsic::kCtpop, kBitCtpop},     {Intrinsic::kCtlz, kBitCtlz},       {Intrinsic::kCttz, kBitCttz},
        {Intrinsic::kBswap, kBitBswap},     {Intrinsic::kAbs, kBitAbs},         {Intrinsic::kUmin, kBitUmin},
        {Intrinsic::kUmax, kBitUmax},       {Intrinsic::kSmin, kBitSmin},       {Intrinsic::kSmax, kBitSmax},
        {Intrinsic::kUaddSat, kBitUaddSat}, {Intrinsic::kUsubSat, kBitUsubSat}, {Intrinsic::kUcmp, kBitUcmp},
        {Intrinsic::kScmp, kBitScmp},       {Intrinsic::kSaddSat, kBitSaddSat}, {Intrinsic::kSsubSat, kBitSsubSat},
        {Intrinsic::kFshl, kBitFshl},       {Intrinsic::kFshr, kBitFshr},       {Intrinsic::kBitreverse, kBitBitreverse}};
    auto it = kKinds.find(id);
    if (it == kKinds.end()) throw Decline{"reader: intrinsic " + std::string(name)};
    uint8_t kind = it->second;
    if (arg_count < bit_op_operands(kind)) throw Decline{"reader: intrinsic arguments"};
    uint32_t t = operand_type(op_id(in, 0));
    if (!ctx_.is_integer(t) || !bit_op_width(kind, ctx_.scalar_width(t))) reason("intrinsic " + std::string(name));
    FlatInst& fi = emit(in, kOpBitOp, {operand(op_id(in, 0))});
    fi.aux = kind;
    size_t at = insts_.size() - 1;
    for (uint32_t a = 1; a < bit_op_operands(kind); ++a) add_operand(insts_[at], operand(op_id(in, a)));
  }

  // export_tls_address of lib/flat_export.cpp.
  void export_tls_address(const Inst& in, uint32_t var, std::string_view name) {
    const uint32_t fn = fn_index_in_module_;
    const bool global =
        !is_materialized(var) && var != kMetadataOperand && !(var & kBlockTag) && ctx_.klass(fn, var) == Class::kGlobal;
    const uint32_t g = global ? ctx_.ref(fn, var).index : kNone;
    if (g == kNone || ctx_.globals[g].kind != GlobalKind::kVariable || !ctx_.globals[g].thread_local_)
      return refuse(in, "intrinsic " + std::string(name));
    FlatOperand address{}, get_addr{};
    address.kind = get_addr.kind = kOperandSymbol;
    address.width = get_addr.width = 64;
    address.index = symbol(g);
    get_addr.index = library_symbol("__tls_get_addr");
    emit(in, kOpTlsAddress, {address, get_addr});
  }

  // emit_library_call of lib/flat_export.cpp.
  size_t emit_library_call(const Inst& in, const char* name) {
    FlatOperand callee_op{};
    callee_op.kind = kOperandSymbol;
    callee_op.width = 64;
    callee_op.index = library_symbol(name);
    emit(in, kOpCall, {callee_op});
    return insts_.size() - 1;
  }

  uint32_t library_symbol(const char* name) {
    for (const auto& [address, index] : library_by_address_)
      if (address == name) return index;
    const uint32_t index = library_symbol_by_name(name);
    library_by_address_.emplace_back(name, index);
    return index;
  }
  uint32_t library_symbol_by_name(const char* name) {
    if (auto it = ctx_.library_functions.find(name); it != ctx_.library_functions.end()) return symbol(it->second);
    auto [it, inserted] = library_index_.emplace(name, static_cast<uint32_t>(symbol_values_.size()));
    if (inserted) {
      symbol_values_.push_back(kNone);
      fixed_names_.resize(symbol_values_.size());
      fixed_names_.back() = name;
    }
    return it->second;
  }

  ModuleContext& ctx_;
  const BcModule& m_;
  FlatModuleData& out_;
  std::vector<uint32_t>& symbol_values_;
  std::vector<std::string>& fixed_names_;
  std::vector<uint32_t>& symbol_index_;
  std::unordered_map<std::string, uint32_t>& library_index_;
  const uint32_t fn_index_in_module_;
  const BcFunction& f_;
  const GlobalInfo& g_;
  const Materialized& mat_;
  uint32_t current_ = 0;
  // The entries of mat_.replaced for instruction current_ (op_id's).
  const Materialized::Replaced *replaced_ = nullptr, *replaced_end_ = nullptr;
  // Whether an operand of the body can be a vector, or an i128 (a value of the body or
  // of the module is one): without, export_inst does not look at every operand's type.
  bool vectors_ = true, wide_ = true;
  std::vector<uint32_t>&inst_flat_, &load_flat_;
  std::vector<BcDebugLoc>& flat_locs_;
  std::vector<std::pair<const char*, uint32_t>>& library_by_address_;
  std::vector<uint8_t>& known_;
  std::vector<FlatOperand>& known_operands_;
  std::vector<uint64_t>&alloc_sizes_, &store_sizes_;
  size_t reason_calls_ = 0;  // reason() calls: known_operand keeps what gave none
  uint32_t module_values_ = 0, own_value_count_ = 0;  // operand()'s view of the body's values
  const ValueRef* own_values_ = nullptr;
  std::vector<FlatInst>& insts_;
  std::vector<FlatOperand>& operands_;
  std::vector<FlatBlock>& blocks_;
  uint32_t base_inst_ = 0, base_block_ = 0, base_operand_ = 0, base_arg_ = 0, fn_index_ = 0;
  uint32_t fn_flags_ = 0, sret_arg_ = 0, personality_ = 0;
  uint16_t float_args_ = 0;
  bool avx_ = false;  // the function's target-features give it AVX (kAttrKilnAvx)
  bool may_fuse_ = false;  // its target may fuse fmuladd (kAttrKilnMayFuse)
  // A vector argument (vector_arg_bytes): the register it comes in and its lanes; by
  // argument, its index among them or kNone.
  struct VectorArg {
    uint32_t reg, width, lanes;
  };
  std::vector<VectorArg> vector_args_;
  std::vector<uint32_t> vector_arg_of_;
  uint8_t ret_leaf_float_ = 0;
  uint64_t ret_off1_ = 0;
  uint8_t ret_w0_ = 0, ret_w1_ = 0;
};

// --- The module: globals, materialize_aggregate_constants, the functions, renaming,
// the global data.

std::vector<GlobalInfo> global_infos(const BcModule& m) {
  std::vector<GlobalInfo> out;
  out.reserve(m.globals.size());
  for (uint32_t i = 0; i < m.globals.size(); ++i) {
    const Global& g = m.globals[i];
    GlobalInfo info{g.kind,
                    g.name,
                    g.linkage,
                    g.visibility,
                    g.kind == GlobalKind::kFunction ? g.body == kNone
                                                    : g.kind == GlobalKind::kVariable && g.initializer == kNone,
                    g.constant,
                    g.thread_local_,
                    g.comdat != kNone,
                    g.value_type,
                    g.section,
                    g.align};
    info.init = g.kind == GlobalKind::kVariable ? g.initializer : kNone;
    info.body = g.body;
    info.source = i;
    out.push_back(std::move(info));
  }
  return out;
}

// A constant materialize_aggregate_constants may turn into a load: an aggregate or
// data record, or an integer wider than an immediate holds (Materializer::run decides;
// this lets a function with none of them skip it).
bool may_materialize(const Constant& c) {
  if (c.kind == ConstKind::kAggregate || c.kind == ConstKind::kData) return true;
  return c.kind == ConstKind::kInteger && c.words.size() > 1 && !wide_immediate_fits(c.words[1]);
}

// materialize_aggregate_constants: which operands become loads of which new private
// constant globals, named as LLVM names them (__kiln_const, then __kiln_const.1, ...).
class Materializer {
 public:
  // LLVM names the new globals __kiln_const, __kiln_const.1, ...: a module with a name
  // like those already would get other names (rare: declined).
  explicit Materializer(ModuleContext& ctx) : ctx_(ctx) {
    for (const GlobalInfo& g : ctx.globals)
      if (g.name.compare(0, 12, "__kiln_const") == 0) throw Decline{"reader: a global named " + std::string(g.name)};
  }

  Materialized run(uint32_t fn) {
    const BcFunction& f = ctx_.m.functions[fn];
    mark_values(f);
    Materialized mat;  // `before` is sized at the first load: most bodies have none
    if (!needs_scan(f)) return mat;
    // The arrays in locals: as far as the compiler knows, making a load could move them.
    const Inst* insts = f.insts.data();
    const uint32_t* operands = f.operands.data();
    const uint8_t* marks = marks_.data();
    const size_t inst_count = f.insts.size(), marked = marks_.size();
    for (uint32_t i = 0; i < inst_count; ++i) {
      const Inst& in = insts[i];
      if (in.opcode == Opcode::kLandingPad || in.opcode == Opcode::kSwitch) continue;
      // Whether an intrinsic call keeps its constants is asked at its first candidate
      // operand; an invalid callee is still declined here, as always.
      int keeps = -1;
      if ((in.opcode == Opcode::kCall || in.opcode == Opcode::kInvoke) && invalid_callee(f, in))
        keeps = keeps_constants(fn, in);
      // A shufflevector's mask is a third operand in the reader's IR, not in LLVM's.
      const uint32_t count = in.opcode == Opcode::kShuffleVector ? std::min(in.operand_count, 2u) : in.operand_count;
      for (uint32_t k = 0; k < count; ++k) {
        uint32_t id = operands[in.first_operand + k];
        if (id == kMetadataOperand || (id & kBlockTag)) continue;
        if (id < marked && !(marks[id] & (kCandidate | kInvalid))) continue;  // mark(id), kInvalid past them
        if (keeps < 0) keeps = keeps_constants(fn, in);
        operand(fn, f, in, i, k, keeps, mat);
      }
    }
    return mat;
  }

 private:
  // What a value id is to run(): a constant that may become a load (or whose type must
  // be checked on the way), or an id the context declines (so that run() declines it at
  // the same operand as before). Others are passed over without a look-up.
  static constexpr uint8_t kCandidate = 1, kInvalid = 2;
  uint8_t value_mark(const ValueRef& r) const {
    if (r.kind == ValueKind::kForward) return kInvalid;
    if (r.kind != ValueKind::kConstant) return 0;
    const Constant& c = ctx_.m.constants[r.index];
    const bool unchecked_type = c.kind == ConstKind::kInteger && r.type >= ctx_.m.types.size();
    return may_materialize(c) || unchecked_type ? kCandidate : 0;
  }
  // The marks of the module's values (once: all are read before the first body), then
  // of body f's own, by value id.
  void mark_values(const BcFunction& f) {
    const BcModule& m = ctx_.m;
    if (module_marked_ != m.module_value_count) {
      marks_.resize(m.module_value_count);
      for (uint32_t id = 0; id < m.module_value_count; ++id)
        marks_[id] = id < m.values.size() ? value_mark(m.values[id]) : kInvalid;
      module_marked_ = m.module_value_count;
    }
    // The values in locals: a mark's store could be to them, as far as the compiler knows.
    const ValueRef* values = f.values.data();
    const size_t count = f.values.size();
    marks_.resize(module_marked_ + count);
    uint8_t* local = marks_.data() + module_marked_;
    for (size_t i = 0; i < count; ++i) local[i] = value_mark(values[i]);
  }
  uint8_t mark(uint32_t id) const { return id < marks_.size() ? marks_[id] : kInvalid; }
  // Whether the scan below can find anything: an operand anywhere in the body that is a
  // candidate or declined, or a call whose callee is out of the operands. Most bodies
  // have none, and one pass over their operands says so.
  bool needs_scan(const BcFunction& f) const {
    const uint8_t* marks = marks_.data();
    const size_t marked = marks_.size();
    for (uint32_t id : f.operands)  // mark() in line: kInvalid past the marked ids
      if (!(id & kBlockTag) && id != kMetadataOperand && (id >= marked || marks[id])) return true;
    for (const Inst& in : f.insts)
      if ((in.opcode == Opcode::kCall || in.opcode == Opcode::kInvoke) &&
          size_t(in.first_operand) + in.operand_count - (in.opcode == Opcode::kInvoke ? 3 : 1) >= f.operands.size())
        return true;
    return false;
  }
  // keeps_constants would decline the call (its callee is no value, or out of range).
  bool invalid_callee(const BcFunction& f, const Inst& in) const {
    const size_t at = size_t(in.first_operand) + in.operand_count - (in.opcode == Opcode::kInvoke ? 3 : 1);
    if (at >= f.operands.size()) return true;
    const uint32_t callee = f.operands[at];
    return callee != kMetadataOperand && !(callee & kBlockTag) && (mark(callee) & kInvalid);
  }

  // Operand k of instruction i, a candidate: a load of a pooled constant global when
  // materialize_aggregate_constants makes it one.
  void operand(uint32_t fn, const BcFunction& f, const Inst& in, uint32_t i, uint32_t k, bool keeps,
               Materialized& mat) {
    const uint32_t id = f.operands[in.first_operand + k];
    // Only aggregate and data records, and i128 integers that no immediate holds,
    // can be the constants it materializes.
    const ValueRef& r = ctx_.ref(fn, id);
    if (r.kind != ValueKind::kConstant) return;
    const Constant& constant = ctx_.m.constants[r.index];
    uint32_t t = ctx_.type_of(fn, id);
    const bool wide = constant.kind == ConstKind::kInteger && ctx_.is_i128(t) &&
        !wide_immediate_fits(constant.words.size() > 1 ? constant.words[1] : 0);
    if (!wide) {
      if (keeps) return;
      if (constant.kind != ConstKind::kAggregate && constant.kind != ConstKind::kData) return;
      Class c = ctx_.klass(fn, id);
      if (!(c == Class::kStruct || c == Class::kArray || c == Class::kDataSeq || c == Class::kVector)) return;
      if (!ctx_.is_plain_aggregate(t)) return;
    }
    uint32_t global = pooled(fn, id, t);
    // A phi's value must be ready at the end of its incoming block.
    uint32_t where = i;
    if (in.opcode == Opcode::kPhi) {
      uint32_t block = f.operands.at(in.first_operand + k + 1) & ~kBlockTag;
      if (block >= f.block_count) throw Decline{"reader: phi block out of range"};
      uint32_t end = block + 1 < f.block_count ? f.block_first[block + 1] : static_cast<uint32_t>(f.insts.size());
      if (end == 0 || end <= f.block_first[block]) throw Decline{"reader: empty block"};
      where = end - 1;
    }
    mat.replaced.push_back({i, k, static_cast<uint32_t>(mat.loads.size())});
    if (mat.before.empty()) mat.before.resize(f.insts.size());
    mat.before[where].push_back(static_cast<uint32_t>(mat.loads.size()));
    mat.loads.push_back({t, global});
  }

  // An intrinsic call keeps its constant operands, but i128 ones wider than an
  // immediate and pshufb's vectors (materialize_aggregate_constants).
  bool keeps_constants(uint32_t fn, const Inst& in) const {
    if (in.opcode != Opcode::kCall && in.opcode != Opcode::kInvoke) return false;
    const BcFunction& f = ctx_.m.functions[fn];
    uint32_t callee = f.operands.at(in.first_operand + in.operand_count - (in.opcode == Opcode::kInvoke ? 3 : 1));
    if (callee == kMetadataOperand || (callee & kBlockTag)) return false;
    const ValueRef& r = ctx_.ref(fn, callee);
    if (r.kind != ValueKind::kGlobal) return false;
    const GlobalInfo& g = ctx_.globals[r.index];
    if (g.kind != GlobalKind::kFunction || g.value_type != in.source_type || !reserved_name(g.name)) return false;
    const Intrinsic id = ctx_.intrinsic(r.index);
    return id != Intrinsic::kX86PshufB128 && id != Intrinsic::kX86PshufB256;
  }

  uint32_t pooled(uint32_t fn, uint32_t id, uint32_t t) {
    std::string key = ctx_.constant_key(fn, id);
    auto it = pool_.find(key);
    if (it != pool_.end()) return it->second;
    GlobalInfo g{
        GlobalKind::kVariable, "", Linkage::kPrivate, Visibility::kDefault, false, true, false, false, t, "", 0};
    g.name = ctx_.keep(pool_.empty() ? "__kiln_const" : "__kiln_const." + std::to_string(++last_unique_));
    g.init_fn = id < ctx_.m.module_value_count ? kNone : fn;
    g.init = id;
    uint32_t index = static_cast<uint32_t>(ctx_.globals.size());
    ctx_.globals.push_back(std::move(g));
    pool_.emplace(std::move(key), index);
    return index;
  }

  ModuleContext& ctx_;
  std::unordered_map<std::string, uint32_t> pool_;
  unsigned last_unique_ = 0;
  // mark() of each module value, then of each of the body's: by value id.
  std::vector<uint8_t> marks_;
  uint32_t module_marked_ = 0;  // the module values marks_ begins with
};

// pinned_to_llvm: functions an alias or ifunc needs defined in the llvm half.
std::unordered_map<uint32_t, std::string> pinned_to_llvm(const ModuleContext& ctx) {
  std::unordered_map<uint32_t, std::string> pinned;
  std::set<uint32_t> seen;
  std::function<void(uint32_t, int)> walk = [&](uint32_t id, int depth) {
    if (depth > 64) throw Decline{"reader: aliasee nested too deep"};
    if (!seen.insert(id).second) return;
    const ValueRef& r = ctx.ref(kNone, id);
    if (r.kind == ValueKind::kGlobal) {
      const GlobalInfo& g = ctx.globals[r.index];
      if (g.kind == GlobalKind::kFunction) pinned.emplace(r.index, "target of an alias");
      else if (g.kind == GlobalKind::kAlias) walk(ctx.m.globals[g.source].initializer, depth + 1);
      return;
    }
    if (r.kind != ValueKind::kConstant) return;
    for (uint32_t o : ctx.m.constants.at(r.index).operands) walk(o, depth + 1);
  };
  for (const GlobalInfo& g : ctx.globals)
    if (g.kind == GlobalKind::kAlias && ctx.m.globals[g.source].initializer != kNone)
      walk(ctx.m.globals[g.source].initializer, 0);
  for (const GlobalInfo& g : ctx.globals) {
    if (g.kind != GlobalKind::kIFunc) continue;
    uint32_t resolver = ctx.m.globals[g.source].initializer;
    if (resolver == kNone) continue;
    resolver = ctx.strip_pointer_casts(kNone, resolver);
    const ValueRef& r = ctx.ref(kNone, resolver);
    if (r.kind == ValueKind::kGlobal && ctx.globals[r.index].kind == GlobalKind::kFunction)
      pinned.emplace(r.index, "ifunc resolver");
  }
  return pinned;
}

// The global objects llvm.used names (collectUsedGlobalVariables without the compiler's
// list), by ctx.globals index: LLVM gives their sections SHF_GNU_RETAIN, which keeps
// --gc-sections from dropping them. A local llvm.used is not the list
// (Module::getGlobalVariable), nor an initializer that is no array.
std::unordered_set<uint32_t> retained_globals(const ModuleContext& ctx) {
  std::unordered_set<uint32_t> retained;
  for (const GlobalInfo& list : ctx.globals) {
    if (list.kind != GlobalKind::kVariable || list.name != "llvm.used" || local_linkage(list.linkage) ||
        list.init == kNone)
      continue;
    const ValueRef& init = ctx.ref(list.init_fn, list.init);
    if (init.kind != ValueKind::kConstant || ctx.m.constants.at(init.index).kind != ConstKind::kAggregate) continue;
    for (uint32_t element : ctx.m.constants[init.index].operands) {
      const ValueRef& r = ctx.ref(kNone, ctx.strip_pointer_casts(kNone, element));
      if (r.kind == ValueKind::kGlobal && ctx.globals[r.index].kind != GlobalKind::kAlias) retained.insert(r.index);
    }
  }
  return retained;
}

// The order of Module::global_values(): functions, variables, aliases, ifuncs.
std::vector<uint32_t> global_values_order(const ModuleContext& ctx) {
  std::vector<uint32_t> order;
  order.reserve(ctx.globals.size());
  for (GlobalKind kind : {GlobalKind::kFunction, GlobalKind::kVariable, GlobalKind::kAlias, GlobalKind::kIFunc})
    for (uint32_t g = 0; g < ctx.globals.size(); ++g)
      if (ctx.globals[g].kind == kind) order.push_back(g);
  return order;
}

// Whether two globals share a name (empty names aside): open addressing over the
// globals' indices, which allocates once, where a set of names allocated a node per name.
bool names_repeat(const std::vector<GlobalInfo>& globals) {
  unsigned bits = 4;
  while ((size_t(1) << bits) < 2 * globals.size()) ++bits;
  std::vector<uint32_t> slots(size_t(1) << bits, 0);  // 1 + a global's index, 0 for none
  const size_t mask = slots.size() - 1;
  for (uint32_t g = 0; g < globals.size(); ++g) {
    const std::string_view n = globals[g].name;
    if (n.empty()) continue;
    for (size_t i = std::hash<std::string_view>{}(n) & mask;; i = (i + 1) & mask) {
      if (!slots[i]) {
        slots[i] = g + 1;
        break;
      }
      if (globals[slots[i] - 1].name == n) return true;
    }
  }
  return false;
}

// expose_local_symbols: local definitions become hidden globals with the tag appended.
// `order`: global_values_order(ctx).
void expose_local_symbols(ModuleContext& ctx, const std::string& tag, const std::vector<uint32_t>& order) {
  // A renamed symbol ends in ".kiln.TAG": only names that end so can be taken.
  const std::string suffix = ".kiln." + tag;
  auto ends_in_suffix = [&](std::string_view n) {
    return n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  // The names are distinct (ModuleExporter::finish), so that a new name can only be
  // taken when a name ends in the suffix already or an anonymous one's could be a
  // local's: without either, no set of names is needed.
  bool may_collide = false;
  for (const GlobalInfo& g : ctx.globals)
    may_collide = may_collide || ends_in_suffix(g.name) || g.name.compare(0, 12, "__kiln_anon.") == 0;
  std::unordered_set<std::string_view> names;  // views of stable strings (GlobalInfo)
  if (may_collide)
    for (const GlobalInfo& g : ctx.globals)
      if (ends_in_suffix(g.name)) names.insert(g.name);
  size_t anonymous = 0;
  for (uint32_t gi : order) {
    GlobalInfo& g = ctx.globals[gi];
    if (!local_linkage(g.linkage) || g.declaration || reserved_name(g.name)) continue;
    std::string renamed;
    if (g.name.empty()) {
      renamed = "__kiln_anon." + std::to_string(anonymous++);
    } else {
      renamed.reserve(g.name.size() + suffix.size());  // a copy grown by the suffix allocated twice
      renamed = g.name;
    }
    renamed += suffix;
    g.name = ctx.keep(std::move(renamed));
    if (may_collide) {
      if (!names.insert(g.name).second) throw Decline{"reader: renamed symbol " + std::string(g.name) + " taken"};
      names.erase(g.name.substr(0, g.name.size() - suffix.size()));
    }
    g.linkage = Linkage::kExternal;
    g.visibility = Visibility::kHidden;
  }
}

// lower_constant of lib/flat_export.cpp: constant `id` (in function fn's scope) written
// into `bytes` at `offset`; addresses become R_X86_64_64 relocations.
std::string lower_constant(const ModuleContext& ctx, uint32_t fn, uint32_t id, std::vector<uint8_t>& bytes,
                           uint64_t offset, std::vector<StampNamedReloc>& relocs, int depth = 0) {
  if (depth > 64) throw Decline{"reader: initializer nested too deep"};
  const BcModule& m = ctx.m;
  int vid = -1;
  Class k = ctx.klass(fn, id, &vid);
  if (k == Class::kUndef || k == Class::kZero || k == Class::kNullPtr) return "";
  uint32_t t = ctx.type_of(fn, id);
  const uint64_t store = ctx.dl.store_size(m, t);
  if (offset > bytes.size() || store > bytes.size() - offset) return "global initializer: constant outside its global";
  if (ctx.is_vector(t)) {
    uint32_t e = ctx.type(t).elements.at(0);
    if (k == Class::kInt || k == Class::kFP) return "global initializer: vector splat constant";
    if (ctx.dl.size_in_bits(m, e) != 8 * ctx.dl.alloc_size(m, e))
      return "global initializer: vector of " + std::to_string(ctx.dl.size_in_bits(m, e)) + "-bit elements";
  }
  const Constant* c = ctx.ref(fn, id).kind == ValueKind::kConstant ? &ctx.constant(fn, id) : nullptr;
  if (k == Class::kInt || k == Class::kFP) {
    // put_apint: the value's bytes, as many as its store size and its width allow.
    unsigned bits = k == Class::kInt ? ctx.type(t).width : static_cast<unsigned>(ctx.dl.size_in_bits(m, t));
    for (uint64_t i = 0; i < store && i * 8 < bits; ++i) {
      uint64_t word = (i / 8) < c->words.size() ? c->words[i / 8] : 0;
      uint8_t byte = static_cast<uint8_t>(word >> ((i % 8) * 8));
      unsigned left = bits - static_cast<unsigned>(i * 8);
      if (left < 8) byte &= static_cast<uint8_t>((1u << left) - 1);
      bytes[offset + i] = byte;
    }
    return "";
  }
  if (k == Class::kDataSeq) {
    uint32_t e = ctx.type(t).elements.at(0);
    uint64_t esize = ctx.dl.store_size(m, e);
    if (esize != c->element_bytes) throw Decline{"reader: data element size"};
    if (c->bytes.size() > bytes.size() - offset) return "global initializer: constant outside its global";
    // The reader keeps the elements as memory holds them.
    std::copy(c->bytes.begin(), c->bytes.end(), bytes.begin() + static_cast<ptrdiff_t>(offset));
    return "";
  }
  if (k == Class::kStruct) {
    for (uint32_t i = 0; i < c->operands.size(); ++i) {
      std::string why =
          lower_constant(ctx, fn, c->operands[i], bytes, offset + ctx.dl.field_offset(m, t, i), relocs, depth + 1);
      if (!why.empty()) return why;
    }
    return "";
  }
  if (k == Class::kArray || k == Class::kVector) {
    uint64_t stride = ctx.dl.alloc_size(m, ctx.type(t).elements.at(0));
    for (uint32_t i = 0; i < c->operands.size(); ++i) {
      std::string why = lower_constant(ctx, fn, c->operands[i], bytes, offset + i * stride, relocs, depth + 1);
      if (!why.empty()) return why;
    }
    return "";
  }
  // A pointer made from an integer (Rust's dangling NonNull in statics): its bits.
  if (k == Class::kExpr && c->kind == ConstKind::kCast && c->opcode == kCastIntToPtr && store == 8 &&
      ctx.klass(fn, c->operands.at(0)) == Class::kInt) {
    const Constant& value = ctx.constant(fn, c->operands[0]);
    uint64_t v = value.words.empty() ? 0 : value.words[0];
    unsigned w = ctx.type(value.type).width;
    if (w < 64) v &= (uint64_t(1) << w) - 1;
    for (unsigned i = 0; i < 8; ++i) bytes[offset + i] = static_cast<uint8_t>(v >> (8 * i));
    return "";
  }
  // An address: a global plus a constant offset, possibly cast to a 64-bit integer.
  uint32_t base = id;
  uint64_t delta = 0;
  if (k == Class::kExpr && c->kind == ConstKind::kCast && c->opcode == kCastPtrToInt && store == 8)
    base = c->operands.at(0);
  if (ctx.klass(fn, base) == Class::kExpr && ctx.constant(fn, base).kind == ConstKind::kGep) {
    const Constant& gep = ctx.constant(fn, base);
    if (!ctx.accumulate_offset(fn, gep.source_type, gep.operands.data() + 1, gep.operands.size() - 1, delta))
      return "global initializer: getelementptr with a variable offset";
    base = gep.operands.at(0);
  }
  base = ctx.strip_pointer_casts(fn, base);
  if (ctx.klass(fn, base) == Class::kGlobal) {
    if (store != 8) return "global initializer: address narrower than 64 bits";
    if (const GlobalInfo& g = ctx.globals[ctx.ref(fn, base).index]; g.kind == GlobalKind::kVariable && g.thread_local_)
      return "global initializer: address of a thread-local variable";
    relocs.push_back({static_cast<uint32_t>(offset), kReloc64, std::string(ctx.globals[ctx.ref(fn, base).index].name),
                      static_cast<int64_t>(delta)});
    return "";
  }
  if (k == Class::kExpr) {
    const char* name = c->kind == ConstKind::kCast ? cast_name(c->opcode)
        : c->kind == ConstKind::kBinary            ? binop_name(c->opcode, ctx.is_float(c->type))
        : c->kind == ConstKind::kGep               ? "getelementptr"
                                                   : nullptr;
    if (!name) throw Decline{"reader: constant expression " + std::to_string(c->opcode)};
    return std::string("global initializer: constant expression ") + name;
  }
  if (k == Class::kOtherConstant) return "global initializer: constant kind " + std::to_string(vid);
  throw Decline{"reader: initializer of an unexpected kind"};
}

// One global variable's bytes and relocations (export_globals' work for one global);
// `retain`: it is in llvm.used (retained_globals).
std::string export_global(const ModuleContext& ctx, const GlobalInfo& g, bool retain, std::vector<StampData>& out) {
  const BcModule& m = ctx.m;
  if (g.linkage == Linkage::kAppending) {
    if (g.name == "llvm.used" || g.name == "llvm.compiler.used") return "";
    return "global " + std::string(g.name) + " (appending linkage)";
  }
  if (reserved_name(g.name)) return "global " + std::string(g.name);
  if (g.has_comdat) return "global in a comdat";
  if (g.linkage == Linkage::kCommon) return "common symbol";
  StampData d;
  d.name = g.name;
  d.binding = binding_of(g) == SymbolBinding::local ? SymbolBinding::local
      : (g.linkage == Linkage::kWeakAny || g.linkage == Linkage::kWeakOdr || g.linkage == Linkage::kLinkOnceAny ||
         g.linkage == Linkage::kLinkOnceOdr)
      ? SymbolBinding::weak
      : SymbolBinding::global;
  d.visibility = visibility_of(g);
  // As the bitcode says (expose_local_symbols has renamed it since); a materialized
  // constant is private.
  d.was_private = g.source == kNone || m.globals.at(g.source).linkage == Linkage::kPrivate;
  d.retain = retain;
  d.size = ctx.dl.alloc_size(m, g.value_type);
  d.align = static_cast<uint32_t>(ctx.dl.global_preferred_align(m, g.value_type, g.align, !g.section.empty(), true));
  d.zero = !g.constant && ctx.is_null_value(g.init_fn, g.init) && (g.section.empty() || is_bss_section_name(g.section));
  if (!d.zero) {
    d.bytes.assign(d.size, 0);
    std::string why = lower_constant(ctx, g.init_fn, g.init, d.bytes, 0, d.relocations);
    if (!why.empty()) return why;
  }
  // A thread-local variable is each thread's copy of its initial image: always writable.
  d.tls = g.thread_local_;
  d.writable = !g.constant || d.tls;
  std::string kind = d.tls ? (d.zero ? ".tbss." : ".tdata.")
      : d.zero             ? ".bss."
      : d.writable         ? ".data."
      : d.relocations.empty() ? ".rodata."
                              : ".data.rel.ro.";
  d.section = !g.section.empty() ? std::string(g.section) : kind + d.name;
  if (!g.section.empty()) d.writable = d.writable || !d.relocations.empty();
  if (!d.relocations.empty()) d.writable = true;
  out.push_back(std::move(d));
  return "";
}

std::string export_globals(const ModuleContext& ctx, std::vector<StampData>& out) {
  const BcModule& m = ctx.m;
  if (m.module_asm) return "module inline asm";
  for (const GlobalInfo& g : ctx.globals)
    if (g.kind == GlobalKind::kAlias) return "aliases";
  for (const GlobalInfo& g : ctx.globals)
    if (g.kind == GlobalKind::kIFunc) return "ifuncs";
  const std::unordered_set<uint32_t> retained = retained_globals(ctx);
  // Sized once: growing moved each StampData's strings and arrays.
  out.reserve(out.size() + std::count_if(ctx.globals.begin(), ctx.globals.end(), [](const GlobalInfo& g) {
                return g.kind == GlobalKind::kVariable && !g.declaration;
              }));
  for (uint32_t gi = 0; gi < ctx.globals.size(); ++gi) {
    const GlobalInfo& g = ctx.globals[gi];
    if (g.kind != GlobalKind::kVariable || g.declaration) continue;
    std::string why = export_global(ctx, g, retained.count(gi) != 0, out);
    if (!why.empty()) return why;
  }
  return "";
}

// The export of one module, function by function as the reader decodes the bodies
// (so that a body's instruction arrays can be released once it is exported: the
// reader's memory then stays near one body's, not the whole module's), then the
// module's symbols, renaming and global data at the end.
class ModuleExporter {
 public:
  ModuleExporter(BcModule& m, const std::string& tag, DirectExport& out, const FunctionFilter& selected)
      : m_(m), tag_(tag), out_(out), selected_(selected), dl_(Layout::x86_64_text()), ctx_(m, m.debug, dl_) {
    ctx_.globals = global_infos(m);
    for (uint32_t g = 0; g < ctx_.globals.size(); ++g) {
      const std::string_view n = ctx_.globals[g].name;
      if (ctx_.globals[g].kind == GlobalKind::kFunction &&
          (n == "memcpy" || n == "memmove" || n == "memset" || n == "_Unwind_Resume" || n == "__tls_get_addr" ||
           is_libm_function(n) ||
           is_compiler_rt_function(n)))
        ctx_.library_functions.emplace(n, g);
    }
    ctx_.has_vector_types =
        std::any_of(m.types.begin(), m.types.end(), [](const Type& t) { return bc::is_vector(t.kind); });
    const size_t module_values = std::min<size_t>(m.module_value_count, m.values.size());
    ctx_.module_vector_values = ctx_.any_value_type(m.values.data(), module_values, ModuleContext::vector_facts);
    ctx_.module_wide_values = ctx_.any_value_type(m.values.data(), module_values, ModuleContext::wide_facts);
    // Module constants are all read before the first body; a body's own constants
    // are looked at when it is materialized.
    first_materialized_ = static_cast<uint32_t>(ctx_.globals.size());
    materializer_.emplace(ctx_);
    debug_header();
    pinned_ = pinned_to_llvm(ctx_);
    retained_ = retained_globals(ctx_);
    symbol_index_.assign(ctx_.globals.size(), kNone);
  }

  // Function `fn` (a BcFunction index), just decoded: its verdict, and its flat arrays
  // when it is stamp's. Bodies come in the order of their FUNCTION records.
  void function(uint32_t fn) {
    const uint32_t gi = m_.functions.at(fn).global;
    declarations_before(gi);
    note_block_addresses(gi);
    const BcFunction& f = m_.functions[fn];
    const bool aggregate_data = std::any_of(f.values.begin(), f.values.end(),
                                            [&](const ValueRef& r) {
                                              return r.kind == ValueKind::kConstant &&
                                                     may_materialize(m_.constants[r.index]);
                                            }) ||
        module_aggregate_data();
    FunctionVerdict v;
    v.name = ctx_.globals[gi].name;
    v.instructions = f.insts.size();
    bool stamp = false;
    if (!f.declined.empty()) {
      v.reasons.push_back(f.declined);
      out_.declined_function_count++;
    } else {
      struct Current {  // the body's values, looked up without the functions' array
        ModuleContext& ctx;
        ~Current() { ctx.set_current_function(kNone); }
      } current{ctx_};
      ctx_.set_current_function(fn);
      Materialized mat;
      if (aggregate_data) mat = materializer_->run(fn);
      if (symbol_index_.size() < ctx_.globals.size()) symbol_index_.resize(ctx_.globals.size(), kNone);
      // A function the reader declines part way has named only some of the symbols
      // LLVM's exporter would: the module's flat output is then not LLVM's, which
      // declined_function_count says (such a module is never whole).
      FunctionExporter ex(ctx_, out_.flat, symbol_values_, fixed_names_, symbol_index_, library_index_, fn, mat,
                          scratch_);
      if (auto it = address_taken_.find(gi); it != address_taken_.end()) ex.address_taken = &it->second;
      if (auto it = pinned_.find(gi); it != pinned_.end()) ex.reasons.push_back(it->second);
      if (retained_.count(gi)) ex.reasons.push_back(kReasonRetained);
      if (selected_ && !selected_(v.name)) ex.reasons.push_back(kNotSelected);
      const size_t insts = out_.flat.insts.size(), operands = out_.flat.operands.size(),
                   blocks = out_.flat.blocks.size();
      try {
        stamp = ex.run();
        v.reasons = std::move(ex.reasons);
      } catch (const Decline& d) {
        out_.flat.insts.resize(insts);
        out_.flat.operands.resize(operands);
        out_.flat.blocks.resize(blocks);
        v.reasons = {d.why};
        out_.declined_function_count++;
      }
    }
    out_.verdicts.push_back(std::move(v));
    if (stamp) {
      const GlobalInfo& g = ctx_.globals[gi];
      out_.flat.bindings.push_back(binding_of(g));
      out_.flat.visibilities.push_back(visibility_of(g));
      out_.flat.sections.emplace_back(g.section);
      out_.stamp_function_count++;
    }
    out_.emitted_by_stamp.push_back(stamp);
    next_global_ = gi + 1;
  }

  // After the last body: the remaining declarations, the undefined symbols, renaming,
  // the symbols' names and the global data.
  void finish() {
    // A module names each global once; a malformed one may not, and LLVM's parser then
    // renames the second (NAME.1), which the reader does not: LLVM's route takes it.
    if (names_repeat(ctx_.globals)) throw Decline{"reader: two globals of one name"};
    declarations_before(static_cast<uint32_t>(m_.globals.size()));
    // The global variables' debug information, after every function (flat_debug.h).
    if (out_.flat.debug.emission == DebugEmission::full)
      for (const bc::BcDebugGlobal& g : m_.debug.globals)
        if (ctx_.debug.keeps(g)) ctx_.debug.global(g, symbol_of(g.global), out_.flat.debug);
    // Made once for the undefined symbols and the renaming (neither adds a global or
    // changes one's kind).
    const std::vector<uint32_t> order = global_values_order(ctx_);
    for (uint32_t gi : order) {
      const GlobalInfo& g = ctx_.globals[gi];
      bool declaration = g.declaration && (g.kind == GlobalKind::kFunction || g.kind == GlobalKind::kVariable);
      if (!declaration || (g.linkage != Linkage::kExternalWeak && g.visibility == Visibility::kDefault) ||
          g.name.empty() || reserved_name(g.name))
        continue;
      out_.flat.undefined.push_back({std::string(g.name), binding_of(g), visibility_of(g)});
    }
    if (out_.stamp_function_count) expose_local_symbols(ctx_, tag_, order);
    // resolve_symbol_names.
    out_.flat.symbols.clear();
    out_.flat.symbols.reserve(symbol_values_.size());
    for (size_t i = 0; i < symbol_values_.size(); ++i)
      out_.flat.symbols.push_back(symbol_values_[i] != kNone ? std::string(ctx_.globals[symbol_values_[i]].name)
                                                             : fixed_names_[i]);
    for (size_t fn = 0; fn < out_.flat.functions.size(); ++fn) {
      const GlobalInfo& g = ctx_.globals[symbol_values_.at(out_.flat.functions[fn].symbol)];
      out_.flat.bindings[fn] = binding_of(g);
      out_.flat.visibilities[fn] = visibility_of(g);
    }
    out_.globals_reason = export_globals(ctx_, out_.data);
    out_.whole = out_.stamp_function_count == out_.verdicts.size() && out_.globals_reason.empty();
    if (!out_.whole) {
      out_.data.clear();
      // A split module's stamp part carries the constants materialized for it: LLVM's
      // half is read from the bitcode, which has no such globals.
      for (uint32_t gi = first_materialized_; gi < ctx_.globals.size() && out_.constants_reason.empty(); ++gi)
        out_.constants_reason = export_global(ctx_, ctx_.globals[gi], false, out_.constants);
    }
  }

 private:
  // What the module's debug information says of the whole (functions and instructions
  // add theirs as they are committed).
  void debug_header() {
    const BcDebug& d = m_.debug;
    if (!d.dwarf_version) return;
    FlatDebugInfo& out = out_.flat.debug;
    out.dwarf_version = d.dwarf_version;
    out.emission = d.emission == 1 ? DebugEmission::full : DebugEmission::line_tables;
    out.language = d.language;
    out.producer = d.producer;
    out.name = d.name;
    out.directory = d.directory;
  }

  uint32_t symbol_of(uint32_t gi) { return intern_symbol(gi, symbol_index_, symbol_values_, fixed_names_); }

  // Function declarations (and definitions without a body, which the reader refuses)
  // up to global `end`: not stamp's, in module order.
  void declarations_before(uint32_t end) {
    for (; next_global_ < end && next_global_ < m_.globals.size(); ++next_global_)
      if (ctx_.globals[next_global_].kind == GlobalKind::kFunction) {
        if (!ctx_.globals[next_global_].declaration) throw Decline{"reader: function bodies out of order"};
        out_.emitted_by_stamp.push_back(false);
      }
  }
  // The blockaddress constants read since the last body (the module's, then each body's
  // own), before body `gi` is exported. One that names a function exported already
  // (a body's constant taking an earlier body's label) came too late for that
  // function's verdict: the module goes to LLVM's route.
  void note_block_addresses(uint32_t gi) {
    for (; constants_noted_ < m_.constants.size(); ++constants_noted_) {
      const Constant& c = m_.constants[constants_noted_];
      if (c.kind != ConstKind::kBlockAddress) continue;
      if (c.operands.size() != 1 || c.words.size() != 1) throw Decline{"reader: blockaddress record"};
      const ValueRef& r = ctx_.ref(kNone, c.operands[0]);
      if (r.kind != ValueKind::kGlobal || ctx_.globals[r.index].kind != GlobalKind::kFunction)
        throw Decline{"reader: blockaddress of a value that is not a function"};
      if (r.index < gi) throw Decline{"reader: blockaddress of a function read before it"};
      address_taken_[r.index].push_back(static_cast<uint32_t>(c.words[0]));
    }
  }
  bool module_aggregate_data() {
    if (module_aggregate_data_ < 0) {
      module_aggregate_data_ = 0;
      for (uint32_t id = 0; id < m_.module_value_count && !module_aggregate_data_; ++id) {
        const ValueRef& r = m_.values[id];
        if (r.kind != ValueKind::kConstant) continue;
        module_aggregate_data_ = may_materialize(m_.constants[r.index]);
      }
    }
    return module_aggregate_data_ > 0;
  }

  const BcModule& m_;
  const std::string& tag_;
  DirectExport& out_;
  const FunctionFilter& selected_;  // kiln-selection(5): the others are not stamp's
  Layout dl_;
  ModuleContext ctx_;
  std::optional<Materializer> materializer_;
  uint32_t first_materialized_ = 0;  // ctx_.globals from here on are materialize_aggregate_constants'
  std::unordered_map<uint32_t, std::string> pinned_;
  std::unordered_set<uint32_t> retained_;  // retained_globals
  std::vector<uint32_t> symbol_values_;
  std::vector<std::string> fixed_names_;
  std::vector<uint32_t> symbol_index_;
  std::unordered_map<std::string, uint32_t> library_index_;
  ExportScratch scratch_;
  uint32_t next_global_ = 0;
  int module_aggregate_data_ = -1;
  // By function (global index), the blocks blockaddress constants name: LLVM's
  // BasicBlock::hasAddressTaken, which keeps such a function LLVM's (its labels'
  // addresses are the llvm half's to define). Filled from the constants read so far.
  std::unordered_map<uint32_t, std::vector<uint32_t>> address_taken_;
  size_t constants_noted_ = 0;
};

}  // namespace

std::string target_problem(const std::string& triple) {
  if (triple.empty()) return "no target triple";
  // LLVM's Triple takes the components in order: arch, vendor, OS, environment.
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    size_t dash = triple.find('-', at);
    parts.push_back(triple.substr(at, dash == std::string::npos ? std::string::npos : dash - at));
    if (dash == std::string::npos) break;
    at = dash + 1;
  }
  const std::string& arch = parts[0];
  if (arch != "x86_64" && arch != "amd64" && arch != "x86_64h") return "target " + triple + " is not x86-64";
  // The environment is the rest after the third dash (LLVM's getEnvironmentName).
  std::string env;
  for (size_t i = 3; i < parts.size(); ++i) env += (i > 3 ? "-" : "") + parts[i];
  auto starts = [](const std::string& s, const char* p) { return s.rfind(p, 0) == 0; };
  if (starts(env, "gnux32") || starts(env, "muslx32"))
    return "target " + triple + " is x32 (32-bit pointers), not 64-bit x86-64";
  if (parts.size() < 3 || !starts(parts[2], "linux")) return "target " + triple + " is not Linux";
  for (const char* format : {"coff", "macho", "xcoff", "goff", "wasm", "spirv", "dxcontainer"})
    if (env.size() >= std::strlen(format) &&
        env.compare(env.size() - std::strlen(format), std::string::npos, format) == 0)
      return "target " + triple + " does not use ELF";
  return "";
}

namespace {

// The module's flat arrays are appended to function by function; grown from nothing
// they were copied a dozen times over (a tenth of the direct read at debuginfo 0).
// A bitcode instruction takes about 19 bytes of the file with its share of the string
// table and the rest over regex's test corpus at debuginfo 0, many more with debug
// information. Reserved when the first body comes, when the module's debug information
// is known: without it, a guess of one instruction per 12 bytes (one per 16 left 28 of
// 300 modules to outgrow their arrays, each growth a copy of all); with it, one per 32.
// Debug information takes from 22 to over 1,000 bytes per instruction (regex's test
// corpus at debuginfo 2, 1st to 95th percentile), so no guess fits all: one per 16
// reserved 3.7 times the need over that corpus, and on its largest module (8.4 MB)
// 34 MB of room for 11 MB of arrays, more than the reader's memory bound allows
// (2x the bitcode plus the flat arrays); one per 32, 68 of 1,402 modules outgrow it,
// and that module's room is 17 MB.
void reserve_flat_arrays(size_t bitcode_bytes, bool debug_info, FlatModuleData& flat) {
  const size_t bytes_per_inst = debug_info ? 32 : 12;
  flat.insts.reserve(bitcode_bytes / bytes_per_inst);
  flat.operands.reserve(bitcode_bytes / (bytes_per_inst / 2));
  flat.blocks.reserve(bitcode_bytes / (debug_info ? 128 : 64));
}

// A module's flat arrays outlive its export (kiln-replay keeps every module's): room
// reserved and not used (a module of much data or debug information and few
// instructions) would stay taken, and count against an address-space limit.
template <typename T>
void give_back_unused(std::vector<T>& v) {
  if (v.capacity() > 2 * v.size() + 1024) v.shrink_to_fit();
}
void give_back_unused(FlatModuleData& flat) {
  give_back_unused(flat.insts);
  give_back_unused(flat.operands);
  give_back_unused(flat.blocks);
}

}  // namespace

DirectExport export_direct(std::string_view bitcode, const std::string& path, const std::string& tag,
                           const FunctionFilter& selected) {
  DirectExport out;
  Stopwatch clock;
  std::optional<ModuleExporter> exporter;
  std::string why;
  double export_seconds = 0;
  // Each body is exported as soon as it is decoded, and its instruction arrays are
  // released then: what stays is its values (constants the global data may name).
  auto on_body = [&](bc::BcModule& m, uint32_t fn) {
    if (!why.empty()) return;
    Stopwatch lap;
    try {
      if (!exporter) {
        reserve_flat_arrays(bitcode.size(), m.debug.dwarf_version != 0, out.flat);
        exporter.emplace(m, tag, out, selected);
      }
      exporter->function(fn);
    } catch (const Decline& d) {
      why = d.why;
    } catch (const KilnError& e) {
      if (e.code() != kExitInternal) throw;
      why = std::string("reader: ") + e.what();
    }
    // The arrays go to the next body, emptied but with their memory, so that bodies do
    // not grow arrays from nothing one after the other.
    bc::BcFunction& f = m.functions[fn];
    if (fn + 1 < m.functions.size()) {
      bc::BcFunction& next = m.functions[fn + 1];
      f.insts.clear(), f.operands.clear(), f.indices.clear(), f.clause_filter.clear(), f.debug_locs.clear();
      f.block_first.clear();
      if (next.insts.empty()) next.insts.swap(f.insts);
      if (next.block_first.empty()) next.block_first.swap(f.block_first);
      if (next.operands.empty()) next.operands.swap(f.operands);
      if (next.indices.empty()) next.indices.swap(f.indices);
      if (next.clause_filter.empty()) next.clause_filter.swap(f.clause_filter);
      if (next.debug_locs.empty()) next.debug_locs.swap(f.debug_locs);
    }
    // Its values stay (constants the global data may name), room reserved for them from
    // the block's size apart: with debug information most of a body's bits are not
    // values, and that room, kept for every body, was a tenth of the reader's peak on
    // regex's largest module at debuginfo 2.
    if (f.values.capacity() > 2 * f.values.size() + 64) f.values.shrink_to_fit();
    std::vector<bc::Inst>().swap(f.insts);
    std::vector<uint32_t>().swap(f.block_first);
    std::vector<uint32_t>().swap(f.operands);
    std::vector<uint32_t>().swap(f.indices);
    std::vector<uint8_t>().swap(f.clause_filter);
    std::vector<bc::BcDebugLoc>().swap(f.debug_locs);
    std::vector<bc::BcDebugVariable>().swap(f.debug_vars);
    f.subprogram = {};
    export_seconds += lap.seconds();
  };
  bc::BcModule m = bc::read_bitcode(bitcode, path, on_body);
  out.source_filename = m.source_filename;
  out.triple = m.triple;
  if (!m.declined.empty()) {
    DirectExport declined;
    declined.declined = m.declined;
    declined.source_filename = out.source_filename;
    declined.triple = out.triple;
    declined.read_seconds = clock.seconds();
    return declined;
  }
  Stopwatch tail;
  if (why.empty()) {
    try {
      if (!exporter) exporter.emplace(m, tag, out, selected);  // a module without bodies
      exporter->finish();
      drop_dead_values(out.flat);  // as export_flat ends
      write_phis_directly(out.flat);
      // export_flat makes such a module LLVM's whole; LLVM's route says why per function.
      if (const char* defect = check_debug_exported(out.flat.debug))
        throw Decline{std::string("reader: debug information: ") + defect};
    } catch (const Decline& d) {
      why = d.why;
    } catch (const KilnError& e) {
      // The layout's questions about a type it has no answer for (an unsized global, a
      // struct nested past its bound): the module is beyond the reader, not LLVM.
      if (e.code() != kExitInternal) throw;
      why = std::string("reader: ") + e.what();
    }
  }
  export_seconds += tail.seconds();
  const double total = clock.seconds();
  if (!why.empty()) {
    DirectExport declined;
    declined.declined = why;
    declined.source_filename = out.source_filename;
    declined.triple = out.triple;
    out = std::move(declined);
  }
  give_back_unused(out.flat);
  out.export_seconds = export_seconds;
  out.read_seconds = total - export_seconds;
  return out;
}

}  // namespace kiln
