// kiln-capture --device: the build's one stamp service (lib/stamp/stamp_service.h), a
// child process of kiln-capture that lives from before the build to after it. It is
// kiln-capture itself, started with KILN_CAPTURE_ROLE=service; it runs in a process
// group of its own (the terminal's ^C goes to the build, and kiln-capture stops the
// service after), and it gets SIGTERM should kiln-capture die first, so that nothing
// of it outlives the build.
#pragma once
#include <string>
#include <sys/types.h>

namespace kiln {

// What the driver hands the service process (environment, read by stamp_service_main).
constexpr const char* kEnvServiceSocket = "KILN_SERVICE_SOCKET";
constexpr const char* kEnvServiceDevice = "KILN_SERVICE_DEVICE";
constexpr const char* kEnvServiceReceipts = "KILN_SERVICE_RECEIPTS";
// Tuning, documented in kiln-capture(1): executors, batch size, and the batch's wait.
constexpr const char* kEnvServiceStreams = "KILN_SERVICE_STREAMS";
constexpr const char* kEnvServiceBatch = "KILN_SERVICE_BATCH_INSTRUCTIONS";
constexpr const char* kEnvServiceWaitMs = "KILN_SERVICE_WAIT_MS";
constexpr const char* kEnvServiceBatching = "KILN_SERVICE_BATCHING";  // adaptive (default) or fixed
// Tests only: the service kills itself (SIGKILL) after answering N requests.
constexpr const char* kEnvTestServiceDieAfter = "KILN_TEST_SERVICE_DIE_AFTER";

class StampServiceProcess {
 public:
  // Starts the service on socket_path and waits until it listens. Throws
  // KilnError(kExitNoDevice) when it cannot open the device (its own line says why),
  // KilnError(kExitIo) when it cannot start or listen. `receipts`: service.jsonl.
  StampServiceProcess(const std::string& device, const std::string& socket_path, const std::string& receipts);
  ~StampServiceProcess();  // stop()
  StampServiceProcess(const StampServiceProcess&) = delete;
  StampServiceProcess& operator=(const StampServiceProcess&) = delete;
  const std::string& device_name() const { return device_name_; }
  // SIGTERM, then waits for it to answer what it accepted and write its summary
  // (SIGKILL after 30 s). Returns a line for the user: how it ended.
  std::string stop();

 private:
  pid_t pid_ = -1;
  std::string device_name_;
};

// The service process's main (kiln-capture with KILN_CAPTURE_ROLE=service): options
// from the environment, "ready"/"error" on standard output.
int stamp_service_main();

}  // namespace kiln
