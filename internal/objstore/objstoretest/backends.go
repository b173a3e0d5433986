package objstoretest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/azure"
	"github.com/lance-reaper/reaper/internal/objstore/gcs"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb"
)

// This file owns the backends every package's store tests run on, so a new
// backend is one more entry here (and in Backends) rather than a fixture
// per package.

// RootPrefix is where a test root lives inside its bucket: not the bucket's
// root, so that keys are always prefixed, as in production.
const RootPrefix = "lancedb/prod/"

// Backend makes fresh roots on one kind of store.
type Backend struct {
	Name string
	// Scheme is the registry backend (all.Default) its roots are of; ""
	// for the memory store, which no root URI names. Every registered
	// scheme has an entry in Backends (all_test.go checks it).
	Scheme objstore.Scheme
	// NewRoot makes a fresh, empty root for t. On S3 each call is a new
	// bucket of the test server (the test skips without a server, or fails
	// when REAPER_REQUIRE_S3=1).
	NewRoot func(t testing.TB) Root
}

// Root is one test root: how the product opens it and the back doors a
// test uses to set up and check it without reaper.
type Root struct {
	Backend string
	// URI and Options are what --root and --storage-option, or
	// reaper.Open, take to open it.
	URI     string
	Options map[string]string
	// Dir is the root's directory on the local backend ("" otherwise).
	Dir string
	// S3 is the server and bucket on the S3 backend (nil otherwise); the
	// root's keys are under RootPrefix there.
	S3 *S3Server
	// GCS is the server and bucket on the GCS backend (nil otherwise); the
	// root's keys are under RootPrefix there.
	GCS *GCSServer
	// Azure is the server and container on the Azure backend (nil
	// otherwise); the root's keys are under RootPrefix there.
	Azure *AzureServer
	// DDB is the DynamoDB server and commit table of an s3+ddb:// root (nil
	// otherwise); its objects are on S3, under RootPrefix.
	DDB  *DDBServer
	open func(t testing.TB) objstore.Store
}

// Open opens a bare store on the root (no retries, no metrics). Each call
// is a new handle, as another process would open the root, except on the
// memory backend, where every call returns the same store.
func (r Root) Open(t testing.TB) objstore.Store {
	t.Helper()
	return r.open(t)
}

var (
	// Memory is the in-memory store: contract bugs show here before any
	// I/O noise. Its roots cannot be shared with another process.
	Memory = Backend{Name: "memory", NewRoot: newMemoryRoot}
	// Local is the local filesystem, each root a directory of its own.
	Local = Backend{Name: "local", Scheme: local.Scheme, NewRoot: newLocalRoot}
	// S3Store is a real S3 server (versitygw, see S3), each root under
	// RootPrefix of a fresh bucket.
	S3Store = Backend{Name: "s3", Scheme: s3.Scheme, NewRoot: newS3Root}
	// GCSStore is a GCS emulator (fake-gcs-server, see GCS), each root
	// under RootPrefix of a fresh bucket.
	GCSStore = Backend{Name: "gcs", Scheme: gcs.Scheme, NewRoot: newGCSRoot}
	// AzureStore is an Azure Blob emulator (Azurite, see Azure), each root
	// under RootPrefix of a fresh container.
	AzureStore = Backend{Name: "azure", Scheme: azure.Scheme, NewRoot: newAzureRoot}
	// S3DDBStore is an s3+ddb:// root: its objects on the S3 server, each
	// under RootPrefix of a fresh bucket, its commit rows in a fresh table
	// of the DynamoDB server (dynalite, see DDB).
	S3DDBStore = Backend{Name: "s3+ddb", Scheme: s3ddb.Scheme, NewRoot: newS3DDBRoot}
)

// Backends are every backend, memory first.
func Backends() []Backend {
	return []Backend{Memory, Local, S3Store, GCSStore, AzureStore, S3DDBStore}
}

// Shared are the backends whose roots other processes can open too.
func Shared() []Backend { return []Backend{Local, S3Store, GCSStore, AzureStore, S3DDBStore} }

// ForEachBackend runs fn as a subtest per backend, in order; with no
// backends given, on Backends(). fn makes its roots with b.NewRoot.
func ForEachBackend(t *testing.T, fn func(t *testing.T, b Backend), backends ...Backend) {
	t.Helper()
	if len(backends) == 0 {
		backends = Backends()
	}
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}

func newMemoryRoot(testing.TB) Root {
	m := memstore.New()
	return Root{Backend: "memory", URI: m.URI(), open: func(testing.TB) objstore.Store { return m }}
}

func newLocalRoot(t testing.TB) Root {
	dir := t.TempDir()
	open := func(t testing.TB) objstore.Store {
		t.Helper()
		s, err := local.Open(dir)
		require.NoError(t, err, "open local store %s", dir)
		return s
	}
	return Root{Backend: "local", URI: dir, Dir: dir, open: open}
}

func newS3Root(t testing.TB) Root {
	srv := S3(t)
	uri := srv.URI(RootPrefix)
	open := func(t testing.TB) objstore.Store {
		t.Helper()
		loc, err := all.ParseLocation(uri)
		require.NoError(t, err)
		s, err := s3.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
		require.NoError(t, err, "open %s", uri)
		return s
	}
	return Root{Backend: "s3", URI: uri, Options: srv.Options(), S3: &srv, open: open}
}

func newGCSRoot(t testing.TB) Root {
	srv := GCS(t)
	uri := srv.URI(RootPrefix)
	open := func(t testing.TB) objstore.Store {
		t.Helper()
		loc, err := all.ParseLocation(uri)
		require.NoError(t, err)
		s, err := gcs.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
		require.NoError(t, err, "open %s", uri)
		return s
	}
	return Root{Backend: "gcs", URI: uri, Options: srv.Options(), GCS: &srv, open: open}
}

// azuriteBatch is the Blob Batch size on Azurite: its deletes slow down as
// a container fills (about 9 ms each at 2,500 blobs), so a full 256-delete
// batch can outlast a short test lease's per-request limit.
const azuriteBatch = 64

func newAzureRoot(t testing.TB) Root {
	srv := Azure(t)
	uri := srv.URI(RootPrefix)
	open := func(t testing.TB) objstore.Store {
		t.Helper()
		loc, err := all.ParseLocation(uri)
		require.NoError(t, err)
		s, err := azure.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
		require.NoError(t, err, "open %s", uri)
		s.BatchSize = azuriteBatch
		return s
	}
	return Root{Backend: "azure", URI: uri, Options: srv.Options(), Azure: &srv, open: open}
}

func newS3DDBRoot(t testing.TB) Root {
	srv := S3(t)
	ddb := DDB(t)
	uri := S3DDBURI(srv, ddb, RootPrefix)
	opts := srv.Options()
	opts["dynamodb_endpoint"] = ddb.Endpoint
	open := func(t testing.TB) objstore.Store {
		t.Helper()
		loc, err := all.ParseLocation(uri)
		require.NoError(t, err)
		s, err := s3ddb.Open(t.Context(), loc, opts, objstore.OpenEnv{})
		require.NoError(t, err, "open %s", uri)
		return s
	}
	return Root{Backend: "s3+ddb", URI: uri, Options: opts, S3: &srv, DDB: &ddb, open: open}
}

// S3DDBURI is the s3+ddb:// root URI of srv's bucket under prefix,
// committing through ddb's table.
func S3DDBURI(srv S3Server, ddb DDBServer, prefix string) string {
	return "s3+ddb" + strings.TrimPrefix(srv.URI(prefix), "s3") + "?ddbTableName=" + ddb.Table
}

// Sub is the URI of path (relative, "/"-separated, a pattern's "*" and a
// trailing "/" kept) under the root: inserted before the query of a root
// that has one (s3+ddb://…?ddbTableName=T), which names the root's commit
// table, not a path.
func (r Root) Sub(path string) string {
	base, query, ok := strings.Cut(r.URI, "?")
	s := strings.TrimSuffix(base, "/") + "/" + strings.TrimPrefix(path, "/")
	if ok {
		s += "?" + query
	}
	return s
}

// LocalPath is where key of a local root is on disk.
func (r Root) LocalPath(key string) string {
	return filepath.Join(r.Dir, filepath.FromSlash(key))
}

// S3Key is key's object key in the bucket of an S3 root.
func (r Root) S3Key(key string) string { return RootPrefix + strings.TrimPrefix(key, "/") }
