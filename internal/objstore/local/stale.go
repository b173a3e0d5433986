package local

import (
	"context"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// tempNameLen is the length of rand.Text's output, the random part of a
// temp file's name.
const tempNameLen = 26

// isTempName reports whether name is exactly a temp file name of reaper's:
// tmpPrefix and 26 characters of rand.Text's base32 alphabet (A-Z, 2-7).
// A user's ".reaper-tmp-notes" is not one.
func isTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, tmpPrefix)
	if !ok || len(rest) != tempNameLen {
		return false
	}
	for _, r := range []byte(rest) {
		if (r < 'A' || r > 'Z') && (r < '2' || r > '7') {
			return false
		}
	}
	return true
}

// isOwnTemp reports whether st, the entry called name, is a temp file of
// reaper's: named like one, a regular file, and marked (tempMark).
func isOwnTemp(name string, st *unix.Stat_t) bool {
	return isTempName(name) && isRegular(st) && st.Mode&tempMark != 0
}

// cleanOnce removes, the first time this Store writes into c's directory,
// the temp files crashed writers left in that directory: entries that are
// reaper's temp files by name, type and mark (isOwnTemp) and whose mtime
// is older than StaleTempAge. A user's file that merely has such a name is
// never removed. Each unlink is fenced. It is best effort: what it cannot
// remove stays for the next Store. Listings never remove anything, and
// reaper writes only at the root and in its own directories (_reaper/, the
// audit ledger's), never inside a table, so it never cleans inside one.
func (s *Store) cleanOnce(ctx context.Context, c *dirChain) {
	if _, done := s.cleaned.LoadOrStore(c.dirKey, struct{}{}); done {
		return
	}
	// A descriptor of its own: reading moves the offset of the one it reads.
	fd, err := openDirAt(c.fd(), ".")
	if err != nil {
		return
	}
	defer unix.Close(fd)
	r := newDirReader(fd)
	cutoff := time.Now().Add(-StaleTempAge)
	for {
		e, ok, err := r.next()
		if err != nil || !ok {
			return
		}
		if !isTempName(e.name) || (e.typ != unix.DT_REG && e.typ != unix.DT_UNKNOWN) {
			continue
		}
		st, err := lstatAt(fd, e.name)
		if err != nil || !isOwnTemp(e.name, &st) || !time.Unix(st.Mtim.Unix()).Before(cutoff) {
			continue
		}
		if fence(ctx) != nil {
			return
		}
		_ = unix.Unlinkat(fd, e.name, 0)
	}
}
