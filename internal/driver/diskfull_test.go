package driver

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestIsDiskFull(t *testing.T) {
	pg := func(code, msg string) error {
		return fmt.Errorf("copy pgbench_accounts: %w", &pgconn.PgError{Code: code, Message: msg})
	}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"disk_full", pg("53100", `could not extend file "base/5/16393": No space left on device`), true},
		{"ENOSPC", fmt.Errorf("writing blog-1/article-1: %w", &fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}), true},
		{"text only", errors.New("fio: No space left on device"), true},
		{"out of memory", pg("53200", "out of memory"), false},
		{"too many connections", pg("53300", "sorry, too many clients already"), false},
		{"eof", io.EOF, false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := IsDiskFull(c.err); got != c.want {
			t.Errorf("%s: IsDiskFull = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDominant(t *testing.T) {
	if got := Dominant(map[string]int64{"40001": 3, "53100": 9, "client": 1}); got != "53100" {
		t.Errorf("dominant %q, want 53100", got)
	}
	if got := Dominant(map[string]int64{"53100": 2, "40001": 2}); got != "40001" {
		t.Errorf("tie: %q, want the lowest code 40001", got)
	}
	if got := Dominant(nil); got != "" {
		t.Errorf("no errors: %q", got)
	}
}

// TestErrorsHint: the run's fix line follows the SQLSTATE most errors had;
// only the workload's own errors are accepted with --max-errors-pct.
func TestErrorsHint(t *testing.T) {
	space := func() Space { return Space{Dir: "/mnt/pg/srv", Mount: "/mnt/pg", Free: 7 << 10, Known: true} }
	cases := []struct {
		by      map[string]int64
		want    []string
		notWant string
	}{
		{map[string]int64{"53100": 40, "40001": 2}, []string{"disk full", "53100", "/mnt/pg", "7.0 KiB free", "free space"}, "max-errors-pct"},
		{map[string]int64{"53200": 5}, []string{"out of memory", "work_mem"}, "max-errors-pct"},
		{map[string]int64{"53300": 5}, []string{"too many connections", "max_connections"}, "max-errors-pct"},
		{map[string]int64{"53400": 5}, []string{"53400", "server's log"}, "max-errors-pct"},
		{map[string]int64{"40001": 9, "53100": 1}, []string{"raise --max-errors-pct"}, "disk full"},
		{map[string]int64{"client": 3}, []string{"raise --max-errors-pct"}, "disk"},
	}
	for _, c := range cases {
		h := ErrorsHint(c.by, space)
		for _, w := range c.want {
			if !strings.Contains(h, w) {
				t.Errorf("%v: hint %q lacks %q", c.by, h, w)
			}
		}
		if strings.Contains(h, c.notWant) {
			t.Errorf("%v: hint %q says %q", c.by, h, c.notWant)
		}
	}
	if h := ErrorsHint(map[string]int64{"53100": 1}, nil); !strings.Contains(h, "data directory") || strings.Contains(h, "max-errors-pct") {
		t.Errorf("disk full without a known space: %q", h)
	}
}

func TestSpace(t *testing.T) {
	dir := t.TempDir()
	sp := SpaceAt(dir)
	if !sp.Known || sp.Free <= 0 || sp.Mount == "" {
		t.Fatalf("SpaceAt(%s) = %+v: want the mount point and the free bytes", dir, sp)
	}
	if s := sp.String(); !strings.Contains(s, "filesystem on "+sp.Mount) || !strings.Contains(s, "free") {
		t.Errorf("String %q", s)
	}
	if s := (Space{Why: "a server given by --dsn"}).String(); !strings.Contains(s, "not known") || !strings.Contains(s, "--dsn") {
		t.Errorf("unknown space: %q", s)
	}
	if sp := SpaceNear(nil); sp.Known {
		t.Errorf("SpaceNear(nil) known: %+v", sp)
	}
}
