package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// A flag given on the command line wins over the config file, even when it
// repeats the built-in default (--default-ttl 7d used to be dropped because
// 7d is reaper.DefaultTTL, so the file's ttl: 1d stayed).
func TestDurationFlagsOverrideTheFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "reaper.yaml")
	require.NoError(t, os.WriteFile(file, []byte("defaults:\n  ttl: 1d\n  skew_allowance: 1m\n"), 0o600))
	for _, tc := range []struct {
		name              string
		args              []string
		wantTTL, wantSkew time.Duration
	}{
		{"no flags: the file", nil, 24 * time.Hour, time.Minute},
		{"the built-in default, given", []string{"--default-ttl", "7d", "--skew-allowance", "5m"}, 7 * 24 * time.Hour, 5 * time.Minute},
		{"another value", []string{"--default-ttl", "2d", "--skew-allowance", "10m"}, 48 * time.Hour, 10 * time.Minute},
		{"days with a fraction", []string{"--default-ttl", "1.5d"}, 36 * time.Hour, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g globalOptions
			fs := pflag.NewFlagSet("reaper", pflag.ContinueOnError)
			g.register(fs)
			require.NoError(t, fs.Parse(tc.args))
			cfg, err := loadConfig(storeOptions{globalOptions: g, Root: dir}, passFlags{ConfigPath: file})
			require.NoError(t, err)
			require.Equal(t, tc.wantTTL, cfg.Defaults.TTL.D(), "defaults.ttl")
			require.Equal(t, tc.wantSkew, cfg.Defaults.SkewAllowance.D(), "defaults.skew_allowance")
		})
	}
}

// --allow-short-ttl=false turns the rail back on over a file that turned it
// off, and --textfile= turns the file's textfile off (both flags used to be
// applied only when not their zero value).
func TestPassFlagsOverrideTheFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "reaper.yaml")
	yaml := "safety:\n  allow_short_ttl: true\nmetrics:\n  textfile: " + filepath.Join(dir, "m.prom") + "\n"
	require.NoError(t, os.WriteFile(file, []byte(yaml), 0o600))
	for _, tc := range []struct {
		args         []string
		want         bool
		wantTextfile string
	}{
		{nil, true, filepath.Join(dir, "m.prom")},
		{[]string{"--allow-short-ttl=false", "--textfile="}, false, ""},
		{[]string{"--allow-short-ttl", "--textfile", filepath.Join(dir, "n.prom")}, true, filepath.Join(dir, "n.prom")},
	} {
		var f passFlags
		fs := pflag.NewFlagSet("purge", pflag.ContinueOnError)
		f.register(fs)
		require.NoError(t, fs.Parse(tc.args))
		f.ConfigPath = file
		cfg, err := loadConfig(storeOptions{globalOptions: globalOptions{}, Root: dir}, f)
		require.NoError(t, err)
		require.Equal(t, tc.want, cfg.Safety.AllowShortTTL, "%v", tc.args)
		require.Equal(t, tc.wantTextfile, cfg.Metrics.Textfile, "%v", tc.args)
	}
}
