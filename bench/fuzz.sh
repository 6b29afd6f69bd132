#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ (or the ones named) for a bounded time and
# prints, per target: executions, executions per second, coverage (libFuzzer's
# `cov` edges and `ft` features), corpus size and crashes. See docs/fuzzing.md.
#
#   bench/fuzz.sh                      # every target, 60 s each
#   FUZZ_SECS=300 bench/fuzz.sh a2a_jsonrpc client_sse
#   FUZZ_CMIN=1 bench/fuzz.sh          # then minimise fuzz/corpus/<target> (cmin)
#
# Environment:
#   FUZZ_SECS       seconds per target (default 60)
#   FUZZ_MAX_LEN    largest input in bytes (default 4096)
#   FUZZ_SANITIZER  none | address | leak ... (default none: the targets are safe
#                   Rust; their findings are panics and broken invariants)
#   FUZZ_CMIN       1: after running, minimise each corpus against the seeds, to
#                   edge coverage (-use_counters=0: the committed corpus stays
#                   small; FUZZ_SECS=0 FUZZ_CMIN=1 minimises without fuzzing)
#   FUZZ_INSTALL    1: install cargo-fuzz into target/fuzz-tools if it is missing
#   FUZZ_NICE       niceness of builds and runs (default 19)
#
# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain
# accept them. Without cargo-fuzz (on PATH or in target/fuzz-tools/bin) the script
# says so and exits 0, so it is safe to call from CI that lacks it; the corpus
# replay test (`cargo test -p taskwire-fuzz-targets`) runs everywhere.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
fuzz="$root/fuzz"
secs=${FUZZ_SECS:-60}
max_len=${FUZZ_MAX_LEN:-4096}
san=${FUZZ_SANITIZER:-none}
nice_n=${FUZZ_NICE:-19}
export RUSTC_BOOTSTRAP=1
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}

all_targets=(a2a_jsonrpc a2a_params mcp_jsonrpc client_sse agui_proto agui_run cas_input push_url)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi

dict_of() {
	case "$1" in
	a2a_*) echo a2a ;;
	mcp_*) echo mcp ;;
	client_sse) echo sse ;;
	agui_*) echo agui ;;
	cas_*) echo cas ;;
	push_*) echo push ;;
	esac
}

tools="$root/target/fuzz-tools"
if ! command -v cargo-fuzz >/dev/null 2>&1; then
	if [ -x "$tools/bin/cargo-fuzz" ]; then
		export PATH="$tools/bin:$PATH"
	elif [ "${FUZZ_INSTALL:-0}" = 1 ]; then
		echo "installing cargo-fuzz into $tools" >&2
		nice -n "$nice_n" cargo install cargo-fuzz --locked --root "$tools"
		export PATH="$tools/bin:$PATH"
	else
		echo "cargo-fuzz not found: skipping the fuzz run." >&2
		echo "  install it with: cargo install cargo-fuzz --locked" >&2
		echo "  (or FUZZ_INSTALL=1 $0, which installs it into target/fuzz-tools)" >&2
		exit 0
	fi
fi

echo "building ${#targets[@]} target(s) (sanitizer: $san)..." >&2
(cd "$fuzz" && nice -n "$nice_n" cargo fuzz build -s "$san" >/dev/null)
bin_dir="$fuzz/target/x86_64-unknown-linux-gnu/release"

# The last libFuzzer status line's value of `key` (e.g. cov, ft, corp).
stat_of() {
	{ grep -E '^#[0-9]+' "$2" || true; } | tail -1 | sed -nE "s/.* $1: ([0-9]+).*/\1/p"
}

summary=()
status=0
for t in "${targets[@]}"; do
	corpus="$fuzz/corpus/$t"
	seeds="$fuzz/seeds/$t"
	artifacts="$fuzz/artifacts/$t"
	log="$fuzz/artifacts/$t.log"
	mkdir -p "$corpus" "$artifacts"
	dict="$fuzz/dicts/$(dict_of "$t").dict"
	args=(-max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048
		-print_final_stats=1 -artifact_prefix="$artifacts/")
	[ -f "$dict" ] && args+=(-dict="$dict")
	before=$(find "$artifacts" -type f | wc -l)
	rc=0
	if [ "$secs" -gt 0 ]; then
		echo "fuzzing $t for ${secs}s..." >&2
		set +e
		nice -n "$nice_n" "$bin_dir/$t" "${args[@]}" "$corpus" "$seeds" >"$log" 2>&1
		rc=$?
		set -e
	else
		: >"$log"
	fi
	after=$(find "$artifacts" -type f | wc -l)
	crashes=$((after - before))
	execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
	rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$log" | tail -1)
	cov=$(stat_of cov "$log")
	ft=$(stat_of ft "$log")
	corp=$(stat_of corp "$log")
	if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
		status=1
		echo "  $t: exit $rc, $crashes new artifact(s) in $artifacts (log: $log)" >&2
		grep -m3 -E "panicked at|ERROR: libFuzzer|SUMMARY" "$log" >&2 || true
	fi
	if [ "${FUZZ_CMIN:-0}" = 1 ]; then
		# Minimise: the seeds first, then whatever of the corpus adds coverage to
		# them; the corpus keeps only the latter (the seeds stay in fuzz/seeds).
		tmp=$(mktemp -d)
		merge=(-merge=1 -use_counters=0 -max_len="$max_len" -timeout=10)
		nice -n "$nice_n" "$bin_dir/$t" "${merge[@]}" "$tmp" "$seeds" >/dev/null 2>&1 || true
		seeded=$(find "$tmp" -type f | wc -l)
		nice -n "$nice_n" "$bin_dir/$t" "${merge[@]}" "$tmp" "$corpus" >/dev/null 2>&1 || true
		# Drop what is a seed (merge names files by the SHA-1 of their content).
		for s in "$seeds"/*; do rm -f "$tmp/$(sha1sum "$s" | cut -d' ' -f1)"; done
		find "$corpus" -type f -delete
		find "$tmp" -maxdepth 1 -type f -exec mv {} "$corpus/" \;
		rm -rf "$tmp"
		echo "  $t: corpus minimised to $(find "$corpus" -type f | wc -l) file(s) beyond $seeded seed(s)" >&2
	fi
	summary+=("$(printf '%-12s %12s %8s %7s %7s %6s %7s' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$crashes")")
done

printf '\n%-12s %12s %8s %7s %7s %6s %7s\n' target execs exec/s cov ft corpus crashes
printf '%s\n' "${summary[@]}"
printf '(%ss per target, max_len %s, sanitizer %s; cov/ft/corpus from the last libFuzzer status line)\n' "$secs" "$max_len" "$san"
exit $status
