#include "flat_export_debug.h"

#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/DebugProgramInstruction.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Instructions.h>

#include <set>

namespace kiln {

using namespace llvm;

namespace {

// The DIExpression's operations as FlatDebugVariable keeps them; false for others.
bool expression_ops(const DIExpression* e, std::vector<uint64_t>& ops) {
  for (auto op : e->expr_ops()) {
    if (op.getOp() == dwarf::DW_OP_deref) ops.push_back(kDwarfOpDeref);
    else if (op.getOp() == dwarf::DW_OP_plus_uconst) ops.push_back(kDwarfOpPlusUconst), ops.push_back(op.getArg(0));
    else return false;
  }
  return true;
}

// A constant int as flat_debug.h keeps values: sign-extended from its width, or its
// low 64 bits when wider.
int64_t constant_value(const APInt& v) {
  return v.getBitWidth() <= 64 ? v.getSExtValue() : static_cast<int64_t>(v.getLoBits(64).getZExtValue());
}

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

}  // namespace

// The helpers below intern by value, as flat_debug.h's order needs; each remembers its
// answer per node, since a module names the same few files, scopes and callees from
// thousands of locations (interning each anew, strings made and compared against every
// earlier entry, was over half of the plugin's time at debuginfo 2). A node's answer
// cannot change: interning a value already there appends nothing.

size_t FlatDebugExporter::ValueHash::operator()(const FlatDebugFile& f) const {
  return mix(std::hash<std::string>()(f.directory), std::hash<std::string>()(f.name));
}
size_t FlatDebugExporter::ValueHash::operator()(const FlatDebugScope& s) const {
  return mix(mix(std::hash<std::string>()(s.name), s.parent), s.tag);
}
size_t FlatDebugExporter::ValueHash::operator()(const FlatDebugFunction& f) const {
  size_t h = mix(std::hash<std::string>()(f.linkage_name), std::hash<std::string>()(f.name));
  h = mix(mix(mix(h, f.scope), f.file), (size_t(f.line) << 32) | f.scope_line);
  return mix(h, size_t(f.has_subprogram) | size_t(f.local_to_unit) << 1 | size_t(f.main_subprogram) << 2);
}

template <class T>
uint32_t FlatDebugExporter::intern(std::vector<T>& table, std::unordered_map<T, uint32_t, ValueHash>& entries,
                                   T value) {
  if (auto it = entries.find(value); it != entries.end()) return it->second;
  table.push_back(value);
  const uint32_t k = static_cast<uint32_t>(table.size());
  entries.emplace(std::move(value), k);
  return k;
}

uint32_t FlatDebugExporter::file_index(const DIFile* file) {
  if (const uint32_t* known = file_memo_.find(file)) return *known;
  const uint32_t k = intern(d_.files, file_entries_, {file->getDirectory().str(), file->getFilename().str()});
  file_memo_.set(file, k);
  return k;
}

// A subprogram's scope as flat_debug.h interns it: outermost first.
uint32_t FlatDebugExporter::scope_chain(const DIScope* s, uint32_t depth) {
  FlatDebugScope scope;
  if (auto* ns = dyn_cast_or_null<DINamespace>(s)) scope.tag = kDwarfTagNamespace, scope.name = ns->getName().str();
  else if (auto* type = dyn_cast_or_null<DICompositeType>(s)) scope.tag = type->getTag(), scope.name = type->getName().str();
  else return 0;
  if (depth < kMaxDebugNesting) scope.parent = scope_chain(s->getScope(), depth + 1);
  return intern(d_.scopes, scope_entries_, std::move(scope));
}

uint32_t FlatDebugExporter::scope_index(const DIScope* s) {
  if (!s) return 0;
  if (const uint32_t* known = scope_memo_.find(s)) return *known;
  const uint32_t k = scope_chain(s, 1);
  scope_memo_.set(s, k);
  return k;
}

// A subprogram as flat_debug.h describes it: its scope chain and file interned first,
// then at full emission its return type (types[0]), with the types that one reaches.
FlatDebugFunction FlatDebugExporter::describe_subprogram(const DISubprogram* sp) {
  FlatDebugFunction fn;
  fn.has_subprogram = true;
  fn.local_to_unit = sp->isLocalToUnit();
  fn.main_subprogram = sp->isMainSubprogram();
  fn.prototyped = sp->isPrototyped();
  fn.scope = scope_index(sp->getScope());
  if (const DIFile* file = sp->getFile()) fn.file = file_index(file);
  if (d_.emission == DebugEmission::full)
    if (const DISubroutineType* routine = sp->getType(); routine && routine->getTypeArray().size() > 0) {
      fn.type = type(routine->getTypeArray()[0]);
      fill_types();
    }
  fn.line = sp->getLine();
  fn.scope_line = sp->getScopeLine();
  fn.name = sp->getName().str();
  fn.linkage_name = sp->getLinkageName().str();
  return fn;
}

// The block of scope `s` (flat_debug.h): the nearest DILexicalBlock, block files passed
// over; its parent, file and itself interned in that order, one entry per node.
uint32_t FlatDebugExporter::block_index(const DIScope* s, uint32_t depth) {
  if (auto* file_block = dyn_cast_or_null<DILexicalBlockFile>(s))
    return depth < kMaxDebugNesting ? block_index(file_block->getScope(), depth + 1) : 0;
  auto* block = dyn_cast_or_null<DILexicalBlock>(s);
  if (!block) return 0;
  if (const uint32_t* known = block_memo_.find(block)) return *known;
  FlatDebugBlock b;
  if (depth < kMaxDebugNesting) b.parent = block_index(block->getScope(), depth + 1);
  if (const DIFile* file = block->getFile()) b.file = file_index(file);
  b.line = block->getLine();
  b.column = block->getColumn();
  d_.blocks.push_back(b);
  const uint32_t k = static_cast<uint32_t>(d_.blocks.size());
  block_memo_.set(block, k);
  return k;
}

// The site of a call to `callee` inlined at `at`, in flat_debug.h's order: its parent
// site, the callee, the call's file, its block, then the site; one per (callee, at)
// pair of nodes.
uint32_t FlatDebugExporter::inline_site(const DISubprogram* callee, const DILocation* at, uint32_t depth) {
  if (auto it = site_memo_.find({callee, at}); it != site_memo_.end()) return it->second;
  FlatDebugInlineSite site;
  if (const DILocation* outer = at->getInlinedAt(); outer && depth < kMaxDebugNesting)
    site.parent = inline_site(at->getScope()->getSubprogram(), outer, depth + 1);
  if (const uint32_t* known = callee_memo_.find(callee)) {
    site.callee = *known;
  } else {
    site.callee = intern(d_.inlined, inlined_entries_, describe_subprogram(callee));
    callee_memo_.set(callee, site.callee);
  }
  if (const DIFile* file = at->getScope()->getFile()) site.call_file = file_index(file);
  site.call_line = at->getLine();
  site.call_column = at->getColumn();
  site.block = block_index(at->getScope(), 1);
  d_.inline_sites.push_back(site);
  return site_memo_[{callee, at}] = static_cast<uint32_t>(d_.inline_sites.size());
}

void FlatDebugExporter::function(const Function& f, uint32_t fn, const std::vector<const DILocation*>& locations,
                                 const PointerIndex<Instruction>& flat_index) {
  FlatDebugInfo& d = d_;
  if (!d.present()) return;
  d.functions.push_back(f.getSubprogram() ? describe_subprogram(f.getSubprogram()) : FlatDebugFunction{});
  if (f.getSubprogram()) function_of_subprogram_.emplace(f.getSubprogram(), fn + 1);
  const DIFile* last_file = nullptr;  // consecutive instructions mostly share a file
  uint32_t last_index = 0;
  // A location's site: by its callee and its inlinedAt, since calls to two callees can
  // be inlined at one DILocation (calls desugared from one source span).
  for (const DILocation* loc : locations) {
    FlatDebugLocation l;
    const DIFile* file = loc ? loc->getScope()->getFile() : nullptr;
    if (file) {
      if (file != last_file) last_file = file, last_index = file_index(file);
      l = {last_index, loc->getLine(), loc->getColumn(), 0, 0};
      if (const DILocation* at = loc->getInlinedAt()) l.inline_site = inline_site(loc->getScope()->getSubprogram(), at, 1);
      l.block = block_index(loc->getScope(), 1);
    }
    d.locations.push_back(l);
  }
  if (d.emission != DebugEmission::full || !f.getSubprogram()) return;
  // The function's variables, in the order of their records.
  std::set<std::pair<const DILocalVariable*, uint32_t>> seen;
  for (const BasicBlock& bb : f)
    for (const Instruction& inst : bb)
      for (const DbgVariableRecord& r : filterDbgVars(inst.getDbgRecordRange())) {
        if (!r.isDbgDeclare() || !r.getVariable() || !r.getDebugLoc()) continue;
        FlatDebugVariable v;
        v.function = fn;
        const Value* address = r.getVariableLocationOp(0);
        if (auto* alloca = dyn_cast_or_null<AllocaInst>(address)) {
          const uint32_t* at = flat_index.find(alloca);
          if (!at) continue;
          v.storage_kind = kDebugStorageAlloca, v.storage = *at;
        } else if (auto* arg = dyn_cast_or_null<Argument>(address); arg && arg->getParent() == &f) {
          v.storage_kind = kDebugStorageArgument, v.storage = arg->getArgNo();
        } else {
          continue;
        }
        if (!expression_ops(r.getExpression(), v.expression)) continue;
        const DILocation* loc = r.getDebugLoc().get();
        if (const DILocation* at = loc->getInlinedAt()) {
          v.inline_site = inline_site(loc->getScope()->getSubprogram(), at, 1);
        }
        const DILocalVariable* var = r.getVariable();
        if (!seen.emplace(var, v.inline_site).second) continue;
        v.block = block_index(var->getScope(), 1);
        if (const DIFile* file = var->getFile()) v.file = file_index(file);
        v.line = var->getLine();
        v.arg = var->getArg();
        v.flags = var->isArtificial() ? kDebugTypeArtificial : 0;
        v.name = var->getName().str();
        v.type = type(var->getType());
        fill_types();
        d.variables.push_back(std::move(v));
      }
}

std::vector<const DIGlobalVariable*> FlatDebugExporter::kept_globals(const GlobalVariable& g) const {
  std::vector<const DIGlobalVariable*> kept;
  if (d_.emission != DebugEmission::full || g.isDeclaration() || !g.hasName()) return kept;
  // Malformed metadata (a !dbg of another kind, a variable or expression field naming
  // the wrong kind of node) is passed over by raw field, never cast: LLVM's own typed
  // getters assert on it, and the verifier does not always run first.
  SmallVector<std::pair<unsigned, MDNode*>, 2> attached;
  g.getAllMetadata(attached);
  for (const auto& [kind, node] : attached) {
    auto* e = kind == LLVMContext::MD_dbg ? dyn_cast<DIGlobalVariableExpression>(node) : nullptr;
    if (!e) continue;
    auto* var = dyn_cast_or_null<DIGlobalVariable>(e->getRawVariable());
    auto* expr = dyn_cast_or_null<DIExpression>(e->getRawExpression());
    // A static inside a function (a local scope) goes inside its function's DIE: kept
    // when that function is stamp's.
    if (var && var->isDefinition() && !var->getRawStaticDataMemberDeclaration() && expr &&
        expr->getNumElements() == 0 && (!isa_and_nonnull<DILocalScope>(var->getRawScope()) || function_of(var)))
      kept.push_back(var);
  }
  return kept;
}

uint32_t FlatDebugExporter::function_of(const DIGlobalVariable* var) const {
  auto* local = dyn_cast_or_null<DILocalScope>(var->getRawScope());
  const DISubprogram* sp = local ? local->getSubprogram() : nullptr;
  auto it = sp ? function_of_subprogram_.find(sp) : function_of_subprogram_.end();
  return it == function_of_subprogram_.end() ? 0 : it->second;
}

void FlatDebugExporter::global(const DIGlobalVariable* var, uint32_t symbol) {
  FlatDebugGlobal g;
  g.symbol = symbol;
  g.function = function_of(var);
  if (!g.function) g.scope = scope_index(dyn_cast_or_null<DIScope>(var->getRawScope()));
  if (auto* file = dyn_cast_or_null<DIFile>(var->getRawFile())) g.file = file_index(file);
  g.type = type(var->getRawType());
  fill_types();
  g.line = var->getLine();
  g.align_bits = var->getAlignInBits();
  g.local_to_unit = var->isLocalToUnit();
  auto text = [](const Metadata* m) { return m && isa<MDString>(m) ? cast<MDString>(m)->getString().str() : ""; };
  g.name = text(var->getRawName());
  g.linkage_name = text(var->getRawLinkageName());
  d_.globals.push_back(std::move(g));
}

// 1 + the node's index in d_.types, appended unfilled when new; 0 for none and for
// kinds flat_debug.h leaves out.
uint32_t FlatDebugExporter::type(const Metadata* node) {
  if (!node) return 0;
  if (auto* derived = dyn_cast<DIDerivedType>(node); derived && derived->isStaticMember()) return 0;
  const bool kept = (isa<DIBasicType>(node) && !isa<DIFixedPointType>(node)) || isa<DIDerivedType>(node) ||
      isa<DICompositeType>(node) || isa<DISubroutineType>(node) || isa<DISubrange>(node) ||
      isa<DIEnumerator>(node) || isa<DITemplateTypeParameter>(node);
  if (!kept) return 0;
  auto [it, inserted] = type_index_.emplace(node, static_cast<uint32_t>(d_.types.size() + 1));
  if (inserted) d_.types.emplace_back(), type_nodes_.push_back(node);
  return it->second;
}

void FlatDebugExporter::fill_types() {
  while (types_filled_ < d_.types.size()) {
    FlatDebugType t;  // filled aside: filling appends to d_.types
    fill_type(t, type_nodes_[types_filled_]);
    d_.types[types_filled_++] = std::move(t);
  }
}

void FlatDebugExporter::fill_type(FlatDebugType& t, const Metadata* node) {
  auto common = [&](const DIType* ty, bool scoped) {
    t.tag = static_cast<uint16_t>(ty->getTag());
    t.name = ty->getName().str();
    t.line = ty->getLine();
    t.size_bits = ty->getSizeInBits();
    t.align_bits = ty->getAlignInBits();
    t.offset_bits = ty->getOffsetInBits();
    t.flags = (ty->isArtificial() ? kDebugTypeArtificial : 0) | (ty->isForwardDecl() ? kDebugTypeDeclaration : 0) |
        (ty->isBitField() ? kDebugTypeBitField : 0);
    if (scoped) {
      if (auto* owner = dyn_cast_or_null<DICompositeType>(ty->getScope())) t.parent_type = type(owner);
      else t.scope = scope_index(ty->getScope());
    }
    if (const DIFile* file = ty->getFile()) t.file = file_index(file);
  };
  if (auto* basic = dyn_cast<DIBasicType>(node)) {
    common(basic, false);
    t.encoding = static_cast<uint16_t>(basic->getEncoding());
  } else if (auto* derived = dyn_cast<DIDerivedType>(node)) {
    common(derived, derived->getTag() == dwarf::DW_TAG_typedef);
    t.type = type(derived->getBaseType());
    if (derived->getTag() == dwarf::DW_TAG_ptr_to_member_type) t.containing_type = type(derived->getClassType());
    auto* owner = dyn_cast_or_null<DICompositeType>(derived->getScope());
    if (derived->getTag() == dwarf::DW_TAG_member && owner && owner->getTag() == dwarf::DW_TAG_variant_part)
      if (auto* value = dyn_cast_or_null<ConstantInt>(derived->getDiscriminantValue()))
        t.value = constant_value(value->getValue()), t.flags |= kDebugTypeHasValue;
  } else if (auto* composite = dyn_cast<DICompositeType>(node)) {
    common(composite, composite->getTag() != dwarf::DW_TAG_variant_part);
    t.type = type(composite->getBaseType());
    t.discriminator = type(composite->getDiscriminator());
    for (const DINode* e : composite->getElements())
      if (uint32_t k = type(e)) t.elements.push_back(k);
    for (const DITemplateParameter* p : composite->getTemplateParams())
      if (uint32_t k = type(p)) t.elements.push_back(k);
  } else if (auto* routine = dyn_cast<DISubroutineType>(node)) {
    t.tag = dwarf::DW_TAG_subroutine_type;
    t.flags = routine->isArtificial() ? kDebugTypeArtificial : 0;
    DITypeRefArray types = routine->getTypeArray();
    if (types.size() > 0) t.type = type(types[0]);
    for (size_t k = 1; k < types.size(); ++k) t.elements.push_back(type(types[k]));
  } else if (auto* range = dyn_cast<DISubrange>(node)) {
    t.tag = dwarf::DW_TAG_subrange_type;
    if (auto* count = dyn_cast_if_present<ConstantInt*>(range->getCount()))
      t.value = constant_value(count->getValue()), t.flags = kDebugTypeHasValue;
  } else if (auto* enumerator = dyn_cast<DIEnumerator>(node)) {
    t.tag = dwarf::DW_TAG_enumerator;
    t.name = enumerator->getName().str();
    t.value = constant_value(enumerator->getValue());
    t.flags = kDebugTypeHasValue | (enumerator->isUnsigned() ? kDebugTypeUnsigned : 0);
  } else if (auto* param = dyn_cast<DITemplateTypeParameter>(node)) {
    t.tag = dwarf::DW_TAG_template_type_parameter;
    t.name = param->getName().str();
    t.type = type(param->getType());
  }
}

}  // namespace kiln
