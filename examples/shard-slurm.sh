#!/usr/bin/env bash
# A Slurm job array that shards a corpus's census and replay across the cluster's
# nodes: task K of N runs `--shard K/N` (kiln-census(1), kiln-replay(1): SHARDS), each
# writing its own CORPUS/census.shard-K-of-N.jsonl and replay-report.shard-K-of-N.json
# into the shared corpus; a job that depends on the whole array then merges them.
# Not run by kiln's tests (they have no Slurm); examples/shard-parallel.sh, which is,
# does the same on one machine with GNU parallel.
#
# Submit it (CORPUS on a file system every node sees, the kiln tools on PATH there):
#   jobid=$(sbatch --parsable examples/shard-slurm.sh /shared/corpus)
#   sbatch --dependency=afterok:$jobid --wrap \
#     'kiln-census merge /shared/corpus && kiln-replay merge /shared/corpus'
# afterok waits for every task of the array and runs the merge only if all of them
# succeeded. Each task runs one shard; its exit status is the tool's (kiln-replay
# exits 1 for an unstable or failed module, which fails the array and so the merge:
# use --dependency=afterany to merge anyway and let the merged report say which).
#SBATCH --job-name=kiln-shard
#SBATCH --array=1-4
#SBATCH --cpus-per-task=4
#SBATCH --time=01:00:00
#SBATCH --output=kiln-shard-%A_%a.out
set -euo pipefail

corpus=${1:?usage: sbatch examples/shard-slurm.sh CORPUS}
k=${SLURM_ARRAY_TASK_ID:?run under sbatch (a job array)}
n=${SLURM_ARRAY_TASK_COUNT:?run under sbatch (a job array)}
jobs=${SLURM_CPUS_PER_TASK:-1}

kiln-census "$corpus" --shard "$k/$n" -j "$jobs" > /dev/null
kiln-replay "$corpus" --backend stamp,llvm --rounds 3 -j "$jobs" --shard "$k/$n" > /dev/null
# kiln-emit shards too; give each task its own directory, then copy the objects
# together and concatenate the receipts (that is its merge):
#   kiln-emit "$corpus" --out "objects-$k" -j "$jobs" --shard "$k/$n"
