// What the two halves of the direct bitcode reader share: bitcode_reader.cpp (the
// module: identification, module records, string table, types, attributes, constants,
// sync scopes, operand bundle tags) calls bitcode_function.cpp for each FUNCTION_BLOCK.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "bitcode_ir.h"
#include "bitstream.h"

namespace kiln::bc::detail {

// Block ids (LLVMBitCodes.h).
enum BlockId : uint32_t {
  kModuleBlock = 8,
  kParamAttrBlock = 9,
  kParamAttrGroupBlock = 10,
  kConstantsBlock = 11,
  kFunctionBlock = 12,
  kIdentificationBlock = 13,
  kValueSymtabBlock = 14,
  kMetadataBlock = 15,
  kMetadataAttachmentBlock = 16,
  kTypeBlock = 17,
  kUselistBlock = 18,
  kModuleStrtabBlock = 19,
  kGlobalValSummaryBlock = 20,
  kOperandBundleTagsBlock = 21,
  kMetadataKindBlock = 22,
  kStrtabBlock = 23,
  kFullLtoGlobalValSummaryBlock = 24,
  kSymtabBlock = 25,
  kSyncScopeNamesBlock = 26,
};

class DebugMetadata;  // bitcode_debug.h

// What the module half learned that function bodies need.
// The types a body finds by their shape rather than by an id: found once per type
// table, not by a scan of the table in each body (and for each alloca).
struct TypeLookups {
  size_t table_size = ~size_t(0);  // the size of the table they were found in
  uint32_t void_type = kNone, i1_type = kNone, i32_type = kNone;
  std::unordered_map<uint32_t, uint32_t> pointers;  // address space -> its first pointer type
};
// Finds them again when the table is not the one they were found in.
void look_up_types(const BcModule& m, TypeLookups& types);

// A body's record and operand buffers, kept from body to body so that each body does
// not grow them from nothing again, and the types looked up.
struct BodyBuffers {
  RecordOps record;                   // a constants block's records
  std::vector<uint8_t> record_bytes;  // and its data records' elements (OperandBytes)
  RecordOps body_record;  // the body's own records (its constants' go to `record`)
  std::vector<uint32_t> operands;
  TypeLookups types;
};

struct ReaderContext {
  uint64_t module_version = 2;                // MODULE_CODE_VERSION: 1 and 2 use relative value ids
  std::vector<std::string> sync_scope_names;  // by sync scope id; "singlethread" is single_thread
  DebugMetadata* debug = nullptr;             // the module's metadata when it has debug information for stamp
  BodyBuffers* buffers = nullptr;             // the reader's; null: each body has its own
};

// A CONSTANTS_BLOCK just entered (advance() returned kEnterBlock for it): decodes it to
// its END_BLOCK, appending each constant to m.constants and its ValueRef to `values`,
// whose first element has value id `first_id` (0 for the module's list, or
// module_value_count for a function's). Unknown constant records become ConstKind::kOther.
// Its records are read into buffers.record (a block of each body would grow its own
// from nothing), and SETTYPE's default, i32, is buffers.types'.
void read_constants_block(BitstreamCursor& cursor, BcModule& m, std::vector<ValueRef>& values, uint32_t first_id,
                          BodyBuffers& buffers);

// A FUNCTION_BLOCK just entered: decodes the body of m.functions[fn] to its END_BLOCK
// (arguments, constants, instructions; with context.debug, its metadata, its
// subprogram and its instructions' locations; use lists and the value symbol table
// skipped). What it cannot decode sets m.functions[fn].declined and skips
// the rest of the block.
void read_function_block(BitstreamCursor& cursor, BcModule& m, uint32_t fn, const ReaderContext& context);

}  // namespace kiln::bc::detail
