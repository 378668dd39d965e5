#!/bin/sh
# summary.sh - one line per fuzz target after `make fuzz`: executions per
# second, coverage (libFuzzer's cov: edges and ft: features at the end),
# corpus size, and what the run left in its artifacts folder (crash-,
# leak-, timeout-, oom- and slow-unit- files).  Exits 1 when a target found
# something, so `make fuzz` fails and the inputs are there to look at.
#
# Usage: summary.sh BUILD_FUZZ_DIR NAME...
dir=$1
shift
bad=0
printf '%-16s %9s %7s %7s %12s %s\n' target exec/s cov ft corpus found
for n in "$@"; do
	log=$dir/$n.log
	# the last status line: "#N DONE cov: C ft: F corp: K/SIZE ..."
	last=$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.* corp: \([^ ]*\).*/\1/p')
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	found=$(ls "$dir/artifacts-$n" 2>/dev/null | sed 's/-.*//' | sort | uniq -c |
		awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " }')
	rc=$(cat "$dir/$n.rc" 2>/dev/null || echo '?')
	if [ -n "$found" ] || [ "$rc" != 0 ]; then
		bad=1
		found="${found:-none} (exit $rc; see $log)"
	else
		found=none
	fi
	printf '%-16s %9s %7s %7s %12s %s\n' "$n" "${eps:-?}" "${cov:-?}" "${ft:-?}" \
		"${corp:-?}" "$found"
done
exit $bad
