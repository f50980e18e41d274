// stamp's machine-code templates: one function per flat instruction that writes its
// x86-64 bytes. The same function measures (out == nullptr: only counts bytes and
// relocations) and encodes, so sizes and code can never disagree. Every template has a
// size that depends only on the instruction, never on offsets, with one exception:
// jumps to blocks. They are first measured rel32 (the long layout, a plain exclusive
// scan), then those whose target the long layout puts within 8-bit reach are measured
// again rel8 (jump), and the sizes scanned again; encoding makes the same choices from
// the same long layout.
//
// Values live in the frame: data at [rbp - slot]. Most have a slot of their own; a
// value read only by the next few instructions shares one of the pool's slots near rbp
// (pooled); a value the next instruction takes from rax has none, and neither has a
// frame address or a load folded into its user (ResultHome). Scalars are kept
// zero-extended to 64 bits ("normalised"), so unsigned operations work on whole
// registers; signed ones sign-extend first. Scratch registers: rax, rcx, rdx, r11 and
// the argument registers, all caller-saved.
#pragma once
#include "flat_ir.h"
#include "portable.h"

namespace kiln {

enum Reg : uint8_t {
  RAX = 0,
  RCX = 1,
  RDX = 2,
  RBX = 3,
  RSP = 4,
  RBP = 5,
  RSI = 6,
  RDI = 7,
  R8 = 8,
  R9 = 9,
  R10 = 10,
  R11 = 11
};

// The x86-64 ELF relocation types stamp writes: the stages (calls, GOT loads), the
// object writer (.eh_frame, DW.ref pointers) and the exporter (addresses in global
// initializers). The one spelling of them; lib/stamp/stamp_object.cpp checks the values
// against <elf.h> (kernels/ includes nothing of the system's ELF headers).
enum StampRelocType : uint32_t {
  kReloc64 = 1,             // R_X86_64_64: an absolute address (global initializers, DW.ref.NAME, DWARF)
  kRelocPc32 = 2,           // R_X86_64_PC32
  kReloc32 = 10,            // R_X86_64_32: DWARF's offsets into another debug section
  kRelocPlt32 = 4,          // R_X86_64_PLT32 (calls)
  kRelocGotPcRelX = 41,     // R_X86_64_GOTPCRELX (mov reg, [rip+sym@GOTPCREL] without REX)
  kRelocRexGotPcRelX = 42,  // R_X86_64_REX_GOTPCRELX (with a REX prefix)
  kRelocTlsGd = 19,         // R_X86_64_TLSGD (a thread-local variable's general-dynamic access)
  kRelocDtpOff64 = 17,      // R_X86_64_DTPOFF64: a thread-local variable's offset in its TLS block (DWARF)
};

struct StampReloc {
  uint32_t offset;  // function-relative
  uint32_t type;
  uint32_t symbol;  // module symbol index
  uint32_t pad;
  int64_t addend;
};

// Per-function layout produced by the frame stage.
struct StampLayout {
  const int32_t* inst_slot;      // per instruction (module-wide index): slot offset, or 0
  const int32_t* alloca_mem;     // per instruction: alloca memory offset, or 0
  const int32_t* arg_slot;       // per argument
  const uint32_t* frame_size;    // per function
  const uint32_t* inst_offset;   // per instruction: code offset within its function (encode only)
  const uint32_t* block_offset;  // per block: code offset within its function (encode only)
  const uint8_t* home;           // per instruction: where its result lives (ResultHome, stamp_uses)
  // The long layout, with every jump to a block rel32: per instruction and per block,
  // code offsets within the function; null while measuring it (every jump rel32).
  const uint32_t* long_inst_offset = nullptr;
  const uint32_t* long_block_offset = nullptr;
};

// Where an instruction's result lives, decided by stage 0 (stamp_uses).
enum ResultHome : uint8_t {
  kHomeSlot = 0,    // its frame slot
  kHomeRax = 1,     // only rax: its one use is the next instruction, which takes it from there
  kHomeNone = 2,    // nowhere: a frame address (frame_shape), which every use recomputes
                    // (lea) or addresses directly ([rbp + disp]); inst_slot holds -disp
  kHomeLoad = 3,    // nowhere: a scalar load from a frame address folded into its one user,
                    // which reads the memory itself (load_folds); inst_slot holds -disp
  kHomePool = 4,    // a slot of the function's pool, shared with other short-lived values
                    // (pooled); inst_slot holds its place, as for kHomeSlot
  kHomeField = 5,   // nowhere: a scalar field of an aggregate in its own slot, which every
                    // use reads in place (field_folds); inst_slot holds the field's place
  kHomeUnused = 6,  // nowhere: nothing reads it (a result_in_rax template's: a call's, a
                    // load's, ...): left in rax as it comes, not even normalised
};
// Homes whose value is read where it already is in the frame (load_operand), with no
// code and no slot of its own: a folded load's memory, an aggregate's field.
KILN_HD inline bool read_in_place(uint8_t home) { return home == kHomeLoad || home == kHomeField; }

// The pool: kPoolSlots slots of 8 bytes right below the arguments' slots, so near rbp
// that 8-bit displacements reach them, for values read only by the few instructions
// right after them (most of a -O0 function's values). Without it a value's slot comes
// after every alloca, mostly beyond 128 bytes, and each access takes a 32-bit one.
constexpr uint32_t kPoolSlots = 4;
constexpr uint32_t kPoolBytes = 8 * kPoolSlots;

// A jump to a block that a template made (jump), where Emitter::jumps records it: its
// position as Emitter::pos counts, its target and its condition code. The CPU executor
// keeps an instruction's code from the long layout and makes only these jumps again
// (lib/stamp/stamp_cpu.cpp): the rest of a template's code never depends on the layout.
struct StampJumpSite {
  uint32_t pos, block, cc;
};

// What the templates store code bytes as. A store through uint8_t (a character type)
// may alias anything, the Emitter's own fields too, so after each byte the compiler
// read pos, code_room and out again for the next; C++20's char8_t aliases nothing but
// char8_t, and the bytes are read afterwards only as uint8_t or copied (memcpy), which
// may read any type. nvcc's C++17 has no char8_t.
#if defined(__cpp_char8_t)
using CodeByte = char8_t;
#else
using CodeByte = uint8_t;
#endif

struct Emitter {
  uint8_t* out;        // function code base, or nullptr when measuring
  uint32_t pos;        // function-relative position
  StampReloc* relocs;  // where this instruction's relocations go, or nullptr
  uint32_t reloc_count;
  uint32_t call_begin = 0, call_end = 0;  // an invoke's call instruction (for the LSDA)
  int32_t frame_bias = 0;                 // the function's (frame_bias_of), added to rbp-based displacements
  // Where pos would be in the long layout, less pos (mod 2^32): only jump moves it, so
  // byte and u32 leave it alone (long_pos()).
  uint32_t long_delta = 0;
  // Room in out and relocs: what goes past it is counted, not written. The CPU
  // executor measures into a cache of limited room (lib/stamp/stamp_cpu.cpp) and
  // encodes an instruction that outgrew it again. None without out or relocs, so that
  // byte asks one question, not two.
  uint32_t code_room = out ? ~0u : 0u, reloc_room = relocs ? ~0u : 0u;
  // Where to record the jumps to blocks (StampJumpSite), or nullptr; like code and
  // relocations, those past jump_room are counted, not written.
  StampJumpSite* jumps = nullptr;
  uint32_t jump_count = 0, jump_room = 0;

  // Inlined everywhere: most of what the templates do is this.
  // pos is read once and stored before the byte: a byte's store may alias the
  // Emitter where CodeByte is uint8_t, and what is read after it is then read again.
  KILN_HD KILN_ALWAYS_INLINE void byte(uint32_t b) {
    const uint32_t p = pos;
    pos = p + 1;
    if (p < code_room) reinterpret_cast<CodeByte*>(out)[p] = static_cast<CodeByte>(b);
  }
  // A displacement or immediate: one room check for its four bytes.
  KILN_HD KILN_ALWAYS_INLINE void u32(uint32_t v) {
    const uint32_t p = pos;
    if (p < code_room && code_room - p >= 4) {
      pos = p + 4;
      CodeByte* o = reinterpret_cast<CodeByte*>(out) + p;
      o[0] = static_cast<CodeByte>(v), o[1] = static_cast<CodeByte>(v >> 8);
      o[2] = static_cast<CodeByte>(v >> 16), o[3] = static_cast<CodeByte>(v >> 24);
      return;
    }
    for (int i = 0; i < 4; ++i) byte((v >> (8 * i)) & 0xff);
  }
  KILN_HD uint32_t long_pos() const { return pos + long_delta; }
  KILN_HD void set_long_pos(uint32_t long_at) { long_delta = long_at - pos; }
  KILN_HD void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) byte(static_cast<uint32_t>((v >> (8 * i)) & 0xff));
  }
  KILN_HD void reloc(uint32_t type, uint32_t symbol, int64_t addend) {
    if (reloc_count < reloc_room) {
      StampReloc& r = relocs[reloc_count];
      r.offset = pos;
      r.type = type;
      r.symbol = symbol;
      r.pad = 0;
      r.addend = addend;
    }
    ++reloc_count;
  }
};

// ---- register and frame moves ------------------------------------------------------

KILN_HD inline uint32_t rex_w(uint32_t reg_field, uint32_t rm_field) {
  return 0x48 | ((reg_field >> 3) << 2) | (rm_field >> 3);
}

// In a frame of more than 128 bytes, rbp points kFrameBias bytes below the frame's top
// (where the caller's rbp is saved), so that 8-bit displacements reach the 240 bytes
// below the top, not 128: the frame's densest items (stamp_frame). Frame places are
// written as distances below the top (disp = -distance), and mem_operand adds the
// function's bias (Emitter::frame_bias, which encode_inst and encode_prologue set) to
// every rbp-based displacement; the prologue sets rbp, the return restores rsp from
// it, and the CFI and DWARF locations count it (lib/stamp/stamp_object.cpp,
// stamp_dwarf.cpp). A multiple of 16, so rbp keeps the frame top's 16-byte
// alignment, and below 128, so that the return's lea rsp, [rbp + kFrameBias] takes an
// 8-bit displacement. A smaller frame gains nothing from it and keeps the plain
// shape, 6 bytes shorter (push rbp; mov rbp, rsp ... leave; ret).
constexpr int32_t kFrameBias = 112;
KILN_HD inline int32_t frame_bias(uint32_t frame_size) { return frame_size > 128 ? kFrameBias : 0; }
// The bias of instruction i's function, which whoever makes an Emitter for encode_inst
// sets in it (once per function where it encodes a function's instructions in a row).
KILN_HD inline int32_t frame_bias_of(const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  return frame_bias(l.frame_size[m.blocks[m.insts[i].block].function]);
}

// The ModRM byte and displacement of [base + disp] (base rbp or rax): disp8 when it
// fits, else disp32. The choice depends only on the frame layout, which is fixed
// before sizes are measured, so measuring and encoding always agree. An rbp-based
// disp is a frame place's (relative to the frame's top): the function's bias is added here.
KILN_HD KILN_ALWAYS_INLINE void mem_operand(Emitter& e, uint32_t reg, uint32_t base, int32_t disp) {
  if (base == RBP) disp += e.frame_bias;
  uint32_t fields = ((reg & 7) << 3) | (base & 7);
  if (disp == 0 && (base & 7) != RBP) {  // [rax]: no displacement
    e.byte(fields);
  } else if (disp >= -128 && disp <= 127) {
    e.byte(0x40 | fields);
    e.byte(static_cast<uint32_t>(disp) & 0xff);
  } else {
    e.byte(0x80 | fields);
    e.u32(static_cast<uint32_t>(disp));
  }
}
// mov reg, [rbp + disp]
KILN_HD KILN_ALWAYS_INLINE void load64(Emitter& e, uint32_t reg, int32_t disp) {
  e.byte(rex_w(reg, 0));
  e.byte(0x8B);
  mem_operand(e, reg, RBP, disp);
}
// mov [rbp + disp], reg
KILN_HD KILN_ALWAYS_INLINE void store64(Emitter& e, int32_t disp, uint32_t reg) {
  e.byte(rex_w(reg, 0));
  e.byte(0x89);
  mem_operand(e, reg, RBP, disp);
}
// A load or store of 1, 2, 4 or 8 bytes between reg and [base + disp32] (base is rbp
// or rax); loads zero-extend to 64 bits.
KILN_HD KILN_ALWAYS_INLINE void piece(Emitter& e, bool load, uint32_t reg, uint32_t base, int32_t disp,
                                      uint32_t bytes) {
  uint32_t r = reg >> 3;
  if (bytes == 2 && !load) e.byte(0x66);
  if (bytes == 8) e.byte(0x48 | (r << 2));
  else if (r || (bytes == 1 && !load && reg >= 4)) e.byte(0x40 | (r << 2));
  if (load) {
    if (bytes >= 4) e.byte(0x8B);
    else e.byte(0x0F), e.byte(bytes == 2 ? 0xB7 : 0xB6);
  } else {
    e.byte(bytes == 1 ? 0x88 : 0x89);
  }
  mem_operand(e, reg, base, disp);
}
KILN_HD inline uint32_t piece_size(uint32_t left) { return left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1; }

// Loads `bytes` (1 to 8) little-endian into reg, zero-extended; odd sizes (3, 5, 6, 7,
// for i24 to i56) are put together from pieces through r10.
KILN_HD inline void load_pieces(Emitter& e, uint32_t reg, uint32_t base, int32_t disp, uint32_t bytes) {
  uint32_t first = piece_size(bytes);
  piece(e, true, reg, base, disp, first);
  for (uint32_t done = first; done < bytes;) {
    uint32_t n = piece_size(bytes - done);
    piece(e, true, R10, base, disp + static_cast<int32_t>(done), n);
    e.byte(0x49), e.byte(0xC1), e.byte(0xE2), e.byte(8 * done);         // shl r10, 8 * done
    e.byte(0x4C | (reg >> 3)), e.byte(0x09), e.byte(0xD0 | (reg & 7));  // or reg, r10
    done += n;
  }
}
KILN_HD inline void store_pieces(Emitter& e, uint32_t base, int32_t disp, uint32_t reg, uint32_t bytes) {
  for (uint32_t done = 0; done < bytes;) {
    uint32_t n = piece_size(bytes - done);
    if (done == 0) {
      piece(e, false, reg, base, disp, n);
    } else {
      e.byte(0x48 | ((reg >> 3) << 2) | 1), e.byte(0x89), e.byte(0xC0 | ((reg & 7) << 3) | (R10 & 7));  // mov r10, reg
      e.byte(0x49), e.byte(0xC1), e.byte(0xEA), e.byte(8 * done);  // shr r10, 8 * done
      piece(e, false, R10, base, disp + static_cast<int32_t>(done), n);
    }
    done += n;
  }
}
// The two above where `bytes` is 1, 2, 4 or 8, most loads and stores: one piece, inlined
// (the calls of the loops cost more than their one piece, and reg and base are mostly
// constants here). What they emit is the loops' first piece, all there is then.
KILN_HD KILN_ALWAYS_INLINE void load_bytes(Emitter& e, uint32_t reg, uint32_t base, int32_t disp, uint32_t bytes) {
  if (bytes - 1 < 8 && (bytes & (bytes - 1)) == 0) return piece(e, true, reg, base, disp, bytes);
  load_pieces(e, reg, base, disp, bytes);
}
// Stores the low `bytes` (1 to 8) of reg; reg is left unchanged.
KILN_HD KILN_ALWAYS_INLINE void store_bytes(Emitter& e, uint32_t base, int32_t disp, uint32_t reg, uint32_t bytes) {
  if (bytes - 1 < 8 && (bytes & (bytes - 1)) == 0) return piece(e, false, reg, base, disp, bytes);
  store_pieces(e, base, disp, reg, bytes);
}
// Frame forms of the above (rbp-relative).
KILN_HD inline void store_narrow(Emitter& e, int32_t disp, uint32_t reg, uint32_t bytes) {
  store_bytes(e, RBP, disp, reg, bytes);
}
KILN_HD inline void load_narrow(Emitter& e, uint32_t reg, int32_t disp, uint32_t bytes) {
  load_bytes(e, reg, RBP, disp, bytes);
}
KILN_HD inline uint32_t bytes_of_width(uint32_t w) { return w <= 8 ? 1 : (w + 7) / 8; }
KILN_HD inline bool is_standard_width(uint32_t w) { return w == 1 || w == 8 || w == 16 || w == 32 || w == 64; }

// reg = imm64 in the shortest form that leaves the flags alone: mov r32, imm32
// (zero-extends), mov r64, simm32, or movabs.
KILN_HD inline void mov_imm(Emitter& e, uint32_t reg, uint64_t imm) {
  if (imm <= 0xFFFFFFFFull) {
    if (reg >> 3) e.byte(0x41);
    e.byte(0xB8 + (reg & 7));
    e.u32(static_cast<uint32_t>(imm));
    return;
  }
  if (imm >= 0xFFFFFFFF80000000ull) {
    e.byte(0x48 | (reg >> 3));
    e.byte(0xC7);
    e.byte(0xC0 | (reg & 7));
    e.u32(static_cast<uint32_t>(imm));
    return;
  }
  e.byte(0x48 | (reg >> 3));
  e.byte(0xB8 + (reg & 7));
  e.u64(imm);
}
// mov dst, src
KILN_HD inline void mov_rr(Emitter& e, uint32_t dst, uint32_t src) {
  e.byte(rex_w(src, dst));
  e.byte(0x89);
  e.byte(0xC0 | ((src & 7) << 3) | (dst & 7));
}
// op reg, imm for the ALU group's opcode extension `ext` (add 0, or 1, and 4, sub 5,
// xor 6, cmp 7): sign-extended imm8 where it fits, else imm32.
KILN_HD inline void alu_imm(Emitter& e, uint32_t reg, uint32_t ext, int32_t imm) {
  const bool imm8 = imm >= -128 && imm <= 127;
  e.byte(0x48 | (reg >> 3)), e.byte(imm8 ? 0x83 : 0x81), e.byte(0xC0 | (ext << 3) | (reg & 7));
  if (imm8) e.byte(static_cast<uint32_t>(imm) & 0xff);
  else e.u32(static_cast<uint32_t>(imm));
}
// add reg, imm
KILN_HD inline void add_imm(Emitter& e, uint32_t reg, int32_t imm) { alu_imm(e, reg, 0, imm); }
// mov reg, [rip + symbol@GOTPCREL]: the address of a symbol, wherever it ends up.
KILN_HD inline void load_symbol_address(Emitter& e, uint32_t reg, uint32_t symbol, int64_t offset) {
  e.byte(0x48 | ((reg >> 3) << 2));
  e.byte(0x8B);
  e.byte(0x05 | ((reg & 7) << 3));
  e.reloc(kRelocRexGotPcRelX, symbol, -4);
  e.u32(0);
  if (offset != 0) add_imm(e, reg, static_cast<int32_t>(offset));
}

// Zero-extends reg from `width` bits to 64 (keeps the normal form).
KILN_HD inline void normalize(Emitter& e, uint32_t reg, uint32_t width) {
  uint32_t r = reg & 7, x = reg >> 3;
  switch (width) {
    case 64:
      return;
    case 32:  // mov r32, r32
      if (x) e.byte(0x45);
      e.byte(0x89);
      e.byte(0xC0 | (r << 3) | r);
      return;
    case 16:
    case 8:  // movzx r32, r16/r8 (REX for sil/dil and r8+)
      if (x || (width == 8 && reg >= 4)) e.byte(0x40 | (x << 2) | x);
      e.byte(0x0F);
      e.byte(width == 16 ? 0xB7 : 0xB6);
      e.byte(0xC0 | (r << 3) | r);
      return;
    case 1:  // and r32, 1
      if (x) e.byte(0x41);
      e.byte(0x83);
      e.byte(0xE0 | r);
      e.byte(0x01);
      return;
    default:  // i24 to i56: shl, then shr, by 64 - width
      e.byte(0x48 | x), e.byte(0xC1), e.byte(0xE0 | r), e.byte(64 - width);
      e.byte(0x48 | x), e.byte(0xC1), e.byte(0xE8 | r), e.byte(64 - width);
      return;
  }
}
// Sign-extends reg from `width` bits to 64.
KILN_HD inline void sign_extend(Emitter& e, uint32_t reg, uint32_t width) {
  uint32_t r = reg & 7, x = reg >> 3;
  uint32_t rex = 0x48 | (x << 2) | x;
  switch (width) {
    case 64:
      return;
    case 32:  // movsxd r64, r32
      e.byte(rex);
      e.byte(0x63);
      e.byte(0xC0 | (r << 3) | r);
      return;
    case 16:
    case 8:  // movsx r64, r16/r8
      e.byte(rex);
      e.byte(0x0F);
      e.byte(width == 16 ? 0xBF : 0xBE);
      e.byte(0xC0 | (r << 3) | r);
      return;
    case 1:  // neg r64 turns 0/1 into 0/-1
      e.byte(0x48 | x);
      e.byte(0xF7);
      e.byte(0xD8 | r);
      return;
    default:  // i24 to i56: shl, then sar, by 64 - width
      e.byte(0x48 | x), e.byte(0xC1), e.byte(0xE0 | r), e.byte(64 - width);
      e.byte(0x48 | x), e.byte(0xC1), e.byte(0xF8 | r), e.byte(64 - width);
      return;
  }
}

// ---- operands --------------------------------------------------------------------

KILN_HD inline int32_t slot_disp(const StampLayout& l, uint32_t inst) { return -l.inst_slot[inst]; }

// The end of a template whose result is in rax: into its slot, unless the result lives
// only in rax until the next instruction takes it (stamp_uses decided that).
KILN_HD inline void store_result(Emitter& e, const StampLayout& l, uint32_t i) {
  if (l.home && (l.home[i] == kHomeRax || l.home[i] == kHomeUnused)) return;
  store64(e, slot_disp(l, i), RAX);
}

// Loads a scalar operand (normalised) into reg. Every template reads its scalar value
// operands through here (or load_rax), which is what lets field_folds leave a field in
// its aggregate's slot.
KILN_HD KILN_ALWAYS_INLINE void load_operand(Emitter& e, const StampLayout& l, const FlatOperand& op, uint32_t reg) {
  switch (op.kind) {
    case kOperandValue:
      if (l.home && l.home[op.index] == kHomeNone) {  // lea reg, [rbp + disp]
        e.byte(rex_w(reg, 0));
        e.byte(0x8D);
        return mem_operand(e, reg, RBP, slot_disp(l, op.index));
      }
      if (l.home && read_in_place(l.home[op.index])) {  // the folded load's memory, or the field
        load_narrow(e, reg, slot_disp(l, op.index), bytes_of_width(op.width));
        if (op.width == 1) normalize(e, reg, 1);  // as encode_extract does
        return;
      }
      return load64(e, reg, slot_disp(l, op.index));
    case kOperandArg:
      return load64(e, reg, -l.arg_slot[op.index]);
    case kOperandSymbol:
      return load_symbol_address(e, reg, op.index, op.imm);
    case kOperandConst:
      if (op.imm != 0) return mov_imm(e, reg, static_cast<uint64_t>(op.imm));
      [[fallthrough]];
    default:  // zero, undef, poison: xor r32, r32. It sets flags, which no template
              // keeps live across an operand load (loads come before the flags' use).
      if (reg >> 3) e.byte(0x45);
      e.byte(0x31);
      e.byte(0xC0 | ((reg & 7) << 3) | (reg & 7));
      return;
  }
}

// 16 bytes of a copy at a time through xmm15 (movups xmm15, [base + disp], or the
// store): no other template of stamp's uses it (its float and vector templates and
// arguments use xmm0 to xmm7), so nothing a copy passes between holds it, and no
// general register or flag changes. Half the instructions of two 8-byte moves
// through rcx, and 4 to 10 bytes less. movups, not movdqu: the same 16 bytes moved,
// without movdqu's F3 prefix (so here and wherever stamp moves 16 bytes).
KILN_HD inline void movups_xmm15(Emitter& e, bool load, uint32_t base, int32_t disp) {
  e.byte(0x44), e.byte(0x0F), e.byte(load ? 0x10 : 0x11);
  mem_operand(e, 15, base, disp);
}
// Copies of at least this many bytes move their 16-byte pieces in a loop (copy_loop)
// rather than one pair of moves each: the code stays 31 to 40 bytes however large the
// aggregate (a flat file's aggregate can be 1 GiB, a rustc array value kilobytes),
// where four pairs already take 40 to 64.
constexpr uint32_t kCopyLoopBytes = 64;
// [base + rcx + disp] (base rbp or rax; SIB, index rcx, scale 1): disp8 when it fits,
// else disp32, from the frame layout alone as in mem_operand.
KILN_HD inline void mem_operand_rcx(Emitter& e, uint32_t reg, uint32_t base, int32_t disp) {
  if (base == RBP) disp += e.frame_bias;
  const bool short_disp = disp >= -128 && disp <= 127;
  e.byte((short_disp ? 0x44 : 0x84) | ((reg & 7) << 3));
  e.byte((RCX << 3) | (base & 7));
  if (short_disp) e.byte(static_cast<uint32_t>(disp) & 0xff);
  else e.u32(static_cast<uint32_t>(disp));
}
// The first `n` bytes (a multiple of 16, at least kCopyLoopBytes) from [src_base + src]
// to [dst_base + dst], or zeros (xmm15 zeroed by the caller) when `zero`: rcx counts from
// -n up to 0 by 16, so both addresses are [base + rcx + disp + n]. Changes rcx, xmm15
// and the flags (copies_keep_flags lets no aggregate's copy come between a compare and
// its branch).
KILN_HD inline void copy_loop(Emitter& e, uint32_t dst_base, int32_t dst, uint32_t src_base, int32_t src, uint32_t n,
                              bool zero) {
  e.byte(0x48), e.byte(0xC7), e.byte(0xC1);  // mov rcx, -n
  e.u32(static_cast<uint32_t>(-static_cast<int32_t>(n)));
  const uint32_t top = e.pos;
  if (!zero) {  // movups xmm15, [src_base + rcx + src + n]
    e.byte(0x44), e.byte(0x0F), e.byte(0x10);
    mem_operand_rcx(e, 15, src_base, src + static_cast<int32_t>(n));
  }
  e.byte(0x44), e.byte(0x0F), e.byte(0x11);  // movups [dst_base + rcx + dst + n], xmm15
  mem_operand_rcx(e, 15, dst_base, dst + static_cast<int32_t>(n));
  e.byte(0x48), e.byte(0x83), e.byte(0xC1), e.byte(0x10);  // add rcx, 16
  e.byte(0x75);                                            // jnz top
  e.byte(static_cast<uint32_t>(static_cast<int32_t>(top) - static_cast<int32_t>(e.pos + 1)) & 0xff);
}
// xorps xmm15, xmm15
KILN_HD inline void zero_xmm15(Emitter& e) { e.byte(0x45), e.byte(0x0F), e.byte(0x57), e.byte(0xFF); }
// How many bytes of a copy of `bytes` copy_loop moves: none below kCopyLoopBytes.
KILN_HD inline uint32_t looped_bytes(uint32_t bytes) { return bytes >= kCopyLoopBytes ? bytes / 16 * 16 : 0; }

// Copies `bytes` between frame addresses (rbp-relative), exactly: 16 at a time through
// xmm15 (in a loop from kCopyLoopBytes), the rest through rcx.
KILN_HD inline void copy_frame(Emitter& e, int32_t dst, int32_t src, uint32_t bytes) {
  uint32_t done = looped_bytes(bytes);
  if (done) copy_loop(e, RBP, dst, RBP, src, done, false);
  for (; bytes - done >= 16; done += 16) {
    movups_xmm15(e, true, RBP, src + static_cast<int32_t>(done));
    movups_xmm15(e, false, RBP, dst + static_cast<int32_t>(done));
  }
  while (done < bytes) {
    uint32_t left = bytes - done;
    uint32_t chunk = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    load_narrow(e, RCX, src + static_cast<int32_t>(done), chunk);
    store_narrow(e, dst + static_cast<int32_t>(done), RCX, chunk);
    done += chunk;
  }
}
// Stores `bytes` zero bytes at a frame address.
KILN_HD inline void zero_frame(Emitter& e, int32_t dst, uint32_t bytes) {
  uint32_t done = looped_bytes(bytes);
  if (bytes >= 16) {
    zero_xmm15(e);
    if (done) copy_loop(e, RBP, dst, RBP, 0, done, true);
    for (; bytes - done >= 16; done += 16) movups_xmm15(e, false, RBP, dst + static_cast<int32_t>(done));
  }
  if (done == bytes) return;
  e.byte(0x31);  // xor ecx, ecx
  e.byte(0xC9);
  while (done < bytes) {
    uint32_t left = bytes - done;
    uint32_t chunk = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    store_narrow(e, dst + static_cast<int32_t>(done), RCX, chunk);
    done += chunk;
  }
}
// Copies `bytes` between memory at [rax + k] and the frame, exactly: 16 at a time
// through xmm15 (in a loop from kCopyLoopBytes), the rest through rcx.
KILN_HD inline void copy_memory(Emitter& e, bool to_frame, int32_t frame, uint32_t bytes) {
  uint32_t done = looped_bytes(bytes);
  if (done) {
    if (to_frame) copy_loop(e, RBP, frame, RAX, 0, done, false);
    else copy_loop(e, RAX, 0, RBP, frame, done, false);
  }
  for (; bytes - done >= 16; done += 16) {
    movups_xmm15(e, true, to_frame ? RAX : RBP, to_frame ? static_cast<int32_t>(done) : frame + static_cast<int32_t>(done));
    movups_xmm15(e, false, to_frame ? RBP : RAX, to_frame ? frame + static_cast<int32_t>(done) : static_cast<int32_t>(done));
  }
  while (done < bytes) {
    uint32_t left = bytes - done;
    uint32_t chunk = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    if (to_frame) {
      // load [rax + done] -> rcx (zero-extending), then store to the frame
      if (chunk == 8) e.byte(0x48);
      if (chunk == 2 || chunk == 1) e.byte(0x0F), e.byte(chunk == 2 ? 0xB7 : 0xB6);
      else e.byte(0x8B);
      mem_operand(e, RCX, RAX, static_cast<int32_t>(done));
      store_narrow(e, frame + static_cast<int32_t>(done), RCX, chunk);
    } else {
      load_narrow(e, RCX, frame + static_cast<int32_t>(done), chunk);
      if (chunk == 8) e.byte(0x48);
      if (chunk == 2) e.byte(0x66);
      e.byte(chunk == 1 ? 0x88 : 0x89);
      mem_operand(e, RCX, RAX, static_cast<int32_t>(done));
    }
    done += chunk;
  }
}

// ---- 128-bit integers ------------------------------------------------------------
// An i128 lives in a 16-byte slot, low half first; it is computed on in two registers.

// An i128 operand into lo (low half) and hi (high half): from its slot or its
// argument's, a constant, or zero for zero, undef and poison.
KILN_HD inline void load_wide(Emitter& e, const StampLayout& l, const FlatOperand& op, uint32_t lo, uint32_t hi) {
  if (op.kind == kOperandValue || op.kind == kOperandArg) {
    int32_t at = op.kind == kOperandValue ? slot_disp(l, op.index) : -l.arg_slot[op.index];
    load64(e, lo, at);
    load64(e, hi, at + 8);
  } else if (op.kind == kOperandConst) {
    mov_imm(e, lo, static_cast<uint64_t>(op.imm));
    mov_imm(e, hi, wide_const_high(op));
  } else {
    mov_imm(e, lo, 0);
    mov_imm(e, hi, 0);
  }
}
// lo and hi into the 16 bytes at [rbp + dst].
KILN_HD inline void store_wide(Emitter& e, int32_t dst, uint32_t lo, uint32_t hi) {
  store64(e, dst, lo);
  store64(e, dst + 8, hi);
}
// An i128 operand into the 16 bytes at [rbp + dst], through rcx and rdx.
KILN_HD inline void wide_to_frame(Emitter& e, const StampLayout& l, const FlatOperand& op, int32_t dst) {
  if (op.kind == kOperandUndef) return;
  load_wide(e, l, op, RCX, RDX);
  store_wide(e, dst, RCX, RDX);
}

// A jump to `block`: jmp (kJmp) or the jcc whose rel32 form is 0F cc. rel8 when the
// long layout puts the block within reach of it, else rel32. Jumps only get shorter
// from the long layout to the final one, so the bytes between a jump and its target
// only shrink, and a target in reach stays in reach.
constexpr uint32_t kJmp = 0xE9;
KILN_HD inline uint32_t long_jump_size(uint32_t cc) { return cc == kJmp ? 5 : 6; }
// Whether the jump to `block` that starts at long_pos in the long layout is rel8: once
// that layout is known (l.long_block_offset), when it puts the block within reach.
KILN_HD inline bool jump_is_short(const StampLayout& l, uint32_t block, uint32_t long_pos) {
  if (!l.long_block_offset) return false;
  const int64_t reach = static_cast<int64_t>(l.long_block_offset[block]) - static_cast<int64_t>(long_pos) - 2;
  return reach >= -128 && reach <= 127;
}
KILN_HD inline void jump(Emitter& e, const StampLayout& l, uint32_t cc, uint32_t block) {
  if (e.jumps) {
    if (e.jump_count < e.jump_room) e.jumps[e.jump_count] = StampJumpSite{e.pos, block, cc};
    ++e.jump_count;
  }
  const uint32_t target = l.block_offset ? l.block_offset[block] : 0;
  if (jump_is_short(l, block, e.long_pos())) {
    e.byte(cc == kJmp ? 0xEB : 0x70 | (cc & 0x0F));
    e.byte((target - (e.pos + 1)) & 0xFF);
    e.long_delta += long_jump_size(cc) - 2;
    return;
  }
  if (cc == kJmp) e.byte(0xE9);
  else e.byte(0x0F), e.byte(cc);
  e.u32(target - (e.pos + 4));
}

// A jump to `block`, or nothing when it is the next block in layout (fall through).
KILN_HD inline void jump_to_block(Emitter& e, const StampLayout& l, uint32_t from_block, uint32_t block) {
  if (block == from_block + 1) return;
  jump(e, l, kJmp, block);
}

// Whether load_operand loads the same into a register for two operands; kind 0 is no
// operand. Only a value read in place (a folded load's memory, a field) is loaded at
// the operand's width.
KILN_HD inline bool same_operand(const StampLayout& l, const FlatOperand& a, const FlatOperand& b) {
  if (a.kind == 0 || a.kind != b.kind || a.index != b.index) return false;
  if (a.kind == kOperandValue) return a.width == b.width || !(l.home && read_in_place(l.home[a.index]));
  return a.imm == b.imm;
}

// Before a terminator: each phi of each successor receives this block's incoming
// value in its shadow slot (the phi copies shadow to slot on entry), so that no edge
// needs splitting and parallel-copy semantics hold; or, a phi with kPhiDirect, in its
// slot itself (no copy reads it, and no other edge needs its old value). A scalar's
// copy goes through rax, and *rax says what rax holds (kind 0: unknown): a value that
// rax holds already is not loaded again. That value is the one from before the copies
// began, which is what each copy must read in any case.
KILN_HD inline void phi_copies_into(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t from_block,
                                    uint32_t to_block, FlatOperand* rax) {
  const FlatBlock& b = m.blocks[to_block];
  for (uint32_t i = b.first_inst; i < b.first_inst + b.inst_count && m.insts[i].op == kOpPhi; ++i) {
    const FlatInst& phi = m.insts[i];
    const bool direct = phi.aux & kPhiDirect;
    for (uint32_t k = 0; k + 1 < phi.operand_count; k += 2) {
      const FlatOperand& block = m.operands[phi.first_operand + k + 1];
      if (block.index != from_block) continue;
      const FlatOperand& value = m.operands[phi.first_operand + k];
      if (phi.width == kWideBits) {  // its shadow is the second 16 bytes of the slot
        wide_to_frame(e, l, value, slot_disp(l, i) + (direct ? 0 : 16));
        *rax = FlatOperand{};
        break;
      }
      if (phi.width == 0) {  // an aggregate: its shadow is the second half of the slot
        int32_t to = slot_disp(l, i) + (direct ? 0 : static_cast<int32_t>((phi.aux32 + 7) / 8 * 8));
        if (value.kind == kOperandValue) copy_frame(e, to, slot_disp(l, value.index), phi.aux32);
        else if (value.kind == kOperandZero) zero_frame(e, to, phi.aux32);
        break;
      }
      // A value that lives in the phi's slot (phi_slot_taken) is there already.
      if (direct && value.kind == kOperandValue && slot_disp(l, value.index) == slot_disp(l, i)) break;
      if (!same_operand(l, *rax, value)) load_operand(e, l, value, RAX);
      *rax = value;
      store64(e, slot_disp(l, i) + (direct ? 0 : 8), RAX);
      break;
    }
  }
}

// Most successors have no phis: asked here, inlined, before the call.
KILN_HD KILN_ALWAYS_INLINE void phi_copies_for(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                               uint32_t from_block, uint32_t to_block, FlatOperand* rax) {
  const FlatBlock& b = m.blocks[to_block];
  if (b.inst_count && m.insts[b.first_inst].op == kOpPhi) phi_copies_into(e, m, l, from_block, to_block, rax);
}

// The setcc opcode (second byte) of a predicate; jcc rel32's is the same minus 0x10.
KILN_HD inline uint32_t setcc_opcode(uint32_t predicate) {
  switch (predicate) {
    case kPredEq:
      return 0x94;
    case kPredNe:
      return 0x95;
    case kPredUgt:
      return 0x97;
    case kPredUge:
      return 0x93;
    case kPredUlt:
      return 0x92;
    case kPredUle:
      return 0x96;
    case kPredSgt:
      return 0x9F;
    case kPredSge:
      return 0x9D;
    case kPredSlt:
      return 0x9C;
    default:
      return 0x9E;  // sle
  }
}
KILN_HD inline void setcc_al(Emitter& e, uint32_t predicate) {
  e.byte(0x0F);
  e.byte(setcc_opcode(predicate));
  e.byte(0xC0);
}

KILN_HD inline bool is_signed_predicate(uint32_t p) { return p >= kPredSgt; }

// Integer argument registers of the SysV x86-64 convention.
KILN_HD inline uint32_t argument_register(uint32_t i) {
  const uint8_t regs[6] = {RDI, RSI, RDX, RCX, R8, R9};
  return regs[i];
}

// ---- floating point: xmm registers --------------------------------------------------
// Floats and doubles live in the frame and in general registers as bit patterns (a
// float zero-extended, like an i32); they pass through xmm0 and xmm1 (caller-saved,
// like every register stamp uses) only to be computed on, and through xmm0 .. xmm7
// as arguments and returns.

KILN_HD inline bool is_float_arg(const FlatFunction& f, uint32_t a) { return a < kMaxFloatArgs && ((f.float_args >> a) & 1); }

// movq xmm, reg
KILN_HD inline void movq_to_xmm(Emitter& e, uint32_t xmm, uint32_t reg) {
  e.byte(0x66), e.byte(0x48 | (reg >> 3)), e.byte(0x0F), e.byte(0x6E), e.byte(0xC0 | ((xmm & 7) << 3) | (reg & 7));
}
// reg = the low `width` bits of xmm, zero-extended: movd r32, xmm (32) or movq r64, xmm.
KILN_HD inline void move_from_xmm(Emitter& e, uint32_t reg, uint32_t xmm, uint32_t width) {
  e.byte(0x66);
  if (width != 32 || reg >= 8) e.byte((width != 32 ? 0x48 : 0x40) | (reg >> 3));
  e.byte(0x0F), e.byte(0x7E), e.byte(0xC0 | ((xmm & 7) << 3) | (reg & 7));
}
// A scalar SSE operation dst = dst op src at `width` (F2: double, F3: float).
KILN_HD inline void sse_scalar(Emitter& e, uint32_t width, uint32_t opcode, uint32_t dst, uint32_t src) {
  e.byte(width == 32 ? 0xF3 : 0xF2), e.byte(0x0F), e.byte(opcode), e.byte(0xC0 | ((dst & 7) << 3) | (src & 7));
}
// cvtsi2sd/cvtsi2ss xmm, r64 (reg < 8)
KILN_HD inline void convert_from_int(Emitter& e, uint32_t width, uint32_t xmm, uint32_t reg) {
  e.byte(width == 32 ? 0xF3 : 0xF2), e.byte(0x48), e.byte(0x0F), e.byte(0x2A), e.byte(0xC0 | ((xmm & 7) << 3) | (reg & 7));
}
// cvttsd2si/cvttss2si r64, xmm (reg < 8): truncating, 2^63 for what does not fit.
KILN_HD inline void convert_to_int(Emitter& e, uint32_t width, uint32_t reg, uint32_t xmm) {
  e.byte(width == 32 ? 0xF3 : 0xF2), e.byte(0x48), e.byte(0x0F), e.byte(0x2C), e.byte(0xC0 | ((reg & 7) << 3) | (xmm & 7));
}
// ucomisd/ucomiss a, b on xmm registers.
KILN_HD inline void unordered_compare(Emitter& e, uint32_t width, uint32_t a, uint32_t b) {
  if (width != 32) e.byte(0x66);
  e.byte(0x0F), e.byte(0x2E), e.byte(0xC0 | ((a & 7) << 3) | (b & 7));
}

// A two-leaf aggregate in rax (leaf 0) and rdx (leaf 1) into the registers LLVM
// returns it in: integer leaves in rax, then rdx; float leaves in xmm0, then xmm1
// (`float_leaves`: bit k, leaf k is a float or double).
KILN_HD inline void pair_to_return_registers(Emitter& e, uint32_t float_leaves) {
  if (float_leaves == 1) movq_to_xmm(e, 0, RAX), mov_rr(e, RAX, RDX);
  if (float_leaves == 2) movq_to_xmm(e, 0, RDX);
  if (float_leaves == 3) movq_to_xmm(e, 0, RAX), movq_to_xmm(e, 1, RDX);
}
// The other way, after a call: leaf 0 into rax and leaf 1 into rdx.
KILN_HD inline void pair_from_return_registers(Emitter& e, uint32_t float_leaves) {
  if (float_leaves == 1) mov_rr(e, RDX, RAX), move_from_xmm(e, RAX, 0, 64);
  if (float_leaves == 2) move_from_xmm(e, RDX, 0, 64);
  if (float_leaves == 3) move_from_xmm(e, RAX, 0, 64), move_from_xmm(e, RDX, 1, 64);
}

// A vector argument of `bytes` (16 or 32) between [rbp + disp] and xmm/ymm register
// `reg` (below 8): movups, or VEX's vmovdqu on 32 bytes, which only a function with
// AVX passes (the exporters check). `to_register`: a load, else a store.
KILN_HD inline void move_vector_arg(Emitter& e, uint32_t bytes, uint32_t reg, int32_t disp, bool to_register) {
  if (bytes == 32) e.byte(0xC5), e.byte(0xFE), e.byte(to_register ? 0x6F : 0x7F);  // VEX.256.F3.0F
  else e.byte(0x0F), e.byte(to_register ? 0x10 : 0x11);
  mem_operand(e, reg, RBP, disp);
}
// xmm/ymm register `reg` (below 8) = 0: pxor, or vpxor xmm, which clears the upper
// half of the ymm register too.
KILN_HD inline void zero_vector_arg(Emitter& e, uint32_t bytes, uint32_t reg) {
  if (bytes == 32) e.byte(0xC5), e.byte(0x81 | ((~reg & 15) << 3));  // VEX.128.66.0F, vvvv = reg
  else e.byte(0x66), e.byte(0x0F);
  e.byte(0xEF), e.byte(0xC0 | (reg << 3) | reg);
}

// Where the SysV x86-64 convention puts each argument, in order (LLVM 22's reading of
// it): integers in the next of rdi .. r9, an i128 in the next two (else in 16-byte
// aligned stack, a later integer still taking the register it left), floats and
// doubles in the next of xmm0 .. xmm7; whatever does not fit its registers goes on
// the stack in order. encode_prologue and encode_call both place arguments with it.
struct ArgPlace {
  bool in_register;
  uint32_t reg;         // argument_register index (the first of two for an i128), or the xmm number
  uint32_t stack_slot;  // else: 8-byte units from the start of the stack arguments
};
struct SysvArgs {
  uint32_t ints = 0, floats = 0, stacked = 0;
  KILN_HD ArgPlace next(bool is_float, bool wide) {
    const uint32_t regs = wide ? 2 : 1;
    if (is_float && floats < 8) return ArgPlace{true, floats++, 0};
    if (!is_float && ints + regs <= 6) {
      ints += regs;
      return ArgPlace{true, ints - regs, 0};
    }
    if (wide) stacked = (stacked + 1) & ~1u;
    stacked += regs;
    return ArgPlace{false, 0, stacked - regs};
  }
};

// ---- instructions ----------------------------------------------------------------

// A constant's value as a 64-bit number: its low `width` bits sign- or zero-extended.
KILN_HD inline int64_t extend_const(int64_t imm, uint32_t width, bool sign) {
  if (width == 0 || width >= 64) return imm;
  const uint64_t v = static_cast<uint64_t>(imm) << (64 - width);
  return sign ? static_cast<int64_t>(v) >> (64 - width) : static_cast<int64_t>(v >> (64 - width));
}
KILN_HD inline bool fits_imm32(int64_t v) { return v >= -2147483648LL && v <= 2147483647LL; }

// op rax, imm (alu_imm), with rax's own short form where imm32 is needed.
KILN_HD inline void alu_rax_imm(Emitter& e, uint32_t ext, int32_t imm) {
  if (imm >= -128 && imm <= 127) return alu_imm(e, RAX, ext, imm);
  e.byte(0x48), e.byte(0x05 | (ext << 3));
  e.u32(static_cast<uint32_t>(imm));
}

// The ALU group's opcode extension (add 0, or 1, and 4, sub 5, xor 6) of a binary
// operation that is one of them, else -1. `op r64, r/m64` is (ext << 3) | 3.
KILN_HD inline int alu_ext(uint32_t op) {
  switch (op) {
    case kOpAdd:
      return 0;
    case kOpOr:
      return 1;
    case kOpAnd:
      return 4;
    case kOpSub:
      return 5;
    case kOpXor:
      return 6;
    default:
      return -1;
  }
}

// A binary operation on rax whose right operand is a constant that fits an immediate:
// one instruction instead of loading it into rcx. The low `width` bits of add, sub,
// mul and the bit operations depend only on the operands' low bits, so the constant is
// taken sign-extended from its width (more constants then fit imm8), and the result is
// normalised as always. Shifts take the count as cl would (x86 masks both to 6 bits).
// False, with nothing emitted, when the constant does not fit or the operation has no
// immediate form (divisions).
KILN_HD inline bool encode_binary_imm(Emitter& e, const FlatInst& in, const FlatOperand& rhs) {
  if (rhs.kind != kOperandConst) return false;
  const int64_t v = extend_const(rhs.imm, in.width, true);
  switch (in.op) {
    case kOpShl:
    case kOpLshr:
    case kOpAshr:
      if (in.op == kOpAshr) sign_extend(e, RAX, in.width);
      e.byte(0x48), e.byte(0xC1), e.byte(in.op == kOpShl ? 0xE0 : in.op == kOpLshr ? 0xE8 : 0xF8);
      e.byte(static_cast<uint32_t>(rhs.imm) & 63);
      break;
    case kOpMul:
      if (!fits_imm32(v)) return false;
      if (v >= -128 && v <= 127) {
        e.byte(0x48), e.byte(0x6B), e.byte(0xC0), e.byte(static_cast<uint32_t>(v) & 0xFF);  // imul rax, rax, imm8
      } else {
        e.byte(0x48), e.byte(0x69), e.byte(0xC0);  // imul rax, rax, imm32
        e.u32(static_cast<uint32_t>(v));
      }
      break;
    case kOpAdd:
    case kOpSub:
    case kOpAnd:
    case kOpOr:
    case kOpXor: {
      if (!fits_imm32(v)) return false;
      alu_rax_imm(e, static_cast<uint32_t>(alu_ext(in.op)), static_cast<int32_t>(v));
      break;
    }
    default:
      return false;
  }
  normalize(e, RAX, in.width);
  return true;
}

KILN_HD inline void encode_binary(Emitter& e, const FlatInst& in) {
  bool is_signed = in.op == kOpAshr || in.op == kOpSdiv || in.op == kOpSrem;
  if (is_signed) {
    sign_extend(e, RAX, in.width);
    sign_extend(e, RCX, in.width);
  }
  switch (in.op) {
    case kOpAdd:
      e.byte(0x48), e.byte(0x01), e.byte(0xC8);
      break;
    case kOpSub:
      e.byte(0x48), e.byte(0x29), e.byte(0xC8);
      break;
    case kOpMul:
      e.byte(0x48), e.byte(0x0F), e.byte(0xAF), e.byte(0xC1);
      break;
    case kOpAnd:
      e.byte(0x48), e.byte(0x21), e.byte(0xC8);
      break;
    case kOpOr:
      e.byte(0x48), e.byte(0x09), e.byte(0xC8);
      break;
    case kOpXor:
      e.byte(0x48), e.byte(0x31), e.byte(0xC8);
      break;
    case kOpShl:
      e.byte(0x48), e.byte(0xD3), e.byte(0xE0);
      break;
    case kOpLshr:
      e.byte(0x48), e.byte(0xD3), e.byte(0xE8);
      break;
    case kOpAshr:
      e.byte(0x48), e.byte(0xD3), e.byte(0xF8);
      break;
    case kOpUdiv:
    case kOpUrem:
      e.byte(0x31), e.byte(0xD2);                // xor edx, edx
      e.byte(0x48), e.byte(0xF7), e.byte(0xF1);  // div rcx
      if (in.op == kOpUrem) mov_rr(e, RAX, RDX);
      break;
    default:                                     // sdiv, srem
      e.byte(0x48), e.byte(0x99);                // cqo
      e.byte(0x48), e.byte(0xF7), e.byte(0xF9);  // idiv rcx
      if (in.op == kOpSrem) mov_rr(e, RAX, RDX);
      break;
  }
  normalize(e, RAX, in.width);
}

KILN_HD inline void encode_overflow(Emitter& e, const FlatInst& in, uint32_t w) {
  // The operation at its own width sets CF/OF exactly as LLVM's *.with.overflow means.
  bool is_mul = in.aux == kOvfUmul || in.aux == kOvfSmul;
  if (w == 16) e.byte(0x66);
  if (w == 64) e.byte(0x48);
  if (!is_mul) {
    uint32_t opcode = (in.aux == kOvfUadd || in.aux == kOvfSadd) ? 0x01 : 0x29;
    e.byte(w == 8 ? opcode - 1 : opcode);
    e.byte(0xC8);
  } else if (in.aux == kOvfUmul) {
    e.byte(w == 8 ? 0xF6 : 0xF7);  // mul cl/cx/ecx/rcx
    e.byte(0xE1);
  } else if (w == 8) {
    e.byte(0xF6), e.byte(0xE9);  // imul cl
  } else {
    e.byte(0x0F), e.byte(0xAF), e.byte(0xC1);  // imul r, rcx
  }
  bool is_signed = in.aux == kOvfSadd || in.aux == kOvfSsub || in.aux == kOvfSmul;
  e.byte(0x0F), e.byte(is_signed ? 0x90 : 0x92), e.byte(0xC1);  // seto/setc cl
}

// Bit manipulation and min/max/saturation intrinsics, without instructions beyond the
// x86-64 baseline (no popcnt, lzcnt or tzcnt): rax = f(rax[, rcx]) at width w. The
// funnel shifts, with three operands, are encode_funnel's.
KILN_HD inline void encode_bit_op(Emitter& e, uint32_t kind, uint32_t w) {
  switch (kind) {
    case kBitCtpop: {  // SWAR population count of the zero-extended value
      mov_rr(e, RCX, RAX);
      e.byte(0x48), e.byte(0xD1), e.byte(0xE9);  // shr rcx, 1
      mov_imm(e, RDX, 0x5555555555555555ull);
      e.byte(0x48), e.byte(0x21), e.byte(0xD1);  // and rcx, rdx
      e.byte(0x48), e.byte(0x29), e.byte(0xC8);  // sub rax, rcx
      mov_imm(e, RDX, 0x3333333333333333ull);
      mov_rr(e, RCX, RAX);
      e.byte(0x48), e.byte(0x21), e.byte(0xD0);                // and rax, rdx
      e.byte(0x48), e.byte(0xC1), e.byte(0xE9), e.byte(0x02);  // shr rcx, 2
      e.byte(0x48), e.byte(0x21), e.byte(0xD1);                // and rcx, rdx
      e.byte(0x48), e.byte(0x01), e.byte(0xC8);                // add rax, rcx
      mov_rr(e, RCX, RAX);
      e.byte(0x48), e.byte(0xC1), e.byte(0xE9), e.byte(0x04);  // shr rcx, 4
      e.byte(0x48), e.byte(0x01), e.byte(0xC8);                // add rax, rcx
      mov_imm(e, RDX, 0x0F0F0F0F0F0F0F0Full);
      e.byte(0x48), e.byte(0x21), e.byte(0xD0);  // and rax, rdx
      mov_imm(e, RDX, 0x0101010101010101ull);
      e.byte(0x48), e.byte(0x0F), e.byte(0xAF), e.byte(0xC2);  // imul rax, rdx
      e.byte(0x48), e.byte(0xC1), e.byte(0xE8), e.byte(0x38);  // shr rax, 56
      return;
    }
    case kBitCtlz:  // (w - 1) - bsr(x), and w for zero
      mov_imm(e, RCX, ~0ull);
      e.byte(0x48), e.byte(0x0F), e.byte(0xBD), e.byte(0xC0);  // bsr rax, rax
      e.byte(0x48), e.byte(0x0F), e.byte(0x44), e.byte(0xC1);  // cmovz rax, rcx
      e.byte(0x48), e.byte(0xF7), e.byte(0xD8);                // neg rax
      add_imm(e, RAX, static_cast<int32_t>(w - 1));
      return;
    case kBitCttz:  // bsf(x), and w for zero
      mov_imm(e, RCX, w);
      e.byte(0x48), e.byte(0x0F), e.byte(0xBC), e.byte(0xC0);  // bsf rax, rax
      e.byte(0x48), e.byte(0x0F), e.byte(0x44), e.byte(0xC1);  // cmovz rax, rcx
      return;
    case kBitBitreverse: {  // swap bits, pairs and nibbles, then bytes; w bits end on top
      const uint64_t masks[3] = {0x5555555555555555ull, 0x3333333333333333ull, 0x0F0F0F0F0F0F0F0Full};
      for (uint32_t k = 0; k < 3; ++k) {
        const uint32_t s = 1u << k;
        mov_rr(e, RCX, RAX);
        e.byte(0x48), e.byte(0xC1), e.byte(0xE9), e.byte(s);  // shr rcx, s
        mov_imm(e, RDX, masks[k]);
        e.byte(0x48), e.byte(0x21), e.byte(0xD1);             // and rcx, rdx
        e.byte(0x48), e.byte(0x21), e.byte(0xD0);             // and rax, rdx
        e.byte(0x48), e.byte(0xC1), e.byte(0xE0), e.byte(s);  // shl rax, s
        e.byte(0x48), e.byte(0x09), e.byte(0xC8);             // or rax, rcx
      }
      e.byte(0x48), e.byte(0x0F), e.byte(0xC8);  // bswap rax
      if (w < 64) e.byte(0x48), e.byte(0xC1), e.byte(0xE8), e.byte(64 - w);  // shr rax, 64 - w
      return;
    }
    case kBitBswap:
      if (w == 64) e.byte(0x48), e.byte(0x0F), e.byte(0xC8);        // bswap rax
      else if (w == 32) e.byte(0x0F), e.byte(0xC8);                 // bswap eax
      else e.byte(0x66), e.byte(0xC1), e.byte(0xC0), e.byte(0x08);  // rol ax, 8
      return;
    case kBitAbs:
      sign_extend(e, RAX, w);
      mov_rr(e, RCX, RAX);
      e.byte(0x48), e.byte(0xF7), e.byte(0xD8);                // neg rax
      e.byte(0x48), e.byte(0x0F), e.byte(0x48), e.byte(0xC1);  // cmovs rax, rcx
      return;
    case kBitUaddSat:
      e.byte(0x48), e.byte(0x01), e.byte(0xC8);  // add rax, rcx
      mov_imm(e, RCX, w == 64 ? ~0ull : (1ull << w) - 1);
      if (w == 64) e.byte(0x48), e.byte(0x0F), e.byte(0x42), e.byte(0xC1);  // cmovc rax, rcx
      else
        e.byte(0x48), e.byte(0x39), e.byte(0xC8), e.byte(0x48), e.byte(0x0F), e.byte(0x47), e.byte(0xC1);  // cmp; cmova
      return;
    case kBitUsubSat:
      e.byte(0x48), e.byte(0x29), e.byte(0xC8);                // sub rax, rcx
      e.byte(0xB9), e.u32(0);                                  // mov ecx, 0 (keeps flags)
      e.byte(0x48), e.byte(0x0F), e.byte(0x42), e.byte(0xC1);  // cmovc rax, rcx
      return;
    case kBitSaddSat:
    case kBitSsubSat: {
      // Both left-aligned, so that the 64-bit add or sub overflows exactly when the
      // w-bit one does. On overflow the operands' signs say which way it went: for
      // add both have a's sign, for sub a's sign is the one the true result keeps. So
      // the limit is INT_MAX when a >= 0, else INT_MIN: not (a sar 63), bit 63 flipped.
      uint32_t pad = 64 - w;
      if (pad) e.byte(0x48), e.byte(0xC1), e.byte(0xE0), e.byte(pad);  // shl rax, pad
      if (pad) e.byte(0x48), e.byte(0xC1), e.byte(0xE1), e.byte(pad);  // shl rcx, pad
      mov_rr(e, RDX, RAX);
      e.byte(0x48), e.byte(0xC1), e.byte(0xFA), e.byte(0x3F);                // sar rdx, 63
      e.byte(0x48), e.byte(0xF7), e.byte(0xD2);                              // not rdx
      e.byte(0x48), e.byte(0x0F), e.byte(0xBA), e.byte(0xFA), e.byte(0x3F);  // btc rdx, 63
      e.byte(0x48), e.byte(kind == kBitSaddSat ? 0x01 : 0x29), e.byte(0xC8);  // add/sub rax, rcx
      e.byte(0x48), e.byte(0x0F), e.byte(0x40), e.byte(0xC2);                 // cmovo rax, rdx
      if (pad) e.byte(0x48), e.byte(0xC1), e.byte(0xE8), e.byte(pad);  // shr rax, pad
      return;
    }
    case kBitUcmp:
    case kBitScmp: {
      bool s = kind == kBitScmp;
      if (s) sign_extend(e, RAX, w), sign_extend(e, RCX, w);
      e.byte(0x48), e.byte(0x39), e.byte(0xC8);             // cmp rax, rcx
      e.byte(0x0F), e.byte(s ? 0x9F : 0x97), e.byte(0xC2);  // setg/seta dl
      e.byte(0x0F), e.byte(s ? 0x9C : 0x92), e.byte(0xC1);  // setl/setb cl
      e.byte(0x0F), e.byte(0xB6), e.byte(0xC2);             // movzx eax, dl
      e.byte(0x0F), e.byte(0xB6), e.byte(0xC9);             // movzx ecx, cl
      e.byte(0x48), e.byte(0x29), e.byte(0xC8);             // sub rax, rcx
      return;
    }
    default: {  // min and max: cmp, then take rcx when it is the answer
      bool s = kind == kBitSmin || kind == kBitSmax;
      if (s) sign_extend(e, RAX, w), sign_extend(e, RCX, w);
      e.byte(0x48), e.byte(0x39), e.byte(0xC8);  // cmp rax, rcx
      uint32_t cc = kind == kBitUmin ? 0x47 : kind == kBitUmax ? 0x42 : kind == kBitSmin ? 0x4F : 0x4C;
      e.byte(0x48), e.byte(0x0F), e.byte(cc), e.byte(0xC1);  // cmova/cmovb/cmovg/cmovl rax, rcx
      return;
    }
  }
}


// A pointer that is a (16-byte or less aligned) alloca of this function is a fixed
// frame address: loads and stores through it address [rbp + disp] directly.
// So is a getelementptr with one constant offset (within 512 MiB) from such an alloca.
// The shape needs no frame layout; frames are at most 1 GiB (kMaxFrameBytes, checked
// by the exporter and the flat file reader), so every such displacement fits 32 bits.
KILN_HD inline bool frame_shape(const FlatModuleView& m, const FlatOperand& p, uint32_t* alloca_inst, int64_t* offset) {
  if (p.kind != kOperandValue) return false;
  const FlatInst& a = m.insts[p.index];
  if (a.op == kOpGep && a.operand_count == 1) {
    const FlatOperand& base = m.operands[a.first_operand];
    if (base.kind != kOperandValue || a.imm < -kMaxFrameBytes / 2 || a.imm > kMaxFrameBytes / 2) return false;
    const FlatInst& b = m.insts[base.index];
    if (b.op != kOpAlloca || b.imm > 16) return false;
    *alloca_inst = base.index;
    *offset = a.imm;
    return true;
  }
  if (a.op != kOpAlloca || a.imm > 16) return false;
  *alloca_inst = p.index;
  *offset = 0;
  return true;
}
KILN_HD inline bool is_frame_shape(const FlatModuleView& m, const FlatOperand& p) {
  uint32_t alloca_inst = 0;
  int64_t offset = 0;
  return frame_shape(m, p, &alloca_inst, &offset);
}
KILN_HD inline FlatOperand value_operand(uint32_t inst) { return FlatOperand{kOperandValue, 0, 0, 0, inst, 0}; }
// The rbp-relative displacement of a frame-shaped pointer.
KILN_HD inline bool frame_address(const FlatModuleView& m, const StampLayout& l, const FlatOperand& p, int32_t* disp) {
  uint32_t alloca_inst = 0;
  int64_t offset = 0;
  if (!frame_shape(m, p, &alloca_inst, &offset)) return false;
  *disp = static_cast<int32_t>(-static_cast<int64_t>(l.alloca_mem[alloca_inst]) + offset);
  return true;
}
// fadd, fsub, fmul and fdiv of doubles: their result goes from xmm0 to its slot
// (movsd), never through rax.
KILN_HD inline bool double_arithmetic(const FlatInst& in) {
  return in.op == kOpFloat && in.aux <= kFloatDiv && in.width == 64;
}

// Templates that end with their scalar result in rax (and then store it to its slot).
KILN_HD inline bool result_in_rax(const FlatInst& in) {
  if (in.width == 0 || in.width == kWideBits) return false;  // 128 bits live in their slot
  if (is_operand_only_op(in.op)) return true;
  if (double_arithmetic(in)) return false;  // stored from xmm0 (encode_float_arithmetic)
  switch (in.op) {
    case kOpAlloca:
    case kOpLoad:
    case kOpGep:
    case kOpExtract:
    case kOpBitOp:
    case kOpCall:
    case kOpFloat:
      return true;
    default:
      return false;
  }
}

// Instructions a load may be moved past (it is read later, by its user): they neither
// read nor write memory that pointers reach (frame slots are not such memory) and call
// nothing. Loads are not among them either, so folded loads never change the order of
// memory accesses, which keeps atomic and volatile loads (the flat IR cannot tell them
// apart) as they were.
KILN_HD inline bool touches_no_memory(const FlatInst& in) {
  if (is_operand_only_op(in.op)) return true;
  switch (in.op) {
    case kOpNop:
    case kOpAlloca:
    case kOpGep:
    case kOpExtract:
    case kOpInsert:
    case kOpOverflow:
      return true;
    default:
      return false;
  }
}

// Where argument a (module-wide index) of function f comes (SysvArgs).
KILN_HD inline ArgPlace arg_place(const FlatModuleView& m, const FlatFunction& f, uint32_t a) {
  SysvArgs place;
  ArgPlace p{};
  for (uint32_t k = f.first_arg; k <= a; ++k)
    p = place.next(is_float_arg(f, k - f.first_arg), m.arg_widths[k] == kWideBits);
  return p;
}

// How far into its function's entry block a store may be for store_from_arg_register.
constexpr uint32_t kArgStoreWindow = 32;

// The shape of a store that store_from_arg_register may make: of an argument that comes
// in rdi, rsi, r8 or r9 (of a standard width up to 64 bits), to a frame address,
// without a fence, in the first kArgStoreWindow instructions of its function's entry
// block. (rdx and rcx are left out: templates of instructions that touch no memory
// use them.)
KILN_HD inline bool arg_store_shape(const FlatModuleView& m, uint32_t i) {
  const FlatInst& in = m.insts[i];
  if (in.op != kOpStore || (in.aux & kStoreSeqCst)) return false;
  const FlatBlock& b = m.blocks[in.block];
  const FlatFunction& f = m.functions[b.function];
  if (in.block != f.first_block || i - b.first_inst >= kArgStoreWindow) return false;
  const FlatOperand* ops = m.operands + in.first_operand;
  const uint32_t a = ops[0].index;
  if (ops[0].kind != kOperandArg || a < f.first_arg || a >= f.first_arg + f.arg_count) return false;
  if (ops[0].width != m.arg_widths[a] || ops[0].width > 64 || !is_standard_width(ops[0].width)) return false;
  if (!is_frame_shape(m, ops[1]) || is_float_arg(f, a - f.first_arg)) return false;
  const ArgPlace p = arg_place(m, f, a);
  return p.in_register && p.reg != 2 && p.reg != 3;
}

// Instructions that touch no memory and whose templates leave rdi, rsi, r8 and r9
// alone: all of them but a select of i128 (which tests its condition in rdi).
KILN_HD inline bool keeps_argument_registers(const FlatInst& in) {
  return touches_no_memory(in) && !(in.op == kOpSelect && in.width == kWideBits);
}

// A store of an argument to a frame address that takes the argument from the register
// it came in (which the prologue normalised), not from its slot: one of
// arg_store_shape, before which the entry block has only instructions that
// keeps_argument_registers and other such stores. It
// stays where it is, so the debugger sees it at its own line. rustc's spills of
// arguments for debug information are such stores.
KILN_HD inline bool store_from_arg_register(const FlatModuleView& m, uint32_t i) {
  if (!arg_store_shape(m, i)) return false;
  for (uint32_t j = m.blocks[m.insts[i].block].first_inst; j < i; ++j)
    if (!keeps_argument_registers(m.insts[j]) && !arg_store_shape(m, j)) return false;
  return true;
}

// Instructions that emit no code whatever the homes: kOpNop (lifetime markers, dead
// values) and frame addresses. rax passes through them unchanged.
KILN_HD inline bool emits_nothing(const FlatModuleView& m, uint32_t i) {
  return m.insts[i].op == kOpNop || is_frame_shape(m, value_operand(i));
}

// push rbp; mov rbp, rsp, or with a bias lea rbp, [rsp - kFrameBias]; sub rsp,
// frame; then every argument into its slot.
// A frame larger than a page is taken a page at a time, each page touched before the
// next, as LLVM's inline stack probes do ("probe-stack", which rustc puts on every
// function): one `sub rsp` over the guard page below a thread's stack would land in
// whatever memory lies beyond it, and the frame's stores would write there instead of
// faulting. What is left (under a page) is taken after the loop; the caller's pushes
// and the frame's own stores touch it. r11 is free here (no argument is in it).
constexpr uint32_t kStackPage = 4096;
KILN_HD inline void probe_frame(Emitter& e, uint32_t frame) {
  const uint32_t pages = frame / kStackPage * kStackPage, rest = frame - pages;
  e.byte(0x49), e.byte(0x89), e.byte(0xE3);                          // mov r11, rsp
  e.byte(0x49), e.byte(0x81), e.byte(0xEB), e.u32(pages);            // sub r11, pages
  e.byte(0x48), e.byte(0x81), e.byte(0xEC), e.u32(kStackPage);       // loop: sub rsp, 4096
  e.byte(0x48), e.byte(0xC7), e.byte(0x04), e.byte(0x24), e.u32(0);  // mov qword [rsp], 0
  e.byte(0x4C), e.byte(0x39), e.byte(0xDC);                          // cmp rsp, r11
  e.byte(0x75), e.byte(0xEC);                                        // jne loop (-20)
  if (rest >= 128) {
    e.byte(0x48), e.byte(0x81), e.byte(0xEC), e.u32(rest);  // sub rsp, imm32
  } else if (rest) {
    e.byte(0x48), e.byte(0x83), e.byte(0xEC), e.byte(rest);  // sub rsp, imm8
  }
}

KILN_HD inline void encode_prologue(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t fn) {
  const FlatFunction& f = m.functions[fn];
  uint32_t frame = l.frame_size[fn];
  e.frame_bias = frame_bias(frame);
  e.byte(0x55);
  if (e.frame_bias) {
    e.byte(0x48), e.byte(0x8D), e.byte(0x6C), e.byte(0x24);  // lea rbp, [rsp + disp8]
    e.byte(static_cast<uint32_t>(-e.frame_bias) & 0xff);
  } else {
    e.byte(0x48), e.byte(0x89), e.byte(0xE5);  // mov rbp, rsp
  }
  if (frame > kStackPage) {
    probe_frame(e, frame);
  } else if (frame >= 128) {
    e.byte(0x48), e.byte(0x81), e.byte(0xEC);  // sub rsp, imm32
    e.u32(frame);
  } else if (frame) {
    e.byte(0x48), e.byte(0x83), e.byte(0xEC);  // sub rsp, imm8
    e.byte(frame);
  }
  // Each argument from where SysvArgs says the caller put it (the caller's stack
  // arguments start 16 bytes above the frame's top) into its slot.
  SysvArgs place;
  for (uint32_t a = 0; a < f.arg_count; ++a) {
    const int32_t slot = -l.arg_slot[f.first_arg + a];
    const bool wide = m.arg_widths[f.first_arg + a] == kWideBits, is_float = is_float_arg(f, a);
    const ArgPlace p = place.next(is_float, wide);
    const int32_t stack = static_cast<int32_t>(16 + 8 * p.stack_slot);
    if (wide) {
      if (p.in_register) {
        store_wide(e, slot, argument_register(p.reg), argument_register(p.reg + 1));
      } else {
        load64(e, RAX, stack);
        load64(e, RCX, stack + 8);
        store_wide(e, slot, RAX, RCX);
      }
      continue;
    }
    uint32_t reg = RAX;
    if (!p.in_register) load64(e, RAX, stack);
    else if (is_float) move_from_xmm(e, RAX, p.reg, 64);
    else reg = argument_register(p.reg);
    normalize(e, reg, m.arg_widths[f.first_arg + a]);
    store64(e, slot, reg);
  }
}
// How many such instructions rax_holds looks past.
constexpr uint32_t kQuietWindow = 8;

// The instruction after i in its block that the code of i is followed by: the next one,
// past at most kQuietWindow that emit nothing; or the block's end when there is none.
KILN_HD inline uint32_t next_with_code(const FlatModuleView& m, uint32_t i) {
  const FlatBlock& b = m.blocks[m.insts[i].block];
  const uint32_t end = b.first_inst + b.inst_count;
  uint32_t j = i + 1;
  while (j < end && j <= i + kQuietWindow && emits_nothing(m, j)) ++j;
  return j < end && j <= i + kQuietWindow + 1 ? j : end;
}

// The instruction before i in its block that i's code follows: the one before, past at
// most kQuietWindow that emit nothing; or i itself when there is none.
KILN_HD inline uint32_t prev_with_code(const FlatModuleView& m, uint32_t i) {
  const uint32_t first = m.blocks[m.insts[i].block].first_inst;
  for (uint32_t j = i; j > first && i - j <= kQuietWindow;) {
    --j;
    if (!emits_nothing(m, j)) return j;
  }
  return i;
}

KILN_HD inline bool fits_store_imm(const FlatOperand& v);
// A scalar load from a frame address right after (prev_with_code) a store of a value of
// the same standard width to the same frame address, which that store wrote from rax
// (every store to a frame address does, but a constant's as an immediate and an
// argument's from its register, store_from_arg_register): rax holds the loaded value
// already, normalised, and the load reads no memory. The frame's
// memory is the function's own, so no other code can have written it in between;
// where another thread holds its address, reading the value stored is one of the
// outcomes a load may have (a volatile load of the frame, which the flat IR cannot
// tell apart, reads what was stored all the same).
KILN_HD inline bool load_forwards(const FlatModuleView& m, uint32_t i) {
  const FlatInst& in = m.insts[i];
  uint32_t load_alloca = 0, store_alloca = 0;
  int64_t load_offset = 0, store_offset = 0;
  if (in.op != kOpLoad || in.width == 0 || in.width > 64 || !is_standard_width(in.width)) return false;
  if (!frame_shape(m, m.operands[in.first_operand], &load_alloca, &load_offset)) return false;
  const uint32_t j = prev_with_code(m, i);
  const FlatInst& st = m.insts[j];
  if (j == i || st.op != kOpStore || store_from_arg_register(m, j)) return false;
  const FlatOperand* ops = m.operands + st.first_operand;
  if (ops[0].width != in.width || fits_store_imm(ops[0])) return false;
  return frame_shape(m, ops[1], &store_alloca, &store_offset) && store_alloca == load_alloca &&
      store_offset == load_offset;
}

// rax_holds for the value of instruction v, within the window before i.
KILN_HD inline bool rax_holds_near(const FlatModuleView& m, const uint8_t* home, uint32_t i, uint32_t v) {
  if (home && read_in_place(home[v])) return false;
  const FlatInst& in = m.insts[i];
  const FlatInst& prev = m.insts[v];
  if (prev.block != in.block || !result_in_rax(prev) || is_frame_shape(m, value_operand(v)))
    return false;  // frame addresses emit nothing
  for (uint32_t j = v + 1; j < i; ++j)
    if (!emits_nothing(m, j)) return false;
  return true;
}
// True when `op` is the result of an instruction before `i` in the same block, with
// only instructions that emit nothing between them (at most kQuietWindow), and that
// instruction's template ends with the result in rax: then `i` need not load it again.
// Depends only on those instructions (and whether the producer was folded into its
// user, home: no code at all), so sizes stay exact.
// Its first question inlined: most operands (every one of a call's is asked) are no
// value within the window.
KILN_HD KILN_ALWAYS_INLINE bool rax_holds(const FlatModuleView& m, const uint8_t* home, uint32_t i,
                                          const FlatOperand& op) {
  if (op.kind != kOperandValue || op.index >= i || i - op.index > kQuietWindow + 1) return false;
  return rax_holds_near(m, home, i, op.index);
}

// True when a terminator copies values into successors' phis (which goes through rax).
KILN_HD inline bool has_phi_copies(const FlatModuleView& m, const FlatInst& term) {
  for (uint32_t k = 0; k < term.operand_count; ++k) {
    const FlatOperand& op = m.operands[term.first_operand + k];
    if (op.kind != kOperandBlock) continue;
    const FlatBlock& b = m.blocks[op.index];
    if (b.inst_count && m.insts[b.first_inst].op == kOpPhi) return true;
  }
  return false;
}

// Calls f(q, v) for each operand v that a phi q of a successor of `term` takes from
// term's block, once per edge (a branch to one block twice visits its phis twice),
// while f returns true; false where f stopped it. The one walk over those operands
// that the phi copies' questions ask (copies_keep_flags, phi_slot_taken).
template <class F>
KILN_HD inline bool each_phi_operand_from(const FlatModuleView& m, const FlatInst& term, F&& f) {
  for (uint32_t k = 0; k < term.operand_count; ++k) {
    const FlatOperand& to = m.operands[term.first_operand + k];
    if (to.kind != kOperandBlock) continue;
    const FlatBlock& b = m.blocks[to.index];
    for (uint32_t q = b.first_inst; q < b.first_inst + b.inst_count && m.insts[q].op == kOpPhi; ++q) {
      const FlatInst& phi = m.insts[q];
      for (uint32_t j = 0; j + 1 < phi.operand_count; j += 2)
        if (m.operands[phi.first_operand + j + 1].index == term.block && !f(q, m.operands[phi.first_operand + j]))
          return false;
    }
  }
  return true;
}

// True when every phi copy a branch makes leaves the flags alone: scalar phis only,
// each value moved by mov or lea (load_operand; not a zero's xor, a symbol's added
// offset, an i1 normalised or an odd width assembled by shifts), and the store. A
// compare before the branch then keeps its flags across the copies for the jump.
KILN_HD inline bool copies_keep_flags(const FlatModuleView& m, const FlatInst& term) {
  return each_phi_operand_from(m, term, [&](uint32_t q, const FlatOperand& v) {
    const uint32_t width = m.insts[q].width;
    if (width == 0 || width == kWideBits) return false;
    return (v.kind == kOperandValue && v.width != 1 && is_standard_width(v.width)) || v.kind == kOperandArg ||
        (v.kind == kOperandSymbol && v.imm == 0) || (v.kind == kOperandConst && v.imm != 0);
  });
}

// Where SysvArgs places a call's arguments, operands 1 to count - 1 of `ops`.
KILN_HD inline SysvArgs call_arg_places(const FlatOperand* ops, uint32_t count) {
  SysvArgs all;
  for (uint32_t a = 1; a < count; ++a) all.next(ops[a].flags & kOperandFloat, ops[a].width == kWideBits);
  return all;
}
// The first argument of call or invoke `i` (`count` operands: callee and arguments),
// not an i128, that the instruction before left in rax (rax_holds); 0 if none.
KILN_HD inline uint32_t rax_held_argument(const FlatModuleView& m, const uint8_t* home, uint32_t i, uint32_t count) {
  const FlatOperand* ops = m.operands + m.insts[i].first_operand;
  for (uint32_t a = 1; a < count; ++a)
    if (ops[a].width != kWideBits && rax_holds(m, home, i, ops[a])) return a;
  return 0;
}
// Whether encode_call may move a held argument into its register: no argument goes to
// the stack or to an xmm register (those go through rax first) and, for an invoke, no
// phi copies come before the call. `all`: the arguments' places (call_arg_places).
KILN_HD inline bool rax_argument_kept(const FlatModuleView& m, const FlatInst& in, const SysvArgs& all) {
  return !all.stacked && !all.floats && !(in.op == kOpInvoke && has_phi_copies(m, in));
}
// The argument of call or invoke `i` that encode_call moves from rax into its argument
// register instead of loading it (rax_held_argument, where rax_argument_kept); or -1.
// The argument is looked for first: most calls have none, and need no more questions.
KILN_HD inline int call_rax_argument(const FlatModuleView& m, const uint8_t* home, uint32_t i, uint32_t count) {
  const uint32_t held = rax_held_argument(m, home, i, count);
  if (!held) return -1;
  const FlatInst& in = m.insts[i];
  return rax_argument_kept(m, in, call_arg_places(m.operands + in.first_operand, count)) ? static_cast<int>(held) : -1;
}

// A scalar select whose condition is the scalar icmp right before it (prev_with_code)
// and whose other operands are not that compare: the compare's template loads the
// select's two values into rdx and rsi before it compares, and leaves no result but
// its flags (compare_feeds_select), on which the select picks with one cmov. Looks
// only at the instructions (the GPU's form decides homes with it, stamp_wide.h).
KILN_HD inline bool select_fuses_compare(const FlatModuleView& m, uint32_t i) {
  const FlatInst& in = m.insts[i];
  if (in.op != kOpSelect || in.width == 0 || in.width == kWideBits) return false;
  const FlatOperand* ops = m.operands + in.first_operand;
  if (ops[0].kind != kOperandValue || ops[0].index >= i) return false;
  const uint32_t c = ops[0].index;
  const FlatInst& cmp = m.insts[c];
  if (cmp.op != kOpIcmp || cmp.block != in.block || m.operands[cmp.first_operand].width == kWideBits) return false;
  for (uint32_t k = 1; k < 3; ++k)
    if (ops[k].kind == kOperandValue && ops[k].index == c) return false;
  for (uint32_t j = c + 1; j < i; ++j)
    if (!emits_nothing(m, j)) return false;
  return true;
}

// Which operand of instruction `i` its template takes first, into rax, through
// load_rax (or, for a call, from rax: call_rax_argument), so that the instruction
// before may leave it there; or -1. It mirrors
// encode_inst and, like rax_holds, looks only at the instructions themselves.
KILN_HD inline int rax_operand(const FlatModuleView& m, const uint8_t* home, uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  switch (in.op) {
    case kOpCopy:
    case kOpTrunc:
    case kOpSext:
    case kOpAdd:
    case kOpSub:
    case kOpMul:
    case kOpAnd:
    case kOpOr:
    case kOpXor:
    case kOpShl:
    case kOpLshr:
    case kOpAshr:
    case kOpUdiv:
    case kOpSdiv:
    case kOpUrem:
    case kOpSrem:
    case kOpIcmp:
    case kOpBitOp:
    case kOpFloat:
      return 0;
    case kOpLoad:
      return is_frame_shape(m, ops[0]) ? -1 : 0;
    case kOpGep:
      return is_frame_shape(m, value_operand(i)) ? -1 : 0;
    case kOpStore:
      if (ops[0].width != 0 && rax_holds(m, home, i, ops[0])) return 0;  // the value, stored from rax
      return is_frame_shape(m, ops[1]) ? -1 : 1;                   // else the address
    case kOpCondBr:  // after phi copies only a compare's flags (compare_feeds_branch)
      if (!has_phi_copies(m, in)) return 0;
      return ops[0].kind == kOperandValue && m.insts[ops[0].index].op == kOpIcmp && copies_keep_flags(m, in) ? 0 : -1;
    case kOpSwitch:
      return has_phi_copies(m, in) ? -1 : 0;
    case kOpSelect:  // the condition, as flags (select_fuses_compare)
      return select_fuses_compare(m, i) ? 0 : -1;
    case kOpRet: {
      const FlatFunction& f = m.functions[m.blocks[in.block].function];
      return in.operand_count && !(f.flags & (kFnHasSret | kFnRetPair | kFnRetVector | kFnRetVector256)) ? 0 : -1;
    }
    case kOpCall:
      return call_rax_argument(m, home, i, in.operand_count);
    case kOpInvoke:
      return call_rax_argument(m, home, i, in.operand_count - 2);
    default:
      return -1;
  }
}

// load_operand into rax, unless rax already holds it.
KILN_HD inline void load_rax(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i,
                             const FlatOperand& op) {
  if (!rax_holds(m, l.home, i, op)) load_operand(e, l, op, RAX);
}

// A call's arguments, the call itself and its result; `count` operands (callee + args).
KILN_HD KILN_CPU_NOINLINE inline void encode_call(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i,
                                                  uint32_t count) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  int32_t dst = in.slot_size ? slot_disp(l, i) : 0;
  // Arguments where SysvArgs places them, the stack's from [rsp]; the area keeps rsp
  // 16-byte aligned at the call. Three passes over the arguments: their places (for
  // the area's size), then the stack's and the xmm registers' (through rax and rcx),
  // then the integer registers', which nothing loads through afterwards. Most calls
  // have only the last: every argument in an integer register (`in_registers`).
  // The places (call_arg_places) and the argument rax holds (rax_held_argument, the
  // first one), in one walk over the arguments; call_rax_argument's with the places at
  // hand: the held argument is kept only where it may be.
  SysvArgs all;
  uint32_t rax_held = 0;
  for (uint32_t a = 1; a < count; ++a) {
    all.next(ops[a].flags & kOperandFloat, ops[a].width == kWideBits);
    if (!rax_held && ops[a].width != kWideBits && rax_holds(m, l.home, i, ops[a])) rax_held = a;
  }
  const bool in_registers = !all.stacked && !all.floats;
  if (!in_registers) rax_held = 0;
  const int held = rax_held && rax_argument_kept(m, in, all) ? static_cast<int>(rax_held) : -1;
  uint32_t reserve = (all.stacked * 8 + 15) / 16 * 16;
  if (reserve) alu_imm(e, RSP, 5, static_cast<int32_t>(reserve));  // sub rsp, reserve
  SysvArgs place;
  for (uint32_t a = 1; a < count && !in_registers; ++a) {
    const FlatOperand& op = ops[a];
    const bool is_float = op.flags & kOperandFloat, wide = op.width == kWideBits;
    const ArgPlace p = place.next(is_float, wide);
    if (p.in_register) {
      if (op.flags & (kOperandVector | kOperandVector256)) {
        const uint32_t bytes = op.flags & kOperandVector256 ? 32 : 16;
        if (op.kind == kOperandValue) move_vector_arg(e, bytes, p.reg, slot_disp(l, op.index), true);
        else zero_vector_arg(e, bytes, p.reg);
      } else if (is_float) {
        load_operand(e, l, op, RAX), movq_to_xmm(e, p.reg, RAX);
      }
      continue;
    }
    if (wide) {
      load_wide(e, l, op, RAX, RCX);
      e.byte(0x48), e.byte(0x89), e.byte(0x8C), e.byte(0x24);  // mov [rsp + disp32 + 8], rcx
      e.u32(8 * p.stack_slot + 8);
    } else {
      load_operand(e, l, op, RAX);
      if (op.flags & kOperandSignExt) sign_extend(e, RAX, op.width);
    }
    e.byte(0x48), e.byte(0x89), e.byte(0x84), e.byte(0x24);  // mov [rsp + disp32], rax
    e.u32(8 * p.stack_slot);
  }
  place = SysvArgs{};
  const bool one_each = in_registers && all.ints == count - 1;  // one register each, in order: no i128
  for (uint32_t a = 1; a < count; ++a) {
    const FlatOperand& op = ops[a];
    uint32_t reg = one_each ? argument_register(a - 1) : 0;
    if (!one_each) {
      const bool is_float = op.flags & kOperandFloat, wide = op.width == kWideBits;
      const ArgPlace p = place.next(is_float, wide);
      if (!p.in_register || is_float) continue;
      if (wide) {
        load_wide(e, l, op, argument_register(p.reg), argument_register(p.reg + 1));
        continue;
      }
      reg = argument_register(p.reg);
    }
    if (static_cast<int>(a) == held) mov_rr(e, reg, RAX);
    else load_operand(e, l, op, reg);
    if (op.flags & kOperandSignExt) sign_extend(e, reg, op.width);
  }
  if (ops[0].kind != kOperandSymbol) load_operand(e, l, ops[0], R11);
  if ((in.aux & kCallVarargs) && all.floats) e.byte(0xB8), e.u32(all.floats);  // mov eax, n: vector registers used
  else if (in.aux & kCallVarargs) e.byte(0x31), e.byte(0xC0);          // xor eax, eax: none
  e.call_begin = e.pos;
  if (ops[0].kind == kOperandSymbol) {
    e.byte(0xE8);
    e.reloc(kRelocPlt32, ops[0].index, ops[0].imm - 4);
    e.u32(0);
  } else {
    e.byte(0x41), e.byte(0xFF), e.byte(0xD3);  // call r11
  }
  e.call_end = e.pos;
  if (reserve) alu_imm(e, RSP, 0, static_cast<int32_t>(reserve));  // add rsp, reserve
  if (in.width == kWideBits) {  // an i128 comes back in rax (low) and rdx (high)
    store_wide(e, dst, RAX, RDX);
  } else if (in.aux & (kCallRetVector | kCallRetVector256)) {  // in xmm0 or ymm0
    move_vector_arg(e, in.aux & kCallRetVector256 ? 32 : 16, 0, dst, false);
  } else if (in.width && l.home && l.home[i] == kHomeUnused) {
    return;                                           // nothing reads it
  } else if (in.width && (in.aux & kCallRetFloat)) {  // in xmm0
    move_from_xmm(e, RAX, 0, in.width);  // zero-extended (the width is 32 or 64: checked)
    store_result(e, l, i);
  } else if (in.width) {
    normalize(e, RAX, in.width);
    store_result(e, l, i);
  } else if (in.slot_size) {  // two leaves, returned in rax and rdx (or xmm0 and xmm1)
    uint32_t w0 = in.aux32 & 0xff, w1 = (in.aux32 >> 8) & 0xff;
    pair_from_return_registers(e, (in.aux32 >> 16) & 3);
    store_narrow(e, dst, RAX, bytes_of_width(w0));
    store_narrow(e, dst + static_cast<int32_t>(in.imm), RDX, bytes_of_width(w1));
  }
}

// Where a scalar operand is in the frame as a whole 64-bit word, in its normal form, so
// that an instruction can take it as a memory operand instead of loading it first: a
// slot, a pool slot or an argument's slot (load_operand reads those with load64), or a
// 64-bit value read in place. False for anything else.
KILN_HD inline bool operand_in_frame(const StampLayout& l, const FlatOperand& op, int32_t* disp) {
  if (op.kind == kOperandArg) {
    *disp = -l.arg_slot[op.index];
    return true;
  }
  if (op.kind != kOperandValue || !l.home) return false;
  const uint8_t h = l.home[op.index];
  if (h != kHomeSlot && h != kHomePool && !(read_in_place(h) && op.width == 64)) return false;
  *disp = slot_disp(l, op.index);
  return true;
}

// A binary operation: the left operand in rax, the right one an immediate, a memory
// operand (operand_in_frame) or in rcx.
KILN_HD KILN_CPU_NOINLINE inline void encode_binary_op(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                       uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  int32_t at = 0;
  load_rax(e, m, l, i, ops[0]);
  if (encode_binary_imm(e, in, ops[1])) {
  } else if (alu_ext(in.op) >= 0 && operand_in_frame(l, ops[1], &at)) {
    e.byte(0x48), e.byte((static_cast<uint32_t>(alu_ext(in.op)) << 3) | 3);  // op rax, [rbp + at]
    mem_operand(e, RAX, RBP, at);
    normalize(e, RAX, in.width);
  } else if (in.op == kOpMul && operand_in_frame(l, ops[1], &at)) {
    e.byte(0x48), e.byte(0x0F), e.byte(0xAF);  // imul rax, [rbp + at]: the product's low bits
    mem_operand(e, RAX, RBP, at);              // need only the operands' low bits
    normalize(e, RAX, in.width);
  } else {
    load_operand(e, l, ops[1], RCX);
    encode_binary(e, in);
  }
  store_result(e, l, i);
}

// An icmp whose result lives only in rax and goes to the conditional branch right
// after it (next_with_code): the branch jumps on the compare's flags (no setcc, no
// test). Its one use is then that branch.
KILN_HD inline bool compare_feeds_branch(const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  if (m.insts[i].op != kOpIcmp || !l.home || l.home[i] != kHomeRax) return false;
  const FlatBlock& b = m.blocks[m.insts[i].block];
  const uint32_t next = next_with_code(m, i);
  return next < b.first_inst + b.inst_count && m.insts[next].op == kOpCondBr;
}

// A result that lives only in rax and is the condition of the conditional branch right
// after it (no phi copies between): the branch tests bit 0 alone (test al, 1), so a
// truncation to i1 there need not clear the other bits.
KILN_HD inline bool only_bit0_read(const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  if (!l.home || l.home[i] != kHomeRax) return false;
  const FlatBlock& b = m.blocks[m.insts[i].block];
  const uint32_t next = next_with_code(m, i);
  if (next >= b.first_inst + b.inst_count || m.insts[next].op != kOpCondBr || has_phi_copies(m, m.insts[next]))
    return false;
  const FlatOperand& cond = m.operands[m.insts[next].first_operand];
  return cond.kind == kOperandValue && cond.index == i;
}

// An icmp whose result lives only in rax and is the condition of the select right after
// it (select_fuses_compare): it loads the select's true value into rdx and its false
// value into rsi before comparing, and leaves only the flags. Its one use is then that
// select.
KILN_HD inline bool compare_feeds_select(const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  if (m.insts[i].op != kOpIcmp || !l.home || l.home[i] != kHomeRax) return false;
  const FlatBlock& b = m.blocks[m.insts[i].block];
  const uint32_t next = next_with_code(m, i);
  return next < b.first_inst + b.inst_count && select_fuses_compare(m, next);
}

// Funnel shifts at width w (8 to 64 bits): fshl(a, b, s) is the high half of
// (a:b) << (s mod w), fshr(a, b, s) the low half of (a:b) >> (s mod w); rotates are
// a == b. One 64-bit shld or shrd does it, with the operand whose bits come in
// left-aligned so that they enter right next to the other's; s mod w is a mask at
// 8, 16 and 32 bits (shld and shrd mask to 6 bits themselves) and a division at the
// widths in between.
KILN_HD inline void encode_funnel(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  uint32_t w = ops[0].width, pad = 64 - w;
  load_rax(e, m, l, i, ops[0]);  // a
  if (w & (w - 1)) {             // i24, i40, i48, i56: rcx = s mod w by div, a kept in r11
    mov_rr(e, R11, RAX);
    load_operand(e, l, ops[2], RAX);
    e.byte(0x31), e.byte(0xD2);  // xor edx, edx
    mov_imm(e, RCX, w);
    e.byte(0x48), e.byte(0xF7), e.byte(0xF1);  // div rcx
    mov_rr(e, RCX, RDX);
    mov_rr(e, RAX, R11);
  } else {
    load_operand(e, l, ops[2], RCX);
    if (w < 64) e.byte(0x83), e.byte(0xE1), e.byte(w - 1);  // and ecx, w - 1
  }
  load_operand(e, l, ops[1], RDX);  // b
  if (in.aux == kBitFshl) {         // rax = a, rdx = b left-aligned: b's top bits come in below a
    if (pad) e.byte(0x48), e.byte(0xC1), e.byte(0xE2), e.byte(pad);  // shl rdx, pad
    e.byte(0x48), e.byte(0x0F), e.byte(0xA5), e.byte(0xD0);          // shld rax, rdx, cl
  } else {  // rax = b left-aligned, rdx = a: a's low bits come in above b; the top w bits are it
    e.byte(0x48), e.byte(0x92);                                      // xchg rax, rdx
    if (pad) e.byte(0x48), e.byte(0xC1), e.byte(0xE0), e.byte(pad);  // shl rax, pad
    e.byte(0x48), e.byte(0x0F), e.byte(0xAD), e.byte(0xD0);          // shrd rax, rdx, cl
    if (pad) e.byte(0x48), e.byte(0xC1), e.byte(0xE8), e.byte(pad);  // shr rax, pad
  }
  normalize(e, RAX, w);
  store_result(e, l, i);
}

// A piece of an aggregate operand into reg, leaving the flags alone: from its slot,
// or 0 for a zero, undef or poison aggregate.
KILN_HD inline void select_piece(Emitter& e, const StampLayout& l, const FlatOperand& op, uint32_t at, uint32_t n,
                                 uint32_t reg) {
  if (op.kind == kOperandValue) return load_narrow(e, reg, slot_disp(l, op.index) + static_cast<int32_t>(at), n);
  mov_imm(e, reg, 0);
}
// select of an aggregate (aux32 bytes): piece by piece, the true operand's or the
// false one's by cmov on one test, so that the code has one size. Pieces are 1, 2, 4
// or 8 bytes, each a single mov, which keeps the flags.
// An aggregate operand of `bytes` into the frame at dst: copied from its slot, or zeros
// (zero, undef and poison, as select_piece takes them).
KILN_HD inline void aggregate_to_frame(Emitter& e, const StampLayout& l, const FlatOperand& op, int32_t dst,
                                       uint32_t bytes) {
  if (op.kind == kOperandValue) copy_frame(e, dst, slot_disp(l, op.index), bytes);
  else zero_frame(e, dst, bytes);
}
KILN_HD inline void encode_select_aggregate(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  int32_t dst = slot_disp(l, i);
  load_operand(e, l, ops[0], RDX);
  e.byte(0xF6), e.byte(0xC2), e.byte(0x01);  // test dl, 1
  if (in.aux32 >= kCopyLoopBytes) {
    // Large: a branch to one of two copies (each a loop, copy_frame), so the code stays
    // small however large the aggregate: jz else; copy op1; jmp end; else: copy op2.
    Emitter probe{nullptr, 0, nullptr, 0};
    probe.frame_bias = e.frame_bias;
    aggregate_to_frame(probe, l, ops[1], dst, in.aux32);
    const uint32_t first = probe.pos;
    probe.pos = 0;
    aggregate_to_frame(probe, l, ops[2], dst, in.aux32);
    e.byte(0x0F), e.byte(0x84), e.u32(first + 5);  // jz else (past the copy and the jmp)
    aggregate_to_frame(e, l, ops[1], dst, in.aux32);
    e.byte(0xE9), e.u32(probe.pos);  // jmp end
    aggregate_to_frame(e, l, ops[2], dst, in.aux32);
    return;
  }
  for (uint32_t done = 0; done < in.aux32;) {
    uint32_t n = piece_size(in.aux32 - done);
    select_piece(e, l, ops[1], done, n, RAX);
    select_piece(e, l, ops[2], done, n, RCX);
    e.byte(0x48), e.byte(0x0F), e.byte(0x44), e.byte(0xC1);  // cmovz rax, rcx
    store_narrow(e, dst + static_cast<int32_t>(done), RAX, n);
    done += n;
  }
}

// select of an i128: both operands into registers, then one test and two cmovs.
KILN_HD inline void encode_select_wide(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  load_wide(e, l, ops[1], RAX, RDX);
  load_wide(e, l, ops[2], RCX, R11);
  load_operand(e, l, ops[0], RDI);
  e.byte(0xF7), e.byte(0xC7), e.u32(1);                    // test edi, 1
  e.byte(0x48), e.byte(0x0F), e.byte(0x44), e.byte(0xC1);  // cmovz rax, rcx
  e.byte(0x49), e.byte(0x0F), e.byte(0x44), e.byte(0xD3);  // cmovz rdx, r11
  store_wide(e, slot_disp(l, i), RAX, RDX);
}

// A store of an i128: into a frame address, or through the address in rax (which
// rax_operand names: operand 1) from rcx and rdx.
KILN_HD inline void encode_store_wide(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  int32_t at = 0;
  if (frame_address(m, l, ops[1], &at)) return wide_to_frame(e, l, ops[0], at);
  load_rax(e, m, l, i, ops[1]);
  load_wide(e, l, ops[0], RCX, RDX);
  e.byte(0x48), e.byte(0x89);  // mov [rax], rcx
  mem_operand(e, RCX, RAX, 0);
  e.byte(0x48), e.byte(0x89);  // mov [rax + 8], rdx
  mem_operand(e, RDX, RAX, 8);
}

// mov [base + disp], imm: a constant stored without a register: the same bytes as
// storing it from rcx, in fewer. A 64-bit store takes a sign-extended imm32, so a
// constant beyond that is stored through rcx (fits_store_imm false).
// A getelementptr whose result lives only in rax (kHomeRax) and is the address of the
// scalar load or store right after it (next_with_code), which takes it from rax:
// the getelementptr leaves out its constant offset, and the access adds it as its
// displacement, as LLVM's address modes do.
KILN_HD inline bool gep_offset_folds(const FlatModuleView& m, const StampLayout& l, uint32_t g) {
  const FlatInst& in = m.insts[g];
  if (in.op != kOpGep || !l.home || l.home[g] != kHomeRax || in.imm == 0) return false;
  const FlatInst& user = m.insts[next_with_code(m, g)];  // its one use (kHomeRax)
  const FlatOperand* ops = m.operands + user.first_operand;
  if (user.op == kOpLoad) return user.width != 0 && user.width <= 64;
  return user.op == kOpStore && ops[0].width != 0 && ops[0].width <= 64 && ops[1].kind == kOperandValue &&
      ops[1].index == g && !(ops[0].kind == kOperandValue && ops[0].index == g);
}
// The displacement a load or store adds to the address it takes in rax.
KILN_HD inline int32_t address_disp(const FlatModuleView& m, const StampLayout& l, const FlatOperand& address) {
  if (address.kind != kOperandValue || !gep_offset_folds(m, l, address.index)) return 0;
  return static_cast<int32_t>(m.insts[address.index].imm);
}

KILN_HD inline bool fits_store_imm(const FlatOperand& v) {
  return v.kind == kOperandConst && is_standard_width(v.width) && (v.width != 64 || fits_imm32(v.imm));
}
KILN_HD inline void store_imm(Emitter& e, uint32_t base, int32_t disp, const FlatOperand& v) {
  const uint32_t bits = static_cast<uint32_t>(v.imm);
  if (v.width == 64) e.byte(0x48);
  if (v.width == 16) e.byte(0x66);
  e.byte(v.width <= 8 ? 0xC6 : 0xC7);
  mem_operand(e, 0, base, disp);
  if (v.width <= 8) e.byte(bits & 0xFF);
  else if (v.width == 16) e.byte(bits & 0xFF), e.byte((bits >> 8) & 0xFF);
  else e.u32(bits);
}

// A store (the template of kOpStore, without the fence a seq_cst store adds).
KILN_HD inline void encode_store(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  int32_t at = 0;
  if (store_from_arg_register(m, i)) {
    frame_address(m, l, ops[1], &at);
    const FlatFunction& f = m.functions[m.blocks[in.block].function];
    return store_bytes(e, RBP, at, argument_register(arg_place(m, f, ops[0].index).reg), bytes_of_width(ops[0].width));
  }
  if (ops[0].width == kWideBits) return encode_store_wide(e, m, l, i);
  if (ops[0].width != 0 && rax_holds(m, l.home, i, ops[0])) {  // the value is in rax already
    uint32_t bytes = bytes_of_width(ops[0].width);
    if (frame_address(m, l, ops[1], &at)) return store_bytes(e, RBP, at, RAX, bytes);
    load_operand(e, l, ops[1], RCX);
    if (!is_standard_width(ops[0].width)) return store_bytes(e, RCX, 0, RAX, bytes);
    switch (ops[0].width) {
      case 64:
        e.byte(0x48), e.byte(0x89), e.byte(0x01);
        break;  // mov [rcx], rax
      case 32:
        e.byte(0x89), e.byte(0x01);
        break;
      case 16:
        e.byte(0x66), e.byte(0x89), e.byte(0x01);
        break;
      default:
        e.byte(0x88), e.byte(0x01);
        break;
    }
    return;
  }
  if (frame_address(m, l, ops[1], &at)) {
    if (ops[0].width == 0) {
      if (ops[0].kind == kOperandValue) copy_frame(e, at, slot_disp(l, ops[0].index), in.aux32);
      else if (ops[0].kind == kOperandZero) zero_frame(e, at, in.aux32);
      return;
    }
    if (fits_store_imm(ops[0])) return store_imm(e, RBP, at, ops[0]);
    load_operand(e, l, ops[0], RAX);  // through rax, which then holds it (load_forwards)
    store_bytes(e, RBP, at, RAX, bytes_of_width(ops[0].width));
    return;
  }
  if (ops[0].width == 0) {  // aggregate
    load_rax(e, m, l, i, ops[1]);
    if (ops[0].kind == kOperandValue) return copy_memory(e, false, slot_disp(l, ops[0].index), in.aux32);
    if (ops[0].kind == kOperandZero) {
      const uint32_t looped = looped_bytes(in.aux32);
      if (looped) zero_xmm15(e), copy_loop(e, RAX, 0, RAX, 0, looped, true);
      if (looped == in.aux32) return;
      e.byte(0x31), e.byte(0xC9);  // xor ecx, ecx, then exact zero stores through [rax + k]
      for (uint32_t done = looped; done < in.aux32;) {
        uint32_t left = in.aux32 - done, chunk = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
        if (chunk == 8) e.byte(0x48);
        if (chunk == 2) e.byte(0x66);
        e.byte(chunk == 1 ? 0x88 : 0x89);
        mem_operand(e, RCX, RAX, static_cast<int32_t>(done));
        done += chunk;
      }
    }
    return;  // undef: nothing to store
  }
  const int32_t disp = address_disp(m, l, ops[1]);
  if (fits_store_imm(ops[0])) {
    load_rax(e, m, l, i, ops[1]);
    return store_imm(e, RAX, disp, ops[0]);
  }
  load_operand(e, l, ops[0], RCX);
  load_rax(e, m, l, i, ops[1]);
  if (!is_standard_width(ops[0].width)) return store_bytes(e, RAX, disp, RCX, bytes_of_width(ops[0].width));
  switch (ops[0].width) {
    case 64:
      e.byte(0x48), e.byte(0x89);
      break;
    case 32:
      e.byte(0x89);
      break;
    case 16:
      e.byte(0x66), e.byte(0x89);
      break;
    default:
      e.byte(0x88);
      break;
  }
  mem_operand(e, RCX, RAX, disp);  // [rax + disp], rcx
  return;
}

// lock-prefixed operations on [r11] at width w (8, 16, 32 or 64 bits): the prefixes
// and opcode (8-bit form opcode8, else opcode8 + 1), then ModRM reg, [r11].
KILN_HD inline void on_r11(Emitter& e, uint32_t w, bool lock, bool two_byte, uint32_t opcode8, uint32_t reg) {
  if (lock) e.byte(0xF0);
  if (w == 16) e.byte(0x66);
  e.byte(w == 64 ? 0x49 : 0x41);  // REX.B for r11 (and W for 64 bits)
  if (two_byte) e.byte(0x0F);
  e.byte(w == 8 ? opcode8 : opcode8 + 1);
  e.byte(((reg & 7) << 3) | 3);  // mod 00, rm r11
}

// atomicrmw: the old value comes back in rax (normalised). xchg and add (sub as add
// of the negation) are single locked instructions; and, or, xor and nand loop on
// lock cmpxchg until no other thread changed the value in between.
KILN_HD KILN_CPU_NOINLINE inline void encode_atomic_rmw(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                        uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  uint32_t w = ops[1].width;
  load_operand(e, l, ops[0], R11);
  load_operand(e, l, ops[1], RCX);
  switch (in.aux) {
    case kRmwXchg:
      on_r11(e, w, false, false, 0x86, RCX);  // xchg [r11], rcx (locked by itself)
      mov_rr(e, RAX, RCX);
      break;
    case kRmwSub:
      e.byte(0x48), e.byte(0xF7), e.byte(0xD9);  // neg rcx
      [[fallthrough]];
    case kRmwAdd:
      on_r11(e, w, true, true, 0xC0, RCX);  // lock xadd [r11], rcx
      mov_rr(e, RAX, RCX);
      break;
    default: {
      // rax = [r11]; loop: rdx = rax op rcx; lock cmpxchg [r11], rdx; jne loop
      if (w == 64) e.byte(0x49), e.byte(0x8B), e.byte(0x03);
      else if (w == 32) e.byte(0x41), e.byte(0x8B), e.byte(0x03);
      else e.byte(0x41), e.byte(0x0F), e.byte(w == 16 ? 0xB7 : 0xB6), e.byte(0x03);
      uint32_t loop = e.pos;
      mov_rr(e, RDX, RAX);
      if (in.aux == kRmwOr) e.byte(0x48), e.byte(0x09), e.byte(0xCA);        // or rdx, rcx
      else if (in.aux == kRmwXor) e.byte(0x48), e.byte(0x31), e.byte(0xCA);  // xor rdx, rcx
      else e.byte(0x48), e.byte(0x21), e.byte(0xCA);                         // and rdx, rcx
      if (in.aux == kRmwNand) e.byte(0x48), e.byte(0xF7), e.byte(0xD2);      // not rdx
      on_r11(e, w, true, true, 0xB0, RDX);                                   // lock cmpxchg [r11], rdx
      e.byte(0x75);                                                          // jne loop
      e.byte(static_cast<uint32_t>(static_cast<int32_t>(loop) - static_cast<int32_t>(e.pos + 1)) & 0xFF);
      break;
    }
  }
  normalize(e, RAX, w);
  store64(e, slot_disp(l, i), RAX);
}

// cmpxchg: {old, success}. lock cmpxchg compares rax with [r11]: equal, it stores rcx
// (ZF set; rax keeps the old value, which was rax); else it loads the old value into rax.
KILN_HD KILN_CPU_NOINLINE inline void encode_cmpxchg(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                     uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  uint32_t w = ops[1].width;
  int32_t dst = slot_disp(l, i);
  load_operand(e, l, ops[0], R11);
  load_operand(e, l, ops[1], RAX);
  load_operand(e, l, ops[2], RCX);
  on_r11(e, w, true, true, 0xB0, RCX);       // lock cmpxchg [r11], rcx
  e.byte(0x0F), e.byte(0x94), e.byte(0xC1);  // sete cl
  normalize(e, RAX, w);
  store64(e, dst, RAX);  // field 0 (the slot is at least 8 bytes); field 1 after it
  store_narrow(e, dst + static_cast<int32_t>(in.imm), RCX, 1);
}

// load: from a frame address directly, else through the address in rax.
KILN_HD KILN_CPU_NOINLINE inline void encode_load(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                  uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  int32_t dst = in.slot_size ? slot_disp(l, i) : 0;
  int32_t at = 0;
  if (l.home && l.home[i] == kHomeLoad) return;  // its user reads the memory (load_folds)
  if (frame_address(m, l, ops[0], &at)) {
    if (in.width == kWideBits) return copy_frame(e, dst, at, 16);
    if (in.width == 0) return copy_frame(e, dst, at, in.aux32);
    if (!load_forwards(m, i)) {  // else rax holds what the store before wrote
      load_bytes(e, RAX, RBP, at, bytes_of_width(in.width));
      if (in.width == 1) normalize(e, RAX, 1);
    }
    store_result(e, l, i);
    return;
  }
  load_rax(e, m, l, i, ops[0]);
  if (in.width == kWideBits) return copy_memory(e, true, dst, 16);
  if (in.width == 0) return copy_memory(e, true, dst, in.aux32);
  const int32_t disp = address_disp(m, l, ops[0]);
  if (!is_standard_width(in.width)) {  // i24 .. i56: put together from pieces
    load_bytes(e, RCX, RAX, disp, bytes_of_width(in.width));
    mov_rr(e, RAX, RCX);
    store_result(e, l, i);
    return;
  }
  switch (in.width) {
    case 64:
      e.byte(0x48), e.byte(0x8B);
      break;
    case 32:
      e.byte(0x8B);
      break;
    case 16:
      e.byte(0x0F), e.byte(0xB7);
      break;
    default:
      e.byte(0x0F), e.byte(0xB6);
      break;
  }
  mem_operand(e, RAX, RAX, disp);  // rax, [rax + disp]
  if (in.width == 1) normalize(e, RAX, 1);
  store_result(e, l, i);
}

// getelementptr: the base plus each index times its stride, plus the constant offset.
KILN_HD KILN_CPU_NOINLINE inline void encode_gep(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                 uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  if (is_frame_shape(m, value_operand(i))) return;  // every use recomputes or addresses it
  load_rax(e, m, l, i, ops[0]);
  for (uint32_t k = 1; k < in.operand_count; ++k) {
    int32_t at = 0;
    if (ops[k].imm == 1 && ops[k].width == 64 && operand_in_frame(l, ops[k], &at)) {
      e.byte(0x48), e.byte(0x03);  // add rax, [rbp + at]: a 64-bit index of stride 1
      mem_operand(e, RAX, RBP, at);
      continue;
    }
    load_operand(e, l, ops[k], RCX);
    sign_extend(e, RCX, ops[k].width);
    const uint64_t stride = static_cast<uint64_t>(ops[k].imm);
    if (stride != 1 && stride != 0 && (stride & (stride - 1)) == 0 && stride < (1ull << 31)) {
      uint32_t shift = 0;  // a power of two: shl rcx, log2(stride), the same low 64 bits
      while ((1ull << shift) != stride) ++shift;
      e.byte(0x48), e.byte(0xC1), e.byte(0xE1), e.byte(shift);
    } else if (stride != 1) {  // imul rcx, rcx, stride
      e.byte(0x48), e.byte(0x69), e.byte(0xC9);
      e.u32(static_cast<uint32_t>(ops[k].imm));
    }
    e.byte(0x48), e.byte(0x01), e.byte(0xC8);  // add rax, rcx
  }
  if (in.imm != 0 && !gep_offset_folds(m, l, i)) add_imm(e, RAX, static_cast<int32_t>(in.imm));
  store_result(e, l, i);
}

// extractvalue: a field of an aggregate in the frame (0 from undef, poison or zero).
KILN_HD KILN_CPU_NOINLINE inline void encode_extract(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                     uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  int32_t dst = in.slot_size ? slot_disp(l, i) : 0;
  if (l.home && l.home[i] == kHomeField) return;  // every use reads the field in place
  if (ops[0].kind != kOperandValue) {  // undef, poison or zero aggregate: the field is 0
    if (in.width == kWideBits) {
      zero_frame(e, dst, 16);
    } else if (in.width) {
      mov_imm(e, RAX, 0);
      store_result(e, l, i);
    } else {
      zero_frame(e, dst, in.aux32);
    }
    return;
  }
  int32_t src = slot_disp(l, ops[0].index) + static_cast<int32_t>(in.imm);
  if (in.width == 0) return copy_frame(e, dst, src, in.aux32);
  if (in.width == kWideBits) return copy_frame(e, dst, src, 16);
  load_narrow(e, RAX, src, bytes_of_width(in.width));
  if (in.width == 1) normalize(e, RAX, 1);
  store_result(e, l, i);
}

// insertvalue: the aggregate copied (or zeroed) into the slot, then the field stored.
KILN_HD KILN_CPU_NOINLINE inline void encode_insert(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                    uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  int32_t dst = in.slot_size ? slot_disp(l, i) : 0;
  // The aggregate is copied, unless this insert took over its slot (stamp_frame).
  if (ops[0].kind == kOperandValue && slot_disp(l, ops[0].index) != dst)
    copy_frame(e, dst, slot_disp(l, ops[0].index), in.slot_size);
  else if (ops[0].kind == kOperandZero) zero_frame(e, dst, in.slot_size);
  int32_t field = dst + static_cast<int32_t>(in.imm);
  if (ops[1].width == 0) {  // an aggregate field
    if (ops[1].kind == kOperandValue) copy_frame(e, field, slot_disp(l, ops[1].index), in.aux32);
    else if (ops[1].kind == kOperandZero) zero_frame(e, field, in.aux32);
    return;
  }
  if (ops[1].width == kWideBits) return wide_to_frame(e, l, ops[1], field);
  load_operand(e, l, ops[1], RAX);
  store_narrow(e, field, RAX, bytes_of_width(ops[1].width));
}

// icmp: cmp rax, rcx (sign-extended for signed predicates), then setcc into the slot,
// or nothing more when the conditional branch right after jumps on the flags.
KILN_HD KILN_CPU_NOINLINE inline void encode_icmp(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                  uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  const bool feeds_select = compare_feeds_select(m, l, i);
  if (feeds_select) {  // the select's values first, while flags may still change (rax is kept)
    const FlatOperand* picks = m.operands + m.insts[next_with_code(m, i)].first_operand;
    load_operand(e, l, picks[1], RDX);
    load_operand(e, l, picks[2], RSI);
  }
  load_rax(e, m, l, i, ops[0]);
  const bool sign = is_signed_predicate(in.aux);
  const int64_t rhs = extend_const(ops[1].imm, ops[0].width, sign);  // as rcx would hold it
  int32_t at = 0;
  if (ops[1].kind == kOperandConst && fits_imm32(rhs)) {
    if (sign) sign_extend(e, RAX, ops[0].width);
    alu_rax_imm(e, 7, static_cast<int32_t>(rhs));  // cmp rax, imm
  } else if ((!sign || ops[0].width == 64) && operand_in_frame(l, ops[1], &at)) {
    e.byte(0x48), e.byte(0x3B);  // cmp rax, [rbp + at]: both normalised, as rcx would be
    mem_operand(e, RAX, RBP, at);
  } else {
    load_operand(e, l, ops[1], RCX);
    if (sign) {
      sign_extend(e, RAX, ops[0].width);
      sign_extend(e, RCX, ops[0].width);
    }
    e.byte(0x48), e.byte(0x39), e.byte(0xC8);  // cmp rax, rcx
  }
  if (feeds_select || compare_feeds_branch(m, l, i)) return;  // the select or branch after uses the flags
  setcc_al(e, in.aux);
  e.byte(0x0F), e.byte(0xB6), e.byte(0xC0);  // movzx eax, al
  store_result(e, l, i);
}

// The phi copies of terminator t, for each successor once; what rax holds after them
// (kind 0: unknown). Before them rax may hold the value of the instruction before t
// (rax_holds), unless that value lives only in rax, as a compare's whose flags t takes.
KILN_HD inline FlatOperand phi_copies(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t t) {
  const FlatInst& term = m.insts[t];
  FlatOperand rax{};
  // Most terminators have none, and their callers read what rax holds only where they
  // do (has_phi_copies): no question about it asked for nothing.
  if (!has_phi_copies(m, term)) return rax;
  const uint32_t before = prev_with_code(m, t);
  if (before < t && m.insts[before].block == term.block && !(l.home && l.home[before] == kHomeRax) &&
      rax_holds(m, l.home, t, value_operand(before)))
    rax = value_operand(before);
  // Successors are the block operands; a block named twice is copied for once.
  for (uint32_t k = 0; k < term.operand_count; ++k) {
    const FlatOperand& op = m.operands[term.first_operand + k];
    if (op.kind != kOperandBlock) continue;
    bool seen = false;
    for (uint32_t j = 0; j < k; ++j) {
      const FlatOperand& prev = m.operands[term.first_operand + j];
      seen |= prev.kind == kOperandBlock && prev.index == op.index;
    }
    if (!seen) phi_copies_for(e, m, l, term.block, op.index, &rax);
  }
  return rax;
}

// A compare right before conditional branch t (prev_with_code) whose result has a home
// of its own (other uses): its setcc, movzx and store leave the flags as its cmp set
// them, and so do the branch's phi copies where copies_keep_flags says so, so the
// branch can jump on them as on compare_feeds_branch's.
KILN_HD inline bool compare_flags_reach(const FlatModuleView& m, const StampLayout& l, uint32_t t, uint32_t c) {
  const FlatInst& cmp = m.insts[c];
  if (cmp.op != kOpIcmp || m.operands[cmp.first_operand].width == kWideBits || prev_with_code(m, t) != c) return false;
  if (!l.home || (l.home[c] != kHomeSlot && l.home[c] != kHomePool)) return false;
  return !has_phi_copies(m, m.insts[t]) || copies_keep_flags(m, m.insts[t]);
}

// Conditional branch: phi copies, then a jump on the flags or on bit 0 of the condition.
KILN_HD KILN_CPU_NOINLINE inline void encode_cond_br(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                     uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  const FlatOperand rax = phi_copies(e, m, l, i);
  // Jump on the compare's own flags when it comes right before (the copies keep them:
  // copies_keep_flags), else on bit 0.
  uint32_t jcc_true = 0x85;  // jnz
  if (ops[0].kind == kOperandValue &&
      (compare_feeds_branch(m, l, ops[0].index) || compare_flags_reach(m, l, i, ops[0].index))) {
    jcc_true = setcc_opcode(m.insts[ops[0].index].aux) - 0x10;
  } else {
    if (!has_phi_copies(m, in)) load_rax(e, m, l, i, ops[0]);
    else if (!same_operand(l, rax, ops[0])) load_operand(e, l, ops[0], RAX);  // the copies went through rax
    e.byte(0xA8), e.byte(0x01);  // test al, 1
  }
  uint32_t on_true = ops[1].index, on_false = ops[2].index;
  if (on_true == in.block + 1 && on_false != on_true) return jump(e, l, jcc_true ^ 1, on_false);  // the opposite
  if (on_true != on_false) jump(e, l, jcc_true, on_true);
  jump_to_block(e, l, in.block, on_false);
}

// switch on an i128 (after the phi copies): the value in rax:rdx, and per case a je
// on (lo ^ case lo) | (hi ^ case hi) == 0; then a jump to the default.
KILN_HD inline void encode_switch_wide(Emitter& e, const StampLayout& l, const FlatInst& in, const FlatOperand* ops) {
  load_wide(e, l, ops[0], RAX, RDX);
  for (uint32_t k = 2; k + 1 < in.operand_count; k += 2) {
    mov_imm(e, R11, static_cast<uint64_t>(ops[k].imm));
    mov_imm(e, RCX, wide_const_high(ops[k]));
    e.byte(0x49), e.byte(0x31), e.byte(0xC3);  // xor r11, rax
    e.byte(0x48), e.byte(0x31), e.byte(0xD1);  // xor rcx, rdx
    e.byte(0x4C), e.byte(0x09), e.byte(0xD9);  // or rcx, r11
    jump(e, l, 0x84, ops[k + 1].index);        // je
  }
  jump_to_block(e, l, in.block, ops[1].index);
}

// switch: phi copies, then a compare and je per case, then a jump to the default.
KILN_HD KILN_CPU_NOINLINE inline void encode_switch(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                    uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  const FlatOperand rax = phi_copies(e, m, l, i);
  if (ops[0].width == kWideBits) return encode_switch_wide(e, l, in, ops);
  if (!has_phi_copies(m, in)) load_rax(e, m, l, i, ops[0]);
  else if (!same_operand(l, rax, ops[0])) load_operand(e, l, ops[0], RAX);  // the copies went through rax
  for (uint32_t k = 2; k + 1 < in.operand_count; k += 2) {
    const int64_t value = extend_const(ops[k].imm, ops[0].width, false);  // as rax holds it: normalised
    if (fits_imm32(value)) {
      alu_rax_imm(e, 7, static_cast<int32_t>(value));  // cmp rax, imm
    } else {
      mov_imm(e, RCX, static_cast<uint64_t>(ops[k].imm));
      e.byte(0x48), e.byte(0x39), e.byte(0xC8);  // cmp rax, rcx
    }
    jump(e, l, 0x84, ops[k + 1].index);  // je
  }
  jump_to_block(e, l, in.block, ops[1].index);
}

// ret: the value in rax (rax and rdx for a pair; the sret pointer in rax), then leave; ret.
KILN_HD KILN_CPU_NOINLINE inline void encode_ret(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                 uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  const FlatFunction& f = m.functions[m.blocks[in.block].function];
  if (f.flags & kFnHasSret) {
    load64(e, RAX, -l.arg_slot[f.first_arg + f.sret_arg]);  // the sret pointer comes back in rax
  } else if (in.operand_count && (f.flags & kFnRetPair)) {
    if (ops[0].kind == kOperandValue) {
      int32_t src = slot_disp(l, ops[0].index);
      uint32_t w0 = f.ret_leaf0_width, w1 = f.ret_leaf1_width;
      load_narrow(e, RDX, src + static_cast<int32_t>(f.ret_leaf1_offset), bytes_of_width(w1));
      load_narrow(e, RAX, src, bytes_of_width(w0));
    } else {
      e.byte(0x31), e.byte(0xC0);  // xor eax, eax
      e.byte(0x31), e.byte(0xD2);  // xor edx, edx
    }
    pair_to_return_registers(e, f.ret_leaf_float);
  } else if (in.operand_count && (f.flags & (kFnRetVector | kFnRetVector256))) {  // in xmm0 or ymm0
    const uint32_t bytes = f.flags & kFnRetVector256 ? 32 : 16;
    if (ops[0].kind == kOperandValue) move_vector_arg(e, bytes, 0, slot_disp(l, ops[0].index), true);
    else zero_vector_arg(e, bytes, 0);
  } else if (in.operand_count && ops[0].width == kWideBits) {  // an i128: rax low, rdx high
    load_wide(e, l, ops[0], RAX, RDX);
  } else if (in.operand_count) {
    load_rax(e, m, l, i, ops[0]);
    if (f.flags & kFnRetSignExt) sign_extend(e, RAX, ops[0].width);
    if (f.flags & kFnRetFloat) movq_to_xmm(e, 0, RAX);
  }
  if (e.frame_bias) {
    e.byte(0x48), e.byte(0x8D), e.byte(0x65), e.byte(e.frame_bias);  // lea rsp, [rbp + bias]
    e.byte(0x5D);                                                     // pop rbp
  } else {
    e.byte(0xC9);  // leave
  }
  e.byte(0xC3);  // ret
}

// icmp of two i128 (a in rax:rdx, b in rcx:r11), to 0 or 1 in the slot. Equality
// ors the halves' differences; an order subtracts with borrow (cmp low, sbb high),
// which leaves CF for unsigned and SF != OF for signed a < b. The predicates that
// test a > b or a <= b subtract the other way round (b < a, b >= a).
KILN_HD inline void encode_wide_icmp(Emitter& e, uint32_t predicate) {
  if (predicate == kPredEq || predicate == kPredNe) {
    e.byte(0x48), e.byte(0x31), e.byte(0xC8);  // xor rax, rcx
    e.byte(0x4C), e.byte(0x31), e.byte(0xDA);  // xor rdx, r11
    e.byte(0x48), e.byte(0x09), e.byte(0xD0);  // or rax, rdx
    setcc_al(e, predicate);
  } else if (predicate == kPredUlt || predicate == kPredUge || predicate == kPredSlt || predicate == kPredSge) {
    e.byte(0x48), e.byte(0x39), e.byte(0xC8);  // cmp rax, rcx
    e.byte(0x4C), e.byte(0x19), e.byte(0xDA);  // sbb rdx, r11
    setcc_al(e, predicate);
  } else {
    e.byte(0x48), e.byte(0x39), e.byte(0xC1);  // cmp rcx, rax
    e.byte(0x49), e.byte(0x19), e.byte(0xD3);  // sbb r11, rdx
    uint32_t swapped = predicate == kPredUgt ? kPredUlt
        : predicate == kPredUle              ? kPredUge
        : predicate == kPredSgt              ? kPredSlt
                                             : kPredSge;
    setcc_al(e, swapped);
  }
  e.byte(0x0F), e.byte(0xB6), e.byte(0xC0);  // movzx eax, al
}

// i128 shifts of rax:rdx by cl (the amount's low half; from 128 on the result is
// poison). A double shift and a shift do it for amounts below 64 (both mask cl to 6
// bits); bit 6 of cl then moves the half that was shifted by cl - 64 across and
// fills the other with zeros or the sign (r11, prepared before the test).
KILN_HD inline void encode_wide_shift(Emitter& e, uint32_t kind) {
  if (kind == kWideShl) {
    e.byte(0x45), e.byte(0x31), e.byte(0xDB);                // xor r11d, r11d
    e.byte(0x48), e.byte(0x0F), e.byte(0xA5), e.byte(0xC2);  // shld rdx, rax, cl
    e.byte(0x48), e.byte(0xD3), e.byte(0xE0);                // shl rax, cl
    e.byte(0xF6), e.byte(0xC1), e.byte(0x40);                // test cl, 64
    e.byte(0x48), e.byte(0x0F), e.byte(0x45), e.byte(0xD0);  // cmovnz rdx, rax
    e.byte(0x49), e.byte(0x0F), e.byte(0x45), e.byte(0xC3);  // cmovnz rax, r11
    return;
  }
  if (kind == kWideAshr) {
    e.byte(0x49), e.byte(0x89), e.byte(0xD3);                // mov r11, rdx
    e.byte(0x49), e.byte(0xC1), e.byte(0xFB), e.byte(0x3F);  // sar r11, 63
  } else {
    e.byte(0x45), e.byte(0x31), e.byte(0xDB);  // xor r11d, r11d
  }
  e.byte(0x48), e.byte(0x0F), e.byte(0xAD), e.byte(0xD0);             // shrd rax, rdx, cl
  e.byte(0x48), e.byte(0xD3), e.byte(kind == kWideAshr ? 0xFA : 0xEA);  // sar/shr rdx, cl
  e.byte(0xF6), e.byte(0xC1), e.byte(0x40);                           // test cl, 64
  e.byte(0x48), e.byte(0x0F), e.byte(0x45), e.byte(0xC2);             // cmovnz rax, rdx
  e.byte(0x49), e.byte(0x0F), e.byte(0x45), e.byte(0xD3);             // cmovnz rdx, r11
}

// A 64-bit kOpBitOp on each half of rax:rdx: the low half's result in r9, the high
// half's in rax (r8 keeps the high half meanwhile; no value lives in r8 or r9 between
// instructions).
KILN_HD inline void bit_op_on_halves(Emitter& e, uint32_t kind) {
  mov_rr(e, R8, RDX);
  encode_bit_op(e, kind, 64);
  mov_rr(e, R9, RAX);
  mov_rr(e, RAX, R8);
  encode_bit_op(e, kind, 64);
}

// kOpWide: an operation on i128 values, which live in their 16-byte slots (never
// only in rax: result_in_rax is false for these).
// a (rax:rdx) = min or max of a and b (rcx:r11), unsigned or signed: the 128-bit
// compare of cmp/sbb (on copies of a), then b taken by cmov where it wins.
KILN_HD inline void encode_wide_min_max(Emitter& e, uint32_t kind) {
  mov_rr(e, R8, RAX);
  mov_rr(e, R9, RDX);
  e.byte(0x48), e.byte(0x39), e.byte(0xC8);  // cmp rax, rcx
  e.byte(0x4C), e.byte(0x19), e.byte(0xDA);  // sbb rdx, r11: flags of a - b
  mov_rr(e, RAX, R8);                        // movs keep the flags
  mov_rr(e, RDX, R9);
  // b wins a min when a >= b, a max when a < b.
  const uint32_t cc = kind == kWideUmin ? 0x43 : kind == kWideUmax ? 0x42 : kind == kWideSmin ? 0x4D : 0x4C;
  e.byte(0x48), e.byte(0x0F), e.byte(cc), e.byte(0xC1);  // cmovcc rax, rcx
  e.byte(0x49), e.byte(0x0F), e.byte(cc), e.byte(0xD3);  // cmovcc rdx, r11
}
// dil |= the condition `setcc` (a setcc opcode's second byte) names, through sil.
KILN_HD inline void or_condition_into_dil(Emitter& e, uint32_t setcc) {
  e.byte(0x40), e.byte(0x0F), e.byte(setcc), e.byte(0xC6);  // setcc sil
  e.byte(0x40), e.byte(0x08), e.byte(0xF7);                 // or dil, sil
}
// llvm.umul.with.overflow.i128 of a (rax:rdx) and b (rcx:r11): the product's low 128
// bits in rax:rdx, and in dil whether it needs more: both high halves nonzero, a cross
// product beyond 64 bits, or a carry out of the high half's sum.
KILN_HD inline void encode_wide_umul_overflow(Emitter& e) {
  mov_rr(e, R8, RAX);                                      // a.lo
  mov_rr(e, R9, RDX);                                      // a.hi
  e.byte(0x4D), e.byte(0x85), e.byte(0xC9);                // test r9, r9
  e.byte(0x40), e.byte(0x0F), e.byte(0x95), e.byte(0xC7);  // setnz dil
  e.byte(0x4D), e.byte(0x85), e.byte(0xDB);                // test r11, r11
  e.byte(0x40), e.byte(0x0F), e.byte(0x95), e.byte(0xC6);  // setnz sil
  e.byte(0x40), e.byte(0x20), e.byte(0xF7);                // and dil, sil
  mov_rr(e, RAX, R9);
  e.byte(0x48), e.byte(0xF7), e.byte(0xE1);                // mul rcx: a.hi * b.lo
  e.byte(0x48), e.byte(0x85), e.byte(0xD2);                // test rdx, rdx
  or_condition_into_dil(e, 0x95);                          // setnz
  mov_rr(e, R10, RAX);
  mov_rr(e, RAX, R8);
  e.byte(0x49), e.byte(0xF7), e.byte(0xE3);                // mul r11: a.lo * b.hi
  e.byte(0x48), e.byte(0x85), e.byte(0xD2);                // test rdx, rdx
  or_condition_into_dil(e, 0x95);                          // setnz
  e.byte(0x49), e.byte(0x01), e.byte(0xC2);                // add r10, rax: the cross sum
  or_condition_into_dil(e, 0x92);                          // setc
  mov_rr(e, RAX, R8);
  e.byte(0x48), e.byte(0xF7), e.byte(0xE1);                // mul rcx: a.lo * b.lo
  e.byte(0x4C), e.byte(0x01), e.byte(0xD2);                // add rdx, r10
  or_condition_into_dil(e, 0x92);                          // setc
}
// fptosi.sat / fptoui.sat to i128: the compiler-rt conversion (op1) of op0, then
// clamped without branches as llvm -O0's expansion is: at or above the upper bound
// (2^127, or 2^128 unsigned) the maximum, below the lower one (-2^127, or 0) the
// minimum, NaN 0. Each bound is tested by ucomis, which leaves a NaN outside it.
KILN_HD inline void encode_wide_from_float_sat(Emitter& e, const StampLayout& l, const FlatInst& in,
                                               const FlatOperand* ops, int32_t dst) {
  const bool is_double = in.aux32 == 64, is_signed = in.imm != 0;
  // The bounds' bit patterns: 2^127, -2^127, 2^128 (a float's is infinity) and 0.
  enum Bound { kUpperSigned, kLowerSigned, kUpperUnsigned, kZero };
  auto bound = [&](Bound b) {  // movq xmm1, the bound at the operand's width (through rcx)
    uint64_t bits = 0;
    if (b == kUpperSigned) bits = is_double ? 0x47E0000000000000ull : 0x7F000000u;
    if (b == kLowerSigned) bits = is_double ? 0xC7E0000000000000ull : 0xFF000000u;
    if (b == kUpperUnsigned) bits = is_double ? 0x47F0000000000000ull : 0x7F800000u;
    e.byte(0x48), e.byte(0xB9), e.u64(bits);  // mov rcx, imm64
    movq_to_xmm(e, 1, RCX);
  };
  auto ucomis = [&](uint32_t a, uint32_t b) {  // flags of xmm_a against xmm_b
    if (is_double) e.byte(0x66);
    e.byte(0x0F), e.byte(0x2E), e.byte(0xC0 | (a << 3) | b);
  };
  auto cmov_pair = [&](uint32_t cc, uint32_t lo, uint32_t hi) {  // cmovCC rax, lo; cmovCC rdx, hi
    e.byte(0x48 | (lo >> 3)), e.byte(0x0F), e.byte(cc), e.byte(0xC0 | (lo & 7));
    e.byte(0x48 | (hi >> 3)), e.byte(0x0F), e.byte(cc), e.byte(0xD0 | (hi & 7));
  };
  load_operand(e, l, ops[0], RAX);
  movq_to_xmm(e, 0, RAX);
  e.byte(0xE8);
  e.reloc(kRelocPlt32, ops[1].index, -4);
  e.u32(0);  // the conversion, into rdx:rax
  load_operand(e, l, ops[0], RCX);
  movq_to_xmm(e, 0, RCX);  // the operand again (xmm0 is the callee's)
  bound(is_signed ? kUpperSigned : kUpperUnsigned);
  e.byte(0x49), e.byte(0xB8), e.u64(is_signed ? 0x7FFFFFFFFFFFFFFFull : ~0ull);  // mov r8, the maximum's high half
  e.byte(0x48), e.byte(0xC7), e.byte(0xC1), e.u32(0xFFFFFFFFu);                   // mov rcx, -1
  ucomis(0, 1);
  cmov_pair(0x43, RCX, R8);  // cmovae: x >= upper
  bound(is_signed ? kLowerSigned : kZero);
  e.byte(0x49), e.byte(0xB8), e.u64(is_signed ? 0x8000000000000000ull : 0);  // mov r8, the minimum's high half
  e.byte(0xB9), e.u32(0);                                                     // mov ecx, 0
  ucomis(1, 0);
  cmov_pair(0x47, RCX, R8);  // cmova: lower > x
  e.byte(0x49), e.byte(0xC7), e.byte(0xC0), e.u32(0);  // mov r8, 0
  ucomis(0, 0);
  cmov_pair(0x4A, R8, R8);  // cmovp: NaN
  store_wide(e, dst, RAX, RDX);
}

KILN_HD KILN_CPU_NOINLINE inline void encode_wide(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                  uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  int32_t dst = slot_disp(l, i);
  switch (in.aux) {
    case kWideCopy:
      return wide_to_frame(e, l, ops[0], dst);
    case kWideFromFloatSat:
      return encode_wide_from_float_sat(e, l, in, ops, dst);
    case kWideTrunc:
      load_wide(e, l, ops[0], RAX, RDX);
      normalize(e, RAX, in.width);
      return store64(e, dst, RAX);
    case kWideZext:
    case kWideSext:
      load_operand(e, l, ops[0], RAX);  // normalised: zero-extended already
      if (in.aux == kWideSext) {
        sign_extend(e, RAX, in.aux32);
        e.byte(0x48), e.byte(0x99);  // cqo: rdx = the sign
      } else {
        e.byte(0x31), e.byte(0xD2);  // xor edx, edx
      }
      return store_wide(e, dst, RAX, RDX);
    case kWideCtpop:  // the halves' counts added
      load_wide(e, l, ops[0], RAX, RDX);
      bit_op_on_halves(e, kBitCtpop);
      e.byte(0x4C), e.byte(0x01), e.byte(0xC8);  // add rax, r9
      e.byte(0x31), e.byte(0xD2);                // xor edx, edx
      return store_wide(e, dst, RAX, RDX);
    case kWideBitreverse:  // each half reversed, the halves swapped
      load_wide(e, l, ops[0], RAX, RDX);
      bit_op_on_halves(e, kBitBitreverse);
      mov_rr(e, RDX, R9);
      return store_wide(e, dst, RAX, RDX);
    case kWideAbs:  // (x ^ m) - m with m the sign spread over 64 bits
      load_wide(e, l, ops[0], RAX, RDX);
      e.byte(0x48), e.byte(0x89), e.byte(0xD1);                // mov rcx, rdx
      e.byte(0x48), e.byte(0xC1), e.byte(0xF9), e.byte(0x3F);  // sar rcx, 63
      e.byte(0x48), e.byte(0x31), e.byte(0xC8);                // xor rax, rcx
      e.byte(0x48), e.byte(0x31), e.byte(0xCA);                // xor rdx, rcx
      e.byte(0x48), e.byte(0x29), e.byte(0xC8);                // sub rax, rcx
      e.byte(0x48), e.byte(0x19), e.byte(0xCA);                // sbb rdx, rcx
      return store_wide(e, dst, RAX, RDX);
    default:
      break;
  }
  load_wide(e, l, ops[0], RAX, RDX);
  load_wide(e, l, ops[1], RCX, R11);
  if (in.aux == kWideUcmp || in.aux == kWideScmp) {  // (b < a) - (a < b), a kept in r8:r9
    const uint32_t setcc = in.aux == kWideUcmp ? 0x92 : 0x9C;  // setb / setl
    mov_rr(e, R8, RAX);
    mov_rr(e, R9, RDX);
    e.byte(0x48), e.byte(0x39), e.byte(0xC8);  // cmp rax, rcx
    e.byte(0x4C), e.byte(0x19), e.byte(0xDA);  // sbb rdx, r11
    e.byte(0x0F), e.byte(setcc), e.byte(0xC0);  // al = a < b
    e.byte(0x4C), e.byte(0x39), e.byte(0xC1);  // cmp rcx, r8
    e.byte(0x4D), e.byte(0x19), e.byte(0xCB);  // sbb r11, r9
    e.byte(0x0F), e.byte(setcc), e.byte(0xC1);  // cl = b < a
    e.byte(0x28), e.byte(0xC1);                // sub cl, al
    e.byte(0x0F), e.byte(0xBE), e.byte(0xC1);  // movsx eax, cl
    e.byte(0x48), e.byte(0x98);                // cdqe
    normalize(e, RAX, in.width);
    return store64(e, dst, RAX);
  }
  switch (in.aux) {
    case kWideIcmp:
      encode_wide_icmp(e, in.aux32);
      return store64(e, dst, RAX);
    case kWideUmin:
    case kWideUmax:
    case kWideSmin:
    case kWideSmax:
      encode_wide_min_max(e, in.aux);
      break;
    case kWideUmulOverflow:
      encode_wide_umul_overflow(e);
      store_wide(e, dst, RAX, RDX);
      return store_narrow(e, dst + static_cast<int32_t>(in.imm), RDI, 1);
    case kWideAdd:
      e.byte(0x48), e.byte(0x01), e.byte(0xC8);  // add rax, rcx
      e.byte(0x4C), e.byte(0x11), e.byte(0xDA);  // adc rdx, r11
      break;
    case kWideSub:
      e.byte(0x48), e.byte(0x29), e.byte(0xC8);  // sub rax, rcx
      e.byte(0x4C), e.byte(0x19), e.byte(0xDA);  // sbb rdx, r11
      break;
    case kWideAnd:
    case kWideOr:
    case kWideXor: {
      uint32_t opcode = in.aux == kWideAnd ? 0x21 : in.aux == kWideOr ? 0x09 : 0x31;
      e.byte(0x48), e.byte(opcode), e.byte(0xC8);  // op rax, rcx
      e.byte(0x4C), e.byte(opcode), e.byte(0xDA);  // op rdx, r11
      break;
    }
    case kWideUaddOverflow:
    case kWideSaddOverflow:
    case kWideUsubOverflow:
    case kWideSsubOverflow: {  // add/adc or sub/sbb, then the flag of the high half's
      const bool add = in.aux == kWideUaddOverflow || in.aux == kWideSaddOverflow;
      e.byte(0x48), e.byte(add ? 0x01 : 0x29), e.byte(0xC8);  // add/sub rax, rcx
      e.byte(0x4C), e.byte(add ? 0x11 : 0x19), e.byte(0xDA);  // adc/sbb rdx, r11
      const bool is_signed = in.aux == kWideSaddOverflow || in.aux == kWideSsubOverflow;
      e.byte(0x0F), e.byte(is_signed ? 0x90 : 0x92), e.byte(0xC1);  // seto/setc cl
      store_wide(e, dst, RAX, RDX);
      store_narrow(e, dst + static_cast<int32_t>(in.imm), RCX, 1);
      return;
    }
    case kWideMul:  // the low product in full, plus both cross products in the high half
      e.byte(0x48), e.byte(0x0F), e.byte(0xAF), e.byte(0xD1);  // imul rdx, rcx: a.hi * b.lo
      e.byte(0x4C), e.byte(0x0F), e.byte(0xAF), e.byte(0xD8);  // imul r11, rax: b.hi * a.lo
      e.byte(0x49), e.byte(0x01), e.byte(0xD3);                // add r11, rdx
      e.byte(0x48), e.byte(0xF7), e.byte(0xE1);                // mul rcx: rdx:rax = a.lo * b.lo
      e.byte(0x4C), e.byte(0x01), e.byte(0xDA);                // add rdx, r11
      break;
    default:  // kWideShl, kWideLshr, kWideAshr
      encode_wide_shift(e, in.aux);
      break;
  }
  store_wide(e, dst, RAX, RDX);
}

// fcmp of xmm0 (a) and xmm1 (b) into al, by predicate (kFcmp*). ucomis sets ZF, PF
// and CF all for unordered (a NaN), none for a > b, CF for a < b and ZF for a == b;
// the "less" predicates compare the other way round so that seta/setae (which are
// false on unordered) and setb/setbe (true on unordered) cover every order.
KILN_HD inline void encode_fcmp(Emitter& e, uint32_t width, uint32_t predicate) {
  if (predicate == kFcmpFalse || predicate == kFcmpTrue) {
    e.byte(0xB8), e.u32(predicate == kFcmpTrue ? 1 : 0);  // mov eax, 0 or 1
    return;
  }
  bool swap = predicate == kFcmpOlt || predicate == kFcmpOle || predicate == kFcmpUgt || predicate == kFcmpUge;
  swap ? unordered_compare(e, width, 1, 0) : unordered_compare(e, width, 0, 1);
  uint32_t setcc = 0;
  switch (predicate) {
    case kFcmpOgt: case kFcmpOlt: setcc = 0x97; break;   // seta
    case kFcmpOge: case kFcmpOle: setcc = 0x93; break;   // setae
    case kFcmpUgt: case kFcmpUlt: setcc = 0x92; break;   // setb
    case kFcmpUge: case kFcmpUle: setcc = 0x96; break;   // setbe
    case kFcmpOeq: case kFcmpUeq: setcc = 0x94; break;   // sete
    case kFcmpOne: case kFcmpUne: setcc = 0x95; break;   // setne
    case kFcmpOrd: setcc = 0x9B; break;                   // setnp
    default: setcc = 0x9A; break;                         // setp (uno)
  }
  e.byte(0x0F), e.byte(setcc), e.byte(0xC0);
  if (predicate == kFcmpOeq) e.byte(0x0F), e.byte(0x9B), e.byte(0xC1), e.byte(0x20), e.byte(0xC8);  // setnp cl; and al, cl
  if (predicate == kFcmpUne) e.byte(0x0F), e.byte(0x9A), e.byte(0xC1), e.byte(0x08), e.byte(0xC8);  // setp cl; or al, cl
  e.byte(0x0F), e.byte(0xB6), e.byte(0xC0);  // movzx eax, al
}

// uitofp from 64 bits (rax) to `width`: a value below 2^63 converts as signed; a
// larger one is halved, keeping its lowest bit sticky so that it rounds the same,
// converted and doubled.
KILN_HD inline void encode_u64_to_float(Emitter& e, uint32_t width) {
  e.byte(0x48), e.byte(0x85), e.byte(0xC0);  // test rax, rax
  e.byte(0x78), e.byte(7);                   // js big
  convert_from_int(e, width, 0, RAX);        // (5 bytes)
  e.byte(0xEB), e.byte(21);                  // jmp done
  e.byte(0x48), e.byte(0x89), e.byte(0xC1);  // big: mov rcx, rax
  e.byte(0x48), e.byte(0xD1), e.byte(0xE9);  // shr rcx, 1
  e.byte(0x83), e.byte(0xE0), e.byte(0x01);  // and eax, 1
  e.byte(0x48), e.byte(0x09), e.byte(0xC1);  // or rcx, rax
  convert_from_int(e, width, 0, RCX);        // (5 bytes)
  sse_scalar(e, width, 0x58, 0, 0);          // add xmm0, xmm0 (4 bytes); done:
}

// fptoui to 64 bits from xmm0 at `width`: below 2^63 it converts as signed; from
// 2^63 on, 2^63 is subtracted first and the top bit set after.
KILN_HD inline void encode_float_to_u64(Emitter& e, uint32_t width) {
  mov_imm(e, RCX, width == 32 ? 0x5F000000ull : 0x43E0000000000000ull);  // 2^63
  movq_to_xmm(e, 1, RCX);
  unordered_compare(e, width, 0, 1);
  e.byte(0x73), e.byte(7);                                  // jae big
  convert_to_int(e, width, RAX, 0);                         // (5 bytes)
  e.byte(0xEB), e.byte(14);                                 // jmp done
  sse_scalar(e, width, 0x5C, 0, 1);                         // big: sub xmm0, xmm1 (4 bytes)
  convert_to_int(e, width, RAX, 0);                         // (5 bytes)
  e.byte(0x48), e.byte(0x0F), e.byte(0xBA), e.byte(0xF8), e.byte(0x3F);  // btc rax, 63; done:
}

// fptosi.sat / fptoui.sat of xmm0 (x, `from` bits; its bits also in rax) to a w-bit
// integer in rax, without branches: convert, then cmov the bounds and 0 in where x
// lies beyond them. cvtt gives 2^63 for what does not fit 64 signed bits, so the
// upper bound is tested on x itself, and x >= bound catches every such case.
KILN_HD inline uint64_t float_power_of_two(uint32_t from, uint32_t k) {  // 2^k's bits, k <= 64
  return from == 32 ? static_cast<uint64_t>(127 + k) << 23 : static_cast<uint64_t>(1023 + k) << 52;
}
KILN_HD inline void encode_float_saturating(Emitter& e, uint32_t w, uint32_t from, bool is_signed) {
  const uint64_t max = is_signed ? (w == 64 ? 0x7FFFFFFFFFFFFFFFull : (1ull << (w - 1)) - 1)
                                 : (w == 64 ? ~0ull : (1ull << w) - 1);
  if (is_signed) {
    convert_to_int(e, from, RAX, 0);
    if (w < 64) {  // below the range (x < -2^63 converts to -2^63 too): the minimum
      mov_imm(e, RCX, ~0ull << (w - 1));
      e.byte(0x48), e.byte(0x39), e.byte(0xC8);                // cmp rax, rcx
      e.byte(0x48), e.byte(0x0F), e.byte(0x4C), e.byte(0xC1);  // cmovl rax, rcx
    }
  } else {
    mov_rr(e, RDX, RAX);  // x's bits: the u64 conversion changes xmm0
    if (w == 64) encode_float_to_u64(e, from);
    else convert_to_int(e, from, RAX, 0);
    movq_to_xmm(e, 0, RDX);
    e.byte(0x31), e.byte(0xC9);                              // xor ecx, ecx
    e.byte(0x0F), e.byte(0x57), e.byte(0xC9);                // xorps xmm1, xmm1
    unordered_compare(e, from, 0, 1);                        // x < 0 or NaN: CF
    e.byte(0x48), e.byte(0x0F), e.byte(0x42), e.byte(0xC1);  // cmovb rax, rcx
  }
  mov_imm(e, R11, float_power_of_two(from, is_signed ? w - 1 : w));
  movq_to_xmm(e, 1, R11);
  mov_imm(e, RCX, max);
  unordered_compare(e, from, 0, 1);                        // x >= 2^(w-1) or 2^w: no CF
  e.byte(0x48), e.byte(0x0F), e.byte(0x43), e.byte(0xC1);  // cmovae rax, rcx
  if (is_signed) {
    e.byte(0x31), e.byte(0xC9);                              // xor ecx, ecx
    unordered_compare(e, from, 0, 0);                        // NaN: PF
    e.byte(0x48), e.byte(0x0F), e.byte(0x4A), e.byte(0xC1);  // cmovp rax, rcx
  }
}

// An SSE scalar instruction F2/F3 0F `opcode` between xmm0 and [rbp + disp]: movsd or
// movss load (0x10) and store (0x11), and the arithmetic on a memory operand.
KILN_HD inline void sse_scalar_frame(Emitter& e, uint32_t width, uint32_t opcode, int32_t disp) {
  e.byte(width == 32 ? 0xF3 : 0xF2), e.byte(0x0F), e.byte(opcode);
  mem_operand(e, 0, RBP, disp);
}

// fadd, fsub, fmul and fdiv: op0 into xmm0 from rax where the instruction before left
// it there, else from its slot; op1 as a memory operand where it is in the frame (a
// float's slot holds it in its low 4 bytes), else through rcx and xmm1. A double's
// result goes from xmm0 to its slot (double_arithmetic); a float's through rax, which
// zero-extends it as every slot holds its value.
KILN_HD inline void encode_float_arithmetic(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  const uint32_t w = in.width;
  const uint32_t opcode = in.aux == kFloatAdd ? 0x58 : in.aux == kFloatSub ? 0x5C : in.aux == kFloatMul ? 0x59 : 0x5E;
  int32_t at = 0;
  if (!rax_holds(m, l.home, i, ops[0]) && operand_in_frame(l, ops[0], &at)) {
    sse_scalar_frame(e, w, 0x10, at);
  } else {
    load_rax(e, m, l, i, ops[0]);
    movq_to_xmm(e, 0, RAX);
  }
  if (operand_in_frame(l, ops[1], &at)) {
    sse_scalar_frame(e, w, opcode, at);
  } else {
    load_operand(e, l, ops[1], RCX);
    movq_to_xmm(e, 1, RCX);
    sse_scalar(e, w, opcode, 0, 1);
  }
  if (double_arithmetic(in)) return sse_scalar_frame(e, w, 0x11, slot_disp(l, i));
  move_from_xmm(e, RAX, 0, w);
  store_result(e, l, i);
}

// kOpFloat other than fadd, fsub, fmul and fdiv (encode_float_arithmetic): op0 in rax
// (rax_operand), op1 in rcx; the result in rax, normalised (movd
// zero-extends a float; the 32-bit xor and and of a float's sign do too).
// Negation and absolute value flip or clear the sign bit in rax, as LLVM's fneg and
// fabs do to any value, NaN included. Out-of-range fptosi/fptoui are poison in LLVM:
// whatever the conversion gives will do.
KILN_HD KILN_CPU_NOINLINE inline void encode_float(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                   uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  uint32_t w = in.width, from = ops[0].width;
  if (in.aux <= kFloatDiv) return encode_float_arithmetic(e, m, l, i);
  load_rax(e, m, l, i, ops[0]);
  switch (in.aux) {
    case kFloatNeg:
    case kFloatAbs:
      if (w == 32) e.byte(in.aux == kFloatNeg ? 0x35 : 0x25), e.u32(in.aux == kFloatNeg ? 0x80000000u : 0x7FFFFFFFu);
      else e.byte(0x48), e.byte(0x0F), e.byte(0xBA), e.byte(in.aux == kFloatNeg ? 0xF8 : 0xF0), e.byte(0x3F);  // btc/btr rax, 63
      break;
    case kFloatMin:
    case kFloatMax:  // xmm2 = b min/max a; b (in rcx) where a is NaN
      load_operand(e, l, ops[1], RCX);
      movq_to_xmm(e, 0, RAX);
      movq_to_xmm(e, 2, RCX);
      sse_scalar(e, w, in.aux == kFloatMin ? 0x5D : 0x5F, 2, 0);
      move_from_xmm(e, RAX, 2, w);
      unordered_compare(e, w, 0, 0);
      e.byte(0x48), e.byte(0x0F), e.byte(0x4A), e.byte(0xC1);  // cmovp rax, rcx
      break;
    case kFloatSqrt:
      movq_to_xmm(e, 0, RAX);
      sse_scalar(e, w, 0x51, 0, 0);
      move_from_xmm(e, RAX, 0, w);
      break;
    case kFloatMulAdd:  // mulsd xmm0, xmm1 (a * b), then addsd xmm0, xmm1 (+ c): two roundings
      load_operand(e, l, ops[1], RCX);
      movq_to_xmm(e, 0, RAX);
      movq_to_xmm(e, 1, RCX);
      sse_scalar(e, w, 0x59, 0, 1);
      load_operand(e, l, ops[2], RCX);
      movq_to_xmm(e, 1, RCX);
      sse_scalar(e, w, 0x58, 0, 1);
      move_from_xmm(e, RAX, 0, w);
      break;
    case kFloatCmp:
      load_operand(e, l, ops[1], RCX);
      movq_to_xmm(e, 0, RAX);
      movq_to_xmm(e, 1, RCX);
      encode_fcmp(e, from, static_cast<uint32_t>(in.imm));
      break;
    case kFloatExt:
    case kFloatTrunc:  // cvtss2sd (F3 0F 5A) / cvtsd2ss (F2 0F 5A)
      movq_to_xmm(e, 0, RAX);
      sse_scalar(e, in.aux == kFloatExt ? 32 : 64, 0x5A, 0, 0);
      move_from_xmm(e, RAX, 0, w);
      break;
    case kFloatFromSigned:
    case kFloatFromUnsigned:  // below 64 bits an unsigned value is a non-negative signed one
      if (in.aux == kFloatFromSigned) sign_extend(e, RAX, from);
      if (in.aux == kFloatFromUnsigned && from == 64) encode_u64_to_float(e, w);
      else convert_from_int(e, w, 0, RAX);
      move_from_xmm(e, RAX, 0, w);
      break;
    case kFloatToSignedSat:
    case kFloatToUnsignedSat:
      movq_to_xmm(e, 0, RAX);
      encode_float_saturating(e, w, from, in.aux == kFloatToSignedSat);
      normalize(e, RAX, w);
      break;
    default:  // kFloatToSigned, kFloatToUnsigned: below 64 bits both fit a signed conversion
      movq_to_xmm(e, 0, RAX);
      if (in.aux == kFloatToUnsigned && w == 64) encode_float_to_u64(e, from);
      else convert_to_int(e, from, RAX, 0);
      normalize(e, RAX, w);
      break;
  }
  store_result(e, l, i);
}

// A phi: its shadow to its slot, through r11 or rcx: a landing pad's rax and rdx must
// survive. An aggregate's shadow is the second half of its slot; an i128's the second
// 16 bytes. A phi with kPhiDirect has no shadow and no code.
KILN_HD KILN_CPU_NOINLINE inline void encode_phi(Emitter& e, const FlatInst& in, int32_t dst) {
  if (in.aux & kPhiDirect) return;
  if (in.width == 0) return copy_frame(e, dst, dst + static_cast<int32_t>((in.aux32 + 7) / 8 * 8), in.aux32);
  if (in.width == kWideBits) return copy_frame(e, dst, dst + 16, 16);
  load64(e, R11, dst + 8);
  store64(e, dst, R11);
}

// Encodes (or measures) flat instruction `i` at e.pos.
// ---- vectors ---------------------------------------------------------------------
// kOpVector works lane by lane through rax and rcx with the scalar templates, so each
// lane computes exactly as the scalar operation does; x86-64's baseline has no packed
// form of most of these (compares give all-ones lanes, not masks), and vector code is
// rare in real crates (the core::arch wrappers around one operation).

// Lane k (of `w` bits) of vector operand `op` into reg, zero-extended; zero for zero,
// undef and poison.
KILN_HD inline void load_lane(Emitter& e, const StampLayout& l, const FlatOperand& op, uint32_t k, uint32_t w,
                              uint32_t reg) {
  if (op.kind != kOperandValue) return mov_imm(e, reg, 0);
  const uint32_t bytes = vector_lane_bytes(w);
  load_bytes(e, reg, RBP, slot_disp(l, op.index) + static_cast<int32_t>(k * bytes), bytes);
}
KILN_HD inline void store_lane(Emitter& e, int32_t dst, uint32_t k, uint32_t w, uint32_t reg) {
  const uint32_t bytes = vector_lane_bytes(w);
  store_bytes(e, RBP, dst + static_cast<int32_t>(k * bytes), reg, bytes);
}
// rax = rax OP rcx at width w, as the scalar template computes it.
KILN_HD inline void lane_binary(Emitter& e, uint32_t op, uint32_t w) {
  FlatInst scalar{};
  scalar.op = static_cast<uint16_t>(op);
  scalar.width = static_cast<uint8_t>(w);
  encode_binary(e, scalar);
}

// Packed forms: the operations that SIMD crates' loops are made of (core::arch's
// wrappers: _mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, their 256-bit twins), on
// whole 16-byte vectors in xmm0 and xmm1 (32-byte ones as two halves), as LLVM -O0
// emits them; lane by lane they took 10-30 times the code. Integer add and sub, and,
// or, xor; byte compares eq, ne, sgt and slt to masks; masks widened to bytes; masks
// of 16 or 32 lanes to an integer (pmovmskb). A mask keeps its lanes as bytes 0 or 1,
// so a compare's all-ones lanes are negated into ones. Legacy SSE2 encodings only:
// every x86-64 has them, and VEX stays with functions that have AVX. xmm0 and xmm1 are
// scratch between instructions (vector arguments are in the frame by then).
KILN_HD inline void sse2_rr(Emitter& e, uint32_t opcode, uint32_t dst, uint32_t src) {
  e.byte(0x66), e.byte(0x0F), e.byte(opcode), e.byte(0xC0 | (dst << 3) | src);  // op xmm(dst), xmm(src)
}
// xmm `reg` = half `h` (16 bytes) of vector operand `op`; zero for zero, undef, poison.
KILN_HD inline void load_half(Emitter& e, const StampLayout& l, const FlatOperand& op, uint32_t h, uint32_t reg) {
  if (op.kind != kOperandValue) return sse2_rr(e, 0xEF, reg, reg);  // pxor
  e.byte(0x0F), e.byte(0x10);                                        // movups xmm, [rbp + disp]
  mem_operand(e, reg, RBP, slot_disp(l, op.index) + static_cast<int32_t>(16 * h));
}
KILN_HD inline void store_half(Emitter& e, int32_t dst, uint32_t h, uint32_t reg) {
  e.byte(0x0F), e.byte(0x11);  // movups [rbp + disp], xmm
  mem_operand(e, reg, RBP, dst + static_cast<int32_t>(16 * h));
}
// The SSE2 opcode of a packed add, sub, and, or or xor of lanes of w bits; 0 for none
// (a mask takes and, or and xor only).
KILN_HD inline uint32_t packed_binary_opcode(uint32_t op, uint32_t w) {
  const uint32_t at = w == 8 ? 0 : w == 16 ? 1 : w == 32 ? 2 : w == 64 ? 3 : 4;
  const uint8_t add[] = {0xFC, 0xFD, 0xFE, 0xD4}, sub[] = {0xF8, 0xF9, 0xFA, 0xFB};  // paddb.. paddq, psubb.. psubq
  switch (op) {
    case kOpAnd:
      return 0xDB;  // pand
    case kOpOr:
      return 0xEB;  // por
    case kOpXor:
      return 0xEF;  // pxor
    case kOpAdd:
      return at < 4 ? add[at] : 0;
    case kOpSub:
      return at < 4 ? sub[at] : 0;
    default:
      return 0;
  }
}
// Whether kOpVector `in` has a packed form (encode_vector_packed).
KILN_HD inline bool vector_is_packed(const FlatInst& in) {
  const uint32_t lanes = in.aux32, w = in.width, param = static_cast<uint32_t>(in.imm);
  const uint32_t bytes = lanes * vector_lane_bytes(w);
  switch (in.aux) {
    case kVecBinary:
      return (bytes == 16 || bytes == 32) && packed_binary_opcode(param, w) != 0;
    case kVecIcmp: {
      const uint32_t predicate = param & 0xff, from = (param >> 8) & 0xff;
      return from == 8 && (lanes == 16 || lanes == 32) &&
          (predicate == kPredEq || predicate == kPredNe || predicate == kPredSgt || predicate == kPredSlt);
    }
    case kVecSext:
    case kVecZext:
      return param == 1 && w == 8 && (lanes == 16 || lanes == 32);
    case kVecMaskToInt:
      return lanes == 16 || lanes == 32;
    default:
      return false;
  }
}
KILN_HD inline void encode_vector_packed(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  const int32_t dst = slot_disp(l, i);
  const uint32_t lanes = in.aux32, w = in.width, param = static_cast<uint32_t>(in.imm);
  const uint32_t halves = in.aux == kVecBinary ? lanes * vector_lane_bytes(w) / 16 : lanes / 16;
  for (uint32_t h = 0; h < halves; ++h) {
    switch (in.aux) {
      case kVecBinary:
        load_half(e, l, ops[0], h, 0);
        load_half(e, l, ops[1], h, 1);
        sse2_rr(e, packed_binary_opcode(param, w), 0, 1);
        store_half(e, dst, h, 0);
        break;
      case kVecIcmp: {
        const uint32_t predicate = param & 0xff;
        const bool swap = predicate == kPredSlt;  // a < b is b > a
        load_half(e, l, ops[swap ? 1 : 0], h, 0);
        load_half(e, l, ops[swap ? 0 : 1], h, 1);
        const bool equality = predicate == kPredEq || predicate == kPredNe;
        sse2_rr(e, equality ? 0x74 : 0x64, 0, 1);  // pcmpeqb / pcmpgtb xmm0, xmm1: all ones where true
        if (predicate == kPredNe) {
          sse2_rr(e, 0x74, 1, 1);  // pcmpeqb xmm1, xmm1: all ones
          sse2_rr(e, 0xF8, 0, 1);  // psubb xmm0, xmm1: each byte + 1, so 0 where equal, 1 where not
          store_half(e, dst, h, 0);
        } else {
          sse2_rr(e, 0xEF, 1, 1);  // pxor xmm1, xmm1
          sse2_rr(e, 0xF8, 1, 0);  // psubb xmm1, xmm0: 0 - all ones = 1
          store_half(e, dst, h, 1);
        }
        break;
      }
      case kVecSext:  // mask bytes 0 or 1 to 0 or all ones
        load_half(e, l, ops[0], h, 1);
        sse2_rr(e, 0xEF, 0, 0);  // pxor xmm0, xmm0
        sse2_rr(e, 0xF8, 0, 1);  // psubb xmm0, xmm1
        store_half(e, dst, h, 0);
        break;
      case kVecZext:  // mask bytes 0 or 1 are the byte lanes already
        load_half(e, l, ops[0], h, 0);
        store_half(e, dst, h, 0);
        break;
      default:  // kVecMaskToInt: bit 0 of each byte to bit 7 (psllw 7 moves nothing across bytes
                // whose other bits are 0), then pmovmskb into eax, the high half into ecx
        load_half(e, l, ops[0], h, 0);
        e.byte(0x66), e.byte(0x0F), e.byte(0x71), e.byte(0xF0), e.byte(7);  // psllw xmm0, 7
        e.byte(0x66), e.byte(0x0F), e.byte(0xD7), e.byte(h ? 0xC8 : 0xC0);  // pmovmskb ecx/eax, xmm0
        if (h) {
          e.byte(0x48), e.byte(0xC1), e.byte(0xE1), e.byte(16);  // shl rcx, 16
          e.byte(0x48), e.byte(0x09), e.byte(0xC8);              // or rax, rcx
        }
        break;
    }
  }
  if (in.aux == kVecMaskToInt) store64(e, dst, RAX);
}

KILN_HD KILN_CPU_NOINLINE inline void encode_vector(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                    uint32_t i) {
  if (vector_is_packed(m.insts[i])) return encode_vector_packed(e, m, l, i);
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  const int32_t dst = slot_disp(l, i);
  const uint32_t lanes = in.aux32, w = in.width;
  const uint32_t param = static_cast<uint32_t>(in.imm);
  switch (in.aux) {
    case kVecBinary:
      for (uint32_t k = 0; k < lanes; ++k) {
        load_lane(e, l, ops[0], k, w, RAX);
        load_lane(e, l, ops[1], k, w, RCX);
        lane_binary(e, param, w);
        store_lane(e, dst, k, w, RAX);
      }
      return;
    case kVecIcmp: {
      const uint32_t predicate = param & 0xff, from = (param >> 8) & 0xff;
      for (uint32_t k = 0; k < lanes; ++k) {
        load_lane(e, l, ops[0], k, from, RAX);
        load_lane(e, l, ops[1], k, from, RCX);
        if (is_signed_predicate(predicate)) {
          sign_extend(e, RAX, from);
          sign_extend(e, RCX, from);
        }
        e.byte(0x48), e.byte(0x39), e.byte(0xC8);  // cmp rax, rcx
        setcc_al(e, predicate);
        store_lane(e, dst, k, 1, RAX);
      }
      return;
    }
    case kVecTrunc:
    case kVecZext:
    case kVecSext:
      for (uint32_t k = 0; k < lanes; ++k) {
        load_lane(e, l, ops[0], k, param, RAX);
        if (in.aux == kVecSext) sign_extend(e, RAX, param);
        if (in.aux == kVecTrunc) normalize(e, RAX, w);
        store_lane(e, dst, k, w, RAX);
      }
      return;
    case kVecMaskToInt:
      e.byte(0x31), e.byte(0xC0);  // xor eax, eax
      for (uint32_t k = 0; k < lanes; ++k) {
        load_lane(e, l, ops[0], k, 1, RCX);
        if (k) e.byte(0x48), e.byte(0xC1), e.byte(0xE1), e.byte(k);  // shl rcx, k
        e.byte(0x48), e.byte(0x09), e.byte(0xC8);                     // or rax, rcx
      }
      return store64(e, dst, RAX);
    case kVecExtract:
      load_lane(e, l, ops[0], param, w, RAX);
      return store64(e, dst, RAX);
    case kVecInsert:
      if (ops[0].kind == kOperandValue) copy_frame(e, dst, slot_disp(l, ops[0].index), lanes * vector_lane_bytes(w));
      else zero_frame(e, dst, lanes * vector_lane_bytes(w));
      load_operand(e, l, ops[1], RAX);
      return store_lane(e, dst, param, w, RAX);
    case kVecShuffle:
      for (uint32_t k = 0; k < lanes; ++k) {
        const int64_t pick = ops[2 + k].imm;
        if (pick < 0) mov_imm(e, RAX, 0);
        else if (static_cast<uint64_t>(pick) < param) load_lane(e, l, ops[0], static_cast<uint32_t>(pick), w, RAX);
        else load_lane(e, l, ops[1], static_cast<uint32_t>(pick - param), w, RAX);
        store_lane(e, dst, k, w, RAX);
      }
      return;
    case kVecArgument:  // the register as the caller left it: nothing before has used it
      return move_vector_arg(e, lanes * vector_lane_bytes(w), param, dst, false);
    case kVecShuffleBytes:  // without branches: the picked byte, and-ed with 0 or all ones
      for (uint32_t k = 0; k < lanes; ++k) {
        load_lane(e, l, ops[1], k, 8, RAX);         // movzx eax, the selector
        e.byte(0x89), e.byte(0xC1);                 // mov ecx, eax
        e.byte(0x83), e.byte(0xE0), e.byte(0x0F);  // and eax, 15
        if (ops[0].kind == kOperandValue) {         // movzx eax, byte [rbp + rax + table's 16-byte half]
          e.byte(0x0F), e.byte(0xB6), e.byte(0x84), e.byte(0x05);  // (not mem_operand's form: the bias here)
          e.u32(static_cast<uint32_t>(slot_disp(l, ops[0].index) + static_cast<int32_t>(k & ~15u) + e.frame_bias));
        } else {
          e.byte(0x31), e.byte(0xC0);  // xor eax, eax: a zero or undef table
        }
        e.byte(0xC1), e.byte(0xE9), e.byte(0x07);  // shr ecx, 7: 1 where bit 7 is set
        e.byte(0xFF), e.byte(0xC9);                // dec ecx: then 0, else all ones
        e.byte(0x21), e.byte(0xC8);                // and eax, ecx
        store_lane(e, dst, k, 8, RAX);
      }
      return;
    default:  // kVecReduce
      load_lane(e, l, ops[0], 0, w, RAX);
      for (uint32_t k = 1; k < lanes; ++k) {
        load_lane(e, l, ops[0], k, w, RCX);
        lane_binary(e, param, w);
      }
      return store64(e, dst, RAX);
  }
}

// A thread-local variable's address (op0), through __tls_get_addr (op1): the 16 bytes
// the x86-64 TLS ABI fixes, so that linkers recognise and relax them: data16 lea rdi,
// [rip + var@tlsgd]; data16 data16 rex.W call __tls_get_addr@plt. The address comes
// back in rax.
KILN_HD KILN_CPU_NOINLINE inline void encode_tls_address(Emitter& e, const StampLayout& l, uint32_t i,
                                                         const FlatOperand* ops) {
  e.byte(0x66), e.byte(0x48), e.byte(0x8D), e.byte(0x3D);
  e.reloc(kRelocTlsGd, ops[0].index, -4);
  e.u32(0);
  e.byte(0x66), e.byte(0x66), e.byte(0x48), e.byte(0xE8);
  e.reloc(kRelocPlt32, ops[1].index, -4);
  e.u32(0);
  store_result(e, l, i);
}

// select: an aggregate's or an i128's, on the flags of the compare right before it
// (compare_feeds_select: its values are in rdx and rsi), or on bit 0 of the condition.
KILN_HD KILN_CPU_NOINLINE inline void encode_select(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                    uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  if (in.width == 0) return encode_select_aggregate(e, m, l, i);
  if (in.width == kWideBits) return encode_select_wide(e, m, l, i);
  if (ops[0].kind == kOperandValue && compare_feeds_select(m, l, ops[0].index)) {
    mov_rr(e, RAX, RDX);
    const uint32_t cmov_not_cc = (setcc_opcode(m.insts[ops[0].index].aux) - 0x50) ^ 1;
    e.byte(0x48), e.byte(0x0F), e.byte(cmov_not_cc), e.byte(0xC6);  // cmov!cc rax, rsi
    return store_result(e, l, i);
  }
  // An i1 select with a constant false or true on one side is an and or an or (clang's
  // form of && and ||): both operands are 0 or 1, as every i1 in a slot is.
  const bool and_form = in.width == 1 && ops[2].kind == kOperandConst && ops[2].imm == 0;
  const bool or_form = in.width == 1 && ops[1].kind == kOperandConst && ops[1].imm == 1;
  if (and_form || or_form) {
    const FlatOperand& other = and_form ? ops[1] : ops[2];
    load_rax(e, m, l, i, ops[0]);
    int32_t at = 0;
    if (operand_in_frame(l, other, &at)) {
      e.byte(0x48), e.byte(and_form ? 0x23 : 0x0B);  // and/or rax, [rbp + at]
      mem_operand(e, RAX, RBP, at);
    } else {
      load_operand(e, l, other, RCX);
      e.byte(0x48), e.byte(and_form ? 0x21 : 0x09), e.byte(0xC8);  // and/or rax, rcx
    }
    return store_result(e, l, i);
  }
  load_operand(e, l, ops[0], RDX);
  load_operand(e, l, ops[1], RAX);
  load_operand(e, l, ops[2], RCX);
  e.byte(0xF6), e.byte(0xC2), e.byte(0x01);                // test dl, 1
  e.byte(0x48), e.byte(0x0F), e.byte(0x44), e.byte(0xC1);  // cmovz rax, rcx
  store_result(e, l, i);
}

// The templates encode_inst dispatches to that are not functions of their own above.
KILN_HD KILN_CPU_NOINLINE inline void encode_cast(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                  uint32_t i) {
  const FlatInst& in = m.insts[i];
  load_rax(e, m, l, i, m.operands[in.first_operand]);
  if (in.op == kOpSext) sign_extend(e, RAX, in.aux);
  if (in.op != kOpCopy && !(in.op == kOpTrunc && in.width == 1 && only_bit0_read(m, l, i))) normalize(e, RAX, in.width);
  store_result(e, l, i);
}
KILN_HD KILN_CPU_NOINLINE inline void encode_alloca(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                    uint32_t i) {
  const FlatInst& in = m.insts[i];
  if (is_frame_shape(m, value_operand(i))) return;  // every use recomputes or addresses it
  e.byte(0x48), e.byte(0x8D);                       // lea rax, [rbp + disp], or over-aligned: [rbp + disp + align - 1]
  mem_operand(e, RAX, RBP, -l.alloca_mem[i] + (in.imm > 16 ? static_cast<int32_t>(in.imm - 1) : 0));
  if (in.imm > 16) {  // then rounded down: & -align
    if (in.imm <= 128) {
      e.byte(0x48), e.byte(0x83), e.byte(0xE0), e.byte(static_cast<uint32_t>(-static_cast<int32_t>(in.imm)) & 0xff);
    } else {
      e.byte(0x48), e.byte(0x25);
      e.u32(static_cast<uint32_t>(-static_cast<int32_t>(in.imm)));
    }
  }
  store_result(e, l, i);
}
KILN_HD KILN_CPU_NOINLINE inline void encode_store_inst(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                        uint32_t i) {
  encode_store(e, m, l, i);
  if (m.insts[i].aux & kStoreSeqCst) e.byte(0x0F), e.byte(0xAE), e.byte(0xF0);  // mfence
}
KILN_HD KILN_CPU_NOINLINE inline void encode_overflow_inst(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                           uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  const int32_t dst = in.slot_size ? slot_disp(l, i) : 0;
  const uint32_t w = ops[0].width;
  load_operand(e, l, ops[0], RAX);
  load_operand(e, l, ops[1], RCX);
  encode_overflow(e, in, w);
  normalize(e, RAX, w);
  store64(e, dst, RAX);  // field 0 (the slot is at least 8 bytes); field 1 after it
  store_narrow(e, dst + static_cast<int32_t>(in.imm), RCX, 1);
}
KILN_HD KILN_CPU_NOINLINE inline void encode_invoke(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                    uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  const FlatOperand& normal = ops[in.operand_count - 2];
  const FlatOperand& unwind = ops[in.operand_count - 1];
  // The unwind edge leaves from inside the call: its phis get their values first.
  FlatOperand before_call{}, after_call{};  // what rax holds: unknown at each
  phi_copies_for(e, m, l, in.block, unwind.index, &before_call);
  encode_call(e, m, l, i, in.operand_count - 2);
  phi_copies_for(e, m, l, in.block, normal.index, &after_call);
  jump_to_block(e, l, in.block, normal.index);
}
KILN_HD KILN_CPU_NOINLINE inline void encode_bit_op_inst(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                         uint32_t i) {
  const FlatInst& in = m.insts[i];
  const FlatOperand* ops = m.operands + in.first_operand;
  if (in.aux == kBitFshl || in.aux == kBitFshr) return encode_funnel(e, m, l, i);
  load_rax(e, m, l, i, ops[0]);
  if (in.operand_count > 1) load_operand(e, l, ops[1], RCX);
  encode_bit_op(e, in.aux, ops[0].width);
  normalize(e, RAX, in.width);
  store_result(e, l, i);
}
KILN_HD KILN_CPU_NOINLINE inline void encode_landing_pad(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                         uint32_t i) {
  // The personality hands over the exception in rax and its selector in edx.
  const int32_t dst = m.insts[i].slot_size ? slot_disp(l, i) : 0;
  store64(e, dst, RAX);
  store_narrow(e, dst + 8, RDX, 4);
}
KILN_HD KILN_CPU_NOINLINE inline void encode_resume(Emitter& e, const FlatModuleView& m, const StampLayout& l,
                                                    uint32_t i) {
  const FlatOperand* ops = m.operands + m.insts[i].first_operand;
  load64(e, RDI, slot_disp(l, ops[0].index));
  e.byte(0xE8);
  e.reloc(kRelocPlt32, ops[1].index, -4);  // op1: the _Unwind_Resume symbol
  e.u32(0);
  e.byte(0x0F), e.byte(0x0B);  // ud2: _Unwind_Resume does not return
}
KILN_HD KILN_CPU_NOINLINE inline void encode_br(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  phi_copies(e, m, l, i);
  jump_to_block(e, l, m.insts[i].block, m.operands[m.insts[i].first_operand].index);
}

// One instruction's template. Only a dispatch: each case a call of its own, so that
// what one template keeps in registers is saved and restored in it alone.
KILN_HD inline void encode_inst(Emitter& e, const FlatModuleView& m, const StampLayout& l, uint32_t i) {
  const FlatInst& in = m.insts[i];
  switch (in.op) {
    case kOpNop:
      return;
    case kOpCopy:
    case kOpTrunc:
    case kOpSext:
      return encode_cast(e, m, l, i);
    case kOpAdd:
    case kOpSub:
    case kOpMul:
    case kOpAnd:
    case kOpOr:
    case kOpXor:
    case kOpShl:
    case kOpLshr:
    case kOpAshr:
    case kOpUdiv:
    case kOpSdiv:
    case kOpUrem:
    case kOpSrem:
      return encode_binary_op(e, m, l, i);
    case kOpIcmp:
      return encode_icmp(e, m, l, i);
    case kOpSelect:
      return encode_select(e, m, l, i);
    case kOpAlloca:
      return encode_alloca(e, m, l, i);
    case kOpLoad:
      return encode_load(e, m, l, i);
    case kOpStore:
      return encode_store_inst(e, m, l, i);
    case kOpGep:
      return encode_gep(e, m, l, i);
    case kOpExtract:
      return encode_extract(e, m, l, i);
    case kOpInsert:
      return encode_insert(e, m, l, i);
    case kOpPhi:
      return encode_phi(e, in, in.slot_size ? slot_disp(l, i) : 0);
    case kOpOverflow:
      return encode_overflow_inst(e, m, l, i);
    case kOpCall:
      return encode_call(e, m, l, i, in.operand_count);
    case kOpInvoke:
      return encode_invoke(e, m, l, i);
    case kOpBitOp:
      return encode_bit_op_inst(e, m, l, i);
    case kOpAtomicRmw:
      return encode_atomic_rmw(e, m, l, i);
    case kOpCmpXchg:
      return encode_cmpxchg(e, m, l, i);
    case kOpFence:
      if (in.aux) e.byte(0x0F), e.byte(0xAE), e.byte(0xF0);  // mfence
      return;
    case kOpWide:
      return encode_wide(e, m, l, i);
    case kOpFloat:
      return encode_float(e, m, l, i);
    case kOpTlsAddress:
      return encode_tls_address(e, l, i, m.operands + in.first_operand);
    case kOpVector:
      return encode_vector(e, m, l, i);
    case kOpLandingPad:
      return encode_landing_pad(e, m, l, i);
    case kOpResume:
      return encode_resume(e, m, l, i);
    case kOpBr:
      return encode_br(e, m, l, i);
    case kOpCondBr:
      return encode_cond_br(e, m, l, i);
    case kOpSwitch:
      return encode_switch(e, m, l, i);
    case kOpRet:
      return encode_ret(e, m, l, i);
    default:  // kOpUnreachable: ud2, unless a call that does not return comes right before
      if (!(in.aux & kUnreachableAfterNoreturn)) e.byte(0x0F), e.byte(0x0B);
      return;
  }
}

}  // namespace kiln
