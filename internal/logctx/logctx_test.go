package logctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/logctx"
)

// logged runs log against a JSON logger wrapped by logctx.Handler and
// returns the line's raw text.
func logged(t *testing.T, log func(*slog.Logger)) string {
	t.Helper()
	var buf bytes.Buffer
	log(slog.New(logctx.Handler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 1, "one line logged: %q", buf.String())
	return lines[0]
}

// decode parses a JSON line, failing on a key given twice (encoding/json
// would keep the last silently).
func decode(t *testing.T, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	out := map[string]any{}
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		key := k.(string)
		require.NotContains(t, out, key, "key %q twice in %s", key, line)
		var v any
		require.NoError(t, dec.Decode(&v))
		out[key] = v
	}
	return out
}

func TestHandler(t *testing.T) {
	t.Parallel()
	pass := logctx.With(context.Background(), "pass_id", "p1")
	table := logctx.With(pass, "table", "t1")
	for _, tc := range []struct {
		name string
		log  func(*slog.Logger)
		want map[string]any // attributes besides time, level and msg
	}{
		{"no context attributes", func(l *slog.Logger) { l.InfoContext(context.Background(), "m", "a", 1) },
			map[string]any{"a": 1.0}},
		{"context attributes", func(l *slog.Logger) { l.InfoContext(pass, "m", "a", 1) },
			map[string]any{"pass_id": "p1", "a": 1.0}},
		{"nested With appends", func(l *slog.Logger) { l.WarnContext(table, "m") },
			map[string]any{"pass_id": "p1", "table": "t1"}},
		{"a key given again replaces", func(l *slog.Logger) { l.InfoContext(logctx.With(table, "table", "t2"), "m") },
			map[string]any{"pass_id": "p1", "table": "t2"}},
		{"Log with a context", func(l *slog.Logger) { l.Log(table, slog.LevelError, "m") },
			map[string]any{"pass_id": "p1", "table": "t1"}},
		{"calls without a context get nothing", func(l *slog.Logger) { l.Info("m") },
			map[string]any{}},
		{"the record's own key wins", func(l *slog.Logger) { l.InfoContext(table, "m", "table", "own") },
			map[string]any{"pass_id": "p1", "table": "own"}},
		{"Logger.With's key wins", func(l *slog.Logger) { l.With("table", "with").InfoContext(table, "m") },
			map[string]any{"pass_id": "p1", "table": "with"}},
		{"an inlined group's key wins", func(l *slog.Logger) { l.InfoContext(table, "m", slog.Group("", "table", "g")) },
			map[string]any{"pass_id": "p1", "table": "g"}},
		{"WithAttrs then WithGroup", func(l *slog.Logger) { l.With("a", 1).WithGroup("g").InfoContext(pass, "m", "b", 2) },
			map[string]any{"a": 1.0, "g": map[string]any{"pass_id": "p1", "b": 2.0}}},
		{"a key set outside the group does not hide it inside", func(l *slog.Logger) {
			l.With("pass_id", "outer").WithGroup("g").InfoContext(pass, "m")
		}, map[string]any{"pass_id": "outer", "g": map[string]any{"pass_id": "p1"}}},
		{"With of nothing", func(l *slog.Logger) { l.InfoContext(logctx.With(pass), "m") },
			map[string]any{"pass_id": "p1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := decode(t, logged(t, tc.log))
			for _, k := range []string{"time", "level", "msg"} {
				require.Contains(t, got, k)
				delete(got, k)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestHandlerKeepsOrderAndLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := slog.New(logctx.Handler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx := logctx.With(context.Background(), "pass_id", "p1", "table", "t1")
	l.InfoContext(ctx, "below the level")
	require.Empty(t, buf.String(), "a disabled level logs nothing")
	l.WarnContext(ctx, "m", "error", "boom")
	line := strings.TrimSpace(buf.String())
	require.Less(t, strings.Index(line, `"pass_id"`), strings.Index(line, `"table"`), line)
	require.Less(t, strings.Index(line, `"table"`), strings.Index(line, `"error"`), line)
}

func TestHandlerWrapsOnce(t *testing.T) {
	t.Parallel()
	h := logctx.Handler(slog.DiscardHandler)
	require.Same(t, h, logctx.Handler(h))
	l := logctx.Logger(slog.New(h))
	require.Same(t, h, l.Handler())
	require.NotNil(t, logctx.Logger(nil))
}

func TestWithDoesNotChangeItsParent(t *testing.T) {
	t.Parallel()
	parent := logctx.With(context.Background(), "a", 1, "b", 2)
	_ = logctx.With(parent, "a", 3)
	_ = logctx.With(parent, "c", 4)
	var keys []string
	for _, a := range logctx.Attrs(parent) {
		keys = append(keys, a.String())
	}
	require.Equal(t, []string{"a=1", "b=2"}, keys)
	require.Empty(t, logctx.Attrs(context.Background()))
}
