package worker

import (
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// Observer receives a pass's events: metrics and the audit ledger implement
// it, so the pass itself knows neither. Decision may be called from several
// goroutines at once. RootPlanned's plan holds the stale leases and the
// time only: a pass streams the root's names into its summary
// (RootReport.Plan) and their decisions (plan.go), and keeps no list of
// statuses to hand over.
type Observer interface {
	PassStarted(r *Report)
	RootPlanned(r *Report, rr *RootReport, plan lifecycle.Plan, now time.Time)
	Decision(r *Report, d Decision)
	RootFinished(r *Report, rr *RootReport)
	PassFinished(r *Report)
}

// NopObserver ignores everything.
type NopObserver struct{}

func (NopObserver) PassStarted(*Report)                                         {}
func (NopObserver) RootPlanned(*Report, *RootReport, lifecycle.Plan, time.Time) {}
func (NopObserver) Decision(*Report, Decision)                                  {}
func (NopObserver) RootFinished(*Report, *RootReport)                           {}
func (NopObserver) PassFinished(*Report)                                        {}

// Observers fans events out to several observers in order.
type Observers []Observer

func (o Observers) PassStarted(r *Report) {
	for _, x := range o {
		x.PassStarted(r)
	}
}

func (o Observers) RootPlanned(r *Report, rr *RootReport, p lifecycle.Plan, now time.Time) {
	for _, x := range o {
		x.RootPlanned(r, rr, p, now)
	}
}

func (o Observers) Decision(r *Report, d Decision) {
	for _, x := range o {
		x.Decision(r, d)
	}
}

func (o Observers) RootFinished(r *Report, rr *RootReport) {
	for _, x := range o {
		x.RootFinished(r, rr)
	}
}

func (o Observers) PassFinished(r *Report) {
	for _, x := range o {
		x.PassFinished(r)
	}
}
