package config

import (
	"fmt"
	"math"
	"regexp"
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
	if want := spelledOut(in); want != "" {
		return 0, fmt.Errorf("duration %q: write it as %q: a number and its unit (s, m, h or d) with no space, several in a row as in \"1d12h\"", s, want)
	}
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

// spelledUnit matches one number with a unit written out, abbreviated the
// way people do, or after a space ("7 days", "2w", "36 hours", "10 min"):
// what a TTL looks like in a ticket. Each unit maps to ParseDuration's
// letter and how many of it one is.
var spelledUnit = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*(d|days?|w|wks?|weeks?|h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)$`)

// spelledOut returns the form ParseDuration reads for an input spelledUnit
// matches, or "" when it does not match or is that form already.
func spelledOut(in string) string {
	m := spelledUnit.FindStringSubmatch(in)
	if m == nil {
		return ""
	}
	num, unit := m[1], m[2]
	switch unit[0] {
	case 'w':
		n, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return ""
		}
		num, unit = strconv.FormatFloat(n*7, 'f', -1, 64), "d"
	case 'd', 'h', 'm', 's':
		unit = unit[:1]
	}
	if want := num + unit; want != in {
		return want
	}
	return ""
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
