package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"0s", 0},
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"7d", 7 * day},
		{"1d12h", 36 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{"0d", 0},
		{"2d30m", 2*day + 30*time.Minute},
		{" 5m ", 5 * time.Minute},
		{"+1h", time.Hour},
	} {
		got, err := ParseDuration(tc.in)
		require.NoError(t, err, "ParseDuration(%q)", tc.in)
		require.Equal(t, tc.want, got, "ParseDuration(%q)", tc.in)
	}
}

func TestParseDurationErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"-1s", "negative durations are not allowed"},
		{"-7d", "negative durations are not allowed"},
		{"30", "missing unit"},
		{"1d30", "missing unit"},
		{"xd", "day count"},
		{"7days", `write it as "7d"`},
		{"7 days", `write it as "7d": a number and its unit (s, m, h or d) with no space`},
		{"7 d", `write it as "7d"`},
		{"2w", `write it as "14d"`},
		{"1.5 weeks", `write it as "10.5d"`},
		{"36 hours", `write it as "36h"`},
		{"10 min", `write it as "10m"`},
		{"30 secs", `write it as "30s"`},
		{"abc", "invalid duration"},
		{"999999999d", "too long"},
		{"106751d24h", "too long"},
	} {
		_, err := ParseDuration(tc.in)
		require.ErrorContains(t, err, tc.want, "ParseDuration(%q)", tc.in)
		require.True(t, strings.Contains(err.Error(), `e.g. "90s", "30m", "7d"`) || strings.Contains(err.Error(), `write it as "`),
			"error for %q suggests a form: %v", tc.in, err)
		require.ErrorContains(t, err, `"`+tc.in+`"`, "error names the input %q", tc.in)
	}
}

func TestDurationString(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, time.Second, 90 * time.Minute, day, 7 * day, 36 * time.Hour, 2*day + time.Second} {
		s := Duration(d).String()
		back, err := ParseDuration(s)
		require.NoError(t, err, "%s", s)
		require.Equal(t, d, back, "round trip of %s", s)
	}
	require.Equal(t, "7d", Duration(7*day).String())
	require.Equal(t, "1d12h0m0s", Duration(36*time.Hour).String())
}

func TestDurationYAML(t *testing.T) {
	t.Parallel()
	var v struct {
		D Duration `yaml:"d"`
	}
	require.NoError(t, yaml.Unmarshal([]byte("d: 1d12h"), &v))
	require.Equal(t, 36*time.Hour, v.D.D())
	require.NoError(t, yaml.Unmarshal([]byte("d: 0"), &v))
	require.Zero(t, v.D)

	err := yaml.Unmarshal([]byte("\nd: -5m"), &v)
	require.ErrorContains(t, err, "line 2")
	require.ErrorContains(t, err, "negative")
	err = yaml.Unmarshal([]byte("d: [1]"), &v)
	require.ErrorContains(t, err, "not a list")

	out, err := yaml.Marshal(struct {
		D Duration `yaml:"d"`
	}{Duration(7 * day)})
	require.NoError(t, err)
	require.Equal(t, "d: 7d\n", string(out))
}
