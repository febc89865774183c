// Package target is the contract of a database under test: how to reach
// it, change and restore its settings, make and reset the databases of an
// experiment, sample its statistics, snapshot its environment and run a
// worker's statements on it. One package per database implements it
// (internal/target/pg); internal/target/all is the list the CLI chooses
// from. Nothing above this package knows which database it talks to; a
// workload's dialect-specific code (its loader, its checks) reaches the
// concrete target through that package's escape hatch.
package target

import (
	"context"
	"io"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/results"
)

// Target is a database to benchmark: a server and one database on it.
type Target interface {
	// Dialect names the SQL dialect, e.g. "postgres"; workloads list the
	// dialects they speak.
	Dialect() string
	// Describe says where it is, for messages (no secrets).
	Describe() string
	// Database is the name of the target's database.
	Database() string
	// WithDatabase is the same server with another database.
	WithDatabase(name string) Target
	// Settings changes the server's settings.
	Settings() Settings
	// Databases makes, drops and copies databases (nil: the target cannot).
	Databases() Databases
	// Samplers are the target's metric samplers for a run: the server's
	// statistics, and, as hm says, its host's (CPU, memory, network,
	// pressure), its processes and the disk under its data, each Spec
	// naming its host and source. note reports a sampler left out, and
	// why. An error is a host-metric source that cannot work here (local
	// with a server on another machine), said before the run.
	Samplers(ctx context.Context, hm HostMetrics, note func(format string, a ...any)) ([]sampler.Spec, error)
	// Env snapshots the environment of a run on this target.
	Env(ctx context.Context, version string) *envinfo.Snapshot
	// Remote reports whether the server is on another machine: its host's
	// CPU, memory, disks and processes are not measured, and nothing of
	// its filesystem can be used.
	Remote() bool
	// ScratchDir is a directory next to the server's data, on the same
	// filesystem, for workloads that need files (storage, fsblog); ok is
	// false when the target has none (a server of unknown layout).
	ScratchDir(name string) (dir string, ok bool)
	// Close releases what the target holds: restores the settings it
	// applied when opened and stops a server it started.
	Close(ctx context.Context) error
}

// HostMetrics says how a run measures the database server's host: its
// CPU, memory, network, pressure stall, the disk under the data and the
// server's processes.
type HostMetrics struct {
	// Source is HostAuto ("" too: this machine's /proc when the server
	// runs here, nothing otherwise), HostLocal, HostSQL (the server's own
	// /proc files read through the database: opt-in, it needs a
	// privilege that reads any file of the server's OS user), HostNone,
	// or the URL of the host's node_exporter (http://HOST:9100/metrics),
	// scraped by the lifecycle.
	Source string
	// Disk names the server host's disk, as in /proc/diskstats, when the
	// source cannot find the one under the data directory
	// (node_exporter).
	Disk string
	// ContainerURL is a cAdvisor or kubelet /metrics endpoint, and
	// Container the server's container name or id in it.
	ContainerURL, Container string
}

// NotMeasuredNote starts a sampler note that says why the server's host
// is not measured (the rest of the note); the run records it.
const NotMeasuredNote = "server host not measured: "

// Host metric sources (HostMetrics.Source).
const (
	HostAuto  = "auto"
	HostLocal = "local"
	HostSQL   = "sql"
	HostNone  = "none"
)

// Scrape reports whether the source is a URL to scrape (node_exporter).
func (h HostMetrics) Scrape() bool {
	return strings.HasPrefix(h.Source, "http://") || strings.HasPrefix(h.Source, "https://")
}

// Check says what is wrong with hm, as a usage error with the fix.
func (h HostMetrics) Check() error {
	switch h.Source {
	case "", HostAuto, HostLocal, HostSQL, HostNone:
	default:
		if !h.Scrape() {
			return errs.Usage("give auto, local, sql, none, or the http:// URL of the server host's node_exporter (e.g. http://db1:9100/metrics)",
				"--host-metrics %q is not a source", h.Source)
		}
		if _, err := url.Parse(h.Source); err != nil {
			return errs.Usage("give the URL node_exporter serves, e.g. http://db1:9100/metrics", "--host-metrics: %v", err)
		}
	}
	if (h.ContainerURL == "") != (h.Container == "") {
		return errs.Usage("give both: --container-metrics http://NODE:8080/metrics (cAdvisor, or a kubelet's /metrics/cadvisor) and --container NAME (the server's container, by name or id)",
			"--container-metrics and --container go together")
	}
	if h.ContainerURL != "" && !strings.HasPrefix(h.ContainerURL, "http://") && !strings.HasPrefix(h.ContainerURL, "https://") {
		return errs.Usage("give the http:// URL of cAdvisor's /metrics (or a kubelet's /metrics/cadvisor)", "--container-metrics %q is not a URL", h.ContainerURL)
	}
	return nil
}

// Setting is one server setting, name=value.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (s Setting) String() string { return s.Name + "=" + s.Value }

// Settings changes a server's settings.
type Settings interface {
	// Parse checks "name=value" (a usage error when malformed).
	Parse(kv string) (Setting, error)
	// Check validates settings without changing anything (names, types,
	// units, ranges, enum values, and what the machine can hold when the
	// target knows it).
	Check(ctx context.Context, s []Setting) error
	// Apply makes settings effective (a reload, or a restart when one
	// needs it), verifies them, and returns what to restore. It changes
	// nothing when it fails.
	Apply(ctx context.Context, s []Setting) (Change, error)
}

// Change is a set of applied settings.
type Change interface {
	// Values are the applied settings' values by name.
	Values() map[string]string
	// Restarted reports whether the server was restarted to apply them.
	Restarted() bool
	// Restore puts the previous values back (also after an interrupt:
	// give it a context that is not cancelled).
	Restore(ctx context.Context) error
}

// Databases makes the databases of an experiment: a template loaded once,
// a copy per run. A marker (a comment on the database) says tunebench made
// it and what data it holds; tunebench drops only what it marked.
type Databases interface {
	// State reports whether db exists and its marker ("" when none).
	State(ctx context.Context, db string) (exists bool, marker string, err error)
	// Create makes an empty database marked with marker.
	Create(ctx context.Context, db, marker string) error
	// Mark replaces db's marker.
	Mark(ctx context.Context, db, marker string) error
	// DropOwn drops db if its marker starts with own; a database of that
	// name that tunebench did not make is refused (usage error).
	DropOwn(ctx context.Context, db, own string) error
	// Seal closes db to connections (a template must be idle).
	Seal(ctx context.Context, db string) error
	// Copy makes db a copy of template (db must not exist).
	Copy(ctx context.Context, db, template string) error
}

// DefaultRestartTimeout is how long a restart command and the server's
// return may take together unless the user says otherwise
// (--restart-timeout, target.restart_timeout).
const DefaultRestartTimeout = 5 * time.Minute

// Spec says which target to open.
type Spec struct {
	// The command line: a connection string, a managed server's
	// directory, a database name.
	DSN, ServerDir, Database string
	// RestartCommand restarts the server of a DSN (a server tunebench does
	// not manage, such as one on another machine), so that settings which
	// need a restart can be applied and restored; "" refuses them.
	RestartCommand string
	// RestartTimeout bounds the restart command and the server's return
	// (0: DefaultRestartTimeout).
	RestartTimeout time.Duration
	// Managed starts (or attaches to) a managed server (experiments); the
	// target then owns it and Close stops a server it started.
	Managed *Managed
	// Own makes the target keep every setting it applies until Close
	// restores them (experiments); otherwise each Change is restored by
	// the caller.
	Own bool
	// Base settings are applied when the target opens and restored by
	// Close (with Own).
	Base []Setting
	// Avoid lists databases the spec's connection must not name (an
	// experiment recreates them); the target refuses it before it changes
	// anything.
	Avoid []string
	// Getenv reads the environment (connection defaults, $TUNEBENCH_DSN).
	Getenv   func(string) string
	Redactor *redact.Redactor
	// Log receives the managed server's messages (nil: none).
	Log io.Writer
}

// Managed describes a managed server to start or attach to.
type Managed struct {
	// Engine names the driver of a new server ("": PostgreSQL, the
	// default); a directory that holds a server keeps its own.
	Engine string
	Dir    string // the server's directory; "" = a temporary one, removed by Close
	Port   int
	PGBin  string
	RunAs  string
	// WALDir puts pg_wal there when the server's data directory is made
	// (a storage layout's WAL device).
	WALDir string
	// Wrap prepares the commands that start the server (a hardware
	// envelope's cgroup); a server already running cannot be wrapped.
	Wrap func(*exec.Cmd) error
}

// Driver opens the targets of one kind of database.
type Driver interface {
	// Name is the driver's name ("postgres").
	Name() string
	// Accepts reports whether the spec names one of its targets.
	Accepts(s Spec) bool
	// Check validates the spec without connecting (syntax, no password on
	// the command line, an allowed host).
	Check(s Spec) error
	Open(ctx context.Context, s Spec) (Target, error)
}

// SettingsCatalog is what a driver knows of its database's settings
// without reaching a server: an experiment file's setting names are
// checked against it as the file is read (with suggestions), and its runs
// are ordered by the settings that need a restart. The server checks
// names and values again when they are applied.
type SettingsCatalog interface {
	// Setting says whether name is a known setting and whether changing
	// it needs a server restart.
	Setting(name string) (known, restart bool)
	// SettingNames lists the known names (for suggestions).
	SettingNames() []string
	// Managed reports a setting the driver sets itself (where the server
	// listens, its files), which an experiment cannot vary.
	Managed(name string) bool
	// Product names the database in messages ("PostgreSQL").
	Product() string
}

// ManagedChecker is a Driver that can say, before anything starts,
// whether it can run a managed server on this machine.
type ManagedChecker interface {
	ManagedSupported() error
}

// Cataloger is a Driver with a settings catalogue.
type Cataloger interface {
	SettingsCatalog() SettingsCatalog
}

// CatalogFor is the settings catalogue of the driver that accepts s (nil
// when that driver has none, or none accepts it).
func CatalogFor(drivers []Driver, s Spec) SettingsCatalog {
	for _, d := range drivers {
		if d.Accepts(s) {
			if c, ok := d.(Cataloger); ok {
				return c.SettingsCatalog()
			}
			return nil
		}
	}
	return nil
}

// Check validates a spec with the first driver that accepts it.
func Check(drivers []Driver, s Spec) error {
	for _, d := range drivers {
		if d.Accepts(s) {
			return d.Check(s)
		}
	}
	return errs.Usage("give a PostgreSQL connection string with --dsn, or --server-dir", "no database target accepts this connection")
}

// Open opens the target a spec names with the first driver that accepts it.
func Open(ctx context.Context, drivers []Driver, s Spec) (Target, error) {
	for _, d := range drivers {
		if d.Accepts(s) {
			return d.Open(ctx, s)
		}
	}
	return nil, errs.Usage("give a PostgreSQL connection string with --dsn, or --server-dir", "no database target accepts this connection")
}

// Speaks reports whether a workload that speaks dialects can run on t.
func Speaks(dialects []string, t Target) bool {
	for _, d := range dialects {
		if d == t.Dialect() {
			return true
		}
	}
	return false
}

// Rendezvouser is a target through which the shards of a run split over
// several drivers meet (the database every shard reaches), and whose
// clock they measure theirs against.
type Rendezvouser interface {
	// ServerClock is the offset of the server's clock from this
	// machine's (server - here), and the round trip it was read in.
	ServerClock(ctx context.Context) (offset, rtt time.Duration, err error)
	// Join records shard index of count under key and waits until every
	// shard has joined; it returns the server's time of the last join.
	Join(ctx context.Context, key string, index, count int, joined func(n int)) (time.Time, error)
}

// ClientEnver is a Target that tells a shell command (an experiment's
// hook) how to reach it: the variables its database's own client tools
// read (PGHOST, PGPORT, PGUSER, PGDATABASE for PostgreSQL; never a
// password) and, for a server on this machine, where its files are.
type ClientEnver interface {
	ClientEnv() map[string]string
}

// Charter is a Driver with a chart vocabulary: how the report draws the
// series its samplers record for a run on its database (its statistics,
// its server's processes), merged into the report's own charts
// (results.ChartsFor).
type Charter interface {
	Charts() []results.ChartDef
}

// ChartsOf collects the chart vocabularies of the drivers.
func ChartsOf(drivers []Driver) []results.ChartDef {
	var out []results.ChartDef
	for _, d := range drivers {
		if c, ok := d.(Charter); ok {
			out = append(out, c.Charts()...)
		}
	}
	return out
}

// Noter is a Target that says where its database's figures mean
// something of their own (envinfo.Note topics: the default isolation
// level, the source of the database side's transaction counter). Every
// run records the notes with its environment; a report that puts several
// databases side by side shows them once.
type Noter interface {
	Notes() []envinfo.Note
}

// SettingsRestorer is a Target opened for an experiment (Spec.Own) that
// can put back every setting applied through it since it opened, base
// settings included, and keep the server running: the named targets of
// an experiment that share one server differ in their settings, and the
// next one starts from the server's own values. restarted says whether a
// restart was needed for that.
type SettingsRestorer interface {
	RestoreSettings(ctx context.Context) (restarted bool, err error)
}

// ErrorsHinter is a Target that names the fix of a run whose errors
// exceeded its threshold, by the error code most of them had, in its
// database's terms ("" leaves it to the SQLSTATE rules PostgreSQL's
// errors follow).
type ErrorsHinter interface {
	ErrorsHint(byCode map[string]int64) string
}
