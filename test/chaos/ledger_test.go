package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// The audit ledger of killed and stopped purges (docs/FORMAT.md, the
// journal): a `reaper purge` SIGKILLed at a named request, chosen by the
// proxy, loses no row of a table it destroyed or may have destroyed, and
// the journal of a purge still running is not folded by another.

// auditRow is one row of `reaper audit -o json`.
type auditRow struct {
	PassID      string  `json:"pass_id"`
	Root        string  `json:"root"`
	Table       string  `json:"table"`
	Action      string  `json:"action"`
	Reason      *string `json:"reason"`
	Error       *string `json:"error"`
	Objects     int64   `json:"objects"`
	RecoveredBy *string `json:"recovered_by"`
	Pending     bool    `json:"pending"`
}

func (r auditRow) String() string {
	s := func(p *string) string {
		if p == nil {
			return "<null>"
		}
		return *p
	}
	return fmt.Sprintf("%s/%s %s (reason %s; error %s; recovered_by %s; pending %t)", r.PassID, r.Table, r.Action, s(r.Reason), s(r.Error), s(r.RecoveredBy), r.Pending)
}

// ledgerLoc is where a suite's audit ledger is: a local directory, or an
// s3:// location on the test server (opts reach it directly).
type ledgerLoc struct {
	uri  string
	opts map[string]string
	// b reads its store and its clock.
	b *backend
}

func localLedger(t *testing.T) ledgerLoc {
	dir := filepath.Join(t.TempDir(), "audit")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return ledgerLoc{uri: dir, b: openBackend(t, "local", dir, nil, dir, nil)}
}

func s3Ledger(t *testing.T) (ledgerLoc, objstoretest.S3Server) {
	srv := objstoretest.S3(t)
	return ledgerLoc{uri: srv.URI("audit"), opts: srv.Options(), b: openBackend(t, "s3", srv.URI("audit"), srv.Options(), "", &srv)}, srv
}

// config writes a configuration file whose audit ledger is l, its
// aws_endpoint replaced by endpoint when not empty (the fault proxy).
func (l ledgerLoc) config(t *testing.T, endpoint string) string {
	t.Helper()
	opts := map[string]string{}
	for k, v := range l.opts {
		if k == "aws_endpoint" && endpoint != "" {
			v = endpoint
		}
		opts[k] = v
	}
	audit := map[string]any{"location": l.uri}
	if len(opts) > 0 {
		audit["storage_options"] = opts
	}
	raw, err := yaml.Marshal(map[string]any{"audit": audit})
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(p, raw, 0o600))
	return p
}

// rows runs `reaper audit` on the ledger: every row of the last 30 days.
func (l ledgerLoc) rows(t *testing.T) []auditRow {
	t.Helper()
	args := []string{"audit", "--location", l.uri, "-o", "json", "--since", "30d"}
	for _, k := range sortedKeys(l.opts) {
		args = append(args, "--storage-option", k+"="+l.opts[k])
	}
	r := reaper(t, args...)
	require.Equal(t, 0, r.code, "reaper audit:\n%s", r)
	var rows []auditRow
	require.NoError(t, json.Unmarshal(r.stdout, &rows), "%s", r)
	return rows
}

// row is the one row of pass and table (t fails on none or several).
func (l ledgerLoc) row(t *testing.T, pass, table string) auditRow {
	t.Helper()
	rows := l.rows(t)
	var found []auditRow
	for _, r := range rows {
		if r.PassID == pass && r.Table == table {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "rows of pass %s for table %s in: %v", pass, table, rows)
	return found[0]
}

// journal lists the keys under the ledger's journal/.
func (l ledgerLoc) journal(t *testing.T) []string {
	t.Helper()
	var keys []string
	require.NoError(t, l.b.raw.Walk(context.Background(), ledger.JournalPrefix, func(objs []objstore.Object) error {
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		return nil
	}))
	return keys
}

// waitJournalLeases waits until the ledger store's clock allows every
// journal lease there to be taken over (a known instant of a real clock,
// read from the leases; bounded).
func (l ledgerLoc) waitJournalLeases(t *testing.T, skew time.Duration) {
	t.Helper()
	var latest time.Time
	for _, k := range l.journal(t) {
		if !strings.HasSuffix(k, "/lease") {
			continue
		}
		info, err := lock.Read(context.Background(), l.b.raw, k)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		require.NoError(t, err, "journal lease %s", k)
		if at := info.TakeoverAt(info.Modified, skew); at.After(latest) {
			latest = at
		}
	}
	if !latest.IsZero() {
		l.b.waitStore(t, latest, "wait for the journal leases' takeover time")
	}
}

// killWhen runs a purge and SIGKILLs it at the first request through px
// that match picks: after the server answered it (landed) or before it
// was forwarded. Every request after it is dropped.
func killWhen(t *testing.T, px *proxy, args []string, match func(*http.Request) bool, landed bool) result {
	t.Helper()
	var cmdKill atomic.Pointer[func()]
	var fired atomic.Bool
	kill := func() {
		if k := cmdKill.Load(); k != nil {
			(*k)()
		}
	}
	px.setHook(func(_ int64, r *http.Request) (hookAction, func()) {
		switch {
		case fired.Load():
			kill()
			return hookDrop, nil
		case !match(r):
			return hookPass, nil
		}
		fired.Store(true)
		if landed {
			return hookForward, kill
		}
		return hookDrop, kill
	})
	r := reaperWith(t, args, &killer{start: func(k func()) { cmdKill.Store(&k) }})
	px.setHook(nil)
	px.settle(t)
	require.True(t, fired.Load() && r.killed, "the kill point was never reached:\n%s", r)
	return r
}

func isRequest(method, key string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Method == method && strings.HasSuffix(r.URL.Path, "/"+key) }
}

// TestLedgerKeepsKilledPurges kills `reaper purge` of an S3 root (its
// ledger a local directory) at three points of one table's purge: right
// after its commit was refused (the intent recorded, nothing committed),
// after its first delete batch landed (partly purged), and right after
// its marker delete landed (the table destroyed, before the pass could
// record the outcome or write its file). Each time `reaper audit` shows
// the killed pass's row for the table at once (pending, failed,
// unfinished, saying what may have happened), and the next pass, once the
// killed pass's journal lease may be taken over, folds it into the ledger
// (recovered_by): as purged (recovered) when the table was destroyed,
// else unfinished, and it then finishes the table with a purged row of
// its own.
func TestLedgerKeepsKilledPurges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		point  func(name string) func(*http.Request) bool
		landed bool
		// says is what the unfinished row must say of the table.
		says string
		// finished: the kill left nothing for the next pass to purge.
		finished bool
	}{
		{"before the commit", func(n string) func(*http.Request) bool { return isRequest(http.MethodPut, lifecycle.CommitKey(n)) }, false,
			"may have stopped before its commit (the table untouched, still soft-deleted) or after it (partly or fully purged)", false},
		{"mid-delete", func(string) func(*http.Request) bool { return isDeleteObjects }, true,
			"partly or fully purged", false},
		{"after the marker delete", func(n string) func(*http.Request) bool { return isRequest(http.MethodDelete, lifecycle.MarkerKey(n)) }, true,
			"partly or fully purged", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := s3Backend(t, "db")
			f := newFixture(newRand(41), mix{kindDue: 1, kindLive: 1}, [2]int{8, 8})
			f.write(t, b)
			var tb *table
			for _, x := range f.tables {
				if x.kind == kindDue {
					tb = x
				}
			}
			px := newProxy(t, b.srv, 41)
			l := localLedger(t)
			args := append(purgeArgs(s3LeaseTTL, shortSkew, "--set", "audit.location="+l.uri), b.rootArgs(px.URL())...)
			ra := killWhen(t, px, args, tc.point(tb.name), tc.landed)
			aPass := passID(t, ra)
			snap := take(t, b)
			checkSafe(t, f, snap, tc.name)
			if s := stateOf(tb, snap); tc.finished {
				require.True(t, s.fullyGone() && s.marker == markerAbsent, "the kill point is after the table was destroyed: %s", s)
			}

			row := l.row(t, aPass, tb.name)
			require.True(t, row.Pending, "read from the killed pass's journal: %s", row)
			require.Equal(t, string(outcome.Failed), row.Action, "%s", row)
			require.NotNil(t, row.Error, "%s", row)
			require.True(t, strings.HasPrefix(*row.Reason, string(outcome.ReasonUnfinished)+": "), "%s", row)
			require.Contains(t, *row.Error, tc.says, "%s", row)

			waitTakeover(t, b, shortSkew, "wait for the killed pass's table leases")
			l.waitJournalLeases(t, shortSkew)
			rb := reaper(t, append(purgeArgs(s3LeaseTTL, shortSkew, "--set", "audit.location="+l.uri), b.rootArgs("")...)...)
			require.Equal(t, 0, rb.code, "the next pass:\n%s", rb)
			bPass := passID(t, rb)
			row = l.row(t, aPass, tb.name)
			require.False(t, row.Pending, "%s", row)
			require.NotNil(t, row.RecoveredBy, "%s", row)
			require.Equal(t, bPass, *row.RecoveredBy, "folded by the next pass: %s", row)
			require.Empty(t, l.journal(t), "the folded journal is gone")
			if tc.finished {
				// Folded while the table is gone: only the outcome was lost.
				require.Equal(t, string(outcome.Purged), row.Action, "%s", row)
				require.True(t, strings.HasPrefix(*row.Reason, string(outcome.ReasonDue)+": recovered: "), "%s", row)
			} else {
				require.Equal(t, string(outcome.Failed), row.Action, "folded while the table is there: %s", row)
				require.Equal(t, string(outcome.Purged), l.row(t, bPass, tb.name).Action, "the next pass finishes the table")
			}
			snap = take(t, b)
			s := stateOf(tb, snap)
			require.True(t, s.fullyGone() && s.marker == markerAbsent && s.commit == commitAbsent, "%s", s)
		})
	}
}

// TestLedgerKeepsAKilledLocalPurge: a local root, its ledger on S3 behind
// the proxy. The purge is killed at its first ledger request after the
// table's marker was deleted from the disk: the table is destroyed, and
// nothing more of the pass reaches the ledger (before the journal, that
// request was the pass's file, and the table had no row at all). Its row
// is in the ledger at once, and folded by the next pass as purged
// (recovered).
func TestLedgerKeepsAKilledLocalPurge(t *testing.T) {
	t.Parallel()
	b := localBackend(t)
	f := newFixture(newRand(43), mix{kindDue: 1, kindLive: 1}, [2]int{8, 8})
	f.write(t, b)
	var tb *table
	for _, x := range f.tables {
		if x.kind == kindDue {
			tb = x
		}
	}
	l, srv := s3Ledger(t)
	px := newProxy(t, &srv, 43)
	markerGone := func(*http.Request) bool {
		_, err := os.Lstat(filepath.Join(b.dir, filepath.FromSlash(lifecycle.MarkerKey(tb.name))))
		return errors.Is(err, fs.ErrNotExist)
	}
	args := append(purgeArgs(s3LeaseTTL, shortSkew, "--config", l.config(t, px.URL())), b.rootArgs("")...)
	ra := killWhen(t, px, args, markerGone, false)
	aPass := passID(t, ra)
	snap := take(t, b)
	checkSafe(t, f, snap, "killed after the marker delete")
	s := stateOf(tb, snap)
	require.True(t, s.fullyGone() && s.marker == markerAbsent, "%s", s)

	row := l.row(t, aPass, tb.name)
	require.True(t, row.Pending, "%s", row)
	require.Contains(t, *row.Error, "partly or fully purged", "%s", row)

	l.waitJournalLeases(t, shortSkew)
	rb := reaper(t, append(purgeArgs(s3LeaseTTL, shortSkew, "--config", l.config(t, "")), b.rootArgs("")...)...)
	require.Equal(t, 0, rb.code, "the next pass:\n%s", rb)
	row = l.row(t, aPass, tb.name)
	require.False(t, row.Pending, "%s", row)
	require.Equal(t, passID(t, rb), *row.RecoveredBy, "%s", row)
	require.Equal(t, string(outcome.Purged), row.Action, "folded while the table is gone: %s", row)
	require.Empty(t, l.journal(t))
}

// TestLedgerRunningPassNotFolded stops a purge (SIGSTOP) at its commit,
// its intent recorded, its leases valid (30s). A whole pass run meanwhile
// over the same root and ledger skips the table (locked) and leaves the
// stopped pass's journal alone; resumed, that pass finishes the table and
// its own file holds the table's only row.
func TestLedgerRunningPassNotFolded(t *testing.T) {
	t.Parallel()
	const leaseTTL = 30 * time.Second
	b := s3Backend(t, "db")
	f := newFixture(newRand(47), mix{kindDue: 1, kindLive: 1}, [2]int{6, 6})
	f.write(t, b)
	var tb *table
	for _, x := range f.tables {
		if x.kind == kindDue {
			tb = x
		}
	}
	// The ledger on S3: a process stopped inside a local write would
	// hold its directory's flock, and B would wait on it.
	l, _ := s3Ledger(t)
	cfg := l.config(t, "")
	px := newProxy(t, b.srv, 47)
	ready, stopped := make(chan struct{}), make(chan struct{})
	var a *proc
	var once sync.Once
	commit := isRequest(http.MethodPut, lifecycle.CommitKey(tb.name))
	px.setHook(func(_ int64, r *http.Request) (hookAction, func()) {
		if !commit(r) {
			return hookPass, nil
		}
		return hookPass, func() {
			once.Do(func() {
				px.freeze()
				<-ready
				require.True(t, a.signal(syscall.SIGSTOP))
				close(stopped)
			})
		}
	})
	a = startReaper(t, append(purgeArgs(leaseTTL, defaultSkew, "--config", cfg), b.rootArgs(px.URL())...), nil, nil)
	close(ready)
	select {
	case <-stopped:
	case <-a.done:
		t.Fatalf("A ended before its commit:\n%s", a.wait(t))
	}
	require.True(t, threadsStopped(t, a.pid()))
	px.settle(t)
	px.setHook(nil)
	journal := l.journal(t)
	require.Len(t, journal, 2, "A's journal: its lease and its intent: %v", journal)

	rb := reaper(t, append(purgeArgs(leaseTTL, defaultSkew, "--config", cfg), b.rootArgs("")...)...)
	require.Equal(t, 0, rb.code, "B:\n%s", rb)
	require.Contains(t, report(t, rb).outcomes()[tb.name], "locked", "B:\n%s", rb)
	require.Equal(t, journal, l.journal(t), "B left A's journal alone")

	px.thaw()
	a.signal(syscall.SIGCONT)
	ra := a.wait(t)
	require.Equal(t, 0, ra.code, "A:\n%s", ra)
	require.Equal(t, "purged", report(t, ra).outcomes()[tb.name])
	row := l.row(t, passID(t, ra), tb.name)
	require.Equal(t, string(outcome.Purged), row.Action, "%s", row)
	require.Nil(t, row.RecoveredBy, "A's own row: %s", row)
	require.False(t, row.Pending, "%s", row)
	require.Empty(t, l.journal(t))
}
