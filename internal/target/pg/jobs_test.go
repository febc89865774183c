package pg

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/machine"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/testutil"
)

// A load's default jobs are the CPUs of a server running here (read from
// its postmaster), and its sessions commit synchronously on a server set
// to commit asynchronously (the test servers are).
func TestLoadJobsAndSessions(t *testing.T) {
	srv := testutil.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg, err := Driver{}.Open(ctx, target.Spec{DSN: srv.DSN()})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(context.Background())
	pg := tg.(*Target)

	b, err := os.ReadFile(filepath.Join(srv.DataDir(), "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	want, ok := machine.ProcessCPUs(pid)
	if !ok {
		t.Fatalf("no CPUs for the postmaster (pid %d)", pid)
	}
	if n, why := pg.LoadJobs(ctx, 0); n != want || why != "the server's CPUs" {
		t.Errorf("default jobs %d (%s), want %d (the server's CPUs)", n, why, want)
	}
	if n, why := pg.LoadJobs(ctx, 3); n != 3 || why != "--jobs" {
		t.Errorf("given jobs: %d (%s), want 3", n, why)
	}

	conn, err := LoadSessions(pg.Connect)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var sc string
	if err := conn.QueryRow(ctx, "show synchronous_commit").Scan(&sc); err != nil || sc != "on" {
		t.Errorf("a load session's synchronous_commit: %q %v, want on", sc, err)
	}
}
