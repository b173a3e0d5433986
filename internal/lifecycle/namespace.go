// Package lifecycle implements the Lance soft-delete protocol on one database
// root: drop writes a marker, revive removes it under the lifecycle lock,
// status and list read the root in one paged listing, and purge reclaims a
// due table in a crash-safe order. It sees tables, markers and leases; the
// bytes travel through an objstore.Store.
package lifecycle

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/logctx"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// Defaults, documented in README and docs/FORMAT.md. This is their one
// definition (the lease TTL is the lock package's): config, the CLI and the
// public package read them from here.
const (
	DefaultTTL           = 7 * 24 * time.Hour
	DefaultSkewAllowance = 5 * time.Minute
	DefaultLeaseTTL      = lock.DefaultTTL
	// DefaultMarkerReads bounds concurrent marker and lease reads in List.
	DefaultMarkerReads = 16
)

// Options tune a Namespace. The zero value uses the defaults above.
type Options struct {
	// DefaultTTL applies to drops without a TTL and to markers without ttl_ms.
	DefaultTTL time.Duration
	// SkewAllowance is how far a marker may be dated in the future before it
	// is reported and never purged, and how much later than deleted_at an
	// object may be modified before the identity fence calls it a conflict.
	SkewAllowance time.Duration
	// Owner names this process in leases; "" uses host/pid.
	Owner string
	// LeaseTTL is the lifecycle lease length; it is renewed while work runs.
	LeaseTTL time.Duration
	// Now is this host's wall clock, for logs and reports only: no
	// decision to delete or to take a lease over reads it (the store's
	// clock decides); nil uses time.Now.
	Now func() time.Time
	// LeaseClock is the clock a lease holder measures its own lease with
	// (durations only); nil uses CLOCK_BOOTTIME. Tests move it to freeze a
	// holder.
	LeaseClock func() time.Time
	// Logger receives structured logs; nil uses slog.Default().
	Logger *slog.Logger
	// SpillDir holds the temporary key list of a table being purged; "" uses
	// os.TempDir().
	SpillDir string
	// DeleteBatch is how many keys one delete batch carries, and so how
	// many deletes one guard check covers; 0 is objstore.MaxBatchDelete,
	// the stores' limit. Tests lower it to purge in many batches a table
	// of hundreds of objects instead of thousands (on the emulators under
	// -race, those tables were most of the suites' time).
	DeleteBatch int
}

// Namespace is the lifecycle API over one database root.
type Namespace struct {
	store  objstore.Store
	locker *lock.Locker
	opts   Options
	log    *slog.Logger
}

// New returns a Namespace over store with opts.
func New(store objstore.Store, opts Options) (*Namespace, error) {
	if opts.DefaultTTL < 0 {
		return nil, fmt.Errorf("default ttl %s is negative; pass a duration such as 168h", opts.DefaultTTL)
	}
	if opts.SkewAllowance < 0 {
		return nil, fmt.Errorf("skew allowance %s is negative; pass a duration such as 5m", opts.SkewAllowance)
	}
	opts.DefaultTTL = cmp.Or(opts.DefaultTTL, DefaultTTL)
	opts.SkewAllowance = cmp.Or(opts.SkewAllowance, DefaultSkewAllowance)
	opts.LeaseTTL = cmp.Or(opts.LeaseTTL, DefaultLeaseTTL)
	if opts.DeleteBatch < 0 || opts.DeleteBatch > objstore.MaxBatchDelete {
		return nil, fmt.Errorf("delete batch of %d keys: pass 1 to %d, or 0 for %d", opts.DeleteBatch, objstore.MaxBatchDelete, objstore.MaxBatchDelete)
	}
	opts.DeleteBatch = cmp.Or(opts.DeleteBatch, objstore.MaxBatchDelete)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		opts.Owner = fmt.Sprintf("%s/%d", cmp.Or(host, "unknown-host"), os.Getpid())
	}
	log := cmp.Or(opts.Logger, slog.Default()).With("root", store.URI())
	return &Namespace{
		store: store,
		opts:  opts,
		log:   log,
		locker: &lock.Locker{
			Store:         store,
			Owner:         opts.Owner,
			TTL:           opts.LeaseTTL,
			SkewAllowance: opts.SkewAllowance,
			Clock:         opts.LeaseClock,
			Logger:        log,
		},
	}, nil
}

// withTable returns ctx naming the table its work is about, so every line
// logged with it (the lease's, the store's retries) says which table: see
// internal/logctx. The root is already on the Namespace's logger.
func withTable(ctx context.Context, name string) context.Context {
	return logctx.With(ctx, "table", DisplayName(name))
}

// Store returns the underlying store.
func (ns *Namespace) Store() objstore.Store { return ns.store }

// Options returns the effective options.
func (ns *Namespace) Options() Options { return ns.opts }
