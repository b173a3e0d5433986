package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

const day = 24 * time.Hour

// maxDays is the largest whole number of days a time.Duration holds.
const maxDays = math.MaxInt64 / int64(day)

// ParseDuration parses a Go duration ("90s", "1h30m") with an optional
// leading day count ("7d", "1d12h", "1.5d"); a bare "0" is zero. Negative
// durations are rejected: every duration reaper takes is a length of time.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("duration %q: %s; write e.g. \"90s\", \"30m\", \"7d\" or \"1d12h\"", s, why)
	}
	switch {
	case in == "":
		return bad("empty")
	case strings.HasPrefix(in, "-"):
		return bad("negative durations are not allowed")
	case in == "0":
		return 0, nil
	}
	in = strings.TrimPrefix(in, "+")
	var total time.Duration
	if i := strings.IndexByte(in, 'd'); i >= 0 {
		days, err := strconv.ParseFloat(in[:i], 64)
		if err != nil || math.IsNaN(days) || days < 0 {
			return bad("the day count before \"d\" must be a non-negative number")
		}
		if days > float64(maxDays) {
			return bad("too long")
		}
		total = time.Duration(days * float64(day))
		in = in[i+1:]
		if in == "" {
			return total, nil
		}
	}
	if _, err := strconv.ParseFloat(in, 64); err == nil && in != "0" {
		return bad("missing unit")
	}
	d, err := time.ParseDuration(in)
	if err != nil {
		return bad(strings.TrimPrefix(err.Error(), "time: "))
	}
	if d < 0 {
		return bad("negative durations are not allowed")
	}
	if total > math.MaxInt64-d {
		return bad("too long")
	}
	return total + d, nil
}

// String renders the duration the way ParseDuration reads it: whole days
// first ("7d", "1d12h0m0s"), then a Go duration.
func (d Duration) String() string {
	td := time.Duration(d)
	if td < day {
		return td.String()
	}
	days, rest := td/day, td%day
	if rest == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%s", days, rest)
}

// UnmarshalYAML reads a duration scalar with ParseDuration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as \"30s\" or \"7d\", not a %s", n.Line, kindName(n.Kind))
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the String form, so a dumped config reads back.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	case yaml.DocumentNode:
		return "document"
	default:
		return "scalar"
	}
}
