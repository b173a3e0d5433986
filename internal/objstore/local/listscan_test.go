package local_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

// A local store says it lists by reading whole directories, also behind
// wrappers; an object store (memory here) does not.
func TestScansDirectories(t *testing.T) {
	s, err := local.Open(t.TempDir())
	require.NoError(t, err)
	require.True(t, objstore.ScansDirectories(s))
	require.True(t, objstore.ScansDirectories(objstoretest.NewClockStore(s)), "through a wrapper")
	require.False(t, objstore.ScansDirectories(memstore.New()))
	require.False(t, objstore.ScansDirectories(objstoretest.NewClockStore(memstore.New())))
}
