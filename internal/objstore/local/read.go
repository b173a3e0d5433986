package local

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Get reads the object through one open descriptor, so the returned ETag
// always belongs to the returned bytes even if a write replaces the key.
func (s *Store) Get(ctx context.Context, key string) ([]byte, objstore.Object, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, objstore.Object{}, err
	}
	f, err := os.Open(s.path(key))
	if err != nil {
		return nil, objstore.Object{}, mapErr("get", key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, objstore.Object{}, mapErr("get", key, err)
	}
	if !fi.Mode().IsRegular() { // a directory is a prefix, not an object
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, objstore.ErrNotFound)
	}
	body := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, body); err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	return body, objectOf(key, fi), nil
}

// Head stats the object.
func (s *Store) Head(ctx context.Context, key string) (objstore.Object, error) {
	if err := checkKey(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	fi, err := os.Stat(s.path(key))
	if err != nil {
		return objstore.Object{}, mapErr("head", key, err)
	}
	if !fi.Mode().IsRegular() {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, objstore.ErrNotFound)
	}
	return objectOf(key, fi), nil
}
