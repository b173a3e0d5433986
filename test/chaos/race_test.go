package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// TestRaces runs drop, revive and purge processes on the same tables at
// once, plus a raw writer that adds a manifest to a dropped table the way
// LanceDB's revive-by-overwrite does (ignoring reaper's lease). A round has
// two phases:
//
//   - A: drop and revive processes race each other and the raw writer;
//   - B: purge processes race drop and revive processes (the raw writer is
//     quiet: a write after a purge's identity fence is outside the
//     protocol, see docs/FORMAT.md).
//
// After each phase every table is fully present (with or without its
// marker) or fully gone — never partly deleted. A table the raw writer
// wrote into a later second than its marker must survive phase B (the fence
// stops the purge): the documented limit is a write in the same second.
func TestRaces(t *testing.T) {
	t.Parallel()
	base := baseSeed(t)
	rounds := knob(t, "REAPER_TEST_CHAOS_ROUNDS", 4, 60)
	for _, be := range []struct {
		name   string
		rounds int
		open   func(t *testing.T) *backend
	}{
		{"local", rounds, func(t *testing.T) *backend { return localBackend(t) }},
		{"s3", max(1, rounds/2), func(t *testing.T) *backend { return s3Backend(t, "db") }},
	} {
		t.Run(be.name, func(t *testing.T) {
			for i := range be.rounds {
				seed := base + uint64(i)
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					raceRound(t, be.open(t), seed)
				})
			}
		})
	}
}

// raceTables is how many tables a race round has.
const raceTables = 8

func raceRound(t *testing.T, b *backend, seed uint64) {
	rng := newRand(seed)
	f := newFixture(rng, mix{kindLive: raceTables}, [2]int{5, 25})
	for _, tb := range f.tables {
		if rng.IntN(2) == 0 {
			tb.marker = markerAt(time.Now(), time.Millisecond)
		}
	}
	f.writeRace(t, b)
	names := make([]string, len(f.tables))
	for i, tb := range f.tables {
		names[i] = tb.name
	}
	root := b.rootArgs("")

	// Phase A: drops and revives race a raw writer.
	ctx, stopWriter := context.WithCancel(context.Background())
	w := &rawWriter{b: b, f: f, targets: pick(rng, names, raceTables/2), written: map[string]time.Time{}}
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); w.run(ctx) }()
	runAll(t, []procSpec{
		{"drop", append(append([]string{"drop", "--ttl", "1ms"}, root...), pick(rng, names, raceTables)...)},
		{"drop", append(append([]string{"drop", "--ttl", "1ms"}, root...), pick(rng, names, raceTables)...)},
		{"revive", append(append([]string{"revive"}, root...), pick(rng, names, raceTables/2)...)},
		{"revive", append(append([]string{"revive"}, root...), pick(rng, names, raceTables/2)...)},
	})
	stopWriter()
	<-writerDone
	require.NoError(t, w.err)
	snapA := take(t, b)
	checkRace(t, f, snapA, fmt.Sprintf("seed %d, phase A", seed), true)

	// Which raw-written tables must the fence protect in phase B?
	protect := map[string]bool{}
	for name, wrote := range w.written {
		mk, err := b.raw.Head(context.Background(), lifecycle.MarkerKey(name))
		if err == nil && wrote.Truncate(time.Second).After(mk.LastModified.Truncate(time.Second)) {
			protect[name] = true
		}
	}
	// Phase B: purges race drops and revives, which leave the raw-written
	// tables alone so the fence's verdict on them is the only one.
	var others []string
	for _, n := range names {
		if _, wrote := w.written[n]; !wrote {
			others = append(others, n)
		}
	}
	purge := append(purgeArgs(30*time.Second, defaultSkew), root...)
	runAll(t, []procSpec{
		{"purge", purge},
		{"purge", purge},
		{"drop", append(append([]string{"drop", "--ttl", "1ms"}, root...), pick(rng, others, len(others))...)},
		{"revive", append(append([]string{"revive"}, root...), pick(rng, others, len(others)/2)...)},
	})
	snapB := take(t, b)
	where := fmt.Sprintf("seed %d, phase B", seed)
	checkRace(t, f, snapB, where, false)
	for name := range protect {
		s := stateOf(f.byName[name], snapB)
		require.True(t, s.intact() && s.marker != markerAbsent,
			"%s: the raw writer wrote into %s a second after its drop; the fence must keep it: %s", where, name, s)
	}
	t.Logf("seed %d: %d raw writes, %d protected by the fence; after B: %s", seed, len(w.written), len(protect), summarize(f, snapB))
}

// writeRace stores a race fixture: the sentinels outside the root, data,
// then the chosen markers.
func (f *fixture) writeRace(t *testing.T, b *backend) {
	f.writeOutside(t, b)
	data := map[string][]byte{}
	markers := map[string][]byte{}
	for k, v := range f.bystander {
		data[k] = v
	}
	for _, tb := range f.tables {
		for k, v := range tb.files {
			data[k] = v
		}
		if tb.marker != nil {
			markers[lifecycle.MarkerKey(tb.name)] = tb.marker
		}
	}
	b.putAll(t, data)
	b.putAll(t, markers)
}

// checkRace asserts the race invariant: every table fully present or fully
// gone, no byte changed, nothing unknown written into a table, nothing
// outside the root touched, and a purge commit only beside the marker it
// names (a purge that committed finishes before it releases the lease: no
// run here is killed). In phase A nothing purges, so nothing may be gone.
func checkRace(t testing.TB, f *fixture, snap snapshot, where string, noPurge bool) {
	t.Helper()
	for k, body := range f.bystander {
		require.Equal(t, sum(body), snap[k], "%s: bystander %s", where, k)
	}
	for k, v := range f.fixed {
		require.Equal(t, v, snap[k], "%s: %s outside the root changed or deleted", where, k)
	}
	for _, tb := range f.tables {
		s := stateOf(tb, snap)
		require.Contains(t, []commitState{commitAbsent, commitMatches}, s.commit, "%s: a purge commit beside no marker it names: %s", where, s)
		require.False(t, s.marker == markerAbsent && !s.fullyGone() && !s.intact(), "%s: PARTLY DELETED WITHOUT ITS MARKER: %s", where, s)
		require.Empty(t, s.changed, "%s: bytes changed: %s", where, s)
		require.Empty(t, s.extra, "%s: unknown objects: %s", where, s)
		require.False(t, s.partial(), "%s: PARTLY DELETED: %s; missing %v", where, s, s.missing)
		if noPurge {
			require.True(t, s.intact(), "%s: data lost without a purge: %s", where, s)
		}
	}
}

func summarize(f *fixture, snap snapshot) string {
	counts := map[string]int{}
	for _, tb := range f.tables {
		s := stateOf(tb, snap)
		switch {
		case s.fullyGone() && s.marker == markerAbsent:
			counts["gone"]++
		case s.gone():
			counts["orphan marker"]++
		case s.marker == markerAbsent:
			counts["live"]++
		default:
			counts["soft-deleted"]++
		}
	}
	return fmt.Sprint(counts)
}

// pick returns up to n of names in a random order (seeded).
func pick(rng *rand.Rand, names []string, n int) []string {
	out := append([]string(nil), names...)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:min(n, len(out))]
}

// procSpec is one reaper process of a phase.
type procSpec struct {
	role string
	args []string
}

// runAll starts the processes together and waits for all. Each may fail
// for its own reasons (a drop of a dropped table, a revive that lost the
// lease race: exit 1); a usage error (exit 2) or a crash is a test bug.
func runAll(t *testing.T, procs []procSpec) []result {
	out := make([]result, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = reaper(t, p.args...)
		}()
	}
	wg.Wait()
	for i, r := range out {
		require.Contains(t, []int{0, 1}, r.code, "%s process:\n%s", procs[i].role, r)
		if procs[i].role == "purge" {
			rep := report(t, r)
			for _, e := range rep.Failed {
				// Racing a revive, a purge may find the marker gone under
				// its lease; that is reported as a conflict (skipped),
				// never as a failure.
				require.Failf(t, "purge failed a table while racing", "%s: %s\n%s", e.Name, e.Error, r)
			}
		}
	}
	return out
}

// rawWriter writes one new manifest into each target table once it sees
// the table's marker, in a later second than the marker (as LanceDB's
// revive-by-overwrite would, ignoring reaper's lease).
type rawWriter struct {
	b       *backend
	f       *fixture
	targets []string
	mu      sync.Mutex
	written map[string]time.Time // table -> LastModified of the new manifest
	err     error
}

func (w *rawWriter) run(ctx context.Context) {
	pending := append([]string(nil), w.targets...)
	for len(pending) > 0 && ctx.Err() == nil {
		var left []string
		for _, name := range pending {
			mk, err := w.b.raw.Head(context.Background(), lifecycle.MarkerKey(name))
			if err != nil {
				left = append(left, name)
				continue
			}
			// The fence's resolution is a second: write in the next one.
			time.Sleep(time.Until(mk.LastModified.Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
			key := lifecycle.TableDir(name) + fmt.Sprintf("_versions/%d.manifest", 1000+len(w.written))
			body := []byte("revive-by-overwrite " + name)
			if _, err := w.b.raw.Put(context.Background(), key, body); err != nil {
				w.err = err
				return
			}
			o, err := w.b.raw.Head(context.Background(), key)
			if err != nil {
				w.err = err
				return
			}
			w.mu.Lock()
			w.f.byName[name].files[key] = body
			w.written[name] = o.LastModified
			w.mu.Unlock()
		}
		pending = left
		if len(pending) > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond): // poll interval
			}
		}
	}
}
