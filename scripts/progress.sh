#!/usr/bin/env bash
# progress.sh LABEL COMMAND...: runs a `go build -v` COMMAND and says how far
# it is, so a cold build (minutes on 2 cores, downloading and compiling
# every module) is never silent: a line every PROGRESS_EVERY packages
# compiled (default 100), and one after PROGRESS_TICK seconds (default 20)
# without one (the module downloads, the link). go build -v names each
# package on stderr as it compiles it; every other line (a compiler error)
# is passed on to stderr. The exit status is the command's.
set -uo pipefail

label=$1
shift
every=${PROGRESS_EVERY:-100}
tick=${PROGRESS_TICK:-20}
start=$SECONDS
last=$SECONDS
n=0
rc=1

say() { echo "$label: $1 ($((SECONDS - start)) s)"; last=$SECONDS; }

# The command's stdout and stderr, then a last line with its exit status.
exec 3< <("$@" 2>&1; echo "progress.sh-exit:$?")
while :; do
	if IFS= read -r -t 1 line <&3; then
		case $line in
		progress.sh-exit:*)
			rc=${line#progress.sh-exit:}
			break
			;;
		esac
		if [[ $line =~ ^[A-Za-z0-9_.~+/-]+$ ]]; then
			n=$((n + 1))
			if ((n % every == 0)); then
				say "$n packages compiled"
			fi
		else
			echo "$line" >&2
		fi
	elif (($? <= 128)); then
		break # end of input without an exit line: the shell itself failed
	elif ((SECONDS - last >= tick)); then
		if ((n == 0)); then
			say "still working: downloading modules (a first build fetches every one before compiling)"
		else
			say "still working: $n packages compiled so far"
		fi
	fi
done
exit "$rc"
