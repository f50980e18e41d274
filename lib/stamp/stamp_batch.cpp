#include "stamp_batch.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "error.h"

namespace kiln {

namespace {

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

// Appends the running total of `count` over the modules to `first` (count+1 entries).
template <class Count>
void starts(std::vector<uint32_t>& first, const FlatModuleView* modules, size_t count, Count of, const char* what) {
  first.assign(1, 0);
  uint64_t total = 0;
  for (size_t k = 0; k < count; ++k) {
    total += of(modules[k]);
    if (total >= (uint64_t(1) << 32))
      throw KilnError(kExitBadInput, "",
                      std::string("a batch of ") + std::to_string(count) + " modules holds 2^32 or more " + what +
                          "; use smaller batches");
    first.push_back(static_cast<uint32_t>(total));
  }
}

}  // namespace

StampBatchLayout plan_stamp_batch(const FlatModuleView* modules, size_t count) {
  StampBatchLayout l;
  l.modules = count;
  starts(
      l.first_function, modules, count, [](const FlatModuleView& m) { return m.function_count; }, "functions");
  starts(
      l.first_block, modules, count, [](const FlatModuleView& m) { return m.block_count; }, "blocks");
  starts(
      l.first_inst, modules, count, [](const FlatModuleView& m) { return m.inst_count; }, "instructions");
  starts(
      l.first_operand, modules, count, [](const FlatModuleView& m) { return m.operand_count; }, "operands");
  starts(
      l.first_arg, modules, count, [](const FlatModuleView& m) { return m.arg_count; }, "arguments");
  const size_t sizes[5] = {l.function_count() * sizeof(FlatFunction), l.first_block.back() * sizeof(FlatBlock),
                           l.inst_count() * sizeof(FlatInst), l.first_operand.back() * sizeof(FlatOperand),
                           l.first_arg.back() * sizeof(uint8_t)};
  for (int a = 0; a < 5; ++a) l.array_offset[a] = l.bytes, l.bytes += align16(sizes[a]);
  return l;
}

FlatModuleView write_stamp_batch(const FlatModuleView* modules, const StampBatchLayout& l, uint8_t* block) {
  auto* functions = reinterpret_cast<FlatFunction*>(block + l.array_offset[0]);
  auto* blocks = reinterpret_cast<FlatBlock*>(block + l.array_offset[1]);
  auto* insts = reinterpret_cast<FlatInst*>(block + l.array_offset[2]);
  auto* operands = reinterpret_cast<FlatOperand*>(block + l.array_offset[3]);
  auto* arg_widths = block + l.array_offset[4];
  for (size_t k = 0; k < l.modules; ++k) {
    const FlatModuleView& m = modules[k];
    const uint32_t fn0 = l.first_function[k], block0 = l.first_block[k], inst0 = l.first_inst[k],
                   operand0 = l.first_operand[k], arg0 = l.first_arg[k];
    // Copied whole, then the index fields shifted: the other fields stay as they were.
    if (m.function_count) std::memcpy(functions + fn0, m.functions, m.function_count * sizeof(FlatFunction));
    if (m.block_count) std::memcpy(blocks + block0, m.blocks, m.block_count * sizeof(FlatBlock));
    if (m.inst_count) std::memcpy(insts + inst0, m.insts, m.inst_count * sizeof(FlatInst));
    if (m.operand_count) std::memcpy(operands + operand0, m.operands, m.operand_count * sizeof(FlatOperand));
    if (m.arg_count) std::memcpy(arg_widths + arg0, m.arg_widths, m.arg_count);
    if (k == 0) continue;  // the first module's indices are the batch's
    for (FlatFunction *f = functions + fn0, *end = f + m.function_count; f != end; ++f)
      f->first_block += block0, f->first_inst += inst0, f->first_arg += arg0;
    for (FlatBlock *b = blocks + block0, *end = b + m.block_count; b != end; ++b)
      b->first_inst += inst0, b->function += fn0;
    for (FlatInst* in = insts + inst0, *end = in + m.inst_count; in != end; ++in)
      in->block += block0, in->first_operand += operand0;
    for (FlatOperand *op = operands + operand0, *end = op + m.operand_count; op != end; ++op) {
      if (op->kind == kOperandValue) op->index += inst0;
      else if (op->kind == kOperandArg) op->index += arg0;
      else if (op->kind == kOperandBlock) op->index += block0;
    }
  }
  return FlatModuleView{functions, l.function_count(),     blocks,     l.first_block.back(), insts, l.inst_count(),
                        operands,  l.first_operand.back(), arg_widths, l.first_arg.back()};
}

StampOutputView view_of(const StampOutput& out) {
  return StampOutputView{out.code.data(),   out.code_start.data(),  out.code_size.data(),
                         out.relocs.data(), out.reloc_start.data(), out.reloc_count.data(),
                         out.lsda.data(),   out.lsda_start.data(),  out.lsda_size.data(),
                         out.inst_offset.data()};
}

StampOutput cut_stamp_output(const StampOutputView& b, const StampBatchLayout& l, size_t k) {
  StampOutput out;
  const uint32_t first = l.first_function[k], last = l.first_function[k + 1], F = last - first;
  out.code_start.resize(F), out.reloc_start.resize(F), out.lsda_start.resize(F);
  out.code_size.assign(b.code_size + first, b.code_size + last);
  out.reloc_count.assign(b.reloc_count + first, b.reloc_count + last);
  out.lsda_size.assign(b.lsda_size + first, b.lsda_size + last);
  out.inst_offset.assign(b.inst_offset + l.first_inst[k], b.inst_offset + l.first_inst[k + 1]);
  if (F == 0) return out;
  // A module's functions are consecutive in the batch, so each of its parts is one
  // range, placed by the batch's exclusive scans; here they start from zero again.
  const uint32_t code0 = b.code_start[first], reloc0 = b.reloc_start[first], lsda0 = b.lsda_start[first];
  for (uint32_t f = 0; f < F; ++f) {
    out.code_start[f] = b.code_start[first + f] - code0;
    out.reloc_start[f] = b.reloc_start[first + f] - reloc0;
    out.lsda_start[f] = b.lsda_start[first + f] - lsda0;
  }
  const uint32_t code_end = b.code_start[last - 1] + b.code_size[last - 1];
  const uint32_t reloc_end = b.reloc_start[last - 1] + b.reloc_count[last - 1];
  const uint32_t lsda_end = b.lsda_start[last - 1] + b.lsda_size[last - 1];
  out.code.assign(b.code + code0, b.code + code_end);
  out.relocs.assign(b.relocs + reloc0, b.relocs + reloc_end);
  out.lsda.assign(b.lsda + lsda0, b.lsda + lsda_end);
  return out;
}

std::vector<StampOutput> run_stamp_cpu_batch(const FlatModuleView* modules, size_t count, unsigned threads) {
  StampBatchLayout layout = plan_stamp_batch(modules, count);
  // operator new with 16-byte alignment, as the GPU's staging has.
  struct AlignedDelete {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(16)); }
  };
  std::unique_ptr<uint8_t[], AlignedDelete> block(
      static_cast<uint8_t*>(::operator new[](std::max<size_t>(layout.bytes, 16), std::align_val_t(16))));
  StampOutput whole = run_stamp_cpu(write_stamp_batch(modules, layout, block.get()), threads);
  std::vector<StampOutput> outputs;
  outputs.reserve(count);
  StampOutputView view = view_of(whole);
  for (size_t k = 0; k < count; ++k) outputs.push_back(cut_stamp_output(view, layout, k));
  return outputs;
}

}  // namespace kiln
