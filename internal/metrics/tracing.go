package metrics

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Environment variables SetupTracing reads; the OTLP exporter reads the
// rest of the standard OTEL_EXPORTER_OTLP_* set itself.
const (
	EnvOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled        = "OTEL_SDK_DISABLED"
	EnvTracesExporter     = "OTEL_TRACES_EXPORTER"
	EnvOTLPProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvOTLPTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// SetupTracing returns the tracer provider for the process. Without an OTLP
// endpoint in the environment, or with OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none, it is a no-op provider and shutdown does
// nothing. Otherwise spans go through a batch processor to an OTLP/HTTP
// exporter configured from the standard OTEL_EXPORTER_OTLP_* variables,
// with service.name and service.version set (OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override them). Nothing is installed globally;
// shutdown flushes pending spans and must be called before exit.
func SetupTracing(ctx context.Context, serviceName, version string) (trace.TracerProvider, func(context.Context) error, error) {
	noShutdown := func(context.Context) error { return nil }
	enabled, err := tracingEnabled()
	if err != nil {
		return nil, nil, err
	}
	if !enabled {
		return noop.NewTracerProvider(), noShutdown, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("create otlp trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(serviceName), semconv.ServiceVersion(version)),
		resource.WithFromEnv(),
	)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, nil, fmt.Errorf("build trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// tracingEnabled reads the switches of the OpenTelemetry environment
// specification that reaper honours.
func tracingEnabled() (bool, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv(EnvSDKDisabled)), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(os.Getenv(EnvTracesExporter)); exp {
	case "none":
		return false, nil
	case "", "otlp":
	default:
		return false, fmt.Errorf("%s=%q: reaper supports otlp or none", EnvTracesExporter, exp)
	}
	if os.Getenv(EnvOTLPEndpoint) == "" && os.Getenv(EnvOTLPTracesEndpoint) == "" {
		return false, nil
	}
	env := EnvOTLPTracesProtocol
	if os.Getenv(env) == "" {
		env = EnvOTLPProtocol
	}
	if p := strings.TrimSpace(os.Getenv(env)); p != "" && p != "http/protobuf" {
		return false, fmt.Errorf("%s=%q: reaper exports traces over http/protobuf only", env, p)
	}
	return true, nil
}
