package local

import (
	"context"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Backend describes the local backend to the registry (package all). It
// takes no storage options, and no error of a local filesystem is worth
// retrying: a full disk or a denied permission stays so.
func Backend() objstore.Backend {
	return objstore.Backend{
		Scheme: objstore.SchemeFile,
		Open: func(_ context.Context, loc objstore.Location, _ map[string]string, _ objstore.OpenEnv) (objstore.Store, error) {
			st, err := Open(loc.Path)
			if err != nil {
				return nil, err // not a typed nil in the interface
			}
			return st, nil
		},
	}
}
