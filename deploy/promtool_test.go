package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// promtool is Debian's promtool (see debianTool).
func promtool(t testing.TB) string { return debianTool(t, "REAPER_PROMTOOL", "promtool") }

// runPromtool runs promtool in dir and fails the test on a non-zero exit.
func runPromtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool %v:\n%s", args, out)
	return string(out)
}

// writeRuleFile copies the plain rule file reaper ships
// (prometheus/reaper-rules.yml, generated from the PrometheusRule: rules_test.go
// checks it is) into dir as rules.yml.
func writeRuleFile(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(plainRuleFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yml"), data, 0o644))
}

// TestPromtoolChecksRules: `promtool check rules` accepts the plain rule
// file a Prometheus without the Operator loads.
func TestPromtoolChecksRules(t *testing.T) {
	runPromtool(t, ".", "check", "rules", plainRuleFile)
}

// ruleTests are promtool unit tests of the alerts a real Prometheus would
// get wrong with job-wide aggregation or increase() of a new series: each
// case failed with the rules before per-instance/per-shard grouping and
// the first-appearance and pushed-group terms.
const ruleTests = `
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  # Daemon: two replicas, one stops succeeding. max by (namespace, job)
  # hid it behind the healthy one.
  - interval: 1m
    input_series:
      - series: 'reaper_last_success_timestamp_seconds{namespace="lance",job="reaper",instance="10.0.0.7:9090"}'
        values: '0+60x120'
      # Its last success is always two hours old, so the alert's text is
      # the same whichever minute's recording the alert group reads.
      - series: 'reaper_last_success_timestamp_seconds{namespace="lance",job="reaper",instance="10.0.0.8:9090"}'
        values: '-7200+60x120'
    alert_rule_test:
      - eval_time: 2h
        alertname: ReaperNoRecentSuccess
        exp_alerts:
          - exp_labels: {severity: warning, namespace: lance, job: reaper, instance: "10.0.0.8:9090"}
            exp_annotations:
              runbook_url: https://github.com/lance-reaper/reaper/blob/main/docs/RUNBOOK.md#reapernorecentsuccess
              summary: 'reaper has not finished a successful pass for 2h 0m 0s'
              description: >-
                No fully successful purge pass of reaper 10.0.0.8:9090 in lance for 2h 0m 0s, twice its schedule.
                Passes are failing, partial (a table or root failed), interrupted or not running:
                check the pod's logs ("pass finished" lines carry the result) and reaper_passes_total by result.
  # Pushgateway: shard 1 of a sharded CronJob never succeeds; shard 0 does.
  - interval: 1m
    input_series:
      - series: 'reaper_last_success_timestamp_seconds{namespace="lance",job="reaper-lance",instance="",shard="0"}'
        values: '0+60x120'
      - series: 'reaper_last_success_timestamp_seconds{namespace="lance",job="reaper-lance",instance="",shard="1"}'
        values: '-7200+60x120'
    alert_rule_test:
      - eval_time: 2h
        alertname: ReaperNoRecentSuccess
        exp_alerts:
          - exp_labels: {severity: warning, namespace: lance, job: reaper-lance, shard: "1"}
            exp_annotations:
              runbook_url: https://github.com/lance-reaper/reaper/blob/main/docs/RUNBOOK.md#reapernorecentsuccess
              summary: 'reaper has not finished a successful pass for 2h 0m 0s'
              description: >-
                No fully successful purge pass of reaper-lance shard 1 in lance for 2h 0m 0s, twice its schedule.
                Passes are failing, partial (a table or root failed), interrupted or not running:
                check the pod's logs ("pass finished" lines carry the result) and reaper_passes_total by result.
  # Daemon: a per-root refusal series first appears at 1 (the root's first
  # pass was refused); increase() of it is 0.
  - interval: 1m
    input_series:
      - series: 'reaper_roots_refused_total{namespace="lance",job="reaper",instance="10.0.0.7:9090",root="s3://b/db",reason="blast_radius"}'
        values: '_x30 1x60'
    alert_rule_test:
      - eval_time: 50m
        alertname: ReaperRootRefused
        exp_alerts:
          - exp_labels: {severity: warning, namespace: lance, job: reaper, instance: "10.0.0.7:9090", root: "s3://b/db", reason: blast_radius}
            exp_annotations:
              runbook_url: https://github.com/lance-reaper/reaper/blob/main/docs/RUNBOOK.md#reaperrootrefused
              summary: 'reaper refuses root s3://b/db: blast_radius'
              description: >-
                Passes over s3://b/db in lance were refused before deleting anything (reason blast_radius).
                blast_radius: more tables are due than safety.blast_radius_* allow; check them, then run
                one pass with REAPER_SAFETY_CONFIRM_BLAST_RADIUS=true. error: the root could not be read.
  # Daemon: still refused hours later (the counter keeps rising).
  - interval: 1m
    input_series:
      - series: 'reaper_roots_refused_total{namespace="lance",job="reaper",instance="10.0.0.7:9090",root="s3://b/db",reason="error"}'
        values: '0+0.1x300'
    alert_rule_test:
      - eval_time: 5h
        alertname: ReaperRootRefused
        exp_alerts:
          - exp_labels: {severity: warning, namespace: lance, job: reaper, instance: "10.0.0.7:9090", root: "s3://b/db", reason: error}
            exp_annotations:
              runbook_url: https://github.com/lance-reaper/reaper/blob/main/docs/RUNBOOK.md#reaperrootrefused
              summary: 'reaper refuses root s3://b/db: error'
              description: >-
                Passes over s3://b/db in lance were refused before deleting anything (reason error).
                blast_radius: more tables are due than safety.blast_radius_* allow; check them, then run
                one pass with REAPER_SAFETY_CONFIRM_BLAST_RADIUS=true. error: the root could not be read.
  # Pushgateway: every run is refused and pushes 1 (each run's counters
  # start at zero), for hours: increase() is 0, the pushed value is not.
  - interval: 1m
    input_series:
      - series: 'push_time_seconds{namespace="lance",job="reaper-lance",instance=""}'
        values: '0+60x300'
      - series: 'reaper_roots_refused_total{namespace="lance",job="reaper-lance",instance="",root="s3://b/db",reason="blast_radius"}'
        values: '1x300'
    alert_rule_test:
      - eval_time: 5h
        alertname: ReaperRootRefused
        exp_alerts:
          - exp_labels: {severity: warning, namespace: lance, job: reaper-lance, root: "s3://b/db", reason: blast_radius}
            exp_annotations:
              runbook_url: https://github.com/lance-reaper/reaper/blob/main/docs/RUNBOOK.md#reaperrootrefused
              summary: 'reaper refuses root s3://b/db: blast_radius'
              description: >-
                Passes over s3://b/db in lance were refused before deleting anything (reason blast_radius).
                blast_radius: more tables are due than safety.blast_radius_* allow; check them, then run
                one pass with REAPER_SAFETY_CONFIRM_BLAST_RADIUS=true. error: the root could not be read.
  # Pushgateway: the next run is not refused: the alert clears with it.
  - interval: 1m
    input_series:
      - series: 'push_time_seconds{namespace="lance",job="reaper-lance",instance=""}'
        values: '0+60x300'
      - series: 'reaper_roots_refused_total{namespace="lance",job="reaper-lance",instance="",root="",reason="blast_radius"}'
        values: '1x200 0x100'
    alert_rule_test:
      - eval_time: 5h
        alertname: ReaperRootRefused
        exp_alerts: []
  # Daemon: audit ledger writes fail, one a minute.
  - interval: 1m
    input_series:
      - series: 'reaper_ledger_write_failures_total{namespace="lance",job="reaper",instance="10.0.0.7:9090"}'
        values: '0x200 1+1x100'
    alert_rule_test:
      - eval_time: 5h
        alertname: ReaperLedgerWriteFailures
        exp_alerts:
          - exp_labels: {severity: critical, namespace: lance, job: reaper, instance: "10.0.0.7:9090"}
            exp_annotations:
              runbook_url: https://github.com/lance-reaper/reaper/blob/main/docs/RUNBOOK.md#reaperledgerwritefailures
              summary: reaper cannot write its audit ledger
              description: >-
                60 audit ledger write(s) of reaper 10.0.0.7:9090 in lance failed in the last hour (or in the last pushed run). Purges
                whose intent could not be recorded were not done (failed, reason ledger), and what
                was purged may be missing from the audit trail until a later pass folds its journal.
                Check audit.location's store (permissions, quota, reachability) and the "audit
                ledger write failed" log lines.
  # Pushgateway: the last run pushed its one failed write; the alert
  # clears with the next run that pushes 0.
  - interval: 1m
    input_series:
      - series: 'push_time_seconds{namespace="lance",job="reaper-lance",instance=""}'
        values: '0+60x300'
      - series: 'reaper_ledger_write_failures_total{namespace="lance",job="reaper-lance",instance=""}'
        values: '0x280 1x20'
    alert_rule_test:
      - eval_time: 5h
        alertname: ReaperLedgerWriteFailures
        exp_alerts:
          - exp_labels: {severity: critical, namespace: lance, job: reaper-lance}
            exp_annotations:
              runbook_url: https://github.com/lance-reaper/reaper/blob/main/docs/RUNBOOK.md#reaperledgerwritefailures
              summary: reaper cannot write its audit ledger
              description: >-
                1 audit ledger write(s) of reaper-lance in lance failed in the last hour (or in the last pushed run). Purges
                whose intent could not be recorded were not done (failed, reason ledger), and what
                was purged may be missing from the audit trail until a later pass folds its journal.
                Check audit.location's store (permissions, quota, reachability) and the "audit
                ledger write failed" log lines.
  - interval: 1m
    input_series:
      - series: 'push_time_seconds{namespace="lance",job="reaper-lance",instance=""}'
        values: '0+60x300'
      - series: 'reaper_ledger_write_failures_total{namespace="lance",job="reaper-lance",instance=""}'
        values: '1x200 0x100'
    alert_rule_test:
      - eval_time: 5h
        alertname: ReaperLedgerWriteFailures
        exp_alerts: []
  # Pushgateway: every run of a CronJob leaves 5 GiB of old versions in a
  # root, a day long: version retention does not keep up.
  - interval: 1m
    input_series:
      - series: 'reaper_retention_reclaimable_bytes{namespace="lance",job="reaper-lance",instance="",root="s3://b/db"}'
        values: '5368709120x1600'
      - series: 'reaper_retention_tables_total{namespace="lance",job="reaper-lance",instance="",root="s3://b/db",result="dry_run"}'
        values: '0x1600'
    alert_rule_test:
      - eval_time: 26h
        alertname: ReaperRetentionBacklogNotFalling
        exp_alerts:
          - exp_labels: {severity: warning, namespace: lance, job: reaper-lance, root: "s3://b/db"}
            exp_annotations:
              runbook_url: https://github.com/lance-reaper/reaper/blob/main/docs/RUNBOOK.md#reaperretentionbacklognotfalling
              summary: 'old versions of s3://b/db are not being reclaimed'
              description: >-
                Version retention of reaper-lance in lance would still delete 5GiB of old versions in
                s3://b/db, no less than a day ago, and has not reached zero all day: tables are
                locked, over limits.max_objects_per_pass, unread or failing. The "root finished" and
                "table retention" log lines say which.
  # The same backlog in a dry run (a shadow rollout): nothing is deleted by
  # design, no alert; nor once a pass brought it down to zero.
  - interval: 1m
    input_series:
      - series: 'reaper_retention_reclaimable_bytes{namespace="lance",job="reaper-lance",instance="",root="s3://b/db"}'
        values: '5368709120x1600'
      - series: 'reaper_retention_tables_total{namespace="lance",job="reaper-lance",instance="",root="s3://b/db",result="dry_run"}'
        values: '3x1600'
      - series: 'reaper_retention_reclaimable_bytes{namespace="lance",job="reaper-lance",instance="",root="s3://b/other"}'
        values: '5368709120x1500 0x100'
      - series: 'reaper_retention_tables_total{namespace="lance",job="reaper-lance",instance="",root="s3://b/other",result="dry_run"}'
        values: '0x1600'
    alert_rule_test:
      - eval_time: 26h
        alertname: ReaperRetentionBacklogNotFalling
        exp_alerts: []
  # Healthy: nothing refused, every replica succeeding.
  - interval: 1m
    input_series:
      - series: 'reaper_last_success_timestamp_seconds{namespace="lance",job="reaper",instance="10.0.0.7:9090"}'
        values: '0+60x300'
      - series: 'reaper_roots_refused_total{namespace="lance",job="reaper",instance="10.0.0.7:9090",root="",reason="blast_radius"}'
        values: '0x300'
      - series: 'reaper_ledger_write_failures_total{namespace="lance",job="reaper",instance="10.0.0.7:9090"}'
        values: '0x300'
    alert_rule_test:
      - eval_time: 5h
        alertname: ReaperRootRefused
        exp_alerts: []
      - eval_time: 5h
        alertname: ReaperNoRecentSuccess
        exp_alerts: []
      - eval_time: 5h
        alertname: ReaperLedgerWriteFailures
        exp_alerts: []
`

// TestPromtoolTestsRules: the alerts fire (and stay quiet) as a real
// Prometheus evaluates them, through `promtool test rules`.
func TestPromtoolTestsRules(t *testing.T) {
	dir := t.TempDir()
	writeRuleFile(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tests.yml"), []byte(ruleTests), 0o644))
	runPromtool(t, dir, "test", "rules", "tests.yml")
}
