package metrics

import (
	"maps"
	"time"
)

// SetRootTables replaces root's table counts by state (keys are the State
// constants); known states missing from counts are set to zero. With
// per-root labels off the aggregated series are recomputed as the sum over
// all roots reported since the last ResetRootTables.
func (m *Metrics) SetRootTables(root string, counts map[string]int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rootTables[root] = maps.Clone(counts)
	m.publishTables(root)
}

// SetOldestDueMarker records when root's oldest still-present due marker
// became due; the zero time means nothing is due, which removes the series
// (a zero timestamp would read as "due since 1970"). With per-root labels
// off the aggregated series is the minimum over roots.
func (m *Metrics) SetOldestDueMarker(root string, due time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if due.IsZero() {
		delete(m.rootOldest, root)
	} else {
		m.rootOldest[root] = due
	}
	m.publishOldest(root)
}

// ForgetRoot drops root's series (or its share of the aggregated ones), e.g.
// when it leaves the configuration.
func (m *Metrics) ForgetRoot(root string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rootTables, root)
	delete(m.rootOldest, root)
	delete(m.rootReclaim, root)
	m.publishReclaimable(root)
	if m.opts.PerRootLabels {
		m.tables.DeletePartialMatch(map[string]string{"root": root})
	} else {
		m.publishTables(root)
	}
	m.publishOldest(root)
}

// KeepRoots forgets every root reported before that is not in roots: the
// roots of a finished pass. Without it a root that left the pass would keep
// its last backlog (and its alerts) forever.
func (m *Metrics) KeepRoots(roots []string) {
	if m == nil {
		return
	}
	keep := make(map[string]bool, len(roots))
	for _, r := range roots {
		keep[r] = true
	}
	m.mu.Lock()
	var gone []string
	for r := range m.rootTables {
		if !keep[r] {
			gone = append(gone, r)
		}
	}
	for r := range m.rootOldest {
		if !keep[r] && m.rootTables[r] == nil {
			gone = append(gone, r)
		}
	}
	m.mu.Unlock()
	for _, r := range gone {
		m.ForgetRoot(r)
	}
}

// ResetRootTables forgets every root's table counts, due markers and
// retention plans, e.g. on a configuration reload; the aggregated table
// series return to zero, the retention series go until a plan is computed.
func (m *Metrics) ResetRootTables() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.rootTables)
	clear(m.rootOldest)
	clear(m.rootReclaim)
	m.tables.Reset()
	m.oldestDue.Reset()
	m.reclaim.reset()
	if !m.opts.PerRootLabels {
		m.publishTables(AllRoots)
	}
}

// publishTables writes the table gauges root contributes to; m.mu is held.
func (m *Metrics) publishTables(root string) {
	counts := m.rootTables[root]
	if !m.opts.PerRootLabels {
		counts = make(map[string]int)
		for _, c := range m.rootTables {
			for state, n := range c {
				counts[state] += n
			}
		}
	}
	label := m.RootLabel(root)
	for _, s := range tableStates {
		m.tables.WithLabelValues(label, s).Set(float64(counts[s]))
	}
	for s, n := range counts {
		m.tables.WithLabelValues(label, s).Set(float64(n))
	}
}

// publishOldest writes the due-marker gauge root contributes to; m.mu is held.
func (m *Metrics) publishOldest(root string) {
	due := m.rootOldest[root]
	if !m.opts.PerRootLabels {
		due = time.Time{}
		for _, t := range m.rootOldest {
			if due.IsZero() || t.Before(due) {
				due = t
			}
		}
	}
	label := m.RootLabel(root)
	if due.IsZero() {
		m.oldestDue.DeleteLabelValues(label)
		return
	}
	m.oldestDue.WithLabelValues(label).Set(float64(due.UnixNano()) / 1e9)
}
