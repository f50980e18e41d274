// The module half of the direct bitcode reader (bitcode_ir.h): identification, the
// module block's records, the string table, types, attributes, constants and sync
// scopes, without LLVM. Field layouts follow LLVM 22's BitcodeReader and
// LLVMBitCodes.h. The input is hostile: every index read from the file is checked
// before use, nothing is reserved from a count the file gives, and a file LLVM would
// refuse fails here with KilnError(kExitBadInput) through BitstreamCursor::fail.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bitcode_debug.h"
#include "bitcode_ir.h"
#include "bitcode_reader_internal.h"
#include "bitstream.h"
#include "codegen_requests.h"
#include "error.h"
#include "vector_abi.h"

namespace kiln::bc {


uint32_t BcModule::find_integer_type(uint32_t width) const {
  for (uint32_t i = 0; i < types.size(); ++i)
    if (types[i].kind == TypeKind::kInteger && types[i].width == width) return i;
  return kNone;
}

uint32_t BcModule::find_struct_type(const std::vector<uint32_t>& elements, bool packed) const {
  // Only literal structs: a result type no record names is never an identified one.
  for (uint32_t i = 0; i < types.size(); ++i) {
    const Type& t = types[i];
    if (t.kind == TypeKind::kStruct && !t.named && t.packed == packed && t.elements == elements) return i;
  }
  return kNone;
}

uint32_t BcModule::find_vector_type(uint32_t element, uint64_t count, bool scalable) const {
  TypeKind kind = scalable ? TypeKind::kScalableVector : TypeKind::kFixedVector;
  for (uint32_t i = 0; i < types.size(); ++i) {
    const Type& t = types[i];
    if (t.kind == kind && t.count == count && !t.elements.empty() && t.elements[0] == element) return i;
  }
  return kNone;
}

const ValueRef& value_ref(const BcModule& m, uint32_t fn, uint32_t id) {
  uint32_t module_values = m.module_value_count ? m.module_value_count : uint32_t(m.values.size());
  if (id < module_values && id < m.values.size()) return m.values[id];
  if (fn != kNone && fn < m.functions.size() && id >= module_values) {
    const BcFunction& f = m.functions[fn];
    if (id - module_values < f.values.size()) return f.values[id - module_values];
  }
  throw KilnError(kExitInternal, "", "value id " + std::to_string(id) + " out of range");
}

namespace {

// Every record of the block just entered, to its END_BLOCK (blocks nested in it
// skipped): `record(code)`, with the operands in `ops`. `where` names the block in the
// error of a stream that ends inside it.
template <typename Ops, typename F>
void for_each_record(BitstreamCursor& c, Ops& ops, const char* where, F&& record) {
  for (;;) {
    BitstreamEntry e = c.advance();
    if (e.kind == BitstreamEntry::kEndBlock) return;
    if (e.kind == BitstreamEntry::kEnterBlock) {
      c.skip_block();
      continue;
    }
    if (e.kind == BitstreamEntry::kEndOfStream) c.fail(std::string("stream ends inside ") + where);
    record(c.read_record(e.id, ops));
  }
}

void decline(BcModule& m, const std::string& why) {
  if (m.declined.empty()) m.declined = "reader: " + why;
}

// LLVM's convertToString: each operand from `from` on is one char.
template <typename Ops>
std::string chars(const Ops& ops, size_t from = 0) {
  std::string s;
  for (size_t i = from; i < ops.size(); ++i) s.push_back(char(ops[i]));
  return s;
}

// Reads a block to its END_BLOCK, records dropped and sub-blocks skipped; for
// BLOCKINFO that is what defines its abbreviations (the cursor reads them).
void walk_block(BitstreamCursor& c) {
  for (;;) {
    BitstreamEntry e = c.advance();
    if (e.kind == BitstreamEntry::kEndBlock) return;
    if (e.kind == BitstreamEntry::kEnterBlock) {
      if (e.id == 0) walk_block(c);
      else c.skip_block();
    }
    if (e.kind == BitstreamEntry::kEndOfStream) c.fail("stream ends inside a block");
  }
}

uint64_t decode_sign_rotated(uint64_t v) {
  if ((v & 1) == 0) return v >> 1;
  if (v != 1) return uint64_t(0) - (v >> 1);
  return uint64_t(1) << 63;  // "-0" is the smallest integer
}

// ---------------------------------------------------------------- types

bool is_float_kind(TypeKind k) {
  return k == TypeKind::kHalf || k == TypeKind::kBFloat || k == TypeKind::kFloat || k == TypeKind::kDouble ||
      k == TypeKind::kX86Fp80 || k == TypeKind::kFp128 || k == TypeKind::kPpcFp128;
}
bool is_vector_kind(TypeKind k) { return k == TypeKind::kFixedVector || k == TypeKind::kScalableVector; }

// A type no aggregate may hold (LLVM's isValidElementType).
bool bad_element(TypeKind k) {
  return k == TypeKind::kVoid || k == TypeKind::kLabel || k == TypeKind::kMetadata || k == TypeKind::kFunction ||
      k == TypeKind::kToken || k == TypeKind::kX86Amx;
}

class TypeTableReader {
 public:
  TypeTableReader(BitstreamCursor& c, BcModule& m) : c_(c), m_(m) {}

  void read() {
    if (!m_.types.empty()) c_.fail("a second type table");
    for_each_record(c_, ops_, "the type table", [&](uint32_t code) { record(code); });
    if (m_.types.size() != declared_)
      c_.fail("type table of " + std::to_string(m_.types.size()) + " types, " + std::to_string(declared_) +
              " announced");
    validate();
  }

 private:
  void record(uint32_t code) {
    Type t;
    if (simple_type(code, t.kind)) code = 0;  // a type with no operands, done
    switch (code) {
      case 0:
        break;
      case 1:  // NUMENTRY: a count; nothing reserved from it, types are checked against it.
        if (ops_.empty()) c_.fail("empty NUMENTRY record");
        declared_ = ops_[0];
        return;
      case 19:  // STRUCT_NAME: the name of the next named struct or target type
        pending_name_ = chars(ops_);
        return;
      case 6:
        t = named_struct(true);
        break;
      case 7:
        t = integer();
        break;
      case 8:
        t = typed_pointer();
        break;
      case 9:
      case 21:
        t = function(code == 9 ? 2 : 1);
        break;
      case 11:
      case 12:
        t = sequence(code == 12);
        break;
      case 17:  // x86_mmx: LLVM reads it as <1 x i64>; not modelled
        // The module is declined (LLVM's route takes it); the table still needs an entry
        // here so that later type ids keep their numbers while the rest is read.
        decline(m_, "x86_mmx type");
        t.kind = TypeKind::kMetadata;
        break;
      case 18:
        t = structure();
        break;
      case 20:
        t = named_struct(false);
        break;
      case 25:
        if (ops_.size() != 1 || ops_[0] > 0xFFFFFF) c_.fail("bad opaque pointer record");
        t.kind = TypeKind::kPointer;
        t.address_space = uint32_t(ops_[0]);
        break;
      case 26:
        t = target_type();
        break;
      default:
        decline(m_, "type record " + std::to_string(code));
        t.kind = TypeKind::kMetadata;
        break;
    }
    if (m_.types.size() >= declared_) c_.fail("more types than NUMENTRY announced");
    m_.types.push_back(std::move(t));
  }

  // The types that are their code alone.
  static bool simple_type(uint32_t code, TypeKind& kind) {
    static constexpr std::pair<uint32_t, TypeKind> kSimple[] = {{2, TypeKind::kVoid},      {3, TypeKind::kFloat},
                                                                {4, TypeKind::kDouble},    {5, TypeKind::kLabel},
                                                                {10, TypeKind::kHalf},     {13, TypeKind::kX86Fp80},
                                                                {14, TypeKind::kFp128},    {15, TypeKind::kPpcFp128},
                                                                {16, TypeKind::kMetadata}, {22, TypeKind::kToken},
                                                                {23, TypeKind::kBFloat},   {24, TypeKind::kX86Amx}};
    for (const auto& [c, k] : kSimple)
      if (c == code) {
        kind = k;
        return true;
      }
    return false;
  }

  // A type id inside a type record: any id of the table is allowed (forward ones are
  // checked to be named structs once the table is complete).
  uint32_t type_id(uint64_t id) {
    if (id >= declared_) c_.fail("type id " + std::to_string(id) + " outside the table");
    return uint32_t(id);
  }

  Type integer() {
    if (ops_.empty() || ops_[0] < 1 || ops_[0] > (1u << 23)) c_.fail("bad integer type width");
    Type t;
    t.kind = TypeKind::kInteger;
    t.width = uint32_t(ops_[0]);
    return t;
  }

  Type typed_pointer() {
    if (ops_.empty()) c_.fail("empty pointer type record");
    decline(m_, "typed pointers (bitcode older than opaque pointers)");
    Type t;
    t.kind = TypeKind::kPointer;
    if (ops_.size() == 2 && ops_[1] <= 0xFFFFFF) t.address_space = uint32_t(ops_[1]);
    return t;
  }

  // FUNCTION [vararg, retty, params...]; the old form has an attribute id after vararg.
  Type function(size_t first_type) {
    if (ops_.size() < first_type + 1) c_.fail("short function type record");
    Type t;
    t.kind = TypeKind::kFunction;
    t.vararg = ops_[0] != 0;
    // Room for all at once (as many as the record's operands), not regrown at 1, 2, 4...
    t.elements.reserve(ops_.size() - first_type);
    for (size_t i = first_type; i < ops_.size(); ++i) t.elements.push_back(type_id(ops_[i]));
    return t;
  }

  Type sequence(bool vector) {
    if (ops_.size() < 2) c_.fail("short array or vector type record");
    Type t;
    bool scalable = vector && ops_.size() > 2 && ops_[2];
    t.kind = !vector ? TypeKind::kArray : scalable ? TypeKind::kScalableVector : TypeKind::kFixedVector;
    t.count = ops_[0];
    if (vector && (t.count == 0 || t.count > 0xFFFFFFFFu)) c_.fail("bad vector length");
    t.elements.push_back(type_id(ops_[1]));
    return t;
  }

  Type structure() {
    if (ops_.empty()) c_.fail("empty struct type record");
    Type t;
    t.kind = TypeKind::kStruct;
    t.packed = ops_[0] != 0;
    t.elements.reserve(ops_.size() - 1);  // as function()'s
    for (size_t i = 1; i < ops_.size(); ++i) t.elements.push_back(type_id(ops_[i]));
    return t;
  }

  Type named_struct(bool opaque) {
    Type t = opaque ? Type{} : structure();
    t.kind = TypeKind::kStruct;
    t.named = true;
    t.opaque = opaque;
    t.name = std::move(pending_name_);
    pending_name_.clear();
    return t;
  }

  // TARGET_TYPE [numtys, tys..., ints...]: the name and type parameters are kept.
  Type target_type() {
    if (ops_.empty() || ops_[0] >= ops_.size()) c_.fail("bad target extension type record");
    Type t;
    t.kind = TypeKind::kTargetExt;
    for (size_t i = 1; i <= ops_[0]; ++i) t.elements.push_back(type_id(ops_[i]));
    t.name = std::move(pending_name_);
    pending_name_.clear();
    return t;
  }

  // Once the table is whole: forward references only to named structs, element types
  // valid, and no type containing itself by value (LLVM refuses recursive structs);
  // nesting is bounded so that whoever walks the types recursively cannot overflow.
  void validate() {
    const auto& types = m_.types;
    for (uint32_t i = 0; i < types.size(); ++i) {
      const Type& t = types[i];
      for (uint32_t e : t.elements) {
        if (e >= i && !(types[e].kind == TypeKind::kStruct && types[e].named))
          c_.fail("type " + std::to_string(i) + " refers forward to type " + std::to_string(e) +
                  ", which is not a named struct");
        bool aggregate = t.kind == TypeKind::kStruct || t.kind == TypeKind::kArray || is_vector_kind(t.kind);
        if (aggregate && bad_element(types[e].kind)) c_.fail("type " + std::to_string(i) + " holds an invalid element");
        if (t.kind == TypeKind::kFunction && e != t.elements[0] &&
            (types[e].kind == TypeKind::kVoid || types[e].kind == TypeKind::kLabel))
          c_.fail("function type " + std::to_string(i) + " with a void or label parameter");
      }
      if (is_vector_kind(t.kind)) {
        TypeKind k = types[t.elements[0]].kind;
        if (k != TypeKind::kInteger && k != TypeKind::kPointer && !is_float_kind(k))
          c_.fail("vector type " + std::to_string(i) + " of a non-scalar element");
      }
    }
    check_nesting();
  }

  // Depth of each type by value (struct, array and vector elements), by an explicit
  // stack: a cycle is a struct containing itself.
  void check_nesting() {
    constexpr uint32_t kMaxNesting = 256;
    const auto& types = m_.types;
    std::vector<uint32_t> depth(types.size(), 0);  // 0: not done; kNone: on the stack
    std::vector<std::pair<uint32_t, size_t>> stack;
    auto by_value = [&](uint32_t t) { return types[t].kind != TypeKind::kFunction ? types[t].elements.size() : 0; };
    for (uint32_t root = 0; root < types.size(); ++root) {
      if (depth[root]) continue;
      stack.push_back({root, 0});
      depth[root] = kNone;
      while (!stack.empty()) {
        auto& [t, next] = stack.back();
        if (next < by_value(t)) {
          uint32_t e = types[t].elements[next++];
          if (depth[e] == kNone) c_.fail("type " + std::to_string(e) + " contains itself");
          if (!depth[e]) {
            depth[e] = kNone;
            stack.push_back({e, 0});
          }
          continue;
        }
        uint32_t d = 1;
        for (size_t i = 0; i < by_value(t); ++i) d = std::max(d, depth[types[t].elements[i]] + 1);
        depth[t] = d;
        stack.pop_back();
        if (d > kMaxNesting) c_.fail("types nested deeper than " + std::to_string(kMaxNesting));
      }
    }
  }

  BitstreamCursor& c_;
  BcModule& m_;
  std::vector<uint64_t> ops_;
  uint64_t declared_ = 0;
  std::string pending_name_;
};

// ---------------------------------------------------------------- attributes

struct AttrGroup {
  uint32_t index = 0;  // 0xFFFFFFFF function, 0 return, n parameter n - 1
  AttrSet set;
};

class AttributeReader {
 public:
  AttributeReader(BitstreamCursor& c, BcModule& m) : c_(c), m_(m) {}

  // PARAMATTR_GROUP_BLOCK: GRP_CODE_ENTRY [grpid, paramidx, attributes...]
  void read_groups() {
    for_each_record([&](uint32_t code) {
      if (code != 3) return;
      if (ops_.size() < 3) c_.fail("short attribute group record");
      AttrGroup g;
      g.index = uint32_t(ops_[1]);
      if (ops_[1] > 0xFFFFFFFFu) c_.fail("attribute group index over 32 bits");
      parse_group(g.set);
      groups_[ops_[0]] = std::move(g);
    });
  }

  // PARAMATTR_BLOCK: ENTRY [grpid...], one attribute list each.
  void read_lists() {
    for_each_record([&](uint32_t code) {
      if (code == 1) {  // ENTRY_OLD: LLVM 3.2's encoding
        decline(m_, "old-style attribute lists");
        m_.attribute_lists.emplace_back();
        return;
      }
      if (code != 2) return;
      AttrList list;
      for (uint64_t id : ops_) {
        auto it = groups_.find(id);
        if (it == groups_.end()) c_.fail("attribute list names unknown group " + std::to_string(id));
        add(list, it->second);
      }
      m_.attribute_lists.push_back(std::move(list));
    });
  }

 private:
  template <typename F>
  void for_each_record(F&& f) {
    kiln::bc::for_each_record(c_, ops_, "an attribute block", f);
  }

  void add_kind(AttrSet& set, uint64_t kind) {
    if (kind > 255) {
      decline(m_, "attribute kind " + std::to_string(kind));
      return;
    }
    set.add(uint8_t(kind));
  }

  size_t need(size_t i, size_t n) {
    if (i + n > ops_.size()) c_.fail("attribute group record ends inside an attribute");
    return i;
  }

  // A ConstantRange (range attributes): two sign-rotated values up to 64 bits, else a
  // word holding both word counts and the words.
  size_t skip_range(size_t i, uint64_t width) {
    if (width <= 64) return need(i, 2) + 2;
    need(i, 1);
    uint64_t words = (ops_[i] & 0xFFFFFFFFu) + (ops_[i] >> 32);
    if (words > ops_.size() - i - 1) c_.fail("constant range runs past its record");
    return i + 1 + words;
  }

  void parse_group(AttrSet& set) {
    for (size_t i = 2; i < ops_.size();) {
      uint64_t encoding = ops_[i];
      if (encoding == 0 || encoding == 5) {  // enum; type attribute without a type
        add_kind(set, ops_[need(i, 2) + 1]);
        i += 2;
      } else if (encoding == 1 || encoding == 6) {  // int [kind, value]; type attribute [kind, type]
        add_kind(set, ops_[need(i, 3) + 1]);
        i += 3;
      } else if (encoding == 3 || encoding == 4) {  // string [chars, 0, (value chars, 0)]
        const size_t key = i + 1;
        i = skip_string(key);
        // Whatever their value: stamp declines the key (codegen_requests.h).
        for (std::string_view k : kInstrumentedAttributes)
          if (string_is(key, k)) set.add(kAttrKilnInstrumented);
        for (std::string_view k : kPatchableAttributes)
          if (string_is(key, k)) set.add(kAttrKilnPatchable);
        if (encoding == 4) {
          const size_t value = i;
          i = skip_string(value);
          if (string_is(key, "target-features") && target_features_have_avx(string_at(value, i - 1)))
            set.add(kAttrKilnAvx);
          if ((string_is(key, "target-features") || string_is(key, "target-cpu")) &&
              target_may_fuse_multiply_add(string_at(key, value - 1), string_at(value, i - 1)))
            set.add(kAttrKilnMayFuse);
        }
      } else if (encoding == 7) {  // ConstantRange [kind, bitwidth, range]
        add_kind(set, ops_[need(i, 3) + 1]);
        i = skip_range(i + 3, ops_[i + 2]);
      } else if (encoding == 8) {  // ConstantRangeList [kind, count, bitwidth, ranges...]
        add_kind(set, ops_[need(i, 4) + 1]);
        uint64_t count = ops_[i + 2], width = ops_[i + 3];
        i += 4;
        // Each range takes one operand at least, so the loop is bounded by the record.
        for (uint64_t r = 0; r < count; ++r) i = skip_range(i, width);
      } else {
        c_.fail("attribute group entry of unknown encoding " + std::to_string(encoding));
      }
    }
  }

  // Whether the NUL-terminated characters from ops_[at] are `text`.
  bool string_is(size_t at, std::string_view text) const {
    for (size_t k = 0; k < text.size(); ++k)
      if (at + k >= ops_.size() || ops_[at + k] != static_cast<unsigned char>(text[k])) return false;
    return at + text.size() < ops_.size() && ops_[at + text.size()] == 0;
  }
  // The characters ops_[at, end) (each a byte in a record operand).
  std::string string_at(size_t at, size_t end) const {
    std::string s;
    for (size_t k = at; k < end; ++k) s += static_cast<char>(ops_[k]);
    return s;
  }

  size_t skip_string(size_t i) {
    while (i < ops_.size() && ops_[i] != 0) ++i;
    if (i >= ops_.size()) c_.fail("string attribute without its terminating 0");
    return i + 1;
  }

  void add(AttrList& list, const AttrGroup& g) {
    AttrSet* set;
    if (g.index == 0xFFFFFFFFu) {
      set = &list.function;
    } else if (g.index == 0) {
      set = &list.ret;
    } else {
      // A group is defined once and may be named by any number of lists: the slots all
      // lists allocate are bounded, so that a short stream cannot expand into gigabytes.
      if (list.params.size() < g.index) {
        if (g.index > kMaxParamSlots - param_slots_) {
          decline(m_, "attributes on more parameters than the reader keeps");
          return;
        }
        param_slots_ += g.index - list.params.size();
        list.params.resize(g.index);
      }
      set = &list.params[g.index - 1];
    }
    set->add(g.set);
  }

  BitstreamCursor& c_;
  BcModule& m_;
  std::vector<uint64_t> ops_;
  std::unordered_map<uint64_t, AttrGroup> groups_;
  static constexpr uint64_t kMaxParamSlots = 1 << 20;
  uint64_t param_slots_ = 0;
};

// ---------------------------------------------------------------- constants

class ConstantsReader {
 public:
  static constexpr uint32_t kMaxConstantWidth = 1024;

  ConstantsReader(BitstreamCursor& c, BcModule& m, std::vector<ValueRef>& values, uint32_t first_id,
                  detail::BodyBuffers& buffers)
      : c_(c),
        m_(m),
        values_(values),
        first_id_(first_id),
        type_(i32_type(m, buffers.types)),
        ops_(buffers.record),
        bytes_(buffers.record_bytes),
        record_{ops_, bytes_} {}

  void read() {
    for_each_record(c_, record_, "a constants block", [&](uint32_t code) {
      if (code == 1) return set_type();
      if (type_ == kNone) c_.fail("constant before SETTYPE, with no i32 in the type table");
      // Made where it is kept, not moved there: a record that fails throws out of the
      // reader, with the module, so a constant left half made is never seen.
      const uint32_t index = uint32_t(m_.constants.size());
      Constant& k = m_.constants.emplace_back();
      k.type = type_;
      record(code, k);
      if (values_.size() + uint64_t(first_id_) >= kMetadataOperand) c_.fail("too many values");
      values_.push_back({ValueKind::kConstant, type_, index});
    });
    // Operands may refer forward within the block: checked once all are known, and an
    // aggregate's elements must have its element types (what its users will assume).
    uint64_t end = uint64_t(first_id_) + values_.size();
    for (size_t i = first_constant_; i < m_.constants.size(); ++i) {
      const Constant& k = m_.constants[i];
      for (uint32_t op : k.operands)
        if (op >= end) c_.fail("constant operand " + std::to_string(op) + " is no value");
      if (k.kind != ConstKind::kAggregate) continue;
      const Type& t = m_.types[k.type];
      for (size_t e = 0; e < k.operands.size(); ++e)
        if (value_type(k.operands[e]) != t.elements[t.kind == TypeKind::kStruct ? e : 0])
          c_.fail("aggregate constant element " + std::to_string(e) + " of another type than its type's");
    }
  }

 private:
  static uint32_t i32_type(const BcModule& m, detail::TypeLookups& types) {
    detail::look_up_types(m, types);
    return types.i32_type;
  }
  const Type& type() const { return m_.types[type_]; }
  uint32_t value_type(uint32_t id) const { return id < first_id_ ? m_.values[id].type : values_[id - first_id_].type; }
  const Type& scalar() const { return is_vector_kind(type().kind) ? m_.types[type().elements[0]] : type(); }

  // The record's operands: its elements when it was read as bytes.
  size_t operand_count() const { return record_.in_bytes ? bytes_.size() / record_.width : ops_.size(); }
  // Inline, its failure out of line: most constants' records go through it.
  void need(size_t n, const char* what) {
    if (operand_count() < n) [[unlikely]]
      short_record(what);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void short_record(const char* what) const {
    c_.fail(std::string("short ") + what + " constant record");
  }
  uint32_t value_id(uint64_t id) {
    if (id >= kMetadataOperand) c_.fail("constant operand " + std::to_string(id) + " is no value");
    return uint32_t(id);
  }
  uint32_t type_id(uint64_t id) {
    if (id >= m_.types.size()) c_.fail("type id " + std::to_string(id) + " outside the table");
    return uint32_t(id);
  }

  void set_type() {
    if (ops_.empty()) c_.fail("empty SETTYPE record");
    type_ = type_id(ops_[0]);
    if (type().kind == TypeKind::kVoid) c_.fail("constant of void type");
    choose_bytes();
  }

  // The data records of the current type are read as bytes of their element width:
  // DATA of an array or vector of 8-, 16-, 32- or 64-bit elements, STRING and CSTRING of
  // an i8 array. Those of other types come as operands, and are refused as they always
  // were. (SETTYPE's default, i32, has none.)
  void choose_bytes() {
    record_.codes = 0;
    const Type& t = type();
    if (t.kind != TypeKind::kArray && !is_vector_kind(t.kind)) return;
    const Type& e = m_.types[t.elements[0]];
    const unsigned bits = data_bits(e);
    if (bits == 0) return;
    record_.width = bits / 8;
    record_.codes = uint64_t(1) << kDataCode;
    if (t.kind == TypeKind::kArray && e.kind == TypeKind::kInteger && bits == 8)
      record_.codes |= uint64_t(1) << kStringCode | uint64_t(1) << kCStringCode;
  }
  static constexpr unsigned kStringCode = 8, kCStringCode = 9, kDataCode = 22;
  // The width of a DATA record's elements of type `e`; 0 for a type that has none.
  static unsigned data_bits(const Type& e) {
    unsigned bits = e.kind == TypeKind::kInteger                   ? e.width
        : e.kind == TypeKind::kHalf || e.kind == TypeKind::kBFloat ? 16
        : e.kind == TypeKind::kFloat                               ? 32
        : e.kind == TypeKind::kDouble                              ? 64
                                                                   : 0;
    return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? bits : 0;
  }

  void record(uint32_t code, Constant& k) {
    switch (code) {
      case 2:
        null(k);
        break;
      case 3:
        k.kind = ConstKind::kUndef;
        break;
      case 26:
        k.kind = ConstKind::kPoison;
        break;
      case 4:
      case 5:
        integer(code == 5, k);
        break;
      case 6:
        floating(k);
        break;
      case 7:
        aggregate(k);
        break;
      case 8:
      case 9:
        string(code == 9, k);
        break;
      case 22:
        data(k);
        break;
      case 10:
        binary(k);
        break;
      case 11:
        cast(k);
        break;
      case 12:
      case 20:
      case 24:
      case 31:
      case 32:
        gep(code, k);
        break;
      case 18:
      case 23:
      case 28:
      case 30:
        inline_asm(code, k);
        break;
      case 21:
        block_address(k);
        break;
      case 27:
      case 29:
        global_wrapper(code, k);
        break;
      case 33:
      case 34:
        ptrauth(code, k);
        break;
      default:
        other(code, k);
        break;
    }
  }

  void null(Constant& k) {
    TypeKind t = type().kind;
    if (t == TypeKind::kFunction || t == TypeKind::kLabel || t == TypeKind::kMetadata)
      c_.fail("null constant of a type without one");
    k.kind = t == TypeKind::kToken  ? ConstKind::kTokenNone
        : t == TypeKind::kTargetExt ? ConstKind::kTargetNone
                                    : ConstKind::kNull;
  }

  // INTEGER [signed VBR] or WIDE_INTEGER [words...]: the value in ceil(width / 64)
  // words, bits above the width clear, as LLVM's APInt holds it. Those words are more
  // than the record holds, so the width is bounded: a stream of short records of a huge
  // integer type must not expand into gigabytes.
  void integer(bool wide, Constant& k) {
    need(1, "integer");
    if (scalar().kind != TypeKind::kInteger) c_.fail("integer constant of a non-integer type");
    uint32_t width = scalar().width;
    if (width > kMaxConstantWidth) {
      decline(m_, "integer constant wider than " + std::to_string(kMaxConstantWidth) + " bits");
      k.kind = ConstKind::kOther;
      k.opcode = wide ? 5 : 4;
      return;
    }
    k.kind = ConstKind::kInteger;
    size_t words = (width + 63) / 64;
    uint64_t first = decode_sign_rotated(ops_[0]);
    for (size_t i = 0; i < words; ++i) {
      if (wide) k.words.push_back(i < ops_.size() ? decode_sign_rotated(ops_[i]) : 0);
      else k.words.push_back(i == 0 ? first : (int64_t(first) < 0 ? ~uint64_t(0) : 0));
    }
    if (width % 64) k.words.back() &= (uint64_t(1) << (width % 64)) - 1;
  }

  // FLOAT: the bits as LLVM's APFloat holds them (x86_fp80 rearranged as its reader does).
  void floating(Constant& k) {
    need(1, "float");
    k.kind = ConstKind::kFloat;
    switch (scalar().kind) {
      case TypeKind::kHalf:
      case TypeKind::kBFloat:
        k.words = {ops_[0] & 0xFFFF};
        break;
      case TypeKind::kFloat:
        k.words = {ops_[0] & 0xFFFFFFFFu};
        break;
      case TypeKind::kDouble:
        k.words = {ops_[0]};
        break;
      case TypeKind::kX86Fp80:
        need(2, "x86_fp80");
        k.words = {(ops_[1] & 0xFFFF) | (ops_[0] << 16), (ops_[0] >> 48) & 0xFFFF};
        break;
      case TypeKind::kFp128:
      case TypeKind::kPpcFp128:
        need(2, "128-bit float");
        k.words = {ops_[0], ops_[1]};
        break;
      default:
        k.kind = ConstKind::kPoison;
        break;  // as LLVM reads it
    }
  }

  // How many elements an aggregate of the current type has; fails for a non-aggregate.
  uint64_t element_count(const char* what) {
    const Type& t = type();
    if (t.kind == TypeKind::kStruct) return t.elements.size();
    if (t.kind == TypeKind::kArray || is_vector_kind(t.kind)) return t.count;
    c_.fail(std::string(what) + " constant of a non-aggregate type");
  }

  void aggregate(Constant& k) {
    need(1, "aggregate");
    TypeKind t = type().kind;
    if (t != TypeKind::kStruct && t != TypeKind::kArray && !is_vector_kind(t)) {
      k.kind = ConstKind::kPoison;  // as LLVM reads it
      return;
    }
    if (element_count("aggregate") != ops_.size()) c_.fail("aggregate constant of the wrong element count");
    k.kind = ConstKind::kAggregate;
    for (uint64_t op : ops_) k.operands.push_back(value_id(op));
  }

  void string(bool c_string, Constant& k) {
    need(1, "string");
    const Type& t = type();
    if (t.kind != TypeKind::kArray || m_.types[t.elements[0]].kind != TypeKind::kInteger ||
        m_.types[t.elements[0]].width != 8)
      c_.fail("string constant of a type other than an i8 array");
    if (t.count != operand_count() + c_string) c_.fail("string constant of the wrong length");
    k.kind = ConstKind::kData;
    k.string = true;
    take_bytes(k);
    if (c_string) k.bytes.push_back(0);
  }

  // The record's bytes become the constant's. A large array (include_bytes!'s data)
  // takes the record's own buffer rather than a copy beside it, which would hold it
  // twice at once; a small one is copied, so that the buffer keeps its room.
  void take_bytes(Constant& k) {
    // choose_bytes() has every record of a type these accept read as bytes.
    if (!record_.in_bytes) throw KilnError(kExitInternal, "", "data constant not read as bytes");
    k.element_bytes = uint8_t(record_.width);
    if (bytes_.size() < kOwnBytes) {
      k.bytes.assign(bytes_.begin(), bytes_.end());
      return;
    }
    k.bytes.swap(bytes_);
    bytes_.clear();
  }
  static constexpr size_t kOwnBytes = 32768;

  // DATA: elements of an array or vector of i8/i16/i32/i64 or half/bfloat/float/double.
  void data(Constant& k) {
    need(1, "data");
    if (element_count("data") != operand_count()) c_.fail("data constant of the wrong element count");
    if (type().kind == TypeKind::kStruct) c_.fail("data constant of a struct type");
    if (data_bits(m_.types[type().elements[0]]) == 0) c_.fail("data constant of an element type that has none");
    k.kind = ConstKind::kData;
    take_bytes(k);
  }

  // CE_BINOP [opcode, lhs, rhs, (flags)]: opcodes LLVM does not know for the type read
  // as poison, as in LLVM.
  void binary(Constant& k) {
    need(3, "binop");
    bool fp = is_float_kind(scalar().kind);
    uint64_t op = ops_[0];
    bool known = op <= 12 && (fp ? (op <= 2 || op == 4 || op == 6) : scalar().kind == TypeKind::kInteger);
    if (!known) {
      k.kind = ConstKind::kPoison;
      return;
    }
    k.kind = ConstKind::kBinary;
    k.opcode = uint32_t(op);
    k.operands = {value_id(ops_[1]), value_id(ops_[2])};
    if (ops_.size() > 3) k.flags = uint32_t(ops_[3]);
  }

  void cast(Constant& k) {
    need(3, "cast");
    type_id(ops_[1]);
    if (ops_[0] > 13) {
      k.kind = ConstKind::kPoison;  // an unknown cast, as LLVM reads it
      return;
    }
    k.kind = ConstKind::kCast;
    k.opcode = uint32_t(ops_[0]);
    k.operands = {value_id(ops_[2])};
  }

  // The GEP forms: [pointee type, flags, (range), (type, value) pairs...]; the old 12 and
  // 20 have the pointee type only when the count is odd (else typed pointers).
  void gep(uint32_t code, Constant& k) {
    need(2, "getelementptr");
    size_t i = 0;
    bool has_pointee = code == 24 || code == 31 || code == 32 || ops_.size() % 2;
    if (has_pointee) k.source_type = type_id(ops_[i++]);
    if (code == 24) {
      k.flags = uint32_t(ops_[i++] & 1);
    } else if (code == 31 || code == 32) {
      k.flags = uint32_t(ops_[i++]);
      if (code == 31) i = skip_range(i);
    } else if (code == 20) {
      k.flags = 1;  // inbounds
    }
    if ((ops_.size() - i) % 2 || i >= ops_.size()) c_.fail("getelementptr constant without its operand pairs");
    for (; i < ops_.size(); i += 2) {
      type_id(ops_[i]);
      k.operands.push_back(value_id(ops_[i + 1]));
    }
    if (!has_pointee) {
      decline(m_, "getelementptr constant without a source type (typed pointers)");
      k.kind = ConstKind::kOther;
      k.opcode = code;
      return;
    }
    k.kind = ConstKind::kGep;
    k.opcode = code;
  }

  size_t skip_range(size_t i) {
    if (i >= ops_.size()) c_.fail("getelementptr inrange without its range");
    uint64_t width = ops_[i++];
    if (width > 64 && i >= ops_.size()) c_.fail("getelementptr inrange without its range");
    uint64_t words = width <= 64 ? 2 : (ops_[i] & 0xFFFFFFFFu) + (ops_[i] >> 32) + 1;
    if (i > ops_.size() || words > ops_.size() - i) c_.fail("getelementptr inrange runs past its record");
    return i + words;
  }

  // INLINEASM forms: [(fnty,) flags, asm size, asm chars..., constraint size, chars...].
  void inline_asm(uint32_t code, Constant& k) {
    size_t i = 0;
    if (code == 30) {
      need(3, "inline asm");
      if (m_.types[type_id(ops_[i++])].kind != TypeKind::kFunction) c_.fail("inline asm of a non-function type");
    }
    need(i + 2, "inline asm");
    ++i;  // flags
    uint64_t asm_size = ops_[i++];
    if (asm_size >= ops_.size() - i) c_.fail("inline asm string runs past its record");
    k.words.assign(ops_.begin() + static_cast<ptrdiff_t>(i), ops_.begin() + static_cast<ptrdiff_t>(i + asm_size));
    i += asm_size;
    uint64_t constraint_size = ops_[i++];
    if (constraint_size > ops_.size() - i) c_.fail("inline asm constraints run past their record");
    k.words.append(ops_.begin() + static_cast<ptrdiff_t>(i),
                   ops_.begin() + static_cast<ptrdiff_t>(i + constraint_size));
    k.flags = static_cast<uint32_t>(asm_size);
    k.kind = ConstKind::kInlineAsm;
    k.opcode = code;
  }

  // BLOCKADDRESS [fnty, function, block]: the function in operands, the block in words.
  void block_address(Constant& k) {
    need(3, "blockaddress");
    type_id(ops_[0]);
    k.kind = ConstKind::kBlockAddress;
    k.operands = {value_id(ops_[1])};
    k.words = {ops_[2]};
  }

  // DSO_LOCAL_EQUIVALENT and NO_CFI_VALUE: [type, global].
  void global_wrapper(uint32_t code, Constant& k) {
    need(2, code == 27 ? "dso_local_equivalent" : "no_cfi");
    type_id(ops_[0]);
    k.kind = code == 27 ? ConstKind::kDsoLocalEquivalent : ConstKind::kNoCfi;
    k.operands = {value_id(ops_[1])};
  }

  // PTRAUTH [ptr, key, disc, addrdisc], PTRAUTH2 adds the deactivation symbol.
  void ptrauth(uint32_t code, Constant& k) {
    size_t n = code == 33 ? 4 : 5;
    need(n, "ptrauth");
    k.kind = ConstKind::kPtrAuth;
    for (size_t i = 0; i < n; ++i) k.operands.push_back(value_id(ops_[i]));
  }

  // SELECT, EXTRACTELT, INSERTELT, SHUFFLEVEC(_EX), CMP, UNOP and records not known:
  // kOther with the record's code, the value operands kept where the layout is known.
  void other(uint32_t code, Constant& k) {
    k.kind = ConstKind::kOther;
    k.opcode = code;
    switch (code) {
      case 13:  // select [c, a, b]
      case 16:  // shufflevector [a, b, mask]
        need(3, "constant expression");
        for (size_t i = 0; i < 3; ++i) k.operands.push_back(value_id(ops_[i]));
        break;
      case 19:  // shufflevector [type, a, b, mask]
        need(4, "shufflevector");
        type_id(ops_[0]);
        for (size_t i = 1; i < 4; ++i) k.operands.push_back(value_id(ops_[i]));
        break;
      case 14:  // extractelement [type, vector, (index type,) index]
        need(3, "extractelement");
        type_id(ops_[0]);
        if (ops_.size() == 4) type_id(ops_[2]);
        k.operands = {value_id(ops_[1]), value_id(ops_[ops_.size() == 4 ? 3 : 2])};
        break;
      case 15:  // insertelement [vector, element, (index type,) index]
        need(3, "insertelement");
        if (ops_.size() == 4) type_id(ops_[2]);
        k.operands = {value_id(ops_[0]), value_id(ops_[1]), value_id(ops_[ops_.size() == 4 ? 3 : 2])};
        break;
      case 17:  // cmp [type, lhs, rhs, predicate]
        need(4, "cmp");
        type_id(ops_[0]);
        k.operands = {value_id(ops_[1]), value_id(ops_[2])};
        k.flags = uint32_t(ops_[3]);
        break;
      case 25:  // unop [opcode, operand]
        need(2, "unop");
        k.flags = uint32_t(ops_[0]);
        k.operands = {value_id(ops_[1])};
        break;
      default:
        decline(m_, "constant record " + std::to_string(code));
        break;
    }
  }

  BitstreamCursor& c_;
  BcModule& m_;
  std::vector<ValueRef>& values_;
  uint32_t first_id_;
  uint32_t type_;
  size_t first_constant_ = m_.constants.size();
  RecordOps& ops_;
  std::vector<uint8_t>& bytes_;
  OperandBytes record_;  // ops_, or bytes_ for the data records choose_bytes() names
};

}  // namespace

void detail::read_constants_block(BitstreamCursor& cursor, BcModule& m, std::vector<ValueRef>& values,
                                  uint32_t first_id, BodyBuffers& buffers) {
  ConstantsReader(cursor, m, values, first_id, buffers).read();
}

namespace {

// ---------------------------------------------------------------- the module block

Linkage decoded_linkage(uint64_t code) {
  switch (code) {
    case 2:
      return Linkage::kAppending;
    case 3:
      return Linkage::kInternal;
    case 7:
      return Linkage::kExternalWeak;
    case 8:
      return Linkage::kCommon;
    case 9:
    case 13:
    case 14:
      return Linkage::kPrivate;
    case 12:
      return Linkage::kAvailableExternally;
    case 1:
    case 16:
      return Linkage::kWeakAny;
    case 10:
    case 17:
      return Linkage::kWeakOdr;
    case 4:
    case 18:
      return Linkage::kLinkOnceAny;
    case 11:
    case 19:
      return Linkage::kLinkOnceOdr;
    default:
      return Linkage::kExternal;  // 0, the obsolete 5, 6 and 15, and unknown ones, as LLVM reads them
  }
}

// The old linkages that carried an implicit comdat (before COMDAT records existed).
bool implicit_comdat(uint64_t code) { return code == 1 || code == 4 || code == 10 || code == 11; }

// 0 none, 1 unnamed_addr, 2 local_unnamed_addr; unknown ones read as none, as in LLVM.
uint8_t unnamed_addr(uint64_t v) { return v <= 2 ? uint8_t(v) : 0; }

bool is_local(Linkage l) { return l == Linkage::kInternal || l == Linkage::kPrivate; }

// The address space of functions the data layout gives ("P<n>"), for FUNCTION records
// that do not name one.
uint32_t program_address_space(const std::string& layout) {
  size_t start = 0;
  while (start <= layout.size()) {
    size_t end = layout.find('-', start);
    if (end == std::string::npos) end = layout.size();
    if (end - start > 1 && layout[start] == 'P') {
      uint64_t v = 0;
      for (size_t i = start + 1; i < end && v <= 0xFFFFFF; ++i) {
        if (layout[i] < '0' || layout[i] > '9') return 0;
        v = v * 10 + uint64_t(layout[i] - '0');
      }
      return v <= 0xFFFFFF ? uint32_t(v) : 0;
    }
    start = end + 1;
  }
  return 0;
}

class ModuleReader {
 public:
  ModuleReader(BitstreamCursor& c, BcModule& m, std::string_view strtab, const BodyHandler& on_body)
      : c_(c), m_(m), strtab_(strtab), attributes_(c, m), on_body_(on_body) {
    context_.module_version = 0;  // a module without VERSION is version 0, as in LLVM
    context_.buffers = &buffers_;
  }

  void read() {
    for (;;) {
      BitstreamEntry e = c_.advance();
      if (e.kind == BitstreamEntry::kEndBlock) break;
      if (e.kind == BitstreamEntry::kEndOfStream) c_.fail("stream ends inside the module block");
      if (e.kind == BitstreamEntry::kEnterBlock) block(e.id);
      else record(c_.read_record(e.id, ops_));
    }
    finish();
  }

 private:
  void block(uint32_t id) {
    switch (id) {
      case 0:
        walk_block(c_);
        break;  // BLOCKINFO: the cursor takes its abbreviations
      case detail::kParamAttrGroupBlock:
        attributes_.read_groups();
        break;
      case detail::kParamAttrBlock:
        attributes_.read_lists();
        break;
      case detail::kTypeBlock:
        TypeTableReader(c_, m_).read();
        break;
      case detail::kConstantsBlock:
        if (bodies_ > 0) c_.fail("module constants after a function body");
        detail::read_constants_block(c_, m_, m_.values, 0, buffers_);
        break;
      case detail::kSyncScopeNamesBlock:
        sync_scopes();
        break;
      case detail::kFunctionBlock:
        function_body();
        break;
      case detail::kMetadataKindBlock:
      case detail::kMetadataBlock:
        // LLVM writes both before the bodies, which they are read for.
        if (bodies_ > 0) {
          decline(m_, "module metadata after a function body");
          c_.skip_block();
        } else if (id == detail::kMetadataKindBlock) {
          debug_.read_kinds(c_);
        } else {
          debug_.read_module_block(c_);
        }
        break;
      default:
        c_.skip_block();
        break;  // symbol tables, use lists, bundle tags...
    }
  }

  void record(uint32_t code) {
    switch (code) {
      case 1:
        if (ops_.empty()) c_.fail("empty VERSION record");
        context_.module_version = ops_[0];
        if (ops_[0] != 2)
          decline(m_, "module version " + std::to_string(ops_[0]) + " (names outside the string table)");
        break;
      case 2:
        m_.triple = chars(ops_);
        break;
      case 3:
        m_.data_layout = chars(ops_);
        program_address_space_ = program_address_space(m_.data_layout);
        break;
      case 4:
        m_.module_asm = true;
        break;
      case 5:
        m_.sections.push_back(chars(ops_));
        break;
      case 11:
        gc_names_.push_back(chars(ops_));
        break;
      case 12:
        comdat();
        break;
      case 7:
        global_var();
        break;
      case 8:
        function();
        break;
      case 9:
        decline(m_, "old-style alias record");
        indirect(GlobalKind::kAlias, true);
        break;
      case 14:
        indirect(GlobalKind::kAlias, false);
        break;
      case 18:
        indirect(GlobalKind::kIFunc, false);
        break;
      case 16:
        m_.source_filename = chars(ops_);
        break;
      default:
        break;  // VSTOFFSET, HASH, DEPLIB and newer records that change no value
    }
  }

  // The name a v2 record begins with: [strtab offset, size], a range of the module's
  // copy of the string table; the record loses both.
  std::string_view name() {
    if (ops_.size() < 2) c_.fail("record too short for its name");
    uint64_t offset = ops_[0], size = ops_[1];
    if (offset > strtab_.size() || size > strtab_.size() - offset) c_.fail("name outside the string table");
    ops_.drop_front(2);
    return strtab_.substr(offset, size);
  }

  uint32_t type_id(uint64_t id) {
    if (id >= m_.types.size()) c_.fail("type id " + std::to_string(id) + " outside the table");
    return uint32_t(id);
  }

  uint64_t alignment(uint64_t encoded) {
    if (encoded > 33) c_.fail("alignment exponent " + std::to_string(encoded));
    return encoded ? uint64_t(1) << (encoded - 1) : 0;
  }

  std::string_view section(uint64_t index) {
    if (index == 0) return {};
    if (index - 1 >= m_.sections.size()) c_.fail("section index " + std::to_string(index) + " out of range");
    return m_.sections[index - 1];
  }

  uint32_t comdat_index(uint64_t id) {
    if (id == 0) return kNone;
    if (id > m_.comdats.size()) c_.fail("comdat id " + std::to_string(id) + " out of range");
    return uint32_t(id - 1);
  }

  uint32_t attribute_list(uint64_t id) {
    if (id == 0) return kNone;
    if (id > m_.attribute_lists.size()) c_.fail("attribute list " + std::to_string(id) + " out of range");
    return uint32_t(id - 1);
  }

  uint32_t value_plus_one(uint64_t id) {
    if (id == 0) return kNone;
    if (id - 1 >= kMetadataOperand) c_.fail("value id " + std::to_string(id - 1) + " out of range");
    return uint32_t(id - 1);
  }

  // COMDAT [strtab offset, size, selection]; selection is kept as the bitcode's code
  // (COMDAT_SELECTION_KIND_*: 1 any ... 5 samesize).
  void comdat() {
    if (context_.module_version < 2) return;  // declined already
    Comdat c;
    c.name = name();
    if (ops_.empty()) c_.fail("COMDAT record without a selection kind");
    c.selection = ops_[0] >= 1 && ops_[0] <= 5 ? uint32_t(ops_[0]) : 1;  // unknown ones read as any, as in LLVM
    m_.comdats.push_back(std::move(c));
  }

  // The first pointer type of the address space, by a map made once the type table is
  // read (a scan per global would be quadratic in a hostile file).
  uint32_t pointer_type(uint32_t address_space) {
    if (pointer_types_for_ != m_.types.size()) {
      pointer_types_.clear();
      for (uint32_t i = 0; i < m_.types.size(); ++i)
        if (m_.types[i].kind == TypeKind::kPointer) pointer_types_.emplace(m_.types[i].address_space, i);
      pointer_types_for_ = m_.types.size();
    }
    auto it = pointer_types_.find(address_space);
    return it == pointer_types_.end() ? kNone : it->second;
  }

  // A global value's record is decoded into the element it will be, not moved there: a
  // record that fails throws out of the reader, with the module, so a global left half
  // made is never seen. Its index is m_.globals.size() - 1.
  Global& new_global(GlobalKind kind) {
    Global& g = m_.globals.emplace_back();
    g.kind = kind;
    if (context_.module_version >= 2) g.name = name();
    return g;
  }

  // A module value's entry, once its record is decoded into `g` (new_global()): the
  // pointer type of its address space (LLVM enumerates it).
  void add_value(Global& g) {
    // Function values are numbered after the module's: none may come after a body.
    if (bodies_ > 0) c_.fail("a global value after a function body");
    uint32_t type = pointer_type(g.address_space);
    if (type == kNone) decline(m_, "no pointer type for a global's address space");
    if (m_.values.size() >= kMetadataOperand) c_.fail("too many values");
    if (g.visibility != Visibility::kDefault && g.linkage != Linkage::kExternalWeak) g.dso_local = true;
    if (is_local(g.linkage)) g.dso_local = true;
    m_.values.push_back({ValueKind::kGlobal, type, uint32_t(m_.globals.size() - 1)});
  }

  // GLOBALVAR [strtab, type, flags (constant | explicit type << 1 | addrspace << 2),
  // init + 1, linkage, align, section, visibility, tls, unnamed_addr, ext init, dll,
  // comdat, attributes, dso_local, partition...]
  void global_var() {
    Global& g = new_global(GlobalKind::kVariable);
    if (ops_.size() < 6) c_.fail("short GLOBALVAR record");
    g.value_type = type_id(ops_[0]);
    if (bad_element(m_.types[g.value_type].kind)) c_.fail("global variable of a type no value has");
    g.constant = ops_[1] & 1;
    if (!(ops_[1] & 2)) decline(m_, "global variable of a typed pointer type");
    if ((ops_[1] >> 2) > 0xFFFFFF) c_.fail("address space over 24 bits");
    g.address_space = uint32_t(ops_[1] >> 2);
    g.initializer = value_plus_one(ops_[2]);
    g.declaration = g.initializer == kNone;
    g.linkage = decoded_linkage(ops_[3]);
    g.align = alignment(ops_[4]);
    g.section = section(ops_[5]);
    if (ops_.size() > 6 && !is_local(g.linkage)) g.visibility = visibility(ops_[6]);
    if (ops_.size() > 7) g.thread_local_ = ops_[7] != 0;
    if (ops_.size() > 8) g.unnamed_addr = unnamed_addr(ops_[8]);
    if (ops_.size() > 11) g.comdat = comdat_index(ops_[11]);
    else if (implicit_comdat(ops_[3])) decline(m_, "implicit comdat of an old linkage");
    if (ops_.size() > 12) attribute_list(ops_[12]);  // checked; variables' attributes are not kept
    if (ops_.size() > 13) g.dso_local = ops_[13] == 1;
    add_value(g);
  }

  static Visibility visibility(uint64_t v) {
    return v == 1 ? Visibility::kHidden : v == 2 ? Visibility::kProtected : Visibility::kDefault;
  }

  // FUNCTION [strtab, type, cc, isproto, linkage, paramattr, align, section, visibility,
  // gc, unnamed_addr, prologue + 1, dll, comdat, prefix + 1, personality + 1, dso_local,
  // addrspace, partition...]
  void function() {
    Global& g = new_global(GlobalKind::kFunction);
    if (ops_.size() < 8) c_.fail("short FUNCTION record");
    g.value_type = type_id(ops_[0]);
    const Type& fn_type = m_.types[g.value_type];
    if (fn_type.kind == TypeKind::kPointer) {
      decline(m_, "function of a typed pointer type");
    } else if (fn_type.kind != TypeKind::kFunction) {
      c_.fail("function of a non-function type");
    }
    if (ops_[1] > 1023) c_.fail("calling convention " + std::to_string(ops_[1]));
    g.calling_conv = uint32_t(ops_[1]);
    bool proto = ops_[2] != 0;
    g.declaration = proto;
    g.linkage = decoded_linkage(ops_[3]);
    g.attributes = attribute_list(ops_[4]);
    g.align = alignment(ops_[5]);
    g.section = section(ops_[6]);
    if (!is_local(g.linkage)) g.visibility = visibility(ops_[7]);
    if (ops_.size() > 8 && ops_[8]) {
      if (ops_[8] - 1 >= gc_names_.size()) c_.fail("gc name index out of range");
      g.gc = true;
    }
    if (ops_.size() > 9) g.unnamed_addr = unnamed_addr(ops_[9]);
    if (ops_.size() > 10) prefix_or_prologue(g, ops_[10]);
    if (ops_.size() > 12) g.comdat = comdat_index(ops_[12]);
    else if (implicit_comdat(ops_[3])) decline(m_, "implicit comdat of an old linkage");
    if (ops_.size() > 13) prefix_or_prologue(g, ops_[13]);
    if (ops_.size() > 14) g.personality = value_plus_one(ops_[14]);
    if (ops_.size() > 15) g.dso_local = ops_[15] == 1;
    g.address_space = program_address_space_;
    if (ops_.size() > 16) {
      if (ops_[16] > 0xFFFFFF) c_.fail("address space over 24 bits");
      g.address_space = uint32_t(ops_[16]);
    }
    if (!proto) {
      BcFunction f;
      f.global = uint32_t(m_.globals.size() - 1);
      f.arg_count = fn_type.kind == TypeKind::kFunction ? uint32_t(fn_type.elements.size() - 1) : 0;
      g.body = uint32_t(m_.functions.size());
      m_.functions.push_back(std::move(f));
    }
    add_value(g);
  }

  // Prefix and prologue data are flagged, not kept; their value ids are checked at the end.
  void prefix_or_prologue(Global& g, uint64_t id_plus_one) {
    uint32_t id = value_plus_one(id_plus_one);
    if (id == kNone) return;
    g.prefix_or_prologue = true;
    data_values_.push_back(id);
  }

  // ALIAS and IFUNC [strtab, value type, addrspace, target, linkage, visibility, (alias:
  // dll, tls, unnamed_addr), dso_local, partition...]; ALIAS_OLD has no address space.
  void indirect(GlobalKind kind, bool old) {
    Global& g = new_global(kind);
    size_t i = 0;
    if (ops_.size() < (old ? 3u : 4u)) c_.fail("short alias or ifunc record");
    g.value_type = type_id(ops_[i++]);
    if (!old) {
      if (ops_[i] > 0xFFFFFF) c_.fail("address space over 24 bits");
      g.address_space = uint32_t(ops_[i++]);
    }
    if (ops_[i] >= kMetadataOperand) c_.fail("alias target out of range");
    g.initializer = uint32_t(ops_[i++]);
    g.linkage = decoded_linkage(ops_[i++]);
    if (i < ops_.size()) {
      uint64_t v = ops_[i++];
      if (!is_local(g.linkage)) g.visibility = visibility(v);
    }
    if (kind == GlobalKind::kAlias) {
      if (i < ops_.size()) ++i;  // dll storage
      if (i < ops_.size()) g.thread_local_ = ops_[i++] != 0;
      if (i < ops_.size()) g.unnamed_addr = unnamed_addr(ops_[i++]);
    }
    if (i < ops_.size()) g.dso_local = ops_[i++] == 1;
    add_value(g);
  }

  void sync_scopes() {
    for_each_record(c_, ops_, "the sync scope names", [&](uint32_t code) {
      if (code == 1) context_.sync_scope_names.push_back(chars(ops_));
    });
  }

  // The n-th FUNCTION_BLOCK is the body of the n-th function with a body. Module
  // values are all known by the first (module constants come before the bodies).
  void function_body() {
    if (bodies_ == 0) module_values_known();
    if (bodies_ >= m_.functions.size()) c_.fail("more function bodies than function definitions");
    detail::read_function_block(c_, m_, bodies_, context_);
    if (on_body_) on_body_(m_, bodies_);
    ++bodies_;
  }

  // Module values and metadata come before the bodies: what they say is settled at the
  // first body, or at the end of a module without one.
  void module_values_known() {
    m_.module_value_count = uint32_t(m_.values.size());
    for (BcFunction& f : m_.functions) f.first_arg_value = m_.module_value_count;
    debug_.finish_module(c_);
    context_.debug = debug_.present() ? &debug_ : nullptr;
  }

  // Values the module's records name, checked once every module value is known.
  void finish() {
    if (context_.module_version == 0) decline(m_, "module version 0 (names outside the string table)");
    if (bodies_ == 0) module_values_known();
    for (const Global& g : m_.globals) {
      if (g.initializer != kNone && g.initializer >= m_.module_value_count)
        c_.fail("initializer or target of @" + std::string(g.name) + " is no module value");
      if (g.kind == GlobalKind::kVariable && g.initializer != kNone && m_.values[g.initializer].type != g.value_type)
        c_.fail("initializer of @" + std::string(g.name) + " is of another type");
      if (g.personality != kNone && g.personality >= m_.module_value_count)
        c_.fail("personality of @" + std::string(g.name) + " is no module value");
    }
    for (uint32_t id : data_values_)
      if (id >= m_.module_value_count) c_.fail("prefix or prologue data " + std::to_string(id) + " is no module value");
    if (bodies_ < m_.functions.size() && m_.declined.empty()) decline(m_, "function definitions without bodies");
  }

  BitstreamCursor& c_;
  BcModule& m_;
  std::string_view strtab_;
  AttributeReader attributes_;
  const BodyHandler& on_body_;  // called after each body (see read_bitcode)
  detail::DebugMetadata debug_{m_};
  detail::BodyBuffers buffers_;
  detail::ReaderContext context_;
  RecordOps ops_;  // filled in place: its GLOBALVAR and FUNCTION records are long
  std::vector<std::string> gc_names_;
  std::vector<uint32_t> data_values_;                     // prefix and prologue data
  std::unordered_map<uint32_t, uint32_t> pointer_types_;  // address space -> type id
  size_t pointer_types_for_ = ~size_t(0);                 // the table size it was made for
  uint32_t bodies_ = 0;
  uint32_t program_address_space_ = 0;  // the data layout's, found when it is read (that of none is 0)
};

// IDENTIFICATION: the producer string, and the epoch, which must be LLVM's current 0.
void read_identification(BitstreamCursor& c) {
  std::vector<uint64_t> ops;
  for (;;) {
    BitstreamEntry e = c.advance();
    if (e.kind == BitstreamEntry::kEndBlock) return;
    if (e.kind == BitstreamEntry::kEndOfStream) c.fail("stream ends inside the identification block");
    if (e.kind == BitstreamEntry::kEnterBlock) {
      c.skip_block();
      continue;
    }
    if (c.read_record(e.id, ops) == 2 && (ops.empty() || ops[0] != 0))
      c.fail("newer bitcode epoch " + (ops.empty() ? std::string("(none)") : std::to_string(ops[0])));
  }
}

// The STRTAB blob that follows the module (names are ranges of it): a first pass over
// the top level, every block but STRTAB skipped. A second module is refused, as LLVM's
// parseBitcodeFile refuses it.
std::string_view find_strtab(std::string_view file, const std::string& path) {
  BitstreamCursor c(file, path);
  bool module_seen = false, strtab_seen = false;
  std::string_view strtab;
  std::vector<uint64_t> ops;
  for (;;) {
    BitstreamEntry e = c.advance();
    if (e.kind == BitstreamEntry::kEndOfStream) return strtab;
    if (e.kind != BitstreamEntry::kEnterBlock) continue;
    if (e.id == detail::kModuleBlock && module_seen) c.fail("a second module (LLVM's reader takes files of one)");
    if (e.id == detail::kModuleBlock) module_seen = true;
    if (e.id != detail::kStrtabBlock || !module_seen || strtab_seen) {
      c.skip_block();
      continue;
    }
    strtab_seen = true;
    for (BitstreamEntry r = c.advance(); r.kind != BitstreamEntry::kEndBlock; r = c.advance()) {
      if (r.kind == BitstreamEntry::kEnterBlock) c.skip_block();
      if (r.kind == BitstreamEntry::kEndOfStream) c.fail("stream ends inside the string table");
      std::string_view blob;
      if (r.kind == BitstreamEntry::kRecord && c.read_record(r.id, ops, &blob) == 1) strtab = blob;
    }
  }
}

}  // namespace

BcModule read_bitcode(std::string_view file, const std::string& path, const BodyHandler& on_body) {
  unwrap_bitcode(file, path);  // a foreign file fails here, naming what it is not
  std::string_view strtab = find_strtab(file, path);
  BitstreamCursor c(file, path);
  BcModule m;
  if (!strtab.empty()) {
    m.strtab = std::make_unique_for_overwrite<char[]>(strtab.size());
    std::memcpy(m.strtab.get(), strtab.data(), strtab.size());
    strtab = {m.strtab.get(), strtab.size()};
  }
  for (;;) {
    BitstreamEntry e = c.advance();
    if (e.kind == BitstreamEntry::kEndOfStream) c.fail("no module block");
    if (e.kind != BitstreamEntry::kEnterBlock) continue;
    if (e.id == detail::kIdentificationBlock) {
      read_identification(c);
    } else if (e.id == detail::kModuleBlock) {
      ModuleReader(c, m, strtab, on_body).read();
      return m;  // a file of several modules: the first, as LLVM's parseBitcodeFile takes
    } else {
      c.skip_block();
    }
  }
}

}  // namespace kiln::bc
