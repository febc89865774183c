package cli_test

// The CLI integration tests run the real commands in-process through
// cli.Main with a test State (buffers for stdout/stderr, a map for the
// environment, a channel for signals) against managed PostgreSQL servers.

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/cli"
	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
	targets "github.com/tunebench/tunebench/internal/target/all"
	"github.com/tunebench/tunebench/internal/testutil"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/all"
	"github.com/tunebench/tunebench/internal/workload/tpcb"
)

// pg is the package's shared server; tests that restart a server or need
// special options start their own.
var pg testutil.Shared

// TestMain runs the package in UTC: outputs that show local times are
// compared with goldens made in UTC (TestOldStore).
//
// With $TUNEBENCH_TEST_CHILD set the test binary is tunebench itself, run
// by harness.spawn as a process a test can kill -9.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	if os.Getenv(childEnv) != "" {
		os.Exit(cli.Main(cli.NewOSState(all.Registry(), targets.Drivers()), os.Args[1:])) //nolint:forbidigo // the test binary run as tunebench, as cmd/tunebench does
	}
	os.Exit(pg.Run(m))
}

const childEnv = "TUNEBENCH_TEST_CHILD"

// spawned is a tunebench command running as a child process.
type spawned struct {
	cmd    *exec.Cmd
	stderr *syncBuf
	done   chan struct{}
}

// spawn starts tunebench as a child process with the harness's
// environment (and the process's PATH); the test kills it at the end.
func (h *harness) spawn(args ...string) *spawned {
	h.t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{childEnv + "=1", "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	for k, v := range h.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	sp := &spawned{cmd: cmd, stderr: &syncBuf{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = io.Discard, sp.stderr
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() { cmd.Wait(); close(sp.done) }()
	h.t.Cleanup(func() { cmd.Process.Kill(); <-sp.done })
	return sp
}

// waitStderr waits until the child's stderr contains s.
func (sp *spawned) waitStderr(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	waitText(t, sp.stderr, s, timeout, func() (string, bool) {
		select {
		case <-sp.done:
			return sp.stderr.String(), true
		default:
			return "", false
		}
	})
}

// waitText waits until buf contains s; ended reports, without blocking,
// whether what writes buf is over, and what to show then.
func waitText(t *testing.T, buf *syncBuf, s string, timeout time.Duration, ended func() (string, bool)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(buf.String(), s) {
		if what, over := ended(); over && !strings.Contains(buf.String(), s) {
			t.Fatalf("ended before printing %q:\n%s", s, what)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q on stderr after %v:\n%s", s, timeout, buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for the child to end and returns its exit code.
func (sp *spawned) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-sp.done:
		return sp.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("the child still runs after %v:\n%s", timeout, sp.stderr)
	}
	return -1
}

// kill ends the child with SIGKILL: nothing of it runs its clean-up.
func (sp *spawned) kill() {
	sp.cmd.Process.Kill()
	<-sp.done
}

// syncBuf is a buffer safe for the concurrent writers of a run (progress
// ticks, error log, the interrupt handler).
type syncBuf = testutil.Buffer

// harness runs commands for one test and keeps everything they printed.
type harness struct {
	t *testing.T
	// registry holds the workloads (nil: every registered one).
	registry *workload.Registry
	// drivers are the database targets (the registered ones, by default).
	drivers []target.Driver
	env     map[string]string // the State's environment (not the process's)

	mu      sync.Mutex
	outputs []string // every stdout and stderr, for secret scans
	exits   []int    // codes passed to State.Exit
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, env: map[string]string{}, drivers: targets.Drivers()}
}

// result is one command's outcome.
type result struct {
	args           []string
	code           int
	stdout, stderr string
	took           time.Duration
}

func (r result) String() string {
	return "tunebench " + strings.Join(r.args, " ") + "\n--- exit " + itoa(r.code) + "\n--- stdout:\n" + r.stdout + "--- stderr:\n" + r.stderr
}

// state builds a State; sig may be nil (no signals).
func (h *harness) state(sig <-chan os.Signal) (*cli.State, *syncBuf, *syncBuf) {
	out, errb := &syncBuf{}, &syncBuf{}
	if h.registry == nil {
		h.registry = all.Registry()
	}
	st := &cli.State{
		Stdout: out,
		Stderr: errb,
		Getenv: func(k string) string { return h.env[k] },
		Environ: func() []string {
			env := []string{"PATH=" + os.Getenv("PATH")}
			for k, v := range h.env {
				env = append(env, k+"="+v)
			}
			return env
		},
		LookupEnv: func(k string) (string, bool) {
			v, ok := h.env[k]
			return v, ok
		},
		Redactor: redact.New(),
		Registry: h.registry,
		Drivers:  h.drivers,
		Signals:  sig,
		Exit: func(code int) {
			h.mu.Lock()
			h.exits = append(h.exits, code)
			h.mu.Unlock()
		},
	}
	return st, out, errb
}

// running is a command started in the background.
type running struct {
	out, errb *syncBuf
	done      chan result
}

// start runs one command in a goroutine; sig may be nil.
func (h *harness) start(sig <-chan os.Signal, args ...string) *running {
	st, out, errb := h.state(sig)
	rn := &running{out: out, errb: errb, done: make(chan result, 1)}
	go func() {
		t0 := time.Now()
		code := cli.Main(st, args)
		r := result{args: args, code: code, stdout: out.String(), stderr: errb.String(), took: time.Since(t0)}
		h.mu.Lock()
		h.outputs = append(h.outputs, r.stdout, r.stderr)
		h.mu.Unlock()
		rn.done <- r
	}()
	return rn
}

// waitStderr waits until the command's stderr contains s.
func (rn *running) waitStderr(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	waitText(t, rn.errb, s, timeout, func() (string, bool) {
		select {
		case r := <-rn.done:
			rn.done <- r
			return r.String(), true
		default:
			return "", false
		}
	})
}

// wait waits for the command to end.
func (rn *running) wait(t *testing.T, timeout time.Duration) result {
	t.Helper()
	select {
	case r := <-rn.done:
		return r
	case <-time.After(timeout):
		t.Fatalf("command still running after %v:\nstdout:\n%s\nstderr:\n%s", timeout, rn.out.String(), rn.errb.String())
	}
	return result{}
}

// runWith runs one command with the given signal channel.
func (h *harness) runWith(sig <-chan os.Signal, args ...string) result {
	return <-h.start(sig, args...).done
}

func (h *harness) run(args ...string) result { return h.runWith(nil, args...) }

// must runs a command that has to exit with code want.
func (h *harness) must(want int, args ...string) result {
	h.t.Helper()
	r := h.run(args...)
	if r.code != want {
		h.t.Fatalf("want exit %d:\n%s", want, r)
	}
	return r
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// loadedDB creates a database on srv and loads tpcb scale 1 into it through
// the CLI.
func loadedDB(h *harness, srv *server.Server, extra ...string) string {
	h.t.Helper()
	db := testutil.CreateDB(h.t, srv)
	args := append([]string{"load", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--scale", "1", "--load-workers", "2"}, extra...)
	r := h.must(0, args...)
	if !strings.Contains(r.stdout, "done in") {
		h.t.Fatalf("load printed no summary:\n%s", r)
	}
	return db
}

func openStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("opening results store %s: %v", path, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// listRuns returns the runs in the store at path (none when it does not exist).
func listRuns(t *testing.T, path string) []store.RunInfo {
	t.Helper()
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return nil
	}
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("opening results store %s: %v", path, err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background(), store.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func getRun(t *testing.T, path string, id int64) *store.Run {
	t.Helper()
	r, err := openStore(t, path).GetRun(context.Background(), id)
	if err != nil {
		t.Fatalf("GetRun %d: %v", id, err)
	}
	return r
}

// latency is the latency_ms object of the summary.
type latency struct {
	Avg, P50, P90, P95, P99, Max float64
}

// summaryJSON is the --json summary as documented (docs/json-summary.md);
// decoded separately from the product's own struct on purpose.
type summaryJSON struct {
	RunID        int64              `json:"run_id"`
	Workload     string             `json:"workload"`
	Script       string             `json:"script"`
	Protocol     string             `json:"protocol"`
	Status       string             `json:"status"`
	Clients      int                `json:"clients"`
	Threads      int                `json:"threads"`
	FollowServer bool               `json:"follow_server"`
	Handovers    int64              `json:"handovers"`
	Scale        int                `json:"scale"`
	DurationS    float64            `json:"duration_s"`
	Transactions int64              `json:"transactions"`
	TPS          float64            `json:"tps"`
	LatencyMs    latency            `json:"latency_ms"`
	Outcomes     map[string]int64   `json:"outcomes"`
	Errors       int64              `json:"errors"`
	ErrorsPct    float64            `json:"errors_pct"`
	BySQLState   map[string]int64   `json:"errors_by_sqlstate"`
	Unfinished   int64              `json:"unfinished"`
	Interrupted  bool               `json:"interrupted"`
	Settings     map[string]string  `json:"settings_applied"`
	Outages      []outageJSON       `json:"outages"`
	OpenLoop     *openLoopJSON      `json:"open_loop"`
	Check        *tpcb.CheckReport  `json:"check"`
	Raw          map[string]any     `json:"-"`
	RawLatency   map[string]float64 `json:"-"`
}

type outageJSON struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Errors int64   `json:"errors"`
}

type openLoopJSON struct {
	TargetTPS     float64 `json:"target_tps"`
	AchievedTPS   float64 `json:"achieved_tps"`
	Skipped       int64   `json:"skipped"`
	Late          int64   `json:"late"`
	MaxQueueDepth int64   `json:"max_queue_depth"`
	ScheduleLagMs latency `json:"schedule_lag_ms"`
	DispatchMs    latency `json:"dispatch_delay_ms"`
	TimerSlackUs  float64 `json:"timer_slack_us"`
	ServiceMs     latency `json:"service_ms"`
}

func parseSummary(t *testing.T, b []byte) summaryJSON {
	t.Helper()
	var s summaryJSON
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, b)
	}
	if err := json.Unmarshal(b, &s.Raw); err != nil {
		t.Fatal(err)
	}
	var lat struct {
		L map[string]float64 `json:"latency_ms"`
	}
	if err := json.Unmarshal(b, &lat); err != nil {
		t.Fatalf("latency_ms is not an object of numbers: %v", err)
	}
	s.RawLatency = lat.L
	return s
}

func readSummary(t *testing.T, path string) summaryJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("--json file: %v", err)
	}
	return parseSummary(t, b)
}

// checkSummaryShape checks the documented top-level fields and the internal
// consistency of a finished run's summary.
func checkSummaryShape(t *testing.T, s summaryJSON) {
	t.Helper()
	for _, k := range []string{"run_id", "tps", "transactions", "duration_s", "latency_ms", "outcomes"} {
		if _, ok := s.Raw[k]; !ok {
			t.Errorf("summary has no top-level %q", k)
		}
	}
	for _, k := range []string{"avg", "p50", "p90", "p95", "p99", "max"} {
		if _, ok := s.RawLatency[k]; !ok {
			t.Errorf("latency_ms has no %q", k)
		}
	}
	for _, k := range []string{"ok", "user_abort", "retried_ok", "failed_retry_exhausted", "failed_error", "conn_error", "ambiguous_commit", "skipped_late"} {
		if _, ok := s.Outcomes[k]; !ok {
			t.Errorf("outcomes has no %q (every class is listed): %v", k, s.Outcomes)
		}
	}
	if s.RunID < 1 {
		t.Errorf("run_id %d", s.RunID)
	}
	if s.Transactions > 0 {
		l := s.LatencyMs
		if !(l.P50 > 0 && l.P50 <= l.P90 && l.P90 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.Max && l.Avg > 0 && l.Avg <= l.Max) {
			t.Errorf("latency percentiles are not ordered/positive: %+v", l)
		}
		if s.DurationS <= 0 {
			t.Errorf("duration_s %v", s.DurationS)
		} else if want := float64(s.Transactions) / s.DurationS; !near(s.TPS, want, 0.001) {
			t.Errorf("tps %v, but transactions/duration_s = %v", s.TPS, want)
		}
	}
	var total int64
	for _, n := range s.Outcomes {
		total += n
	}
	if total < s.Transactions {
		t.Errorf("outcomes %v sum to %d, fewer than the %d transactions", s.Outcomes, total, s.Transactions)
	}
	if committed := s.Outcomes["ok"] + s.Outcomes["retried_ok"]; committed != s.Transactions {
		t.Errorf("outcomes ok+retried_ok = %d, transactions = %d", committed, s.Transactions)
	}
}

// near reports whether a is within rel (relative) of b.
func near(a, b, rel float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	m := b
	if m < 0 {
		m = -m
	}
	return d <= rel*m+1e-9
}

// tempPath is a file path in a fresh temp dir.
func tempPath(t *testing.T, name string) string {
	return filepath.Join(t.TempDir(), name)
}

// connectDB opens a side connection to db on srv.
func connectDB(t *testing.T, srv *server.Server, db string) *pgx.Conn {
	t.Helper()
	return testutil.ConnectDB(t, srv, db)
}

// historyRows counts pgbench_history: what the tpcb-like transactions
// committed add up to.
func historyRows(t *testing.T, conn *pgx.Conn) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pgbench_history").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
