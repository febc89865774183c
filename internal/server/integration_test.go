package server_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/testutil"
)

// syncBuffer collects progress lines from the server code.
type syncBuffer = testutil.Buffer

func show(t *testing.T, srv *server.Server, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := srv.Connect(ctx)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
		t.Fatalf("SHOW %s: %v", name, err)
	}
	return v
}

func wantKind(t *testing.T, err error, kind errs.Kind, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v error containing %q", kind, words)
	}
	if errs.KindOf(err) != kind {
		t.Fatalf("error kind %v, want %v: %v", errs.KindOf(err), kind, err)
	}
	full := err.Error() + "\nhint: " + errs.HintOf(err)
	t.Logf("got the expected error:\n%s", full)
	for _, w := range words {
		if !strings.Contains(full, w) {
			t.Errorf("error lacks %q:\n%s", w, full)
		}
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func writePidFile(t *testing.T, dataDir string, pid, port int) {
	t.Helper()
	content := fmt.Sprintf("%d\n%s\n%d\n%d\n%s\n127.0.0.1\n  5432001         0\nready   \n", pid, dataDir, time.Now().Unix(), port, dataDir)
	if err := os.WriteFile(filepath.Join(dataDir, "postmaster.pid"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestManagedServer(t *testing.T) {
	testutil.RequirePostgres(t)
	parent, remove, err := testutil.TempDir("tunebench-server-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	dir := filepath.Join(parent, "srv")
	var logs syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t0 := time.Now()
	srv, err := server.Start(ctx, server.Options{Dir: dir, Config: testutil.TestConfig(), NoSync: true, Log: &logs,
		RunAs: os.Getenv("TUNEBENCH_TEST_RUN_AS")})
	if err != nil {
		t.Fatalf("start: %v (hint: %s)", err, errs.HintOf(err))
	}
	t.Logf("initdb + start took %v", time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() {
		_ = srv.Stop(context.Background(), "immediate")
	})
	password := srv.Password()
	if len(password) != 24 {
		t.Errorf("generated password has %d characters, want 24", len(password))
	}
	defer func() {
		if strings.Contains(logs.String(), password) {
			t.Errorf("progress log contains the password")
		}
	}()
	port := srv.Port()

	t.Run("status", func(t *testing.T) {
		st, err := srv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Running || !st.Ready || st.PID <= 0 || st.Port != port || st.Version != srv.Binaries().Version || st.DataDir != filepath.Join(dir, "data") {
			t.Errorf("status %+v", st)
		}
		if strings.Contains(st.DSN, password) || strings.Contains(srv.DSN(), "password") {
			t.Errorf("DSN carries the password")
		}
	})

	t.Run("files", func(t *testing.T) {
		fi, err := os.Stat(filepath.Join(dir, "pgpass"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 || int(fi.Sys().(*syscall.Stat_t).Uid) != os.Geteuid() {
			t.Errorf("pgpass mode %v uid %d", fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Uid)
		}
		fi, err = os.Stat(filepath.Join(dir, "server.json"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("server.json: %v %v", err, fi)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "server.json"))
		if strings.Contains(string(b), password) {
			t.Error("server.json contains the password")
		}
		if !strings.Contains(string(b), `"port": `+strconv.Itoa(port)) {
			t.Errorf("server.json lacks the port:\n%s", b)
		}
		if _, err := os.Stat(srv.LogPath()); err != nil {
			t.Error(err)
		}
		left, _ := filepath.Glob(filepath.Join(dir, ".initdb-pw-*"))
		if len(left) > 0 {
			t.Errorf("initdb password file left behind: %v", left)
		}
		if os.Geteuid() == 0 {
			fi, err := os.Stat(filepath.Join(dir, "data"))
			if err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) == 0 {
				t.Errorf("data dir owned by root")
			}
		}
	})

	t.Run("connect via DSN and passfile", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, srv.DSN())
		if err != nil {
			t.Fatalf("pgx.Connect(DSN): %v", err)
		}
		defer conn.Close(ctx)
		var user, addr string
		if err := conn.QueryRow(ctx, "SELECT current_user, host(inet_server_addr())").Scan(&user, &addr); err != nil {
			t.Fatal(err)
		}
		if user != "postgres" || addr != "127.0.0.1" {
			t.Errorf("user %s addr %s", user, addr)
		}
		// A wrong password is refused: TCP really uses scram-sha-256.
		cfg, _ := pgx.ParseConfig(srv.DSN())
		cfg.Password = "wrong-password"
		if c, err := pgx.ConnectConfig(ctx, cfg); err == nil {
			c.Close(ctx)
			t.Error("wrong password accepted")
		}
		env := strings.Join(srv.Env(), " ")
		for _, w := range []string{"PGHOST=127.0.0.1", "PGPORT=" + strconv.Itoa(port), "PGPASSFILE=" + filepath.Join(dir, "pgpass"), "PGSSLMODE=disable"} {
			if !strings.Contains(env, w) {
				t.Errorf("Env() lacks %s", w)
			}
		}
	})

	t.Run("second start", func(t *testing.T) {
		_, err := server.Start(ctx, server.Options{Dir: dir})
		wantKind(t, err, errs.KindConnect, "already running on port "+strconv.Itoa(port), "tunebench server stop --dir "+dir)
	})

	t.Run("open running", func(t *testing.T) {
		o, err := server.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := o.Status(ctx)
		if err != nil || !st.Running || st.Port != port {
			t.Errorf("status %+v %v", st, err)
		}
		if o.Password() != password {
			t.Error("Open did not read the password from pgpass")
		}
	})

	t.Run("apply reload and restart", func(t *testing.T) {
		applied, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "64MB"}, {Name: "shared_buffers", Value: "160MB"}})
		if err != nil {
			t.Fatalf("apply: %v (hint %s)", err, errs.HintOf(err))
		}
		if len(applied) != 2 || applied[0].NeededRestart || !applied[1].NeededRestart ||
			applied[0].Previous != "4MB" || applied[1].Previous != "128MB" || applied[1].Context != "postmaster" {
			t.Errorf("applied %+v", applied)
		}
		if got := show(t, srv, "work_mem"); got != "64MB" {
			t.Errorf("work_mem = %s", got)
		}
		if got := show(t, srv, "shared_buffers"); got != "160MB" {
			t.Errorf("shared_buffers = %s", got)
		}
		if srv.Port() != port {
			t.Errorf("restart changed the port: %d -> %d", port, srv.Port())
		}
		o, err := server.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.AppliedSettings(); len(got) != 2 {
			t.Errorf("server.json records %+v", got)
		}
	})

	t.Run("unknown setting", func(t *testing.T) {
		_, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "32MB"}, {Name: "shared_bufers", Value: "1GB"}})
		wantKind(t, err, errs.KindUsage, "unknown setting shared_bufers", "shared_buffers")
		if got := show(t, srv, "work_mem"); got != "64MB" {
			t.Errorf("work_mem changed to %s", got)
		}
	})

	t.Run("bad value", func(t *testing.T) {
		_, err := srv.Apply(ctx, []server.Setting{{Name: "random_page_cost", Value: "1.1"}, {Name: "work_mem", Value: "banana"}})
		wantKind(t, err, errs.KindUsage, "work_mem", "banana")
		if got := show(t, srv, "work_mem"); got != "64MB" {
			t.Errorf("work_mem changed to %s", got)
		}
		if got := show(t, srv, "random_page_cost"); got != "4" {
			t.Errorf("random_page_cost changed to %s", got)
		}
	})

	t.Run("rejected by ALTER SYSTEM midway", func(t *testing.T) {
		_, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "16MB"}, {Name: "timezone", Value: "Mars/Olympus_Mons"}})
		wantKind(t, err, errs.KindUsage, "timezone", "Mars/Olympus_Mons")
		if got := show(t, srv, "work_mem"); got != "64MB" {
			t.Errorf("work_mem = %s after rollback, want 64MB", got)
		}
		if got := srv.AppliedSettings(); len(got) != 2 || got[0].Value != "64MB" {
			t.Errorf("recorded %+v", got)
		}
	})

	t.Run("managed and internal settings refused", func(t *testing.T) {
		_, err := srv.Apply(ctx, []server.Setting{{Name: "port", Value: "1"}})
		wantKind(t, err, errs.KindUsage, "port")
		_, err = srv.Apply(ctx, []server.Setting{{Name: "block_size", Value: "16384"}})
		wantKind(t, err, errs.KindUsage, "block_size", "internal")
	})

	t.Run("unmanaged target", func(t *testing.T) {
		_, err := server.Apply(ctx, srv.Connect, nil, []server.Setting{{Name: "max_connections", Value: "50"}})
		wantKind(t, err, errs.KindUsage, "max_connections", "restart")
		applied, err := server.Apply(ctx, srv.Connect, nil, []server.Setting{{Name: "random_page_cost", Value: "1.1"}, {Name: "jit", Value: "off"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 2 || applied[0].Effective != "1.1" || applied[1].Effective != "off" || applied[1].Previous != "on" {
			t.Errorf("applied %+v", applied)
		}
		if got := show(t, srv, "random_page_cost"); got != "1.1" {
			t.Errorf("random_page_cost = %s", got)
		}
		if err := server.Restore(ctx, srv.Connect, nil, applied); err != nil {
			t.Fatal(err)
		}
		if got := show(t, srv, "random_page_cost"); got != "4" {
			t.Errorf("random_page_cost = %s after restore", got)
		}
		if got := show(t, srv, "jit"); got != "on" {
			t.Errorf("jit = %s after restore", got)
		}
	})

	t.Run("list and backend settings", func(t *testing.T) {
		applied, err := server.Apply(ctx, srv.Connect, nil, []server.Setting{
			{Name: "search_path", Value: `"$user", public, "My Schema"`},
			{Name: "log_connections", Value: "on"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if applied[0].Effective != `"$user", public, "My Schema"` || applied[1].Effective != "on" {
			t.Errorf("applied %+v", applied)
		}
		if err := server.Restore(ctx, srv.Connect, nil, applied); err != nil {
			t.Fatal(err)
		}
		if got := show(t, srv, "search_path"); got != `"$user", public` {
			t.Errorf("search_path = %s after restore", got)
		}
	})

	t.Run("restore", func(t *testing.T) {
		if err := srv.Restore(ctx); err != nil {
			t.Fatalf("restore: %v", err)
		}
		if got := show(t, srv, "work_mem"); got != "4MB" {
			t.Errorf("work_mem = %s", got)
		}
		if got := show(t, srv, "shared_buffers"); got != "128MB" {
			t.Errorf("shared_buffers = %s", got)
		}
		if got := srv.AppliedSettings(); len(got) != 0 {
			t.Errorf("still recorded: %+v", got)
		}
	})

	t.Run("bad preload library brings the server back", func(t *testing.T) {
		_, err := srv.Apply(ctx, []server.Setting{{Name: "shared_preload_libraries", Value: "no_such_library_xyz"}})
		wantKind(t, err, errs.KindUsage, "no_such_library_xyz", "could not access file", "undid")
		st, serr := srv.Status(ctx)
		if serr != nil || !st.Ready {
			t.Fatalf("server not back: %+v %v", st, serr)
		}
		if got := show(t, srv, "shared_preload_libraries"); got != "" {
			t.Errorf("shared_preload_libraries = %q", got)
		}
		if got := srv.AppliedSettings(); len(got) != 0 {
			t.Errorf("still recorded: %+v", got)
		}
	})

	// Issue 16, items 1-3: every change journaled with its holder; a dead
	// holder's changes are restored by the next user of the server; a
	// live one's are refused to others; shared memory checked up front.
	t.Run("a killed holder's settings are restored by the next user", func(t *testing.T) {
		if _, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "21MB"}}); err != nil {
			t.Fatal(err)
		}
		testutil.SetHolder(t, dir, "work_mem", deadPID(t)) // as if this process had been killed -9
		o, err := server.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var log syncBuffer
		o.SetLog(&log)
		left, err := o.RestoreLeftovers(ctx)
		if err != nil || len(left) != 1 || left[0].Name != "work_mem" {
			t.Fatalf("leftovers: %+v %v", left, err)
		}
		if got := show(t, srv, "work_mem"); got != "4MB" {
			t.Errorf("work_mem = %s after restoring the leftover", got)
		}
		if !strings.Contains(log.String(), "restoring work_mem, left changed by a tunebench process that ended") {
			t.Errorf("nothing said about the restore: %q", log.String())
		}
		if got := o.AppliedSettings(); len(got) != 0 {
			t.Errorf("still journaled: %+v", got)
		}
	})

	t.Run("a live holder's setting is refused to others and not a leftover", func(t *testing.T) {
		if _, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "22MB"}}); err != nil {
			t.Fatal(err)
		}
		testutil.SetHolder(t, dir, "work_mem", os.Getppid()) // another live process holds it
		o, err := server.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if left, err := o.RestoreLeftovers(ctx); err != nil || len(left) != 0 {
			t.Errorf("a live holder's setting restored as a leftover: %+v %v", left, err)
		}
		_, err = o.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "23MB"}})
		wantKind(t, err, errs.KindConnect, "work_mem", "held by another tunebench process", fmt.Sprint(os.Getppid()))
		if err := o.Restore(ctx); err != nil { // what server stop does
			t.Fatal(err)
		}
		if got := show(t, srv, "work_mem"); got != "4MB" {
			t.Errorf("work_mem = %s", got)
		}
	})

	t.Run("release restores only this process's settings", func(t *testing.T) {
		done, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "24MB"}, {Name: "maintenance_work_mem", Value: "99MB"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Release(ctx, done[:1]); err != nil {
			t.Fatal(err)
		}
		if got := show(t, srv, "work_mem"); got != "4MB" {
			t.Errorf("work_mem = %s after its release", got)
		}
		if got := show(t, srv, "maintenance_work_mem"); got != "99MB" {
			t.Errorf("maintenance_work_mem = %s, released with work_mem", got)
		}
		if err := srv.Release(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if got := srv.AppliedSettings(); len(got) != 0 || show(t, srv, "maintenance_work_mem") == "99MB" {
			t.Errorf("after releasing all: %+v", got)
		}
	})

	t.Run("shared memory beyond the machine's is refused before any change", func(t *testing.T) {
		mem := server.MachineMemory()
		if mem <= 0 {
			t.Skip("the machine's memory is unknown here")
		}
		err := srv.Check(ctx, []server.Setting{{Name: "shared_buffers", Value: "1TB"}})
		wantKind(t, err, errs.KindUsage, "shared_buffers=1TB", "more than this machine's")
		_, err = srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "25MB"}, {Name: "shared_buffers", Value: "1TB"}})
		wantKind(t, err, errs.KindUsage, "shared_buffers=1TB", "more than this machine's")
		if got := show(t, srv, "work_mem"); got != "4MB" {
			t.Errorf("work_mem = %s: changed although the settings were refused", got)
		}
		if err := srv.Check(ctx, []server.Setting{{Name: "shared_buffers", Value: "64MB"}}); err != nil {
			t.Errorf("a modest shared_buffers refused: %v", err)
		}
	})

	t.Run("stop restores and keeps data", func(t *testing.T) {
		conn, err := srv.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE keep_me (x int); INSERT INTO keep_me VALUES (42)"); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		if _, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "8MB"}}); err != nil {
			t.Fatal(err)
		}
		if err := srv.Stop(ctx, "fast"); err != nil {
			t.Fatalf("stop: %v", err)
		}
		st, err := srv.Status(ctx)
		if err != nil || st.Running {
			t.Fatalf("after stop: %+v %v", st, err)
		}
		auto, _ := os.ReadFile(filepath.Join(dir, "data", "postgresql.auto.conf"))
		if strings.Contains(string(auto), "work_mem") {
			t.Errorf("stop did not restore work_mem:\n%s", auto)
		}
		if err := srv.Stop(ctx, "fast"); err != nil {
			t.Errorf("stopping a stopped server: %v", err)
		}
	})

	t.Run("bad base config shows the log", func(t *testing.T) {
		_, err := server.Start(ctx, server.Options{Dir: dir, Config: []server.Setting{{Name: "shared_buffers", Value: "banana"}}})
		wantKind(t, err, errs.KindConnect, "did not start", "postgresql.log", "shared_buffers")
	})

	t.Run("stale pid file", func(t *testing.T) {
		writePidFile(t, filepath.Join(dir, "data"), deadPID(t), port)
		logs2 := &syncBuffer{}
		s2, err := server.Start(ctx, server.Options{Dir: dir, Log: logs2}) // nil Config: keep the recorded one
		if err != nil {
			t.Fatalf("start with stale pid file: %v", err)
		}
		srv = s2
		if !strings.Contains(logs2.String(), "stale") {
			t.Errorf("no note about the stale pid file:\n%s", logs2.String())
		}
		if srv.Port() != port {
			t.Errorf("port changed %d -> %d", port, srv.Port())
		}
		if got := show(t, srv, "work_mem"); got != "4MB" {
			t.Errorf("work_mem = %s", got)
		}
		if got := show(t, srv, "fsync"); got != "off" {
			t.Errorf("base config not kept after the failed start: fsync = %s", got)
		}
	})

	t.Run("immediate stop then start restores leftovers", func(t *testing.T) {
		if _, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "12MB"}}); err != nil {
			t.Fatal(err)
		}
		if err := srv.Stop(ctx, "immediate"); err != nil {
			t.Fatal(err)
		}
		o, err := server.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.AppliedSettings(); len(got) != 1 {
			t.Fatalf("recorded after immediate stop: %+v", got)
		}
	})

	t.Run("pid file of a live non-postgres process", func(t *testing.T) {
		writePidFile(t, filepath.Join(dir, "data"), os.Getpid(), port)
		_, err := server.Start(ctx, server.Options{Dir: dir})
		wantKind(t, err, errs.KindConnect, "not postgres", "postmaster.pid")
		os.Remove(filepath.Join(dir, "data", "postmaster.pid"))
	})

	t.Run("open stopped dir and start again", func(t *testing.T) {
		o, err := server.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := o.Status(ctx)
		if err != nil || st.Running {
			t.Fatalf("status %+v %v", st, err)
		}
		if err := o.Start(ctx); err != nil {
			t.Fatalf("start: %v", err)
		}
		srv = o
		var x int
		conn, err := o.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT x FROM keep_me").Scan(&x); err != nil || x != 42 {
			t.Errorf("data not kept: %d %v", x, err)
		}
		if got := show(t, o, "work_mem"); got != "4MB" {
			t.Errorf("leftover work_mem not restored: %s", got)
		}
		if got := show(t, o, "fsync"); got != "off" {
			t.Errorf("base config lost: fsync=%s", got)
		}
		if len(o.AppliedSettings()) != 0 {
			t.Errorf("leftovers still recorded")
		}
		if err := o.Restart(ctx, "fast"); err != nil {
			t.Fatal(err)
		}
		if o.Port() != port {
			t.Errorf("restart changed the port")
		}
	})

	t.Run("start with bad settings leaves it stopped", func(t *testing.T) {
		if err := srv.Stop(ctx, "fast"); err != nil {
			t.Fatal(err)
		}
		_, err := server.Start(ctx, server.Options{Dir: dir, Settings: []server.Setting{{Name: "work_mem", Value: "banana"}}})
		wantKind(t, err, errs.KindUsage, "work_mem")
		st, err := srv.Status(ctx)
		if err != nil || st.Running {
			t.Errorf("status after failed start: %+v %v", st, err)
		}
	})
}

func TestStartPortInUse(t *testing.T) {
	testutil.RequirePostgres(t)
	parent, remove, err := testutil.TempDir("tunebench-port-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := filepath.Join(parent, "srv")
	_, err = server.Start(context.Background(), server.Options{Dir: dir, Port: port})
	wantKind(t, err, errs.KindConnect, fmt.Sprintf("port %d", port), "in use", "--port")
	if _, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION")); err == nil {
		t.Error("initdb ran although the port was taken")
	}
}

func TestStartErrors(t *testing.T) {
	testutil.RequirePostgres(t)
	_, err := server.Start(context.Background(), server.Options{})
	wantKind(t, err, errs.KindUsage, "--dir")

	_, err = server.Open(t.TempDir())
	wantKind(t, err, errs.KindUsage, "not a tunebench server dir")

	_, err = server.Start(context.Background(), server.Options{Dir: t.TempDir(), PGBin: t.TempDir()})
	wantKind(t, err, errs.KindEnvironment, "lacks initdb, pg_ctl, postgres")

	if os.Geteuid() == 0 {
		base, err := os.MkdirTemp("/tmp", "tb-private-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		_ = os.Chmod(base, 0o700)
		_, err = server.Start(context.Background(), server.Options{Dir: filepath.Join(base, "srv")})
		wantKind(t, err, errs.KindEnvironment, base, "chmod o+x", "--dir")

		_, err = server.Start(context.Background(), server.Options{Dir: t.TempDir(), RunAs: "no_such_user_tb"})
		wantKind(t, err, errs.KindEnvironment, "no_such_user_tb", "useradd")
	}
}

func TestStartServerHelper(t *testing.T) {
	srv := testutil.StartServer(t, func(o *server.Options) { o.Settings = []server.Setting{{Name: "work_mem", Value: "32MB"}} })
	conn := testutil.Connect(t, srv)
	var wm, fsync string
	if err := conn.QueryRow(context.Background(), "SELECT current_setting('work_mem'), current_setting('fsync')").Scan(&wm, &fsync); err != nil {
		t.Fatal(err)
	}
	if wm != "32MB" || fsync != "off" {
		t.Errorf("work_mem=%s fsync=%s", wm, fsync)
	}
	db := testutil.CreateDB(t, srv)
	c2 := testutil.ConnectDB(t, srv, db)
	var got string
	if err := c2.QueryRow(context.Background(), "SELECT current_database()").Scan(&got); err != nil || got != db {
		t.Errorf("current_database %s %v", got, err)
	}
}

// A restart command that fails, or that does not restart the server, is
// an error that names it; one that restarts it returns once the server is
// back (issue 18).
func TestCommandRestarter(t *testing.T) {
	defer server.SetRestartWaitEvery(server.SetRestartWaitEvery(time.Second))
	srv := testutil.StartServer(t)
	ctx := context.Background()
	r := &server.CommandRestarter{Command: "echo no such service >&2; exit 3", Connect: srv.Connect}
	if err := r.Restart(ctx, "fast"); err == nil || !strings.Contains(err.Error(), "the restart command failed") || !strings.Contains(err.Error(), "no such service") {
		t.Errorf("failing command: %v", err)
	}
	// A command that hangs (and a child holding its output) ends at the
	// timeout, which the error names with the command, and a fix for a
	// command that hung; the wait is said while it lasts.
	t0 := time.Now()
	var waited syncBuffer
	r = &server.CommandRestarter{Command: "sleep 30 & sleep 30", Connect: srv.Connect, Timeout: 1500 * time.Millisecond, Log: &waited}
	err := r.Restart(ctx, "fast")
	if err == nil || time.Since(t0) > 10*time.Second {
		t.Errorf("a hanging command: %v after %v", err, time.Since(t0))
	}
	if err == nil || !strings.Contains(err.Error(), "the restart command did not return within 1.5s and was stopped (timed out): sleep 30 & sleep 30") ||
		!strings.Contains(errs.HintOf(err), "the command itself hung") || !strings.Contains(errs.HintOf(err), "--restart-timeout") ||
		strings.Contains(err.Error(), "context deadline") {
		t.Errorf("a hanging command's error: %v (fix: %s)", err, errs.HintOf(err))
	}
	if !strings.Contains(waited.String(), "restarting the server (at most 1.5s): sleep 30") || !strings.Contains(waited.String(), "the command has run 1s, given up at 1.5s") {
		t.Errorf("the wait was not said: %q", waited.String())
	}
	r = &server.CommandRestarter{Command: "true", Connect: srv.Connect, Timeout: time.Second}
	if err := r.Restart(ctx, "fast"); err == nil || !strings.Contains(err.Error(), "did not come back restarted") {
		t.Errorf("a command that does not restart: %v", err)
	}
	var said syncBuffer
	restart := fmt.Sprintf("%s restart -D %s -m fast -w -l %s", filepath.Join(srv.Binaries().Dir, "pg_ctl"), srv.DataDir(), srv.LogPath())
	if srv.RunAs() != "" && os.Geteuid() == 0 {
		restart = "setpriv --reuid=" + srv.RunAs() + " --regid=" + srv.RunAs() + " --clear-groups -- " + restart
	}
	r = &server.CommandRestarter{Command: restart, Connect: srv.Connect, Log: &said}
	if err := r.Restart(ctx, "fast"); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if !strings.Contains(said.String(), "restarting the server (at most 5m0s): ") {
		t.Errorf("not said: %q", said.String())
	}
}
