package s3

import (
	"context"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3/s3opt"
)

// Backend describes the S3 backend to the registry (package all): its
// scheme, its storage options (the secret ones marked), their validation,
// and the classification the retry layer uses.
func Backend() objstore.Backend {
	return objstore.Backend{
		Scheme:  objstore.SchemeS3,
		Options: s3opt.StorageOptions(),
		CheckOptions: func(options map[string]string) error {
			_, err := s3opt.Parse(options)
			return err
		},
		Open:        openBackend,
		IsTransient: IsTransient,
		IsThrottle:  IsThrottle,
		// Last-Modified and Date are whole seconds.
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
	if env.Logger != nil {
		opts = append(opts, WithLogger(env.Logger))
	}
	st, err := Open(ctx, loc, options, opts...)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return st, nil
}
