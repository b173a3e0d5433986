package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/retention"
)

// This file owns the retention columns of `reaper status --versions`: for
// each live table, how many versions it has and how many versions and
// bytes `reaper retain` with the same policy would remove. They cost a
// listing of each live table and a read of each of its manifests, so they
// are asked for, never shown by default.

// statusOlderThan is --older-than of status --versions when neither it
// nor --before is given: LanceDB's optimize() default.
const statusOlderThan = 7 * 24 * time.Hour

// versionColumns writes the retention cells of the status table and sums
// them for its last line.
type versionColumns struct {
	// policy says which retain the columns stand for, and whether status
	// chose it (defaulted); refusal, when set, why retain would refuse it.
	policy                                 string
	defaulted                              bool
	refusal                                string
	tables, unsupported, failed, removable int
	bytes, size                            int64
}

// versionHeaders are the retention columns, between PURGE_AFTER and NOTE.
var versionHeaders = []string{"VERSIONS", "SIZE", "REMOVABLE", "RECLAIMABLE"}

// cells are a row's retention cells and its note with the plan's reason
// when the table could not be planned.
func (c *versionColumns) cells(sum *reaper.RetentionSummary, note string) ([]string, string) {
	if sum == nil {
		return []string{"-", "-", "-", "-"}, note
	}
	versions, size := "-", "-"
	if sum.Versions > 0 {
		versions, size = strconv.Itoa(sum.Versions), humanBytes(sum.TableBytes)
	}
	why := ""
	switch sum.Result {
	case reaper.RetentionUnsupported:
		c.unsupported++
		why = "retention unsupported: " + sum.Reason + "; retain never deletes anything of it"
	case reaper.RetentionFailed:
		c.failed++
		why = "versions not read: " + sum.Reason
	default:
		c.tables++
		c.removable += sum.Removed
		c.bytes += sum.Bytes
		c.size += sum.TableBytes
		return []string{versions, size, strconv.Itoa(sum.Removed), humanBytes(sum.Bytes) + share(sum.Bytes, sum.TableBytes)}, note
	}
	if note == "-" {
		return []string{versions, size, "-", "-"}, why
	}
	return []string{versions, size, "-", "-"}, note + "; " + why
}

// catalogCells are the retention cells of the namespace catalog's row: its
// versions (it grows with every namespace operation; reaper never removes
// any), nothing removable, and not counted with the tables.
func (c *versionColumns) catalogCells(sum *reaper.RetentionSummary) []string {
	if sum == nil || sum.Versions == 0 {
		return []string{"-", "-", "-", "-"}
	}
	return []string{strconv.Itoa(sum.Versions), "-", "-", "-"}
}

// share is part's share of whole, " (35%)", or "" when whole is not known.
func share(part, whole int64) string {
	switch {
	case whole <= 0:
		return ""
	case part > 0 && percent(part, whole) < 1:
		return " (<1%)"
	}
	return fmt.Sprintf(" (%.0f%%)", percent(part, whole))
}

// percent is part's share of whole in percent, to a tenth.
func percent(part, whole int64) float64 {
	return math.Round(float64(part)*1000/float64(whole)) / 10
}

// summary is the table's last line: what retain would reclaim in all, of
// what the live tables hold, and the policy it stands for.
func (c *versionColumns) summary() string {
	s := fmt.Sprintf("%s would remove %d versions, %s of %s%s from %d live tables", c.policy, c.removable,
		humanBytes(c.bytes), humanBytes(c.size), share(c.bytes, c.size), c.tables)
	if c.unsupported > 0 {
		s += fmt.Sprintf("; %d unsupported", c.unsupported)
	}
	if c.failed > 0 {
		s += fmt.Sprintf("; %d not read", c.failed)
	}
	if c.defaulted {
		s += "; --older-than 7d is status's default, as LanceDB's optimize(): pass --older-than or --before for another cutoff"
	}
	if c.refusal != "" {
		s += "; " + c.refusal
	}
	return s
}

// policyRefusal says what a retain with policy p would meet at the store's
// clock now: a cutoff in the future, or one retain refuses below the floor
// (safety.min_ttl, 0 with safety.allow_short_ttl). "" when neither.
func policyRefusal(p reaper.RetentionPolicy, now time.Time, floor time.Duration) string {
	if now.IsZero() {
		return ""
	}
	ip := retention.Policy{OlderThan: p.OlderThan, Before: p.Before, KeepVersions: p.KeepVersions,
		DeleteUnverified: p.DeleteUnverified, UnverifiedAfter: p.UnverifiedAfter}
	err := ip.CheckFloor(now, floor)
	switch {
	case err != nil:
		return "retain would refuse it: " + err.Error() + "; pass --allow-short-ttl to retain with it anyway"
	case !p.Before.IsZero() && p.Before.After(now):
		return fmt.Sprintf("before %s is in the future by the store's clock (%s): no version is kept for its age",
			p.Before.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339))
	}
	return ""
}

// statusVersionsJSON is an element of `reaper status --versions -o json`:
// the status and the retention keys, null for a name that is not a live
// table (and the counts null when its versions could not be planned).
type statusVersionsJSON struct {
	statusJSON
	Versions            *int     `json:"versions"`
	TableBytes          *int64   `json:"table_bytes"`
	ReclaimableVersions *int     `json:"reclaimable_versions"`
	ReclaimableBytes    *int64   `json:"reclaimable_bytes"`
	ReclaimablePercent  *float64 `json:"reclaimable_percent"`
	Retention           *string  `json:"retention"`
	RetentionReason     *string  `json:"retention_reason"`
	RetentionPolicy     *string  `json:"retention_policy"`
}

// toStatusVersionsJSON adds sum's keys to s; policy names the retain they
// stand for.
func toStatusVersionsJSON(s statusJSON, sum *reaper.RetentionSummary, policy string) statusVersionsJSON {
	out := statusVersionsJSON{statusJSON: s}
	if sum == nil {
		return out
	}
	out.Retention, out.RetentionPolicy = ptr(sum.Result), ptr(policy)
	if sum.Reason != "" {
		out.RetentionReason = ptr(sum.Reason)
	}
	if sum.Versions > 0 {
		out.Versions, out.TableBytes = ptr(sum.Versions), ptr(sum.TableBytes)
	}
	if sum.Result == reaper.RetentionPlanned || sum.Result == reaper.RetentionNothingToDo {
		out.ReclaimableVersions, out.ReclaimableBytes = ptr(sum.Removed), ptr(sum.Bytes)
		if sum.TableBytes > 0 {
			out.ReclaimablePercent = ptr(percent(sum.Bytes, sum.TableBytes))
		}
	}
	return out
}

// policyText names the retain a status's columns stand for.
func policyText(f policyFlags) string {
	s := "retain --older-than " + formatDuration(f.OlderThan)
	if f.Before != "" {
		s = "retain --before " + f.Before
	}
	if f.KeepVersions > 1 {
		s += fmt.Sprintf(" --keep-versions %d", f.KeepVersions)
	}
	if f.DeleteUnverified {
		s += " --delete-unverified"
	}
	return s
}

// newStatusVersionsTable is the status table with the retention columns
// of policy (defaulted: status chose it).
func newStatusVersionsTable(w io.Writer, floor time.Duration, policy string, defaulted bool) *statusTablePrinter {
	p := newStatusTable(w, floor)
	h := p.rows[0]
	p.rows[0] = append(append(h[:len(h)-1:len(h)-1], versionHeaders...), h[len(h)-1])
	p.versions = &versionColumns{policy: policy, defaulted: defaulted}
	return p
}

// statusPolicy checks the policy flags of status: they go with --versions,
// and --older-than defaults to statusOlderThan there.
func (o *statusOptions) statusPolicy() (reaper.RetentionPolicy, error) {
	if o.KeepVersions == 0 {
		o.KeepVersions = 1 // options built in code, not from the flags
	}
	if !o.Versions {
		if o.OlderThan != 0 || o.Before != "" || o.KeepVersions != 1 || o.DeleteUnverified || o.UnverifiedAfter != 0 {
			return reaper.RetentionPolicy{}, usagef("status: --older-than, --before, --keep-versions, --delete-unverified and --unverified-after go with --versions, which shows what that retain would remove")
		}
		return reaper.RetentionPolicy{}, nil
	}
	if o.OlderThan == 0 && o.Before == "" {
		o.OlderThan = statusOlderThan
	}
	return o.policy("status")
}
