package pg

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/tunebench/tunebench/internal/metrics/pgstat"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/metrics/system"
)

// procRoot is where the process samplers read.
const procRoot = "/proc"

// Samplers are the server's: pg_stat_* counters, the wait-event profile,
// the PostgreSQL processes' CPU, memory and I/O (when they are visible from
// here) and the disk under the data directory (when it is known).
func (t *Target) Samplers(ctx context.Context, note func(format string, a ...any)) []sampler.Spec {
	specs := []sampler.Spec{
		{Sampler: pgstat.NewStats(t.conn.ConnectStd, "")},
		{Sampler: pgstat.NewWaits(t.conn.ConnectStd), Interval: pgstat.WaitInterval},
	}
	if t.Remote() {
		// A pid or a path read from the server names something else here.
		note("PostgreSQL process and disk metrics not measured: remote server (the cpu, memory and network series are the driver's machine)")
		return specs
	}
	dataDir, postmaster := t.locateServer(ctx)
	if postmaster == nil {
		note("PostgreSQL process metrics off: the server's processes are not visible here (another host, container or PID namespace?)")
	} else {
		specs = append(specs, sampler.Spec{Sampler: &system.PGProcs{Proc: procRoot, Postmaster: postmaster}})
	}
	if dataDir != "" && postmaster == nil {
		// A path the server names is only its own here when its
		// processes are (not through a tunnel or a container's port).
		note("disk metrics off: the server's processes are not visible here, so %s here may be another server's", dataDir)
	} else if dataDir == "" {
		note("disk metrics off: the data directory is unknown (it needs superuser or pg_read_all_settings on --dsn targets)")
	} else if dev, _, err := system.DeviceForPath(dataDir); err != nil {
		note("disk metrics off: %v", err)
	} else {
		specs = append(specs, sampler.Spec{Sampler: &system.Disk{Proc: procRoot, Device: dev.Name}})
	}
	return specs
}

// locateServer finds the data directory and a function returning the
// postmaster's pid. Managed server: its data directory, and postmaster.pid
// read on every sample (a restarted server is followed). Other targets: the
// parent of a backend of our own, and LocalDataDir, else the postmaster's
// working directory (PostgreSQL runs in its data directory).
func (t *Target) locateServer(ctx context.Context) (string, func() (int, error)) {
	if t.srv != nil {
		dir := t.srv.DataDir()
		return dir, func() (int, error) { return system.ReadPostmasterPID(dir) }
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := t.conn.ConnectStd(cctx)
	if err != nil {
		return "", nil
	}
	defer conn.Close(context.Background())
	var backend int
	if err := conn.QueryRow(cctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return "", nil
	}
	dataDir, _ := t.LocalDataDir(cctx, conn)
	pm, err := system.ParentPID(procRoot, backend)
	if err != nil || pm <= 1 || !isPostgresProcess(pm) {
		return dataDir, nil
	}
	if dataDir == "" {
		if d, err := os.Readlink(procRoot + "/" + strconv.Itoa(pm) + "/cwd"); err == nil {
			dataDir = d
		}
	}
	return dataDir, func() (int, error) {
		if dataDir != "" {
			if p, err := system.ReadPostmasterPID(dataDir); err == nil {
				return p, nil
			}
		}
		if _, err := os.Stat(procRoot + "/" + strconv.Itoa(pm)); err != nil {
			return 0, fmt.Errorf("postmaster %d is gone", pm)
		}
		return pm, nil
	}
}

// isPostgresProcess reports whether pid's command is postgres (or the
// historical postmaster).
func isPostgresProcess(pid int) bool {
	b, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return false
	}
	switch string(b) {
	case "postgres\n", "postmaster\n":
		return true
	}
	return false
}
