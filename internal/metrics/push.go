package metrics

import (
	"context"
	"fmt"
	"maps"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// DefaultJob is the Pushgateway job name when Push is given none.
const DefaultJob = "reaper"

// Own gathers only reaper's own families (reaper_*) from g: what Push and
// WriteTextfile export. The Go runtime and process families describe a
// process that is gone when the group is read, and the Pushgateway and
// node-exporter's textfile collector reject them (their go_* and process_*
// help texts differ from their own, which node-exporter counts as an error
// on every scrape and the Pushgateway logs on every push).
func Own(g prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		return slices.DeleteFunc(mfs, func(mf *dto.MetricFamily) bool {
			return !strings.HasPrefix(mf.GetName(), namespace+"_")
		}), err
	})
}

// Push sends reaper's own families of g (Own) to the Pushgateway at url, replacing the
// group job/<job> plus the grouping labels (job "" means DefaultJob), so a
// one-shot `reaper purge` run from cron leaves its results behind. The group
// is deliberately not keyed by host: a CronJob's pods are named anew each
// run, and a group per pod would pile up in the Pushgateway forever.
func Push(ctx context.Context, url, job string, grouping map[string]string, g prometheus.Gatherer) error {
	if job == "" {
		job = DefaultJob
	}
	p := push.New(url, job).Gatherer(Own(g))
	for _, k := range slices.Sorted(maps.Keys(grouping)) {
		p = p.Grouping(k, grouping[k])
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("push metrics to %s: %w", RedactURL(url), redactedError{err: err, secret: password(url)})
	}
	return nil
}

// RedactURL masks the userinfo of a URL (basic-auth credentials) for
// printing; a string that is no URL is returned as "(unparsable URL)".
func RedactURL(s string) string {
	u, err := neturl.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		u.User = neturl.User("REDACTED")
	}
	return u.String()
}

func password(s string) string {
	if u, err := neturl.Parse(s); err == nil && u.User != nil {
		p, _ := u.User.Password()
		return p
	}
	return ""
}

// redactedError is err with a secret masked in its text: the HTTP client's
// errors quote the URL, basic-auth password included.
type redactedError struct {
	err    error
	secret string
}

func (e redactedError) Error() string {
	if e.secret == "" {
		return e.err.Error()
	}
	return strings.ReplaceAll(e.err.Error(), e.secret, "REDACTED")
}

func (e redactedError) Unwrap() error { return e.err }

// WriteTextfile writes reaper's own families of g (Own) to path in the Prometheus text
// format, for node-exporter's textfile collector. path must end in .prom.
// The file is replaced atomically: written to a temporary file in the same
// directory (whose name does not end in .prom, so the collector never reads
// it half-written), synced, made world-readable, renamed over path, and the
// directory synced.
func WriteTextfile(path string, g prometheus.Gatherer) error {
	if !strings.HasSuffix(path, ".prom") {
		return fmt.Errorf("write metrics textfile %q: name must end in .prom for the node-exporter textfile collector", path)
	}
	mfs, err := Own(g).Gather()
	if err != nil {
		return fmt.Errorf("write metrics textfile %s: gather: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write metrics textfile %s: %w", path, err)
	}
	defer func() {
		if tmp != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	enc := expfmt.NewEncoder(tmp, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("write metrics textfile %s: encode %s: %w", path, mf.GetName(), err)
		}
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write metrics textfile %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write metrics textfile %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write metrics textfile %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write metrics textfile %s: %w", path, err)
	}
	tmp = nil
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
