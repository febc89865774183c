package pg

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/tunebench/tunebench/internal/machine"
)

// LocalCPUs is how many CPUs the server can use when it runs on this
// machine: its postmaster's affinity and cgroup CPU quota (a managed
// server in a hardware envelope has the envelope's CPUs). ok is false for
// a server elsewhere, or when this machine cannot tell.
func (t *Target) LocalCPUs(ctx context.Context) (n int, ok bool) {
	dir, _ := t.LocalDataDir(ctx, nil)
	if dir == "" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return machine.ProcessCPUs(pid)
}

// LoadJobs is how many connections a load uses: given when it is more
// than 0; else one per CPU of the server when it runs here (where the
// server's cores are what a load can use), else one per CPU of this
// machine (the generators' side). why says which, for the load's note.
func (t *Target) LoadJobs(ctx context.Context, given int) (n int, why string) {
	if given > 0 {
		return given, "--jobs"
	}
	if n, ok := t.LocalCPUs(ctx); ok {
		return n, "the server's CPUs"
	}
	return runtime.NumCPU(), "this machine's CPUs"
}

// LoadSessions wraps a load's connector: every session commits
// synchronously, whatever the server's synchronous_commit. A row whose
// commit is not yet flushed cannot get its hint bits, so a VACUUM right
// after an asynchronous commit leaves the pages for the first query to
// rewrite and not all-visible; a load commits a few times, so the flush
// costs nothing measurable.
func LoadSessions(connect func(context.Context) (*pgx.Conn, error)) func(context.Context) (*pgx.Conn, error) {
	return func(ctx context.Context) (*pgx.Conn, error) {
		conn, err := connect(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := conn.Exec(ctx, "set synchronous_commit = on"); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		return conn, nil
	}
}
