package loadspace

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	pgdrv "github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/redact"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
)

func TestNeedFor(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name                  string
		tables, maxWAL, reuse int64
		wantWAL, wantTotal    int64
		wantText              []string
		wantNoText            string
	}{
		{"WAL as much as the data", 40 * mib, 1024 * mib, 0, 40 * mib, 80 * mib, []string{"80.0 MiB", "40.0 MiB of WAL", "max_wal_size 1.0 GiB"}, "recycled"},
		{"WAL capped at max_wal_size", 3000 * mib, 1024 * mib, 0, 1024 * mib, 4024 * mib, []string{"1.0 GiB of WAL"}, "recycled"},
		{"recycled segments filled first", 40 * mib, 1024 * mib, 16 * mib, 24 * mib, 64 * mib, []string{"less the 16.0 MiB of recycled segments"}, ""},
		{"more recycled than needed", 10 * mib, 1024 * mib, 32 * mib, 0, 10 * mib, nil, ""},
		{"max_wal_size unknown", 40 * mib, 0, 0, 40 * mib, 80 * mib, nil, "max_wal_size"},
		{"a resumed load with more in place than estimated", -5, 1024 * mib, 0, 0, 0, nil, ""},
	}
	for _, c := range cases {
		n := NeedFor(c.tables, c.maxWAL, c.reuse)
		if n.WAL != c.wantWAL || n.Total() != c.wantTotal {
			t.Errorf("%s: WAL %d total %d, want %d and %d", c.name, n.WAL, n.Total(), c.wantWAL, c.wantTotal)
		}
		s := n.String()
		for _, w := range c.wantText {
			if !strings.Contains(s, w) {
				t.Errorf("%s: %q lacks %q", c.name, s, w)
			}
		}
		if c.wantNoText != "" && strings.Contains(s, c.wantNoText) {
			t.Errorf("%s: %q says %q", c.name, s, c.wantNoText)
		}
	}
}

func TestFullError(t *testing.T) {
	full := fmt.Errorf("copy pgbench_accounts: %w", &pgconn.PgError{Code: driver.DiskFull, Message: "could not extend file"})
	lost := fmt.Errorf("copy pgbench_accounts: %w", io.ErrUnexpectedEOF)
	known := driver.Space{Dir: "/mnt/pg/srv/data", Mount: "/mnt/pg", Free: 5 << 10, Known: true}
	roomy := driver.Space{Dir: "/mnt/pg/srv/data", Mount: "/mnt/pg", Free: 1 << 30, Known: true}
	unknown := driver.Space{Why: "reading data_directory needs superuser or pg_read_all_settings"}
	next := "load again with --drop"

	err := fullError(full, known, "tpcb scale 3", next)
	if errs.KindOf(err) != errs.KindEnvironment || !errors.Is(err, full) {
		t.Fatalf("disk full: kind %v, wraps %v: %v", errs.KindOf(err), errors.Is(err, full), err)
	}
	for _, w := range []string{"disk full on /mnt/pg (5.0 KiB free)", "the tpcb scale 3 load is incomplete", "could not extend file"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	if h := errs.HintOf(err); h != "free space on /mnt/pg, then load again with --drop" {
		t.Errorf("hint %q", h)
	}

	err = fullError(full, unknown, "tpcb scale 3", next)
	if !strings.Contains(err.Error(), "not known") || !strings.Contains(err.Error(), "pg_read_all_settings") || !strings.Contains(errs.HintOf(err), "the server's data directory") {
		t.Errorf("unknown space: %v (hint %q)", err, errs.HintOf(err))
	}

	// PostgreSQL stops when it cannot write its WAL: the client only sees
	// the connection go. With less than a segment left, that is disk full.
	err = fullError(lost, known, "tpcc 2 warehouses", "finish it with --resume")
	if errs.KindOf(err) != errs.KindEnvironment || !strings.Contains(err.Error(), "cannot write its WAL") || !strings.Contains(errs.HintOf(err), "start it again") {
		t.Errorf("lost connection on a full disk: %v (hint %q)", err, errs.HintOf(err))
	}
	_, refused := pgconn.Connect(t.Context(), "host=127.0.0.1 port=1 connect_timeout=2 sslmode=disable")
	var ce *pgconn.ConnectError
	if !errors.As(refused, &ce) {
		t.Fatalf("a connection to port 1: %v, want a connect error", refused)
	}
	// What the loaders get: tunebench's own connect error, whose chain
	// keeps the cause but not pgconn's ConnectError (its Config holds the
	// password). A server down after a full disk is down, not a full disk
	// now (exit 3, not 6).
	tg, err := pgdrv.ParseTarget("host=127.0.0.1 port=1 connect_timeout=2 sslmode=disable", "", redact.New())
	if err != nil {
		t.Fatal(err)
	}
	_, ours := tg.ConnectStd(t.Context())
	if errs.KindOf(ours) != errs.KindConnect {
		t.Fatalf("a connection to port 1: %v", ours)
	}
	for _, c := range []struct {
		name string
		err  error
		sp   driver.Space
	}{
		{"cannot connect, tunebench's error", fmt.Errorf("load: %w", ours), known},
		{"lost connection with room left", lost, roomy},
		{"lost connection, space unknown", lost, unknown},
		{"another error", errors.New("boom"), known},
		{"refused while the server recovers", fmt.Errorf("cannot connect: %w", &pgconn.PgError{Code: "57P03"}), known},
		{"cannot connect", refused, known},
	} {
		if got := fullError(c.err, c.sp, "tpcb scale 1", next); got != c.err {
			t.Errorf("%s: changed to %v", c.name, got)
		}
	}
}
