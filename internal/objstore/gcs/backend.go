package gcs

import (
	"context"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/gcs/gcsopt"
)

// Backend describes the Google Cloud Storage backend to the registry
// (package all): its scheme, its storage options (the secret ones marked),
// their validation, and the classification the retry layer uses.
func Backend() objstore.Backend {
	return objstore.Backend{
		Scheme:  objstore.SchemeGS,
		Options: gcsopt.StorageOptions(),
		CheckOptions: func(options map[string]string) error {
			_, err := gcsopt.Parse(options)
			return err
		},
		Open:        openBackend,
		IsTransient: IsTransient,
		IsThrottle:  IsThrottle,
		// Date headers read to the second.
		ClockResolution: objstore.TimeResolution,
	}
}

// openBackend is Open for the registry: env's transport carries every
// request.
func openBackend(ctx context.Context, loc objstore.Location, options map[string]string, env objstore.OpenEnv) (objstore.Store, error) {
	var opts []Option
	if env.Transport != nil {
		opts = append(opts, WithTransport(env.Transport))
	}
	st, err := Open(ctx, loc, options, opts...)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return st, nil
}
