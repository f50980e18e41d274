// Function bodies (FUNCTION_BLOCK_ID 12) read without LLVM: the records of
// llvm/lib/Bitcode/Reader/BitcodeReader.cpp's parseFunctionBody, decoded into the
// Inst arrays of bitcode_ir.h. Only opaque-pointer bitcode with relative value ids
// (what LLVM 15 and later write) is taken; the older encodings, which need a typed
// pointer's element type, decline the function rather than guess it.
#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "bitcode_debug.h"
#include "bitcode_reader_internal.h"

namespace kiln::bc::detail {

namespace {

// FUNC_CODE_* (LLVMBitCodes.h).
enum FuncCode : uint32_t {
  kDeclareBlocks = 1,
  kBinop = 2,
  kCast = 3,
  kSelectOld = 5,
  kExtractElt = 6,
  kInsertElt = 7,
  kShuffleVec = 8,
  kCmp = 9,
  kRet = 10,
  kBr = 11,
  kSwitch = 12,
  kInvoke = 13,
  kUnreachable = 15,
  kPhi = 16,
  kAlloca = 19,
  kLoad = 20,
  kVaArg = 23,
  kExtractVal = 26,
  kInsertVal = 27,
  kCmp2 = 28,
  kVSelect = 29,
  kIndirectBr = 31,
  kDebugLocAgain = 33,
  kCall = 34,
  kDebugLoc = 35,
  kFence = 36,
  kResume = 39,
  kLoadAtomic = 41,
  kGep = 43,
  kStore = 44,
  kStoreAtomic = 45,
  kCmpXchg = 46,
  kLandingPad = 47,
  kCleanupRet = 48,
  kCatchRet = 49,
  kCatchPad = 50,
  kCleanupPad = 51,
  kCatchSwitch = 52,
  kOperandBundle = 55,
  kCallBr = 57,
  kUnop = 56,
  kFreeze = 58,
  kAtomicRmw = 59,
  kBlockAddrUsers = 60,
  kFirstDebugRecord = 61,
  kDebugRecordDeclare = 62,
  kLastDebugRecord = 66,
};

// CALL's cc field (bitc::CallMarkersFlags).
constexpr uint64_t kCallMustTail = 1u << 14, kCallExplicitType = 1u << 15, kCallNoTail = 1u << 16, kCallFmf = 1u << 17;
constexpr uint64_t kInvokeExplicitType = 1u << 13;
constexpr uint32_t kMaxCallingConv = 1023;                // CallingConv::MaxID: INVOKE masks with it
constexpr uint64_t kOperandBundleMetadata = 0x80000000u;  // bitc::OB_METADATA
constexpr uint64_t kSwitchMagic = 0x4B5;                  // the case-range SWITCH form LLVM once wrote
constexpr uint64_t kMaxAlignExponent = 33;                // Value::MaxAlignmentExponent + 1

// What a function cannot be decoded for: caught by read_function_block, which
// records the reason and skips the rest of the block.
struct Decline {
  std::string why;
};


class FunctionReader {
 public:
  FunctionReader(BitstreamCursor& cursor, BcModule& m, uint32_t fn, const ReaderContext& context)
      : cursor_(cursor),
        m_(m),
        f_(m.functions[fn]),
        context_(context),
        rec_(context.buffers ? context.buffers->body_record : own_.body_record),
        types_(m.types.data()),
        type_count_(m.types.size()),
        buffers_(context.buffers ? *context.buffers : own_),
        lookups_(buffers_.types) {}

  void read();

 private:
  // --- The record being decoded, field by field.
  bool at_end() const { return at_ == end_; }
  size_t left() const { return size_t(end_ - at_); }
  // Inline, with their failures out of line: every record reads its fields through them.
  uint64_t field() {
    if (at_end()) [[unlikely]]
      too_short();
    return *at_++;
  }
  [[noreturn, gnu::cold, gnu::noinline]] void too_short() const;
  void expect_end(const char* what);

  // --- Types.
  const Type& type(uint32_t id) const {
    if (id >= type_count_) [[unlikely]]
      bad_type(id);
    return types_[id];
  }
  uint32_t type_ref(uint64_t id) {
    if (id >= type_count_) [[unlikely]]
      bad_type(id);
    return uint32_t(id);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void bad_type(uint64_t id) const;
  bool is_fp_or_fp_vector(uint32_t t) const;
  bool is_fp_math(uint32_t t) const;
  uint32_t find_type(TypeKind kind, uint32_t address_space = 0) const;
  uint32_t pointer_type(uint32_t address_space) const;
  uint32_t need(uint32_t t, const char* what) const {
    if (t == kNone) [[unlikely]]
      missing_type(what);
    return t;
  }
  [[noreturn, gnu::cold, gnu::noinline]] void missing_type(const char* what) const;
  uint32_t void_type() const { return need(void_, "void"); }
  uint32_t i1_type() const { return need(i1_, "i1"); }
  uint32_t bool_like(uint32_t operand_type);

  // --- Values: ids relative to next_id_, as LLVM's getValueTypePair and getValue read them.
  uint32_t type_of(uint32_t id) const;
  uint32_t relative(uint64_t field) const { return uint32_t(next_id_ - uint32_t(field)); }
  uint32_t value_and_type(uint32_t* type_out = nullptr);
  uint32_t value_of_type(uint32_t t);
  uint32_t typed_id(uint32_t id, uint32_t t);
  [[noreturn, gnu::cold, gnu::noinline]] void wrong_type(uint32_t id) const;
  void forward(uint32_t id, uint32_t t);
  uint32_t block_ref(uint64_t b);
  [[noreturn, gnu::cold, gnu::noinline]] void bad_block(uint64_t b) const;

  // --- Instructions.
  // commit() and commit_from() make the instruction where it is kept and return it for
  // the fields its record sets beyond these (computed before, so that a record that
  // fails has added no instruction). Inline in each record's function, whose constants
  // (a terminator, the operand count, an opcode that takes no bundles) drop most of
  // place()'s tests. commit_from(): the operands the record appended (see operands()).
  [[gnu::always_inline]] Inst& commit_from(Opcode op, uint32_t t, uint32_t first, bool terminator = false) {
    return place(op, t, first, f_.operands.size() - first, terminator);
  }
  // commit(): a fixed-size record's operands, appended here.
  [[gnu::always_inline]] Inst& commit(Opcode op, uint32_t t, std::initializer_list<uint32_t> operands,
                                      bool terminator = false);
  [[gnu::always_inline]] Inst& place(Opcode op, uint32_t t, uint32_t first, size_t count, bool terminator);
  [[noreturn, gnu::cold, gnu::noinline]] void bad_commit() const;
  [[gnu::noinline]] void define_forward(uint32_t value, uint32_t t);
  void read_record(uint32_t abbrev_id);
  void read_constants();
  void debug_loc(uint32_t code);
  void debug_record();
  void block(uint32_t id);
  void finish();

  // One function per record family.
  void arithmetic(uint32_t code);
  void cast();
  void gep();
  void vector_op(uint32_t code);
  void select(uint32_t code);
  void compare();
  void ret_br_unreachable(uint32_t code);
  void switch_inst();
  void indirect_br();
  void call_args(uint32_t fnty, bool labels_allowed, std::vector<uint32_t>& ops);
  void call();
  void invoke();
  void callbr();
  void phi();
  void landing_pad();
  void alloca_inst();
  void load(uint32_t code);
  void store(uint32_t code);
  void cmpxchg();
  void atomic_rmw();
  void fence();
  void aggregate(uint32_t code);
  void va_arg_freeze_resume(uint32_t code);
  void operand_bundle();
  void funclet_pad(uint32_t code);
  void funclet_exit(uint32_t code);
  uint32_t token_type() const { return need(find_type(TypeKind::kToken), "token"); }

  uint64_t alignment(uint64_t exponent);
  [[noreturn, gnu::cold, gnu::noinline]] void bad_alignment(uint64_t exponent) const;
  Ordering ordering(uint64_t v) const;
  bool single_thread(uint64_t ssid) const;

  BitstreamCursor& cursor_;
  BcModule& m_;
  BcFunction& f_;
  const ReaderContext& context_;
  BodyBuffers own_;
  RecordOps& rec_;
  // The fields of rec_ not yet read, and its end: pointers kept apart from rec_, which
  // the compiler would otherwise load through at every field.
  const uint64_t* at_ = nullptr;
  const uint64_t* end_ = nullptr;
  // m_.types, which no record of a body adds to, as pointer and count: a type's kind is
  // asked several times an instruction.
  const Type* types_;
  size_t type_count_;
  uint32_t code_ = 0;
  uint32_t next_id_ = 0;  // LLVM's NextValueNo: the id the next value gets
  uint32_t block_ = 0;    // the block instructions go to
  bool blocks_declared_ = false;
  bool bundles_pending_ = false;
  std::map<uint32_t, uint32_t> forward_;  // value id used before its definition -> its type
  // A record of many operands appends them to the body's operands as it reads them,
  // from `first` on, and commit_from() makes them the instruction's: they are not
  // gathered apart and copied. A record declined part way leaves its own there, which
  // read_function_block drops.
  std::vector<uint32_t>& operands(uint32_t& first) {
    first = uint32_t(f_.operands.size());
    return f_.operands;
  }
  BodyBuffers& buffers_;
  TypeLookups& lookups_;
  uint32_t void_ = kNone, i1_ = kNone;  // looked up once: many instructions need them
  int64_t default_alloca_as_ = -1;       // the data layout's alloca address space, once asked
  BcDebugLoc last_loc_;                 // DEBUG_LOC_AGAIN's
  bool has_last_loc_ = false;
};

void FunctionReader::too_short() const { cursor_.fail("function record " + std::to_string(code_) + " is too short"); }

void FunctionReader::expect_end(const char* what) {
  if (!at_end()) cursor_.fail(std::string("invalid ") + what + " record: extra fields");
}

void FunctionReader::bad_type(uint64_t id) const { cursor_.fail("type id " + std::to_string(id) + " out of range"); }

bool FunctionReader::is_fp_or_fp_vector(uint32_t t) const {
  const Type& ty = type(t);
  if (is_vector(ty.kind)) return !ty.elements.empty() && is_floating_point(type(ty.elements[0]).kind);
  return is_floating_point(ty.kind);
}

// FPMathOperator's test for a phi, select or call: floating point, possibly in vectors,
// arrays, or a struct of one such type repeated.
bool FunctionReader::is_fp_math(uint32_t t) const {
  for (int depth = 0; depth < 64 && type(t).kind == TypeKind::kArray && !type(t).elements.empty(); ++depth)
    t = type(t).elements[0];
  const Type& ty = type(t);
  if (ty.kind == TypeKind::kStruct && !ty.elements.empty()) {
    for (uint32_t e : ty.elements)
      if (e != ty.elements[0]) return false;
    return is_fp_or_fp_vector(ty.elements[0]);
  }
  return is_fp_or_fp_vector(t);
}

uint32_t FunctionReader::find_type(TypeKind kind, uint32_t address_space) const {
  for (uint32_t i = 0; i < m_.types.size(); ++i)
    if (m_.types[i].kind == kind && (kind != TypeKind::kPointer || m_.types[i].address_space == address_space))
      return i;
  return kNone;
}

uint32_t FunctionReader::pointer_type(uint32_t address_space) const {
  auto it = lookups_.pointers.find(address_space);
  return it == lookups_.pointers.end() ? kNone : it->second;
}

// A result type no record names must be in the table (LLVM enumerates every value's
// type); when it is not, the function is declined rather than given a wrong one.
void FunctionReader::missing_type(const char* what) const {
  throw Decline{std::string("reader: no ") + what + " type in the type table"};
}

// i1, or a vector of i1 as wide as `operand_type`: a comparison's result.
uint32_t FunctionReader::bool_like(uint32_t operand_type) {
  uint32_t i1 = i1_type();
  const Type& ty = type(operand_type);
  if (!is_vector(ty.kind)) return i1;
  return need(m_.find_vector_type(i1, ty.count, ty.kind == TypeKind::kScalableVector), "vector of i1");
}

// The value ids of most operands go through these: inline, their failures and forward
// references out of line.
inline uint32_t FunctionReader::type_of(uint32_t id) const {
  return id < m_.module_value_count ? m_.values[id].type : f_.values[id - m_.module_value_count].type;
}

// A use of value `id` whose type the context fixes (LLVM's getValue): a defined value
// must have that type, an undefined one becomes a forward reference of it.
inline uint32_t FunctionReader::typed_id(uint32_t id, uint32_t t) {
  if (id < next_id_) {
    if (type_of(id) != t) [[unlikely]]
      wrong_type(id);
  } else {
    forward(id, t);
  }
  return id;
}

void FunctionReader::wrong_type(uint32_t id) const {
  cursor_.fail("value " + std::to_string(id) + " has the wrong type");
}

[[gnu::noinline]] void FunctionReader::forward(uint32_t id, uint32_t t) {
  if (id >= kMetadataOperand) cursor_.fail("value id " + std::to_string(id) + " out of range");
  auto [it, inserted] = forward_.emplace(id, t);
  if (!inserted && it->second != t) cursor_.fail("forward reference " + std::to_string(id) + " used with two types");
}

// LLVM's getValueTypePair: a relative id, and after a forward one its type.
inline uint32_t FunctionReader::value_and_type(uint32_t* type_out) {
  uint32_t id = relative(field());
  uint32_t t;
  if (id < next_id_) {
    t = type_of(id);
  } else {
    t = type_ref(field());
    forward(id, t);
  }
  if (type_out) *type_out = t;
  return id;
}

inline uint32_t FunctionReader::value_of_type(uint32_t t) { return typed_id(relative(field()), t); }

inline uint32_t FunctionReader::block_ref(uint64_t b) {
  if (!blocks_declared_ || b >= f_.block_count) [[unlikely]]
    bad_block(b);
  return kBlockTag | uint32_t(b);
}

void FunctionReader::bad_block(uint64_t b) const { cursor_.fail("block id " + std::to_string(b) + " out of range"); }

inline uint64_t FunctionReader::alignment(uint64_t exponent) {
  if (exponent > kMaxAlignExponent) [[unlikely]]
    bad_alignment(exponent);
  return exponent == 0 ? 0 : uint64_t(1) << (exponent - 1);
}

void FunctionReader::bad_alignment(uint64_t exponent) const {
  cursor_.fail("invalid alignment exponent " + std::to_string(exponent));
}

// LLVM maps an unknown ordering to seq_cst.
Ordering FunctionReader::ordering(uint64_t v) const { return v <= 6 ? Ordering(v) : Ordering::kSeqCst; }

// Sync scope ids are the writer's context's: 0 is singlethread and 1 the system in
// every context; others are named by SYNC_SCOPE_NAMES (unknown ones are the system).
bool FunctionReader::single_thread(uint64_t ssid) const {
  if (ssid <= 1) return ssid == 0;
  return ssid < context_.sync_scope_names.size() && context_.sync_scope_names[ssid] == "singlethread";
}

// Appends an instruction to the current block, its operands the `count` from `first`
// on; a value-producing one takes the next value id (filling a forward reference to
// it), a terminator moves on to the next block. Its failures, in the order they are
// tested: no block to append to, bundles before an instruction that takes none, a result
// type out of range, too many values.
inline Inst& FunctionReader::place(Opcode op, uint32_t t, uint32_t first, size_t count, bool terminator) {
  const bool takes_bundles = op == Opcode::kCall || op == Opcode::kInvoke || op == Opcode::kCallBr;
  if (!blocks_declared_ || block_ >= f_.block_count || (bundles_pending_ && !takes_bundles)) [[unlikely]]
    bad_commit();
  const bool has_value = type(t).kind != TypeKind::kVoid;
  if (has_value && next_id_ >= kMetadataOperand) [[unlikely]]
    cursor_.fail("too many values");
  const uint32_t index = uint32_t(f_.insts.size());
  Inst& inst = f_.insts.emplace_back();
  inst.opcode = op;
  inst.type = t;
  if (takes_bundles) inst.has_bundles = bundles_pending_;
  bundles_pending_ = false;
  inst.block = block_;
  inst.first_operand = first;
  inst.operand_count = uint32_t(count);
  if (op == Opcode::kAlloca) inst.static_alloca_candidate = block_ == 0;
  if (has_value) {
    inst.value = next_id_++;
    f_.values.push_back({ValueKind::kInstruction, t, index});
    if (!forward_.empty()) [[unlikely]]
      define_forward(inst.value, t);
  }
  if (terminator && ++block_ < f_.block_count) f_.block_first.push_back(index + 1);
  return inst;
}

inline Inst& FunctionReader::commit(Opcode op, uint32_t t, std::initializer_list<uint32_t> operands, bool terminator) {
  // Appended by hand: vector::insert's general path cost more than the rest of commit().
  std::vector<uint32_t>& all = f_.operands;
  const uint32_t first = uint32_t(all.size());
  if (all.capacity() - all.size() < operands.size())
    all.reserve(std::max(2 * all.capacity(), all.size() + operands.size()));
  for (uint32_t id : operands) all.push_back(id);
  return place(op, t, first, operands.size(), terminator);
}

void FunctionReader::bad_commit() const {
  if (!blocks_declared_ || block_ >= f_.block_count) cursor_.fail("instruction outside any declared block");
  cursor_.fail("operand bundles found with no consumer");  // commit()'s other test
}

// The value just defined fills the forward reference to it, if there is one.
void FunctionReader::define_forward(uint32_t value, uint32_t t) {
  if (auto it = forward_.find(value); it != forward_.end()) {
    if (it->second != t) cursor_.fail("value " + std::to_string(value) + " defined with another type");
    forward_.erase(it);
  }
}

// BINOP [lhs (value, type), rhs, opcode, flags?] and UNOP [op (value, type), opcode, flags?].
// The bitcode opcode is one for integers and floating point; the operand type picks.
void FunctionReader::arithmetic(uint32_t code) {
  uint32_t t;
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  ops.push_back(value_and_type(&t));
  if (code == kBinop) ops.push_back(value_of_type(t));
  uint64_t opc = field();
  bool fp = is_fp_or_fp_vector(t);
  if (left() > 1) cursor_.fail("invalid arithmetic record: extra fields");
  Opcode op;
  if (code == kUnop) {
    if (opc != 0 || !fp) cursor_.fail("invalid unary operator");
    op = Opcode::kFNeg;
  } else {
    static constexpr Opcode kInt[] = {Opcode::kAdd,  Opcode::kSub,  Opcode::kMul, Opcode::kUDiv, Opcode::kSDiv,
                                      Opcode::kURem, Opcode::kSRem, Opcode::kShl, Opcode::kLShr, Opcode::kAShr,
                                      Opcode::kAnd,  Opcode::kOr,   Opcode::kXor};
    static constexpr int8_t kFp[] = {int8_t(Opcode::kFAdd), int8_t(Opcode::kFSub),
                                     int8_t(Opcode::kFMul), -1,
                                     int8_t(Opcode::kFDiv), -1,
                                     int8_t(Opcode::kFRem)};
    if (opc >= std::size(kInt) || (fp && (opc >= std::size(kFp) || kFp[opc] < 0)))
      cursor_.fail("invalid binary operator " + std::to_string(opc));
    op = fp ? Opcode(kFp[opc]) : kInt[opc];
  }
  commit_from(op, t, first);
}

// CAST [op (value, type), destination type, opcode, flags?].
void FunctionReader::cast() {
  uint32_t from;
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  ops.push_back(value_and_type(&from));
  uint32_t to = type_ref(field());
  uint64_t opc = field();
  if (left() > 1) cursor_.fail("invalid cast record: extra fields");
  static constexpr Opcode kCasts[] = {Opcode::kTrunc,         Opcode::kZExt,     Opcode::kSExt,     Opcode::kFPToUI,
                                      Opcode::kFPToSI,        Opcode::kUIToFP,   Opcode::kSIToFP,   Opcode::kFPTrunc,
                                      Opcode::kFPExt,         Opcode::kPtrToInt, Opcode::kIntToPtr, Opcode::kBitCast,
                                      Opcode::kAddrSpaceCast, Opcode::kPtrToAddr};
  if (opc >= std::size(kCasts)) cursor_.fail("invalid cast opcode " + std::to_string(opc));
  // LLVM rewrites a bitcast between address spaces (old bitcode) into two casts.
  if (kCasts[opc] == Opcode::kBitCast && type(from).kind == TypeKind::kPointer && type(to).kind == TypeKind::kPointer &&
      type(from).address_space != type(to).address_space)
    throw Decline{"reader: bitcast between address spaces"};
  commit_from(kCasts[opc], to, first);
}

// GEP [flags, source type, base (value, type), indices (value, type)...]. The result is
// the base's pointer type, or a vector of it when the base or an index is a vector.
void FunctionReader::gep() {
  uint64_t flags = field();
  uint32_t source = type_ref(field());
  uint32_t base_type;
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  ops.push_back(value_and_type(&base_type));
  uint32_t result = base_type;
  while (!at_end()) {
    uint32_t t;
    ops.push_back(value_and_type(&t));
    const Type& ty = type(t);
    if (!is_vector(type(base_type).kind) && is_vector(ty.kind))
      result = need(m_.find_vector_type(base_type, ty.count, ty.kind == TypeKind::kScalableVector), "vector of ptr");
  }
  const bool vector_gep = is_vector(type(result).kind);
  Inst& inst = commit_from(Opcode::kGetElementPtr, result, first);
  inst.source_type = source;
  inst.inbounds = flags & 1;
  inst.vector_gep = vector_gep;
}

// EXTRACTELT [vector, index], INSERTELT [vector, element, index], SHUFFLEVEC [v1, v2,
// mask]. The mask, which LLVM keeps apart from the operands, is a third operand here.
void FunctionReader::vector_op(uint32_t code) {
  uint32_t vt;
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  ops.push_back(value_and_type(&vt));
  const Type& vec = type(vt);
  if (!is_vector(vec.kind) || vec.elements.empty()) cursor_.fail("vector operation on a non-vector");
  uint32_t result = vt;
  Opcode op = Opcode::kExtractElement;
  if (code == kExtractElt) {
    ops.push_back(value_and_type());
    result = vec.elements[0];
  } else if (code == kInsertElt) {
    op = Opcode::kInsertElement;
    ops.push_back(value_of_type(vec.elements[0]));
    ops.push_back(value_and_type());
  } else {
    op = Opcode::kShuffleVector;
    ops.push_back(value_of_type(vt));
    uint32_t mt;
    ops.push_back(value_and_type(&mt));
    const Type& mask = type(mt);
    if (!is_vector(mask.kind)) cursor_.fail("shufflevector mask is not a vector");
    result = need(m_.find_vector_type(vec.elements[0], mask.count, mask.kind == TypeKind::kScalableVector),
                  "shufflevector result");
  }
  expect_end("vector operation");
  commit_from(op, result, first);
}

// VSELECT [true (value, type), false, condition (value, type), flags?]; the old SELECT
// [true (value, type), false, condition (i1)]. Operands in LLVM's order: condition first.
void FunctionReader::select(uint32_t code) {
  uint32_t t;
  uint32_t if_true = value_and_type(&t);
  uint32_t if_false = value_of_type(t);
  uint32_t cond = code == kVSelect ? value_and_type() : value_of_type(i1_type());
  if (left() > (code == kVSelect ? 1 : 0)) cursor_.fail("invalid select record: extra fields");
  commit(Opcode::kSelect, t, {cond, if_true, if_false});
}

// CMP/CMP2 [lhs (value, type), rhs, predicate, flags?]: fcmp for floating point
// operands (predicates 0-15), icmp otherwise (32-41).
void FunctionReader::compare() {
  uint32_t t;
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  ops.push_back(value_and_type(&t));
  ops.push_back(value_of_type(t));
  uint64_t pred = field();
  if (left() > 1) cursor_.fail("invalid comparison record: extra fields");
  bool fp = is_fp_or_fp_vector(t);
  if (fp ? pred > 15 : (pred < 32 || pred > 41)) cursor_.fail("invalid comparison predicate " + std::to_string(pred));
  commit_from(fp ? Opcode::kFCmp : Opcode::kICmp, bool_like(t), first).aux = uint32_t(pred);
}

// RET [] or [value (value, type)]; BR [block] or [true block, false block, condition];
// UNREACHABLE [].
void FunctionReader::ret_br_unreachable(uint32_t code) {
  uint32_t void_t = void_type();
  if (code == kUnreachable) {
    commit(Opcode::kUnreachable, void_t, {}, true);
    return;
  }
  if (code == kRet) {
    uint32_t first;
    std::vector<uint32_t>& ops = operands(first);
    if (!at_end()) ops.push_back(value_and_type());
    expect_end("ret");
    commit_from(Opcode::kRet, void_t, first, true);
    return;
  }
  if (rec_.size() != 1 && rec_.size() != 3) cursor_.fail("invalid br record");
  uint32_t if_true = block_ref(rec_[0]);
  if (rec_.size() == 1) {
    commit(Opcode::kBr, void_t, {if_true}, true);
    return;
  }
  uint32_t if_false = block_ref(rec_[1]);
  at_ = rec_.begin() + 2;
  uint32_t cond = value_of_type(i1_type());
  commit(Opcode::kBr, void_t, {cond, if_true, if_false}, true);
}

// SWITCH [type, condition, default block, (case value, block)...]. Case values are
// absolute ids of integer constants.
void FunctionReader::switch_inst() {
  if (!rec_.empty() && (rec_[0] >> 16) == kSwitchMagic) throw Decline{"reader: switch with case ranges"};
  if (rec_.size() < 3 || rec_.size() % 2 == 0) cursor_.fail("invalid switch record");
  uint32_t t = type_ref(field());
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  ops.push_back(value_of_type(t));
  ops.push_back(block_ref(rec_[2]));
  for (size_t i = 3; i < rec_.size(); i += 2) {
    uint64_t id = rec_[i];
    if (id >= next_id_ || type_of(uint32_t(id)) != t) cursor_.fail("invalid switch case value");
    const ValueRef& v = id < m_.module_value_count ? m_.values[id] : f_.values[id - m_.module_value_count];
    if (v.kind != ValueKind::kConstant || v.index >= m_.constants.size() ||
        (m_.constants[v.index].kind != ConstKind::kInteger && m_.constants[v.index].kind != ConstKind::kNull))
      cursor_.fail("switch case value is not an integer constant");
    ops.push_back(uint32_t(id));
    ops.push_back(block_ref(rec_[i + 1]));
  }
  commit_from(Opcode::kSwitch, void_type(), first, true);
}

// INDIRECTBR [type, address, blocks...].
void FunctionReader::indirect_br() {
  if (rec_.size() < 2) cursor_.fail("invalid indirectbr record");
  uint32_t t = type_ref(field());
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  ops.push_back(value_of_type(t));
  for (size_t i = 2; i < rec_.size(); ++i) ops.push_back(block_ref(rec_[i]));
  commit_from(Opcode::kIndirectBr, void_type(), first, true);
}

// A call's arguments: one per fixed parameter of `fnty` (a relative id of the
// parameter's type; a metadata id for a metadata parameter; a block for a label one),
// then (value, type) pairs for the variadic ones.
void FunctionReader::call_args(uint32_t fnty, bool labels_allowed, std::vector<uint32_t>& ops) {
  const Type& ft = type(fnty);
  if (left() < ft.elements.size() - 1) cursor_.fail("too few call arguments");
  for (size_t i = 1; i < ft.elements.size(); ++i) {
    TypeKind kind = type(ft.elements[i]).kind;
    if (kind == TypeKind::kMetadata) {
      field();
      ops.push_back(kMetadataOperand);
    } else if (kind == TypeKind::kLabel) {
      if (!labels_allowed) throw Decline{"reader: label argument"};
      ops.push_back(block_ref(field()));
    } else {
      ops.push_back(value_of_type(ft.elements[i]));
    }
  }
  if (!ft.vararg) expect_end("call");
  while (!at_end()) ops.push_back(value_and_type());
}

uint32_t attribute_list(const BcModule& m, uint64_t v) {
  // LLVM reads an attribute list id it does not have as no attributes.
  return v == 0 || v - 1 >= m.attribute_lists.size() ? kNone : uint32_t(v - 1);
}

// CALL [attributes, cc, fmf?, function type, callee (value, type), arguments...].
void FunctionReader::call() {
  uint32_t attrs = attribute_list(m_, field());
  uint64_t cc = field();
  if (cc & kCallFmf) field();
  if (!(cc & kCallExplicitType)) throw Decline{"reader: call without explicit function type"};
  uint32_t fnty = type_ref(field());
  if (type(fnty).kind != TypeKind::kFunction || type(fnty).elements.empty())
    cursor_.fail("call of a non-function type");
  uint32_t callee = value_and_type();
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  call_args(fnty, true, ops);
  ops.push_back(callee);
  Inst& inst = commit_from(Opcode::kCall, type(fnty).elements[0], first);
  inst.source_type = fnty;
  inst.attributes = attrs;
  inst.calling_conv = uint32_t((cc & 0x7ff) >> 1);
  inst.musttail = (cc & kCallMustTail) && !(cc & kCallNoTail);
}

// INVOKE [attributes, cc, normal block, unwind block, function type, callee, arguments...].
void FunctionReader::invoke() {
  uint32_t attrs = attribute_list(m_, field());
  uint64_t cc = field();
  uint32_t normal = block_ref(field()), unwind = block_ref(field());
  if (!(cc & kInvokeExplicitType)) throw Decline{"reader: invoke without explicit function type"};
  uint32_t fnty = type_ref(field());
  if (type(fnty).kind != TypeKind::kFunction || type(fnty).elements.empty())
    cursor_.fail("invoke of a non-function type");
  uint32_t callee = value_and_type();
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  call_args(fnty, false, ops);
  ops.push_back(callee);
  ops.push_back(normal);
  ops.push_back(unwind);
  Inst& inst = commit_from(Opcode::kInvoke, type(fnty).elements[0], first, true);
  inst.source_type = fnty;
  inst.attributes = attrs;
  inst.calling_conv = uint32_t(cc & kMaxCallingConv);
}

// CALLBR [attributes, cc, default block, indirect count, indirect blocks..., function
// type, callee, arguments...]: operands args..., callee, default block, indirect blocks.
void FunctionReader::callbr() {
  uint32_t attrs = attribute_list(m_, field());
  uint64_t cc = field();
  std::vector<uint32_t> blocks{block_ref(field())};
  uint64_t indirect = field();
  if (indirect > left()) cursor_.fail("invalid callbr indirect count");
  for (uint64_t i = 0; i < indirect; ++i) blocks.push_back(block_ref(field()));
  if (!(cc & kCallExplicitType)) throw Decline{"reader: callbr without explicit function type"};
  uint32_t fnty = type_ref(field());
  if (type(fnty).kind != TypeKind::kFunction || type(fnty).elements.empty())
    cursor_.fail("callbr of a non-function type");
  uint32_t callee = value_and_type();
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  call_args(fnty, true, ops);
  // Old bitcode passed the indirect targets as blockaddress arguments, which LLVM
  // rewrites into label constraints; such a call is declined rather than rewritten.
  for (size_t i = first; i < ops.size(); ++i)
    if (const uint32_t id = ops[i]; id < next_id_ && id != kMetadataOperand && !(id & kBlockTag)) {
      const ValueRef& v = id < m_.module_value_count ? m_.values[id] : f_.values[id - m_.module_value_count];
      if (v.kind == ValueKind::kConstant && v.index < m_.constants.size() &&
          m_.constants[v.index].kind == ConstKind::kBlockAddress)
        throw Decline{"reader: callbr with blockaddress arguments"};
    }
  ops.push_back(callee);
  ops.insert(ops.end(), blocks.begin(), blocks.end());
  Inst& inst = commit_from(Opcode::kCallBr, type(fnty).elements[0], first, true);
  inst.source_type = fnty;
  inst.attributes = attrs;
  inst.calling_conv = uint32_t((cc & 0x7ff) >> 1);
}

// PHI [type, (value as a signed relative id, block)..., flags?]: a value may be a
// forward reference (a negative relative id), of the phi's type.
void FunctionReader::phi() {
  uint32_t t = type_ref(field());
  size_t pairs = left() / 2;
  if (left() % 2 == 1 && !is_fp_math(t)) cursor_.fail("invalid phi record");
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  for (size_t i = 0; i < pairs; ++i) {
    uint64_t v = field();
    // LLVM's decodeSignRotatedValue: the sign in bit 0.
    uint64_t delta = (v & 1) == 0 ? v >> 1 : v != 1 ? uint64_t(-int64_t(v >> 1)) : uint64_t(1) << 63;
    ops.push_back(typed_id(uint32_t(next_id_ - uint32_t(delta)), t));
    ops.push_back(block_ref(field()));
  }
  commit_from(Opcode::kPhi, t, first);
}

// LANDINGPAD [type, cleanup, clause count, (catch 0 / filter 1, value (value, type))...].
void FunctionReader::landing_pad() {
  uint32_t t = type_ref(field());
  bool cleanup = field() != 0;
  uint64_t clauses = field();
  if (clauses > left() / 2) cursor_.fail("invalid landingpad clause count");
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  // clause_filter is indexed like operands: its entries for this instruction's operands
  // go where those go, as they are read (not gathered apart, a malloc per landing pad).
  f_.clause_filter.resize(first);
  for (uint64_t i = 0; i < clauses; ++i) {
    f_.clause_filter.push_back(field() == 1 ? 1 : 0);
    ops.push_back(value_and_type());
  }
  expect_end("landingpad");
  commit_from(Opcode::kLandingPad, t, first).cleanup = cleanup;
}

// The address space of allocas when the record does not give one: the data layout's "A<n>".
uint32_t alloca_address_space(const std::string& layout) {
  for (size_t at = 0; at < layout.size();) {
    if (layout[at] == 'A') return uint32_t(std::strtoul(layout.c_str() + at + 1, nullptr, 10));
    size_t dash = layout.find('-', at);
    if (dash == std::string::npos) break;
    at = dash + 1;
  }
  return 0;
}

// ALLOCA [allocated type, size type, size (an absolute id), packed, address space?].
// packed: alignment exponent in bits 0-4 and 8-10, inalloca 5, explicit type 6, swifterror 7.
void FunctionReader::alloca_inst() {
  if (rec_.size() != 4 && rec_.size() != 5) cursor_.fail("invalid alloca record");
  uint64_t packed = rec_[3];
  if (!(packed & (1u << 6))) throw Decline{"reader: alloca of a typed pointer's element type"};
  uint32_t allocated = type_ref(rec_[0]);
  uint32_t size_type = type_ref(rec_[1]);
  if (rec_[2] >= kMetadataOperand) cursor_.fail("alloca size id out of range");
  uint32_t size = typed_id(uint32_t(rec_[2]), size_type);
  if (rec_.size() != 5 && default_alloca_as_ < 0) default_alloca_as_ = alloca_address_space(m_.data_layout);
  uint32_t as = rec_.size() == 5 ? uint32_t(rec_[4]) : uint32_t(default_alloca_as_);
  if (rec_.size() == 5 && rec_[4] > 0xFFFFFF) cursor_.fail("invalid alloca address space");
  const uint32_t result = need(pointer_type(as), "alloca's pointer");
  const uint64_t align = alignment((packed & 31) | (((packed >> 8) & 7) << 5));
  Inst& inst = commit(Opcode::kAlloca, result, {size});
  inst.source_type = allocated;
  inst.aux = size;
  inst.align = align;
  // LLVM's isStaticAlloca is false for an inalloca one, wherever it is.
  if (packed & (1u << 5)) inst.static_alloca_candidate = false;
}

// LOAD [pointer (value, type), type, align, volatile]; LOADATOMIC adds ordering and sync scope.
void FunctionReader::load(uint32_t code) {
  uint32_t ptr = value_and_type();
  size_t want = code == kLoad ? 3 : 5;
  if (left() == want - 1 || (code == kLoadAtomic && left() == want + 1))
    throw Decline{"reader: load without explicit type"};
  if (left() != want) cursor_.fail("invalid load record");
  const uint32_t t = type_ref(field());
  const uint64_t align = alignment(field());
  const bool is_volatile = field() != 0;
  Ordering order = Ordering::kNotAtomic;
  bool one_thread = false;
  if (code == kLoadAtomic) {
    order = ordering(field());
    one_thread = single_thread(field());
  }
  Inst& inst = commit(Opcode::kLoad, t, {ptr});
  inst.align = align;
  inst.is_volatile = is_volatile;
  inst.ordering = order;
  inst.single_thread = one_thread;
}

// STORE [pointer (value, type), value (value, type), align, volatile]; STOREATOMIC adds
// ordering and sync scope. Operands: value, then pointer.
void FunctionReader::store(uint32_t code) {
  uint32_t ptr = value_and_type();
  uint32_t value = value_and_type();
  if (left() != (code == kStore ? 2u : 4u)) cursor_.fail("invalid store record");
  const uint32_t t = void_type();
  const uint64_t align = alignment(field());
  const bool is_volatile = field() != 0;
  Ordering order = Ordering::kNotAtomic;
  bool one_thread = false;
  if (code == kStoreAtomic) {
    order = ordering(field());
    one_thread = single_thread(field());
  }
  Inst& inst = commit(Opcode::kStore, t, {value, ptr});
  inst.align = align;
  inst.is_volatile = is_volatile;
  inst.ordering = order;
  inst.single_thread = one_thread;
}

// CMPXCHG [pointer, compare (value, type), new, volatile, success ordering, sync scope,
// failure ordering, weak, align?]: the result is the literal struct {T, i1}.
void FunctionReader::cmpxchg() {
  uint32_t ptr = value_and_type();
  uint32_t t;
  uint32_t cmp = value_and_type(&t);
  uint32_t value = value_of_type(t);
  if (left() != 5 && left() != 6) cursor_.fail("invalid cmpxchg record");
  uint32_t i1 = i1_type();
  const uint32_t result = need(m_.find_struct_type({t, i1}, false), "cmpxchg result");
  const bool is_volatile = field() != 0;
  const Ordering order = ordering(field());
  const bool one_thread = single_thread(field());
  field();  // failure ordering
  field();  // weak
  const uint64_t align = at_end() ? 0 : alignment(field());
  Inst& inst = commit(Opcode::kAtomicCmpXchg, result, {ptr, cmp, value});
  inst.is_volatile = is_volatile;
  inst.ordering = order;
  inst.single_thread = one_thread;
  inst.align = align;
}

// ATOMICRMW [pointer, value (value, type), operation, volatile, ordering, sync scope, align?].
void FunctionReader::atomic_rmw() {
  uint32_t ptr = value_and_type();
  uint32_t t;
  uint32_t value = value_and_type(&t);
  if (left() != 4 && left() != 5) cursor_.fail("invalid atomicrmw record");
  uint64_t op = field();
  if (op > 20) cursor_.fail("invalid atomicrmw operation " + std::to_string(op));
  const bool is_volatile = field() != 0;
  const Ordering order = ordering(field());
  const bool one_thread = single_thread(field());
  const uint64_t align = at_end() ? 0 : alignment(field());
  Inst& inst = commit(Opcode::kAtomicRmw, t, {ptr, value});
  inst.aux = uint32_t(op);  // the bitcode's RMW_* code: RMW_XCHG..RMW_UMIN are RmwOp's order
  inst.is_volatile = is_volatile;
  inst.ordering = order;
  inst.single_thread = one_thread;
  inst.align = align;
}

// FENCE [ordering, sync scope].
void FunctionReader::fence() {
  if (rec_.size() != 2) cursor_.fail("invalid fence record");
  const uint32_t t = void_type();
  const Ordering order = ordering(rec_[0]);
  const bool one_thread = single_thread(rec_[1]);
  Inst& inst = commit(Opcode::kFence, t, {});
  inst.ordering = order;
  inst.single_thread = one_thread;
}

// EXTRACTVAL [aggregate (value, type), indices...]; INSERTVAL [aggregate, value (value,
// type), indices...]. The indices walk struct fields and array elements.
void FunctionReader::aggregate(uint32_t code) {
  uint32_t agg_type;
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  ops.push_back(value_and_type(&agg_type));
  uint32_t inserted_type = kNone;
  if (code == kInsertVal) ops.push_back(value_and_type(&inserted_type));
  if (at_end()) cursor_.fail("extractvalue/insertvalue without indices");
  const uint32_t first_index = uint32_t(f_.indices.size());
  uint32_t t = agg_type;
  while (!at_end()) {
    uint64_t index = field();
    const Type& ty = type(t);
    bool ok = (ty.kind == TypeKind::kStruct && index < ty.elements.size()) ||
        (ty.kind == TypeKind::kArray && index < ty.count && !ty.elements.empty());
    if (!ok) cursor_.fail("invalid aggregate index " + std::to_string(index));
    t = ty.kind == TypeKind::kStruct ? ty.elements[index] : ty.elements[0];
    f_.indices.push_back(uint32_t(index));
  }
  if (code == kInsertVal && t != inserted_type) cursor_.fail("inserted value type does not match the aggregate");
  Inst& inst = commit_from(code == kExtractVal ? Opcode::kExtractValue : Opcode::kInsertValue,
                           code == kExtractVal ? t : agg_type, first);
  inst.first_index = first_index;
  inst.index_count = uint32_t(f_.indices.size()) - first_index;
}

// VAARG [va_list type, va_list, result type]; FREEZE [value (value, type)]; RESUME [value (value, type)].
void FunctionReader::va_arg_freeze_resume(uint32_t code) {
  if (code == kVaArg) {
    if (rec_.size() < 3) cursor_.fail("invalid va_arg record");
    uint32_t list_type = type_ref(field());
    uint32_t list = value_of_type(list_type);
    commit(Opcode::kVAArg, type_ref(field()), {list});
    return;
  }
  uint32_t t;
  uint32_t value = value_and_type(&t);
  expect_end(code == kFreeze ? "freeze" : "resume");
  if (code == kFreeze) {
    commit(Opcode::kFreeze, t, {value});
    return;
  }
  commit(Opcode::kResume, void_type(), {value}, true);
}

// OPERAND_BUNDLE [tag, (value (value, type) | OB_METADATA, metadata id)...]: the next
// call or invoke has bundles. Its values are read for the forward references they make.
void FunctionReader::operand_bundle() {
  field();  // the tag
  while (!at_end()) {
    if (*at_ == kOperandBundleMetadata) {
      ++at_;
      field();
    } else {
      value_and_type();
    }
  }
  bundles_pending_ = true;
}

// CATCHPAD/CLEANUPPAD [parent pad (a token), argument count, arguments (value, type)...].
// Operands in LLVM's order: the arguments, then the parent pad.
void FunctionReader::funclet_pad(uint32_t code) {
  uint32_t token = token_type();
  uint32_t parent = value_of_type(token);
  uint64_t count = field();
  if (count > left()) cursor_.fail("invalid catchpad/cleanuppad argument count");
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  for (uint64_t i = 0; i < count; ++i) ops.push_back(value_and_type());
  expect_end("catchpad/cleanuppad");
  ops.push_back(parent);
  commit_from(code == kCatchPad ? Opcode::kCatchPad : Opcode::kCleanupPad, token, first);
}

// CLEANUPRET [pad, unwind block?]; CATCHRET [pad, block]; CATCHSWITCH [parent pad,
// handler count, handlers..., unwind block?]: operands in LLVM's order (catchswitch:
// parent, the unwind block when aux is 1, handlers).
void FunctionReader::funclet_exit(uint32_t code) {
  uint32_t token = token_type();
  uint32_t first;
  std::vector<uint32_t>& ops = operands(first);
  ops.push_back(value_of_type(token));
  if (code == kCleanupRet || code == kCatchRet) {
    if (code == kCatchRet || !at_end()) ops.push_back(block_ref(field()));
    expect_end(code == kCatchRet ? "catchret" : "cleanupret");
    commit_from(code == kCatchRet ? Opcode::kCatchRet : Opcode::kCleanupRet, void_type(), first, true);
    return;
  }
  uint64_t handlers = field();
  if (handlers > left() || left() - handlers > 1) cursor_.fail("invalid catchswitch record");
  const uint32_t unwind = left() > handlers ? 1 : 0;
  if (unwind) ops.push_back(block_ref(rec_.back()));
  for (uint64_t i = 0; i < handlers; ++i) ops.push_back(block_ref(field()));
  commit_from(Opcode::kCatchSwitch, token, first, true).aux = unwind;
}

void FunctionReader::read_record(uint32_t abbrev_id) {
  code_ = cursor_.read_record(abbrev_id, rec_);
  at_ = rec_.begin();
  end_ = rec_.end();
  switch (code_) {
    case kDeclareBlocks:
      if (blocks_declared_ || rec_.empty() || rec_[0] == 0 || rec_[0] > 0xFFFFFFFFu)
        cursor_.fail("invalid declareblocks record");
      blocks_declared_ = true;
      f_.block_count = uint32_t(rec_[0]);
      // Each block ends in a terminator of two bits at least.
      f_.block_first.reserve(std::min<uint64_t>(rec_[0], cursor_.bits_left() / 2));
      f_.block_first.push_back(0);
      return;
    case kBinop:
    case kUnop:
      return arithmetic(code_);
    case kCast:
      return cast();
    case kGep:
      return gep();
    case kSelectOld:
    case kVSelect:
      return select(code_);
    case kExtractElt:
    case kInsertElt:
    case kShuffleVec:
      return vector_op(code_);
    case kCmp:
    case kCmp2:
      return compare();
    case kRet:
    case kBr:
    case kUnreachable:
      return ret_br_unreachable(code_);
    case kSwitch:
      return switch_inst();
    case kIndirectBr:
      return indirect_br();
    case kInvoke:
      return invoke();
    case kCall:
      return call();
    case kCallBr:
      return callbr();
    case kPhi:
      return phi();
    case kLandingPad:
      return landing_pad();
    case kAlloca:
      return alloca_inst();
    case kLoad:
    case kLoadAtomic:
      return load(code_);
    case kStore:
    case kStoreAtomic:
      return store(code_);
    case kCmpXchg:
      return cmpxchg();
    case kAtomicRmw:
      return atomic_rmw();
    case kFence:
      return fence();
    case kExtractVal:
    case kInsertVal:
      return aggregate(code_);
    case kVaArg:
    case kFreeze:
    case kResume:
      return va_arg_freeze_resume(code_);
    case kOperandBundle:
      return operand_bundle();
    case kCatchPad:
    case kCleanupPad:
      return funclet_pad(code_);
    case kCleanupRet:
    case kCatchRet:
    case kCatchSwitch:
      return funclet_exit(code_);
    case kDebugLoc:
    case kDebugLocAgain:
      return debug_loc(code_);
    // Debug records (not instructions) and blockaddress users say nothing about the code.
    case kBlockAddrUsers:
      return;
    default:
      if (code_ >= kFirstDebugRecord && code_ <= kLastDebugRecord) return debug_record();
      throw Decline{"reader: function record " + std::to_string(code_)};
  }
}

// A function's CONSTANTS_BLOCK: its constants take the next value ids, and fill any
// forward reference to them. read_constants_block is given the id of the list's first
// element (the function's first argument), not of the first constant.
void FunctionReader::read_constants() {
  uint32_t first = next_id_;
  read_constants_block(cursor_, m_, f_.values, m_.module_value_count, buffers_);
  if (f_.values.size() >= kMetadataOperand - m_.module_value_count) cursor_.fail("too many values");
  next_id_ = m_.module_value_count + uint32_t(f_.values.size());
  for (auto it = forward_.lower_bound(first); it != forward_.end() && it->first < next_id_;) {
    if (it->second != type_of(it->first)) cursor_.fail("constant " + std::to_string(it->first) + " has the wrong type");
    it = forward_.erase(it);
  }
}

// DEBUG_LOC [line, column, scope + 1, inlined-at + 1, ...] or DEBUG_LOC_AGAIN (the last
// one again): the location of the instruction read last, and the inlined call it is in.
void FunctionReader::debug_loc(uint32_t code) {
  if (!context_.debug) return;
  if (f_.insts.empty()) cursor_.fail("debug location before any instruction");
  if (code == kDebugLoc) {
    if (rec_.size() < 4) cursor_.fail("invalid debug location record");
    last_loc_ = context_.debug->location(cursor_, rec_[0], rec_[1], rec_[2], rec_[3]);
    has_last_loc_ = true;
  } else if (!has_last_loc_) {
    cursor_.fail("DEBUG_LOC_AGAIN with no location before it");
  }
  while (f_.debug_locs.size() < f_.insts.size()) f_.debug_locs.emplace_back();
  f_.debug_locs.back() = last_loc_;
}

// A debug record attaches to the instruction before it, which LLVM's reader requires.
// At full emission, a #dbg_declare is kept for the body's variables.
void FunctionReader::debug_record() {
  if (f_.insts.empty()) cursor_.fail("debug record before any instruction");
  if (code_ == kDebugRecordDeclare && context_.debug && context_.debug->wants_variables())
    context_.debug->declare(cursor_, rec_);
}

// A block inside the body: its constants, and with debug information its metadata and
// attachments; use lists and the value symbol table are not read.
void FunctionReader::block(uint32_t id) {
  if (id == kConstantsBlock) return read_constants();
  if (context_.debug && id == kMetadataBlock) return context_.debug->read_function_block(cursor_);
  if (context_.debug && id == kMetadataAttachmentBlock) return context_.debug->read_attachments(cursor_, f_);
  cursor_.skip_block();
}

void FunctionReader::finish() {
  if (bundles_pending_) cursor_.fail("operand bundles found with no consumer");
  if (!forward_.empty()) cursor_.fail("value " + std::to_string(forward_.begin()->first) + " is never defined");
  if (!blocks_declared_) throw Decline{"reader: function body without blocks"};
  if (block_ != f_.block_count) cursor_.fail("block " + std::to_string(block_) + " has no terminator");
  if (context_.debug) f_.debug_locs.resize(f_.insts.size());
  if (context_.debug && context_.debug->wants_variables()) context_.debug->variables(cursor_, f_);
}

void FunctionReader::read() {
  if (context_.module_version < 1) throw Decline{"reader: absolute value ids (module version 0)"};
  if (f_.global >= m_.globals.size()) cursor_.fail("function body of no function");
  if (m_.values.size() < m_.module_value_count) cursor_.fail("module values missing");
  uint32_t fnty = m_.globals[f_.global].value_type;
  if (fnty >= m_.types.size() || type(fnty).kind != TypeKind::kFunction || type(fnty).elements.empty())
    cursor_.fail("function body of a non-function type");
  look_up_types(m_, lookups_);
  void_ = lookups_.void_type;
  i1_ = lookups_.i1_type;
  // The arguments are the first of the function's values.
  f_.first_arg_value = next_id_ = m_.module_value_count;
  f_.arg_count = uint32_t(type(fnty).elements.size() - 1);
  // A body has about a value (argument, constant or result) per 50 bits at debuginfo 0:
  // room for one per 64 bits spares most of the array's regrowth, and takes at most
  // 1.5 bytes per byte of the block.
  f_.values.reserve(f_.arg_count + cursor_.bits_left() / 64);
  for (uint32_t i = 0; i < f_.arg_count; ++i)
    f_.values.push_back({ValueKind::kArgument, type(fnty).elements[i + 1], i});
  next_id_ += f_.arg_count;
  for (;;) {
    BitstreamEntry entry = cursor_.advance();
    switch (entry.kind) {
      case BitstreamEntry::kEndBlock:
        return finish();
      case BitstreamEntry::kEndOfStream:
        cursor_.fail("function block not ended");
      case BitstreamEntry::kEnterBlock:
        block(entry.id);
        break;
      case BitstreamEntry::kRecord:
        read_record(entry.id);
        break;
    }
  }
}

}  // namespace

void look_up_types(const BcModule& m, TypeLookups& types) {
  if (types.table_size == m.types.size()) return;
  types.table_size = m.types.size();
  types.void_type = kNone;
  for (uint32_t i = 0; i < m.types.size() && types.void_type == kNone; ++i)
    if (m.types[i].kind == TypeKind::kVoid) types.void_type = i;
  types.i1_type = m.find_integer_type(1);
  types.i32_type = m.find_integer_type(32);
  types.pointers.clear();
  for (uint32_t i = 0; i < m.types.size(); ++i)
    if (m.types[i].kind == TypeKind::kPointer) types.pointers.emplace(m.types[i].address_space, i);
}

void read_function_block(BitstreamCursor& cursor, BcModule& m, uint32_t fn, const ReaderContext& context) {
  if (fn >= m.functions.size()) cursor.fail("function body of no function");
  BcFunction& f = m.functions[fn];
  f.insts.clear();
  f.block_first.clear();
  f.operands.clear();
  f.indices.clear();
  f.clause_filter.clear();
  f.values.clear();
  f.declined.clear();
  f.debug_locs.clear();
  f.debug_vars.clear();
  f.subprogram = {};
  f.block_count = 0;
  size_t depth = cursor.depth();
  try {
    FunctionReader(cursor, m, fn, context).read();
  } catch (const Decline& d) {
    // Leave the function block (a decline comes from one of its own records).
    f.declined = d.why;
    // A record declined part way may have appended operands: only instructions keep them.
    f.operands.resize(f.insts.empty() ? 0 : f.insts.back().first_operand + f.insts.back().operand_count);
    f.clause_filter.resize(std::min(f.clause_filter.size(), f.operands.size()));
    if (cursor.depth() == depth) cursor.skip_block();
  }
  if (context.debug) context.debug->end_function();
}

}  // namespace kiln::bc::detail
