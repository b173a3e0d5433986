package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --only retention rewrites the retention section alone, wherever it is;
// a file without one gains it before its commands; a full run that
// measured no retention keeps the section the file had.
func TestSpliceRetention(t *testing.T) {
	sec := func(body string) string { return retBegin + "\n" + body + "\n" + retEnd + "\n" }
	for _, tc := range []struct{ name, doc, section, want string }{
		{"replaced", "# B\n\nbefore\n" + sec("old") + "\nafter\n", sec("new"), "# B\n\nbefore\n" + sec("new") + "\nafter\n"},
		{"before the commands", "# B\n\ntext\n\n## Commands\n\nx\n", sec("new"), "# B\n\ntext\n\n" + sec("new") + "\n## Commands\n\nx\n"},
		{"appended", "# B\n\ntext\n", sec("new"), "# B\n\ntext\n\n" + sec("new")},
		{"empty file", "", sec("new"), "\n\n" + sec("new")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, retentionMarks.splice(tc.doc, tc.section))
		})
	}
	require.Equal(t, sec("old"), retentionMarks.of("x\n"+sec("old")+"y\n"))
	require.Empty(t, retentionMarks.of("no section"))
}

func TestParseRetentionFlags(t *testing.T) {
	c, err := parseFlags([]string{"--only", "retention", "--retention", "s3"})
	require.NoError(t, err)
	require.Equal(t, []string{"s3"}, c.Retention)
	require.Empty(t, c.Sizes, "nothing but retention runs")
	require.Empty(t, c.Peers)
	require.Zero(t, c.Roots)
	c, err = parseFlags(nil)
	require.NoError(t, err)
	require.Equal(t, []string{"s3", "local"}, c.Retention)
	require.Equal(t, 2000, c.RetentionVersions)
	for _, bad := range [][]string{{"--retention", "gcs"}, {"--only", "purge"}, {"--only", "retention", "--retention", "none"}} {
		_, err := parseFlags(bad)
		require.Error(t, err, "%v", bad)
	}
}

// The target holds reaper's whole process to a fifth of the client's
// cleanup call, on S3 scenarios only.
func TestRetentionTarget(t *testing.T) {
	run := func(cont string, wall, call time.Duration) *retSeries {
		return &retSeries{Scenario: "retention-s3/single", Contender: cont, Tables: 1, Versions: 2000, Files: 20000,
			Samples: []retSample{{Wall: wall, Call: call, Server: map[string]int64{"GetObject": 1}}}}
	}
	r := &report{Retention: []*retSeries{run(contReaper, 3500*time.Millisecond, 0), run(contLance, 10*time.Second, 9*time.Second)}}
	ts := r.retentionTargets()
	require.Len(t, ts, 1)
	require.False(t, ts[0].Pass, "3.5 s is more than a fifth of the 9 s call")
	r.Retention[0].Samples[0].Wall = 1800 * time.Millisecond
	require.True(t, r.retentionTargets()[0].Pass)
	local := &report{Retention: []*retSeries{run(contReaper, time.Second, 0), run(contLance, time.Second, time.Second)}}
	for _, s := range local.Retention {
		s.Scenario = "retention-local/single"
	}
	require.Empty(t, local.retentionTargets())
	require.True(t, strings.Contains(r.retentionSection(), retEnd))
}

// --only retention-read runs the version-reading scenarios alone, at 1,000
// and 10,000 versions unless told otherwise, and rewrites their section
// alone.
func TestParseRetentionReadFlags(t *testing.T) {
	c, err := parseFlags([]string{"--only", "retention-read", "--retention", "s3"})
	require.NoError(t, err)
	require.Equal(t, []int{1000, 10000}, c.RetentionRead)
	require.Equal(t, []string{"s3"}, c.Retention)
	require.Empty(t, c.Sizes, "nothing but the read scenarios runs")
	c, err = parseFlags([]string{"--retention-read-versions", "500"})
	require.NoError(t, err)
	require.Equal(t, []int{500}, c.RetentionRead)
	c, err = parseFlags([]string{"--retention-read-versions", "none"})
	require.NoError(t, err)
	require.Empty(t, c.RetentionRead)
	_, err = parseFlags([]string{"--only", "retention-read", "--retention-read-versions", "none"})
	require.Error(t, err)

	sec := func(body string) string { return retReadBegin + "\n" + body + "\n" + retReadEnd + "\n" }
	doc := "# B\n\n" + sec("old") + "\n" + retBegin + "\nkept\n" + retEnd + "\n"
	require.Equal(t, "# B\n\n"+sec("new")+"\n"+retBegin+"\nkept\n"+retEnd+"\n", retReadMarks.splice(doc, sec("new")))
	r := &report{RetentionRead: []*retSeries{
		{Scenario: "read-s3/1000", Contender: contReaper, Tables: 1, Versions: 1000, Samples: []retSample{{Wall: time.Second}}},
		{Scenario: "read-s3/1000", Contender: contLance, Tables: 1, Versions: 1000, Samples: []retSample{{Wall: 5 * time.Second, Call: 4 * time.Second}}},
	}}
	s := r.retentionReadSection()
	require.True(t, strings.HasPrefix(s, retReadBegin))
	require.Contains(t, s, "| 0.25x of the call, 0.20x of the process |")
	require.True(t, strings.HasSuffix(s, retReadEnd+"\n"))
}
