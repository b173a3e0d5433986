package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
)

// TestStaleLeaseSweep: a process killed after deleting a table's marker and
// before releasing its lease leaves the lease alone, and no purge would ever
// take it over (there is nothing left to purge). A pass removes such a lease
// once the store's clock allows a takeover (its LastModified + ttl_ms + 1s +
// skew allowance), and only such a lease: not one that is still live, not
// one beside a marker (a purge takes that over), not an unreadable one (fail
// closed). The holder's own times in the body (expires_at_ms) decide
// nothing: a lease whose body says it expired long ago but whose ttl_ms has
// not run out since it was written is kept, and one whose body says it
// expires in a year but whose ttl_ms has run out is swept. A version 1 body
// (an older reaper: ttl = expires_at_ms - renewed_at_ms) is judged the same
// way.
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
			v2 := func(ttl time.Duration, expires time.Time) []byte {
				return fmt.Appendf(nil, `{"version":2,"owner":"dead-host/1","token":"00112233445566778899aabbccddeeff","generation":3,"ttl_ms":%d,"acquired_at_ms":%d,"renewed_at_ms":%[2]d,"expires_at_ms":%d,"nonce":"0011223344556677"}`,
					ttl.Milliseconds(), now.UnixMilli(), expires.UnixMilli())
			}
			v1 := func(ttl time.Duration) []byte {
				return fmt.Appendf(nil, `{"version":1,"owner":"old-reaper/1/ab","token":"00112233445566778899aabbccddeeff","generation":3,"acquired_at_ms":%d,"renewed_at_ms":%[1]d,"expires_at_ms":%d}`,
					now.UnixMilli(), now.Add(ttl).UnixMilli())
			}
			const short = 200 * time.Millisecond
			ancient, future := time.UnixMilli(1), now.Add(365*24*time.Hour)
			want := map[string]bool{ // lease key -> kept
				lifecycle.LockKey("gone"):          false, // purged table: swept
				lifecycle.LockKey(live):            false, // revived table: swept
				lifecycle.LockKey("says_year"):     false, // body says a year, ttl_ms ran out: swept
				lifecycle.LockKey("old_reaper"):    false, // version 1, its ttl ran out: swept
				lifecycle.LockKey("working"):       true,  // ttl_ms of an hour: kept
				lifecycle.LockKey("says_ancient"):  true,  // body says expired in 1970, ttl_ms of an hour: kept
				lifecycle.LockKey("old_reaper_on"): true,  // version 1 with an hour left: kept
				lifecycle.LockKey(notDue):          true,  // beside a marker: kept
				lifecycle.LockKey("garbage"):       true,  // unreadable: kept
			}
			b.putAll(t, map[string][]byte{
				lifecycle.LockKey("gone"):          v2(short, now.Add(short)),
				lifecycle.LockKey(live):            v2(short, now.Add(short)),
				lifecycle.LockKey("says_year"):     v2(short, future),
				lifecycle.LockKey("old_reaper"):    v1(short),
				lifecycle.LockKey("working"):       v2(time.Hour, now.Add(time.Hour)),
				lifecycle.LockKey("says_ancient"):  v2(time.Hour, ancient),
				lifecycle.LockKey("old_reaper_on"): v1(time.Hour),
				lifecycle.LockKey(notDue):          v2(short, now.Add(short)),
				lifecycle.LockKey("garbage"):       []byte("not a lease"),
			})
			// Wait until the store's clock allows a takeover of the short
			// leases (LastModified + 200ms + 1s + skew): the sweep judges by
			// it, and this is the instant the pass must see.
			var at time.Time
			for _, k := range sortedKeys(want) {
				if k == lifecycle.LockKey("garbage") {
					continue
				}
				info, err := lock.Read(context.Background(), b.raw, k)
				require.NoError(t, err)
				if info.TTL == short {
					if ta := info.TakeoverAt(info.Modified, shortSkew); ta.After(at) {
						at = ta
					}
				} else {
					require.Equal(t, time.Hour, info.TTL, "lease %s", k)
				}
			}
			b.waitStore(t, at, "wait for the short leases' takeover time")
			r := reaper(t, append(purgeArgs(30*time.Second, shortSkew), b.rootArgs("")...)...)
			require.Equal(t, 0, r.code, "%s", r)
			snap := take(t, b)
			for _, key := range sortedKeys(want) {
				_, got := snap[key]
				require.Equal(t, want[key], got, "lease %s kept\n%s", key, r)
			}
			checkSafe(t, f, snap, "after the sweep")
		})
	}
}
