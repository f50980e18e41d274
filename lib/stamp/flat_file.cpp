#include "flat_file.h"

#include <dirent.h>

#include <algorithm>
#include <cstring>

#include "error.h"
#include "stamp_cpu.h"
#include "stamp_object.h"

namespace kiln {

// Here rather than in flat_export.cpp: what reads flat files links no LLVM.
FlatModuleView FlatModuleData::view() const {
  return FlatModuleView{functions.data(), static_cast<uint32_t>(functions.size()),
                        blocks.data(), static_cast<uint32_t>(blocks.size()),
                        insts.data(), static_cast<uint32_t>(insts.size()),
                        operands.data(), static_cast<uint32_t>(operands.size()),
                        arg_widths.data(), static_cast<uint32_t>(arg_widths.size())};
}

namespace {

const char kMagic[8] = {'K', 'I', 'L', 'N', 'F', 'L', 'A', 'T'};

template <class T>
void put_array(std::string& out, const std::vector<T>& v) {
  uint64_t n = v.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  if (n) out.append(reinterpret_cast<const char*>(v.data()), n * sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out += s;
}

struct Reader {
  const std::string& bytes;
  const std::string& path;
  size_t pos = 0;
  void need(uint64_t n) {
    if (n > bytes.size() - pos) throw KilnError(kExitBadInput, path, "truncated flat IR file");
  }
  uint64_t u64() {
    need(8);
    uint64_t v;
    std::memcpy(&v, bytes.data() + pos, 8);
    pos += 8;
    return v;
  }
  template <class T>
  std::vector<T> array() {
    uint64_t n = u64();
    if (n > (bytes.size() - pos) / sizeof(T)) throw KilnError(kExitBadInput, path, "truncated flat IR file");
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), bytes.data() + pos, n * sizeof(T));
    pos += n * sizeof(T);
    return v;
  }
  uint8_t byte() {
    need(1);
    return static_cast<uint8_t>(bytes[pos++]);
  }
  std::string string() {
    uint64_t n = u64();
    need(n);
    std::string s = bytes.substr(pos, n);
    pos += n;
    return s;
  }
};

}  // namespace

std::string write_flat_file(const FlatModuleData& flat, const std::string& source_name) {
  std::string out(kMagic, sizeof kMagic);
  uint64_t version = kFlatFileVersion;
  out.append(reinterpret_cast<const char*>(&version), sizeof version);
  put_string(out, source_name);
  put_array(out, flat.functions);
  put_array(out, flat.blocks);
  put_array(out, flat.insts);
  put_array(out, flat.operands);
  put_array(out, flat.arg_widths);
  put_array(out, flat.bindings);
  put_array(out, flat.visibilities);
  uint64_t n = flat.symbols.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  for (const auto& s : flat.symbols) put_string(out, s);
  n = flat.sections.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  for (const auto& s : flat.sections) put_string(out, s);
  // Version 3: the undefined symbols that are not plain references (extern_weak,
  // hidden, protected), so an object emitted from the file links as one from bitcode.
  n = flat.undefined.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  for (const auto& u : flat.undefined) {
    put_string(out, u.name);
    out.push_back(static_cast<char>(u.binding));
    out.push_back(static_cast<char>(u.visibility));
  }
  return out;
}

FlatModuleData read_flat_file(const std::string& bytes, const std::string& path, std::string* source_name) {
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw KilnError(kExitBadInput, path, "not a kiln flat IR file");
  Reader r{bytes, path, sizeof kMagic};
  uint64_t version = r.u64();
  if (version == 0) throw KilnError(kExitBadInput, path, "corrupt flat IR file: version 0");
  if (version > static_cast<uint64_t>(kFlatFileVersion))
    throw KilnError(kExitNewerSchema, path, "flat IR version " + std::to_string(version) + " is newer than this kiln reads");
  std::string source = r.string();
  if (source_name) *source_name = source;
  FlatModuleData f;
  f.functions = r.array<FlatFunction>();
  f.blocks = r.array<FlatBlock>();
  f.insts = r.array<FlatInst>();
  f.operands = r.array<FlatOperand>();
  f.arg_widths = r.array<uint8_t>();
  f.bindings = r.array<SymbolBinding>();
  f.visibilities = r.array<SymbolVisibility>();
  uint64_t n = r.u64();
  for (uint64_t i = 0; i < n; ++i) f.symbols.push_back(r.string());
  n = r.u64();
  for (uint64_t i = 0; i < n; ++i) f.sections.push_back(r.string());
  auto bad = [&](const std::string& what) { throw KilnError(kExitBadInput, path, "corrupt flat IR file: " + what); };
  if (version >= 3) {
    n = r.u64();
    for (uint64_t i = 0; i < n; ++i) {
      UndefinedSymbol u;
      u.name = r.string();
      uint8_t kinds[2] = {r.byte(), r.byte()};
      if (kinds[0] > uint8_t(SymbolBinding::weak) || kinds[1] > uint8_t(SymbolVisibility::protected_))
        bad("undefined symbol's binding or visibility out of range");
      u.binding = static_cast<SymbolBinding>(kinds[0]);
      u.visibility = static_cast<SymbolVisibility>(kinds[1]);
      f.undefined.push_back(std::move(u));
    }
  }
  // Every index must point inside its array: a corrupt file must not crash the stages.
  for (size_t i = 0; i < f.bindings.size(); ++i)
    if (uint8_t(f.bindings[i]) > uint8_t(SymbolBinding::weak)) bad("function binding out of range");
  for (size_t i = 0; i < f.visibilities.size(); ++i)
    if (uint8_t(f.visibilities[i]) > uint8_t(SymbolVisibility::protected_)) bad("function visibility out of range");
  if (f.bindings.size() != f.functions.size() || f.visibilities.size() != f.functions.size() ||
      f.sections.size() != f.functions.size())
    bad("per-function tables disagree");
  for (const auto& fn : f.functions) {
    if (fn.symbol >= f.symbols.size() || uint64_t(fn.first_block) + fn.block_count > f.blocks.size() ||
        uint64_t(fn.first_inst) + fn.inst_count > f.insts.size() || uint64_t(fn.first_arg) + fn.arg_count > f.arg_widths.size())
      bad("function out of range");
  }
  for (const auto& b : f.blocks)
    if (b.function >= f.functions.size() || uint64_t(b.first_inst) + b.inst_count > f.insts.size()) bad("block out of range");
  for (const auto& in : f.insts) {
    if (in.op >= kOpCount || in.block >= f.blocks.size() || uint64_t(in.first_operand) + in.operand_count > f.operands.size())
      bad("instruction out of range");
  }
  // Per function: its blocks and instructions stay inside it, and each opcode has
  // the operands its template reads, of the kinds it reads them as.
  static const uint8_t kMinOperands[kOpCount] = {
      /*nop*/ 0, /*copy*/ 1, /*trunc*/ 1, /*sext*/ 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
      /*icmp*/ 2, /*select*/ 3, /*alloca*/ 0, /*load*/ 1, /*store*/ 2, /*gep*/ 1, /*extract*/ 1, /*insert*/ 2,
      /*phi*/ 0, /*call*/ 1, /*overflow*/ 2, /*br*/ 1, /*condbr*/ 3, /*switch*/ 2, /*ret*/ 0, /*unreachable*/ 0,
      /*invoke*/ 3, /*landingpad*/ 0, /*resume*/ 2, /*bitop*/ 1, /*atomicrmw*/ 2, /*cmpxchg*/ 3, /*fence*/ 0};
  for (size_t fn = 0; fn < f.functions.size(); ++fn) {
    const FlatFunction& func = f.functions[fn];
    if ((func.flags & kFnHasPersonality) && func.personality >= f.symbols.size()) bad("personality out of range");
    if ((func.flags & kFnHasSret) && func.sret_arg >= func.arg_count) bad("sret argument out of range");
    if (frame_bound(f.insts.data() + func.first_inst, func.inst_count, func.arg_count) > static_cast<uint64_t>(kMaxFrameBytes))
      bad("frame larger than 1 GiB");
    // The function's blocks tile its instructions, in order: stage 3 gives offsets
    // only to instructions inside them, and stage 4 writes every instruction.
    uint64_t next_inst = func.first_inst;
    for (uint32_t b = func.first_block; b < func.first_block + func.block_count; ++b) {
      const FlatBlock& blk = f.blocks[b];
      if (blk.function != fn || blk.first_inst != next_inst ||
          uint64_t(blk.first_inst) + blk.inst_count > uint64_t(func.first_inst) + func.inst_count)
        bad("block outside its function");
      next_inst = uint64_t(blk.first_inst) + blk.inst_count;
      for (uint32_t i = blk.first_inst; i < blk.first_inst + blk.inst_count; ++i) {
        const FlatInst& in = f.insts[i];
        if (in.block != b) bad("instruction outside its block");
        if (in.operand_count < kMinOperands[in.op]) bad("instruction with too few operands");
        // An aggregate's byte count sizes its unrolled copy: like a frame, at most
        // 1 GiB, so no instruction's code can wrap a 32-bit offset.
        if ((in.op == kOpLoad || in.op == kOpStore || in.op == kOpExtract || in.op == kOpInsert) &&
            in.aux32 > static_cast<uint64_t>(kMaxFrameBytes))
          bad("aggregate larger than 1 GiB");
        const FlatOperand* ops = f.operands.data() + in.first_operand;
        for (uint32_t k = 0; k < in.operand_count; ++k)
          if (ops[k].kind == kOperandValue &&
              (ops[k].index < func.first_inst || ops[k].index >= func.first_inst + func.inst_count))
            bad("value from outside its function");
        auto is_block = [&](uint32_t k) {
          return ops[k].kind == kOperandBlock && ops[k].index < f.blocks.size() && f.blocks[ops[k].index].function == fn;
        };
        if ((in.op == kOpIcmp && in.aux > kPredSle) || (in.op == kOpOverflow && in.aux > kOvfSmul) ||
            (in.op == kOpBitOp && in.aux > kBitScmp) || (in.op == kOpLandingPad && in.aux > kLandingPadEmptyFilter) ||
            (in.op == kOpAtomicRmw && in.aux > kRmwNand) || (in.op == kOpStore && in.aux > kStoreSeqCst))
          bad("instruction with an unknown variant");
        if ((in.op == kOpBr && !is_block(0)) || (in.op == kOpCondBr && !(is_block(1) && is_block(2))) ||
            (in.op == kOpSwitch && (!is_block(1) || in.operand_count % 2)) ||
            (in.op == kOpInvoke && !(is_block(in.operand_count - 1) && is_block(in.operand_count - 2))) ||
            (in.op == kOpPhi && in.operand_count % 2) ||
            (in.op == kOpResume && !(ops[0].kind == kOperandValue && ops[1].kind == kOperandSymbol)))
          bad("instruction with operands of the wrong kind");
        for (uint32_t k = 2; in.op == kOpSwitch && k < in.operand_count; k += 2)
          if (!is_block(k + 1)) bad("switch case without a block");
      }
    }
    if (next_inst != uint64_t(func.first_inst) + func.inst_count) bad("instructions outside every block of their function");
  }
  // And no block or instruction lies outside the ranges its owner claims.
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    const FlatFunction& func = f.functions[f.blocks[b].function];
    if (b < func.first_block || b >= uint64_t(func.first_block) + func.block_count) bad("block outside its function");
  }
  for (size_t i = 0; i < f.insts.size(); ++i) {
    const FlatBlock& blk = f.blocks[f.insts[i].block];
    if (i < blk.first_inst || i >= uint64_t(blk.first_inst) + blk.inst_count) bad("instruction outside its block");
  }
  for (const auto& op : f.operands) {
    if (op.kind < kOperandValue || op.kind > kOperandZero) bad("operand of an unknown kind");
    uint64_t limit = op.kind == kOperandValue ? f.insts.size() : op.kind == kOperandArg ? f.arg_widths.size()
                   : op.kind == kOperandSymbol ? f.symbols.size() : op.kind == kOperandBlock ? f.blocks.size() : ~0ull;
    if (op.index >= limit) bad("operand out of range");
  }
  return f;
}

std::string emit_flat_module(const FlatModuleData& flat, const std::string& source_name) {
  StampOutput code = run_stamp_cpu(flat.view(), 1);
  return write_stamp_object(stamp_object_parts(flat, code).view, source_name);
}

StampObjectParts stamp_object_parts(const FlatModuleData& flat, const StampOutput& code) {
  StampObjectParts parts;
  const size_t F = flat.functions.size();
  parts.function_name.resize(F);
  parts.personality.resize(F);
  for (size_t fn = 0; fn < F; ++fn) {
    parts.function_name[fn] = flat.functions[fn].symbol;
    parts.personality[fn] = (flat.functions[fn].flags & kFnHasPersonality) ? flat.functions[fn].personality : kNoPersonality;
  }
  StampObjectView& v = parts.view;
  v.names = flat.symbols.data();
  v.name_count = static_cast<uint32_t>(flat.symbols.size());
  v.function_count = static_cast<uint32_t>(F);
  v.function_name = parts.function_name.data();
  v.binding = flat.bindings.data();
  v.visibility = flat.visibilities.data();
  v.section = flat.sections.data();
  v.undefined = flat.undefined.data();
  v.undefined_count = static_cast<uint32_t>(flat.undefined.size());
  v.code = code.code.data();
  v.code_start = code.code_start.data();
  v.code_size = code.code_size.data();
  v.relocs = code.relocs.data();
  v.reloc_start = code.reloc_start.data();
  v.reloc_count = code.reloc_count.data();
  v.personality = parts.personality.data();
  v.lsda = code.lsda.data();
  v.lsda_start = code.lsda_start.data();
  v.lsda_size = code.lsda_size.data();
  return parts;
}

std::vector<std::string> flat_files_named(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& a : args) {
    DIR* dir = opendir(a.c_str());
    if (!dir) {
      files.push_back(a);
      continue;
    }
    std::vector<std::string> found;
    while (dirent* d = readdir(dir)) {
      std::string name = d->d_name;
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".flat") == 0) found.push_back(a + "/" + name);
    }
    closedir(dir);
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

}  // namespace kiln
