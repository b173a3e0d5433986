// Package logctx carries log attributes in a context, so every line logged
// about one piece of work names it (its table, its pass) without each
// package below the worker threading a logger through: the worker and the
// lifecycle add attributes to the context they pass down, and the handler
// the CLI and the public API wrap their logger in adds them to every record
// logged with that context (slog's *Context methods and Log).
//
// It is a leaf package: it imports nothing of reaper's, so the store's
// wrappers and the lease may use it.
package logctx

import (
	"context"
	"log/slog"
	"slices"
)

type attrsKey struct{}

// With returns ctx carrying args (slog's key-value pairs or slog.Attr
// values) after the attributes ctx already carries. A key given again
// replaces its earlier value, so a line never names one concept twice.
func With(ctx context.Context, args ...any) context.Context {
	var r slog.Record
	r.Add(args...)
	add := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		add = slices.DeleteFunc(add, func(b slog.Attr) bool { return b.Key == a.Key })
		add = append(add, a)
		return true
	})
	if len(add) == 0 {
		return ctx
	}
	old := Attrs(ctx)
	merged := make([]slog.Attr, 0, len(old)+len(add))
	for _, a := range old {
		if !slices.ContainsFunc(add, func(b slog.Attr) bool { return b.Key == a.Key }) {
			merged = append(merged, a)
		}
	}
	merged = append(merged, add...)
	return context.WithValue(ctx, attrsKey{}, merged)
}

// Attrs returns the attributes ctx carries, oldest first. The slice is
// shared: do not modify it.
func Attrs(ctx context.Context) []slog.Attr {
	if ctx == nil {
		return nil
	}
	as, _ := ctx.Value(attrsKey{}).([]slog.Attr)
	return as
}
