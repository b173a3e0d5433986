package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lance-reaper/reaper"
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
	// policy says which retain the columns stand for.
	policy                                 string
	tables, unsupported, failed, removable int
	bytes                                  int64
}

// versionHeaders are the retention columns, between PURGE_AFTER and NOTE.
var versionHeaders = []string{"VERSIONS", "REMOVABLE", "RECLAIMABLE"}

// cells are a row's retention cells and its note with the plan's reason
// when the table could not be planned.
func (c *versionColumns) cells(sum *reaper.RetentionSummary, note string) ([]string, string) {
	if sum == nil {
		return []string{"-", "-", "-"}, note
	}
	versions := "-"
	if sum.Versions > 0 {
		versions = strconv.Itoa(sum.Versions)
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
		return []string{versions, strconv.Itoa(sum.Removed), humanBytes(sum.Bytes)}, note
	}
	if note == "-" {
		return []string{versions, "-", "-"}, why
	}
	return []string{versions, "-", "-"}, note + "; " + why
}

// catalogCells are the retention cells of the namespace catalog's row: its
// versions (it grows with every namespace operation; reaper never removes
// any), nothing removable, and not counted with the tables.
func (c *versionColumns) catalogCells(sum *reaper.RetentionSummary) []string {
	if sum == nil || sum.Versions == 0 {
		return []string{"-", "-", "-"}
	}
	return []string{strconv.Itoa(sum.Versions), "-", "-"}
}

// summary is the table's last line: what retain would reclaim in all.
func (c *versionColumns) summary() string {
	s := fmt.Sprintf("%s would remove %d versions, %s from %d live tables", c.policy, c.removable, humanBytes(c.bytes), c.tables)
	if c.unsupported > 0 {
		s += fmt.Sprintf("; %d unsupported", c.unsupported)
	}
	if c.failed > 0 {
		s += fmt.Sprintf("; %d not read", c.failed)
	}
	return s
}

// statusVersionsJSON is an element of `reaper status --versions -o json`:
// the status and the retention keys, null for a name that is not a live
// table (and the counts null when its versions could not be planned).
type statusVersionsJSON struct {
	statusJSON
	Versions            *int    `json:"versions"`
	ReclaimableVersions *int    `json:"reclaimable_versions"`
	ReclaimableBytes    *int64  `json:"reclaimable_bytes"`
	Retention           *string `json:"retention"`
	RetentionReason     *string `json:"retention_reason"`
}

func toStatusVersionsJSON(s statusJSON, sum *reaper.RetentionSummary) statusVersionsJSON {
	out := statusVersionsJSON{statusJSON: s}
	if sum == nil {
		return out
	}
	out.Retention = ptr(sum.Result)
	if sum.Reason != "" {
		out.RetentionReason = ptr(sum.Reason)
	}
	if sum.Versions > 0 {
		out.Versions = ptr(sum.Versions)
	}
	if sum.Result == reaper.RetentionPlanned || sum.Result == reaper.RetentionNothingToDo {
		out.ReclaimableVersions, out.ReclaimableBytes = ptr(sum.Removed), ptr(sum.Bytes)
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
// of policy.
func newStatusVersionsTable(w io.Writer, floor time.Duration, policy string) *statusTablePrinter {
	p := newStatusTable(w, floor)
	h := p.rows[0]
	p.rows[0] = append(append(h[:len(h)-1:len(h)-1], versionHeaders...), h[len(h)-1])
	p.versions = &versionColumns{policy: policy}
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
