package envinfo

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestQuerierImplementations(t *testing.T) {
	var _ Querier = (*pgx.Conn)(nil)
	var _ Querier = pgx.Tx(nil)
}

// TestPostgresInfo needs a reachable PostgreSQL: set TUNEBENCH_TEST_DSN to a
// connection string (a password, if any, in PGPASSWORD or .pgpass).
func TestPostgresInfo(t *testing.T) {
	dsn := os.Getenv("TUNEBENCH_TEST_DSN")
	if dsn == "" {
		t.Skip("TUNEBENCH_TEST_DSN not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)

	// Session settings are non-default; one of them carries a secret.
	for _, stmt := range []string{
		`SET work_mem = '7MB'`,
		`SET application_name = 'tb host=x password=hunter22'`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	pg, err := PostgresInfo(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pg.Version, "PostgreSQL ") || pg.ServerVersionNum < 90600 || pg.Database == "" {
		t.Errorf("version fields: %q %d %q", pg.Version, pg.ServerVersionNum, pg.Database)
	}
	if got := pg.Settings["work_mem"]; got != "7MB" {
		t.Errorf("work_mem = %q, want 7MB (settings: %v)", got, pg.Settings)
	}
	if _, ok := pg.Settings["enable_seqscan"]; ok {
		t.Errorf("default setting enable_seqscan listed")
	}
	if got := pg.Settings["application_name"]; got != "tb host=x password=xxxxx" {
		t.Errorf("application_name = %q, want the password masked", got)
	}
	for name, v := range pg.Settings {
		if want := settingValue(name, v); v != want {
			t.Errorf("%s = %q is not redacted", name, v)
		}
	}
	b, err := json.Marshal(pg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter22") {
		t.Errorf("secret in snapshot: %s", b)
	}

	var super bool
	if err := conn.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
		t.Fatal(err)
	}
	if super && pg.DataDirectory == "" {
		t.Error("superuser but no data_directory")
	}

	// The whole snapshot, with the data directory when it is local.
	snap := Take(ctx, Options{Conn: conn, DataDir: pg.DataDirectory, Version: "test"})
	if snap.Postgres == nil {
		t.Fatalf("no postgres part: %v", snap.Warnings)
	}
	t.Logf("version %s, %d non-default settings, data dir %q, tls %+v, warnings %v",
		pg.Version, len(pg.Settings), pg.DataDirectory, pg.TLS, snap.Warnings)

	// An unprivileged role cannot read data_directory; that is not an error.
	if super {
		if _, err := conn.Exec(ctx, `CREATE ROLE tunebench_envinfo_test NOLOGIN`); err == nil {
			defer conn.Exec(context.Background(), `DROP ROLE tunebench_envinfo_test`)
			if _, err := conn.Exec(ctx, `SET ROLE tunebench_envinfo_test`); err != nil {
				t.Fatal(err)
			}
			pg2, err := PostgresInfo(ctx, conn)
			if _, rerr := conn.Exec(ctx, `RESET ROLE`); rerr != nil {
				t.Fatal(rerr)
			}
			if err != nil {
				t.Fatalf("unprivileged: %v", err)
			}
			if pg2.DataDirectory != "" {
				t.Errorf("unprivileged role read data_directory %q", pg2.DataDirectory)
			}
			if pg2.Settings["work_mem"] != "7MB" {
				t.Errorf("unprivileged: work_mem = %q", pg2.Settings["work_mem"])
			}
		}
	}
}

func TestSettingValue(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"shared_buffers", "128MB", "128MB"},
		{"primary_conninfo", "host=primary user=rep password=hunter22", "xxxxx"},
		{"ssl_passphrase_command", "echo hunter22", "xxxxx"},
		{"ssl_key_file", "/etc/ssl/private/server.key", "xxxxx"},
		{"krb_server_keyfile", "FILE:/etc/krb5.keytab", "xxxxx"},
		{"primary_conninfo", "", ""},
		{"application_name", "bench password=hunter22", "bench password=xxxxx"},
		{"archive_command", "rsync %p rsync://u:hunter22@backup/wal/%f", "rsync %p rsync://u:xxxxx@backup/wal/%f"},
	}
	for _, c := range cases {
		if got := settingValue(c.name, c.value); got != c.want {
			t.Errorf("%s=%q: %q, want %q", c.name, c.value, got, c.want)
		}
	}
}
