package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchmarks is the results file `make bench` writes; its memory section
// (go run ./bench --only memory) measures reaper at 200k and 1M top-level
// entries under the shipped GOMEMLIMIT and holds each peak to the shipped
// memory limit.
var benchmarks = filepath.Join("..", "BENCHMARKS.md")

// measuredUnder reads the memory section: the GOMEMLIMIT and memory limit
// it ran with, and each size's verdict (PASS or **MISS**).
func measuredUnder(t *testing.T) (goMemLimit, limit string, verdicts map[string]string) {
	t.Helper()
	b, err := os.ReadFile(benchmarks)
	require.NoError(t, err)
	text := string(b)
	start, end := strings.Index(text, "<!-- memory:begin -->"), strings.Index(text, "<!-- memory:end -->")
	require.True(t, start >= 0 && end > start, "%s has no memory section: run go run ./bench --only memory", benchmarks)
	sec := text[start:end]
	m := regexp.MustCompile(`Every run with GOMEMLIMIT=(\S+), the shipped CronJob's \([^,]+, whose memory limit is ([^)]+)\)`).FindStringSubmatch(sec)
	require.NotNil(t, m, "the memory section names the limits it ran with")
	verdicts = map[string]string{}
	for _, r := range regexp.MustCompile(`\| peak RSS, (\d+) top-level entries, every command \|[^|]*\|[^|]*\| (PASS|\*\*MISS\*\*) \|`).FindAllStringSubmatch(sec, -1) {
		verdicts[r[1]] = r[2]
	}
	return m[1], m[2], verdicts
}

// TestMemoryLimitsAreMeasured: every reaper container runs with the memory
// limit and GOMEMLIMIT BENCHMARKS.md measured reaper under, and at a
// million top-level entries every command stayed under that limit. A new
// value is measured first (go run ./bench --only memory), then shipped.
func TestMemoryLimitsAreMeasured(t *testing.T) {
	goMemLimit, limit, verdicts := measuredUnder(t)
	for _, size := range []string{"200000", "1000000"} {
		require.Equal(t, "PASS", verdicts[size], "%s: peak RSS at %s top-level entries under the shipped limit", benchmarks, size)
	}
	for _, p := range podTemplates(t) {
		for _, c := range p.reaperContainers() {
			v, ok := envValue(c, "GOMEMLIMIT")
			require.True(t, ok, "%s: GOMEMLIMIT is set", p)
			require.Equal(t, goMemLimit, v, "%s: GOMEMLIMIT as measured in %s", p, benchmarks)
			require.Equal(t, limit, c.Resources.Limits.Memory().String(), "%s: memory limit as measured in %s", p, benchmarks)
		}
	}
}
