#include "variable_check.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/DebugInfo/DWARF/DWARFDie.h>

namespace kiln {

namespace {

using llvm::DWARFDie;
namespace dw = llvm::dwarf;

std::string attribute_number(const DWARFDie& d, dw::Attribute a) {
  auto v = d.find(a);
  if (!v) return "";
  if (auto u = v->getAsUnsignedConstant()) return std::to_string(*u);
  if (auto s = v->getAsSignedConstant()) return std::to_string(*s);
  return "?";
}

// A type as the comparison sees it, `depth` levels into its members and pointees.
std::string render_type(const DWARFDie& t, int depth) {
  if (!t) return "void";
  std::string s = dw::TagString(t.getTag()).str();
  if (const char* name = t.getShortName()) s += std::string(" ") + name;
  if (std::string size = attribute_number(t, dw::DW_AT_byte_size); !size.empty()) s += " /" + size;
  if (t.find(dw::DW_AT_declaration)) s += " decl";
  if (depth <= 0) return s;
  if (DWARFDie base = t.getAttributeValueAsReferencedDie(dw::DW_AT_type)) s += " -> " + render_type(base, depth - 1);
  std::string inner;
  for (DWARFDie c : t.children()) {
    switch (c.getTag()) {
      case dw::DW_TAG_member:
      case dw::DW_TAG_inheritance:
        inner += std::string(c.getShortName() ? c.getShortName() : "") + "@" +
            attribute_number(c, dw::DW_AT_data_member_location) + attribute_number(c, dw::DW_AT_data_bit_offset) +
            ":" + render_type(c.getAttributeValueAsReferencedDie(dw::DW_AT_type), depth - 1);
        break;
      case dw::DW_TAG_variant:
        inner += "variant " + attribute_number(c, dw::DW_AT_discr_value) + " " + render_type(c, depth);
        break;
      case dw::DW_TAG_enumerator:
        inner += std::string(c.getShortName() ? c.getShortName() : "") + "=" +
            attribute_number(c, dw::DW_AT_const_value);
        break;
      case dw::DW_TAG_subrange_type: inner += "[" + attribute_number(c, dw::DW_AT_count) + "]"; break;
      case dw::DW_TAG_subprogram: continue;  // methods' declarations: no part of a value
      default: inner += render_type(c, depth - 1);
    }
    inner += "; ";
  }
  return inner.empty() ? s : s + " {" + inner + "}";
}

// One subprogram's variables: "scopes|kind name:line" -> its types, in order.
using Variables = std::map<std::string, std::vector<std::string>>;

void collect(const DWARFDie& scope, const std::string& path, Variables& out, uint64_t& count) {
  for (DWARFDie c : scope.children()) {
    switch (c.getTag()) {
      case dw::DW_TAG_lexical_block: collect(c, path + "{", out, count); break;
      case dw::DW_TAG_inlined_subroutine: {
        DWARFDie origin = c.getAttributeValueAsReferencedDie(dw::DW_AT_abstract_origin);
        collect(c, path + "inline " + (origin && origin.getShortName() ? origin.getShortName() : "?") + "/", out,
                count);
        break;
      }
      case dw::DW_TAG_formal_parameter:
      case dw::DW_TAG_variable: {
        // An inlined call's variables name their abstract ones (LLVM's) or themselves.
        DWARFDie decl = c.find(dw::DW_AT_abstract_origin) ? c.getAttributeValueAsReferencedDie(dw::DW_AT_abstract_origin)
                                                           : c;
        std::string key = path + (c.getTag() == dw::DW_TAG_formal_parameter ? "param " : "var ") +
            (decl.getShortName() ? decl.getShortName() : "") + ":" + attribute_number(decl, dw::DW_AT_decl_line);
        out[key].push_back(render_type(decl.getAttributeValueAsReferencedDie(dw::DW_AT_type), 3) +
                           (c.find(dw::DW_AT_location) ? " @" : " (no location)"));
        ++count;
        break;
      }
      default: break;
    }
  }
}

// The concrete subprograms (those with code) of an object, by linkage name.
std::unordered_map<std::string, DWARFDie> subprograms(llvm::DWARFContext& ctx) {
  std::unordered_map<std::string, DWARFDie> out;
  for (const auto& unit : ctx.compile_units())
    for (const auto& entry : unit->dies()) {
      DWARFDie d(unit.get(), &entry);
      if (d.getTag() != dw::DW_TAG_subprogram || !d.find(dw::DW_AT_low_pc)) continue;
      const char* name = d.getLinkageName();
      if (!name || !*name) name = d.getShortName();
      if (name) out.emplace(name, d);
    }
  return out;
}

}  // namespace

void compare_variables(llvm::DWARFContext& stamp, llvm::DWARFContext& reference,
                       const std::vector<std::string>& linkage_names, VariableAgreement& r) {
  auto ours = subprograms(stamp), theirs = subprograms(reference);
  for (const std::string& name : linkage_names) {
    auto o = ours.find(name), t = theirs.find(name);
    if (o == ours.end() || t == theirs.end()) continue;
    Variables mine, want;
    collect(o->second, "", mine, r.stamp);
    collect(t->second, "", want, r.llvm);
    for (auto& [key, types] : mine) {
      std::vector<std::string>& pool = want[key];
      for (const std::string& type : types) {
        auto it = std::find(pool.begin(), pool.end(), type);
        if (it != pool.end()) {
          ++r.same;
          pool.erase(it);
          continue;
        }
        if (r.first_difference.empty())
          r.first_difference = name + ": " + key + ": " + type +
              (pool.empty() ? std::string(", llvm has none") : ", llvm has " + pool.front());
      }
    }
    for (const auto& [key, pool] : want)
      if (!pool.empty()) {
        if (r.first_difference.empty()) r.first_difference = name + ": " + key + " (" + pool.front() + ") is llvm's only";
      }
  }
}

}  // namespace kiln
