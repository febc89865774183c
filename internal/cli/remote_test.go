//go:build linux

package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/testutil"
)

// TestRemoteTarget: a server on another machine, as far as the network
// goes: a managed server started in a network namespace the test made,
// listening on its veth address, reached from here over the pair only
// (issue 18). Load, run and check tpcb and tpcc; a reload setting applied
// and restored; a restart setting refused without a restart command and
// applied and restored with one; host metrics marked not measured, the
// round trip recorded; and one clear error each for a wrong password, an
// address nothing answers at and a server that takes only TLS.
func TestRemoteTarget(t *testing.T) {
	t.Parallel()
	ns := testutil.NewNetNS(t)
	srv := testutil.StartServerIn(t, ns)
	h := newHarness(t)
	db := testutil.CreateDB(t, srv)
	dsn := fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable passfile=%s", ns.Addr, srv.Port(), db, srv.PassFile())
	results := tempPath(t, "results.db")
	conn := []string{"--dsn", dsn, "--results", results}
	show := func(name string) string {
		t.Helper()
		c := testutil.ConnectDB(t, srv, db)
		var v string
		if err := c.QueryRow(context.Background(), "SELECT current_setting($1)", name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	h.must(0, "load", "tpcb", "--scale", "1", "--dsn", dsn)
	h.must(0, "check", "tpcb", "--dsn", dsn)
	js := tempPath(t, "tpcb.json")
	workMem := show("work_mem")
	r := h.must(0, append([]string{"run", "tpcb", "--duration", "2s", "--clients", "2", "--set", "work_mem=7MB", "--json", js}, conn...)...)
	if !strings.Contains(r.stderr, "not measured: remote server") {
		t.Errorf("the run does not say the server's host is not measured:\n%s", r.stderr)
	}
	var sum struct {
		NotMeasured map[string]string `json:"not_measured"`
		RunID       int64             `json:"run_id"`
	}
	if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &sum) != nil || !strings.Contains(sum.NotMeasured["server_host"], "remote server") {
		t.Errorf("summary not_measured %v (%v)", sum.NotMeasured, err)
	}
	if got := show("work_mem"); got != workMem {
		t.Errorf("work_mem %s after the run, want %s restored", got, workMem)
	}
	s := h.must(0, "results", "show", fmt.Sprint(sum.RunID), "--results", results)
	if !strings.Contains(s.stdout, "server: on another machine at "+ns.Addr) || !strings.Contains(s.stdout, "round trip") {
		t.Errorf("results show does not say where the server is:\n%s", s.stdout)
	}
	rep := tempPath(t, "remote.html")
	h.must(0, "report", fmt.Sprint(sum.RunID), "-o", rep, "--results", results)
	if b, _ := os.ReadFile(rep); !strings.Contains(string(b), "server host: not measured: remote server") || !strings.Contains(string(b), "on another machine at "+ns.Addr) {
		t.Errorf("the report does not say the server's host is not measured, or where the server is")
	}
	x := h.must(0, "results", "export", fmt.Sprint(sum.RunID), "--format", "json", "--results", results)
	if strings.Contains(x.stdout, `"data_dir"`) || strings.Contains(x.stdout, `"pg.proc`) {
		t.Errorf("a remote run records this machine's data directory or process series as the server's")
	}

	// A restart setting: refused without a way to restart, applied and
	// restored with the user's command (it restarts the server in its
	// namespace).
	buffers := show("shared_buffers")
	r = h.must(2, append([]string{"run", "tpcb", "--duration", "1s", "--set", "shared_buffers=48MB"}, conn...)...)
	if !strings.Contains(r.stderr, "--restart-command") {
		t.Errorf("restart setting without a restart command:\n%s", r)
	}
	restart := ns.Exec(srv, filepath.Join(srv.Binaries().Dir, "pg_ctl"), "restart", "-D", srv.DataDir(), "-m", "fast", "-w", "-l", srv.LogPath())
	js2 := tempPath(t, "restart.json")
	r = h.must(0, append([]string{"run", "tpcb", "--duration", "1s", "--set", "shared_buffers=48MB", "--restart-command", restart, "--json", js2}, conn...)...)
	if !strings.Contains(r.stderr, "restarting the server (at most 5m0s): ") {
		t.Errorf("the restart is not said:\n%s", r.stderr)
	}
	if b, _ := os.ReadFile(js2); !strings.Contains(string(b), `"shared_buffers": "48MB"`) && !strings.Contains(string(b), `"shared_buffers":"48MB"`) {
		t.Errorf("the run does not record shared_buffers=48MB:\n%s", b)
	}
	if got := show("shared_buffers"); got != buffers {
		t.Errorf("shared_buffers %s after the run, want %s restored", got, buffers)
	}
	// A restart command that hangs: given up at --restart-timeout, said
	// so, and the settings left as they were.
	t0 := time.Now()
	r = h.run(append([]string{"run", "tpcb", "--duration", "1s", "--set", "shared_buffers=40MB", "--restart-command", "sleep 600", "--restart-timeout", "2s"}, conn...)...)
	if r.code == 0 || time.Since(t0) > time.Minute || !strings.Contains(r.stderr, "the restart command did not return within 2s and was stopped (timed out): sleep 600") ||
		!strings.Contains(r.stderr, "the command itself hung") {
		t.Errorf("a hanging restart command (exit %d after %s):\n%s", r.code, time.Since(t0).Round(time.Second), r)
	}
	if got := show("shared_buffers"); got != buffers {
		t.Errorf("shared_buffers %s after the hanging restart command, want %s as it was", got, buffers)
	}

	// tpcc: load, run (with its checks), check.
	h.must(0, "load", "tpcc", "--warehouses", "1", "--dsn", dsn)
	h.must(0, append([]string{"run", "tpcc", "--vusers", "2", "--rampup", "0s", "--duration", "2s"}, conn...)...)
	h.must(0, "check", "tpcc", "--dsn", dsn)

	// An experiment on the remote server: template databases for the
	// resets, a restart setting through the file's restart_command, and
	// the server's settings as they were at the end.
	path := writeExperiment(t, fmt.Sprintf(`name: remote
target:
  dsn: %q
  restart_command: %q
  restart_timeout: 2m
workload:
  name: tpcb
  options: {scale: 1, duration: 1s, clients: 2}
matrix:
  settings:
    shared_buffers: [32MB, 48MB]
`, dsn, restart))
	r = h.must(0, "experiment", "run", path, "--results", results)
	if !strings.Contains(r.stderr, "restarting the server (at most 2m0s): ") {
		t.Errorf("the experiment did not restart the server:\n%s", r.stderr)
	}
	if got := show("shared_buffers"); got != buffers {
		t.Errorf("shared_buffers %s after the experiment, want %s restored", got, buffers)
	}

	// One clear error each.
	bad := newHarness(t)
	bad.env["TUNEBENCH_DSN"] = fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable password=wrong-password", ns.Addr, srv.Port(), db)
	r = bad.must(3, "run", "tpcb", "--duration", "1s", "--results", results)
	if !strings.Contains(r.stderr, "authentication failed") || strings.Contains(r.stderr, "wrong-password") {
		t.Errorf("wrong password:\n%s", r)
	}
	gone := testutil.NewNetNS(t)
	exec.Command("sh", "-c", "ip -n "+gone.Name+" -o link | grep -o 'tbn[0-9]*' | xargs -r -I{} ip -n "+gone.Name+" link set {} down").Run()
	t0 = time.Now()
	r = h.must(3, "run", "tpcb", "--duration", "1s", "--results", results, "--dsn", fmt.Sprintf("host=%s port=5432 user=postgres dbname=x sslmode=disable connect_timeout=2", gone.Addr))
	if !strings.Contains(r.stderr, gone.Addr) || !(strings.Contains(r.stderr, "no route to") || strings.Contains(r.stderr, "no answer from")) {
		t.Errorf("an address nothing answers at (%v):\n%s", time.Since(t0), r)
	}
	t.Logf("an address nothing answers at, after %v:\n%s", time.Since(t0).Round(time.Millisecond), r.stderr)
	hba := filepath.Join(srv.DataDir(), "pg_hba.conf")
	b, err := os.ReadFile(hba)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hba, []byte(strings.Replace(string(b), "\nhost all all samenet", "\nhostssl all all samenet", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testutil.Connect(t, srv)
	if _, err := c.Exec(context.Background(), "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	r = h.must(3, append([]string{"run", "tpcb", "--duration", "1s"}, conn...)...)
	if !strings.Contains(r.stderr, "sslmode=require") {
		t.Errorf("a server that takes only TLS:\n%s", r)
	}
	t.Logf("a server that takes only TLS:\n%s", r.stderr)

	// With TLS on the server, sslmode=require runs, and the environment
	// records the negotiated TLS.
	testutil.ServerTLS(t, srv)
	if _, err := c.Exec(context.Background(), "ALTER SYSTEM SET ssl = on"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Exec(context.Background(), "ALTER SYSTEM RESET ssl") })
	if _, err := c.Exec(context.Background(), "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	js3 := tempPath(t, "tls.json")
	// Two clients on one thread: a TLS connection cannot be polled, so
	// each client gets a thread of its own, and the run says so.
	tr := h.must(0, "run", "tpcb", "--duration", "1s", "--clients", "2", "--threads", "1", "--results", results, "--json", js3, "--dsn", strings.Replace(dsn, "sslmode=disable", "sslmode=require", 1))
	if !strings.Contains(tr.stderr, "the 2 clients ran on 2 threads, not 1: their connections cannot be multiplexed") {
		t.Errorf("the TLS run does not say its clients were not multiplexed:\n%s", tr.stderr)
	}
	var tls struct {
		RunID int64 `json:"run_id"`
	}
	if b, err := os.ReadFile(js3); err != nil || json.Unmarshal(b, &tls) != nil {
		t.Fatalf("TLS run summary: %v", err)
	}
	x = h.must(0, "results", "export", fmt.Sprint(tls.RunID), "--format", "json", "--results", results)
	if xs := strings.ReplaceAll(x.stdout, " ", ""); !strings.Contains(xs, `"tls":{"cipher":`) || !strings.Contains(xs, `"version":"TLSv1.`) {
		t.Errorf("the TLS run does not record its TLS:\n%.3000s", x.stdout)
	}
}
