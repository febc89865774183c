// Package envinfo takes a snapshot of the environment a run measured: the
// host (CPU, memory, kernel, clock source), the filesystem and mount options
// under the database's data directory with its block device (queue settings
// from /sys) and on-disk format (dumpe2fs -h, xfs_info, /sys/fs/btrfs), the
// PostgreSQL server (version and all non-default settings, secrets redacted)
// and the benchmark driver itself. The snapshot is stored with every run as
// versioned JSON (SnapshotVersion).
//
// Collection is best-effort: what cannot be read is left empty and, where the
// reason matters, noted in Snapshot.Warnings. Nothing here changes the system.
package envinfo

import (
	"context"
	"path/filepath"
	"runtime"
	"time"

	"github.com/tunebench/tunebench/internal/redact"
)

// SnapshotVersion is the version of the snapshot this package writes.
// Version 1: the snapshots written before the version was recorded (no
// "version" field). Version 2 adds it and, under data_dir, the block device
// (block_device) and the filesystem's on-disk format (fs_features). Every
// field added since version 1 is optional, so a snapshot of any version
// reads into the same types.
const SnapshotVersion = 2

// Snapshot is the environment of one run.
type Snapshot struct {
	// Version is the version of this shape the snapshot was written with
	// (0 in a version 1 snapshot; SchemaVersion reads it).
	Version int  `json:"version,omitempty"`
	Host    Host `json:"host"`
	DataDir *FS  `json:"data_dir,omitempty"` // filesystem of the database data directory
	// WALDir is the filesystem of pg_wal when it is not the data
	// directory's (initdb --waldir).
	WALDir *FS `json:"wal_dir,omitempty"`
	// Layout is the storage layout the data directory was made on (an
	// experiment's matrix.storage), nil otherwise.
	Layout *Layout `json:"layout,omitempty"`
	// Envelope is the hardware envelope the server ran in (an
	// experiment's matrix.envelope), nil otherwise.
	Envelope *Envelope `json:"envelope,omitempty"`
	// Kernel are the kernel settings an experiment set for the run
	// (target.kernel, matrix.kernel), with the values they replaced.
	Kernel   []KernelSetting `json:"kernel,omitempty"`
	Postgres *Postgres       `json:"postgres,omitempty"`
	// Database is a database server other than PostgreSQL (MariaDB).
	Database *Database `json:"database,omitempty"`
	// Server is where the server is and the round trip to it (nil when
	// not recorded: no connection, or a run before this field).
	Server *Server `json:"server,omitempty"`
	// Target is the experiment's named target the run ran on (targets:,
	// matrix.target), nil otherwise.
	Target *NamedTarget `json:"target,omitempty"`
	// Notes say what the database's figures mean where they differ from
	// other databases' (its default isolation level, where its
	// transaction counter comes from), as its target gives them
	// (target.Noter); a report of several databases shows them once.
	Notes    []Note    `json:"notes,omitempty"`
	Driver   Driver    `json:"driver"` // the tunebench process
	TakenAt  time.Time `json:"taken_at"`
	Warnings []string  `json:"warnings,omitempty"` // what could not be collected, and why
	// Shards, in a run merged from shards, are the environments of shards
	// 1 to N-1 (this snapshot is shard 0's, or when shard 0 is missing,
	// Shard0Missing, the first present shard's); a missing shard has none.
	Shards        []*Snapshot `json:"shards,omitempty"`
	Shard0Missing bool        `json:"shard0_missing,omitempty"`
}

// SchemaVersion is the version of the shape s was written with: 1 for a
// snapshot stored before versions were recorded.
func (s *Snapshot) SchemaVersion() int {
	if s.Version == 0 {
		return 1
	}
	return s.Version
}

// Driver describes the benchmark driver process.
type Driver struct {
	GoVersion        string `json:"go_version"`
	TunebenchVersion string `json:"tunebench_version"`
	GOMAXPROCS       int    `json:"gomaxprocs"`
	NumCPU           int    `json:"num_cpu"` // CPUs usable by this process (affinity mask)
}

// DriverInfo describes this process; version is tunebench's version string.
func DriverInfo(version string) Driver {
	return Driver{
		GoVersion:        runtime.Version(),
		TunebenchVersion: version,
		GOMAXPROCS:       runtime.GOMAXPROCS(0),
		NumCPU:           runtime.NumCPU(),
	}
}

// Options says what Take collects.
type Options struct {
	// DataDir is the database's data directory (or any path on the filesystem
	// under test); empty skips the filesystem part.
	DataDir string
	// Conn is a connection to the PostgreSQL server; nil skips that part.
	Conn Querier
	// Version is tunebench's version string.
	Version string
	// Now is the snapshot time; zero means the current time.
	Now time.Time
	// Remote: the server is on another machine (Server.Remote).
	Remote bool
}

// Take collects a snapshot. It does not fail: parts that cannot be collected
// are left out and the reason is added to Warnings (redacted).
func Take(ctx context.Context, o Options) *Snapshot {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	s := &Snapshot{
		Version: SnapshotVersion,
		Host:    HostInfo(),
		Driver:  DriverInfo(o.Version),
		TakenAt: now.UTC(),
	}
	if o.Conn != nil {
		pg, err := PostgresInfo(ctx, o.Conn)
		if err != nil {
			s.Warnings = append(s.Warnings, redact.Patterns("postgres: "+err.Error()))
		} else {
			s.Postgres = pg
		}
		if srv, err := ServerInfo(ctx, o.Conn, o.Remote); err != nil {
			s.Warnings = append(s.Warnings, redact.Patterns("server address and round trip: "+err.Error()))
		} else {
			s.Server = srv
		}
	}
	if dataDir := o.DataDir; dataDir != "" {
		fs, err := FSInfo(dataDir)
		if err != nil {
			s.Warnings = append(s.Warnings, redact.Patterns("data directory filesystem: "+err.Error()))
		} else {
			s.DataDir = fs
			for _, w := range StorageInfo(ctx, fs) {
				s.Warnings = append(s.Warnings, redact.Patterns("data directory "+w))
			}
		}
		// pg_wal on another filesystem (initdb --waldir, a WAL device):
		// that one shapes the commits, so it is described too.
		if wal, err := filepath.EvalSymlinks(filepath.Join(dataDir, "pg_wal")); err == nil && s.DataDir != nil {
			if fs, err := FSInfo(wal); err == nil && fs.Device != s.DataDir.Device {
				s.WALDir = fs
				for _, w := range StorageInfo(ctx, fs) {
					s.Warnings = append(s.Warnings, redact.Patterns("WAL directory "+w))
				}
			}
		}
	}
	return s
}
