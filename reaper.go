// Package reaper is the embeddable API of reaper, the purge-and-retention
// worker for Lance / LanceDB databases. Open a database root (a local
// directory, /abs/path or file:///abs/path, or a prefix in S3 (s3://),
// Google Cloud Storage (gs://) or Azure Blob Storage (az://, abfss://), or
// an S3 prefix whose tables commit through DynamoDB (s3+ddb://)) and drop, revive, inspect, hold and purge its tables with Lance's soft-delete
// protocol: drop writes <root>/<name>.deleted, purge reclaims
// <root>/<name>.lance/ once the marker's TTL has passed, under a lease that
// holds across processes and machines. Released LanceDB versions do not
// read markers yet: a dropped table stays visible to them until it is
// purged.
//
// # Guide
//
// Open a root once and call its Namespace from any goroutine:
//
//	ns, err := reaper.Open(ctx, "s3://bucket/lancedb", reaper.Options{
//		StorageOptions: map[string]string{"aws_region": "eu-west-1"},
//	})
//	m, err := ns.Drop(ctx, "events", 7*24*time.Hour) // soft-delete; the data stays
//	err = ns.Revive(ctx, "events")                   // undo it before the purge
//	all, err := ns.Status(ctx)                       // every name with its State
//	due, err := ns.ListPurgeable(ctx, time.Time{})   // due by the store's clock, oldest first
//	res, err := ns.Purge(ctx, due[0].Name, reaper.PurgeOptions{})
//
// The examples (example_test.go; pkg.go.dev shows them) run each step: Example drops
// and purges a table, ExampleNamespace_Purge reports progress,
// ExampleNamespace_PlanPurge shows what a pass would do, ExampleNamespace_Hold
// keeps a table from every purge, and ExamplePurgeRoots runs a whole pass
// over many roots with every safety rail of the `reaper purge` command
// (blast radius, minimum TTL, PAUSE, holds, limits, the audit ledger).
// PlanRetention and Retain remove old versions of live tables, as Lance's
// own cleanup does. Time is always the store's clock (StoreNow), never
// this host's: a marker is due when its TTL has passed on it.
//
// A name of a root is in exactly one State:
//
//   - exists: data, no marker (a live table).
//   - soft_deleted: data and a marker; purgeable once the marker's
//     deleted_at + ttl has passed by the store's clock.
//   - purging: soft-deleted, and a process holds the table's lease.
//   - partially_purged: a purge committed and stopped part way; it cannot
//     be revived, and the next purge finishes it whatever its TTL.
//   - stuck: a committed purge could not finish and needs a person (its
//     marker was removed by hand, or something was written into it);
//     Problem says what to do.
//   - orphan_marker: a marker without data (a purge removes the marker).
//   - invalid_marker: the marker does not parse; never purged.
//   - unreadable: the marker or the legal hold exists but could not be read
//     (a permission error, a store failure); never purged while so.
//   - not_a_table: <name>.lance is a symbolic link or a file; never entered
//     (also a namespaced directory that holds no versions).
//   - deregistered: a namespaced table LanceDB deregistered
//     (.lance-deregistered); reported, never cleaned.
//   - not_found: neither data nor a marker.
//
// Tables in namespaces (LanceDB's createNamespace and createTable with a
// namespace path) live at <root>/<hash>_<object id>/, the object id being
// the namespace path and the table name joined by "$" ("tenant_a$inner").
// A root lists them with its root tables; their Name is their directory,
// "76cba2fc_tenant_a$inner/" (TableStatus.ObjectID is what LanceDB calls
// them), and every call that takes a name takes either. They are listed,
// held and cleaned of old versions like root tables; drop, revive and
// purge are for root tables (ErrNamespaced: LanceDB's soft delete is
// V1-only). The namespace catalog, __manifest/, is never touched.
//
// Errors are wrapped; branch on them with errors.Is against the sentinels
// below (ErrNotFound, ErrAlreadyDeleted, ErrNotSoftDeleted, ErrNotPurgeable,
// ErrInvalidMarker, ErrConflict, ErrInvalidName, ErrLocked, ErrHeld,
// ErrPaused, ErrPartiallyPurged, ErrNotATable, ErrLeaseLost, ErrStuck,
// ErrUndeletableKey, ErrShortTTL), and with errors.As for the details: *NotDueError
// (when the table becomes due), *ConflictError (what changed), *StuckError
// (what a person must do) and *LockedError (who holds the lease).
// A cancelled context stops any call; errors.Is(err, context.Canceled) then.
package reaper

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/logctx"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/retry"
	"github.com/lance-reaper/reaper/internal/stack"
)

// ValidateName reports whether name can be a table name: not empty, not "."
// or "..", and without '/', '\\' or NUL, or a namespaced table's directory
// ("76cba2fc_tenant_a$inner/"). Check names up front to refuse a batch
// before any of it is applied.
func ValidateName(name string) error { return lifecycle.ValidateName(name) }

// Sentinel errors.
var (
	ErrNotFound       = lifecycle.ErrNotFound
	ErrAlreadyDeleted = lifecycle.ErrAlreadyDeleted
	ErrNotSoftDeleted = lifecycle.ErrNotSoftDeleted
	ErrNotPurgeable   = lifecycle.ErrNotPurgeable
	ErrInvalidMarker  = lifecycle.ErrInvalidMarker
	ErrConflict       = lifecycle.ErrConflict
	ErrInvalidName    = lifecycle.ErrInvalidName
	ErrLocked         = lifecycle.ErrLocked
	ErrHeld           = lifecycle.ErrHeld
	// ErrPartiallyPurged: revive of a table whose purge committed.
	ErrPartiallyPurged = lifecycle.ErrPartiallyPurged
	// ErrNotATable: <name>.lance is a symbolic link or a file.
	ErrNotATable = lifecycle.ErrNotATable
	// ErrPaused: the root's _reaper/PAUSE switch is on; nothing is purged.
	ErrPaused = lifecycle.ErrPaused
	// ErrLeaseLost: the work stopped because its lease was, or may have
	// been, lost (a pause longer than the lease, a takeover).
	ErrLeaseLost = lock.ErrLost
	// ErrStuck: a purge that had committed (deleted part of the table)
	// cannot finish without a person; errors.As a *StuckError for what to
	// do. The table's state is then stuck.
	ErrStuck = lifecycle.ErrStuck
	// ErrUndeletableKey: the table holds an object whose name reaper cannot
	// delete safely; the purge refused it before deleting anything.
	ErrUndeletableKey = lifecycle.ErrUndeletableKey
	// ErrRootChanged: a local root's path names another directory than the
	// one Open checked (a symlink flipped, a directory swapped in with mv),
	// or none. Nothing was done through it; every later call of this
	// Namespace fails the same way. Open the root again to work on what it
	// names now.
	ErrRootChanged = objstore.ErrRootChanged
	// ErrShortTTL: Purge kept a table whose marker's TTL is below the TTL
	// floor (PurgeOptions.MinTTL, DefaultMinTTL); nothing was deleted.
	ErrShortTTL = lifecycle.ErrShortTTL
	// ErrNamespaced: Drop, Revive or Purge of a table in a namespace: they
	// are root-table operations (LanceDB's soft delete is V1-only; drop it
	// with LanceDB's dropTable and its namespace).
	ErrNamespaced = lifecycle.ErrNamespaced
)

// ObjectID is the name LanceDB knows a table by: a namespaced table's
// object id ("tenant_a$inner" for the name "76cba2fc_tenant_a$inner/"), a
// root table's name as it is.
func ObjectID(name string) string { return lifecycle.DisplayName(name) }

// SplitObjectID splits an object id into its namespace path and the table
// name: "tenant_a$sub$deep" is ["tenant_a", "sub"] and "deep".
func SplitObjectID(id string) (namespace []string, table string) { return lifecycle.SplitObjectID(id) }

// JoinObjectID is the object id of table in namespace, as LanceDB spells
// it: JoinObjectID([]string{"tenant_a"}, "inner") is "tenant_a$inner".
func JoinObjectID(namespace []string, table string) string {
	return lifecycle.JoinObjectID(namespace, table)
}

// Defaults of Options.
const (
	// DefaultTTL is the TTL of a drop without one and of a marker without
	// ttl_ms.
	DefaultTTL = 7 * 24 * time.Hour
	// DefaultSkewAllowance is how far a marker may be dated ahead, and how
	// long after its deleted_at a table's files may change.
	DefaultSkewAllowance = 5 * time.Minute
	// DefaultLeaseTTL is the length of a table's lease.
	DefaultLeaseTTL = 2 * time.Minute
	// DefaultMinTTL is the TTL floor of a purge (safety.min_ttl): a marker
	// whose TTL is below it is not purged unless asked
	// (PurgeOptions.AllowShortTTL, PassOptions' safety.allow_short_ttl).
	DefaultMinTTL = time.Hour
)

// Options configure Open. The zero value is ready to use.
type Options struct {
	// StorageOptions are the root's storage options, by the names Lance
	// takes (unknown names are an error; local roots take none):
	//   - s3://: allow_http, aws_access_key_id, aws_endpoint, aws_region,
	//     aws_secret_access_key, aws_session_token,
	//     aws_virtual_hosted_style_request; without them, the AWS SDK
	//     default chain.
	//   - gs://: allow_http, google_application_credentials,
	//     google_service_account, google_service_account_key; without them,
	//     Application Default Credentials.
	//   - az:// and abfss://: allow_http, azure_client_id,
	//     azure_client_secret, azure_federated_token_file,
	//     azure_storage_account_key, azure_storage_account_name,
	//     azure_storage_endpoint, azure_storage_sas_key,
	//     azure_storage_use_emulator, azure_tenant_id (and object_store's
	//     other spellings of them); without them, DefaultAzureCredential.
	//   - s3+ddb://: the s3:// names and dynamodb_endpoint (else
	//     DYNAMODB_ENDPOINT, as Lance reads it); one credentials chain and
	//     region for S3 and DynamoDB.
	StorageOptions map[string]string
	// DefaultTTL for drops without a TTL and markers without ttl_ms (7 days).
	DefaultTTL time.Duration
	// SkewAllowance for future-dated markers and the identity fence (5 min).
	SkewAllowance time.Duration
	// LeaseTTL is the length of the lifecycle lease revive and purge take
	// (2 min); a holder renews it at a third of that.
	LeaseTTL time.Duration
	// Owner names this process in leases (host/pid when empty).
	Owner string
	// Logger for structured logs (slog.Default() when nil).
	Logger *slog.Logger
	// Now is this host's clock for logs (time.Now when nil). It decides
	// nothing: due-ness and lease takeovers read the store's clock.
	Now func() time.Time
	// Registerer receives reaper's metrics for this root's store calls
	// (reaper_objstore_requests_total, reaper_objstore_request_duration_seconds,
	// reaper_s3_http_requests_total, reaper_store_http_requests_total); nil
	// records none. Namespaces may
	// share one registry: they count into the same series.
	Registerer prometheus.Registerer
	// TracerProvider traces every store call (a span per call); nil traces
	// none.
	TracerProvider trace.TracerProvider
	// RetryMaxElapsed caps how long one store call retries transient
	// failures (throttling, 5xx, resets), counted from its first failure
	// (2 min).
	RetryMaxElapsed time.Duration
}

// Namespace is one opened database root.
type Namespace struct {
	ns *lifecycle.Namespace
}

// Open opens the database root at rootURI: "/abs/path", "file:///abs/path",
// "s3://bucket/prefix", "gs://bucket/prefix", "az://container/prefix",
// "abfss://container@account.dfs.core.windows.net/prefix" or
// "s3+ddb://bucket/prefix?ddbTableName=T" (Lance's S3 tables committing
// through the DynamoDB table T, whose rows purge and retention delete with
// the versions they name). It does not list
// the root; the first call does.
// The store it opens is the one the reaper CLI uses: transient failures are
// retried with backoff, throttling slows this Namespace down, and every call
// is counted and traced when Options ask for it.
func Open(ctx context.Context, rootURI string, opts Options) (*Namespace, error) {
	// Lines about one table carry it (and, in a pass, the pass id), from
	// the context they are logged with.
	opts.Logger = logctx.Logger(opts.Logger)
	so := storeStack(opts.Registerer, opts.TracerProvider, opts.Logger, opts.RetryMaxElapsed)
	store, err := stack.Open(ctx, rootURI, opts.StorageOptions, so)
	if err != nil {
		return nil, err
	}
	ns, err := lifecycle.New(store, lifecycle.Options{
		DefaultTTL:    opts.DefaultTTL,
		SkewAllowance: opts.SkewAllowance,
		LeaseTTL:      opts.LeaseTTL,
		Owner:         opts.Owner,
		Logger:        opts.Logger,
		Now:           opts.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", store.URI(), err)
	}
	return &Namespace{ns: ns}, nil
}

// storeStack is the store stack of the public API: the CLI's, with the
// caller's registry and tracer (nil = none) and an adaptive pacer.
func storeStack(reg prometheus.Registerer, tp trace.TracerProvider, log *slog.Logger, retryMaxElapsed time.Duration) stack.Options {
	so := stack.Options{
		Pacer:           retry.NewPacer(0),
		Unpaced:         lifecycle.IsLockKey,
		RetryMaxElapsed: retryMaxElapsed,
		Logger:          log,
		TracerProvider:  tp,
	}
	if reg != nil {
		so.Metrics = metrics.NewShared(reg, metrics.Options{})
	}
	// One connection pool for every store of this stack (the roots of a
	// pass), reaper's own transport with or without metrics.
	so.Transport = metrics.NewRequestCounter(nil, so.Metrics)
	return so
}

// URI is the root URI, without secrets.
func (n *Namespace) URI() string { return n.ns.Store().URI() }

// Drop soft-deletes a table: writes its marker with ttl (the default when
// ttl <= 0). ErrNotFound when the table has no data, ErrAlreadyDeleted when a
// marker exists (it is left byte-identical).
func (n *Namespace) Drop(ctx context.Context, name string, ttl time.Duration) (Marker, error) {
	m, err := n.ns.Drop(ctx, name, ttl)
	return markerOf(m), exported(err)
}

// Revive removes a table's marker under the lifecycle lock; data untouched.
func (n *Namespace) Revive(ctx context.Context, name string) error {
	return exported(n.ns.Revive(ctx, name))
}

// Status returns the state of each named table (not_found for unknown
// names), or of every name in the root when none are given.
func (n *Namespace) Status(ctx context.Context, names ...string) ([]TableStatus, error) {
	st, err := n.ns.Status(ctx, names...)
	return statusesOf(st), exported(err)
}

// EachStatus is Status without the slice, for roots too big to hold: fn
// receives the state of each named table, or of every name in the root
// when none are given, sorted by name, as soon as the root's listing has
// passed it, with the store's time the states were judged at (TableStatus.Due
// takes it). It holds a window of the root, not all of it. An error from
// fn stops it and is returned; one that fails part way has handed fn the
// names before the failure.
func (n *Namespace) EachStatus(ctx context.Context, fn func(s TableStatus, now time.Time) error, names ...string) error {
	return exported(n.ns.EachStatus(ctx, names, func(s lifecycle.TableStatus, now time.Time) error {
		return fn(statusOf(s), now)
	}))
}

// List returns every name in the root with its state.
func (n *Namespace) List(ctx context.Context) ([]TableStatus, error) {
	st, err := n.ns.List(ctx)
	return statusesOf(st), exported(err)
}

// StoreNow reads the store's clock: the one that stamps the markers and by
// which tables become due (a TableStatus's Due takes it).
func (n *Namespace) StoreNow(ctx context.Context) (time.Time, error) {
	now, err := n.ns.Store().Now(ctx)
	return now, exported(err)
}

// ListPurgeable returns the soft-deleted tables due by the store's clock,
// oldest first. A non-zero now earlier than the store's clock judges at now
// instead: it can make the list stricter, never purge earlier.
func (n *Namespace) ListPurgeable(ctx context.Context, now time.Time) ([]TableStatus, error) {
	st, err := n.ns.ListPurgeable(ctx, now)
	return statusesOf(st), exported(err)
}

// PlanPurge classifies every marker by the store's clock, or at now when
// that is earlier (limited to names when given).
func (n *Namespace) PlanPurge(ctx context.Context, now time.Time, names ...string) (Plan, error) {
	p, err := n.ns.PlanPurge(ctx, now, names...)
	return planOf(p), exported(err)
}

// Purge reclaims one due soft-deleted table in the crash-safe order
// documented in docs/FORMAT.md. opts.Progress is called after every delete
// batch with the running totals. Cancelling ctx stops the purge before its
// next request; the error then wraps context.Canceled and the table stays
// soft_deleted or partially_purged, and a later Purge finishes it.
//
// Purge applies the CLI's TTL floor: a table whose marker's TTL is below
// opts.MinTTL (DefaultMinTTL, 1h, when zero) is kept with an error
// wrapping ErrShortTTL, nothing deleted, unless opts.AllowShortTTL. A
// purge that had committed is finished, and a marker with no data left
// removed, whatever its TTL.
func (n *Namespace) Purge(ctx context.Context, name string, opts PurgeOptions) (PurgeResult, error) {
	// Zero concurrency means the CLI's defaults (limits.delete_concurrency
	// and limits.max_delete_concurrency), not one batch at a time.
	d := config.Default().Limits
	opts.DeleteConcurrency = cmp.Or(opts.DeleteConcurrency, d.DeleteConcurrency)
	opts.MaxDeleteConcurrency = cmp.Or(opts.MaxDeleteConcurrency, d.MaxDeleteConcurrency)
	opts.MinTTL = cmp.Or(opts.MinTTL, lifecycle.DefaultMinTTL)
	res, err := n.ns.Purge(ctx, name, opts.internal())
	return purgeResultOf(res), exported(err)
}

// Hold puts a legal hold on a table: no purge deletes it, whatever its
// TTL, until Release. reason is recorded in the hold. An existing hold is
// kept as it is (ErrHeld); ErrNotFound when the name has neither data nor a
// marker.
func (n *Namespace) Hold(ctx context.Context, name, reason string) (Hold, error) {
	name, err := n.resolve(ctx, name)
	if err != nil {
		return Hold{}, err
	}
	h, err := n.ns.PlaceHold(ctx, name, reason)
	return holdOf(h), exported(err)
}

// Release lifts a table's legal hold (ErrNotFound when it has none).
func (n *Namespace) Release(ctx context.Context, name string) error {
	name, err := n.resolve(ctx, name)
	if err != nil {
		return err
	}
	return exported(n.ns.ReleaseHold(ctx, name))
}

// resolve names the table a caller gave by its object id by its directory
// (one listing of the root): every other name is its own.
func (n *Namespace) resolve(ctx context.Context, name string) (string, error) {
	dir, err := n.ns.ResolveObjectID(ctx, name)
	return dir, exported(err)
}

// PlaceHold is Hold.
//
// Deprecated: use Hold.
func (n *Namespace) PlaceHold(ctx context.Context, name, reason string) (Hold, error) {
	return n.Hold(ctx, name, reason)
}

// ReleaseHold is Release.
//
// Deprecated: use Release.
func (n *Namespace) ReleaseHold(ctx context.Context, name string) error {
	return n.Release(ctx, name)
}
