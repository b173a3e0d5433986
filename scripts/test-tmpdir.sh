#!/usr/bin/env bash
# Prints the directory make test's Go suites keep their temporary files in
# (TMPDIR: every t.TempDir, local root, fixture and test server's data): one
# on /dev/shm when that is a writable tmpfs with 4 GiB free, else nothing,
# and the suites use $TMPDIR as usual.
#
# Why: ext4 slows inode allocation in a block group that has many recently
# deleted inodes (the kernel's recently_deleted check), and the crash suites
# create and purge thousands of small files. On the 2-core machine test/chaos
# spent 172 s of system time on ext4 and 45 s on tmpfs. Every filesystem call
# the local store makes (link, rename, flock, fsync, O_EXCL) means the same on
# tmpfs. The 4 GiB floor keeps a container's small /dev/shm (Docker gives
# 64 MiB) out of it.
set -euo pipefail

shm=/dev/shm
[[ -d "$shm" && -w "$shm" ]] || exit 0
[[ "$(stat -f -c %T "$shm" 2>/dev/null)" == tmpfs ]] || exit 0
avail_kib="$(df -Pk "$shm" | awk 'NR == 2 { print $4 }')"
((avail_kib >= 4 * 1024 * 1024)) || exit 0
echo "$shm/reaper-test-$(id -u)"
