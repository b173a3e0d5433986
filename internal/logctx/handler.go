package logctx

import (
	"context"
	"log/slog"
)

// Handler wraps h so that every record logged with a context gets the
// context's attributes (see With). They go before the record's own, inside
// any group opened with WithGroup. An attribute whose key the record or the
// logger (Logger.With at the same group level) already has is left out: the
// explicit value wins and no line carries a key twice. Wrapping twice is
// the same as wrapping once.
func Handler(h slog.Handler) slog.Handler {
	if _, ok := h.(*handler); ok {
		return h
	}
	return &handler{inner: h}
}

// Logger returns l with its handler wrapped by Handler; nil means
// slog.Default().
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	if _, ok := l.Handler().(*handler); ok {
		return l
	}
	return slog.New(Handler(l.Handler()))
}

type handler struct {
	inner slog.Handler
	// keys are those Logger.With set at the innermost group level; they
	// are never modified, only copied.
	keys map[string]bool
}

var _ slog.Handler = (*handler)(nil)

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	extra := Attrs(ctx)
	if len(extra) == 0 {
		return h.inner.Handle(ctx, r)
	}
	own := make(map[string]bool, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		addKeys(own, a)
		return true
	})
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	for _, a := range extra {
		if !own[a.Key] && !h.keys[a.Key] {
			out.AddAttrs(a)
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	keys := make(map[string]bool, len(h.keys)+len(as))
	for k := range h.keys {
		keys[k] = true
	}
	for _, a := range as {
		addKeys(keys, a)
	}
	return &handler{inner: h.inner.WithAttrs(as), keys: keys}
}

// WithGroup opens a level where no key is set yet.
func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &handler{inner: h.inner.WithGroup(name)}
}

// addKeys records a's key, or the keys of a group without a name, which
// slog inlines.
func addKeys(keys map[string]bool, a slog.Attr) {
	if a.Key == "" && a.Value.Kind() == slog.KindGroup {
		for _, m := range a.Value.Group() {
			addKeys(keys, m)
		}
		return
	}
	keys[a.Key] = true
}
