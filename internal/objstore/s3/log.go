package s3

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/smithy-go/logging"
)

// sdkLogger routes the AWS SDK's own log lines (IMDS fallbacks, "Response
// has no supported checksum") through slog.Default at their level, warn or
// debug, so they join the process's log stream instead of breaking it with
// plain text on stderr, and debug notes stay out of an info-level log.
type sdkLogger struct{}

var _ logging.Logger = sdkLogger{}

func (sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	slog.Default().Log(context.Background(), level, fmt.Sprintf(format, v...), "component", "aws-sdk")
}
