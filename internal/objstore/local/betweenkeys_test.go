package local_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

var errDropped = errors.New("the table was dropped (injected)")

// A between-keys check that refuses before the k-th key stops DeleteBatch
// after k-1 unlinks, inside one directory and across two; and a context
// cancelled between two keys stops it there too: the batch never runs to
// its end. The keys not reached stay and come back wrapping the refusal.
func TestBetweenKeysStopsDeleteBatch(t *testing.T) {
	oneDir := []string{"t.lance/data/"}
	twoDirs := []string{"t.lance/_versions/", "t.lance/data/"}
	for _, tc := range []struct {
		name     string
		dirs     []string
		unlinked int
		cancel   bool // cancel the context instead of refusing
		want     error
	}{
		{"refused before the first", oneDir, 0, false, errDropped},
		{"refused mid-directory", oneDir, 4, false, errDropped},
		{"refused in the second directory", twoDirs, 7, false, errDropped},
		{"cancelled mid-directory", oneDir, 4, true, context.Canceled},
		{"cancelled in the second directory", twoDirs, 7, true, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			keys := batchKeys(t, root, 10/len(tc.dirs), tc.dirs...)
			s := open(t, root)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			asked := 0
			ctx = objstore.WithBetweenKeys(ctx, func(context.Context) error {
				// Asked before each key: the n-th question comes before
				// keys[n-1] is unlinked.
				asked++
				requireContent(t, filepath.Join(root, keys[asked-1]), keys[asked-1])
				if asked <= tc.unlinked {
					return nil
				}
				if tc.cancel {
					cancel()
					return nil // the context, asked first at the next key, stops it
				}
				return errDropped
			})
			err := s.DeleteBatch(ctx, keys)
			var be *objstore.BatchError
			require.ErrorAs(t, err, &be)
			unlinked := tc.unlinked
			if tc.cancel {
				unlinked++ // the key asked about when the context was cancelled goes
			}
			require.Len(t, be.Failed, len(keys)-unlinked, "failed keys: got/want")
			for i, fe := range be.Failed {
				require.Equal(t, keys[unlinked+i], fe.Key, "failed key %d", i)
				require.ErrorIs(t, fe.Err, tc.want, "failed key %s", fe.Key)
			}
			for i, key := range keys {
				if i < unlinked {
					require.NoFileExists(t, filepath.Join(root, key), "key %d, before the stop", i)
				} else {
					requireContent(t, filepath.Join(root, key), key)
				}
			}
		})
	}
}
