package s3

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
	"github.com/stretchr/testify/require"
)

// The SDK's lines go through slog at their level: a debug note is not in
// an info-level log, a warning is, as a structured line (before, both were
// plain "SDK <time> DEBUG ..." text on stderr, breaking the JSON stream).
func TestSDKLinesGoThroughSlog(t *testing.T) {
	var buf strings.Builder
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	defer slog.SetDefault(old)

	sdkLogger{}.Logf(logging.Debug, "Response has no supported checksum. Not validating response payload.")
	require.Empty(t, buf.String())
	sdkLogger{}.Logf(logging.Warn, "falling back to IMDSv1: %s", "403")
	require.Contains(t, buf.String(), `"level":"WARN","msg":"falling back to IMDSv1: 403","component":"aws-sdk"`)
}
