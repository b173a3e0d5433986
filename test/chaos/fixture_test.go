package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// backend is one database root on a real store, with a direct store (no
// retries, no proxy) that the test uses for setup and checks.
type backend struct {
	name string
	uri  string
	// opts are the storage options that reach the real server directly.
	opts map[string]string
	raw  objstore.Store
	// dir is the local root directory ("" on S3).
	dir string
	// srv is the S3 test server (nil for local).
	srv *objstoretest.S3Server
}

func localBackend(t testing.TB) *backend {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return openBackend(t, "local", dir, nil, dir, nil)
}

// s3Backend is a root under prefix in a fresh bucket of the shared server.
func s3Backend(t testing.TB, prefix string) *backend {
	t.Helper()
	srv := objstoretest.S3(t)
	return openBackend(t, "s3", srv.URI(prefix), srv.Options(), "", &srv)
}

func openBackend(t testing.TB, name, uri string, opts map[string]string, dir string, srv *objstoretest.S3Server) *backend {
	t.Helper()
	raw, err := all.Open(context.Background(), uri, opts)
	require.NoError(t, err)
	return &backend{name: name, uri: uri, opts: opts, raw: raw, dir: dir, srv: srv}
}

// rootArgs are --root and --storage-option for the CLI; endpoint, when not
// empty, replaces aws_endpoint (the fault proxy).
func (b *backend) rootArgs(endpoint string) []string {
	args := []string{"--root", b.uri}
	for _, k := range sortedKeys(b.opts) {
		v := b.opts[k]
		if k == "aws_endpoint" && endpoint != "" {
			v = endpoint
		}
		args = append(args, "--storage-option", k+"="+v)
	}
	return args
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// kind is what a table is at the start of a suite, and so what a purge may
// do to it.
type kind string

const (
	kindDue     kind = "due"     // valid marker, TTL passed: purge deletes it
	kindNotDue  kind = "not_due" // valid marker, TTL not passed
	kindLive    kind = "live"    // no marker
	kindOrphan  kind = "orphan"  // due marker, no data: purge removes the marker
	kindInvalid kind = "invalid" // marker that does not parse: never purged
	kindHeld    kind = "held"    // due marker under a legal hold
	kindFenced  kind = "fenced"  // due marker, but a file written after the drop
)

// purgeable kinds are the ones a pass may delete.
func (k kind) purgeable() bool { return k == kindDue || k == kindOrphan }

// table is one table of a fixture with the bytes of every object.
type table struct {
	name string
	kind kind
	// files maps keys relative to the root (under <name>.lance/) to bodies.
	files  map[string][]byte
	marker []byte // nil: no marker
	hold   []byte // nil: no hold
}

// fixture is a seeded root: tables plus bystander objects that are no table.
type fixture struct {
	tables    []*table
	byName    map[string]*table
	bystander map[string][]byte
}

// mix says how many tables of each kind a fixture gets.
type mix map[kind]int

// newFixture draws table names and contents from rng. Names include dots
// and suffix look-alikes (a live table "x.deleted" next to a due "x").
func newFixture(rng *rand.Rand, m mix, filesPerTable [2]int) *fixture {
	f := &fixture{byName: map[string]*table{}, bystander: map[string][]byte{
		"__manifest/data/0.lance": randBytes(rng, 64),
		"notes.txt":               randBytes(rng, 32),
		"backup.lance.old/x":      randBytes(rng, 16),
		"_reaper/README":          randBytes(rng, 8),
	}}
	i := 0
	for _, k := range []kind{kindDue, kindNotDue, kindLive, kindOrphan, kindInvalid, kindHeld, kindFenced} {
		for range m[k] {
			name := fmt.Sprintf("t%02d_%s", i, k)
			switch i % 5 {
			case 1:
				name += ".v2" // a dot in the name
			case 3:
				name = fmt.Sprintf("t%02d.deleted", i) // looks like a marker
			}
			i++
			t := &table{name: name, kind: k, files: map[string][]byte{}}
			if k != kindOrphan {
				n := filesPerTable[0] + rng.IntN(filesPerTable[1]-filesPerTable[0]+1)
				for rel, body := range lanceFiles(rng, n) {
					t.files[lifecycle.TableDir(name)+rel] = body
				}
			}
			f.tables = append(f.tables, t)
			f.byName[name] = t
		}
	}
	return f
}

// rename gives a table another name, moving its files.
func (f *fixture) rename(tb *table, name string) {
	files := map[string][]byte{}
	for k, v := range tb.files {
		files[lifecycle.TableDir(name)+strings.TrimPrefix(k, lifecycle.TableDir(tb.name))] = v
	}
	delete(f.byName, tb.name)
	tb.name, tb.files = name, files
	f.byName[name] = tb
}

// lanceFiles is a Lance-like table layout of about n objects: manifests,
// transactions, data, deletions, an index and a branch.
func lanceFiles(rng *rand.Rand, n int) map[string][]byte {
	out := map[string][]byte{}
	versions := max(1, n/5)
	for v := 1; v <= versions; v++ {
		out[fmt.Sprintf("_versions/%d.manifest", v)] = randBytes(rng, 64+rng.IntN(256))
		out[fmt.Sprintf("_transactions/%d-%s.txn", v-1, randHex(rng, 8))] = randBytes(rng, 32+rng.IntN(64))
	}
	out["_versions/latest_version_hint.json"] = fmt.Appendf(nil, `{"version":%d}`, versions)
	out["_indices/"+randHex(rng, 8)+"/index.idx"] = randBytes(rng, 128)
	out["tree/dev/_versions/1.manifest"] = randBytes(rng, 64)
	out["_deletions/0-1-"+randHex(rng, 4)+".arrow"] = randBytes(rng, 48)
	for len(out) < n {
		out["data/"+randHex(rng, 16)+".lance"] = randBytes(rng, 16+rng.IntN(2048))
	}
	return out
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

func randHex(rng *rand.Rand, n int) string { return hex.EncodeToString(randBytes(rng, n))[:n] }

// markerAt is a marker dropped at `at` with ttl, in Lance's compact form.
func markerAt(at time.Time, ttl time.Duration) []byte {
	return lifecycle.EncodeMarker(at, ttl)
}

// write stores the fixture: data first, then markers and holds, so every
// data object is older than its marker (the identity fence passes), except
// for fenced tables, which get one more manifest a second after the drop.
// Due markers have a 1ms TTL (purges need --allow-short-ttl); not-due
// markers a 1h TTL.
func (f *fixture) write(t testing.TB, b *backend) {
	t.Helper()
	data := map[string][]byte{}
	maps := []map[string][]byte{f.bystander}
	for _, tb := range f.tables {
		maps = append(maps, tb.files)
	}
	for _, m := range maps {
		for k, v := range m {
			data[k] = v
		}
	}
	b.putAll(t, data)
	now := time.Now()
	markers := map[string][]byte{}
	for _, tb := range f.tables {
		switch tb.kind {
		case kindDue, kindOrphan, kindHeld, kindFenced:
			tb.marker = markerAt(now, time.Millisecond)
		case kindNotDue:
			tb.marker = markerAt(now, time.Hour)
		case kindInvalid:
			tb.marker = []byte(`{"deleted_at_ms":"yesterday","ttl_ms":1}`)
		}
		if tb.kind == kindHeld {
			tb.hold = []byte(`{"reason":"chaos suite","held_by":"test","held_at_ms":1}`)
			markers[lifecycle.HoldKey(tb.name)] = tb.hold
		}
		if tb.marker != nil {
			markers[lifecycle.MarkerKey(tb.name)] = tb.marker
		}
	}
	b.putAll(t, markers)
	var fenced []*table
	var fencedMarkers []string
	for _, tb := range f.tables {
		if tb.kind == kindFenced {
			fenced = append(fenced, tb)
			fencedMarkers = append(fencedMarkers, lifecycle.MarkerKey(tb.name))
		}
	}
	if len(fenced) > 0 {
		// The fence compares whole seconds: write in a later second than
		// the markers, as a writer reviving the table would.
		waitNextSecond(t, b, fencedMarkers...)
		late := map[string][]byte{}
		for _, tb := range fenced {
			k := lifecycle.TableDir(tb.name) + "_versions/999.manifest"
			tb.files[k] = []byte("written after the drop by a reviving writer")
			late[k] = tb.files[k]
		}
		b.putAll(t, late)
	}
}

// waitNextSecond waits until the wall clock is in a later whole second than
// the store's LastModified of every key: the fence's resolution. It waits
// for a known instant; nothing is synchronized by it.
func waitNextSecond(t testing.TB, b *backend, keys ...string) {
	t.Helper()
	var latest time.Time
	for _, k := range keys {
		o, err := b.raw.Head(context.Background(), k)
		require.NoError(t, err)
		if o.LastModified.After(latest) {
			latest = o.LastModified
		}
	}
	time.Sleep(time.Until(latest.Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
}

// putAll writes objects with bounded concurrency: through the S3 client,
// or straight into the directory (no fsync: setup need not survive a crash,
// and hundreds of crash roots stay cheap).
func (b *backend) putAll(t testing.TB, objs map[string][]byte) {
	t.Helper()
	if b.dir != "" {
		for k, v := range objs {
			p := filepath.Join(b.dir, filepath.FromSlash(k))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, v, 0o644))
		}
		return
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make(chan error, len(objs))
	for k, v := range objs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := b.raw.Put(ctx, k, v); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// snapshot is every object of a root: key -> sha256 of its bytes.
type snapshot map[string]string

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// take reads every object of the root (listing, then a GET of each) and
// checksums it.
func take(t testing.TB, b *backend) snapshot {
	t.Helper()
	ctx := context.Background()
	var keys []string
	err := b.raw.Walk(ctx, "", func(objs []objstore.Object) error {
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		return nil
	})
	require.NoError(t, err)
	snap := make(snapshot, len(keys))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	var firstErr error
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body, _, err := b.raw.Get(ctx, k)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, objstore.ErrNotFound):
				// deleted between listing and read (a lease released)
			case err != nil:
				if firstErr == nil {
					firstErr = fmt.Errorf("get %s: %w", k, err)
				}
			default:
				snap[k] = sum(body)
			}
		}()
	}
	wg.Wait()
	require.NoError(t, firstErr)
	return snap
}

// expected is what the fixture wrote, as a snapshot.
func (f *fixture) expected() snapshot {
	s := snapshot{}
	for k, v := range f.bystander {
		s[k] = sum(v)
	}
	for _, tb := range f.tables {
		for k, v := range tb.files {
			s[k] = sum(v)
		}
		if tb.marker != nil {
			s[lifecycle.MarkerKey(tb.name)] = sum(tb.marker)
		}
		if tb.hold != nil {
			s[lifecycle.HoldKey(tb.name)] = sum(tb.hold)
		}
	}
	return s
}

// strayTemps lists temp files a killed local writer left behind (the local
// store hides them from listings).
func strayTemps(t testing.TB, b *backend) []string {
	t.Helper()
	if b.dir == "" {
		return nil
	}
	var out []string
	err := filepath.WalkDir(b.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".reaper-tmp-") {
			rel, _ := filepath.Rel(b.dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	return out
}
