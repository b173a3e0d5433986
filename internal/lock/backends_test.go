//go:build !fuzzonly

package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// Env variables that tell a child process which store to open.
const (
	childDirEnv   = "REAPER_LOCK_TEST_DIR"        // local store root
	childS3URIEnv = "REAPER_LOCK_TEST_S3_URI"     // s3:// or gs:// root
	childS3OptEnv = "REAPER_LOCK_TEST_S3_OPTIONS" // JSON storage options
)

// stopBackends stops the test servers the harness may have started.
func stopBackends() {
	objstoretest.StopS3()
	objstoretest.StopGCS()
	objstoretest.StopAzure()
	objstoretest.StopDDB()
}

// childEnv is the env that lets a child process open root too.
func childEnv(t *testing.T, root objstoretest.Root) []string {
	if root.Dir != "" {
		return []string{childDirEnv + "=" + root.Dir}
	}
	opts, err := json.Marshal(root.Options)
	require.NoError(t, err)
	return []string{childS3URIEnv + "=" + root.URI, childS3OptEnv + "=" + string(opts)}
}

// forEachChildBackend runs fn per backend that separate processes can
// share (objstoretest.Shared), with the env that lets a child open the
// same store and how many lock cycles a child should run: fewer on S3,
// where every step is a round trip through a race-instrumented SDK.
func forEachChildBackend(t *testing.T, fn func(t *testing.T, s objstore.Store, env []string, iters int)) {
	t.Helper()
	iters := map[string]int{objstoretest.Local.Name: 12, objstoretest.S3Store.Name: 6, objstoretest.GCSStore.Name: 6, objstoretest.AzureStore.Name: 6, objstoretest.S3DDBStore.Name: 6}
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		t.Parallel()
		root := b.NewRoot(t)
		fn(t, root.Open(t), childEnv(t, root), iters[b.Name])
	}, objstoretest.Shared()...)
}

// openChildStore opens the store the parent named in the environment.
func openChildStore(ctx context.Context) (objstore.Store, error) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		return local.Open(dir)
	}
	uri := os.Getenv(childS3URIEnv)
	if uri == "" {
		return nil, errors.New("child: no store in the environment")
	}
	var opts map[string]string
	if err := json.Unmarshal([]byte(os.Getenv(childS3OptEnv)), &opts); err != nil {
		return nil, fmt.Errorf("parse %s: %w", childS3OptEnv, err)
	}
	return all.Open(ctx, uri, opts)
}
