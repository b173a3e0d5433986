package metrics

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Environment variables SetupTracing reads; the OTLP exporters read the
// rest of the standard OTEL_EXPORTER_OTLP_* set themselves.
const (
	EnvOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled        = "OTEL_SDK_DISABLED"
	EnvTracesExporter     = "OTEL_TRACES_EXPORTER"
	EnvOTLPProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvOTLPTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// DefaultFlushTimeout bounds the flush at shutdown: a collector that
// answers 503 or never answers must not hold a one-shot run for the
// exporter's own 30 s of retries. Spans not sent by then are dropped.
const DefaultFlushTimeout = 5 * time.Second

// TracingOptions configure SetupTracing.
type TracingOptions struct {
	ServiceName, Version string
	// Logger receives warnings about settings that are ignored; nil is
	// slog.Default().
	Logger *slog.Logger
	// Console is where OTEL_TRACES_EXPORTER=console writes (nil: stderr,
	// so stdout stays the command's output).
	Console io.Writer
	// FlushTimeout bounds shutdown (0: DefaultFlushTimeout).
	FlushTimeout time.Duration
}

// SetupTracing returns the tracer provider for the process, following the
// OpenTelemetry environment specification: OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none gives a no-op provider; the exporters are
// otlp (the default, when an OTLP endpoint is set; over http/protobuf or
// grpc, by OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL) and console (stderr).
// Values are case-insensitive; an unknown value is warned about and
// ignored, never fatal: tracing must not stop a purge. service.name and
// service.version are set (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// override them). Nothing is installed globally; shutdown flushes pending
// spans within FlushTimeout and must be called before exit.
func SetupTracing(ctx context.Context, o TracingOptions) (trace.TracerProvider, func(context.Context) error) {
	noShutdown := func(context.Context) error { return nil }
	log := cmp.Or(o.Logger, slog.Default())
	getenv := os.Getenv
	env := func(k string) string { return strings.ToLower(strings.TrimSpace(getenv(k))) }
	if env(EnvSDKDisabled) == "true" {
		return noop.NewTracerProvider(), noShutdown
	}
	var names []string
	for _, name := range strings.Split(env(EnvTracesExporter), ",") {
		switch name = strings.TrimSpace(name); name {
		case "none", "otlp", "console":
			names = append(names, name)
		case "":
		default:
			log.Warn("tracing: unknown exporter ignored; reaper supports otlp, console and none",
				"variable", EnvTracesExporter, "value", name)
		}
	}
	if len(names) == 0 {
		names = []string{"otlp"} // the specification's default
	}
	var exporters []sdktrace.SpanExporter
	for _, name := range names {
		switch name {
		case "none":
			return noop.NewTracerProvider(), noShutdown
		case "otlp":
			if getenv(EnvOTLPEndpoint) == "" && getenv(EnvOTLPTracesEndpoint) == "" {
				continue // nowhere to send them: tracing stays off
			}
			if exp := otlpExporter(ctx, env, log); exp != nil {
				exporters = append(exporters, exp)
			}
		case "console":
			exp, err := stdouttrace.New(stdouttrace.WithWriter(cmp.Or[io.Writer](o.Console, os.Stderr)))
			if err != nil {
				log.Warn("tracing: console exporter off", "error", err)
				continue
			}
			exporters = append(exporters, exp)
		}
	}
	if len(exporters) == 0 {
		return noop.NewTracerProvider(), noShutdown
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(o.ServiceName), semconv.ServiceVersion(o.Version)),
		resource.WithFromEnv(),
	)
	if err != nil {
		log.Warn("tracing: resource from the environment ignored", "error", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, exp := range exporters {
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	flush := cmp.Or(o.FlushTimeout, DefaultFlushTimeout)
	return tp, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, flush)
		defer cancel()
		return tp.Shutdown(ctx)
	}
}

// otlpExporter is the OTLP exporter of the configured protocol (traces'
// own variable first); nil, with a warning, when it cannot be made.
func otlpExporter(ctx context.Context, env func(string) string, log *slog.Logger) sdktrace.SpanExporter {
	variable := EnvOTLPTracesProtocol
	if env(variable) == "" {
		variable = EnvOTLPProtocol
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch p := env(variable); p {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		if p != "" && p != "http/protobuf" {
			log.Warn("tracing: unsupported OTLP protocol ignored; using http/protobuf (grpc is the other one supported)",
				"variable", variable, "value", p)
		}
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		log.Warn("tracing: OTLP exporter off", "error", err)
		return nil
	}
	return exp
}
