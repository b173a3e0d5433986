package objstore

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// This file owns what a backend says about itself. Each backend package
// exports one Backend value; the registry (package all) lists them, and
// whatever needs to know backends (root-URI parsing, help text, config
// validation and redaction, the retry layer's error classification, the
// HTTP transport) asks the descriptors, never a backend by name.

// Backend describes one storage backend.
type Backend struct {
	// Scheme names the backend: the Scheme of the Locations its forms
	// parse.
	Scheme Scheme
	// Forms are the root-URI forms the backend serves, in the order help
	// and errors list them; at least one.
	Forms []URIForm
	// Name is what the backend stores in, as help names it: "Google Cloud
	// Storage".
	Name string
	// Options are the storage option names the backend accepts; none means
	// a root of this scheme takes no storage options.
	Options []StorageOption
	// DefaultCredentials says, for help, where the backend's credentials
	// come from when no storage option gives them ("" without options).
	DefaultCredentials string
	// CheckOptions validates a set of storage options strictly (unknown
	// names, malformed values), without opening anything. Values of secret
	// options never appear in its errors. Nil accepts exactly the names in
	// Options.
	CheckOptions func(options map[string]string) error
	// Open opens the store at loc. It is called only with a loc of Scheme and
	// options that passed CheckOptions.
	Open func(ctx context.Context, loc Location, options map[string]string, env OpenEnv) (Store, error)
	// IsTransient reports whether an error of this backend is worth
	// retrying; nil means never (every error is final). Not-found and
	// precondition failures are not classified here: every backend maps
	// them to ErrNotFound and ErrPrecondition, which are always final.
	IsTransient func(error) bool
	// ClockResolution is the coarsest the store's clock and LastModified
	// read (S3: a second); zero means fine-grained. A lease must outlast a
	// few such ticks to be renewed in time (lock.MinTTL), so config refuses
	// a shorter defaults.lease_ttl for roots of this backend.
	ClockResolution time.Duration
	// IsThrottle picks, among transient errors, the store pushing back,
	// which slows the whole pass (see package retry); nil means none.
	IsThrottle func(error) bool
	// Operation names, in the backend's own API's words, the operation of
	// an HTTP request the backend sent (reaper_store_http_requests_total's
	// operation label); nil, for a backend without HTTP, names none.
	Operation func(req *http.Request) string
}

// StorageOption is one storage option name a backend accepts.
type StorageOption struct {
	Name string
	// Secret values never reach logs, errors or printed configuration.
	Secret bool
	// AliasOf is the option this name is another spelling of (object_store
	// accepts several); help lists the canonical names only.
	AliasOf string
}

// OpenEnv is what the caller lends a backend at Open, beyond the URI and
// the storage options.
type OpenEnv struct {
	// Transport, if set, carries every HTTP request of an HTTP backend (a
	// request counter, a fault injector); backends without HTTP ignore it.
	Transport http.RoundTripper
	// Logger, if set, receives the backend's debug lines (the resolved
	// region and endpoint, the SDK's own messages).
	Logger *slog.Logger
}

// OptionNames lists the backend's storage option names in declared order.
func (b Backend) OptionNames() []string { return OptionNames(b.Options) }

// OptionNames lists the names of opts in order: what a backend's option
// parser offers in an unknown-name error.
func OptionNames(opts []StorageOption) []string {
	names := make([]string, len(opts))
	for i, o := range opts {
		names[i] = o.Name
	}
	return names
}

// Opener adapts a backend's Open, which returns its own store type, to
// Backend.Open: a failed open is a nil Store, never a typed nil in the
// interface.
func Opener[S Store](open func(context.Context, Location, map[string]string, OpenEnv) (S, error)) func(context.Context, Location, map[string]string, OpenEnv) (Store, error) {
	return func(ctx context.Context, loc Location, options map[string]string, env OpenEnv) (Store, error) {
		s, err := open(ctx, loc, options, env)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
