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
		Scheme: Scheme,
		Forms:  forms(),
		Name:   "local directories",
		Open: objstore.Opener(func(_ context.Context, loc objstore.Location, _ map[string]string, _ objstore.OpenEnv) (*Store, error) {
			return Open(loc.Path)
		}),
	}
}
