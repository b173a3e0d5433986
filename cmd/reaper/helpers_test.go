package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// backend is one place a test root lives, with direct access that bypasses
// reaper for setup and checks.
type backend struct {
	name string
	// clock is the test's store clock: commands run with setClock on it
	// see one another's writes stamped alike.
	clock *objstoretest.Clock
	// opts are --root and --storage-option for the run functions.
	opts storeOptions
	// setsMtime: put honours mtime (local); S3 stamps its own time.
	setsMtime bool
	put       func(t *testing.T, key string, body []byte, mtime time.Time)
	// get returns the body, or ok=false when the key is missing.
	get  func(t *testing.T, key string) (body []byte, ok bool)
	keys func(t *testing.T) []string
	// store opens the root's bare backend (wrap it in clock to see the
	// store's clock the commands see).
	store func(t *testing.T) objstore.Store
}

// localBackend is a root in a directory of its own (objstoretest.Local).
func localBackend(t *testing.T) backend { return newBackend(t, objstoretest.Local.NewRoot(t)) }

// newBackend wraps a root of objstoretest's backends with the back doors
// the command tests use.
func newBackend(t *testing.T, r objstoretest.Root) backend {
	if r.S3 != nil {
		return s3Backend(t, r)
	}
	if r.GCS != nil || r.Azure != nil {
		return bucketBackend(t, r)
	}
	root := r.Dir
	return backend{
		name:      "local",
		clock:     objstoretest.NewClock(),
		opts:      storeOptions{globalOptions: quiet(), Root: root},
		setsMtime: true,
		put: func(t *testing.T, key string, body []byte, mtime time.Time) {
			require.NoError(t, writeLocalFile(filepath.Join(root, filepath.FromSlash(key)), body, mtime))
		},
		get: func(t *testing.T, key string) ([]byte, bool) {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(key)))
			if errors.Is(err, os.ErrNotExist) {
				return nil, false
			}
			require.NoError(t, err)
			return b, true
		},
		keys: func(t *testing.T) []string {
			var keys []string
			err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(root, p)
					keys = append(keys, filepath.ToSlash(rel))
				}
				return err
			})
			require.NoError(t, err)
			slices.Sort(keys)
			return keys
		},
		store: func(t *testing.T) objstore.Store { return r.Open(t) },
	}
}

// s3Backend is a root under a prefix of a fresh bucket on the S3 test
// server (objstoretest.S3Store); the test skips when there is none.
func s3Backend(t *testing.T, r objstoretest.Root) backend {
	srv := *r.S3
	const prefix = objstoretest.RootPrefix
	var kvs []string
	for k, v := range r.Options {
		kvs = append(kvs, k+"="+v)
	}
	slices.Sort(kvs)
	ctx := context.Background()
	return backend{
		name:  "s3",
		clock: objstoretest.NewClock(),
		opts:  storeOptions{globalOptions: quiet(), Root: r.URI, StorageOptions: kvs},
		put: func(t *testing.T, key string, body []byte, _ time.Time) {
			_, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(prefix + key), Body: bytes.NewReader(body)})
			require.NoError(t, err)
		},
		get: func(t *testing.T, key string) ([]byte, bool) {
			out, err := srv.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(prefix + key)})
			var nsk *types.NoSuchKey
			if errors.As(err, &nsk) {
				return nil, false
			}
			require.NoError(t, err)
			defer out.Body.Close()
			b, err := io.ReadAll(out.Body)
			require.NoError(t, err)
			return b, true
		},
		keys: func(t *testing.T) []string {
			var keys []string
			p := s3.NewListObjectsV2Paginator(srv.Client, &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket), Prefix: aws.String(prefix)})
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				require.NoError(t, err)
				for _, o := range out.Contents {
					keys = append(keys, strings.TrimPrefix(aws.ToString(o.Key), prefix))
				}
			}
			slices.Sort(keys)
			return keys
		},
		store: func(t *testing.T) objstore.Store { return r.Open(t) },
	}
}

// bucketBackend is a root of a bucket store whose setup and checks go
// through a bare store of the root itself (outside the commands).
func bucketBackend(t *testing.T, r objstoretest.Root) backend {
	var kvs []string
	for k, v := range r.Options {
		kvs = append(kvs, k+"="+v)
	}
	slices.Sort(kvs)
	ctx := context.Background()
	st := r.Open(t)
	return backend{
		name:  r.Backend,
		clock: objstoretest.NewClock(),
		opts:  storeOptions{globalOptions: quiet(), Root: r.URI, StorageOptions: kvs},
		put: func(t *testing.T, key string, body []byte, _ time.Time) {
			_, err := st.Put(ctx, key, body)
			require.NoError(t, err)
		},
		get: func(t *testing.T, key string) ([]byte, bool) {
			b, _, err := st.Get(ctx, key, 1<<20)
			if errors.Is(err, objstore.ErrNotFound) {
				return nil, false
			}
			require.NoError(t, err)
			return b, true
		},
		keys: func(t *testing.T) []string {
			var keys []string
			require.NoError(t, st.Walk(ctx, "", func(objs []objstore.Object) error {
				for _, o := range objs {
					keys = append(keys, o.Key)
				}
				return nil
			}))
			slices.Sort(keys)
			return keys
		},
		store: func(t *testing.T) objstore.Store { return r.Open(t) },
	}
}

// gcsBackend is a root on the GCS test server (fake-gcs-server).
func gcsBackend(t *testing.T) backend { return newBackend(t, objstoretest.GCSStore.NewRoot(t)) }

// forEachBackend runs fn as a subtest against local, S3, GCS and Azure
// (objstoretest.Shared: the backends the CLI opens by URI).
func forEachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		fn(t, newBackend(t, b.NewRoot(t)))
	}, objstoretest.Shared()...)
}

// quiet sends logs nowhere.
func quiet() globalOptions {
	return globalOptions{LogFormat: "text", LogLevel: "warn", Stderr: io.Discard, lookupEnv: noEnv}
}

// noEnv is an empty environment: the commands that read REAPER_* variables
// see none of the test process's.
func noEnv(string) (string, bool) { return "", false }

// envOf is an environment of the given variables.
func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

// at returns a fixed clock.
func at(t time.Time) func() time.Time { return func() time.Time { return t } }

// setClock makes a command run at t: this host's clock reads t, and the
// store's clock is moved forward to t (objstoretest.Clock; one per test, so
// every command of the test sees the others' writes stamped alike), since
// due-ness and lease takeovers read the store's clock, not the host's.
func (g *globalOptions) setClock(clock *objstoretest.Clock, t time.Time) {
	g.Now = at(t)
	g.wrapStore = func(s objstore.Store) objstore.Store {
		clock.AdvanceTo(t)
		return clock.Wrap(s)
	}
}

// writeTable writes a Lance-layout table (manifests, transactions, data,
// deletions, an index) dated mtime, and returns its object count and bytes.
func (b backend) writeTable(t *testing.T, name string, mtime time.Time) (objects, size int64) {
	t.Helper()
	tb := lancetest.Table{Manifests: 2, Transactions: 2, Deletions: 1, Indices: 1, Data: 2, DataBytes: 48 << 10}
	for rel, body := range tb.Files() {
		b.put(t, lifecycle.TableDir(name)+rel, body, mtime)
		objects++
		size += int64(len(body))
	}
	return objects, size
}

// writeMarker writes <name>.deleted as Lance would.
func (b backend) writeMarker(t *testing.T, name string, body []byte, mtime time.Time) {
	t.Helper()
	b.put(t, name+".deleted", body, mtime)
}

// tableKeys lists the objects left under <name>.lance/.
func (b backend) tableKeys(t *testing.T, name string) []string {
	var out []string
	for _, k := range b.keys(t) {
		if strings.HasPrefix(k, name+".lance/") {
			out = append(out, k)
		}
	}
	return out
}

func (b backend) hasKey(t *testing.T, key string) bool {
	_, ok := b.get(t, key)
	return ok
}
