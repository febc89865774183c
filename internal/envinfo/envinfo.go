// Package envinfo takes a snapshot of the environment a run measured: the
// host (CPU, memory, kernel, clock source), the filesystem and mount options
// under the database's data directory, the PostgreSQL server (version and all
// non-default settings, secrets redacted) and the benchmark driver itself.
// The snapshot is stored with every run as JSON.
//
// Collection is best-effort: what cannot be read is left empty and, where the
// reason matters, noted in Snapshot.Warnings. Nothing here changes the system.
package envinfo

import (
	"context"
	"runtime"
	"time"

	"github.com/tunebench/tunebench/internal/redact"
)

// Snapshot is the environment of one run.
type Snapshot struct {
	Host     Host      `json:"host"`
	DataDir  *FS       `json:"data_dir,omitempty"` // filesystem of the database data directory
	Postgres *Postgres `json:"postgres,omitempty"`
	Driver   Driver    `json:"driver"` // the tunebench process
	TakenAt  time.Time `json:"taken_at"`
	Warnings []string  `json:"warnings,omitempty"` // what could not be collected, and why
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
}

// Take collects a snapshot. It does not fail: parts that cannot be collected
// are left out and the reason is added to Warnings (redacted).
func Take(ctx context.Context, o Options) *Snapshot {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	s := &Snapshot{
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
	}
	// Without an explicit directory, describe the filesystem under the
	// server's own data directory (when the server told us where it is).
	dataDir := o.DataDir
	if dataDir == "" && s.Postgres != nil {
		dataDir = s.Postgres.DataDirectory
	}
	if dataDir != "" {
		fs, err := FSInfo(dataDir)
		if err != nil {
			s.Warnings = append(s.Warnings, redact.Patterns("data directory filesystem: "+err.Error()))
		} else {
			s.DataDir = fs
		}
	}
	return s
}
