package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/daemon"
	"github.com/lance-reaper/reaper/internal/scheduler"
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
		Long: fmt.Sprintf(`Run purge passes on the configured schedule (schedule: standard 5-field cron
spec or "@every 10m"; jitter delays each pass), never two at once, over
every configured and discovered root (shard.* splits roots, or with
shard.by table each root's tables, between replicas). The first pass
starts at once.

An HTTP server on listen (default %s) serves /metrics (Prometheus),
/healthz (the process is alive) and /readyz (configuration loaded and every
root reachable).

On SIGTERM/SIGINT no new pass or table starts; the table in flight gets
shutdown_grace (default %s) to finish, then it is cancelled (its marker
stays, its lease is released or expires, and the next pass finishes it).
A second signal cancels at once. Exit status 0 after a clean shutdown.

Exit status: 0 after shutdown, 2 on configuration errors.`, config.Default().Listen, formatDuration(config.Default().ShutdownGrace.D())),
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
	log.Info("reaper starting", "version", version, "config", configAttr(cfg))
	log.Info("version retention of live tables", "retention", cfg.RetentionSummary())

	drain := daemon.StartDrain(ctx, drainDone(ctx), daemon.DrainOptions{Grace: cfg.ShutdownGrace.D(), Logger: log})
	defer drain.Stop()

	ready := daemon.NewReadiness(rt.worker)
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
		PassContext: drain.PassContext,
		Run: func(ctx context.Context) error {
			rep, err := rt.worker.Pass(ctx, drain.Draining)
			if err != nil {
				return err
			}
			if err := rt.export(ctx); err != nil {
				log.Error("export metrics", "error", err)
			}
			ready.PassFinished(rep)
			return nil
		},
	})
	if err != nil {
		return usagef("schedule %q: %w", cfg.Schedule, err)
	}
	if err := s.Loop(drain.LoopContext()); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	log.Info("reaper stopped")
	return nil
}

// serveHTTP starts the HTTP server on addr ("" = none) and returns the bound
// address.
func serveHTTP(addr string, rt *runtime, ready *daemon.Readiness) (*http.Server, string, error) {
	if addr == "" {
		return nil, "", nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: daemon.Handler(rt.registry, ready), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, ln.Addr().String(), nil
}

// configAttr is the configuration as the file spells it (keys as in
// reaper.yaml, durations like "7d"), secrets redacted: a log line an
// operator can compare with the file, not Go field names in nanoseconds.
func configAttr(cfg config.Config) any {
	b, err := yaml.Marshal(cfg.Redacted())
	if err != nil {
		return err.Error()
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return string(b)
	}
	return m
}
