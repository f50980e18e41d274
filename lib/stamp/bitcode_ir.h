// A module as the direct bitcode reader decodes it: LLVM's IR in plain arrays, with
// no LLVM type in it, and no more of it than the direct exporter (direct_export.h)
// needs to produce what lib/flat_export.cpp produces from LLVM's own IR. Values are
// numbered as the bitcode numbers them (module values, then per function its
// arguments, its constants and its instructions), so an operand is one index.
//
// Three parts fill it: bitcode_reader.cpp (identification, module records, string
// table, types, attributes, constants, sync scopes), bitcode_function.cpp (function
// bodies) and bitcode_debug.cpp (the metadata that debug information for stamp comes
// from). What they do not know is never guessed: a module-wide unknown sets
// BcModule::declined, an unknown inside a function body sets that BcFunction's
// declined, each a short named reason ("reader: ..."). Corrupt input throws
// KilnError(kExitBadInput) through BitstreamCursor::fail (block and bit offset named).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "flat_debug.h"

namespace kiln::bc {

constexpr uint32_t kNone = ~0u;

// --- Types (TYPE_BLOCK_ID_NEW = 17), one per type-table entry, in table order.
enum class TypeKind : uint8_t {
  kVoid,
  kHalf,
  kBFloat,
  kFloat,
  kDouble,
  kX86Fp80,
  kFp128,
  kPpcFp128,
  kLabel,
  kMetadata,
  kX86Amx,
  kToken,
  kInteger,         // width
  kPointer,         // address_space
  kFunction,        // elements = return type, then parameters; vararg
  kStruct,          // elements; packed; named structs have a name (opaque: no body)
  kArray,           // count x elements[0]
  kFixedVector,     // count x elements[0]
  kScalableVector,  // vscale x count x elements[0]
  kTargetExt,       // name
};

inline bool is_floating_point(TypeKind k) {
  return k == TypeKind::kHalf || k == TypeKind::kBFloat || k == TypeKind::kFloat || k == TypeKind::kDouble ||
      k == TypeKind::kX86Fp80 || k == TypeKind::kFp128 || k == TypeKind::kPpcFp128;
}
inline bool is_vector(TypeKind k) { return k == TypeKind::kFixedVector || k == TypeKind::kScalableVector; }

struct Type {
  TypeKind kind = TypeKind::kVoid;
  uint32_t width = 0;          // kInteger: bits
  uint32_t address_space = 0;  // kPointer
  uint64_t count = 0;          // kArray, kFixedVector, kScalableVector
  bool packed = false;         // kStruct
  bool opaque = false;         // kStruct without a body
  bool named = false;          // kStruct: an identified struct (STRUCT_NAMED or OPAQUE), printed %name
  bool vararg = false;         // kFunction
  std::vector<uint32_t> elements;
  std::string name;  // named struct or target extension type
};

// --- Attributes (PARAMATTR_GROUP_BLOCK_ID 10 and PARAMATTR_BLOCK_ID 9).
// The enum attributes by their bitcode kind (ATTR_KIND_* of LLVMBitCodes.h); only
// those stamp asks about are named here, the set keeps every kind read.
enum AttrKind : uint8_t {
  kAttrNaked = 7,
  kAttrNoReturn = 17,
  kAttrSExt = 24,
  kAttrZExt = 34,
  kAttrByVal = 3,
  kAttrNest = 8,
  kAttrStackProtect = 26,        // ssp
  kAttrStackProtectReq = 27,     // sspreq
  kAttrStackProtectStrong = 28,  // sspstrong
  kAttrStructRet = 29,
  kAttrInAlloca = 38,
  kAttrPreallocated = 65,
  // Not LLVM's: kiln's mark of a function whose "target-features" string attribute
  // gives it AVX (target_features_have_avx, vector_abi.h). Bitcode kinds stay far below.
  kAttrKilnAvx = 255,
  // kiln's mark of a function whose target may fuse llvm.fmuladd
  // (target_may_fuse_multiply_add, vector_abi.h).
  kAttrKilnMayFuse = 254,
  // kiln's marks of a function with a string attribute that asks codegen for
  // instrumentation calls or patchable entry nops (instrumented_entry_attribute and
  // patchable_entry_attribute, vector_abi.h).
  kAttrKilnInstrumented = 253,
  kAttrKilnPatchable = 252,
};
struct AttrSet {
  // enum and type attributes' kinds (bitcode numbers them below 256), one bit each: the
  // exporter asks several per call argument.
  uint64_t kinds[4] = {};
  bool has(uint8_t kind) const { return kinds[kind >> 6] >> (kind & 63) & 1; }
  void add(uint8_t kind) { kinds[kind >> 6] |= uint64_t(1) << (kind & 63); }
  void add(const AttrSet& other) {
    for (int i = 0; i < 4; ++i) kinds[i] |= other.kinds[i];
  }
};
// One attribute list (a PARAMATTR_CODE_ENTRY): sets by index as LLVM numbers them in
// bitcode: 0xFFFFFFFF the function, 0 the return value, 1 + n parameter n.
struct AttrList {
  AttrSet function, ret;
  std::vector<AttrSet> params;
  bool param_has(uint32_t arg, uint8_t kind) const { return arg < params.size() && params[arg].has(kind); }
};

// --- Constants (CONSTANTS_BLOCK_ID 11), module-wide or function-local.
// A constant's 64-bit words, in place for up to two (every integer to i128, every
// float): most constants of a module are integers, and a heap array each cost a
// malloc and a free per constant. Wider integers and inline asm's characters go to
// the heap, growing as std::vector does. A subset of std::vector's interface.
class ConstWords {
 public:
  ConstWords() = default;
  ConstWords(const ConstWords& other) { append(other.begin(), other.end()); }
  ConstWords(ConstWords&& other) noexcept { take(other); }
  ConstWords& operator=(const ConstWords& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  ConstWords& operator=(ConstWords&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ConstWords& operator=(std::initializer_list<uint64_t> words) {
    assign(words.begin(), words.end());
    return *this;
  }
  ~ConstWords() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const uint64_t* data() const { return capacity_ > kInline ? heap_ : inline_; }
  uint64_t* data() { return capacity_ > kInline ? heap_ : inline_; }
  const uint64_t* begin() const { return data(); }
  const uint64_t* end() const { return data() + size_; }
  uint64_t operator[](size_t i) const { return data()[i]; }
  uint64_t& operator[](size_t i) { return data()[i]; }
  uint64_t& back() { return data()[size_ - 1]; }

  void push_back(uint64_t word) {
    if (size_ == capacity_) grow(size_ + 1);
    data()[size_++] = word;
  }
  template <typename It>
  void assign(It first, It last) {
    size_ = 0;
    append(first, last);
  }
  template <typename It>
  void append(It first, It last) {
    const size_t count = static_cast<size_t>(last - first);
    // A count is 32 bits: more words (a record of 2^32 operands) are as far past memory.
    if (count > UINT32_MAX - size_) throw std::length_error("constant of over 2^32 words");
    if (count > capacity_ - size_) grow(size_ + count);
    std::copy(first, last, data() + size_);
    size_ += static_cast<uint32_t>(count);
  }

  friend bool operator==(const ConstWords& a, const ConstWords& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const ConstWords& a, const std::vector<uint64_t>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static constexpr uint32_t kInline = 2;

  // Room for `needed` words at least: std::vector's doubling, so a word at a time stays linear;
  // never past 2^32 - 1 words (append refuses more), or the doubled capacity would wrap.
  void grow(size_t needed) {
    const size_t capacity = std::min<size_t>(UINT32_MAX, std::max<size_t>(needed, size_t{capacity_} * 2));
    uint64_t* heap = new uint64_t[capacity];
    std::copy(begin(), end(), heap);
    release();
    heap_ = heap;
    capacity_ = static_cast<uint32_t>(capacity);
  }
  void release() {
    if (capacity_ > kInline) delete[] heap_;
    capacity_ = kInline;
  }
  // Takes `other`'s words and leaves it empty (it owns nothing then).
  void take(ConstWords& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (capacity_ > kInline) heap_ = other.heap_;
    else std::copy(other.inline_, other.inline_ + size_, inline_);
    other.size_ = 0;
    other.capacity_ = kInline;
  }

  union {
    uint64_t inline_[kInline];
    uint64_t* heap_;
  };
  uint32_t size_ = 0;
  uint32_t capacity_ = kInline;  // above kInline: heap_ holds the words
};

enum class ConstKind : uint8_t {
  kNull,       // CST_CODE_NULL: zero of its type (ConstantInt 0, +0.0, null, or an aggregate zero)
  kUndef,      // CST_CODE_UNDEF
  kPoison,     // CST_CODE_POISON
  kInteger,    // words: the value, little-endian 64-bit words (INTEGER, WIDE_INTEGER)
  kFloat,      // words: the bits (FLOAT)
  kAggregate,  // operands: element values (AGGREGATE: ConstantStruct, ConstantArray, ConstantVector)
  kData,       // bytes: elements (DATA, STRING, CSTRING: ConstantDataArray/Vector)
  kCast,       // opcode: bitcode cast code; operands[0]
  kBinary,     // opcode: bitcode binop code; flags; operands[0..1]
  kGep,        // source_type; flags (inbounds...); operands: base then indices
  kBlockAddress,
  kDsoLocalEquivalent,
  kNoCfi,
  kPtrAuth,
  kInlineAsm,  // words: the template's characters, then the constraints'; flags: the template's length
  kTokenNone,
  kTargetNone,
  kOther,  // a record the reader does not model: `opcode` holds its code
};
struct Constant {
  ConstKind kind = ConstKind::kNull;
  uint32_t type = kNone;
  uint32_t opcode = 0;
  uint32_t flags = 0;
  uint32_t source_type = kNone;  // kGep
  bool string = false;           // kData from STRING/CSTRING (element type i8)
  uint8_t element_bytes = 0;     // kData: each element's width in `bytes` (1, 2, 4 or 8)
  ConstWords words;
  // kData: the elements, each element_bytes wide, little-endian: what memory holds. A
  // word each would take eight times the bytes of include_bytes!'s megabytes.
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> operands;  // value ids

  // kData's elements, each zero-extended to 64 bits.
  size_t element_count() const { return element_bytes ? bytes.size() / element_bytes : 0; }
  uint64_t element(size_t i) const {
    uint64_t value = 0;  // the low bytes, little-endian like the elements
    std::memcpy(&value, bytes.data() + i * element_bytes, element_bytes);
    return value;
  }
};

// --- Global values (MODULE_CODE_GLOBALVAR, FUNCTION, ALIAS, IFUNC), in record order.
enum class Linkage : uint8_t {
  kExternal,
  kAvailableExternally,
  kLinkOnceAny,
  kLinkOnceOdr,
  kWeakAny,
  kWeakOdr,
  kAppending,
  kInternal,
  kPrivate,
  kExternalWeak,
  kCommon,
};
enum class Visibility : uint8_t { kDefault, kHidden, kProtected };
enum class GlobalKind : uint8_t { kVariable, kFunction, kAlias, kIFunc };

struct Global {
  GlobalKind kind = GlobalKind::kVariable;
  std::string_view name;        // in BcModule::strtab; empty when unnamed
  uint32_t value_type = kNone;  // variable: its type; function: its function type
  Linkage linkage = Linkage::kExternal;
  Visibility visibility = Visibility::kDefault;
  bool declaration = false;
  bool constant = false;  // variable: `constant`
  bool thread_local_ = false;
  bool dso_local = false;
  uint8_t unnamed_addr = 0;  // 0 none, 1 unnamed_addr, 2 local_unnamed_addr
  uint32_t address_space = 0;
  uint64_t align = 0;            // explicit alignment in bytes; 0: none
  std::string_view section;      // in BcModule::sections; empty: none
  uint32_t comdat = kNone;       // index into BcModule::comdats
  uint32_t initializer = kNone;  // variable: value id; alias/ifunc: aliasee/resolver
  // Functions.
  uint32_t calling_conv = 0;
  uint32_t attributes = kNone;   // index into BcModule::attribute_lists
  uint32_t personality = kNone;  // value id
  bool prefix_or_prologue = false;
  bool gc = false;
  uint32_t body = kNone;  // index into BcModule::functions for a definition
};
static_assert(std::is_trivially_copyable_v<Global>, "globals grow by memmove (BcModule::sections)");

// --- Function bodies (FUNCTION_BLOCK_ID 12).
// LLVM's instruction opcodes by name (not LLVM's numbering): what an Inst is.
enum class Opcode : uint8_t {
  kRet,
  kBr,
  kSwitch,
  kIndirectBr,
  kInvoke,
  kResume,
  kUnreachable,
  kCleanupRet,
  kCatchRet,
  kCatchSwitch,
  kCallBr,
  kFNeg,
  kAdd,
  kFAdd,
  kSub,
  kFSub,
  kMul,
  kFMul,
  kUDiv,
  kSDiv,
  kFDiv,
  kURem,
  kSRem,
  kFRem,
  kShl,
  kLShr,
  kAShr,
  kAnd,
  kOr,
  kXor,
  kAlloca,
  kLoad,
  kStore,
  kGetElementPtr,
  kFence,
  kAtomicCmpXchg,
  kAtomicRmw,
  kTrunc,
  kZExt,
  kSExt,
  kFPToUI,
  kFPToSI,
  kUIToFP,
  kSIToFP,
  kFPTrunc,
  kFPExt,
  kPtrToInt,
  kIntToPtr,
  kBitCast,
  kAddrSpaceCast,
  kPtrToAddr,
  kCleanupPad,
  kCatchPad,
  kICmp,
  kFCmp,
  kPhi,
  kCall,
  kSelect,
  kVAArg,
  kExtractElement,
  kInsertElement,
  kShuffleVector,
  kExtractValue,
  kInsertValue,
  kLandingPad,
  kFreeze,
};

// An operand that names a basic block rather than a value: kBlockTag | block index.
constexpr uint32_t kBlockTag = 0x80000000u;

enum class Ordering : uint8_t { kNotAtomic, kUnordered, kMonotonic, kAcquire, kRelease, kAcqRel, kSeqCst };
// The bitcode's RMW_* codes (Inst::aux of an atomicrmw), which go on past kUMin with
// LLVM's floating-point and wrapping operations (11 to 20, kRmwOtherNames).
enum class RmwOp : uint8_t { kXchg, kAdd, kSub, kAnd, kNand, kOr, kXor, kMax, kMin, kUMax, kUMin };

struct Inst {
  Opcode opcode = Opcode::kUnreachable;
  uint32_t type = kNone;   // result type (the void type for none)
  uint32_t value = kNone;  // its value id when it has a result
  uint32_t block = 0;      // its basic block (index within the function)
  // Operands (value ids, or kBlockTag | block) in LLVM's getOperand order with these
  // exceptions, which the exporter reads by position:
  //   call/invoke: arguments, then the callee; invoke then normal and unwind blocks
  //   (so operands = args..., callee[, normal, unwind]);
  //   callbr: args..., callee, default block, indirect blocks;
  //   phi: pairs (value, block); switch: condition, default, pairs (case value, block);
  //   br: [condition, true, false] or [target]; landingpad: clause values (see clause_filter);
  //   extractvalue/insertvalue: the aggregate [and the inserted value], indices in `indices`;
  //   cmpxchg: pointer, compare, new; atomicrmw: pointer, value; store: value, pointer.
  //   shufflevector: v1, v2, then the mask (a constant value id: LLVM keeps the mask beside its operands).
  //   catchswitch: parent pad, the unwind block when aux is 1, then the handlers.
  uint32_t first_operand = 0, operand_count = 0;  // into BcFunction::operands
  uint32_t first_index = 0, index_count = 0;      // extractvalue/insertvalue indices, into BcFunction::indices
  uint32_t aux = 0;  // cmp predicate (LLVM's numbering); cast/binop: none; rmw: RmwOp; alloca: array-size value id;
                     // catchswitch: 1 when it has an unwind block
  uint32_t source_type = kNone;  // gep: source element type; alloca: allocated type; call/invoke: function type
  uint32_t attributes = kNone;   // call/invoke: attribute list index
  uint32_t calling_conv = 0;     // call/invoke
  uint64_t align = 0;            // load/store/alloca/atomics: alignment in bytes (0: none given)
  Ordering ordering = Ordering::kNotAtomic;  // load/store/fence/rmw; cmpxchg: success ordering
  bool single_thread = false;                // sync scope is singlethread
  bool is_volatile = false;
  bool musttail = false;                 // call
  bool has_bundles = false;              // call/invoke: operand bundles precede it
  bool inbounds = false;                 // gep
  bool cleanup = false;                  // landingpad
  bool static_alloca_candidate = false;  // alloca: in the entry block, not inalloca (LLVM's isStaticAlloca needs both)
  bool vector_gep = false;               // gep of vector type
};

// Every value of the module and of one function at a time, as the bitcode numbers them.
// An operand of metadata type (a call's metadata argument) is not a value: it is the
// id kMetadataOperand.
constexpr uint32_t kMetadataOperand = 0x7FFFFFFFu;
enum class ValueKind : uint8_t { kGlobal, kConstant, kArgument, kInstruction, kForward };
struct ValueRef {
  ValueKind kind = ValueKind::kForward;
  uint32_t type = kNone;
  uint32_t index = kNone;  // into globals, constants, the function's arguments or insts
};

// Names of the debug information (BcSubprogram's, BcDebugScope's, BcDebugVariable's),
// which those view: copied into blocks that stay where they are as more are added and
// as the module moves, where a std::string each cost a malloc and a free per name over
// 15 characters (most of them linkage names). A name is copied per entry, as the
// std::strings were, so memory is bounded by the stream as it was.
class BcNames {
 public:
  std::string_view add(std::string_view name);

 private:
  static constexpr size_t kBlock = 16 << 10;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* free_ = nullptr;  // in the last block of kBlock
  size_t left_ = 0;
};

// --- Debug information (METADATA_BLOCK 15, METADATA_KIND_BLOCK 22, METADATA_ATTACHMENT 16
// and the bodies' DEBUG_LOC records): only what stamp's line table, subprogram and
// inlined-call entries need (flat_debug.h). Everything is in the reader's own numbering,
// 1 + an index into a BcDebug array, 0 for none: one entry per metadata record the
// locations and subprograms reach (a body's own records are read again by the next
// body), so equal entries may come twice; the exporter interns them in flat order.
struct BcDebugLoc {
  uint32_t file = 0, line = 0, column = 0;  // all 0: no location, or a scope without a file
  // With an inlinedAt (and a file): the subprogram of the location's scope
  // (BcDebug::subprograms) and the inlinedAt itself (BcDebug::calls); else 0.
  uint32_t callee = 0, call = 0;
  uint32_t block = 0;  // with a file: the innermost DILexicalBlock of its scope (BcDebug::blocks)
};
struct BcSubprogram {
  bool present = false;  // the function has a !dbg DISubprogram; nothing else is set without one
  bool local_to_unit = false;
  bool main_subprogram = false;
  uint32_t scope = 0;  // BcDebug::scopes: the innermost namespace or composite type it is declared in
  uint32_t file = 0, line = 0, scope_line = 0;
  std::string_view name, linkage_name;  // in BcDebug::names
  bool prototyped = false;  // DIFlagPrototyped
  uint32_t type = 0;        // BcDebug::types: its return type, read at full emission only; 0: void or none
  uint32_t node = 0;        // a function's own: 1 + its DISubprogram's record (one per node); else 0
};
// A DINamespace (tag DW_TAG_namespace) or DICompositeType.
struct BcDebugScope {
  uint32_t parent = 0;  // BcDebug::scopes; 0: the chain ends there
  uint16_t tag = 0;
  std::string_view name;  // in BcDebug::names
};
// An inlinedAt DILocation: the call an inlined location sits in.
struct BcInlineCall {
  uint32_t caller = 0;                      // with `outer`: the subprogram of its scope (BcDebug::subprograms)
  uint32_t outer = 0;                       // its own inlinedAt (BcDebug::calls); 0: the call is in the function's body
  uint32_t file = 0, line = 0, column = 0;  // file: of its scope
  uint32_t block = 0;                       // the innermost DILexicalBlock of its scope (BcDebug::blocks)
};
// A DILexicalBlock node (flat_debug.h's FlatDebugBlock; one entry per node, a body's own
// nodes once per body): parent is the next one out (BcDebug::blocks, block files passed
// over), file a BcDebug::files number.
struct BcDebugBlock {
  uint32_t parent = 0, file = 0, line = 0, column = 0;
};
// A #dbg_declare record flat_debug.h keeps (its address an alloca or an argument, its
// expression of DW_OP_deref and DW_OP_plus_uconst only), at full emission.
struct BcDebugVariable {
  uint32_t callee = 0, call = 0;  // the record's location's inlined call, as BcDebugLoc's
  uint32_t variable = 0;          // the DILocalVariable's metadata id: one per node in a body
  uint32_t block = 0, file = 0, line = 0, arg = 0, flags = 0;  // block, file: BcDebug numbers
  uint32_t type = 0;                                           // BcDebug::types
  uint32_t storage = 0;      // the alloca's index in the body's instructions, or the argument's number
  uint8_t storage_kind = 0;  // kDebugStorage*
  std::string_view name;     // in BcDebug::names
  std::vector<uint64_t> expression;  // as FlatDebugVariable's
};
// A global variable's DIGlobalVariable as flat_debug.h keeps it (FlatDebugGlobal), at
// full emission: scope, file and type in the reader's numbering.
struct BcDebugGlobal {
  uint32_t global = 0;  // index into BcModule::globals
  uint32_t subprogram = 0;  // a static inside a function: its subprogram (as BcSubprogram::node); scope is then 0
  uint32_t scope = 0, file = 0, line = 0, type = 0, align_bits = 0;
  bool local_to_unit = false;
  std::string name, linkage_name;
};
struct BcDebug {
  uint32_t dwarf_version = 0;  // 0: no debug information to carry, and none below (FlatDebugInfo's rule)
  uint8_t emission = 0;        // the first compile unit's DebugEmissionKind: 1 full, 2 line tables, 3 directives
  uint32_t language = 0;       // its DW_LANG_*, 0 for a versioned language name
  std::string producer, name, directory;
  std::vector<FlatDebugFile> files;
  std::vector<BcDebugScope> scopes;
  std::vector<BcSubprogram> subprograms;  // inlined callees and their callers (present set)
  std::vector<BcInlineCall> calls;
  std::vector<BcDebugBlock> blocks;
  // One per type node the variables reach (a body's own nodes once per body): FlatDebugType's
  // fields with its references (scope, parent_type, file, type, discriminator, elements)
  // in the reader's numbering, BcDebug::scopes, files and types. Filled when made.
  std::vector<FlatDebugType> types;
  std::vector<BcDebugGlobal> globals;  // in module order of their globals, each's in attachment order
  BcNames names;
};

struct BcFunction {
  uint32_t global = kNone;                      // index into BcModule::globals
  uint32_t first_arg_value = 0, arg_count = 0;  // argument value ids
  uint32_t block_count = 0;
  std::vector<Inst> insts;            // in order; blocks tile them
  std::vector<uint32_t> block_first;  // per block, its first instruction
  std::vector<uint32_t> operands;
  std::vector<uint32_t> indices;
  std::vector<uint8_t> clause_filter;  // landingpad: indexed like operands, 1 for a filter clause, 0 for a catch
  std::string declined;                // non-empty: the reader could not decode this body ("reader: ...")
  // With BcModule::debug present: the location of each instruction, and the function's
  // subprogram. Empty and absent otherwise.
  std::vector<BcDebugLoc> debug_locs;
  BcSubprogram subprogram;
  std::vector<BcDebugVariable> debug_vars;  // at full emission, with a subprogram: in record order
  // Its own values: ids module_value_count + i (arguments, constants, instruction results).
  std::vector<ValueRef> values;
};

struct Comdat {
  std::string name;
  uint32_t selection = 0;
};

struct BcModule {
  // The module's string table (STRTAB), copied: the globals' names are ranges of it, not a
  // string each (a malloc and a free per global of a name over 15 characters). Moving the
  // module keeps the bytes where they are; copying it is not allowed.
  std::unique_ptr<char[]> strtab;
  std::string triple, data_layout, source_filename;
  bool module_asm = false;  // module-level inline asm present
  // A "cf-protection-branch" or "cf-protection-return" module flag: LLVM gives such a
  // module endbr64 and a .note.gnu.property, stamp's object neither.
  bool cf_protection = false;
  std::vector<Type> types;
  std::vector<AttrList> attribute_lists;
  // The SECTIONNAME records, which Global::section views: a deque, so that a name keeps
  // its place as more are read. Views, the globals are trivially copyable, and the array
  // of them grows by memmove.
  std::deque<std::string> sections;
  std::vector<Global> globals;
  std::vector<Comdat> comdats;
  std::vector<Constant> constants;  // module-wide and every function's, appended
  // Module-level values (globals, then module constants): ids below module_value_count.
  // Ids from module_value_count on are one function's own (BcFunction::values).
  std::vector<ValueRef> values;
  uint32_t module_value_count = 0;
  std::vector<BcFunction> functions;  // definitions, in the order of their FUNCTION records
  BcDebug debug;                      // known before the first body
  std::string declined;               // non-empty: the reader cannot take this module

  const Type& type(uint32_t id) const { return types[id]; }
  // A type of the table by shape, kNone when the table has none (LLVM enumerates the
  // type of every value, so a result type is always there): used for the results
  // whose type no record names (cmp's i1, cmpxchg's {T, i1}).
  uint32_t find_integer_type(uint32_t width) const;
  uint32_t find_struct_type(const std::vector<uint32_t>& elements, bool packed) const;
  uint32_t find_vector_type(uint32_t element, uint64_t count, bool scalable) const;
};

// Reads a bitcode file (raw or wrapped) into a BcModule. Throws KilnError(kExitBadInput)
// naming `path` (and the block and bit offset) for a corrupt file, a foreign one, or
// one newer than the reader knows (an IDENTIFICATION epoch other than 0).
//
// `on_body`, when given, is called after each function body is decoded, in the order
// of the bodies (that of their FUNCTION records), with every module value known: it
// may export the body and release its instruction arrays (insts, block_first, operands, indices,
// clause_filter), keeping `values`, which later bodies and the global data may name.
using BodyHandler = std::function<void(BcModule& m, uint32_t function)>;
BcModule read_bitcode(std::string_view file, const std::string& path, const BodyHandler& on_body = {});

// The value `id` names inside function `fn` (a BcModule::functions index; kNone for
// module values only). Throws KilnError(kExitInternal) for an id out of range.
const ValueRef& value_ref(const BcModule& m, uint32_t fn, uint32_t id);

}  // namespace kiln::bc
