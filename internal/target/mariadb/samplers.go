package mariadb

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/metrics/system"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/target"
)

// Samplers: the server's counters (SHOW GLOBAL STATUS) as rates, its
// wait events from performance_schema when it is on, and for a server on
// this machine its process (CPU, memory, I/O) and the disk under its data.
func (t *Target) Samplers(ctx context.Context, hm target.HostMetrics, note func(format string, a ...any)) ([]sampler.Spec, error) {
	if note == nil {
		note = func(string, ...any) {}
	}
	specs := []sampler.Spec{{Sampler: statusSampler(t)}}
	if on, err := t.performanceSchema(ctx); err != nil {
		note("wait events not measured: %v", err)
	} else if !on {
		note("wait events not measured: performance_schema is off (performance_schema=ON in the server's option file, then a restart)")
	} else {
		specs = append(specs, sampler.Spec{Sampler: waitSampler(t)})
	}
	switch src := hm.Source; {
	case src == target.HostNone:
		return specs, nil
	case src == target.HostSQL:
		note("%sMariaDB's host is not read through SQL (--host-metrics sql is PostgreSQL's pg_read_file); give its node_exporter: --host-metrics http://HOST:9100/metrics", target.NotMeasuredNote)
		return specs, nil
	case src == target.HostLocal && t.Remote():
		return nil, errs.Usage("give --host-metrics http://HOST:9100/metrics (the server host's node_exporter)",
			"--host-metrics local reads this machine's /proc, and the server runs on another machine (%s)", t.Describe())
	case t.Remote():
		if !hm.Scrape() {
			note("%sremote server (the cpu, memory and network series are the driver's machine); --host-metrics http://HOST:9100/metrics reads its node_exporter", target.NotMeasuredNote)
		}
		return specs, nil
	}
	return append(specs, t.localSamplers(ctx, note)...), nil
}

// localSamplers are mariadbd's process and its data's disk, from this
// machine's /proc.
func (t *Target) localSamplers(ctx context.Context, note func(format string, a ...any)) []sampler.Spec {
	if runtime.GOOS != "linux" {
		note("MariaDB process and disk metrics not measured on %s: they read Linux's /proc and /sys", runtime.GOOS)
		return nil
	}
	pidFile, dataDir, err := t.serverFiles(ctx)
	if err != nil {
		note("MariaDB process and disk metrics off: %v", err)
		return nil
	}
	src := system.Local{}
	pid := func() (int, error) {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimSpace(string(b)))
	}
	var specs []sampler.Spec
	if _, err := pid(); err != nil {
		note("MariaDB process metrics off: its pid file %s is not readable here (%v)", pidFile, err)
	} else {
		specs = append(specs, sampler.Spec{Sampler: &system.PGProcs{Prefix: "mariadb.", Proc: "/proc", Postmaster: pid}, Host: sampler.HostServer, Source: src.Describe()})
	}
	if dev, _, err := system.DeviceForPath(dataDir); err != nil {
		note("disk metrics off: %v", err)
	} else {
		specs = append(specs, sampler.Spec{Sampler: &system.Disk{Src: src, Device: dev.Name}, Host: sampler.HostServer, Source: src.Describe()})
	}
	return specs
}

// serverFiles are the server's pid file and data directory, as it says.
func (t *Target) serverFiles(ctx context.Context) (pidFile, dataDir string, err error) {
	db, err := t.Open("")
	if err != nil {
		return "", "", err
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT @@pid_file, @@datadir").Scan(&pidFile, &dataDir); err != nil {
		return "", "", err
	}
	if !filepath.IsAbs(pidFile) {
		pidFile = filepath.Join(dataDir, pidFile)
	}
	return pidFile, dataDir, nil
}

// performanceSchema reports whether performance_schema is on.
func (t *Target) performanceSchema(ctx context.Context) (bool, error) {
	db, err := t.Open("")
	if err != nil {
		return false, err
	}
	defer db.Close()
	var on int
	if err := db.QueryRowContext(ctx, "SELECT @@performance_schema").Scan(&on); err != nil {
		return false, err
	}
	return on == 1, nil
}

// statusCounters are the SHOW GLOBAL STATUS counters sampled, by series.
var statusCounters = map[string]string{
	"Com_commit": "mariadb.commits", "Com_rollback": "mariadb.rollbacks",
	"Innodb_rows_read": "mariadb.rows_read", "Innodb_rows_inserted": "mariadb.rows_inserted",
	"Innodb_rows_updated": "mariadb.rows_updated", "Innodb_rows_deleted": "mariadb.rows_deleted",
	"Innodb_buffer_pool_read_requests": "mariadb.buffer_pool_read_requests", "Innodb_buffer_pool_reads": "mariadb.buffer_pool_reads",
	"Innodb_log_writes":     "mariadb.log_writes",
	"Innodb_row_lock_waits": "mariadb.row_lock_waits", "Innodb_deadlocks": "mariadb.deadlocks",
	"Innodb_data_written": "mariadb.data_written_bytes", "Innodb_os_log_written": "mariadb.log_written_bytes",
}

// rateSampler reads counters with a query of two columns (a name and a
// value) and gives their rates per second since the last sample (nothing
// on the first): SHOW GLOBAL STATUS, and performance_schema's time waited
// per event, which per second is the average number of threads waiting on
// it (as PostgreSQL's sampled wait events give the active sessions).
type rateSampler struct {
	t     *Target
	name  string
	query string
	// series names a row's counter and reads its value (false: not
	// sampled).
	series func(name, val string) (string, float64, bool)
	db     *sql.DB
	prev   map[string]float64
	at     time.Time
}

func (s *rateSampler) Name() string { return s.name }

func (s *rateSampler) Sample(ctx context.Context, now time.Time) ([]sampler.Point, error) {
	if s.db == nil {
		db, err := s.t.Open("")
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		s.db = db
	}
	cur := map[string]float64{}
	err := query(ctx, s.db, s.query, func(name, val string) {
		if k, v, ok := s.series(name, val); ok {
			cur[k] = v
		}
	})
	if err != nil {
		return nil, err
	}
	return rates(&s.prev, &s.at, cur, now), nil
}

// Close releases the sampler's connection.
func (s *rateSampler) Close() error {
	if s.db != nil {
		return s.db.Close()
	}
	return nil
}

func statusSampler(t *Target) *rateSampler {
	return &rateSampler{t: t, name: "mariadb status", query: "SHOW GLOBAL STATUS", series: func(name, val string) (string, float64, bool) {
		k, ok := statusCounters[name]
		f, err := strconv.ParseFloat(val, 64)
		return k, f, ok && err == nil
	}}
}

func waitSampler(t *Target) *rateSampler {
	return &rateSampler{t: t, name: "mariadb waits",
		query: "SELECT EVENT_NAME, SUM_TIMER_WAIT FROM performance_schema.events_waits_summary_global_by_event_name WHERE SUM_TIMER_WAIT > 0 AND EVENT_NAME <> 'idle'",
		series: func(name, val string) (string, float64, bool) {
			f, err := strconv.ParseFloat(val, 64)
			// wait/io/file/innodb/innodb_log_file -> wait.io/file/innodb/innodb_log_file;
			// picoseconds -> seconds.
			return "wait." + strings.TrimPrefix(name, "wait/"), f / 1e12, err == nil
		}}
}

// query runs a query of two text columns.
func query(ctx context.Context, db *sql.DB, q string, each func(a, b string)) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var a, b sql.NullString
		if err := rows.Scan(&a, &b); err != nil {
			return err
		}
		each(a.String, b.String)
	}
	return rows.Err()
}

// rates turns counters into rates per second since the previous sample,
// leaving out a counter that went down (a restart).
func rates(prev *map[string]float64, at *time.Time, cur map[string]float64, now time.Time) []sampler.Point {
	var out []sampler.Point
	if *prev != nil {
		if dt := now.Sub(*at).Seconds(); dt > 0 {
			for k, v := range cur {
				if p, ok := (*prev)[k]; ok && v >= p {
					if r := (v - p) / dt; r > 0 || !strings.HasPrefix(k, "wait.") {
						out = append(out, sampler.Point{Series: k, V: r})
					}
				}
			}
		}
	}
	*prev, *at = cur, now
	return out
}

const product = "MariaDB"

// Charts are MariaDB's chart vocabulary (target.Charter).
func (Driver) Charts() []results.ChartDef {
	const mb = 1e-6
	return []results.ChartDef{
		{Product: product, Title: "Process CPU", Series: []results.ChartSeries{{Name: "mariadb.proc_cpu_pct", Label: "MariaDB server"}}},
		{Product: product, Title: "Wait events (performance_schema)", After: "Process CPU", YLabel: "average threads waiting", Scale: 1, Stacked: true, Prefix: "wait.", MaxLayers: 8},
		{Product: product, Title: "Disk throughput (data directory device)", Series: []results.ChartSeries{
			{Name: "mariadb.proc_read_bytes_s", Label: "MariaDB read"}, {Name: "mariadb.proc_write_bytes_s", Label: "MariaDB write"}}},
		{Product: product, Title: "InnoDB writes", After: "Disk utilisation", YLabel: "MB/s", Scale: mb, Series: []results.ChartSeries{
			{Name: "mariadb.log_written_bytes", Label: "redo log written"}, {Name: "mariadb.data_written_bytes", Label: "data written"}}},
		{Product: product, Title: "Redo log writes", After: "InnoDB writes", YLabel: "per second", Scale: 1, Series: []results.ChartSeries{
			{Name: "mariadb.log_writes", Label: "log writes"}}},
		{Product: product, Title: "Database transactions", After: "Redo log writes", YLabel: "per second", Scale: 1, Series: []results.ChartSeries{
			{Name: "mariadb.commits", Label: "commits"}, {Name: "mariadb.rollbacks", Label: "rollbacks"}}},
		{Product: product, Title: "Rows", After: "Database transactions", YLabel: "rows per second", Scale: 1, Series: []results.ChartSeries{
			{Name: "mariadb.rows_read", Label: "read"}, {Name: "mariadb.rows_inserted", Label: "inserted"},
			{Name: "mariadb.rows_updated", Label: "updated"}, {Name: "mariadb.rows_deleted", Label: "deleted"}}},
		{Product: product, Title: "Buffer pool", After: "Rows", YLabel: "pages per second", Scale: 1, Series: []results.ChartSeries{
			{Name: "mariadb.buffer_pool_read_requests", Label: "logical reads"}, {Name: "mariadb.buffer_pool_reads", Label: "reads from disk"}}},
		{Product: product, Title: "Row locks", After: "Buffer pool", YLabel: "per second", Scale: 1, OmitIfZero: true, Series: []results.ChartSeries{
			{Name: "mariadb.row_lock_waits", Label: "lock waits"}, {Name: "mariadb.deadlocks", Label: "deadlocks"}}},
		{Product: product, Title: "Memory", Series: []results.ChartSeries{{Name: "mariadb.proc_rss_bytes", Label: "MariaDB RSS"}}},
	}
}
