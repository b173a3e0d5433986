package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/worker"
)

const day = 24 * time.Hour

// purgeFixture is a local root with one table of every purge outcome.
type purgeFixture struct {
	b   backend
	now time.Time
	// sizes of the tables expected to be purged
	sizes map[string][2]int64
}

func newPurgeFixture(t *testing.T) purgeFixture {
	b := localBackend(t)
	// Everything is written now (t0) by the store's clock; the pass runs at
	// now = t0 + 10 days (the store's clock moved forward, see setClock).
	// A marker is due once deleted_at + ttl and its LastModified (t0) + ttl
	// have passed.
	t0 := time.UnixMilli(time.Now().UnixMilli())
	now := t0.Add(10 * day)
	f := purgeFixture{b: b, now: now, sizes: map[string][2]int64{}}
	drop := func(name string, ago, ttl time.Duration, filesAt time.Time) {
		objs, size := b.writeTable(t, name, filesAt)
		f.sizes[name] = [2]int64{objs, size}
		b.writeMarker(t, name, lifecycle.EncodeMarker(now.Add(-ago), ttl), t0)
	}
	drop("due", 10*day, 7*day, t0.Add(-time.Hour))         // due 3 days before the pass
	drop("older.v2", 10*day, 5*day, t0.Add(-time.Hour))    // due 5 days before
	drop("notdue", day, 7*day, t0.Add(-time.Hour))         // due 6 days after
	drop("conflict", 10*day, 7*day, now.Add(-time.Minute)) // written after its drop: a reviving writer
	b.writeTable(t, "garbage", t0.Add(-time.Hour))
	b.writeMarker(t, "garbage", []byte("garbage"), t0)
	b.writeTable(t, "negative", t0.Add(-time.Hour))
	b.writeMarker(t, "negative", []byte(`{"deleted_at_ms":-5,"ttl_ms":1}`), t0)
	b.writeMarker(t, "orphan", lifecycle.EncodeMarker(now.Add(-20*day), 3*day), t0) // due 7 days before
	b.writeTable(t, "live", t0.Add(-time.Hour))
	return f
}

func (f purgeFixture) opts(dryRun bool, names ...string) purgeOptions {
	o := purgeOptions{storeOptions: f.b.opts, DryRun: dryRun, Output: "json", Names: names}
	o.setClock(f.b.clock, f.now)
	return o
}

// decodeReport checks the JSON shape (all three keys, arrays, never null)
// and decodes it.
func decodeReport(t *testing.T, raw []byte) (purgeReport, map[string]json.RawMessage) {
	t.Helper()
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &top), "output: %s", raw)
	for _, k := range []string{"purged", "skipped", "failed"} {
		require.Contains(t, top, k)
		require.True(t, bytes.HasPrefix(top[k], []byte("[")), "%s must be an array, got %s", k, top[k])
	}
	var rep purgeReport
	require.NoError(t, json.Unmarshal(raw, &rep))
	return rep, top
}

func TestPurgeJSON(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		dryRun bool
	}{
		{"dry run", true},
		{"purge", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPurgeFixture(t)
			keysBefore := f.b.keys(t)
			var out bytes.Buffer
			err := runPurge(ctx, f.opts(tc.dryRun), &out)
			require.Equal(t, exitFailed, exitCode(err), "invalid markers fail the pass; got %v", err)
			rep, top := decodeReport(t, out.Bytes())

			if tc.dryRun {
				require.JSONEq(t, "true", string(top["dry_run"]))
				require.Equal(t, keysBefore, f.b.keys(t), "a dry run deletes nothing")
			} else {
				require.NotContains(t, top, "dry_run")
			}
			// Oldest purge_after first: orphan (7d ago), older.v2 (5d), due (3d).
			require.Equal(t, []purgedJSON{
				{Name: "orphan", Objects: 0, Bytes: 0},
				{Name: "older.v2", Objects: f.sizes["older.v2"][0], Bytes: f.sizes["older.v2"][1]},
				{Name: "due", Objects: f.sizes["due"][0], Bytes: f.sizes["due"][1]},
			}, rep.Purged)

			require.Len(t, rep.Skipped, 2, "%+v", rep.Skipped)
			require.Equal(t, "conflict", rep.Skipped[0].Name)
			require.True(t, strings.HasPrefix(rep.Skipped[0].Reason, "conflict"), rep.Skipped[0].Reason)
			require.Equal(t, "notdue", rep.Skipped[1].Name)
			require.Equal(t, "not due until "+f.now.Add(6*day).UTC().Format(time.RFC3339), rep.Skipped[1].Reason)
			// action and code are the ledger's and the metrics' words.
			require.Equal(t, []outcome.Action{outcome.Conflict, outcome.Skipped}, []outcome.Action{rep.Skipped[0].Action, rep.Skipped[1].Action})
			require.Equal(t, []outcome.Reason{outcome.ReasonConflict, outcome.ReasonNotDue}, []outcome.Reason{rep.Skipped[0].Code, rep.Skipped[1].Code})

			require.Len(t, rep.Failed, 2, "%+v", rep.Failed)
			require.Equal(t, "garbage", rep.Failed[0].Name)
			require.Contains(t, rep.Failed[0].Error, "invalid marker")
			require.Equal(t, "negative", rep.Failed[1].Name)
			require.Contains(t, rep.Failed[1].Error, "negative")
			require.Equal(t, outcome.ReasonInvalidMarker, rep.Failed[0].Code)

			left := f.b.keys(t)
			for _, name := range []string{"notdue", "conflict", "garbage", "negative", "live"} {
				require.NotEmpty(t, f.b.tableKeys(t, name), "%s must keep its data", name)
			}
			for _, name := range []string{"notdue", "conflict", "garbage", "negative"} {
				require.Contains(t, left, name+".deleted")
			}
			if tc.dryRun {
				return
			}
			for _, name := range []string{"due", "older.v2"} {
				require.Empty(t, f.b.tableKeys(t, name), "%s must be purged", name)
				require.NotContains(t, left, name+".deleted")
			}
			require.NotContains(t, left, "orphan.deleted")
		})
	}
}

func TestPurgeNamed(t *testing.T) {
	f := newPurgeFixture(t)
	var out bytes.Buffer
	err := runPurge(context.Background(), f.opts(false, "due", "live", "nope", "notdue"), &out)
	require.Equal(t, exitFailed, exitCode(err), "got %v", err)
	rep, _ := decodeReport(t, out.Bytes())
	require.Equal(t, []string{"due"}, names(rep.Purged, func(p purgedJSON) string { return p.Name }))
	require.Equal(t, []string{"notdue"}, names(rep.Skipped, func(s skippedJSON) string { return s.Name }))
	require.Len(t, rep.Failed, 2)
	require.Equal(t, "live", rep.Failed[0].Name)
	require.Contains(t, rep.Failed[0].Error, "table is live")
	require.Equal(t, "nope", rep.Failed[1].Name)
	require.Contains(t, rep.Failed[1].Error, "not found")
	require.NotEmpty(t, f.b.tableKeys(t, "older.v2"), "unnamed tables are not touched")
}

func names[T any](s []T, name func(T) string) []string {
	out := []string{}
	for _, v := range s {
		out = append(out, name(v))
	}
	return out
}

func TestPurgeEmptyRootJSON(t *testing.T) {
	b := localBackend(t)
	for _, dry := range []bool{false, true} {
		var out bytes.Buffer
		require.NoError(t, runPurge(context.Background(), purgeOptions{storeOptions: b.opts, Output: "json", DryRun: dry}, &out))
		want := `{"purged":[],"skipped":[],"failed":[]}`
		if dry {
			want = `{"purged":[],"skipped":[],"failed":[],"dry_run":true}`
		}
		require.JSONEq(t, want, out.String())
	}
}

func TestPurgeTableOutput(t *testing.T) {
	f := newPurgeFixture(t)
	var out bytes.Buffer
	o := f.opts(false)
	o.Output = "table"
	err := runPurge(context.Background(), o, &out)
	require.Equal(t, exitFailed, exitCode(err))
	s := out.String()
	for _, want := range []string{"PURGED: 3", "SKIPPED: 2", "FAILED: 2", "not due until", "KiB"} {
		require.Contains(t, s, want)
	}
	objs := f.sizes["due"][0] + f.sizes["older.v2"][0]
	size := f.sizes["due"][1] + f.sizes["older.v2"][1]
	require.Contains(t, s, fmt.Sprintf("reclaimed %d objects, %s from 3 tables; 2 skipped, 2 failed\n", objs, humanBytes(size)))
}

// TestPurgeAfterDrop drops through the CLI and purges with a clock 8 days
// later, on every backend (S3 cannot back-date objects).
func TestPurgeAfterDrop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		t0 := time.UnixMilli(time.Now().UnixMilli())
		objs, size := b.writeTable(t, "events.2024", t0.Add(-time.Hour))
		b.writeTable(t, "keep", t0.Add(-time.Hour))
		b.writeTable(t, "live", t0.Add(-time.Hour))
		b.writeTable(t, "bad", t0.Add(-time.Hour))
		b.writeMarker(t, "bad", []byte(`{"deleted_at_ms":"yesterday"}`), t0)
		o := b.opts
		o.setClock(b.clock, t0)
		var out bytes.Buffer
		require.NoError(t, runDrop(ctx, dropOptions{storeOptions: o, Names: []string{"events.2024"}}, &out))
		require.NoError(t, runDrop(ctx, dropOptions{storeOptions: o, TTL: 30 * day, Names: []string{"keep"}}, &out))

		// keep is due 30 days after the later of its deleted_at and its
		// marker's LastModified by the store's clock (a second later on S3
		// when the drop's request lands in the next second).
		m, err := b.clock.Wrap(b.store(t)).Head(ctx, "keep.deleted")
		require.NoError(t, err)
		keepDue := t0
		if m.LastModified.After(keepDue) {
			keepDue = m.LastModified
		}
		later := o
		later.setClock(b.clock, t0.Add(8*day))
		for _, dry := range []bool{true, false} {
			out.Reset()
			err := runPurge(ctx, purgeOptions{storeOptions: later, DryRun: dry, Output: "json"}, &out)
			require.Equal(t, exitFailed, exitCode(err), "got %v", err)
			rep, _ := decodeReport(t, out.Bytes())
			require.Equal(t, []purgedJSON{{Name: "events.2024", Objects: objs, Bytes: size}}, rep.Purged, "dry run %t", dry)
			require.Equal(t, []skippedJSON{{Name: "keep", Action: outcome.Skipped, Code: outcome.ReasonNotDue, Reason: "not due until " + keepDue.Add(30*day).UTC().Format(time.RFC3339)}}, rep.Skipped)
			require.Len(t, rep.Failed, 1)
			require.Equal(t, "bad", rep.Failed[0].Name)
			require.Equal(t, dry, len(b.tableKeys(t, "events.2024")) > 0, "dry run %t", dry)
		}
		require.False(t, b.hasKey(t, "events.2024.deleted"))
		require.NotEmpty(t, b.tableKeys(t, "keep"))
		require.NotEmpty(t, b.tableKeys(t, "live"))

		out.Reset()
		require.NoError(t, runStatus(ctx, statusOptions{storeOptions: later, Output: "json"}, &out))
		var st []statusJSON
		require.NoError(t, json.Unmarshal(out.Bytes(), &st))
		got := map[string]string{}
		for _, s := range st {
			got[s.Name] = s.State
		}
		require.Equal(t, map[string]string{"keep": "soft_deleted", "live": "exists", "bad": "invalid_marker"}, got)
	})
}

// TestPurgeSkipsLocked holds a table's lease as another process would: the
// pass skips it as locked and status names the holder.
func TestPurgeSkipsLocked(t *testing.T) {
	f := newPurgeFixture(t)
	ctx := context.Background()
	ls, err := local.Open(f.b.opts.Root)
	require.NoError(t, err)
	f.b.clock.AdvanceTo(f.now) // the lease is taken when the pass runs
	store := f.b.clock.Wrap(ls)
	lease, err := (&lock.Locker{Store: store, Owner: "other-host/42", TTL: time.Minute, Logger: slog.New(slog.DiscardHandler)}).
		Acquire(ctx, "due.reaper-lock")
	require.NoError(t, err)
	t.Cleanup(func() { _ = lease.Release(context.Background()) })

	var out bytes.Buffer
	_ = runPurge(ctx, f.opts(true, "due"), &out)
	rep, _ := decodeReport(t, out.Bytes())
	require.Empty(t, rep.Purged)
	require.Len(t, rep.Skipped, 1)
	require.True(t, strings.HasPrefix(rep.Skipped[0].Reason, "locked: lease held by other-host/42"), rep.Skipped[0].Reason)

	out.Reset()
	so := statusOptions{storeOptions: f.b.opts, Names: []string{"due"}}
	so.setClock(f.b.clock, f.now)
	require.NoError(t, runStatus(ctx, so, &out))
	require.Contains(t, out.String(), "purging")
	require.Contains(t, out.String(), "lease held by other-host/42; if that process is gone, it can be taken over from "+
		formatTime(f.now.Add(time.Minute+time.Second+lifecycle.DefaultSkewAllowance)))
}

// A lease that can never be taken over (a TTL of centuries, written by
// hand, its expires_at_ms 0) read as "held until 1970": the holder's own
// estimate. Status and the pass now say when the store's clock lets it be
// taken over, or that it never will.
func TestLeaseNeverTakenOver(t *testing.T) {
	f := newPurgeFixture(t)
	ctx := context.Background()
	ls, err := local.Open(f.b.opts.Root)
	require.NoError(t, err)
	body := `{"version":2,"owner":"forever/1","token":"00000000000000000000000000000000","generation":1,"ttl_ms":9223372036854775807,"acquired_at_ms":0,"renewed_at_ms":0,"expires_at_ms":0,"nonce":"00"}`
	_, err = f.b.clock.Wrap(ls).Put(ctx, "due.reaper-lock", []byte(body))
	require.NoError(t, err)

	var out bytes.Buffer
	so := statusOptions{storeOptions: f.b.opts, Names: []string{"due"}}
	so.setClock(f.b.clock, f.now)
	require.NoError(t, runStatus(ctx, so, &out))
	require.Contains(t, out.String(), "lease held by forever/1, never taken over")
	require.NotContains(t, out.String(), "1970")

	out.Reset()
	_ = runPurge(ctx, f.opts(true, "due"), &out)
	rep, _ := decodeReport(t, out.Bytes())
	require.Len(t, rep.Skipped, 1)
	require.Contains(t, rep.Skipped[0].Reason, "never taken over")
	require.NotContains(t, rep.Skipped[0].Reason, "1970")
}

// TestPurgeDrains: after the first interrupt no new table is started.
func TestPurgeDrains(t *testing.T) {
	f := newPurgeFixture(t)
	before := f.b.keys(t)
	drain := make(chan struct{})
	close(drain)
	ctx := withDrain(context.Background(), drain)
	var out bytes.Buffer
	err := runPurge(ctx, f.opts(false), &out)
	require.ErrorContains(t, err, "purge interrupted")
	require.ErrorContains(t, err, "run purge again to finish")
	require.Equal(t, exitFailed, exitCode(err))
	require.Equal(t, before, f.b.keys(t))
}

// notStarted counts the tables shutdown kept from starting, by their
// reason: neither a pass limit nor a purge cut short in flight.
func TestNotStarted(t *testing.T) {
	cases := []struct {
		name string
		d    worker.Decision
		want int
	}{
		{"shutdown before start", worker.Decision{Action: outcome.Skipped, Reason: outcome.ReasonShutdown}, 1},
		{"shutdown in flight", worker.Decision{Action: outcome.Skipped, Reason: outcome.ReasonShutdown, Lease: lifecycle.LeaseAcquired}, 0},
		{"pass limit", worker.Decision{Action: outcome.Skipped, Reason: outcome.ReasonLimit, Detail: "shutdown-looking detail"}, 0},
		{"deadline", worker.Decision{Action: outcome.Skipped, Reason: outcome.ReasonDeadline}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := &worker.Report{Roots: []*worker.RootReport{{Decisions: []worker.Decision{tc.d}}}}
			require.Equal(t, tc.want, notStarted(rep))
		})
	}
}

// A pass that refused a root (blast radius, pause) or could not discover
// every root is not a success: before, each exited 0 with result=success
// (or partial) and a CronJob looked healthy. Refusals exit 3 with result
// refused; a root or discovery error exits 1; 0 is kept for "nothing
// failed, nothing refused".
func TestPurgeExitCodesOfRefusals(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(t *testing.T, b backend, o *purgeOptions)
		code   int
		result string
	}{
		{"clean", func(*testing.T, backend, *purgeOptions) {}, exitOK, "success"},
		{"paused root", func(t *testing.T, b backend, _ *purgeOptions) {
			b.put(t, "_reaper/PAUSE", nil, time.Now())
		}, exitRefused, "refused"},
		{"blast radius", func(_ *testing.T, _ backend, o *purgeOptions) {
			o.Sets = append(o.Sets, "safety.blast_radius_max_tables=1")
		}, exitRefused, "refused"},
		{"missing discovery parent", func(t *testing.T, b backend, o *purgeOptions) {
			cfg := filepath.Join(t.TempDir(), "reaper.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte("roots:\n  - uri: "+b.opts.Root+"\ndiscover:\n  - uri: "+
				filepath.Join(t.TempDir(), "nosuch")+"/*\n"), 0o644))
			o.ConfigPath, o.Root = cfg, ""
		}, exitFailed, "partial"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := localBackend(t)
			t0 := time.UnixMilli(time.Now().UnixMilli())
			now := t0.Add(10 * day)
			for _, n := range []string{"a", "b"} {
				b.writeTable(t, n, t0.Add(-time.Hour))
				b.writeMarker(t, n, lifecycle.EncodeMarker(now.Add(-10*day), 7*day), t0)
			}
			var logs strings.Builder
			o := purgeOptions{storeOptions: b.opts, Output: "json"}
			o.LogFormat, o.LogLevel, o.Stderr = "json", "info", &logs
			o.setClock(b.clock, now)
			tc.setup(t, b, &o)
			var out strings.Builder
			err := runPurge(context.Background(), o, &out)
			require.Equal(t, tc.code, exitCode(err), "err %v; output %s", err, out.String())
			require.Contains(t, logs.String(), `"result":"`+tc.result+`"`, logs.String())
		})
	}
}

// A dry run deletes nothing, so it counts nothing as deleted: before, a dry
// run that met a conflict (the fixture's "conflict" table, written after its
// drop) added the objects it had walked to reaper_objects_deleted_total and
// reaper_bytes_reclaimed_total, and its ledger row said they were deleted.
func TestDryRunCountsNothingDeleted(t *testing.T) {
	f := newPurgeFixture(t)
	// A table whose last object (in walk order) was written after its
	// drop: the dry run counts the others before it meets the conflict.
	_, _ = f.b.writeTable(t, "late", f.now.Add(-20*day))
	f.b.writeMarker(t, "late", lifecycle.EncodeMarker(f.now.Add(-10*day), 7*day), f.now.Add(-10*day))
	f.b.put(t, "late.lance/zzz-written-after-the-drop", []byte("x"), f.now.Add(-time.Hour))
	o := f.opts(true)
	o.Textfile = filepath.Join(t.TempDir(), "reaper.prom")
	audit := t.TempDir()
	o.Sets = append(o.Sets, "audit.location="+audit)
	var out strings.Builder
	_ = runPurge(context.Background(), o, &out)
	rep, _ := decodeReport(t, []byte(out.String()))
	require.NotEmpty(t, rep.Purged, "the dry run would purge tables: %s", out.String())

	b, err := os.ReadFile(o.Textfile)
	require.NoError(t, err)
	for _, want := range []string{"reaper_objects_deleted_total 0\n", "reaper_bytes_reclaimed_total 0\n"} {
		require.True(t, strings.Contains(string(b), want), "the textfile has no %q", want)
	}

	store, err := local.Open(audit)
	require.NoError(t, err)
	rows, err := ledger.Read(context.Background(), store, time.Time{})
	require.NoError(t, err)
	var sawConflict bool
	for _, r := range rows {
		if r.Action == string(outcome.DryRun) {
			continue // "would be deleted", as docs/FORMAT.md says
		}
		sawConflict = sawConflict || (r.Table == "late" && r.Action == string(outcome.Conflict))
		require.Zero(t, r.Objects, "%s (%s): a dry run deleted no object", r.Table, r.Action)
		require.Zero(t, r.Bytes, "%s (%s): a dry run deleted no byte", r.Table, r.Action)
	}
	require.True(t, sawConflict, "the fixture's conflict table is met: %v", rows)
}

// OTel settings reaper cannot honour are warned about, never fatal: before,
// each of these made purge exit 2 and purge nothing.
func TestPurgeRunsWhateverTheOTelEnvironment(t *testing.T) {
	for _, env := range [][2]string{
		{"OTEL_TRACES_EXPORTER", "zipkin"}, {"OTEL_TRACES_EXPORTER", "OTLP"}, {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
	} {
		t.Run(env[0]+"="+env[1], func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			t.Setenv(env[0], env[1])
			f := newPurgeFixture(t)
			var out strings.Builder
			err := runPurge(context.Background(), f.opts(false, "due"), &out)
			require.Equal(t, exitOK, exitCode(err), "err %v; output %s", err, out.String())
		})
	}
}
