package cli

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/metrics/pgstat"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/metrics/system"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/store"
)

// sampling is the metric samplers of one run (docs/metrics.md): system,
// disk of the data directory, network, the PostgreSQL processes,
// pg_stat_* views, the wait-event profile and the driver itself. They run in
// their own goroutines and connections from just before the executor starts
// until stop; their points share the executor's time axis (T = 0 at the
// measurement start, through the executor's OnMeasureStart hook).
type sampling struct {
	c *sampler.Collector
}

// startSampling starts the samplers for a run against t; srv is the managed
// server (nil for --dsn targets, whose data directory and postmaster are
// looked up through the server, when it allows). Problems that switch a
// sampler off (no block device under the data directory, processes not
// visible) and each sampler's first error are printed once when verbose.
// With off set it does nothing (and stop returns no points).
func startSampling(ctx context.Context, s *State, t *pg.Target, srv *server.Server, off, verbose bool) *sampling {
	if off {
		return &sampling{}
	}
	note := func(format string, a ...any) {
		if verbose {
			s.eprintf("samplers: "+format+"\n", a...)
		}
	}
	const proc = "/proc"
	specs := []sampler.Spec{
		{Sampler: &system.CPU{Proc: proc}},
		{Sampler: &system.Memory{Proc: proc}},
		{Sampler: &system.Net{Proc: proc}},
		{Sampler: &system.Driver{}},
		{Sampler: pgstat.NewStats(t.ConnectStd, "")},
		{Sampler: pgstat.NewWaits(t.ConnectStd), Interval: pgstat.WaitInterval},
	}

	dataDir, postmaster := locateServer(ctx, t, srv)
	switch {
	case postmaster == nil:
		note("PostgreSQL process metrics off: the server's processes are not visible here (another host, container or PID namespace?)")
	default:
		specs = append(specs, sampler.Spec{Sampler: &system.PGProcs{Proc: proc, Postmaster: postmaster}})
	}
	if dataDir == "" {
		note("disk metrics off: the data directory is unknown (it needs superuser or pg_read_all_settings on --dsn targets)")
	} else if dev, _, err := system.DeviceForPath(dataDir); err != nil {
		note("disk metrics off: %v", err)
	} else {
		specs = append(specs, sampler.Spec{Sampler: &system.Disk{Proc: proc, Device: dev.Name}})
	}

	c := sampler.Start(ctx, sampler.Options{OnError: func(name string, err error) {
		note("%s: %v (later failures of this sampler are counted, not printed)", name, err)
	}}, specs...)
	return &sampling{c: c}
}

// locateServer finds the data directory and a function returning the
// postmaster's pid. Managed server: its data directory, and postmaster.pid
// read on every sample (a restarted server is followed). Other targets: the
// parent of a backend of our own, and data_directory if readable, else the
// postmaster's working directory (PostgreSQL runs in its data directory).
func locateServer(ctx context.Context, t *pg.Target, srv *server.Server) (string, func() (int, error)) {
	if srv != nil {
		dir := srv.DataDir()
		return dir, func() (int, error) { return system.ReadPostmasterPID(dir) }
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := t.ConnectStd(cctx)
	if err != nil {
		return "", nil
	}
	defer conn.Close(context.Background())
	var backend int
	if err := conn.QueryRow(cctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return "", nil
	}
	var dataDir string
	if err := conn.QueryRow(cctx, "SELECT current_setting('data_directory')").Scan(&dataDir); err != nil {
		dataDir = ""
	}
	pm, err := system.ParentPID("/proc", backend)
	if err != nil || pm <= 1 || !isPostgresProcess(pm) {
		return dataDir, nil
	}
	if dataDir == "" {
		if d, err := os.Readlink("/proc/" + strconv.Itoa(pm) + "/cwd"); err == nil {
			dataDir = d
		}
	}
	return dataDir, func() (int, error) {
		if dataDir != "" {
			if p, err := system.ReadPostmasterPID(dataDir); err == nil {
				return p, nil
			}
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pm)); err != nil {
			return 0, fmt.Errorf("postmaster %d is gone", pm)
		}
		return pm, nil
	}
}

// isPostgresProcess reports whether pid's command is postgres (or the
// historical postmaster).
func isPostgresProcess(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return false
	}
	switch string(b) {
	case "postgres\n", "postmaster\n":
		return true
	}
	return false
}

// attach makes the executor mark the measurement start (T = 0) for the
// samplers; a hook already set is still called.
func (sm *sampling) attach(cfg *run.Config) {
	if sm.c == nil {
		return
	}
	prev := cfg.OnMeasureStart
	cfg.OnMeasureStart = func() {
		sm.c.MeasureStart()
		if prev != nil {
			prev()
		}
	}
}

// stop stops the samplers and returns their points. When the measurement
// never started (an interrupted warm-up), T = 0 is placed where it would
// have been: the run's start plus the warm-up.
func (sm *sampling) stop(res *run.Result, warmup time.Duration) []store.Point {
	if sm == nil || sm.c == nil {
		return nil
	}
	if res != nil && !res.StartedAt.IsZero() {
		sm.c.SetZero(res.StartedAt.Add(warmup))
	}
	return sm.c.Stop()
}
