// A body's variables (its #dbg_declare records) and the types they reach, read without
// LLVM as LLVM's exporter finds them (lib/flat_export_debug.cpp, flat_debug.h's rules):
// the type, variable and expression records of MetadataLoader.cpp's parseOneMetadata,
// and what DIType, DILocalVariable and DbgVariableRecord make of them. Asked for at
// full emission only (DebugMetadata::wants_variables).
#include <algorithm>

#include "bitcode_debug.h"

namespace kiln::bc::detail {

using namespace md;

namespace {

// DW_TAG_* (Dwarf.def) the rules name.
constexpr uint16_t kTagMember = 0x0d, kTagSubroutineType = 0x15, kTagPtrToMember = 0x1f, kTagTypedef = 0x16,
                   kTagSubrangeType = 0x21, kTagEnumerator = 0x28, kTagTemplateType = 0x2f, kTagVariantPart = 0x33,
                   kTagPtrAuth = 0x4300;  // DW_TAG_LLVM_ptrauth_type: DIType gives it no alignment
// DIFlags (DebugInfoFlags.def).
constexpr uint32_t kFlagFwdDecl = 1u << 2, kFlagArtificial = 1u << 6, kFlagStaticMember = 1u << 12,
                   kFlagBitField = 1u << 19;
constexpr uint64_t kMaxIds = 0xFFFFFFF0u;   // as bitcode_debug.cpp's
constexpr uint64_t kExpressionVersion = 3;  // METADATA_EXPRESSION's since LLVM 5

// MetadataLoader's unrotateSign (an enumerator's 64-bit value) and the bitcode reader's
// decodeSignRotatedValue (the words of a wide one): two encodings of a signed value.
int64_t unrotate_sign(uint64_t u) { return (u & 1) ? ~int64_t(u >> 1) : int64_t(u >> 1); }
uint64_t decode_sign_rotated(uint64_t v) {
  if ((v & 1) == 0) return v >> 1;
  return v != 1 ? uint64_t(0) - (v >> 1) : uint64_t(1) << 63;
}

// An APInt of `width` bits whose low word is `bits`, as flat_debug.h keeps values:
// sign-extended from its width, or its low 64 bits when wider.
int64_t sign_extend(uint64_t bits, uint32_t width) {
  if (width == 0 || width >= 64) return int64_t(bits);
  const uint64_t sign = uint64_t(1) << (width - 1);
  bits &= (sign << 1) - 1;
  return int64_t((bits ^ sign) - sign);
}

uint32_t type_flags(uint32_t di_flags) {
  return (di_flags & kFlagArtificial ? kDebugTypeArtificial : 0) |
      (di_flags & kFlagFwdDecl ? kDebugTypeDeclaration : 0) | (di_flags & kFlagBitField ? kDebugTypeBitField : 0);
}

}  // namespace

// --- Records, as the body's or the module's metadata is read.

// BASIC_TYPE [distinct | size is an id << 1, tag, name, size, align, encoding, (flags,
// extra inhabitants, data size)], DERIVED_TYPE [distinct | size is an id << 1, tag, name,
// file, line, scope, base type, size, align, offset, flags, extra data, (address space,
// annotations, ptrauth)] or SUBROUTINE_TYPE [distinct | new type array << 1, flags,
// types, (cc)]. Ids are + 1; a tag, a line or an alignment keeps the bits DINode keeps.
DebugMetadata::Entry DebugMetadata::type_record(BitstreamCursor& c, uint32_t code) {
  auto id = [&](size_t i) {
    if (ops_[i] >= kMaxIds) c.fail("debug type operand " + std::to_string(ops_[i]) + " out of range");
    return uint32_t(ops_[i]);
  };
  TypeRecord r{};
  r.code = code;
  if (code == kSubroutineType) {
    // A type array of an older record (new type array unset) is upgraded as read,
    // which changes only names of types, declined below where one is met.
    if (ops_.size() < 3 || ops_.size() > 4) c.fail("invalid DISubroutineType record");
    r.tag = kTagSubroutineType;
    r.flags = uint32_t(ops_[1]);
    r.list = id(2);
  } else {
    const bool basic = code == kBasicType;
    if (ops_.size() < (basic ? 6u : 12u)) c.fail(basic ? "invalid DIBasicType record" : "invalid DIDerivedType record");
    if (ops_.size() > (basic ? 9u : 15u)) {
      // A later layout (LLVM 23's file and line of a basic type): not guessed at.
      decline(std::string("a ") + (basic ? "DIBasicType" : "DIDerivedType") + " record of a layout after LLVM 22");
      return {Kind::kOther, 0};
    }
    r.size_is_md = ops_[0] & 2;
    r.tag = uint16_t(ops_[1]);
    r.name = id(2);
    if (basic) {
      r.size = ops_[3];
      r.align = uint32_t(ops_[4]);
      r.encoding = uint32_t(ops_[5]);
      r.flags = ops_.size() > 6 ? uint32_t(ops_[6]) : 0;
    } else {
      r.file = id(3), r.line = uint32_t(ops_[4]), r.scope = id(5), r.base = id(6);
      r.size = ops_[7], r.align = uint32_t(ops_[8]), r.offset = ops_[9];
      r.flags = uint32_t(ops_[10]);
      r.extra = id(11);
    }
  }
  types_.push_back(r);
  return {Kind::kType, uint32_t(types_.size() - 1)};
}

// SUBRANGE [distinct | version << 1, count, lower bound, (upper bound, stride)]: version
// 0 has a constant count, 1 a count id, 2 ids for all four. ENUMERATOR [distinct |
// unsigned << 1 | wide << 2, value (or bit width), name, (words)]. TEMPLATE_TYPE
// [distinct, name, type, (is default)].
DebugMetadata::Entry DebugMetadata::type_parts(BitstreamCursor& c, uint32_t code) {
  auto id = [&](size_t i) {
    if (ops_[i] >= kMaxIds) c.fail("debug type operand " + std::to_string(ops_[i]) + " out of range");
    return uint32_t(ops_[i]);
  };
  TypeRecord r{};
  r.code = code;
  if (code == kSubrange) {
    if (ops_.empty()) c.fail("invalid DISubrange record");
    const uint64_t version = ops_[0] >> 1;
    if (version > 2) c.fail("unsupported DISubrange version " + std::to_string(version));
    if (ops_.size() < (version == 2 ? 5u : 3u)) c.fail("invalid DISubrange record");
    r.tag = kTagSubrangeType;
    r.size_is_md = version != 0;
    r.size = version != 0 ? id(1) : ops_[1];
    r.upper = version == 2 && id(3) != 0;
  } else if (code == kEnumerator) {
    if (ops_.size() < 3) c.fail("invalid DIEnumerator record");
    r.tag = kTagEnumerator;
    r.name = id(2);
    r.flags = kDebugTypeHasValue | (ops_[0] & 2 ? kDebugTypeUnsigned : 0);
    if (!(ops_[0] & 4)) {
      r.value = unrotate_sign(ops_[1]);
    } else {
      // A wide value: APInt(bit width, words), of which the low word is kept.
      const uint32_t width = uint32_t(ops_[1]);
      if (width == 0 || ops_.size() == 3) {
        decline("an enumerator's wide value without bits");
        return {Kind::kOther, 0};
      }
      r.value = sign_extend(decode_sign_rotated(ops_[3]), width);
    }
  } else {
    if (ops_.size() < 3 || ops_.size() > 4) c.fail("invalid DITemplateTypeParameter record");
    r.tag = kTagTemplateType;
    r.name = id(1);
    r.base = id(2);
  }
  types_.push_back(r);
  return {Kind::kType, uint32_t(types_.size() - 1)};
}

// COMPOSITE_TYPE [distinct | not in type refs << 1 | size is an id << 2, tag, name, file,
// line, scope, base type, size, align, offset, flags, elements, runtime language, vtable
// holder, template params, identifier, (discriminator, ...)], in ops_, just decoded as a
// scope (scope()): its fields as a type too.
void DebugMetadata::composite_type(BitstreamCursor& c) {
  auto id = [&](size_t i) {
    if (i >= ops_.size()) return uint32_t(0);
    if (ops_[i] >= kMaxIds) c.fail("DICompositeType operand " + std::to_string(ops_[i]) + " out of range");
    return uint32_t(ops_[i]);
  };
  if (ops_[8] > 0xFFFFFFFFu) c.fail("DICompositeType alignment value is too large");
  TypeRecord r{};
  r.code = kCompositeType;
  r.size_is_md = ops_[0] & 4;
  r.tag = uint16_t(ops_[1]);
  r.name = id(2), r.file = id(3), r.line = uint32_t(ops_[4]), r.scope = id(5), r.base = id(6);
  r.size = ops_[7], r.align = uint32_t(ops_[8]), r.offset = ops_[9];
  r.flags = uint32_t(ops_[10]);
  r.list = id(11), r.list2 = id(14), r.extra = id(16);
  types_.push_back(r);
  scopes_.back().type = uint32_t(types_.size() - 1);
}

// LOCAL_VAR [distinct | has alignment << 1, (tag), scope, name, file, line, type, arg,
// flags, (align, annotations)]: records with an alignment (LLVM 4 on) have no tag.
DebugMetadata::Entry DebugMetadata::variable_record(BitstreamCursor& c) {
  if (ops_.size() < 8 || ops_.size() > 11) c.fail("invalid DILocalVariable record");
  if (ops_.size() > 10) {
    decline("a DILocalVariable record of a layout after LLVM 22");
    return {Kind::kOther, 0};
  }
  const bool has_align = ops_[0] & 2;
  const size_t t = !has_align && ops_.size() > 8 ? 1 : 0;
  // The alignment is the ninth field: LLVM's reader takes it from past the end of a
  // record of eight (its vector's spare capacity), this one refuses the record.
  if (has_align && ops_.size() < 9) c.fail("invalid DILocalVariable record (an alignment, but no field for it)");
  if (has_align && ops_[8] > 0xFFFFFFFFu) c.fail("DILocalVariable alignment value is too large");
  for (size_t i : {1, 2, 3, 5})
    if (ops_[i + t] >= kMaxIds) c.fail("DILocalVariable operand out of range");
  // DILocalVariable keeps 16 bits of arg.
  variables_.push_back({uint32_t(ops_[1 + t]), uint32_t(ops_[2 + t]), uint32_t(ops_[3 + t]), uint32_t(ops_[4 + t]),
                        uint32_t(ops_[5 + t]), uint32_t(ops_[6 + t]) & 0xFFFF, uint32_t(ops_[7 + t])});
  return {Kind::kVariable, uint32_t(variables_.size() - 1)};
}

// EXPRESSION [distinct | version << 1, elements...]: kept as FlatDebugVariable keeps an
// expression when it is of DW_OP_deref and DW_OP_plus_uconst only. Version 3 is what
// LLVM writes since LLVM 5; older ones, which LLVM upgrades as it reads them, and a
// DW_OP_plus_uconst without its operand (which the verifier calls broken) decline the
// module when a variable is at one.
DebugMetadata::Entry DebugMetadata::expression_record(BitstreamCursor& c) {
  if (ops_.empty()) c.fail("invalid DIExpression record");
  Expression e{uint32_t(expr_ops_.size()), 0, kExprKept};
  if (ops_[0] >> 1 != kExpressionVersion) e.state = kExprBroken;
  for (size_t i = 1; i < ops_.size() && e.state == kExprKept;) {
    if (ops_[i] == kDwarfOpDeref) {
      expr_ops_.push_back(kDwarfOpDeref);
      ++i;
    } else if (ops_[i] == kDwarfOpPlusUconst && i + 1 < ops_.size()) {
      expr_ops_.push_back(kDwarfOpPlusUconst);
      expr_ops_.push_back(ops_[i + 1]);
      i += 2;
    } else {
      e.state = ops_[i] == kDwarfOpPlusUconst ? kExprBroken : kExprOther;
    }
  }
  if (e.state != kExprKept) expr_ops_.resize(e.first);
  e.count = uint32_t(expr_ops_.size() - e.first);
  if (expr_ops_.size() >= kMaxIds) c.fail("metadata expressions of too many operations");
  expressions_.push_back(e);
  return {Kind::kExpression, uint32_t(expressions_.size() - 1)};
}

// DEBUG_RECORD_DECLARE [location, variable, expression, address]: metadata ids, looked
// at when the body ends (its metadata may come after it).
void DebugMetadata::declare(BitstreamCursor& c, const RecordOps& record) {
  if (record.size() < 4) c.fail("invalid #dbg_declare record");
  for (size_t i = 0; i < 4; ++i)
    if (record[i] >= kMaxIds) c.fail("#dbg_declare operand " + std::to_string(record[i]) + " out of range");
  declares_.push_back({uint32_t(record[0]), uint32_t(record[1]), uint32_t(record[2]), uint32_t(record[3])});
}

// --- Variables, as a body ends.

// f.debug_vars: the body's declare records flat_debug.h keeps, in order, with the types
// they reach made. A function without a subprogram has none (LLVM's exporter looks no
// further). A repeat of a variable at a site is passed over by the exporter, which
// knows the flat sites.
void DebugMetadata::variables(BitstreamCursor& c, BcFunction& f) {
  f.debug_vars.clear();
  if (!f.subprogram.present) return declares_.clear();
  for (size_t i = 0; i < declares_.size(); ++i) {
    // Made where it is kept (most are), not moved there; one passed over is dropped.
    if (!variable(c, declares_[i], f, f.debug_vars.emplace_back())) f.debug_vars.pop_back();
  }
  declares_.clear();
}

// One record as LLVM's exporter takes it: its address, then its expression, then its
// location's inlined call; false for a record it passes over.
bool DebugMetadata::variable(BitstreamCursor& c, const Declare& d, const BcFunction& f, BcDebugVariable& v) {
  const Entry loc = entry(c, d.location), var = entry(c, d.variable), expr = entry(c, d.expression);
  if (loc.kind != Kind::kLocation || var.kind != Kind::kVariable || expr.kind != Kind::kExpression) {
    decline("a #dbg_declare record of no location, variable or expression");
    return false;
  }
  if (!storage(c, d.address, f, v)) return false;
  // Copies: reading more records may add to these arrays.
  const Expression e = expressions_[expr.index];
  const Location l = locations_[loc.index];
  const Variable fields = variables_[var.index];
  if (e.state == kExprBroken) {
    decline("a #dbg_declare expression before LLVM 5, or malformed");
    return false;
  }
  if (e.state == kExprOther) return false;
  // The verifier's: a variable and its record's location are in one subprogram.
  const uint32_t sp = subprogram_of(c, l.scope);
  if (sp != subprogram_of(c, fields.scope)) {
    decline("a #dbg_declare whose variable and location are in two subprograms");
    return false;
  }
  if (l.inlined_at) v.callee = reader_subprogram(c, sp), v.call = reader_call(c, l.inlined_at);
  v.variable = d.variable;
  unsigned length = 0;
  v.block = reader_block(c, fields.scope, 1, length);
  v.file = reader_file(c, fields.file);
  v.line = fields.line;
  v.arg = fields.arg;
  v.flags = fields.flags & kFlagArtificial ? kDebugTypeArtificial : 0;
  v.name = name(c, fields.name);
  v.expression.assign(expr_ops_.begin() + e.first, expr_ops_.begin() + e.first + e.count);
  v.type = reader_type(c, fields.type, true);
  fill_types(c);
  return true;
}

// The record's address: an alloca of the body or one of its arguments. Any other value,
// or none (an empty node), adds nothing; other metadata the verifier calls broken.
bool DebugMetadata::storage(BitstreamCursor& c, uint32_t address, const BcFunction& f, BcDebugVariable& v) {
  const Entry a = entry(c, address);
  if (a.kind == Kind::kNode && node_ops_[a.index] == 0) return false;
  if (a.kind != Kind::kValue) {
    decline("a #dbg_declare address that is no value");
    return false;
  }
  if (a.index < m_.module_value_count) return false;  // a global or a constant
  const uint64_t i = uint64_t(a.index) - m_.module_value_count;
  if (i >= f.values.size()) c.fail("#dbg_declare address of value " + std::to_string(a.index) + ", never defined");
  const ValueRef& r = f.values[i];
  if (r.type >= m_.types.size() ||
      (m_.types[r.type].kind != TypeKind::kPointer && m_.types[r.type].kind != TypeKind::kInteger)) {
    decline("a #dbg_declare address that is no pointer or integer");
    return false;
  }
  if (r.kind == ValueKind::kArgument) {
    v.storage_kind = kDebugStorageArgument, v.storage = r.index;
    return true;
  }
  if (r.kind != ValueKind::kInstruction || r.index >= f.insts.size() || f.insts[r.index].opcode != Opcode::kAlloca)
    return false;
  v.storage_kind = kDebugStorageAlloca, v.storage = r.index;
  return true;
}

// --- Types: one BcDebug::types entry per node, made when first reached and filled from
// the queue.

// A reference to a type node, metadata `e`, as a BcDebug::types number: 0 for the kinds
// flat_debug.h leaves out. A type named by its identifier (an MDString, before LLVM 3.9)
// declines, as does where the verifier wants a DIType (`must_be_type`) another node.
// reader_type() returns one made before without it.
uint32_t DebugMetadata::make_type(BitstreamCursor& c, Entry e, bool must_be_type) {
  if (e.kind == Kind::kString) {
    decline("a debug type named by its identifier (debug information before LLVM 3.9)");
    return 0;
  }
  const uint32_t rec = e.kind == Kind::kType ? e.index : e.kind == Kind::kScope ? scopes_[e.index].type : kNone;
  const bool is_type = rec != kNone ? is_di_type(types_[rec].code) : e.kind == Kind::kOtherType;
  if (must_be_type && !is_type) {
    decline("a debug type reference to what is no type");
    return 0;
  }
  if (rec == kNone) return 0;
  TypeRecord& r = types_[rec];
  if (r.code == kDerivedType && (r.flags & kFlagStaticMember)) return 0;
  if (!r.reader_type) {
    if (m_.debug.types.size() >= kMaxIds) c.fail("too many debug types");
    m_.debug.types.emplace_back();
    r.reader_type = uint32_t(m_.debug.types.size());
    type_queue_.push_back({r.reader_type, rec});
  }
  return r.reader_type;
}

void DebugMetadata::fill_types(BitstreamCursor& c) {
  while (!type_queue_.empty()) {
    const auto [number, rec] = type_queue_.back();
    type_queue_.pop_back();
    const TypeRecord r = types_[rec];  // a copy: filling reads more records
    FlatDebugType t;
    fill_type(c, r, t);
    m_.debug.types[number - 1] = std::move(t);
  }
}

// FlatDebugType's fields of one node, as lib/flat_export_debug.cpp's fill_type.
void DebugMetadata::fill_type(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t) {
  switch (r.code) {
    case kBasicType:  // no file, line, scope or offset (LLVM 22)
      t.tag = r.tag;
      t.name = string(c, r.name);
      t.size_bits = size_value(c, r.size_is_md, r.size);
      t.align_bits = r.tag == kTagPtrAuth ? 0 : r.align;
      t.flags = type_flags(r.flags);
      t.encoding = uint16_t(r.encoding);
      return;
    case kDerivedType:
      fill_scoped(c, r, t);
      t.type = reader_type(c, r.base, true);
      // Its class (DIDerivedType::getClassType), which the verifier wants a type.
      if (r.tag == kTagPtrToMember) t.containing_type = reader_type(c, r.extra, true);
      return discriminant(c, r, t);
    case kCompositeType:
      return fill_composite(c, r, t);
    case kSubroutineType:
      return fill_subroutine(c, r, t);
    case kSubrange:
      return fill_subrange(c, r, t);
    case kEnumerator:
      t.tag = r.tag;
      t.name = string(c, r.name);
      t.value = r.value;
      t.flags = r.flags;
      return;
    default:  // kTemplateType
      t.tag = r.tag;
      t.name = string(c, r.name);
      t.type = reader_type(c, r.base, true);
      return;
  }
}

// What a DIDerivedType and a DICompositeType share: a typedef and a composite type other
// than a variant part have a scope, the composite type they are declared in (as a type)
// or a chain of namespaces.
void DebugMetadata::fill_scoped(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t) {
  t.tag = r.tag;
  t.name = string(c, r.name);
  t.line = r.line;
  t.size_bits = size_value(c, r.size_is_md, r.size);
  t.offset_bits = size_value(c, r.size_is_md, r.offset);
  t.align_bits = r.tag == kTagPtrAuth ? 0 : r.align;
  t.flags = type_flags(r.flags);
  const bool scoped = r.code == kCompositeType ? r.tag != kTagVariantPart : r.tag == kTagTypedef;
  if (scoped && r.scope) {
    const Entry s = entry(c, r.scope - 1);
    if (s.kind == Kind::kScope && scopes_[s.index].type != kNone) t.parent_type = reader_type(c, r.scope, false);
    else t.scope = reader_scope(c, r.scope);
  }
  t.file = reader_file(c, r.file);
}

// A member of a variant part: its discriminant, its extraData when a ConstantInt.
void DebugMetadata::discriminant(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t) {
  if (r.tag != kTagMember || !r.scope || !r.extra) return;
  const Entry s = entry(c, r.scope - 1);
  if (s.kind != Kind::kScope || scopes_[s.index].type == kNone || types_[scopes_[s.index].type].tag != kTagVariantPart)
    return;
  const Entry x = entry(c, r.extra - 1);
  if (x.kind != Kind::kValue) {
    decline("a variant's discriminant that is no value");  // LLVM would cast it to one
    return;
  }
  uint64_t bits = 0;
  uint32_t width = 0;
  if (!constant_int(x.index, bits, width)) return;
  t.value = sign_extend(bits, width);
  t.flags |= kDebugTypeHasValue;
}

void DebugMetadata::fill_composite(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t) {
  fill_scoped(c, r, t);
  t.type = reader_type(c, r.base, true);
  t.discriminator = reader_type(c, r.extra, false);
  // Its elements, then its template parameters: nodes of the kinds left out are
  // passed over (by index: reading them may add to node_ops_).
  for (uint32_t list : {r.list, r.list2}) {
    const uint32_t n = tuple(c, list, "a composite type's elements or template parameters");
    if (n == kNone) continue;
    t.elements.reserve(t.elements.size() + node_ops_[n]);  // the operands are read already
    for (uint32_t k = 0, count = node_ops_[n]; k < count; ++k)
      if (uint32_t e = reader_type(c, node_ops_[n + 1 + k], false)) t.elements.push_back(e);
  }
}

// Its types: the first is its return type, the others its parameters' (none: 0).
void DebugMetadata::fill_subroutine(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t) {
  t.tag = r.tag;
  t.flags = r.flags & kFlagArtificial ? kDebugTypeArtificial : 0;
  const uint32_t n = tuple(c, r.list, "a subroutine type's types");
  if (n == kNone) return;
  if (node_ops_[n] > 1) t.elements.reserve(node_ops_[n] - 1);
  for (uint32_t k = 0, count = node_ops_[n]; k < count; ++k) {
    const uint32_t type = reader_type(c, node_ops_[n + 1 + k], true);
    if (k == 0) t.type = type;
    else t.elements.push_back(type);
  }
}

// Its count when a constant. The verifier calls a count below -1, a subrange of both or
// neither of count and upper bound, and a count of another kind broken.
void DebugMetadata::fill_subrange(BitstreamCursor& c, const TypeRecord& r, FlatDebugType& t) {
  t.tag = r.tag;
  int64_t count = int64_t(r.size);
  if (r.size_is_md) {
    if (!r.size || r.upper) {
      if (!r.size && !r.upper) decline("a subrange of no count or upper bound");
      if (r.size && r.upper) decline("a subrange of both a count and an upper bound");
      return;
    }
    const Entry e = entry(c, r.size - 1);
    if (e.kind == Kind::kVariable || e.kind == Kind::kExpression) return;  // not a constant
    uint64_t bits = 0;
    uint32_t width = 0;
    if (e.kind != Kind::kValue || !constant_int(e.index, bits, width)) {
      decline("a subrange count that is no integer constant, variable or expression");
      return;
    }
    count = sign_extend(bits, width);
  }
  if (count < -1) return decline("a subrange count below -1");
  t.value = count;
  t.flags = kDebugTypeHasValue;
}

// The node_ops_ index of a list (id + 1), kNone for none; another node is broken.
uint32_t DebugMetadata::tuple(BitstreamCursor& c, uint32_t id_plus_one, const char* what) {
  if (!id_plus_one) return kNone;
  const Entry e = entry(c, id_plus_one - 1);
  if (e.kind != Kind::kNode) {
    decline(std::string(what) + " that is no tuple");
    return kNone;
  }
  return e.index;
}

// DIType's getSizeInBits (and getOffsetInBits): a constant field, or an id (+ 1) of a
// ConstantInt as metadata, zero-extended; 0 for anything else.
uint64_t DebugMetadata::size_value(BitstreamCursor& c, bool is_metadata, uint64_t field) {
  if (!is_metadata) return field;
  if (!field) return 0;
  if (field >= kMaxIds) c.fail("debug type size operand out of range");
  const Entry e = entry(c, field - 1);
  uint64_t bits = 0;
  uint32_t width = 0;
  if (e.kind != Kind::kValue || !constant_int(e.index, bits, width)) return 0;
  return width == 0 || width >= 64 ? bits : bits & ((uint64_t(1) << width) - 1);
}

// A module-level ConstantInt's low 64 bits and width; false for any other value (a body's
// own values are no constants metadata names as LLVM writes it).
bool DebugMetadata::constant_int(uint32_t value_id, uint64_t& bits, uint32_t& width) const {
  if (value_id >= m_.module_value_count || value_id >= m_.values.size()) return false;
  const ValueRef& r = m_.values[value_id];
  if (r.kind != ValueKind::kConstant || r.index >= m_.constants.size() || r.type >= m_.types.size() ||
      m_.types[r.type].kind != TypeKind::kInteger)
    return false;
  const Constant& k = m_.constants[r.index];
  width = m_.types[r.type].width;
  if (k.kind == ConstKind::kNull) return bits = 0, true;
  if (k.kind != ConstKind::kInteger || k.words.empty()) return false;
  bits = k.words[0];
  return true;
}

}  // namespace kiln::bc::detail
