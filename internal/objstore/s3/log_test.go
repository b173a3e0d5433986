package s3

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
	"github.com/stretchr/testify/require"
)

// The SDK's lines go through slog as structured debug lines (before, they
// were plain "SDK <time> WARN ..." text on stderr, breaking the JSON stream
// and preceding reaper's own one-line error): not in an info-level log, in
// a debug-level one.
func TestSDKLinesGoThroughSlog(t *testing.T) {
	var info, debug strings.Builder
	for _, l := range []SDKLogger{
		{slog.New(slog.NewJSONHandler(&info, &slog.HandlerOptions{Level: slog.LevelInfo}))},
		{slog.New(slog.NewJSONHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}))},
	} {
		l.Logf(logging.Debug, "Response has no supported checksum. Not validating response payload.")
		l.Logf(logging.Warn, "falling back to IMDSv1: %s", "403")
	}
	require.Empty(t, info.String())
	require.Contains(t, debug.String(), `"level":"DEBUG","msg":"aws sdk: falling back to IMDSv1: 403","component":"aws-sdk"`)
}
