package objstore

import "context"

// This file owns the check a batch delete asks between its keys. A caller
// guards each batch before sending it (its lease, the switches that must
// stop it), but a batch a backend carries out key by key is many steps:
// 1,000 unlinks on a local disk, seconds on a slow one. A drop, a revive or
// a cancelled context that lands inside such a batch would otherwise stop
// the caller only after the whole batch. A backend that sends a batch as
// one request (S3's DeleteObjects, an Azure Blob Batch) has nothing to ask
// between keys: the caller's guard before the request covers it.

type betweenKeysKey struct{}

// WithBetweenKeys returns ctx carrying check: a backend that deletes a
// batch key by key (local, GCS) calls it before each key, and once it returns
// an error deletes nothing more of the call; every key not deleted then
// fails with an error wrapping check's. check must be cheap on most calls
// (it decides itself how often to read the store) and safe for concurrent
// use: batches in flight side by side share it.
func WithBetweenKeys(ctx context.Context, check func(context.Context) error) context.Context {
	return context.WithValue(ctx, betweenKeysKey{}, check)
}

// BetweenKeys asks ctx's check (WithBetweenKeys), if any, whether a batch
// may go on with its next key; a done ctx stops it too.
func BetweenKeys(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	check, _ := ctx.Value(betweenKeysKey{}).(func(context.Context) error)
	if check == nil {
		return nil
	}
	return check(ctx)
}
