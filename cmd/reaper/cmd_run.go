package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/scheduler"
	"github.com/lance-reaper/reaper/internal/worker"
)

// runOptions are the flags of `reaper run`.
type runOptions struct {
	storeOptions
	passFlags
	// ready, when set, receives the bound HTTP address (tests).
	ready chan<- string
	// clock drives the schedule (tests set a fake one).
	clock scheduler.Clock
}

func (o *runOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	o.passFlags.register(fs)
}

func newRunCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run --config FILE [--set KEY=VALUE]...",
		Short: "Run as a daemon: scheduled purge passes, /metrics, /healthz, /readyz",
		Long: `Run purge passes on the configured schedule (schedule: standard 5-field cron
spec or "@every 10m"; jitter delays each pass), never two at once, over
every configured and discovered root (shard.* splits roots between
replicas). The first pass starts at once.

An HTTP server on listen (default :9090) serves /metrics (Prometheus),
/healthz (the process is alive) and /readyz (configuration loaded and every
root reachable).

On SIGTERM/SIGINT no new pass or table starts; the table in flight gets
shutdown_grace (default 30s) to finish, then it is cancelled (its marker
stays, its lease is released or expires, and the next pass finishes it).
A second signal cancels at once. Exit status 0 after a clean shutdown.

Exit status: 0 after shutdown, 2 on configuration errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions = *g
			return runDaemon(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

// runDaemon serves HTTP and schedules passes until the first signal, then
// drains within the grace period.
func runDaemon(ctx context.Context, o runOptions, stdout io.Writer) error {
	rt, err := newRuntime(ctx, o.storeOptions, o.passFlags)
	if err != nil {
		return err
	}
	defer rt.close()
	cfg, log := rt.cfg, rt.log
	log.Info("reaper starting", "version", version, "config", cfg.Redacted())

	// Passes run on their own context: cancelled after the grace period
	// that follows the first signal, or at once on the second.
	passCtx, abortPasses := context.WithCancel(context.WithoutCancel(ctx))
	defer abortPasses()
	loopCtx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	drain := drainDone(ctx)
	var drainOnce sync.Once
	draining := make(chan struct{})
	go func() {
		select {
		case <-drain:
		case <-ctx.Done():
		}
		drainOnce.Do(func() { close(draining) })
		log.Info("shutdown requested: no new pass or table starts", "grace", cfg.ShutdownGrace.D())
		stopLoop()
		grace := time.NewTimer(cfg.ShutdownGrace.D())
		defer grace.Stop()
		select {
		case <-grace.C:
			log.Warn("shutdown grace elapsed: cancelling the table in flight (its marker stays; the next pass finishes it)")
		case <-ctx.Done():
		case <-passCtx.Done():
		}
		abortPasses()
	}()
	isDraining := func() bool {
		select {
		case <-draining:
			return true
		default:
			return false
		}
	}

	ready := &readiness{rt: rt, ttl: 15 * time.Second}
	srv, addr, err := serveHTTP(cfg.Listen, rt, ready)
	if err != nil {
		return usagef("listen on %q (listen): %w", cfg.Listen, err)
	}
	if srv != nil {
		log.Info("serving /metrics, /healthz and /readyz", "addr", addr)
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	if o.ready != nil {
		o.ready <- addr
	}

	clock := o.clock
	if clock == nil {
		clock = scheduler.RealClock{}
	}
	s, err := scheduler.New(scheduler.Scheduler{
		Spec: cfg.Schedule, Jitter: cfg.Jitter.D(), Clock: clock, RunOnStart: true, Logger: log,
		PassContext: func() context.Context { return passCtx },
		Run: func(ctx context.Context) error {
			rep, err := rt.worker.Pass(ctx, isDraining)
			if err != nil {
				return err
			}
			if err := rt.export(ctx); err != nil {
				log.Error("export metrics", "err", err)
			}
			ready.passFinished(rep)
			return nil
		},
	})
	if err != nil {
		return usagef("schedule %q: %w", cfg.Schedule, err)
	}
	if err := s.Loop(loopCtx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	log.Info("reaper stopped")
	return nil
}

// serveHTTP starts the HTTP server on addr ("" = none) and returns the bound
// address.
func serveHTTP(addr string, rt *runtime, ready *readiness) (*http.Server, string, error) {
	if addr == "" {
		return nil, "", nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(rt.registry, promhttp.HandlerOpts{Registry: rt.registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := ready.check(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, ln.Addr().String(), nil
}

// readiness answers /readyz: the configuration loaded (it did, or the
// daemon would not be serving) and every root is reachable. Probes are
// cached so a scraping load balancer does not hammer the store.
type readiness struct {
	rt  *runtime
	ttl time.Duration

	mu      sync.Mutex
	checked time.Time
	err     error
}

func (r *readiness) check(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.checked.IsZero() && time.Since(r.checked) < r.ttl {
		return r.err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r.err = r.probe(ctx)
	r.checked = time.Now()
	return r.err
}

// probe lists the roots and reads one small key of each.
func (r *readiness) probe(ctx context.Context) error {
	rs, err := r.rt.worker.Roots(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, root := range rs {
		if err := probeRoot(ctx, r.rt.worker, root); err != nil {
			errs = append(errs, fmt.Errorf("root %s: %w", root.URI, err))
		}
	}
	return errors.Join(errs...)
}

func probeRoot(ctx context.Context, w *worker.Worker, root config.Root) error {
	s, err := w.Open(ctx, root)
	if err != nil {
		return err
	}
	if _, err := s.Head(ctx, worker.PauseKey); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return err
	}
	return nil // a readable store; the PAUSE itself is judged by the pass
}

// passFinished marks the store reachable after a pass that reached every
// root, so /readyz need not probe again right away.
func (r *readiness) passFinished(rep *worker.Report) {
	for _, rr := range rep.Roots {
		if rr.Err != nil {
			return
		}
	}
	r.mu.Lock()
	r.checked, r.err = time.Now(), nil
	r.mu.Unlock()
}
