package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// TestStaleLeaseSweep: a process killed after deleting a table's marker and
// before releasing its lease leaves the lease alone, and no purge would ever
// take it over (there is nothing left to purge). A pass removes such a lease
// once it has expired, and only such a lease: not one that is still live,
// not one beside a marker (a purge takes that over), not an unreadable one
// (fail closed).
func TestStaleLeaseSweep(t *testing.T) {
	t.Parallel()
	for _, s3 := range []bool{false, true} {
		t.Run(fmt.Sprintf("s3=%t", s3), func(t *testing.T) {
			t.Parallel()
			b := localBackend(t)
			if s3 {
				b = s3Backend(t, "db")
			}
			f := newFixture(newRand(5), mix{kindNotDue: 1, kindLive: 1}, [2]int{3, 3})
			f.write(t, b)
			notDue, live := f.tables[0].name, f.tables[1].name
			now := time.Now()
			lease := func(expires time.Time) []byte {
				return fmt.Appendf(nil, `{"version":1,"owner":"dead-host/1/ab","token":"00112233445566778899aabbccddeeff","generation":3,"acquired_at_ms":%d,"renewed_at_ms":%[1]d,"expires_at_ms":%d}`,
					expires.Add(-time.Minute).UnixMilli(), expires.UnixMilli())
			}
			b.putAll(t, map[string][]byte{
				lifecycle.LockKey("gone"):    lease(now.Add(-time.Second)), // purged table: swept
				lifecycle.LockKey(live):      lease(now.Add(-time.Second)), // revived table: swept
				lifecycle.LockKey("working"): lease(now.Add(time.Hour)),    // still held: kept
				lifecycle.LockKey(notDue):    lease(now.Add(-time.Second)), // beside a marker: kept
				lifecycle.LockKey("garbage"): []byte("not a lease"),        // unreadable: kept
			})
			r := reaper(t, append(purgeArgs(30*time.Second), b.rootArgs("")...)...)
			require.Equal(t, 0, r.code, "%s", r)
			snap := take(t, b)
			for key, want := range map[string]bool{
				lifecycle.LockKey("gone"): false, lifecycle.LockKey(live): false,
				lifecycle.LockKey("working"): true, lifecycle.LockKey(notDue): true, lifecycle.LockKey("garbage"): true,
			} {
				_, got := snap[key]
				require.Equal(t, want, got, "lease %s kept", key)
			}
			checkSafe(t, f, snap, "after the sweep")
		})
	}
}
