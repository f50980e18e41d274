// LLVM 22's DataLayout, TypePrinting and intrinsic lookup rules over a BcModule's
// types, without LLVM (tests/unit/test_bitcode_layout_llvm.cpp compares each with
// LLVM's own answers).
#include "bitcode_layout.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "error.h"

namespace kiln::bc {

namespace {

// Deeper than any real type: a type table with a cycle (only a corrupt one has
// such) ends here rather than in a stack overflow.
constexpr int kMaxDepth = 1000;

[[noreturn]] void bad_layout(const std::string& why) { throw KilnError(kExitBadInput, "", "data layout: " + why); }

[[noreturn]] void unsized(const std::string& why) { throw KilnError(kExitInternal, "", "layout: " + why); }

const Type& type_at(const BcModule& m, uint32_t type, int depth) {
  if (type >= m.types.size()) unsized("type id " + std::to_string(type) + " out of range");
  if (depth > kMaxDepth) throw KilnError(kExitBadInput, "", "layout: types nested too deep (a cycle?)");
  return m.types[type];
}

// StringRef::split(..., ':') keeping empty pieces, as LLVM splits specifications.
std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (size_t start = 0;;) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      pieces.push_back(text.substr(start));
      return pieces;
    }
    pieces.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

// StringRef::getAsInteger(10, unsigned): all decimal digits, fitting 32 bits.
bool to_unsigned(std::string_view text, uint32_t& value) {
  if (text.empty()) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
    if (v > 0xFFFFFFFFu) return false;
  }
  value = static_cast<uint32_t>(v);
  return true;
}

uint32_t parse_address_space(std::string_view text) {
  uint32_t value = 0;
  if (text.empty()) bad_layout("address space component cannot be empty");
  if (!to_unsigned(text, value) || value >= (1u << 24)) bad_layout("address space must be a 24-bit integer");
  return value;
}

uint32_t parse_size(std::string_view text, const std::string& name = "size") {
  uint32_t value = 0;
  if (text.empty()) bad_layout(name + " component cannot be empty");
  if (!to_unsigned(text, value) || value == 0 || value >= (1u << 24))
    bad_layout(name + " must be a non-zero 24-bit integer");
  return value;
}

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Bits to bytes; 0 gives 1 where allowed (the a spec's "a:0:64").
uint64_t parse_alignment(std::string_view text, const std::string& name, bool allow_zero = false) {
  uint32_t value = 0;
  if (text.empty()) bad_layout(name + " alignment component cannot be empty");
  if (!to_unsigned(text, value) || value > 0xFFFF) bad_layout(name + " alignment must be a 16-bit integer");
  if (value == 0) {
    if (!allow_zero) bad_layout(name + " alignment must be non-zero");
    return 1;
  }
  if (value % 8 || !is_power_of_two(value / 8))
    bad_layout(name + " alignment must be a power of two times the byte width");
  return value / 8;
}

// The ABI and preferred alignments of "<abi>[:<pref>]" at pieces[first].
std::pair<uint64_t, uint64_t> parse_abi_pref(const std::vector<std::string_view>& pieces, size_t first,
                                             bool allow_zero_abi) {
  uint64_t abi = parse_alignment(pieces[first], "ABI", allow_zero_abi);
  uint64_t pref = pieces.size() > first + 1 ? parse_alignment(pieces[first + 1], "preferred") : abi;
  if (pref < abi) bad_layout("preferred alignment cannot be less than the ABI alignment");
  return {abi, pref};
}

template <typename Spec>
void set_primitive(std::vector<Spec>& specs, const Spec& spec) {
  auto it = std::lower_bound(specs.begin(), specs.end(), spec.bits,
                             [](const Spec& s, uint32_t bits) { return s.bits < bits; });
  if (it != specs.end() && it->bits == spec.bits) *it = spec;
  else specs.insert(it, spec);
}

uint64_t align_to(uint64_t value, uint64_t align) { return (value + align - 1) / align * align; }

uint64_t power_of_two_ceil(uint64_t v) {
  uint64_t p = 1;
  while (p < v && p != 0) p <<= 1;
  return p;
}

uint64_t checked_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw KilnError(kExitBadInput, "", "layout: a type's size overflows 64 bits");
  return r;
}

uint64_t checked_add(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw KilnError(kExitBadInput, "", "layout: a type's size overflows 64 bits");
  return r;
}

}  // namespace

// --- Parsing (DataLayout::parseLayoutString and its helpers).

Layout::Layout(std::string_view text) {
  // LLVM 22's defaults: i8 1; i16 2; i32 4; i64 4 (pref 8); f16 2, f32 4, f64 8, f128 16;
  // v64 8, v128 16; p0 64-bit, 8-aligned. No i1: it takes i8's, so "i8:8:32" gives i1
  // a preferred alignment of 4 too.
  ints_ = {{8, 1, 1}, {16, 2, 2}, {32, 4, 4}, {64, 4, 8}};
  floats_ = {{16, 2, 2}, {32, 4, 4}, {64, 8, 8}, {128, 16, 16}};
  vectors_ = {{64, 8, 8}, {128, 16, 16}};
  pointers_ = {Pointer{}};
  if (text.empty()) return;
  std::vector<std::string> names;  // address space names, unique
  for (std::string_view spec : split(text, '-')) {
    if (spec.empty()) bad_layout("empty specification is not allowed");
    parse_spec(spec, names);
  }
  // "ni" only marks address spaces non-integral, which changes no size.
}

const std::string& Layout::x86_64_text() {
  static const std::string text = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128";
  return text;
}

void Layout::parse_spec(std::string_view spec, std::vector<std::string>& names) {
  if (spec.substr(0, 2) == "ni") {
    if (spec.size() < 3 || spec[2] != ':') bad_layout("malformed specification, must be of the form \"ni:...\"");
    for (std::string_view as : split(spec.substr(3), ':'))
      if (parse_address_space(as) == 0) bad_layout("address space 0 cannot be non-integral");
    return;
  }
  char kind = spec[0];
  std::string_view rest = spec.substr(1);
  if (kind == 'i' || kind == 'f' || kind == 'v') {
    auto pieces = split(rest, ':');
    if (pieces.size() < 2 || pieces.size() > 3) bad_layout("malformed specification: " + std::string(spec));
    Primitive p;
    p.bits = parse_size(pieces[0]);
    std::tie(p.abi, p.pref) = parse_abi_pref(pieces, 1, false);
    if (kind == 'i' && p.bits == 8 && p.abi != 1) bad_layout("i8 must be 8-bit aligned");
    set_primitive(kind == 'i' ? ints_ : kind == 'f' ? floats_ : vectors_, p);
    return;
  }
  if (kind == 'a') {
    auto pieces = split(rest, ':');
    if (pieces.size() < 2 || pieces.size() > 3) bad_layout("malformed specification: " + std::string(spec));
    uint32_t bits = 0;
    if (!pieces[0].empty() && (!to_unsigned(pieces[0], bits) || bits != 0)) bad_layout("size must be zero");
    std::tie(struct_abi_, struct_pref_) = parse_abi_pref(pieces, 1, true);
    return;
  }
  if (kind == 'p') return parse_pointer(rest, names);
  switch (kind) {
    case 's':  // deprecated, ignored as LLVM ignores it
      return;
    case 'e':
    case 'E':
      // Byte order changes no size or alignment.
      if (!rest.empty()) bad_layout("malformed specification, must be just 'e' or 'E'");
      return;
    case 'n':
      for (std::string_view width : split(rest, ':')) parse_size(width);
      return;
    case 'S':
      if (rest.empty()) bad_layout("malformed specification, must be of the form \"S<size>\"");
      parse_alignment(rest, "stack natural");
      return;
    case 'F':
      if (rest.empty()) bad_layout("malformed specification, must be of the form \"F<type><abi>\"");
      if (rest[0] != 'i' && rest[0] != 'n') bad_layout("unknown function pointer alignment type");
      parse_alignment(rest.substr(1), "ABI");
      return;
    case 'P':
    case 'A':
    case 'G':
      if (rest.empty())
        bad_layout(std::string("malformed specification, must be of the form \"") + kind + "<address space>\"");
      parse_address_space(rest);
      return;
    case 'm':
      if (rest.size() < 2 || rest[0] != ':')
        bad_layout("malformed specification, must be of the form \"m:<mangling>\"");
      if (rest.size() != 2 || std::string_view("elomwxa").find(rest[1]) == std::string_view::npos)
        bad_layout("unknown mangling mode");
      return;
    default:
      bad_layout(std::string("unknown specifier '") + kind + "'");
  }
}

// p[flags][<n>][(<name>)]:<size>:<abi>[:<pref>[:<idx>]]; flags 'e' (external state)
// and 'u' (unstable representation), as LLVM 22 takes them.
void Layout::parse_pointer(std::string_view spec, std::vector<std::string>& names) {
  auto pieces = split(spec, ':');
  if (pieces.size() < 3 || pieces.size() > 5) bad_layout("malformed specification, must be of the form \"p[<n>]:...\"");
  std::string_view head = pieces[0];
  bool flagged = false;
  while (!head.empty() && (head[0] == 'e' || head[0] == 'u')) head.remove_prefix(1), flagged = true;
  if (!head.empty() && ((head[0] >= 'a' && head[0] <= 'z') || (head[0] >= 'A' && head[0] <= 'Z')))
    bad_layout(std::string("'") + head[0] + "' is not a valid pointer specification flag");
  Pointer p;
  size_t digits = 0;
  while (digits < head.size() && head[digits] >= '0' && head[digits] <= '9') ++digits;
  if (digits) p.address_space = parse_address_space(head.substr(0, digits));
  head.remove_prefix(digits);
  if (!head.empty()) {
    if (head[0] != '(') bad_layout("address space must be a 24-bit integer");
    if (head.back() != ')' || head.size() == 2) bad_layout("Expected `( address space name )`");
    std::string name(head.substr(1, head.size() - 2));
    if (name == "P" || name == "G" || name == "A") bad_layout("Cannot use predefined address space names P/G/A");
    if (std::find(names.begin(), names.end(), name) != names.end()) bad_layout("address space name already used");
    names.push_back(name);
  }
  if (p.address_space == 0 && flagged) bad_layout("address space 0 cannot be unstable or have external state");
  p.bits = parse_size(pieces[1], "pointer size");
  std::tie(p.abi, p.pref) = parse_abi_pref(pieces, 2, false);
  p.index_bits = pieces.size() > 4 ? parse_size(pieces[4], "index size") : p.bits;
  if (p.index_bits > p.bits) bad_layout("index size cannot be larger than the pointer size");
  auto it = std::lower_bound(pointers_.begin(), pointers_.end(), p.address_space,
                             [](const Pointer& s, uint32_t as) { return s.address_space < as; });
  if (it != pointers_.end() && it->address_space == p.address_space) *it = p;
  else pointers_.insert(it, p);
}

// --- Queries (DataLayout's getters and StructLayout).

const Layout::Pointer& Layout::pointer(uint32_t address_space) const {
  for (const Pointer& p : pointers_)
    if (p.address_space == address_space) return p;
  return pointers_[0];
}

// LLVM: the exact width's spec, else the next larger one, else the largest.
uint64_t Layout::integer_align(uint32_t bits, bool abi) const {
  auto it =
      std::lower_bound(ints_.begin(), ints_.end(), bits, [](const Primitive& s, uint32_t b) { return s.bits < b; });
  if (it == ints_.end()) --it;
  return abi ? it->abi : it->pref;
}

// Per type id, once per Layout (one per module): the exporter asks sizes and alignments
// of the same few types for nearly every instruction and constant. The tables follow
// the type table's growth (a test's converter adds types as it goes).
namespace {
template <typename F>
uint64_t cached(std::vector<uint64_t>& table, const BcModule& m, uint32_t type, F&& compute) {
  constexpr uint64_t kUnknown = ~uint64_t(0);
  if (type >= m.types.size()) return compute();  // type_at refuses it
  if (table.size() != m.types.size()) table.assign(m.types.size(), kUnknown);
  if (table[type] == kUnknown) {
    uint64_t value = compute();  // recurses into the table: index it again after
    table[type] = value;
  }
  return table[type];
}
}  // namespace

uint64_t Layout::size_bits(const BcModule& m, uint32_t type, int depth) const {
  return cached(size_bits_, m, type, [&] { return compute_size_bits(m, type, depth); });
}

uint64_t Layout::compute_size_bits(const BcModule& m, uint32_t type, int depth) const {
  const Type& t = type_at(m, type, depth);
  switch (t.kind) {
    case TypeKind::kInteger:
      return t.width;
    case TypeKind::kPointer:
      return pointer(t.address_space).bits;
    case TypeKind::kHalf:
    case TypeKind::kBFloat:
      return 16;
    case TypeKind::kFloat:
      return 32;
    case TypeKind::kDouble:
      return 64;
    case TypeKind::kX86Fp80:
      return 80;  // stored in 10 bytes, allocated per the f80 spec
    case TypeKind::kFp128:
    case TypeKind::kPpcFp128:
      return 128;
    case TypeKind::kX86Amx:
      return 8192;
    case TypeKind::kArray:
      if (t.elements.empty()) unsized("array without an element type");
      return checked_mul(t.count, checked_mul(alloc_bytes(m, t.elements[0], depth + 1), 8));
    case TypeKind::kFixedVector:  // bits, not bytes: <4 x i1> is 4 bits
      if (t.elements.empty()) unsized("vector without an element type");
      return checked_mul(t.count, size_bits(m, t.elements[0], depth + 1));
    case TypeKind::kStruct:
      return checked_mul(struct_layout(m, type, depth).size, 8);
    default:
      unsized("type " + std::to_string(type) + " (" + type_name(m, type) + ") has no size");
  }
}

uint64_t Layout::alloc_bytes(const BcModule& m, uint32_t type, int depth) const {
  uint64_t store = (size_bits(m, type, depth) + 7) / 8;
  return align_to(store, alignment(m, type, true, depth));
}

uint64_t Layout::alignment(const BcModule& m, uint32_t type, bool abi, int depth) const {
  return cached(abi ? abi_aligns_ : pref_aligns_, m, type, [&] { return compute_alignment(m, type, abi, depth); });
}

uint64_t Layout::compute_alignment(const BcModule& m, uint32_t type, bool abi, int depth) const {
  const Type& t = type_at(m, type, depth);
  switch (t.kind) {
    case TypeKind::kInteger:
      return integer_align(t.width, abi);
    case TypeKind::kPointer:
      return abi ? pointer(t.address_space).abi : pointer(t.address_space).pref;
    case TypeKind::kArray:
      if (t.elements.empty()) unsized("array without an element type");
      return alignment(m, t.elements[0], abi, depth + 1);
    case TypeKind::kStruct: {
      if (t.packed && abi) return 1;
      uint64_t own = struct_layout(m, type, depth).align;
      return std::max(abi ? struct_abi_ : struct_pref_, own);
    }
    case TypeKind::kHalf:
    case TypeKind::kBFloat:
    case TypeKind::kFloat:
    case TypeKind::kDouble:
    case TypeKind::kX86Fp80:
    case TypeKind::kFp128:
    case TypeKind::kPpcFp128:
    case TypeKind::kFixedVector: {
      uint64_t bits = size_bits(m, type, depth);
      const auto& specs = t.kind == TypeKind::kFixedVector ? vectors_ : floats_;
      for (const Primitive& s : specs)
        if (s.bits == bits) return abi ? s.abi : s.pref;
      // No spec of that width: floats take bits / 8 and vectors their store size, each
      // rounded up to a power of two (x86_fp80 without f80: 16).
      return power_of_two_ceil(t.kind == TypeKind::kFixedVector ? (bits + 7) / 8 : bits / 8);
    }
    case TypeKind::kX86Amx:
      return 64;
    default:
      unsized("type " + std::to_string(type) + " (" + type_name(m, type) + ") has no alignment");
  }
}

const Layout::StructLayout& Layout::struct_layout(const BcModule& m, uint32_t type, int depth) const {
  if (auto it = structs_.find(type); it != structs_.end()) return it->second;
  const Type& t = type_at(m, type, depth);
  if (t.kind != TypeKind::kStruct) unsized("type " + std::to_string(type) + " is not a struct");
  if (t.opaque) unsized("opaque struct " + type_name(m, type) + " has no layout");
  StructLayout layout;
  for (uint32_t field : t.elements) {
    uint64_t align = t.packed ? 1 : alignment(m, field, true, depth + 1);
    layout.size = align_to(layout.size, align);
    layout.align = std::max(layout.align, align);
    layout.offsets.push_back(layout.size);
    layout.size = checked_add(layout.size, alloc_bytes(m, field, depth + 1));
  }
  layout.size = align_to(layout.size, layout.align);
  return structs_.emplace(type, std::move(layout)).first->second;
}

uint64_t Layout::size_in_bits(const BcModule& m, uint32_t type) const { return size_bits(m, type, 0); }
uint64_t Layout::store_size(const BcModule& m, uint32_t type) const { return (size_bits(m, type, 0) + 7) / 8; }
uint64_t Layout::alloc_size(const BcModule& m, uint32_t type) const {
  if (type < m.types.size()) {
    if (alloc_sizes_.size() != m.types.size()) alloc_sizes_.assign(m.types.size(), 0);
    uint64_t& known = alloc_sizes_[type];
    if (!known) known = alloc_bytes(m, type, 0);
    return known;
  }
  return alloc_bytes(m, type, 0);
}
uint64_t Layout::abi_align(const BcModule& m, uint32_t type) const { return alignment(m, type, true, 0); }
uint64_t Layout::pref_align(const BcModule& m, uint32_t type) const { return alignment(m, type, false, 0); }

uint64_t Layout::field_offset(const BcModule& m, uint32_t type, uint32_t index) const {
  const StructLayout& layout = struct_layout(m, type, 0);
  if (index >= layout.offsets.size()) unsized("field " + std::to_string(index) + " of a struct with fewer");
  return layout.offsets[index];
}

// DataLayout::getPreferredAlign(const GlobalVariable*): an explicit alignment in a
// section is taken as it is (no padding in a section kiln does not own); otherwise the
// type's preferred alignment, an explicit one winning when at least as large, else
// the larger of it and the ABI alignment; a defined global over 128 bits without an
// explicit alignment gets at least 16.
uint64_t Layout::global_preferred_align(const BcModule& m, const Global& g) const {
  return global_preferred_align(m, g.value_type, g.align, !g.section.empty(), !g.declaration);
}

uint64_t Layout::global_preferred_align(const BcModule& m, uint32_t value_type, uint64_t given, bool has_section,
                                        bool has_initializer) const {
  if (given && has_section) return given;
  uint64_t align = pref_align(m, value_type);
  if (given) align = given >= align ? given : std::max(given, abi_align(m, value_type));
  if (has_initializer && !given && align < 16 && size_in_bits(m, value_type) > 128) align = 16;
  return align;
}

// --- Type names (AsmWriter's TypePrinting and Type::print).

namespace {

// printEscapedString: '\\' doubled, other unprintables and '"' as \XX (upper hex).
void append_escaped(std::string& out, std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c <= 0x7E && c != '"') {
      out += static_cast<char>(c);
    } else {
      out += '\\';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
}

bool plain_name_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

// PrintLLVMName with the local prefix: quoted when it starts with a digit or holds a
// character outside [-a-zA-Z0-9._].
void append_local_name(std::string& out, std::string_view name) {
  out += '%';
  bool quote = name.empty() || (name[0] >= '0' && name[0] <= '9') ||
      !std::all_of(name.begin(), name.end(), [](char c) { return plain_name_char(c); });
  if (!quote) {
    out += name;
    return;
  }
  out += '"';
  append_escaped(out, name);
  out += '"';
}

void append_type(std::string& out, const BcModule& m, uint32_t type, int depth);

void append_list(std::string& out, const BcModule& m, const std::vector<uint32_t>& types, size_t first, int depth) {
  for (size_t i = first; i < types.size(); ++i) {
    if (i > first) out += ", ";
    append_type(out, m, types[i], depth + 1);
  }
}

void append_struct_body(std::string& out, const BcModule& m, const Type& t, int depth) {
  if (t.opaque) {
    out += "opaque";
    return;
  }
  if (t.packed) out += '<';
  if (t.elements.empty()) {
    out += "{}";
  } else {
    out += "{ ";
    append_list(out, m, t.elements, 0, depth);
    out += " }";
  }
  if (t.packed) out += '>';
}

const char* simple_name(TypeKind kind) {
  switch (kind) {
    case TypeKind::kVoid:
      return "void";
    case TypeKind::kHalf:
      return "half";
    case TypeKind::kBFloat:
      return "bfloat";
    case TypeKind::kFloat:
      return "float";
    case TypeKind::kDouble:
      return "double";
    case TypeKind::kX86Fp80:
      return "x86_fp80";
    case TypeKind::kFp128:
      return "fp128";
    case TypeKind::kPpcFp128:
      return "ppc_fp128";
    case TypeKind::kLabel:
      return "label";
    case TypeKind::kMetadata:
      return "metadata";
    case TypeKind::kX86Amx:
      return "x86_amx";
    case TypeKind::kToken:
      return "token";
    default:
      return nullptr;
  }
}

void append_type(std::string& out, const BcModule& m, uint32_t type, int depth) {
  const Type& t = type_at(m, type, depth);
  if (const char* name = simple_name(t.kind)) {
    out += name;
    return;
  }
  switch (t.kind) {
    case TypeKind::kInteger:
      out += 'i' + std::to_string(t.width);
      return;
    case TypeKind::kPointer:
      out += "ptr";
      if (t.address_space) out += " addrspace(" + std::to_string(t.address_space) + ")";
      return;
    case TypeKind::kFunction:
      if (t.elements.empty()) unsized("function type without a return type");
      append_type(out, m, t.elements[0], depth + 1);
      out += " (";
      append_list(out, m, t.elements, 1, depth);
      if (t.vararg) out += t.elements.size() > 1 ? ", ..." : "...";
      out += ')';
      return;
    case TypeKind::kStruct:
      if (!t.named) return append_struct_body(out, m, t, depth);
      // An identified struct without a name: LLVM prints its slot number in a module
      // or %"type 0x<address>" outside one; neither is knowable here.
      if (t.name.empty()) out += "%<unnamed>";
      else append_local_name(out, t.name);
      return;
    case TypeKind::kArray:
    case TypeKind::kFixedVector:
    case TypeKind::kScalableVector: {
      bool array = t.kind == TypeKind::kArray;
      out += array ? "[" : t.kind == TypeKind::kScalableVector ? "<vscale x " : "<";
      out += std::to_string(t.count) + " x ";
      if (t.elements.empty()) unsized("sequence type without an element type");
      append_type(out, m, t.elements[0], depth + 1);
      out += array ? ']' : '>';
      return;
    }
    case TypeKind::kTargetExt:  // the reader keeps no type or integer parameters
      out += "target(\"";
      append_escaped(out, t.name);
      out += "\")";
      return;
    default:
      unsized("unknown type kind");
  }
}

}  // namespace

std::string type_name(const BcModule& m, uint32_t type) {
  std::string out;
  append_type(out, m, type, 0);
  // Type::print follows an identified struct with its body.
  const Type& t = m.types[type];
  if (t.kind == TypeKind::kStruct && t.named) {
    out += " = type ";
    append_struct_body(out, m, t, 0);
  }
  return out;
}

// --- Intrinsics (Intrinsic::lookupIntrinsicID).

namespace {

struct KnownIntrinsic {
  const char* name;
  Intrinsic id;
  bool overloaded;  // takes type suffixes ("llvm.memcpy.p0.p0.i64")
};

// Ours, plus every LLVM 22 intrinsic whose name starts with one of ours (those must
// not be taken for ours: "llvm.memcpy.inline.p0.p0.i64" is not llvm.memcpy), sorted
// as LLVM's name table is.
constexpr KnownIntrinsic kKnown[] = {
    {"llvm.abs", Intrinsic::kAbs, true},
    {"llvm.assume", Intrinsic::kAssume, false},
    {"llvm.bitreverse", Intrinsic::kBitreverse, true},
    {"llvm.bswap", Intrinsic::kBswap, true},
    {"llvm.ceil", Intrinsic::kLibmCall, true},
    {"llvm.copysign", Intrinsic::kLibmCall, true},
    {"llvm.cos", Intrinsic::kLibmCall, true},
    {"llvm.ctlz", Intrinsic::kCtlz, true},
    {"llvm.ctpop", Intrinsic::kCtpop, true},
    {"llvm.cttz", Intrinsic::kCttz, true},
    {"llvm.dbg.declare", Intrinsic::kDbgDeclare, false},
    {"llvm.dbg.label", Intrinsic::kDbgLabel, false},
    {"llvm.dbg.value", Intrinsic::kDbgValue, false},
    {"llvm.donothing", Intrinsic::kDoNothing, false},
    {"llvm.exp", Intrinsic::kLibmCall, true},
    {"llvm.exp2", Intrinsic::kLibmCall, true},
    {"llvm.expect", Intrinsic::kExpect, true},
    {"llvm.expect.with.probability", Intrinsic::kUnknownIntrinsic, true},
    {"llvm.experimental.noalias.scope.decl", Intrinsic::kNoaliasScopeDecl, false},
    {"llvm.fabs", Intrinsic::kFabs, true},
    {"llvm.floor", Intrinsic::kLibmCall, true},
    {"llvm.fma", Intrinsic::kLibmCall, true},
    {"llvm.fmuladd", Intrinsic::kFmuladd, true},
    {"llvm.fptosi.sat", Intrinsic::kFptosiSat, true},
    {"llvm.fptoui.sat", Intrinsic::kFptouiSat, true},
    {"llvm.fshl", Intrinsic::kFshl, true},
    {"llvm.fshr", Intrinsic::kFshr, true},
    {"llvm.is.constant", Intrinsic::kIsConstant, true},
    {"llvm.lifetime.end", Intrinsic::kLifetimeEnd, true},
    {"llvm.lifetime.start", Intrinsic::kLifetimeStart, true},
    {"llvm.log", Intrinsic::kLibmCall, true},
    {"llvm.log10", Intrinsic::kLibmCall, true},
    {"llvm.log2", Intrinsic::kLibmCall, true},
    {"llvm.maxnum", Intrinsic::kMaxnum, true},
    {"llvm.memcpy", Intrinsic::kMemcpy, true},
    {"llvm.memcpy.element.unordered.atomic", Intrinsic::kUnknownIntrinsic, true},
    {"llvm.memcpy.inline", Intrinsic::kUnknownIntrinsic, true},
    {"llvm.memmove", Intrinsic::kMemmove, true},
    {"llvm.memmove.element.unordered.atomic", Intrinsic::kUnknownIntrinsic, true},
    {"llvm.memset", Intrinsic::kMemset, true},
    {"llvm.memset.element.unordered.atomic", Intrinsic::kUnknownIntrinsic, true},
    {"llvm.memset.inline", Intrinsic::kUnknownIntrinsic, true},
    {"llvm.minnum", Intrinsic::kMinnum, true},
    {"llvm.nearbyint", Intrinsic::kLibmCall, true},
    {"llvm.pow", Intrinsic::kLibmCall, true},
    {"llvm.powi", Intrinsic::kLibmCall, true},
    {"llvm.rint", Intrinsic::kLibmCall, true},
    {"llvm.round", Intrinsic::kLibmCall, true},
    {"llvm.sadd.sat", Intrinsic::kSaddSat, true},
    {"llvm.sadd.with.overflow", Intrinsic::kSaddWithOverflow, true},
    {"llvm.scmp", Intrinsic::kScmp, true},
    {"llvm.sideeffect", Intrinsic::kSideEffect, false},
    {"llvm.sin", Intrinsic::kLibmCall, true},
    {"llvm.smax", Intrinsic::kSmax, true},
    {"llvm.smin", Intrinsic::kSmin, true},
    {"llvm.smul.with.overflow", Intrinsic::kSmulWithOverflow, true},
    {"llvm.sqrt", Intrinsic::kSqrt, true},
    {"llvm.ssub.sat", Intrinsic::kSsubSat, true},
    {"llvm.ssub.with.overflow", Intrinsic::kSsubWithOverflow, true},
    {"llvm.threadlocal.address", Intrinsic::kThreadlocalAddress, true},
    {"llvm.trap", Intrinsic::kTrap, false},
    {"llvm.trunc", Intrinsic::kLibmCall, true},
    {"llvm.uadd.sat", Intrinsic::kUaddSat, true},
    {"llvm.uadd.with.overflow", Intrinsic::kUaddWithOverflow, true},
    {"llvm.ubsantrap", Intrinsic::kUbsanTrap, false},
    {"llvm.ucmp", Intrinsic::kUcmp, true},
    {"llvm.umax", Intrinsic::kUmax, true},
    {"llvm.umin", Intrinsic::kUmin, true},
    {"llvm.umul.with.overflow", Intrinsic::kUmulWithOverflow, true},
    {"llvm.usub.sat", Intrinsic::kUsubSat, true},
    {"llvm.usub.with.overflow", Intrinsic::kUsubWithOverflow, true},
    {"llvm.vector.reduce.add", Intrinsic::kVectorReduceAdd, true},
    {"llvm.vector.reduce.and", Intrinsic::kVectorReduceAnd, true},
    {"llvm.vector.reduce.mul", Intrinsic::kVectorReduceMul, true},
    {"llvm.vector.reduce.or", Intrinsic::kVectorReduceOr, true},
    {"llvm.vector.reduce.xor", Intrinsic::kVectorReduceXor, true},
    {"llvm.x86.avx2.pshuf.b", Intrinsic::kX86PshufB256, false},
    {"llvm.x86.ssse3.pshuf.b.128", Intrinsic::kX86PshufB128, false},
};

// strncmp over name[start, end) against the table entry (which ends at its NUL), as
// LLVM compares one dotted component at a time.
int compare_component(const char* entry, std::string_view name, size_t start, size_t end) {
  size_t entry_size = std::strlen(entry);
  for (size_t i = start; i < end; ++i) {
    unsigned char a = i < entry_size ? static_cast<unsigned char>(entry[i]) : 0;
    unsigned char b = static_cast<unsigned char>(name[i]);
    if (a != b) return a < b ? -1 : 1;
    if (a == 0) return 0;
  }
  return 0;
}

// lookupLLVMIntrinsicByName: narrow the sorted table one dotted component at a time;
// the first entry of the last non-empty range is the candidate, which the name must
// equal or extend with '.'.
const KnownIntrinsic* candidate(std::string_view name) {
  const KnownIntrinsic* low = std::begin(kKnown);
  const KnownIntrinsic* high = std::end(kKnown);
  const KnownIntrinsic* last_low = low;
  size_t end = 4;  // after "llvm"
  while (end < name.size() && high > low) {
    size_t start = end;
    end = name.find('.', start + 1);
    if (end == std::string_view::npos) end = name.size();
    last_low = low;
    low = std::partition_point(low, high, [&](const KnownIntrinsic& k) {
      return compare_component(k.name, name, start, end) < 0;
    });
    high = std::partition_point(low, high, [&](const KnownIntrinsic& k) {
      return compare_component(k.name, name, start, end) <= 0;
    });
  }
  if (high > low) last_low = low;
  if (last_low == std::end(kKnown)) return nullptr;
  std::string_view found = last_low->name;
  if (name == found ||
      (name.substr(0, found.size()) == found && name.size() > found.size() && name[found.size()] == '.'))
    return last_low;
  return nullptr;
}

// libm_function's table, by base name (sorted).
struct LibmIntrinsic {
  const char* base;
  const char* double_function;
  const char* float_function;
};
constexpr LibmIntrinsic kLibm[] = {
    {"frem", "fmod", "fmodf"},
    {"llvm.ceil", "ceil", "ceilf"},
    {"llvm.copysign", "copysign", "copysignf"},
    {"llvm.cos", "cos", "cosf"},
    {"llvm.exp", "exp", "expf"},
    {"llvm.exp2", "exp2", "exp2f"},
    {"llvm.floor", "floor", "floorf"},
    {"llvm.fma", "fma", "fmaf"},
    {"llvm.log", "log", "logf"},
    {"llvm.log10", "log10", "log10f"},
    {"llvm.log2", "log2", "log2f"},
    {"llvm.nearbyint", "nearbyint", "nearbyintf"},
    {"llvm.pow", "pow", "powf"},
    {"llvm.powi", "__powidf2", "__powisf2"},
    {"llvm.rint", "rint", "rintf"},
    {"llvm.round", "round", "roundf"},
    {"llvm.sin", "sin", "sinf"},
    {"llvm.trunc", "trunc", "truncf"},
};

}  // namespace

const char* libm_function(std::string_view base, bool is_double) {
  for (const LibmIntrinsic& l : kLibm)
    if (base == l.base) return is_double ? l.double_function : l.float_function;
  return nullptr;
}

// The longest C library name kLibm holds: most names a module declares are far longer,
// and are passed over without a comparison each.
constexpr size_t kLongestLibm = [] {
  size_t n = 0;
  for (const LibmIntrinsic& l : kLibm)
    n = std::max({n, std::string_view(l.double_function).size(), std::string_view(l.float_function).size()});
  return n;
}();

bool is_libm_function(std::string_view name) {
  if (name.size() > kLongestLibm) return false;
  for (const LibmIntrinsic& l : kLibm)
    if (name == l.double_function || name == l.float_function) return true;
  return false;
}

const char* wide_division_function(bool is_signed, bool is_remainder) {
  if (is_remainder) return is_signed ? "__modti3" : "__umodti3";
  return is_signed ? "__divti3" : "__udivti3";
}

const char* wide_conversion_function(bool to_float, bool is_signed, bool is_double) {
  if (to_float) {
    if (is_double) return is_signed ? "__floattidf" : "__floatuntidf";
    return is_signed ? "__floattisf" : "__floatuntisf";
  }
  if (is_double) return is_signed ? "__fixdfti" : "__fixunsdfti";
  return is_signed ? "__fixsfti" : "__fixunssfti";
}

bool is_compiler_rt_function(std::string_view name) {
  // "__floatuntidf" is the longest name of the two lists below.
  if (name.size() > std::string_view("__floatuntidf").size() || name.substr(0, 2) != "__") return false;
  for (bool s : {false, true}) {
    for (bool r : {false, true})
      if (name == wide_division_function(s, r)) return true;
    for (bool f : {false, true})
      for (bool d : {false, true})
        if (name == wide_conversion_function(f, s, d)) return true;
  }
  return false;
}

std::string_view intrinsic_base(std::string_view function_name) {
  if (intrinsic_of(function_name) <= Intrinsic::kUnknownIntrinsic) return {};
  return candidate(function_name)->name;
}

Intrinsic intrinsic_of(std::string_view function_name) {
  if (function_name.substr(0, 5) != "llvm.") return Intrinsic::kNotIntrinsic;
  const KnownIntrinsic* k = candidate(function_name);
  // A name that only extends a non-overloaded intrinsic is none to LLVM ("llvm.trap.x").
  if (!k || (!k->overloaded && function_name.size() != std::strlen(k->name))) return Intrinsic::kUnknownIntrinsic;
  return k->id;
}

}  // namespace kiln::bc
