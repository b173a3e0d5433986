package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// This file owns the gauges of what version retention would reclaim: the
// files and versions the retention plans of each root's live tables would
// still remove once the last pass that planned them was over (a dry run
// removes nothing, a deleting pass what it ran), as reaper_tables is the
// root as the last pass left it. A root's series appear when a plan of it
// is first computed, never before: a zero would read as "nothing to
// reclaim" for a root never planned. They carry the root label only (as
// reaper_tables): a table label would make a series per table of every
// root.

// Reclaimable is what the retention plans of one root's live tables would
// remove.
type Reclaimable struct {
	// Bytes is the size of the files the plans delete, Versions the number
	// of versions whose manifests they delete.
	Bytes    int64
	Versions int
}

// The gauges' help texts.
const (
	helpReclaimableBytes    = "Bytes of the files version retention would still delete in each root, as the last pass that planned the root left it (a dry run deletes nothing); root is empty when per-root labels are off."
	helpReclaimableVersions = "Table versions version retention would still remove in each root, as the last pass that planned the root left it; root is empty when per-root labels are off."
)

// reclaimGauges are the gauges of reclaimable.go.
type reclaimGauges struct {
	bytes    *prometheus.GaugeVec
	versions *prometheus.GaugeVec
}

func newReclaimGauges(m *Metrics) reclaimGauges {
	return reclaimGauges{
		bytes: def(m, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "retention_reclaimable_bytes", Help: helpReclaimableBytes,
		}, []string{"root"})),
		versions: def(m, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "retention_reclaimable_versions", Help: helpReclaimableVersions,
		}, []string{"root"})),
	}
}

func (g reclaimGauges) reset() {
	g.bytes.Reset()
	g.versions.Reset()
}

// SetReclaimable replaces what retention would still remove in root.
// With per-root labels off the series are the sums over every root
// reported.
func (m *Metrics) SetReclaimable(root string, r Reclaimable) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rootReclaim[root] = r
	m.publishReclaimable(root)
}

// publishReclaimable writes the gauges root contributes to; m.mu is held.
// A root no longer reported (forgotten) loses its series.
func (m *Metrics) publishReclaimable(root string) {
	label := m.RootLabel(root)
	r, ok := m.rootReclaim[root]
	if !m.opts.PerRootLabels {
		r, ok = Reclaimable{}, len(m.rootReclaim) > 0
		for _, x := range m.rootReclaim {
			r.Bytes += x.Bytes
			r.Versions += x.Versions
		}
	}
	if !ok {
		m.reclaim.bytes.DeleteLabelValues(label)
		m.reclaim.versions.DeleteLabelValues(label)
		return
	}
	m.reclaim.bytes.WithLabelValues(label).Set(float64(r.Bytes))
	m.reclaim.versions.WithLabelValues(label).Set(float64(r.Versions))
}
