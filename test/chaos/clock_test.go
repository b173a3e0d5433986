package chaos

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClockOffset: REAPER_CLOCK_OFFSET makes one reaper process behave as a
// host whose wall clock is off by that much. It shifts the timestamps of
// its logs, reports and ledger rows and nothing else: a purge a week ahead
// purges the due table and not the one due in an hour, a purge a week
// behind purges the due table all the same (the store's clock decides),
// and both exit 0. The chaos suites rely on the knob (TestReplicasSkewedClocks).
func TestClockOffset(t *testing.T) {
	t.Parallel()
	for _, off := range []time.Duration{week, -week} {
		t.Run(off.String(), func(t *testing.T) {
			t.Parallel()
			b := localBackend(t)
			f := newFixture(newRand(11), mix{kindDue: 1, kindNotDue: 1, kindLive: 1}, [2]int{5, 5})
			f.write(t, b)
			audit := filepath.Join(t.TempDir(), "audit")
			begin := time.Now()
			args := append(purgeArgs(30*time.Second, shortSkew, "--set", "audit.location="+audit), b.rootArgs("")...)
			r := startReaper(t, args, []string{"REAPER_CLOCK_OFFSET=" + off.String()}, nil).wait(t)
			end := time.Now()
			require.Equal(t, 0, r.code, "REAPER_CLOCK_OFFSET=%v must be accepted, and change nothing but timestamps:\n%s", off, r)
			out := report(t, r).outcomes()
			require.Equal(t, "purged", out[f.tables[0].name], "%s", r)
			require.True(t, strings.HasPrefix(out[f.tables[1].name], "skipped: not due"), "%s", r)
			snap := take(t, b)
			checkSafe(t, f, snap, "after the purge")
			ok, why := purgedAll(f, snap)
			require.True(t, ok, why)

			rows := ledgerRows(t, audit)
			require.NotEmpty(t, rows)
			for _, row := range rows {
				require.False(t, row.Started.Before(begin.Add(off-time.Second)) || row.Started.After(end.Add(off+time.Second)),
					"ledger row dated %s: want the process's clock, %v off", row.Started, off)
			}
		})
	}
}
