//go:build linux

package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/testutil"
)

// hostSummary is what these tests read of a run's --json summary.
type hostSummary struct {
	Status        string            `json:"status"`
	Transactions  int64             `json:"transactions"`
	NotMeasured   map[string]string `json:"not_measured"`
	Hosts         []results.Host    `json:"hosts"`
	StatusReasons []results.Reason  `json:"status_reasons"`
	RunID         int64             `json:"run_id"`
}

func (s hostSummary) host(role string) *results.Host {
	for i := range s.Hosts {
		if s.Hosts[i].Role == role {
			return &s.Hosts[i]
		}
	}
	return nil
}

func readHostSummary(t *testing.T, path string) hostSummary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s hostSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return s
}

// agree checks that the server host's series, read through a source, agree
// with this machine's /proc (the driver's series) over the same window:
// the server in the namespace runs on this machine, so both measure it.
func agree(t *testing.T, what string, s hostSummary) {
	t.Helper()
	d, sv := s.host(results.HostDriver), s.host(results.HostServer)
	if d == nil || sv == nil || sv.SameMachine {
		t.Fatalf("%s: hosts %+v", what, s.Hosts)
	}
	for _, name := range []string{"sys.cpu_user_pct", "sys.cpu_system_pct", "sys.cpu_iowait_pct", "sys.pressure_cpu_pct"} {
		a, okA := d.Means[name]
		b, okB := sv.Means["server."+name]
		if !okA || !okB || math.Abs(a-b) > 12 {
			t.Errorf("%s: %s %.1f here, %.1f through the source (present %v %v)", what, name, a, b, okA, okB)
		}
	}
	for _, name := range []string{"sys.mem_used_bytes", "sys.page_cache_bytes"} {
		a, b := d.Means[name], sv.Means["server."+name]
		if a <= 0 || math.Abs(a-b) > 0.15*a {
			t.Errorf("%s: %s %.0f here, %.0f through the source", what, name, a, b)
		}
	}
}

// startNodeExporter runs Debian's node_exporter inside the namespace on
// its address, and waits until it answers from here.
func startNodeExporter(t *testing.T, ns *testutil.NetNS) (string, *exec.Cmd) {
	t.Helper()
	bin, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		if testutil.InCI() {
			t.Fatal("prometheus-node-exporter is required in CI: make test installs it")
		}
		t.Skip("prometheus-node-exporter is not installed (apt-get install prometheus-node-exporter)")
	}
	addr := ns.Addr + ":9100"
	cmd := exec.Command("ip", "netns", "exec", ns.Name, bin, "--web.listen-address="+addr, "--log.level=warn")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := "http://" + addr + "/metrics"
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node_exporter at %s does not answer: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHostMetricsRemote: a server on "another machine" (a managed server
// in a network namespace, reached over a veth pair) whose host is measured
// through SQL (a superuser; a role without the privilege gets a clear not
// measured with the grant) and through a node_exporter in its namespace;
// the server host's series agree with this machine's /proc, which they
// measure too; an exporter that stops mid-run leaves a gap and a status
// reason and the run completes; the report titles each host chart with its
// machine and source; local with a remote server is refused (issue 34).
func TestHostMetricsRemote(t *testing.T) {
	t.Parallel()
	ns := testutil.NewNetNS(t)
	srv := testutil.StartServerIn(t, ns)
	h := newHarness(t)
	db := testutil.CreateDB(t, srv)
	dsn := fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable passfile=%s", ns.Addr, srv.Port(), db, srv.PassFile())
	res := tempPath(t, "results.db")
	h.must(0, "load", "tpcb", "--scale", "1", "--dsn", dsn)
	run := func(code int, dsn string, extra ...string) (result, hostSummary) {
		t.Helper()
		js := tempPath(t, "run.json")
		r := h.must(code, append([]string{"run", "tpcb", "--dsn", dsn, "--results", res, "--clients", "2", "--json", js}, extra...)...)
		return r, readHostSummary(t, js)
	}

	// Through SQL, as a superuser.
	_, s := run(0, dsn, "--duration", "5s", "--host-metrics", "sql")
	agree(t, "sql", s)
	sv := s.host(results.HostServer)
	if sv.Source != "pg_read_file through SQL" || len(s.NotMeasured) != 0 || sv.Means["pg.proc_count"] < 5 || sv.Means["disk.util_pct"] < 0 ||
		!strings.Contains(strings.Join(sv.Series, " "), "disk.") {
		t.Errorf("sql: server host %+v, not measured %v", sv, s.NotMeasured)
	}
	sqlRun := s.RunID

	// A role without the privilege: measured nothing of the host, and
	// says which grant would.
	admin := testutil.ConnectDB(t, srv, db)
	if _, err := admin.Exec(context.Background(), "CREATE ROLE tbviewer LOGIN PASSWORD 'viewer-pw-1'"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pass := filepath.Join(dir, "pgpass")
	if err := os.WriteFile(pass, []byte("*:*:*:tbviewer:viewer-pw-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(dir, "one.sql")
	if err := os.WriteFile(one, []byte("SELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	viewer := fmt.Sprintf("host=%s port=%d user=tbviewer dbname=%s sslmode=disable passfile=%s", ns.Addr, srv.Port(), db, pass)
	js := tempPath(t, "viewer.json")
	r := h.must(0, "run", "script", "-f", one, "--dsn", viewer, "--results", res, "--duration", "1s", "--host-metrics", "sql", "--json", js)
	s = readHostSummary(t, js)
	if s.host(results.HostServer) != nil || !strings.Contains(s.NotMeasured["server_host"], "GRANT pg_read_server_files TO tbviewer") ||
		!strings.Contains(r.stderr, "the role tbviewer cannot read the server's files") {
		t.Errorf("a role without pg_read_server_files: hosts %+v, not measured %v\n%s", s.Hosts, s.NotMeasured, r.stderr)
	}

	// Its node_exporter, in its namespace.
	url, exporter := startNodeExporter(t, ns)
	_, s = run(0, dsn, "--duration", "5s", "--host-metrics", url)
	agree(t, "node_exporter", s)
	// The disk series are there (their values need not move: the test
	// servers run without fsync, and the kernel may write back after the
	// window).
	if sv := s.host(results.HostServer); sv.Source != "node_exporter "+url || !hasKeys(sv.Means, "disk.write_bytes_s", "disk.read_bytes_s", "disk.util_pct") {
		t.Errorf("node_exporter: server host %+v", sv)
	}
	nodeRun := s.RunID

	// The exporter stops 2 s into an 8 s run: a gap, a status reason that
	// names the source, and the run completes and is stored.
	rn := h.start(nil, "run", "tpcb", "--dsn", dsn, "--results", res, "--clients", "2", "--duration", "8s", "--host-metrics", url,
		"--json", tempPath(t, "gap.json"))
	rn.waitStderr(t, "progress:    2.0 s", 60*time.Second)
	_ = exporter.Process.Kill()
	r = rn.wait(t, 60*time.Second)
	if r.code != 0 {
		t.Fatalf("the run with its exporter gone: exit %d\n%s", r.code, r)
	}
	s = readHostSummary(t, r.args[len(r.args)-1])
	sv = s.host(results.HostServer)
	if s.Status != "errors" || s.Transactions == 0 || sv == nil || sv.MissingPct < 40 || sv.Error == "" ||
		len(s.StatusReasons) == 0 || s.StatusReasons[0].Code != results.ReasonHostGap || !strings.Contains(s.StatusReasons[0].Detail, url) {
		t.Errorf("exporter gone: status %s %+v, server host %+v", s.Status, s.StatusReasons, sv)
	}

	// The report: each host's charts titled with its machine and source.
	html := tempPath(t, "report.html")
	h.must(0, "report", fmt.Sprint(sqlRun), fmt.Sprint(nodeRun), "-o", html, "--results", res)
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CPU (driver&#39;s machine, local /proc)", "CPU (database server host, pg_read_file through SQL)",
		"CPU (database server host, node_exporter " + url, "The database server host: pg_read_file through SQL"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the report lacks %q", want)
		}
	}

	// local cannot measure another machine.
	if r := h.must(2, "run", "tpcb", "--dsn", dsn, "--results", res, "--duration", "1s", "--host-metrics", "local"); !strings.Contains(r.stderr, "--host-metrics sql") {
		t.Errorf("local with a remote server:\n%s", r)
	}
}

func hasKeys(m map[string]float64, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}
