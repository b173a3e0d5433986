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
	"github.com/lance-reaper/reaper/internal/objstore/azure"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
)

// Env variables that tell a child process which store to open.
const (
	childDirEnv   = "REAPER_LOCK_TEST_DIR"        // local store root
	childS3URIEnv = "REAPER_LOCK_TEST_S3_URI"     // s3:// or az:// root
	childS3OptEnv = "REAPER_LOCK_TEST_S3_OPTIONS" // JSON storage options
)

func backends() []backend {
	return []backend{
		{"memory", func(*testing.T) objstore.Store { return objstore.NewMemory() }},
		{"local", func(t *testing.T) objstore.Store { return openLocal(t, t.TempDir()) }},
		{"s3", func(t *testing.T) objstore.Store { s, _ := openS3(t); return s }},
		{"azure", func(t *testing.T) objstore.Store { s, _ := openAzure(t); return s }},
	}
}

// stopBackends stops the versitygw and Azurite servers the harness may
// have started.
func stopBackends() {
	objstoretest.StopS3()
	objstoretest.StopAzure()
}

func openLocal(t *testing.T, dir string) objstore.Store {
	t.Helper()
	s, err := local.Open(dir)
	require.NoError(t, err, "open local store %s", dir)
	return s
}

// openS3 opens a store on a fresh bucket of the S3 test server (skipping
// when there is none) and returns the env a child needs to open it too.
func openS3(t *testing.T) (objstore.Store, []string) {
	t.Helper()
	srv := objstoretest.S3(t)
	uri := srv.URI(objstoretest.NewTestPrefix())
	loc, err := objstore.ParseLocation(uri)
	require.NoError(t, err)
	s, err := s3.Open(t.Context(), loc, srv.Options())
	require.NoError(t, err, "open %s", uri)
	opts, err := json.Marshal(srv.Options())
	require.NoError(t, err)
	return s, []string{childS3URIEnv + "=" + uri, childS3OptEnv + "=" + string(opts)}
}

// openAzure opens a store on a fresh container of the Azure test server
// (skipping when there is none) and returns the env a child needs to open
// it too.
func openAzure(t *testing.T) (objstore.Store, []string) {
	t.Helper()
	srv := objstoretest.Azure(t)
	uri := srv.URI(objstoretest.NewTestPrefix())
	loc, err := objstore.ParseLocation(uri)
	require.NoError(t, err)
	s, err := azure.Open(t.Context(), loc, srv.Options())
	require.NoError(t, err, "open %s", uri)
	opts, err := json.Marshal(srv.Options())
	require.NoError(t, err)
	return s, []string{childS3URIEnv + "=" + uri, childS3OptEnv + "=" + string(opts)}
}

// forEachChildBackend runs fn per backend that separate processes can
// share, with the env that lets a child open the same store and how many
// lock cycles a child should run: fewer on S3, where every step is a round
// trip through a race-instrumented SDK.
func forEachChildBackend(t *testing.T, fn func(t *testing.T, s objstore.Store, env []string, iters int)) {
	t.Helper()
	t.Run("local", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fn(t, openLocal(t, dir), []string{childDirEnv + "=" + dir}, 12)
	})
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		s, env := openS3(t)
		fn(t, s, env, 6)
	})
	t.Run("azure", func(t *testing.T) {
		t.Parallel()
		s, env := openAzure(t)
		fn(t, s, env, 6)
	})
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
	loc, err := objstore.ParseLocation(uri)
	if err != nil {
		return nil, err
	}
	if loc.Scheme == objstore.SchemeAzure {
		return azure.Open(ctx, loc, opts)
	}
	return s3.Open(ctx, loc, opts)
}
