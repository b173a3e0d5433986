package main

import (
	"fmt"
	"os"
	"time"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/config"
)

// lookup reads an environment variable (os.LookupEnv unless a test set
// lookupEnv).
func (g globalOptions) lookup(name string) (string, bool) {
	if g.lookupEnv != nil {
		return g.lookupEnv(name)
	}
	return os.LookupEnv(name)
}

// ttlFloor is the TTL floor a purge applies, so drop and status can say
// what purge will do: safety.min_ttl from REAPER_SAFETY_MIN_TTL or the
// default, or zero when REAPER_SAFETY_ALLOW_SHORT_TTL lifts it.
func (g globalOptions) ttlFloor() (time.Duration, error) {
	c, err := config.Load("", g.lookup)
	if err != nil {
		return 0, asUsage(err)
	}
	if c.Safety.AllowShortTTL {
		return 0, nil
	}
	return c.Safety.MinTTL.D(), nil
}

// belowFloor reports whether purge's short_ttl rail keeps s.
func belowFloor(s reaper.TableStatus, floor time.Duration) bool { return s.BelowTTLFloor(floor) }

// shortTTLWarning is what drop and status say about a TTL below the floor.
func shortTTLWarning(ttl, floor time.Duration) string {
	return fmt.Sprintf("ttl %s is below safety.min_ttl %s: purge skips it (short_ttl) unless run with --allow-short-ttl (or safety.allow_short_ttl: true)",
		formatDuration(ttl), formatDuration(floor))
}
