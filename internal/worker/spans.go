package worker

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lance-reaper/reaper/internal/outcome"
)

// Span attributes carry the outcome vocabulary, and a span's status says
// what a trace viewer should show: Jaeger and Tempo show a span with status
// UNSET as fine, whatever events it holds.

// endTableSpan records a table's decision on its span: action, reason,
// and status ERROR for a failed table.
func endTableSpan(span trace.Span, d Decision) {
	span.SetAttributes(attribute.String("reaper.action", string(d.Action)), attribute.String("reaper.reason", string(d.Reason)))
	if d.Action == outcome.Failed {
		if d.Err != nil {
			span.RecordError(d.Err)
		}
		span.SetStatus(codes.Error, string(d.Reason)+": "+d.Detail)
	}
}

// endRootSpan records a root's result: error (could not be opened or
// planned), refused (a rail's reason), partial (a table failed) or ok.
func endRootSpan(span trace.Span, rr *RootReport) {
	failed, purged := 0, 0
	for _, d := range rr.Decisions {
		if d.Action == outcome.Failed {
			failed++
		}
	}
	for range rr.purged() {
		purged++
	}
	result := "ok"
	switch {
	case rr.Err != nil:
		result = string(outcome.ReasonRootError)
		span.RecordError(rr.Err)
		span.SetStatus(codes.Error, rr.Err.Error())
	case rr.Refused != "":
		result = string(outcome.ResultRefused)
		span.SetAttributes(attribute.String("reaper.reason", string(rr.Refused)))
	case failed > 0:
		result = string(outcome.ResultPartial)
		span.SetStatus(codes.Error, "tables failed")
	}
	span.SetAttributes(attribute.String("reaper.result", result),
		attribute.Int("reaper.tables_failed", failed), attribute.Int("reaper.tables_purged", purged))
}

// endPassSpan records the pass's result; partial and failed passes are
// errors, refused and interrupted ones are not (nothing broke).
func endPassSpan(span trace.Span, rep *Report) {
	res := rep.Result()
	t := rep.Totals()
	span.SetAttributes(attribute.String("reaper.result", string(res)), attribute.Int("reaper.roots", len(rep.Roots)),
		attribute.Int("reaper.tables_purged", t.Purged), attribute.Int("reaper.tables_failed", t.Failed),
		attribute.Int64("reaper.objects", t.Objects), attribute.Int64("reaper.bytes", t.Bytes))
	switch res {
	case outcome.ResultFailed, outcome.ResultPartial:
		if rep.Err != nil {
			span.RecordError(rep.Err)
		}
		span.SetStatus(codes.Error, "pass "+string(res))
	}
}
