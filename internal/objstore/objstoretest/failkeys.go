package objstoretest

import (
	"context"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// FailKeys wraps a store so that reading (Get) or creating (PutIfAbsent)
// one of the keys in Fail returns that key's error, as a bucket policy
// denying one object would. Other calls and keys go through. Fill Fail
// before sharing the store between goroutines.
type FailKeys struct {
	objstore.Store
	Fail map[string]error
}

// Unwrap returns the wrapped store.
func (f *FailKeys) Unwrap() objstore.Store { return f.Store }

// Get fails for a listed key.
func (f *FailKeys) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	if err := f.Fail[key]; err != nil {
		return nil, objstore.Object{}, err
	}
	return f.Store.Get(ctx, key, limit)
}

// PutIfAbsent fails for a listed key.
func (f *FailKeys) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := f.Fail[key]; err != nil {
		return objstore.Object{}, err
	}
	return f.Store.PutIfAbsent(ctx, key, body)
}
