package metrics

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/outcome"
)

func TestPush(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := New(reg, Options{})
	m.PassFinished(outcome.ResultSuccess, time.Minute, time.Unix(1700000000, 0))

	type got struct {
		method, path string
		families     map[string]*dto.MetricFamily
	}
	ch := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
		families := map[string]*dto.MetricFamily{}
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err != nil {
				break
			}
			families[mf.GetName()] = &mf
		}
		ch <- got{r.Method, r.URL.Path, families}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	require.NoError(t, Push(t.Context(), srv.URL, "", nil, reg))
	g := <-ch
	require.Equal(t, http.MethodPut, g.method, "replace the whole group")
	require.Equal(t, "/metrics/job/reaper", g.path, "one group per job, not per pod: CronJob pods are named anew each run")
	require.Contains(t, g.families, "reaper_passes_total")
	require.Equal(t, 1700000000.0, g.families["reaper_last_success_timestamp_seconds"].GetMetric()[0].GetGauge().GetValue())

	require.NoError(t, Push(t.Context(), srv.URL, "nightly", map[string]string{"shard": "2"}, reg))
	require.Equal(t, "/metrics/job/nightly/shard/2", (<-ch).path)
}

func TestPushServerError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	New(reg, Options{})
	err := Push(t.Context(), srv.URL, "", nil, reg)
	require.ErrorContains(t, err, "push metrics")
}

func TestWriteTextfile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "reaper.prom")
	reg := prometheus.NewRegistry()
	m := New(reg, Options{})
	m.TablePurged()
	require.NoError(t, WriteTextfile(path, reg))
	m.TablePurged()
	require.NoError(t, WriteTextfile(path, reg), "replace an existing file")

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(f)
	require.NoError(t, err)
	require.Equal(t, 2.0, families["reaper_tables_purged_total"].GetMetric()[0].GetCounter().GetValue())
	require.Len(t, families["reaper_objstore_requests_total"].GetMetric(), 50)

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "readable by node-exporter")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temp file left behind")

	err = WriteTextfile(filepath.Join(dir, "reaper.txt"), reg)
	require.ErrorContains(t, err, ".prom")
	err = WriteTextfile(filepath.Join(dir, "missing", "reaper.prom"), reg)
	require.Error(t, err)
}

// Pushes and textfiles carry reaper's own families and its build info, not
// the Go and process collectors of the registry they share with /metrics:
// the Pushgateway complained about those on every push, node-exporter on
// every scrape.
func TestExportOnlyOwnFamilies(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	New(reg, Options{Version: "v1.2.3"})

	path := filepath.Join(t.TempDir(), "reaper.prom")
	require.NoError(t, WriteTextfile(path, reg))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	families, err := tp.TextToMetricFamilies(f)
	require.NoError(t, err)
	for name := range families {
		require.True(t, strings.HasPrefix(name, "reaper_"), "textfile exports %s", name)
	}
	info := families["reaper_build_info"]
	require.NotNil(t, info)
	labels := map[string]string{}
	for _, l := range info.GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	require.Equal(t, map[string]string{"version": "v1.2.3", "go_version": runtime.Version()}, labels)

	pushed := make(chan []string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
		var names []string
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err != nil {
				break
			}
			names = append(names, mf.GetName())
		}
		pushed <- names
	}))
	defer srv.Close()
	require.NoError(t, Push(t.Context(), srv.URL, "", nil, reg))
	names := <-pushed
	require.Contains(t, names, "reaper_build_info")
	for _, n := range names {
		require.True(t, strings.HasPrefix(n, "reaper_"), "push carries %s", n)
	}
}

// A push error never prints the basic-auth password of the Pushgateway URL:
// before, it was in the export error logged on every pass while the
// Pushgateway was down.
func TestPushErrorHidesCredentials(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	New(reg, Options{})
	for _, url := range []string{"http://user:PaSsWoRd@127.0.0.1:1", "http://user:PaSsWoRd@127.0.0.1:1/"} {
		err := Push(t.Context(), url, "", nil, reg)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "PaSsWoRd")
		require.Contains(t, err.Error(), "push metrics to http://REDACTED@127.0.0.1:1")
	}
}
