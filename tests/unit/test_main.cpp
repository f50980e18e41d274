// The unit tests' main. Catch2 2.x has no SKIP, and a test that returns early counts
// as passed; so a test this machine cannot run (the CUDA executor without a usable
// GPU) is left out before the run and reported as "skip - ...", not counted.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

namespace kiln_test {
// Why the [gpu-device] tests cannot run here; empty when they can (test_stamp_gpu.cpp).
// Weak: the core's tests (the -Dllvm=disabled build) have no [gpu-device] test.
__attribute__((weak)) std::string gpu_device_unavailable();
}  // namespace kiln_test

// Whether the run as asked would include a test tagged [gpu-device].
bool selects_gpu_device_test(Catch::Session& session) {
  const Catch::Config& config = session.config();
  for (const Catch::TestCase& test :
       Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config))
    for (const std::string& tag : test.tags)
      if (tag == "gpu-device") return true;
  return false;
}

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv)) return rc;
  Catch::ConfigData data = session.configData();
  bool asked_for_gpu = false;
  for (const std::string& t : data.testsOrTags) asked_for_gpu |= t.find("gpu-device") != std::string::npos;
  // Asked for by its tag, the test runs, and fails without a GPU.
  if (!asked_for_gpu && !data.listTests && !data.listTestNamesOnly && &kiln_test::gpu_device_unavailable != nullptr &&
      selects_gpu_device_test(session)) {
    std::string why = kiln_test::gpu_device_unavailable();
    if (!why.empty()) {
      std::printf("skip - [gpu-device] the CUDA executor against the CPU executor: %s\n", why.c_str());
      std::fflush(stdout);
      data.testsOrTags.push_back("~[gpu-device]");
      session.useConfigData(data);
    }
  }
  return session.run();
}
