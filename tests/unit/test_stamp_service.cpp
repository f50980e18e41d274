// The stamp service (lib/stamp/stamp_service.h), in process: the output's wire form,
// and a service on a real Unix socket answering concurrent clients with the CPU
// executor's output, gathering them into batches, refusing bad requests, and the
// client's errors when there is no service. kiln-capture --device's service process
// (a real build, a service killed mid-build) is tests/integration/service.sh.
#include <catch2/catch.hpp>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <chrono>
#include <thread>

#include "bitcode.h"
#include "error.h"
#include "flat_export.h"
#include "fs.h"
#include "ir_helpers.h"
#include "stamp_cpu.h"
#include "stamp_output_compare.h"
#include "stamp_service.h"

using namespace kiln;

namespace {

const char* kServiceIr = R"(
target triple = "x86_64-unknown-linux-gnu"
declare i32 @__gxx_personality_v0(...)
declare void @may_throw(i64)
define i64 @loop(i64 %n) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %next, %head ]
  %next = add i64 %i, 1
  %done = icmp uge i64 %next, %n
  br i1 %done, label %exit, label %head
exit:
  ret i64 %i
}
define void @eh(i64 %v) personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw(i64 %v) to label %ok unwind label %lp
ok:
  ret void
lp:
  %l = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %l
}
)";

FlatExport service_module(llvm::LLVMContext& ctx) {
  auto module = parse_bitcode(ctx, kiln_test::bitcode_from_ir(kServiceIr), "service.bc");
  FlatExport flat = export_flat(*module);
  flat.resolve_symbol_names();
  REQUIRE(flat.stamp_function_count == 2);
  return flat;
}

// A service on its own thread, stopped (through stop_fd) when the test ends.
class ServiceThread {
 public:
  explicit ServiceThread(StampServiceOptions o) : dir_(make_temp_dir("kiln-service-test")) {
    REQUIRE(::pipe(stop_) == 0);
    REQUIRE(::pipe(ready_) == 0);
    o.socket_path = dir_ + "/s.sock";
    o.receipts_path = dir_ + "/service.jsonl";
    o.stop_fd = stop_[0];
    options_ = o;
    thread_ = std::thread([this] { status_ = run_stamp_service(options_, ready_[1]); });
    char line[256] = {};
    REQUIRE(::read(ready_[0], line, sizeof line - 1) > 0);
    ready_line_ = line;
    if (!ready_line_.empty() && ready_line_.back() == '\n') ready_line_.pop_back();
  }
  ~ServiceThread() {
    stop();
    remove_tree(dir_);
  }
  int stop() {
    if (thread_.joinable()) {
      [[maybe_unused]] ssize_t n = ::write(stop_[1], "x", 1);
      thread_.join();
      for (int fd : {stop_[0], stop_[1], ready_[0], ready_[1]}) ::close(fd);
    }
    return status_;
  }
  const std::string& socket() const { return options_.socket_path; }
  const std::string& ready_line() const { return ready_line_; }
  std::string receipts() const { return read_file(options_.receipts_path); }

 private:
  std::string dir_;
  StampServiceOptions options_;
  int stop_[2], ready_[2];
  int status_ = -1;
  std::string ready_line_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("stamp outputs cross the wire unchanged, and damaged ones are refused", "[service]") {
  llvm::LLVMContext ctx;
  FlatExport flat = service_module(ctx);
  StampOutput code = run_stamp_cpu(flat.flat.view(), 1);
  REQUIRE(!code.lsda.empty());
  std::string wire = encode_stamp_output(code);
  kiln_test::check_same_output(decode_stamp_output(wire, "w"), code);
  CHECK(same_stamp_output(decode_stamp_output(wire, "w"), code));
  for (size_t cut : {size_t(0), size_t(3), size_t(4), size_t(12), wire.size() / 2, wire.size() - 1}) {
    try {
      decode_stamp_output(std::string_view(wire).substr(0, cut), "w");
      FAIL("a truncated output (" << cut << " bytes) was accepted");
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitBadInput);
    }
  }
  // A count that claims more than the message holds: refused before it is allocated.
  std::string huge = wire;
  const uint64_t lots = uint64_t(1) << 60;
  std::memcpy(huge.data() + 4, &lots, sizeof lots);
  CHECK_THROWS_AS(decode_stamp_output(huge, "w"), KilnError);
  StampOutput other = code;
  other.code.back() ^= 1;
  CHECK(!same_stamp_output(other, code));
}

TEST_CASE("the stamp service answers concurrent clients with the CPU executor's output, in shared batches",
          "[service]") {
  llvm::LLVMContext ctx;
  FlatExport flat = service_module(ctx);
  const StampOutput oracle = run_stamp_cpu(flat.flat.view(), 1);
  for (const char* device : {"cpu", "cuda"}) {
    ::setenv("KILN_GPU_STANDIN", "cpu", 1);  // cuda: the CPU stand-in (no GPU here)
    StampServiceOptions o;
    o.device = device;
    o.streams = 1;
    o.max_wait = 0.5;  // long enough that the clients' modules share batches
    o.batch_instructions = 1u << 20;
    ServiceThread service(o);
    INFO(device << ": " << service.ready_line());
    REQUIRE(service.ready_line().rfind("ready ", 0) == 0);
    // A request that is still arriving (its header half sent) makes every batch wait
    // for more (max_wait), as concurrent builds' modules would: the clients share one.
    auto connect_raw = [&] {
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strcpy(addr.sun_path, service.socket().c_str());
      int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
      return fd;
    };
    int slow = connect_raw();
    REQUIRE(::write(slow, "KSVQ", 4) == 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // accepted, still reading
    constexpr int kClients = 6;
    std::vector<StampServiceAnswer> answers(kClients);
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c)
      clients.emplace_back([&, c] {
        answers[c] = run_stages_in_service(service.socket(), flat.flat, "service.rs", "crate" + std::to_string(c % 3));
      });
    for (auto& t : clients) t.join();
    ::close(slow);  // half a header: answered with an error, nothing queued
    uint32_t largest = 0;
    for (auto& a : answers) {
      kiln_test::check_same_output(a.code, oracle);
      CHECK(a.batch >= 1);
      largest = std::max(largest, a.batch_modules);
      CHECK(a.device == service.ready_line().substr(6));
    }
    CHECK(largest == kClients);
    // Out of protocol: the client gets its error, and the service goes on.
    int fd = connect_raw();
    std::string junk(64, 'j');
    REQUIRE(::write(fd, junk.data(), junk.size()) == 64);
    char reply[16] = {};
    CHECK(::read(fd, reply, 16) > 0);
    CHECK(std::string(reply, 4) == "KSVA");
    ::close(fd);
    kiln_test::check_same_output(run_stages_in_service(service.socket(), flat.flat, "x.rs", "late").code, oracle);
    CHECK(service.stop() == 0);
    std::string receipts = service.receipts();
    CHECK(receipts.find("\"summary\":true") != std::string::npos);
    CHECK(receipts.find("\"requests\":7") != std::string::npos);
    CHECK(receipts.find("\"batches_from_several_clients\":0") == std::string::npos);
  }
  ::unsetenv("KILN_GPU_STANDIN");
}

TEST_CASE("every stream of the stamp service serves until it stops", "[service]") {
  // Two executors waiting on the same first module (fixed batching, a wait): the one
  // that lost the queue to the other ended for good, and the service ran on one stream.
  llvm::LLVMContext ctx;
  FlatExport flat = service_module(ctx);
  const StampOutput oracle = run_stamp_cpu(flat.flat.view(), 1);
  StampServiceOptions o;
  o.device = "cpu";
  o.streams = 2;
  o.max_wait = 0.05;
  o.adaptive = false;
  o.batch_instructions = 1u << 20;
  ServiceThread service(o);
  REQUIRE(service.ready_line().rfind("ready ", 0) == 0);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread> clients;
    for (int c = 0; c < 2; ++c)
      clients.emplace_back([&, c] {
        kiln_test::check_same_output(
            run_stages_in_service(service.socket(), flat.flat, "s.rs", "crate" + std::to_string(c)).code, oracle);
      });
    for (auto& t : clients) t.join();
  }
  CHECK(service.stop() == 0);
  const std::string receipts = service.receipts();
  INFO(receipts);
  CHECK(receipts.find("\"streams\":2,\"streams_at_stop\":2") != std::string::npos);
}

TEST_CASE("without a service the client says why, naming the socket", "[service]") {
  llvm::LLVMContext ctx;
  FlatExport flat = service_module(ctx);
  std::string dir = make_temp_dir("kiln-service-test");
  try {
    run_stages_in_service(dir + "/none.sock", flat.flat, "x.rs", "c");
    FAIL("no service, yet an answer");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitIo);
    CHECK(std::string(e.what()).find("none.sock: cannot connect") != std::string::npos);
  }
  CHECK_THROWS_AS(run_stages_in_service(std::string(200, 'x'), flat.flat, "x.rs", "c"), KilnError);
  remove_tree(dir);
}
