package lance

import (
	"context"
	"errors"
	"fmt"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// MaxManifestBytes caps how much of one manifest the reader loads. A
// manifest grows with its fragments (each carries its file paths, field ids
// and, with stable row ids, up to 200 KB of inline row ids), so a table of a
// few hundred thousand fragments writes manifests of tens of MB; 64 MiB
// holds about 300,000 plain fragments. Manifests are read
// ReadConcurrency at a time, so the cap also bounds the reader's memory. A
// larger manifest makes its table unsupported, never half-read.
const MaxManifestBytes = 64 << 20

// maxRefBytes caps a tag or branch file (a few hundred bytes of JSON).
const maxRefBytes = 1 << 20

// ReadConcurrency is how many manifests ReadTable reads at once.
const ReadConcurrency = 8

// get is every read of the package: one object, whole, at most limit bytes
// (the store never reads past it). A larger object is a format error (the
// table is unsupported), not an I/O failure.
func get(ctx context.Context, store objstore.Store, key string, limit int64) ([]byte, error) {
	body, _, err := store.Get(ctx, key, limit)
	if errors.Is(err, objstore.ErrTooLarge) {
		return nil, unsupportedf("%s is larger than the reader's cap of %d bytes", key, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return body, nil
}
