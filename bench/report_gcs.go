package main

import (
	"fmt"
	"strings"
)

// gcsDeleteBatch is how many keys one GCS delete request carries: the Go
// client has no batch call, so every key is its own DELETE (32 in flight).
const gcsDeleteBatch = 1

// gcsTargets holds the GCS purges to the floor rule S3's are held to:
// ceil(N/1000) listings + ceil(N/batch) deletes + 8, with a batch of one
// key.
func (r *report) gcsTargets() []target {
	var ts []target
	for _, scen := range r.scenarios("gcs/") {
		rs := r.find(scen, "reaper")
		n := rs.Objects
		pages, deletes := int64(ceilDiv(n, 1000)), int64(ceilDiv(n, gcsDeleteBatch))
		bound := gcsFloor(n)
		got, ops := rs.maxRequests()
		table := got - perRoot
		ts = append(ts, target{
			Name: fmt.Sprintf("GCS requests per purged table of %d objects (emulator)", n),
			Want: fmt.Sprintf("<= %d listings + %d deletes + 8 = %d", pages, deletes, bound),
			Got:  fmt.Sprintf("%d (whole command %d minus %d per root: %s)", table, got, perRoot, fmtOps(ops)),
			Pass: table <= bound, Why: whyRequests,
		})
	}
	return ts
}

// gcsFloor is the request bound of one purged GCS table of n objects.
func gcsFloor(n int) int64 { return int64(ceilDiv(n, 1000) + ceilDiv(n, gcsDeleteBatch) + 8) }

// gcsSection writes the GCS purges, and reaper's S3 and GCS figures side by
// side.
func (r *report) gcsSection(b *strings.Builder) {
	scens := r.scenarios("gcs/")
	if len(scens) == 0 {
		return
	}
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("\n## Google Cloud Storage purge: one table, on fake-gcs-server\n\n")
	w("**Emulator figures are not cloud figures**: fake-gcs-server (memory backend) on loopback, on the same cores as reaper, behind a counting proxy; real GCS adds a network round trip per request and its own rate limits. No peer runs (gsutil and rclone's GCS remote are not installed here). The JSON API client has no batch delete, so reaper deletes each key with its own request, 32 in flight (docs/BACKENDS.md). Objects are uploaded through the API, then the marker (dated a minute before the uploads, TTL 1 ms). Requests: counted by the proxy (median run).\n\n")
	for _, scen := range scens {
		r.table(b, scen)
	}
	w("### reaper on S3 and on GCS, side by side\n\n| objects | S3 median | S3 objects/s | S3 requests | GCS median | GCS objects/s | GCS requests |\n|---|---|---|---|---|---|---|\n")
	for _, scen := range scens {
		g := r.find(scen, "reaper")
		row := fmt.Sprintf("| %d | ", g.Objects)
		if s := r.find("s3/"+strings.TrimPrefix(scen, "gcs/"), "reaper"); s != nil {
			row += fmt.Sprintf("%s | %.0f | %d | ", fmtDur(s.median()), s.rate(), sum(s.requests()))
		} else {
			row += "— | — | — | "
		}
		w("%s%s | %.0f | %d |\n", row, fmtDur(g.median()), g.rate(), sum(g.requests()))
	}
	w("\n")
}
