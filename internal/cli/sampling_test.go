package cli_test

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/testutil"
)

// TestSamplersTPCB runs tpcb (scale 1, 2 clients, 1 s warm-up, 3 s
// measured) on a managed server and checks that the run stores the system,
// PostgreSQL, wait-event and driver series with sane values on the
// executor's time axis; then that --no-samplers stores none of them.
func TestSamplersTPCB(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// A server of its own: the wait-event sampler counts the active
	// sessions of the whole server, and the shared one serves the other
	// tests running in parallel.
	srv := testutil.StartServer(t)
	db := loadedDB(h, srv)
	results := tempPath(t, "results.db")
	jsonPath := tempPath(t, "summary.json")
	r := h.must(0, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", results,
		"--clients", "2", "--warmup", "1s", "--duration", "3s", "--json", jsonPath)
	s := readSummary(t, jsonPath)
	run := getRun(t, results, s.RunID)

	by := map[string][]store.Point{}
	for _, p := range run.Series {
		by[p.Series] = append(by[p.Series], p)
	}
	var names []string
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("series: %s", strings.Join(names, " "))

	// measured: the points in the measurement window (0, 3].
	measured := func(name string) []store.Point {
		var out []store.Point
		for _, p := range by[name] {
			if p.T > 0 && p.T <= 3+1e-9 {
				out = append(out, p)
			}
		}
		return out
	}
	maxOf := func(pts []store.Point) float64 {
		m := math.Inf(-1)
		for _, p := range pts {
			m = math.Max(m, p.V)
		}
		return m
	}
	required := []string{
		"sys.cpu_user_pct", "sys.cpu_system_pct", "sys.cpu_iowait_pct", "sys.cpu_steal_pct", "sys.cpu_idle_pct",
		"sys.mem_used_bytes", "sys.page_cache_bytes", "net.rx_bytes_s", "net.tx_bytes_s", "net.lo_bytes_s",
		"pg.proc_cpu_pct", "pg.proc_rss_bytes", "pg.proc_read_bytes_s", "pg.proc_write_bytes_s",
		"pg.commits_s", "pg.rollbacks_s", "pg.blks_hit_s", "pg.blks_read_s", "pg.temp_bytes_s", "pg.deadlocks",
		"pg.checkpoints", "pg.buffers_checkpoint_s", "pg.buffers_clean_s", "pg.buffers_backend_s", "pg.wal_bytes_s",
		"pg.active_sessions", "driver.cpu_pct", "driver.gc_pause_ms",
	}
	for _, n := range required {
		if len(measured(n)) < 2 {
			t.Errorf("%s: %d points in the measurement window (%v)", n, len(measured(n)), by[n])
		}
	}
	for _, n := range names {
		for _, p := range by[n] {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) || p.V < 0 {
				t.Errorf("%s at %v: %v", n, p.T, p.V)
			}
		}
	}

	// CPU percentages are shares of the machine: 0..100, summing to 100.
	for _, p := range by["sys.cpu_user_pct"] {
		var sum float64
		for _, n := range []string{"sys.cpu_user_pct", "sys.cpu_system_pct", "sys.cpu_iowait_pct", "sys.cpu_steal_pct", "sys.cpu_idle_pct"} {
			for _, q := range by[n] {
				if q.T == p.T {
					if q.V > 100+1e-9 {
						t.Errorf("%s at %v: %v > 100", n, q.T, q.V)
					}
					sum += q.V
				}
			}
		}
		if math.Abs(sum-100) > 1e-6 {
			t.Errorf("CPU split at %v sums to %v", p.T, sum)
		}
	}
	if v := maxOf(measured("sys.cpu_user_pct")) + maxOf(measured("sys.cpu_system_pct")); v <= 0 {
		t.Errorf("no CPU use seen during a benchmark: %v", v)
	}

	// The database did the work, and the profile saw the clients.
	for _, n := range []string{"pg.commits_s", "pg.blks_hit_s", "pg.wal_bytes_s", "pg.proc_cpu_pct", "pg.proc_rss_bytes", "net.lo_bytes_s", "driver.cpu_pct"} {
		if v := maxOf(measured(n)); v <= 0 {
			t.Errorf("%s: max %v in the window, want > 0", n, v)
		}
	}
	// Commits per second agree with the executor's tps (within what the
	// statistics' 1 s flush delay allows): compare the window's means.
	var tps, commits float64
	for _, p := range measured("tps") {
		tps += p.V / 3
	}
	for _, p := range measured("pg.commits_s") {
		commits += p.V / float64(len(measured("pg.commits_s")))
	}
	if commits < 0.3*tps || commits > 3*tps {
		t.Errorf("pg.commits_s mean %v vs tps %v", commits, tps)
	}
	var waits []string
	for _, n := range names {
		if strings.HasPrefix(n, "wait.") {
			waits = append(waits, n)
			if len(by[n]) != len(by["pg.active_sessions"]) {
				t.Errorf("%s has %d points, pg.active_sessions %d (not filled)", n, len(by[n]), len(by["pg.active_sessions"]))
			}
		}
	}
	if len(waits) == 0 || maxOf(measured("pg.active_sessions")) <= 0 {
		t.Errorf("no wait events (active sessions max %v)", maxOf(measured("pg.active_sessions")))
	}
	if maxOf(by["pg.active_sessions"]) > 2+1e-9 {
		t.Errorf("more active sessions (%v) than clients (2): the samplers' own backends are counted", maxOf(by["pg.active_sessions"]))
	}

	// Same time axis as the executor: the samples of the measurement fall
	// on its whole-second ticks, and the warm-up is negative.
	ticks := map[float64]bool{}
	for _, p := range by["tps"] {
		ticks[p.T] = true
	}
	var onTicks, negative int
	for _, p := range by["sys.cpu_user_pct"] {
		if p.T < 0 {
			negative++
		}
		if p.T >= 0 && p.T <= 3 {
			if math.Abs(p.T-math.Round(p.T)) > 1e-9 {
				t.Errorf("sample at T=%v is not on a whole second", p.T)
			}
			if ticks[p.T] {
				onTicks++
			}
		}
	}
	// The window's ticks are at 1, 2 and 3 s. The sample at 3 s is taken
	// as the run ends; when the collector is stopped before it completes
	// (a loaded machine), it is dropped as cut short. So 2 of 3 is the bar.
	if onTicks < 2 || negative < 1 {
		t.Errorf("%d samples on executor ticks, %d in the warm-up; cpu %v, tps %v", onTicks, negative, by["sys.cpu_user_pct"], by["tps"])
	}
	if strings.Contains(r.stderr, "samplers:") && !strings.Contains(r.stderr, "disk metrics off") {
		t.Errorf("sampler problems:\n%s", r.stderr)
	}

	// --no-samplers: only the executor's series.
	h.must(0, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", results,
		"--clients", "1", "--duration", "1s", "--no-samplers", "--json", jsonPath)
	s2 := readSummary(t, jsonPath)
	for _, p := range getRun(t, results, s2.RunID).Series {
		if strings.Contains(p.Series, ".") {
			t.Fatalf("--no-samplers run has %s", p.Series)
		}
	}
}
