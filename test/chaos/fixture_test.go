package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/faketable"
	"github.com/lance-reaper/reaper/internal/ledger"
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
	// dir is the local root directory ("" on a server).
	dir string
	// srv is the S3 test server (nil elsewhere).
	srv *objstoretest.S3Server
	// endpoint is the store server's base URL ("" for local): the fault
	// proxy's target and where the store's clock is read. via gives the
	// storage options that reach the server through another endpoint (a
	// proxy in front of it).
	endpoint string
	via      func(endpoint string) map[string]string
	// base is the root's last path element ("db"), and parent a store one
	// level up (S3: the enclosing prefix; local roots use parentDir). The
	// sentinels outside the root live there (outside, below).
	base      string
	parent    objstore.Store
	parentDir string
	// outside are the sentinel keys written outside the root, relative to
	// the parent, and outsidePrefixes the folders among them that take()
	// walks whole, so anything added there shows too.
	outside         []string
	outsidePrefixes []string
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
	b := openBackend(t, "s3", srv.URI(prefix), srv.Options(), "", &srv)
	parent := path.Dir(strings.Trim(prefix, "/"))
	if parent == "." {
		parent = ""
	}
	var err error
	b.parent, err = all.Open(context.Background(), srv.URI(parent), srv.Options())
	require.NoError(t, err)
	b.base = path.Base(strings.Trim(prefix, "/"))
	return b
}

// s3ddbBackend is an s3+ddb:// root under prefix: the objects in a fresh
// bucket of the shared S3 server, the commit rows in a fresh table of the
// shared DynamoDB server (dynalite), where the LanceDB client commits
// them. The storage options carry dynamodb_endpoint, the one Lance reads;
// a proxy (via) replaces only the S3 endpoint.
func s3ddbBackend(t testing.TB, prefix string) *backend {
	t.Helper()
	srv := objstoretest.S3(t)
	ddb := objstoretest.DDB(t)
	opts := srv.Options()
	opts["dynamodb_endpoint"] = ddb.Endpoint
	return openBackend(t, "s3+ddb", objstoretest.S3DDBURI(srv, ddb, prefix), opts, "", &srv)
}

func openBackend(t testing.TB, name, uri string, opts map[string]string, dir string, srv *objstoretest.S3Server) *backend {
	t.Helper()
	raw, err := all.Open(context.Background(), uri, opts)
	require.NoError(t, err)
	b := &backend{name: name, uri: uri, opts: opts, raw: raw, dir: dir, srv: srv}
	if dir != "" {
		b.parentDir, b.base = filepath.Dir(dir), filepath.Base(dir)
	}
	if srv != nil {
		b.endpoint = srv.Endpoint
		b.via = func(endpoint string) map[string]string {
			via := maps.Clone(opts)
			via["aws_endpoint"] = endpoint
			return via
		}
	}
	return b
}

// rootArgs are --root and --storage-option for the CLI; endpoint, when not
// empty, replaces the server's endpoint (the fault proxy).
func (b *backend) rootArgs(endpoint string) []string {
	args := []string{"--root", b.uri}
	opts := b.opts
	if endpoint != "" {
		opts = b.via(endpoint)
	}
	for _, k := range sortedKeys(opts) {
		args = append(args, "--storage-option", k+"="+opts[k])
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

// The store's clock. Due-ness and lease takeovers are judged by it, never by
// the host's: on a local disk it is the kernel's clock (time.Now; file
// stamps use a coarse reading of the same clock, never ahead of it), on S3
// the server's Date header. versitygw truncates Date to the second and
// refreshes it once a second, so a reading trails the real time by up to
// about two seconds, and reaper's reading (from its own answers) does too.
// A Date read from a fresh answer is a value every later answer reaches at
// least, so once the test has read a Date at or past an instant, every
// reaper process started afterwards judges by a clock at or past it.

// storeNow reads the store's clock afresh: on a server the Date of an
// unsigned HEAD of the endpoint (any answer is dated).
func (b *backend) storeNow(t testing.TB) time.Time {
	t.Helper()
	if b.endpoint == "" {
		return time.Now()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, b.endpoint+"/", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "read the store's clock")
	resp.Body.Close()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	require.NoError(t, err, "the %s server's answer carries no Date", b.name)
	return date
}

// storeWaitLimit bounds every wait for the store's clock: the longest
// threshold a suite waits for is a lease TTL + 1s + skew (a few seconds).
const storeWaitLimit = 30 * time.Second

// waitStore waits until the store's clock has reached at. It is a wait for
// a known instant of a real clock, bounded; nothing is synchronized by it.
// The store's clock runs at the rate of real time, so it sleeps for the
// distance left (at most 100ms at a time, since S3's Date moves in steps).
func (b *backend) waitStore(t testing.TB, at time.Time, what string) {
	t.Helper()
	deadline := time.Now().Add(storeWaitLimit)
	for {
		now := b.storeNow(t)
		if !now.Before(at) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the store's clock (%s) did not reach %s within %s", what, now.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano), storeWaitLimit)
		}
		time.Sleep(min(max(at.Sub(now), time.Millisecond), 100*time.Millisecond))
	}
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
	// kindLink: a due marker beside a <name>.lance that is no directory:
	// on a local root a symbolic link to the sentinel folder outside the
	// root, on S3 an object. It is not a table: never entered, never
	// purged (failed, not_a_table).
	kindLink kind = "link"
	// kindRevived: was due, then revived (the suite set it so once the
	// revive succeeded): whole, without its marker, never touched again.
	kindRevived kind = "revived"
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
	// legacy: a purge of an older reaper (no purge commit) left it partly
	// deleted; only TestReviveRefusesPartlyPurgedTable stages that.
	legacy bool
}

// fixture is a seeded root: tables plus bystander objects that are no table.
type fixture struct {
	tables    []*table
	byName    map[string]*table
	bystander map[string][]byte
	// fixed are objects whose snapshot value is known once written: the
	// <name>.lance entries of link tables and the sentinels outside the
	// root ("../" + key relative to the parent). Any change is a failure.
	fixed map[string]string
}

// mix says how many tables of each kind a fixture gets.
type mix map[kind]int

// newFixture draws table names and contents from rng. Names include dots
// and suffix look-alikes (a live table "x.deleted" next to a due "x").
func newFixture(rng *rand.Rand, m mix, filesPerTable [2]int) *fixture {
	f := &fixture{byName: map[string]*table{}, fixed: map[string]string{}, bystander: map[string][]byte{
		"__manifest/data/0.lance": faketable.RandBytes(rng, 64),
		"notes.txt":               faketable.RandBytes(rng, 32),
		"backup.lance.old/x":      faketable.RandBytes(rng, 16),
		"_reaper/README":          faketable.RandBytes(rng, 8),
	}}
	i := 0
	for _, k := range []kind{kindDue, kindNotDue, kindLive, kindOrphan, kindInvalid, kindHeld, kindFenced, kindLink} {
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
			if k != kindOrphan && k != kindLink {
				n := filesPerTable[0] + rng.IntN(filesPerTable[1]-filesPerTable[0]+1)
				for rel, body := range faketable.Random(rng, n) {
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

// revived records that tb was revived: whole, no marker, never touched.
func (f *fixture) revived(tb *table) {
	tb.kind, tb.marker = kindRevived, nil
}

// markerAt is a marker dropped at `at` with ttl, in Lance's compact form.
func markerAt(at time.Time, ttl time.Duration) []byte {
	return lifecycle.EncodeMarker(at, ttl)
}

// dueTTL is the TTL of due markers: they are written dated now (the store
// stamps them now too: markers can no longer be back-dated) and become due
// by the store's clock a moment later. Purges need --allow-short-ttl.
const dueTTL = time.Millisecond

// write stores the fixture: data first, then links, markers and holds, so
// every data object is older than its marker (the identity fence passes),
// except for fenced tables, which get one more manifest a second after the
// drop. Due markers have a 1ms TTL; not-due markers a 1h TTL. The sentinels
// outside the root are written too. It returns once every due marker is
// due by the store's clock (on S3 that takes up to about two seconds).
func (f *fixture) write(t testing.TB, b *backend) {
	t.Helper()
	f.writeOutside(t, b)
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
	for _, tb := range f.tables {
		if tb.kind == kindLink {
			f.writeLink(t, b, tb)
		}
	}
	now := time.Now()
	markers := map[string][]byte{}
	var dueKeys []string
	for _, tb := range f.tables {
		switch tb.kind {
		case kindDue, kindOrphan, kindHeld, kindFenced, kindLink:
			tb.marker = markerAt(now, dueTTL)
			dueKeys = append(dueKeys, lifecycle.MarkerKey(tb.name))
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
	f.waitDue(t, b, now, dueKeys)
}

// waitDue waits until every marker of keys, dropped at deletedAt with the
// due TTL, is due by the store's clock: deleted_at + ttl and the marker's
// LastModified + ttl both passed.
func (f *fixture) waitDue(t testing.TB, b *backend, deletedAt time.Time, keys []string) {
	t.Helper()
	// The markers outside the root were written before these, so they
	// are due by then too (no pass may ever see them).
	at := time.UnixMilli(deletedAt.UnixMilli()).Add(dueTTL)
	for _, k := range keys {
		o, err := b.raw.Head(context.Background(), k)
		require.NoError(t, err)
		if lm := o.LastModified.Add(dueTTL); lm.After(at) {
			at = lm
		}
	}
	b.waitStore(t, at, "fixture: wait until the due markers are due")
}

// writeLink makes tb's <name>.lance something that is no table: a symbolic
// link to the sentinel folder outside the root (local), or an object (S3).
func (f *fixture) writeLink(t testing.TB, b *backend, tb *table) {
	t.Helper()
	key := strings.TrimSuffix(lifecycle.TableDir(tb.name), "/")
	if b.dir != "" {
		target := filepath.Join(b.parentDir, b.base+"-outside")
		require.NoError(t, os.Symlink(target, filepath.Join(b.dir, key)))
		f.fixed[key] = "symlink:" + target
		return
	}
	body := []byte("an object where the table's folder should be")
	b.putAll(t, map[string][]byte{key: body})
	f.fixed[key] = sum(body)
}

// writeOutside puts sentinels next to the root, in its parent: a folder
// (the target of local link tables) holding Lance-like files, a root-level
// "table" named like the root itself (<base>.lance/ and a due <base>.deleted),
// and keys that continue the root's name without a slash (<base>zz_out.*),
// which a prefix match missing its "/" would take for a due table of the
// root. No pass may ever read, change or delete any of them.
func (f *fixture) writeOutside(t testing.TB, b *backend) {
	t.Helper()
	now := time.Now()
	due := markerAt(now, dueTTL)
	objs := map[string][]byte{
		b.base + "-outside/_versions/1.manifest": []byte("outside the root: never touched"),
		b.base + "-outside/data/0.lance":         []byte("outside the root: never touched, not even through a link"),
		b.base + ".lance/_versions/1.manifest":   []byte("a table named like the root, in its parent"),
		b.base + ".deleted":                      due,
		b.base + "zz_out.lance/data/0.lance":     []byte("continues the root's name without a slash"),
		b.base + "zz_out.deleted":                due,
	}
	b.outside = sortedKeys(objs)
	b.outsidePrefixes = []string{b.base + "-outside/", b.base + ".lance/", b.base + "zz_out.lance/"}
	for k, v := range objs {
		f.fixed["../"+k] = sum(v)
	}
	if b.dir != "" {
		for k, v := range objs {
			p := filepath.Join(b.parentDir, filepath.FromSlash(k))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, v, 0o644))
		}
	} else {
		for k, v := range objs {
			_, err := b.parent.Put(context.Background(), k, v)
			require.NoError(t, err)
		}
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

// snapshot is every object of a root: key -> sha256 of its bytes. On a
// local root it is read from the file system itself, not through reaper's
// store: a directory is "<key>/" -> "dir" and a symbolic link "symlink:"
// + its target. A purge commit <name>.reaper-purge is "commit:" + the
// sha256 of the marker bytes it names (so it can be compared with the
// marker's entry). Sentinels outside the root are "../" + their key.
type snapshot map[string]string

const dirValue = "dir"

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// value is what a snapshot records for key with body.
func value(key string, body []byte) string {
	if name, ok := strings.CutSuffix(key, lifecycle.CommitSuffix); ok && !strings.Contains(name, "/") {
		var c lifecycle.Commit
		if err := json.Unmarshal(body, &c); err != nil {
			return "commit-unreadable:" + sum(body)
		}
		return "commit:" + sum([]byte(c.Marker))
	}
	return sum(body)
}

// isTemp: a reaper temp file (hidden from the local store's listings; a
// killed writer leaves one, strayTemps counts them).
func isTemp(name string) bool { return strings.HasPrefix(name, ".reaper-tmp-") }

// take reads every object of the root and the sentinels outside it.
func take(t testing.TB, b *backend) snapshot {
	t.Helper()
	var snap snapshot
	if b.dir != "" {
		snap = takeDir(t, b.dir, "")
		for _, k := range b.outside {
			if strings.Contains(k, "/") {
				continue // under a prefix, walked below
			}
			p := filepath.Join(b.parentDir, k)
			if body, err := os.ReadFile(p); err == nil {
				snap["../"+k] = sum(body)
			}
		}
		for _, pre := range b.outsidePrefixes {
			dir := filepath.Join(b.parentDir, filepath.FromSlash(strings.TrimSuffix(pre, "/")))
			if _, err := os.Lstat(dir); err != nil {
				continue
			}
			for k, v := range takeDir(t, dir, "../"+pre) {
				if v != dirValue {
					snap[k] = v
				}
			}
		}
		return snap
	}
	snap = takeStore(t, b.raw, "", "")
	if b.parent != nil {
		for _, k := range b.outside {
			if strings.Contains(k, "/") {
				continue
			}
			body, _, err := b.parent.Get(context.Background(), k, 1<<20)
			if err == nil {
				snap["../"+k] = sum(body)
			} else {
				require.ErrorIs(t, err, objstore.ErrNotFound)
			}
		}
		for _, pre := range b.outsidePrefixes {
			for k, v := range takeStore(t, b.parent, pre, "../") {
				snap[k] = v
			}
		}
	}
	return snap
}

// takeDir walks a local directory without following links.
func takeDir(t testing.TB, dir, prefix string) snapshot {
	t.Helper()
	snap := snapshot{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		key := prefix + filepath.ToSlash(rel)
		switch {
		case rel == ".":
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			snap[key] = "symlink:" + target
		case d.IsDir():
			snap[key+"/"] = dirValue
		case isTemp(d.Name()):
		default:
			body, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			snap[key] = value(strings.TrimPrefix(key, prefix), body)
		}
		return nil
	})
	require.NoError(t, err)
	return snap
}

// takeStore lists every object under prefix of s, then GETs each.
func takeStore(t testing.TB, s objstore.Store, prefix, as string) snapshot {
	t.Helper()
	ctx := context.Background()
	var keys []string
	err := s.Walk(ctx, prefix, func(objs []objstore.Object) error {
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
			body, _, err := s.Get(ctx, k, 1<<20)
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
				snap[as+k] = value(k, body)
			}
		}()
	}
	wg.Wait()
	require.NoError(t, firstErr)
	return snap
}

// expected is what the fixture wrote, as a snapshot (files only: no
// directories).
func (f *fixture) expected() snapshot {
	s := snapshot{}
	for k, v := range f.bystander {
		s[k] = sum(v)
	}
	for k, v := range f.fixed {
		s[k] = v
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

// withoutDirs drops the directory entries of a snapshot.
func (s snapshot) withoutDirs() snapshot {
	out := snapshot{}
	for k, v := range s {
		if v != dirValue {
			out[k] = v
		}
	}
	return out
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
		if isTemp(d.Name()) {
			rel, _ := filepath.Rel(b.dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// ledgerRows reads every row of the audit ledger at audit (a local path),
// whatever its date: processes with skewed clocks put theirs days apart.
func ledgerRows(t testing.TB, audit string) []ledger.Row {
	t.Helper()
	store, err := all.Open(context.Background(), audit, nil)
	require.NoError(t, err)
	rows, err := ledger.Read(context.Background(), store, time.Time{})
	require.NoError(t, err)
	return rows
}
