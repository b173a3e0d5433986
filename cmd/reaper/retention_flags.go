package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
)

// policyFlags are the retention policy flags of `reaper retain` and of
// `reaper status --versions`, which shows what the same policy would
// reclaim.
type policyFlags struct {
	OlderThan        time.Duration
	Before           string
	KeepVersions     int
	DeleteUnverified bool
	UnverifiedAfter  time.Duration
}

// register adds the flags; olderThan is --older-than's default (0: none,
// one of --older-than and --before must be given).
func (f *policyFlags) register(fs *pflag.FlagSet, olderThan time.Duration) {
	fs.Var(newDurationValue(&f.OlderThan, olderThan), "older-than", "remove versions written more than this long ago by the store's clock (e.g. 7d, 36h)")
	fs.StringVar(&f.Before, "before", "", "remove versions written before this instant (RFC 3339, fractional seconds allowed, e.g. 2026-11-01T00:00:00Z)")
	fs.IntVar(&f.KeepVersions, "keep-versions", 1, "always keep the newest N versions")
	fs.BoolVar(&f.DeleteUnverified, "delete-unverified", false, "also delete files no manifest references whatever their age (only safe when nothing writes to the tables)")
	fs.Var(newDurationValue(&f.UnverifiedAfter, 7*24*time.Hour), "unverified-after", "age from which a file no manifest references is deleted (a write in progress is younger)")
}

// policy checks the flags and builds the policy; op names the command in
// its errors.
func (f policyFlags) policy(op string) (reaper.RetentionPolicy, error) {
	p := reaper.RetentionPolicy{OlderThan: f.OlderThan, KeepVersions: f.KeepVersions,
		DeleteUnverified: f.DeleteUnverified, UnverifiedAfter: f.UnverifiedAfter}
	switch {
	case f.OlderThan == 0 && f.Before == "":
		return p, usagef("%s: pass --older-than (e.g. --older-than 7d) or --before (an RFC 3339 instant)", op)
	case f.OlderThan != 0 && f.Before != "":
		return p, usagef("%s: pass either --older-than or --before, not both", op)
	case f.KeepVersions < 1:
		return p, usagef("%s: --keep-versions %d: the newest version is always kept; pass 1 or more", op, f.KeepVersions)
	}
	if f.Before != "" {
		t, err := time.Parse(time.RFC3339Nano, f.Before)
		if err != nil {
			return p, usagef("%s: --before %q: want an RFC 3339 instant such as 2026-11-01T00:00:00Z or 2026-11-01T00:00:00.250+01:00", op, f.Before)
		}
		p.Before = t
	}
	return p, nil
}

// cutoffOf is the instant before which p removes versions, at now (a time
// of the store's clock).
func cutoffOf(p reaper.RetentionPolicy, now time.Time) time.Time {
	if !p.Before.IsZero() {
		return p.Before
	}
	return now.Add(-p.OlderThan)
}

// checkCutoff refuses a cutoff newer than floor (safety.min_ttl) before
// now unless allowed: versions that recent may still be read.
func checkCutoff(p reaper.RetentionPolicy, now time.Time, floor time.Duration, allowShort bool) error {
	cutoff := cutoffOf(p, now)
	if age := now.Sub(cutoff); age < floor && !allowShort {
		return usagef("retain: the cutoff %s is %s before the store's clock, less than safety.min_ttl %s: versions that recent may still be read; pass --allow-short-ttl to plan it anyway",
			formatTime(cutoff), formatDuration(max(age, 0)), formatDuration(floor))
	}
	return nil
}
