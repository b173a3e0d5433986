#!/bin/sh
# Runs its arguments at the lowest CPU priority, in a session of their own,
# so that the caller can stop the whole process group (kill -- -PID) and a
# build started here takes only the CPU nothing else wants. setsid alone would
# undo nice on Linux: with autogroup scheduling (sched_autogroup_enabled) each
# session gets an equal share of the CPU whatever its processes' nice values,
# so the new session's own group is lowered too (/proc/self/autogroup; absent
# without autogroups, where nice alone does it).
exec setsid sh -c 'echo 19 > /proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' background "$@"
