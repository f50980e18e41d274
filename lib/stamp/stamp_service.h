// The stamp service (kiln-capture --device): one process for a whole build that runs
// stamp's stages for every compiler invocation the build makes. A CUDA context costs a
// tenth of a second to seconds to create, and every rustc that kiln-capture wraps is a
// process of its own, so a GPU back end needs one process that outlives them: each
// wrapper reads its modules (bitcode to flat arrays) itself, sends each module's flat
// IR (kiln-flat(5)) over a Unix socket, and gets the stages' output back, from which it
// writes the object, on its own thread, as it would without the service. The service
// gathers modules from concurrent invocations into one batch (waiting a bounded time
// after a batch's first module, so a lone crate is not held back), runs batches on a
// pool of executors (the CUDA executor, its CPU stand-in, or the CPU executor), and
// writes a receipt per batch. The protocol is versioned; see kiln-capture(1), THE
// STAMP SERVICE. No LLVM: it lives in the LLVM-free core.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "flat_module.h"
#include "stamp_cpu.h"

namespace kiln {

constexpr uint32_t kStampServiceProtocol = 2;  // 2: answers carry instruction offsets
// The service's socket, which kiln-capture --device sets for the build's wrappers (the
// stamp back end then sends its modules there). Unset: the stages run in the process,
// on the CPU.
constexpr const char* kEnvStampService = "KILN_STAMP_SERVICE";

struct StampServiceOptions {
  std::string socket_path;
  std::string device = "cpu";  // cuda: the CUDA executor (or its stand-in, KILN_GPU_STANDIN=cpu); cpu: the CPU executor
  unsigned streams = 2;        // executors, each on a host thread of its own
  uint64_t batch_instructions = 32768;  // a batch is cut once it holds this many IR instructions
  double max_wait = 0.010;              // seconds a batch waits for more modules after its first
  // adaptive: a batch waits only while a request is arriving or another client sent a
  // module lately (within 4 max_wait); fixed: always, up to max_wait.
  bool adaptive = true;
  std::string receipts_path;            // a JSON line per batch and a summary line at the end (empty: none)
  // Tests only (KILN_TEST_SERVICE_DIE_AFTER): the service kills itself with SIGKILL
  // after answering this many requests, as a crash mid-build would (0: never).
  uint64_t die_after = 0;
  // Tests in process: the service stops when this descriptor becomes readable, and
  // leaves SIGTERM and SIGINT alone (-1: it stops on those signals).
  int stop_fd = -1;
};

// Listens on options.socket_path and serves until SIGTERM or SIGINT, then answers what
// it has accepted, writes the summary receipt and returns 0. Writes one line to
// ready_fd: "ready DEVICE-NAME" once it listens, or "error: REASON" (and returns
// kExitNoDevice or kExitIo) when it cannot open its executors or its socket.
int run_stamp_service(const StampServiceOptions& options, int ready_fd);

// What the service answered for one module.
struct StampServiceAnswer {
  StampOutput code;
  std::string device;          // the executor's name, as the service's receipts give it
  uint64_t batch = 0;          // the batch that ran it (numbered from 1 by the service)
  uint32_t batch_modules = 0;  // modules in that batch
};

// Sends `flat` to the service at socket_path and waits for the stages' output. `client`
// names the sender in the batch receipts (a crate). Throws KilnError(kExitIo, socket_path,
// why) when the service cannot be reached, goes away, answers out of protocol, or says
// it failed: the caller then runs the stages itself.
StampServiceAnswer run_stages_in_service(const std::string& socket_path, const FlatModuleData& flat,
                                         const std::string& source_name, const std::string& client);

// The stages' output on the wire (tested directly): the arrays as counted blobs.
std::string encode_stamp_output(const StampOutput& code);
// Throws KilnError(kExitBadInput, what, why) for bytes that are not one encoded output.
StampOutput decode_stamp_output(std::string_view bytes, const std::string& what);
// Whether two outputs are byte for byte the same (the objects then are too).
bool same_stamp_output(const StampOutput& a, const StampOutput& b);

}  // namespace kiln
