package main

import (
	"context"
	"io"
	"time"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/stack"
)

// This file owns `reaper retain` over the roots of a configuration: with
// --config (or --set, --shard, --pushgateway or --textfile) it covers the
// roots purge --config covers, the configured ones and those the discover
// patterns find, sharded as a pass shards them: the runtime's own
// expansion (runtime.go), not a copy of it.

// configured reports whether retain runs over the configuration's roots.
func (o retainOptions) configured() bool {
	return o.ConfigPath != "" || len(o.Sets) > 0 || o.Shard != "" || o.Pushgateway != "" || o.Textfile != ""
}

// openedRoot is one root of the configuration, opened, with its policy.
type openedRoot struct {
	uri    string
	ns     *reaper.Namespace
	policy reaper.RetentionPolicy
}

// runRetainRoots plans or runs retention on every root of the
// configuration, with policy p, or with each root's retention section when
// p is nil (roots where it is not enabled are left out). Every root's
// clock is read, and the cutoff checked against safety.min_ttl on each,
// before anything is deleted anywhere.
func runRetainRoots(ctx context.Context, o retainOptions, p *reaper.RetentionPolicy, stdout io.Writer) error {
	rt, err := newRuntime(ctx, o.storeOptions, o.passFlags)
	if err != nil {
		return err
	}
	defer rt.close()
	rs, discoverErr := rt.worker.Roots(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	rep := retainReport{dryRun: o.DryRun, withRoot: true, progress: o.progress()}
	if discoverErr != nil {
		rt.log.Error("root discovery incomplete", "error", discoverErr)
		rep.discovery = append(rep.discovery, discoverErr.Error())
	}
	floor := rt.cfg.Safety.MinTTL.D()
	var opened []openedRoot
	enabled := 0
	for _, r := range rs {
		policy, ok := rootPolicy(rt.cfg, r, p)
		if !ok {
			rt.log.Info("retention not enabled on this root: left out", "root", r.URI)
			continue
		}
		enabled++
		ns, err := openRoot(ctx, o, rt, r)
		var now time.Time
		if err == nil {
			now, err = ns.StoreNow(ctx)
		}
		if err != nil {
			rep.failRoot(r.URI, err)
			continue
		}
		if err := checkCutoff(policy, now, floor, rt.cfg.Safety.AllowShortTTL); err != nil {
			return err
		}
		opened = append(opened, openedRoot{uri: r.URI, ns: ns, policy: policy})
	}
	if enabled == 0 && len(rs) > 0 {
		return usagef("retain: retention is enabled on none of the %d root(s) of the configuration: pass --older-than or --before, or set retention.enabled: true (at the top, or in a root's or discover pattern's retention section)", len(rs))
	}
	for _, r := range opened {
		if ctx.Err() != nil {
			break
		}
		before := len(rep.plans)
		if err := rep.root(ctx, r.uri, r.ns, r.policy, o.Names); err != nil {
			rep.failRoot(r.uri, err)
			continue
		}
		if rep.dryRun && len(o.Names) == 0 {
			// A plan of every live table: what the root would reclaim.
			rt.metrics.SetReclaimable(r.uri, reclaimableOf(rep.plans[before:]))
		}
	}
	exportErr := rt.export(ctx)
	if exportErr != nil {
		rt.log.Error("export metrics", "error", exportErr)
	}
	if err := rep.finish(ctx, o, stdout); err != nil {
		return err
	}
	if exportErr != nil {
		return &failedError{op: "retain", msg: exportErr.Error()}
	}
	return nil
}

// rootPolicy is root r's policy: p when given, else its retention
// section's when enabled there (ok false: left out).
func rootPolicy(cfg config.Config, r roots.Root, p *reaper.RetentionPolicy) (reaper.RetentionPolicy, bool) {
	if p != nil {
		return *p, true
	}
	rr := cfg.RetentionFor(r.Retention)
	return reaper.RetentionPolicy{OlderThan: rr.OlderThan.D(), KeepVersions: rr.KeepVersions,
		DeleteUnverified: rr.DeleteUnverified, UnverifiedAfter: rr.UnverifiedAfter.D()}, rr.Enabled
}

// reclaimableOf sums one root's plans for its gauges.
func reclaimableOf(plans []retainJSON) metrics.Reclaimable {
	var r metrics.Reclaimable
	for _, p := range plans {
		if p.Result == reaper.RetentionPlanned {
			r.Bytes += p.Bytes
			r.Versions += len(p.Removed)
		}
	}
	return r
}

// openRoot opens one root of the configuration as a plain retain opens
// its --root, with the configuration's defaults.
func openRoot(ctx context.Context, o retainOptions, rt *runtime, r roots.Root) (*reaper.Namespace, error) {
	return reaper.Open(stack.WithWrapBackend(ctx, o.wrapStore), r.URI, reaper.Options{
		StorageOptions:  r.StorageOptions,
		DefaultTTL:      rt.cfg.Defaults.TTL.D(),
		SkewAllowance:   rt.cfg.Defaults.SkewAllowance.D(),
		LeaseTTL:        rt.cfg.Defaults.LeaseTTL.D(),
		Logger:          rt.log,
		Now:             o.Now,
		Registerer:      rt.registry,
		RetryMaxElapsed: rt.cfg.Limits.RetryMaxElapsed.D(),
	})
}
