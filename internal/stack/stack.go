// Package stack opens a root's store the one way every caller uses: the
// public API (reaper.Open), the worker, discovery and the audit ledger. It
// composes, in this order and only here:
//
//  1. the backend, from the registry (package all), with the caller's HTTP
//     transport and the SDK's own retries off;
//  2. Options.WrapBackend, a test seam (a store clock, a fault injector);
//  3. retries and the shared pacer (package retry), classifying errors with
//     the backend's own descriptor;
//  4. metrics, then tracing (package metrics), outermost, so each call the
//     caller makes is counted and traced once, whatever it cost in retries.
//
// It is its own package rather than part of package all so that the
// registry stays the bare list of backends: config validates storage
// options through it without linking retries, Prometheus or OpenTelemetry.
package stack

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/retry"
)

// Options choose the layers. The zero value is a retrying store with no
// pacing, metrics or tracing.
type Options struct {
	// Registry holds the backends; nil means all.Default().
	Registry *all.Registry
	// Transport carries every HTTP request of an HTTP backend (a
	// metrics.RequestCounter); nil means a new objstore.NewHTTPTransport
	// for this store: never the SDKs' defaults, which connect for 30 s and
	// carry no wire fence.
	Transport http.RoundTripper
	// WrapBackend, if set, wraps the bare backend before retries: tests move
	// the store's clock or inject faults with it. Callers that reach the
	// stack through the public API set it with WithWrapBackend instead.
	WrapBackend func(objstore.Store) objstore.Store
	// Pacer slows every store sharing it while any is throttled; share one
	// per pass. Nil means no pacing.
	Pacer *retry.Pacer
	// Unpaced picks the keys that bypass the pacer (lifecycle.IsLockKey).
	Unpaced func(key string) bool
	// RetryMaxElapsed caps how long one call keeps retrying; zero means
	// retry.DefaultMaxElapsed.
	RetryMaxElapsed time.Duration
	// Logger receives a line per retry (retryLevel); nil means slog.Default().
	Logger *slog.Logger
	// Metrics counts every call; nil means none.
	Metrics *metrics.Metrics
	// TracerProvider traces every call; nil means none.
	TracerProvider trace.TracerProvider
}

// Open opens the store at uri with its storage options and wraps it in the
// layers o asks for. The URI and the options are checked before anything
// is sent.
func Open(ctx context.Context, uri string, storageOptions map[string]string, o Options) (objstore.Store, error) {
	reg := o.Registry
	if reg == nil {
		reg = all.Default()
	}
	s, b, err := reg.OpenBackend(ctx, uri, storageOptions, objstore.OpenEnv{Transport: transport(reg, uri, o.Transport), Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	if wrap := o.WrapBackend; wrap != nil {
		s = wrap(s)
	} else if wrap, ok := ctx.Value(wrapKey{}).(func(objstore.Store) objstore.Store); ok {
		s = wrap(s)
	}
	s = retry.Wrap(s, retryOptions(uri, b, o))
	s = metrics.WrapStore(s, o.Metrics)
	return metrics.WrapStoreTracing(s, o.TracerProvider), nil
}

// transport is t, labelled with the backend of uri when t is a request
// counter: the backend names the operations of its own requests.
func transport(reg *all.Registry, uri string, t http.RoundTripper) http.RoundTripper {
	if t == nil {
		// Not the SDKs' defaults: their 30 s connects, and no wire fence
		// (objstore.NewHTTPTransport) under a fenced delete.
		return objstore.NewHTTPTransport()
	}
	rc, ok := t.(*metrics.RequestCounter)
	if !ok {
		return t
	}
	if _, b, err := reg.Resolve(uri); err == nil {
		return rc.ForBackend(string(b.Scheme), b.Operation)
	}
	return t
}

// retryOptions classifies with the backend's descriptor: a backend without
// a classifier has no transient errors, and one without a throttle
// classifier never slows the pacer.
func retryOptions(uri string, b objstore.Backend, o Options) retry.Options {
	transient, throttle := b.IsTransient, b.IsThrottle
	if transient == nil {
		transient = retry.NeverTransient
	}
	if throttle == nil {
		throttle = retry.NeverTransient
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	return retry.Options{
		MaxElapsed:  o.RetryMaxElapsed,
		IsTransient: transient,
		IsThrottle:  throttle,
		Pacer:       o.Pacer,
		Unpaced:     o.Unpaced,
		OnRetry: func(ctx context.Context, op, key string, attempt int, err error, wait time.Duration) {
			log.Log(ctx, retryLevel(err), "store request retried", "root", uri, "op", op, "key", key, "attempt", attempt, "wait", wait.String(), "error", err)
		},
	}
}

// retryLevel is the level of a retry's log line: a warning, except for a
// failure the backend also calls a misconfiguration (an endpoint that
// refuses connections or does not resolve). Those are retried for
// retry.DefaultMisconfiguredMaxElapsed and, when they last, end in one error
// naming the root and what to set; a warning per attempt before it said the
// same thing eight times over.
func retryLevel(err error) slog.Level {
	if errors.Is(err, objstore.ErrMisconfigured) {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

type wrapKey struct{}

// WithWrapBackend returns ctx carrying wrap, which Open applies like
// Options.WrapBackend when that is unset. It exists for reaper's own tests
// of the public API, whose Options cannot name internal types; outside
// modules cannot import this package.
func WithWrapBackend(ctx context.Context, wrap func(objstore.Store) objstore.Store) context.Context {
	if wrap == nil {
		return ctx
	}
	return context.WithValue(ctx, wrapKey{}, wrap)
}
