#!/usr/bin/env bash
# Replay keeps its services alive across rounds, proves bytes stable, and reports a
# back end whose output changes from one emission to the next.
source "$(dirname "$0")/lib.sh"

example_crate "$T/crate"
(cd "$T/crate" && kiln-capture -o "$T/C" -- cargo build -q)
check "replay --rounds 3 -j 2: stable bytes, exit 0" bash -c "kiln-replay '$T/C' --rounds 3 -j 2 > '$T/replay.txt'"
cat "$T/replay.txt"
r="$T/C/replay-report.json"
check "the report has per-round stage times and throughput" \
  jq -e '.rounds == 3 and (.services[0].rounds | length) == 3 and .services[0].rounds[0].stages.codegen > 0 and .services[0].rounds[2].instructions_per_second_wall > 0 and .unstable_modules == 0' "$r"
check "modules are parsed once per worker: later rounds parse less" \
  jq -e '.services[0].rounds[2].stages.parse < .services[0].rounds[0].stages.parse' "$r"
check "stamp against llvm: whole objects' sizes beside .text, and their ratio" bash -c "
  kiln-replay '$T/C' --backend stamp,llvm --rounds 1 --report '$T/sizes.json' | grep -q 'whole objects' &&
  jq -e '[.services[].rounds[0] | .object_bytes > .text_bytes and .text_bytes > 0] == [true, true] and
         ((.stamp_vs_llvm.object_ratio - .services[0].rounds[0].object_bytes / .services[1].rounds[0].object_bytes)
          | if . < 0 then -. else . end) < 1e-6' '$T/sizes.json' >/dev/null"

# The GPU service: with a usable GPU its objects must equal the CPU executor's;
# without one (CI), a clear one-line refusal with exit status 7 before any round.
# Which of the two is right is decided here, not by what kiln-replay did: a GPU is
# expected when the tools were built with CUDA and the machine has an NVIDIA device
# (KILN_TEST_GPU=1 or 0 overrides), so that a GPU machine refusing its GPU fails.
if [[ -n ${KILN_TEST_GPU:-} ]]; then
  expect_gpu=$KILN_TEST_GPU
elif kiln-replay --version | grep -q 'CUDA kernels built' && compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
  expect_gpu=1
else
  expect_gpu=0
fi
err=$(kiln-replay "$T/C" --backend stamp --device cuda,cpu --rounds 2 --report "$T/gpu.json" 2>&1 >/dev/null)
rc=$?
if [[ $expect_gpu == 0 ]]; then
  check "--device cuda without a usable GPU: exit 7, one line saying why (exit $rc)" \
    bash -c "[[ $rc -eq 7 ]] && [[ \$(printf '%s\n' \"\$1\" | grep -c .) -eq 1 ]] && grep -q 'device cuda: ' <<< \"\$1\"" _ "$err"
else
  check "--device cuda,cpu on a GPU: GPU and CPU executors give identical objects (exit $rc)" \
    bash -c "[[ $rc -eq 0 ]] && jq -e '.unstable_modules == 0 and .gpu.kernel_launches_per_round > 0' '$T/gpu.json' >/dev/null"
fi

# The GPU service's batching, pipeline, byte check and receipts, on the GPU stand-in
# (the CPU executor behind the GPU's interface, for machines without a GPU): small
# batches on 3 streams, so that modules share batches and batches share streams.
KILN_GPU_STANDIN=cpu kiln-replay "$T/C" --backend stamp,llvm --device cuda,cpu --rounds 3 --gpu-streams 3 --gpu-batch 200 \
  --report "$T/standin.json" > "$T/standin.txt"
rc=$?
cat "$T/standin.txt"
check "GPU service on the stand-in: exit 0, its objects equal the CPU stamp service's (exit $rc)" \
  bash -c "[[ $rc -eq 0 ]] && jq -e '.unstable_modules == 0 and .failed_modules == 0 and (.gpu.service | test(\"stand-in\"))' '$T/standin.json' >/dev/null"
check "batches: more than one, some with several modules; launches counted once per batch" \
  jq -e '.gpu.batches > 1 and ([.gpu.receipts[].batch_modules] | max) > 1 and .gpu.kernel_launches_per_round == ([.gpu.receipts[] | {batch, batch_kernel_launches}] | unique | map(.batch_kernel_launches) | add)' "$T/standin.json"
check "a receipt per module stamp emitted: device, object from the device, the object's hash" \
  jq -e '(.gpu.receipts | length) > 0 and all(.gpu.receipts[]; .object_from_device and (.device | length) > 0 and (.object_xxh3 | length) == 32)' "$T/standin.json"
check "the GPU service's rate is over its batches' wall time, with ratios to llvm and the CPU stages" \
  jq -e '.gpu.device_phase_seconds > 0 and .gpu.device_span_seconds > 0 and .gpu.device_span_seconds <= .gpu.device_phase_seconds and .gpu.stages_instructions_per_second > 0 and .gpu.speedup_vs_llvm > 0 and .gpu.speedup_vs_cpu_stages > 0' "$T/standin.json"

# A back end that appends a changing byte to every object must be caught.
flaky="cmd:$LLVM_BINDIR/llc -O0 -filetype=obj -relocation-model=pic {in} -o {out} && head -c 8 /dev/urandom >> {out}"
kiln-capture filter -o "$T/S" "$T/C" --crate kiln_example >/dev/null
kiln-replay "$T/S" --backend "$flaky" --rounds 2 -j 1 --report "$T/flaky.json" > "$T/flaky.txt"
rc=$?
check "an unstable back end fails replay (exit $rc) and is named with a reproduce command" \
  bash -c "[[ $rc -eq 1 ]] && grep -q UNSTABLE '$T/flaky.txt' && jq -e '.unstable_modules > 0 and (.instability[0].reproduce | test(\"kiln-emit\"))' '$T/flaky.json' >/dev/null"
finish
