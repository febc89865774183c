package cli_test

// --listen: the live view of a run and of an experiment, scraped by
// Debian's Prometheus and opened in headless Chromium (both on loopback).

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/testutil"
)

// freePort is a loopback port nothing listens on (just now).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// requireTool finds a tool on PATH; without it the test is skipped, or
// fails under CI (make test installs it: scripts/ensure-deps.sh --test).
func requireTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if testutil.InCI() {
			t.Fatalf("%s is required in CI (CI=%s): apt-get install %s", name, os.Getenv("CI"), pkg)
		}
		t.Skipf("skipping: %s not installed (apt-get install %s)", name, pkg)
	}
	return p
}

// startPrometheus starts Debian's prometheus with a configuration that
// scrapes target every second, and returns its API's base URL.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin := requireTool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: tunebench
    static_configs:
      - targets: [%q]
`, target)), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+strings.TrimPrefix(base, "http://"), "--log.level=warn")
	log := &syncBuf{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		select {
		case <-done:
			t.Fatalf("prometheus exited:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 60s:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// promQuery runs an instant query and returns the value of each series
// of the result by its run label.
func promQuery(t *testing.T, base, q string) []float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s %s", q, err, r.Status, r.Error)
	}
	var out []float64
	for _, s := range r.Data.Result {
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		if err != nil {
			t.Fatalf("query %s: value %v", q, s.Value)
		}
		out = append(out, v)
	}
	return out
}

// chromium runs headless Chromium on a loopback URL; every other host is
// unreachable (a proxy that does not exist, loopback bypassing it).
func chromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--hide-scrollbars", "--proxy-server=127.0.0.1:9", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

var pointsAttr = regexp.MustCompile(`<canvas id="(ch-[a-z]+)" data-points="(\d+)"`)

// TestListenPrometheusAndPage: a tpcb run with --listen is scraped every
// second by Debian's prometheus, whose query API then returns the run's
// committed-transaction counter equal to the stored count, under the
// run's key; meanwhile the live page, opened in headless Chromium, has
// its charts drawn with data, the database server's host apart (the screenshot is kept with
// TUNEBENCH_LIVE_ARTIFACTS=DIR).
func TestListenPrometheusAndPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	prom := startPrometheus(t, addr)
	js, results := tempPath(t, "run.json"), tempPath(t, "results.db")
	rn := h.start(nil, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "-c", "2", "-T", "10s", "--warmup", "1s",
		"--listen", strconv.Itoa(port), "--listen-linger", "3s", "--json", js, "--results", results,
		"--host-metrics", "sql") // the server's host drawn apart, as for a remote server
	rn.waitStderr(t, "live view: http://"+addr+"/", 30*time.Second)

	// The page, once a few ticks were served.
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(rn.errb.String(), "progress:") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no progress:\n%s", rn.errb)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if bin := lookChromium(); bin != "" {
		dom := chromium(t, bin, "--virtual-time-budget=3000", "--dump-dom", "http://"+addr+"/")
		if !strings.Contains(dom, `data-ready="1"`) {
			t.Errorf("the page is not ready (data-ready=1) after 3 s:\n%.3000s", dom)
		}
		pts := map[string]int{}
		for _, m := range pointsAttr.FindAllStringSubmatch(dom, -1) {
			pts[m[1]], _ = strconv.Atoi(m[2])
		}
		for _, c := range []string{"ch-tps", "ch-lat", "ch-cpu", "ch-scpu", "ch-sio"} {
			if pts[c] < 2 {
				t.Errorf("chart %s has %d points: %v", c, pts[c], pts)
			}
		}
		dir := os.Getenv("TUNEBENCH_LIVE_ARTIFACTS")
		if dir == "" {
			dir = t.TempDir()
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		shot := filepath.Join(dir, "live.png")
		os.Remove(shot)
		chromium(t, bin, "--virtual-time-budget=3000", "--window-size=1400,1100", "--screenshot="+shot, "http://"+addr+"/")
		f, err := os.Open(shot)
		if err != nil {
			t.Fatalf("no screenshot: %v", err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		colours := map[[3]uint32]bool{}
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y += 5 {
			for x := b.Min.X; x < b.Max.X; x += 5 {
				r, g, bl, _ := img.At(x, y).RGBA()
				colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			}
		}
		if len(colours) < 20 {
			t.Errorf("screenshot has %d colours: nothing drawn?", len(colours))
		}
		t.Logf("live page screenshot: %s", shot)
	} else if testutil.InCI() {
		t.Errorf("chromium is required in CI (CI=%s): apt-get install chromium", os.Getenv("CI"))
	} else {
		t.Log("chromium not installed: the page is not checked")
	}

	r := rn.wait(t, 2*time.Minute)
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	if !strings.Contains(r.stderr, "serving the final figures for 3s more") {
		t.Errorf("no linger:\n%s", r.stderr)
	}
	var sum struct {
		RunID        int64  `json:"run_id"`
		RunKey       string `json:"run_key"`
		Transactions int64  `json:"transactions"`
	}
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &sum) != nil || sum.RunKey == "" || sum.Transactions == 0 {
		t.Fatalf("summary %s (%v)", b, err)
	}
	if !strings.Contains(r.stderr, "run key "+sum.RunKey) {
		t.Errorf("the run key %s was not printed:\n%s", sum.RunKey, r.stderr)
	}
	stored := getRun(t, results, sum.RunID)
	if !strings.Contains(string(stored.Summary), `"run_key":"`+sum.RunKey+`"`) {
		t.Errorf("the stored summary lacks the run key: %s", stored.Summary)
	}
	if r := h.must(0, "results", "show", strconv.FormatInt(sum.RunID, 10), "--results", results); !strings.Contains(r.stdout, "run key: "+sum.RunKey) {
		t.Errorf("results show does not name the run key:\n%s", r.stdout)
	}

	// The run's counter in Prometheus: the last value scraped (the run's
	// series went stale when it stopped serving; a range keeps them).
	sel := fmt.Sprintf(`{run=%q,workload="tpcb"}`, sum.RunKey)
	q := fmt.Sprintf(`max_over_time(tunebench_committed_transactions_total%s[5m])`, strings.Replace(sel, "}", `,phase="measure"}`, 1))
	var got []float64
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if got = promQuery(t, prom, q); len(got) == 1 && int64(got[0]) == sum.Transactions {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("prometheus has %v for %s, want the stored %d transactions", got, q, sum.Transactions)
		}
	}
	// The documented queries work on what was scraped: a rate of the
	// counter, a quantile of the buckets, the samplers' values.
	for _, q := range []string{
		`max_over_time(sum(rate(tunebench_transactions_total` + strings.Replace(sel, "}", `,outcome="ok"}`, 1) + `[3s]))[5m:1s])`,
		`max_over_time(histogram_quantile(0.99, sum by (le) (rate(tunebench_latency_seconds_bucket` + sel + `[3s])))[5m:1s])`,
		`count(max_over_time(tunebench_sample` + sel + `[5m]))`,
	} {
		if v := promQuery(t, prom, q); len(v) != 1 || !(v[0] > 0) {
			t.Errorf("%s: %v, want a positive value", q, v)
		}
	}
}

func lookChromium() string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// TestListenBadAddress: a malformed --listen and a port in use are usage
// errors that say what to give instead, before anything connects.
func TestListenBadAddress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.must(2, "run", "tpcb", "--server-dir", filepath.Join(t.TempDir(), "none"), "--listen", "localhost")
	if !strings.Contains(r.stderr, `--listen "localhost" is not an address`) || !strings.Contains(r.stderr, "fix: give a port (--listen 9100") {
		t.Errorf("malformed:\n%s", r)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	r = h.must(2, "run", "tpcb", "--server-dir", filepath.Join(t.TempDir(), "none"), "--listen", ":"+strconv.Itoa(port))
	if !strings.Contains(r.stderr, "127.0.0.1:"+strconv.Itoa(port)+": the address is in use") ||
		!strings.Contains(r.stderr, "--listen "+strconv.Itoa(port+1)) {
		t.Errorf("in use:\n%s", r)
	}
	if strings.Contains(r.stderr, "connect") {
		t.Errorf("connected before checking --listen:\n%s", r)
	}
}

// TestListenExperiment: one listener for a whole experiment; each run is
// served under its own key (stored with it), with the plan and what is
// done. Read while the command lingers after the end.
func TestListenExperiment(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	results := tempPath(t, "results.db")
	db := strings.ReplaceAll(testutil.CreateDB(t, srv), "t_", "l_")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := srv.Connect(ctx); err == nil {
			for _, n := range []string{db, db + "_template"} {
				_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)")
			}
			conn.Close(ctx)
		}
	})
	path := writeExperiment(t, fmt.Sprintf(`name: it-live
target:
  dsn: %q
  database: %s
workload:
  name: tpcb
  options: {scale: 1, duration: 1s, no_check: true}
matrix:
  clients: [1, 2]
order: sequential
`, srv.DSN(), db))
	sig := make(chan os.Signal, 1)
	rn := h.start(sig, "experiment", "run", path, "--results", results, "--listen", "127.0.0.1:0", "--listen-linger", "5m")
	rn.waitStderr(t, "serving the final figures", 2*time.Minute)
	m := regexp.MustCompile(`live view: (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(rn.errb.String())
	if m == nil {
		t.Fatalf("no URL:\n%s", rn.errb)
	}
	get := func(p string) []byte {
		resp, err := http.Get(m[1] + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	var page struct {
		Run struct {
			Key  string `json:"key"`
			Done bool   `json:"done"`
		} `json:"run"`
		Experiment struct {
			Name, Status string
			Total, Done  int
			Ended        bool
			Runs         []struct {
				Index int    `json:"index"`
				Label string `json:"label"`
				State string `json:"state"`
				Key   string `json:"key"`
				RunID int64  `json:"run_id"`
			}
		} `json:"experiment"`
	}
	if err := json.Unmarshal(get("api/live"), &page); err != nil {
		t.Fatal(err)
	}
	metricsText := string(get("metrics"))
	sig <- os.Interrupt // cuts the linger short
	if r := rn.wait(t, 30*time.Second); r.code != 0 {
		t.Errorf("want exit 0 after an interrupt in the linger:\n%s", r)
	}

	e := page.Experiment
	if e.Name != "it-live" || e.Total != 2 || e.Done != 2 || !e.Ended || e.Status != "done" || len(e.Runs) != 2 {
		t.Fatalf("experiment %+v", e)
	}
	_, links := expLinks(t, results, "it-live")
	st := openStore(t, results)
	for i, pr := range e.Runs {
		if pr.State != "done" || pr.RunID != links[i].RunID || pr.Key == "" {
			t.Errorf("plan run %d: %+v, stored as run %d", i, pr, links[i].RunID)
			continue
		}
		r, err := st.GetRun(context.Background(), pr.RunID)
		if err != nil || !strings.Contains(string(r.Summary), `"run_key":"`+pr.Key+`"`) {
			t.Errorf("run %d is not stored with its key %s: %v", pr.RunID, pr.Key, err)
		}
	}
	if page.Run.Key != e.Runs[1].Key || !page.Run.Done {
		t.Errorf("served run %+v, want the last one, ended", page.Run)
	}
	for _, want := range []string{
		`tunebench_experiment_runs_done{experiment="it-live"} 2`,
		`tunebench_experiment_done{experiment="it-live"} 1`,
		`tunebench_run_info{experiment="it-live",headline="tps",plan_run="1",run="` + e.Runs[1].Key + `",workload="tpcb"} 1`,
	} {
		if !strings.Contains(metricsText, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metricsText)
		}
	}
	if strings.Contains(metricsText, e.Runs[0].Key) {
		t.Error("the first run's series are still served after the second started")
	}
}
