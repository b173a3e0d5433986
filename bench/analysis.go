package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// guardReads is how many reads the safety protocol's guard sends before
// the commit, before every batch of deletes and before the marker delete
// (docs/PROTOCOL.md, "The guard"): one listing of the table's control
// objects (lease, hold in both forms, marker, commit), and PAUSE (the
// switch and the _reaper entry it could hide behind).
const guardReads = 3

// fixedRequests is a purged table's requests outside the walk, the deletes
// and the guard: the plan's marker read, the lease PUT, the marker, commit
// and hold reads (object and folder) under the lease, the commit PUT, the
// verify listing, the HEAD of a retention record, and the commit, marker
// and lease DELETEs.
const fixedRequests = 12

// s3Predicted is the requests the guard's formula predicts for one purged
// S3 table of n objects in batches of 1000, renewals aside.
func s3Predicted(n int) int {
	p := ceilDiv(n, 1000)
	return 2*p + guardReads*(p+2) + fixedRequests
}

// analysis explains, with this run's numbers, why a target is missed or
// what it took to meet it, and what would close a miss. Every figure in it
// is computed from the report, so a new run cannot leave it describing an
// old one.
func (r *report) analysis() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("\n## Analysis: why a target is missed, and what would close it\n\n")
	r.requestAnalysis(w)
	r.floorAnalysis(w)
	r.localAnalysis(w)
	r.rssAnalysis(w)
	w("**Scan cost.** status reads each marker once (GetObject per soft-deleted table) after one paged listing. A discovered root used to cost one more listing per pass (the check that the child is a database root); the plan now uses that check's listing and the PAUSE read comes first (it also dates the store's clock), so a discovered root costs %d requests with nothing due, as a configured one does (internal/worker/discovery_cost_test.go counts them on S3 and local).\n", perRoot)
	return b.String()
}

func (r *report) requestAnalysis(w func(string, ...any)) {
	w("**Requests per table.** The +8 of this bound predates the safety protocol (docs/PROTOCOL.md), which re-checks, before the commit, before every batch of deletes and before the marker delete, everything that can stop a purge: the lease read back from the store, the legal hold, the root's PAUSE switch, the marker and the purge commit. The table's are one listing of its control objects (`<name>.`), PAUSE two reads; the %d go out at once, so they cost one round trip, not %d. A table of N objects in batches of B therefore costs ceil(N/1000) walk listings + ceil(N/B) deletes + %d x (ceil(N/B) + 2) guard reads + about %d fixed requests, plus one conditional renewal PUT per third of the lease.",
		guardReads, guardReads, guardReads, fixedRequests)
	var rows []string
	missed := false
	for _, t := range r.targets() {
		missed = missed || (!t.Pass && t.Why == whyRequests)
	}
	for _, scen := range r.scenarios("s3/") {
		rs := r.find(scen, "reaper")
		got, _ := rs.maxRequests()
		p := ceilDiv(rs.Objects, 1000)
		rows = append(rows, fmt.Sprintf("%d objects on S3: %d predicted (%d + %d + %d x %d + %d), %d measured, against a bound of %d",
			rs.Objects, s3Predicted(rs.Objects), p, p, guardReads, p+2, fixedRequests, got-perRoot, s3Floor(rs.Objects)))
	}
	for _, scen := range r.scenarios("gcs/") {
		rs := r.find(scen, "reaper")
		got, _ := rs.maxRequests()
		rows = append(rows, fmt.Sprintf("%d objects on GCS (one DELETE a key, no batch call): %d measured against %d, the excess being the guard's reads", rs.Objects, got-perRoot, gcsFloor(rs.Objects)))
	}
	for _, scen := range r.scenarios("azure/") {
		rs := r.find(scen, "reaper")
		got, _ := rs.maxRequests()
		rows = append(rows, fmt.Sprintf("%d objects on Azure (Blob Batch of %d): %d measured against %d", rs.Objects, azBatch, got-perRoot, azureFloor(rs.Objects)))
	}
	if len(rows) > 0 {
		w(" In this run: %s.", strings.Join(rows, "; "))
	}
	if !missed {
		w(" Every request bound is met in this run.\n\n")
	} else {
		w(" A miss by design: the guard is what makes a hold, a PAUSE, a revive or a lost lease stop a purge before its next batch (PROTOCOL.md P1, P3, A3) rather than at its end. What would close more of it: reading PAUSE from a cache (every N seconds or K batches) would make the guard 1 request a batch instead of %d, and guarding every k batches would meet the bound; both would let a batch pass a PAUSE, a hold or a revive (P3), and neither is done. In time the guard is cheap: see the floor comparison below.\n\n", guardReads)
	}

	// Renewals, from the floor's speed on the largest S3 table.
	ttl := lifecycle.DefaultLeaseTTL
	var fl *series
	for _, scen := range r.scenarios("s3/") {
		if s := r.find(scen, floorName); s != nil && (fl == nil || s.Objects > fl.Objects) {
			fl = s
		}
	}
	if fl == nil {
		return
	}
	const big = 1_000_000
	d := time.Duration(float64(big) / fl.rate() * float64(time.Second))
	renewals := int(d / (ttl / 3))
	total := s3Predicted(big) + renewals
	need := (3 * d).Round(time.Minute)
	if need < 3*d {
		need += time.Minute
	}
	w("**Lease renewals.** The default lease is %s, renewed every third of it. At the floor's speed here (%.0f objects/s at %d objects) a purge of %d objects takes about %s and needs %d renewals: conditional PUTs, %.2f%% of the ~%d requests such a purge sends. Needing none below %d objects takes a lease of at least %s (`defaults.lease_ttl`), and a holder that dies would then block its table, and any revive of it, for that long plus the skew allowance instead of %s. Not done: the long block is a cost an operator feels, the renewals are not. An operator who wants it sets `defaults.lease_ttl`.\n\n",
		ttl, fl.rate(), fl.Objects, big, d.Round(time.Second), renewals, 100*float64(renewals)/float64(total), total, big, need, ttl)
}

func (r *report) floorAnalysis(w func(string, ...any)) {
	var rows []string
	met, logged := true, false
	for _, scen := range r.scenarios("s3/") {
		rs, fl := r.find(scen, "reaper"), r.find(scen, floorName)
		if fl == nil {
			continue
		}
		ratio := rs.median().Seconds() / fl.median().Seconds()
		met = met && ratio <= floorMax
		row := fmt.Sprintf("%.2fx the floor at %d objects", ratio, rs.Objects)
		if c := rs.deleteConcurrency(); len(c) > 0 {
			logged = true
			row += fmt.Sprintf(", the limit ending at %s", strings.Join(c, ", "))
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return
	}
	limitNote := ""
	if logged {
		limitNote = "; the limit is where each run's `purge finished` log line says the adaptive delete concurrency ended"
	}
	w("**Throughput on S3 vs the floor.** The floor lists the prefix once and sends its DeleteObjects batches 16 at a time, with nothing else. reaper adds, per table: the plan (root listing, PAUSE, marker), the lease, the commit, the guard before each batch, the manifests' batch alone before the rest (a crash never leaves a table whose manifests point at deleted files), the verify listing and the marker last. Its delete concurrency is adaptive (internal/lifecycle/adaptive.go): it starts at limits.delete_concurrency (4) and measures batches answered per second over a window of as many answered batches as the limit, skipping those sent under the previous limit; it doubles the limit, up to limits.max_delete_concurrency (16), while that rate rises by more than 10%%, holds it within ±10%%, steps back on a fall of more than 10%%, and halves it on a 503 SlowDown or 429. Its HTTP pool keeps 128 idle connections per host (with Go's default of two, nearly every request of 16 in flight would dial anew, a TLS handshake each on AWS). This run (medians of %d alternating repetitions%s): %s. At 10,000 objects the fixed costs (about 20 sequential round trips, and the ramp from 4 in flight) weigh most; at 100,000 they amortise. %s\n\n",
		r.Config.Reps, limitNote, strings.Join(rows, "; "), floorTail(met))
}

// floorTail says what a miss of the floor target would take to close.
func floorTail(met bool) string {
	if met {
		return "The target is met with the defaults."
	}
	return fmt.Sprintf("Above %.2fx: the gap is the fixed round trips and the ramp. What would close it: sending the guard's reads alongside the previous batch instead of before the next one (they would no longer sit on the critical path), or a higher starting limits.delete_concurrency where the store is known to take it.", floorMax)
}

func (r *report) localAnalysis(w func(string, ...any)) {
	var rows []string
	met := true
	for _, scen := range r.scenarios("local/") {
		rs, rm := r.find(scen, "reaper"), r.find(scen, "rm -rf")
		if rm == nil {
			continue
		}
		met = met && rs.median().Seconds()/rm.median().Seconds() <= localTarget
		rows = append(rows, fmt.Sprintf("%.2fx rm -rf at %d files (%s against %s, %d runs each)", rs.median().Seconds()/rm.median().Seconds(), rs.Objects, fmtDur(rs.median()), fmtDur(rm.median()), len(rs.Samples)))
	}
	if len(rows) == 0 {
		return
	}
	tail := "The target is met without a parallel walk of the table's directories or unlinking different directories in parallel; neither is done (local roots keep limits.delete_concurrency, 4, as a disk gives no pushback signal to grow on)."
	if !met {
		tail = "What would close it: a parallel walk of the table's directories and unlinking different directories (data/, _deletions/, _indices/*) in parallel; neither is done (local roots keep limits.delete_concurrency, 4, as a disk gives no pushback signal to grow on)."
	}
	w("**Local purge vs rm -rf.** reaper stats every file once (the identity fence needs each modification time), spills the key list beyond 10,000 keys to a temporary file so memory stays flat, and takes a shared per-directory lock; rm -rf (GNU, unlinking from one thread) does none of that, but it fsyncs nothing either, while reaper fsyncs each touched directory once per phase (the manifests, then the rest: the crash-safe order), not once per batch. This run: %s. %s\n\n",
		strings.Join(rows, "; "), tail)
}

func (r *report) rssAnalysis(w func(string, ...any)) {
	rs := r.find(r.RSSScenario, "reaper")
	if rs == nil {
		return
	}
	w("**Peak RSS.** Measured by polling /proc/<pid>/status VmHWM (the child's rusage Maxrss would include the harness's own RSS, folded in at fork). Purging %d local files peaked at %s, of which %s anonymous: most of the rest are pages of reaper's own static executable that the kernel maps in (RssFile: the AWS, Google Cloud Storage and Azure SDKs, gRPC, Prometheus and OpenTelemetry linked in). The purge itself adds little: the local backend's Walk streams a large directory 1,024 entries at a time in directory order, and the purge spills the keys to a temporary file.\n\n",
		rs.Objects, mib(rs.maxRSS()), mib(rs.maxAnon()))
}

// deleteConcurrency is where each run's adaptive limit ended, sorted, with
// repeats counted ("8 in 1 run, 16 in 2 runs").
func (s *series) deleteConcurrency() []string {
	var cs []int
	for _, x := range s.Samples {
		if x.DeleteConc > 0 {
			cs = append(cs, x.DeleteConc)
		}
	}
	slices.Sort(cs)
	var out []string
	for i, c := range cs {
		if i == 0 || c != cs[i-1] {
			n := 0
			for _, d := range cs {
				if d == c {
					n++
				}
			}
			out = append(out, fmt.Sprintf("%d in %d run%s", c, n, plural(n)))
		}
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ceilDiv is a/b rounded up, for positive b.
func ceilDiv(a, b int) int { return (a + b - 1) / b }
