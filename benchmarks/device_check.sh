#!/usr/bin/env bash
# Every figure issue 16 asks of a 16-core host with a GPU, in one run of under 8 minutes:
#
#     OUT=/path/to/figures bash benchmarks/device_check.sh
#     DEVICE_CHECK_SMOKE=1 OUT=/tmp/x bash benchmarks/device_check.sh   # tiny dry run of the logic
#
# Writes to $OUT one text file per part plus device_check.log (each part's command, exit code and
# seconds) and summary.txt (the parts that failed). Each part runs under `timeout` with its own
# limit; a part that fails or runs out of time is logged and the script goes on (what a part
# printed before its limit stays in its file). Parts: host (GPU, CPUs, versions), mjwarp_tests
# (tests/envruntime/test_mjwarp_backend.py on CUDA), seven_cases (the 7 cases on MuJoCo with
# 16 threads and MotrixSim, N=8192, 3 warm-up + 20 measured steps, pregenerated actions),
# seven_cases_mjwarp (the same cases on MJWarp, where the case allows: a failing case is reported
# and the others run), update_state_scaling (1/4/8/16 threads), actor_devices (cuda vs cpu),
# copied_bytes. Nothing is installed unless the imports fail; then one
# `pip install -c constraints-cpu.txt -e '.[dev,mjwarp]'` runs under a time limit (the host's own
# registries). Exit code: 0 when every part passed, 1 otherwise.
set -u

OUT=${OUT:?set OUT to the folder that receives the figures}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python}
LOG="$OUT/device_check.log"
: > "$LOG"
FAILED=()

if [ "${DEVICE_CHECK_SMOKE:-0}" = 1 ]; then
  N=32; WARMUP=1; STEPS=2; THREADS=2; THREADS_LIST=1,2; SCALE=4
  CASES=(--cases flashsac/go2_joystick_flat/mujoco,sac/g1_walk_flat/motrix)
  MJWARP_TESTS=(-k missing_mjwarp)  # the warp kernels take minutes to compile on a CPU
  MJWARP_CASES=0
else
  N=8192; WARMUP=3; STEPS=20; THREADS=16; THREADS_LIST=1,4,8,16; SCALE=1
  CASES=()
  MJWARP_TESTS=()
  MJWARP_CASES=1
fi

# part NAME LIMIT_S COMMAND...: run COMMAND under `timeout`, output to $OUT/NAME.txt, log the outcome
part() {
  local name=$1 limit=$(( $2 * SCALE )) start rc
  shift 2
  start=$(date +%s)
  echo "== $name (limit ${limit}s): $*" >> "$LOG"
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  rc=$?
  echo "== $name: exit $rc after $(( $(date +%s) - start ))s" >> "$LOG"
  if [ "$rc" -ne 0 ]; then
    FAILED+=("$name (exit $rc$([ "$rc" -eq 124 ] && echo ', time limit'))")
  fi
}

if ! timeout 60 "$PY" -c "import envruntime, torch, mujoco, motrixsim, numba, warp, mujoco_warp" 2>> "$LOG"; then
  part install 150 "$PY" -m pip install -c constraints-cpu.txt -e ".[dev,mjwarp]"
fi

part host 20 bash -c "nvidia-smi; nproc; uptime; $PY -c 'import torch, warp, numba; \
print(\"torch\", torch.__version__, \"cuda\", torch.cuda.is_available()); warp.init(); \
print(\"warp devices\", warp.get_devices()); print(\"numba\", numba.__version__)'"
part mjwarp_tests 110 "$PY" -m pytest -q tests/envruntime/test_mjwarp_backend.py "${MJWARP_TESTS[@]}"
part seven_cases 190 "$PY" benchmarks/seven_case_overhead.py --num-envs "$N" --warmup "$WARMUP" \
  --steps "$STEPS" --threads "$THREADS" --actions pregenerated --targets issue16 "${CASES[@]}"
if [ "$MJWARP_CASES" = 1 ]; then
  part seven_cases_mjwarp 60 "$PY" benchmarks/seven_case_overhead.py --num-envs "$N" --warmup "$WARMUP" \
    --steps "$STEPS" --threads "$THREADS" --actions pregenerated --targets issue16 --sim mjwarp
fi
part update_state_scaling 50 "$PY" benchmarks/scale_targets.py --parts scaling --num-envs "$N" \
  --warmup "$WARMUP" --steps "$STEPS" --threads-list "$THREADS_LIST" --rounds 1
part actor_devices 25 "$PY" benchmarks/scale_targets.py --parts actor --task go2_joystick_flat \
  --num-envs "$N" --warmup "$WARMUP" --steps "$STEPS" --threads "$THREADS" --devices cpu,cuda
part copied_bytes 25 "$PY" benchmarks/scale_targets.py --parts bytes --task go2_joystick_flat \
  --num-envs "$N" --steps "$STEPS" --threads "$THREADS"

if [ "${#FAILED[@]}" -eq 0 ]; then
  echo "every part passed" | tee "$OUT/summary.txt"
  exit 0
fi
printf 'failed: %s\n' "${FAILED[@]}" | tee "$OUT/summary.txt"
exit 1
