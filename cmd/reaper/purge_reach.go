package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/roots"
)

// errFirstPage stops a listing after its first page.
var errFirstPage = errors.New("first page read")

// reachRoot reaches the one root of a plain `reaper purge` or `reaper
// retain` (op; no --config, fromFile false)
// before the pass, as status does: a root the settings cannot reach (a
// missing directory or bucket, credentials, an endpoint) is then one line
// and exit status 2, where the pass would log it, report it and exit with
// it, the same error three times. It lists the first page of the root's
// _reaper/ prefix, the request readiness makes. A failure of another kind
// is left to the pass, which retries and reports it; a pass from a
// configuration file is left whole, so a CronJob still records and pushes
// the failed pass.
func reachRoot(ctx context.Context, op string, fromFile bool, rt *runtime) error {
	if fromFile || len(rt.cfg.Roots) != 1 || len(rt.cfg.Discover) > 0 {
		return nil
	}
	root := rt.cfg.Roots[0]
	misconfigured := func(err error) error {
		var me *objstore.MisconfiguredError
		if errors.As(err, &me) {
			return &usageError{err: fmt.Errorf("%s: %s: %w", op, root.URI, me)}
		}
		return nil
	}
	store, err := rt.worker.Open(ctx, roots.Root{URI: root.URI, StorageOptions: root.StorageOptions})
	if err != nil {
		return misconfigured(err)
	}
	err = store.List(ctx, "_reaper/", func(objstore.Page) error { return errFirstPage })
	if err == nil || errors.Is(err, errFirstPage) {
		return nil
	}
	return misconfigured(err)
}
