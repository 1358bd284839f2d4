#!/usr/bin/env bash
# Run the test suite N times while CPU hogs keep the machine busy, as a laptop doing other work or a shared CI
# runner does; print each run's outcome and time, then the counts.  A test that passes only on an idle machine
# races the clock: it shows up here.
#
#   scripts/stress_suite.sh                  # 5 runs of `pytest`, two busy loops beside it
#   scripts/stress_suite.sh 10 0             # 10 runs on a quiet machine
#   scripts/stress_suite.sh 3 2 tests/scale  # 3 runs of tests/scale with two busy loops
#
# Environment: PYTEST (default: pytest), LOG_DIR (default: a temp dir; each run's output is kept there).
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:-5}
hogs=${2:-2}
shift $(( $# < 2 ? $# : 2 ))
pytest_cmd=${PYTEST:-pytest}
log_dir=${LOG_DIR:-$(mktemp -d -t stress-suite-XXXXXX)}
mkdir -p "$log_dir"

hog_pids=()
stop_hogs() {
  for pid in "${hog_pids[@]}"; do kill "$pid" 2>/dev/null; done
  hog_pids=()
}
trap stop_hogs EXIT INT TERM
for _ in $(seq 1 "$hogs"); do
  python3 -c 'while True: pass' &
  hog_pids+=($!)
done

echo "stress: $runs run(s) of '$pytest_cmd -q -p no:cacheprovider $*' beside $hogs busy loop(s); logs in $log_dir"
passed=0
failed=0
times=()
for run in $(seq 1 "$runs"); do
  log="$log_dir/run-$run.txt"
  began=$(date +%s)
  # shellcheck disable=SC2086
  $pytest_cmd -q -p no:cacheprovider "$@" >"$log" 2>&1
  code=$?
  took=$(( $(date +%s) - began ))
  times+=("$took")
  load=$(cut -d' ' -f1 /proc/loadavg)
  summary=$(grep -E '^[0-9]+ (passed|failed)|[0-9]+ failed|[0-9]+ passed' "$log" | tail -1)
  if [ "$code" -eq 0 ]; then
    passed=$((passed + 1))
    echo "run $run: PASS in ${took} s (load $load): $summary"
  else
    failed=$((failed + 1))
    echo "run $run: FAIL in ${took} s (load $load): $summary"
    grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/    /'
  fi
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
echo "stress: $passed passed, $failed failed of $runs; seconds per run (sorted): $sorted"
[ "$failed" -eq 0 ]
