package pg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/machine"
	"github.com/tunebench/tunebench/internal/metrics/pgstat"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/metrics/system"
	"github.com/tunebench/tunebench/internal/target"
)

// procRoot is where the process samplers read.
const procRoot = "/proc"

// Samplers are the server's: pg_stat_* counters and the wait-event
// profile, and, as hm says, its host's. On this machine (auto or local):
// the PostgreSQL processes' CPU, memory and I/O (when they are visible
// here) and the disk under the data directory, from /proc (the host's CPU,
// memory and network are the driver machine's series). Through SQL: the
// server's own /proc files read with pg_read_file: its host's CPU, memory,
// network and pressure (server.* series), its disk (found from its mount
// table) and its processes (the postmaster and pg_stat_activity's). A
// node_exporter URL is the lifecycle's (a generic scrape); the processes
// and disk of a server on this machine are then still read here.
func (t *Target) Samplers(ctx context.Context, hm target.HostMetrics, note func(format string, a ...any)) ([]sampler.Spec, error) {
	specs := []sampler.Spec{
		{Sampler: pgstat.NewStats(t.conn.ConnectStd, "")},
		{Sampler: pgstat.NewWaits(t.conn.ConnectStd), Interval: pgstat.WaitInterval},
	}
	switch src := hm.Source; {
	case src == target.HostNone:
		return specs, nil
	case src == target.HostSQL:
		host, err := t.sqlSamplers(ctx, hm, note)
		return append(specs, host...), err
	case src == target.HostLocal && t.Remote():
		return nil, errs.Usage("give --host-metrics sql (the server's /proc read through the database: a superuser, or pg_read_server_files) or --host-metrics http://HOST:9100/metrics (its node_exporter)",
			"--host-metrics local reads this machine's /proc, and the server runs on another machine (%s)", t.Describe())
	case t.Remote():
		if !hm.Scrape() {
			note("%s", whyRemote)
		} else {
			note("PostgreSQL process metrics not measured: node_exporter has no per-process figures (--host-metrics sql has them)")
		}
		return specs, nil
	}
	return append(specs, t.localSamplers(ctx, note)...), nil
}

// whyRemote says what a remote server's run does not measure and
// which options would.
const whyRemote = target.NotMeasuredNote + "remote server (the cpu, memory and network series are the driver's machine); " +
	"--host-metrics sql reads its /proc through the database, --host-metrics http://HOST:9100/metrics its node_exporter"

// localSamplers are the server's processes and disk read from this
// machine's /proc.
func (t *Target) localSamplers(ctx context.Context, note func(format string, a ...any)) []sampler.Spec {
	if runtime.GOOS != "linux" {
		note("PostgreSQL process and disk metrics not measured on %s: they read Linux's /proc and /sys (this machine's CPU, memory and network are measured)", runtime.GOOS)
		return nil
	}
	var specs []sampler.Spec
	src := system.Local{}
	dataDir, postmaster := t.locateServer(ctx)
	if postmaster == nil {
		note("PostgreSQL process metrics off: the server's processes are not visible here (another host, container or PID namespace?)")
	} else {
		specs = append(specs, sampler.Spec{Sampler: &system.PGProcs{Proc: procRoot, Postmaster: postmaster}, Host: sampler.HostServer, Source: src.Describe()})
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
		specs = append(specs, sampler.Spec{Sampler: &system.Disk{Src: src, Device: dev.Name}, Host: sampler.HostServer, Source: src.Describe()})
	}
	return specs
}

// sqlSamplers read the server's host through SQL: its files with
// pg_read_file, which needs a superuser or a role with EXECUTE on it and
// membership of pg_read_server_files. Without that privilege the host is
// not measured, and the note says which grant would allow it.
func (t *Target) sqlSamplers(ctx context.Context, hm target.HostMetrics, note func(format string, a ...any)) ([]sampler.Spec, error) {
	src := &sqlFiles{connect: t.conn.ConnectStd}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := src.check(cctx); err != nil {
		src.Close()
		var ne *notReadable
		if errors.As(err, &ne) {
			note("%s", ne.Error())
			return nil, nil
		}
		note("%s%v", target.NotMeasuredNote, err)
		return nil, nil
	}
	desc := src.Describe()
	specs := []sampler.Spec{
		{Sampler: &system.Host{Src: src, Prefix: system.ServerPrefix}, Host: sampler.HostServer, Source: desc, Shared: src},
		{Sampler: &system.PGProcs{Src: src, Procs: src.procs}, Host: sampler.HostServer, Source: desc, Shared: src},
	}
	dev := hm.Disk
	if dev == "" {
		var err error
		if dev, err = src.dataDisk(cctx); err != nil {
			note("disk metrics off: %v (give --host-disk NAME, the device as in the server's /proc/diskstats)", err)
		}
	}
	if dev != "" {
		specs = append(specs, sampler.Spec{Sampler: &system.Disk{Src: src, Device: dev}, Host: sampler.HostServer, Source: desc, Shared: src})
	}
	return specs, nil
}

// sqlFiles reads the server host's files with pg_read_file, on a
// connection of its own (made again after an error), with a timeout on
// every read: a slow server leaves a gap in the series, never a sampler
// that holds the run up.
type sqlFiles struct {
	connect Connector
	// mu serialises the samplers that share the source (and its
	// connection).
	mu   sync.Mutex
	conn *pgx.Conn
	role string
}

// sqlReadTimeout bounds one read of the server's files.
const sqlReadTimeout = 2 * time.Second

// maxFileBytes bounds one file (the /proc files read are a few KiB).
const maxFileBytes = 1 << 20

func (s *sqlFiles) Describe() string { return "pg_read_file through SQL" }

func (s *sqlFiles) conned(ctx context.Context) (*pgx.Conn, error) {
	if s.conn != nil && !s.conn.IsClosed() {
		return s.conn, nil
	}
	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.conn = c
	return c, nil
}

// Read reads the files in one statement; a file that does not exist comes
// back NULL and is left out.
func (s *sqlFiles) Read(ctx context.Context, paths []string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read(ctx, paths)
}

func (s *sqlFiles) read(ctx context.Context, paths []string) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, sqlReadTimeout)
	defer cancel()
	c, err := s.conned(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(ctx, "SELECT f, pg_read_file(f, 0, $2, true) FROM unnest($1::text[]) AS f", paths, maxFileBytes)
	if err != nil {
		s.drop()
		return nil, err
	}
	out := make(map[string][]byte, len(paths))
	for rows.Next() {
		var f string
		var b *string
		if err := rows.Scan(&f, &b); err != nil {
			rows.Close()
			s.drop()
			return nil, err
		}
		if b != nil {
			out[f] = []byte(*b)
		}
	}
	if err := rows.Err(); err != nil {
		s.drop()
		return nil, err
	}
	return out, nil
}

func (s *sqlFiles) drop() {
	if s.conn != nil {
		_ = s.conn.Close(context.Background())
		s.conn = nil
	}
}

// Close closes the connection (sampler.Closer).
func (s *sqlFiles) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop()
	return nil
}

// notReadable is a role that cannot read the server's files.
type notReadable struct {
	role string
	err  error
}

func (e *notReadable) Error() string {
	return fmt.Sprintf(target.NotMeasuredNote+"the role %s cannot read the server's files (%v); connect as a superuser, or "+
		"GRANT pg_read_server_files TO %s; GRANT EXECUTE ON FUNCTION pg_read_file(text, bigint, bigint, boolean) TO %s "+
		"(that role reads any file the server's OS user can read)", e.role, e.err, e.role, e.role)
}

// check reads a byte of /proc/stat: a role without the privilege gets a
// notReadable, a server without /proc (not Linux) an error saying so.
func (s *sqlFiles) check(ctx context.Context) error {
	c, err := s.conned(ctx)
	if err != nil {
		return err
	}
	if err := c.QueryRow(ctx, "SELECT current_user").Scan(&s.role); err != nil {
		return err
	}
	var b *string
	err = c.QueryRow(ctx, "SELECT pg_read_file('/proc/stat', 0, 64, true)").Scan(&b)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "42501":
		return &notReadable{role: s.role, err: errors.New(pe.Message)}
	case err != nil:
		s.drop()
		return err
	case b == nil:
		return errors.New("the server has no /proc/stat (a server not on Linux?)")
	}
	return nil
}

// procs are the postmaster (from postmaster.pid in the data directory) and
// the processes pg_stat_activity lists (backends and the auxiliary
// processes), the postmaster first.
func (s *sqlFiles) procs(ctx context.Context) (int, []int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, sqlReadTimeout)
	defer cancel()
	c, err := s.conned(ctx)
	if err != nil {
		return 0, nil, err
	}
	var pidFile string
	var pids []int32
	err = c.QueryRow(ctx, "SELECT pg_read_file('postmaster.pid'), array_agg(pid) FROM pg_stat_activity WHERE pid IS NOT NULL").Scan(&pidFile, &pids)
	if err != nil {
		s.drop()
		return 0, nil, err
	}
	root, err := system.ParsePostmasterPID([]byte(pidFile))
	if err != nil {
		return 0, nil, err
	}
	out := []int{root}
	for _, p := range pids {
		if int(p) != root {
			out = append(out, int(p))
		}
	}
	return root, out, nil
}

// dataDisk finds the disk under the data directory on the server's host:
// the device of the mount holding it in the server's mount table, and, for
// a partition, its whole disk (as the local disk sampler reads it), named
// as in the server's /proc/diskstats.
func (s *sqlFiles) dataDisk(ctx context.Context) (string, error) {
	c, err := s.conned(ctx)
	if err != nil {
		return "", err
	}
	var dataDir string
	if err := c.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dataDir); err != nil {
		return "", fmt.Errorf("the data directory is unknown: %w", err)
	}
	files, err := s.Read(ctx, []string{machine.MountinfoFile, "/proc/diskstats"})
	if err != nil {
		return "", err
	}
	mounts, err := machine.ParseMounts(files[machine.MountinfoFile])
	if err != nil {
		return "", fmt.Errorf("the server's mount table: %w", err)
	}
	m := machine.MountFor(mounts, dataDir)
	if m == nil {
		return "", fmt.Errorf("no mount holds %s on the server", dataDir)
	}
	majMin := m.Device()
	stats, err := machine.ParseDiskstats(files["/proc/diskstats"])
	if err != nil {
		return "", err
	}
	if name := wholeDisk(ctx, s.Read, majMin, stats); name != "" {
		return name, nil
	}
	return "", fmt.Errorf("%s is on %s (%s, device %s), which is not a disk in the server's /proc/diskstats", dataDir, m.MountPoint, m.FSType, majMin)
}

// wholeDisk is the name in diskstats of the device majMin, or of its whole
// disk when it is a partition (as the local disk sampler measures it), ""
// when diskstats has neither. The partition's disk is found by name:
// pg_read_file resolves ".." in the path's text, not through the /sys
// symlink, so /sys/dev/block/MAJ:MIN/../dev cannot be read; instead the
// disks whose name begins the partition's (sda for sda1, nvme0n1 for
// nvme0n1p2) are tried for /sys/block/DISK/PART/partition.
func wholeDisk(ctx context.Context, read func(context.Context, []string) (map[string][]byte, error), majMin string, stats map[string]machine.DiskStat) string {
	var name string
	for n, st := range stats {
		if fmt.Sprintf("%d:%d", st.Major, st.Minor) == majMin {
			name = n
		}
	}
	if name == "" {
		return ""
	}
	isPart := "/sys/dev/block/" + majMin + "/partition"
	if f, _ := read(ctx, []string{isPart}); len(f[isPart]) == 0 {
		return name
	}
	for disk := range stats {
		if disk == name || !strings.HasPrefix(name, disk) {
			continue
		}
		p := "/sys/block/" + disk + "/" + name + "/partition"
		if f, _ := read(ctx, []string{p}); len(f[p]) > 0 {
			return disk
		}
	}
	return name
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
