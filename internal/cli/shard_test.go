package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/testutil"
	"github.com/tunebench/tunebench/internal/workload"
)

// TestShardsAddUp: three shards of one tpcb run, as an Indexed Job's pods
// would start them (--shard 3, the index from JOB_COMPLETION_INDEX),
// against one server: each runs its part of the 5 clients (2, 2, 1) and
// says so, stores the part with its run, leaves the checks to the merge,
// and together they committed what the history table grew by.
func TestShardsAddUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)
	conn := connectDB(t, srv, db)
	history := func() int64 { return historyRows(t, conn) }
	before := history()
	resDB := tempPath(t, "results.db")
	var runs []*running
	var jsons []string
	for i := 0; i < 3; i++ {
		hi := newHarness(t)
		hi.env[workload.EnvJobIndex] = strconv.Itoa(i)
		js := tempPath(t, "shard.json")
		jsons = append(jsons, js)
		runs = append(runs, hi.start(nil, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "-c", "5", "-j", "3", "-T", "2s",
			"--warmup", "0s", "--shard", "3", "--rendezvous", "add-up", "--json", js, "--results", resDB, "-P", "0"))
		if i == 0 {
			// The first waits for the others at the database.
			runs[0].waitStderr(t, "1 of 3 shards at the rendezvous", 30*time.Second)
			time.Sleep(500 * time.Millisecond)
		}
	}
	var starts []time.Time
	var committed int64
	for i, rn := range runs {
		r := rn.wait(t, 2*time.Minute)
		if r.code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, r.code, r)
		}
		want := []string{"shard 0/3: clients 0-1 of 5", "shard 1/3: clients 2-3 of 5", "shard 2/3: clients 4-4 of 5"}[i]
		if !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "history growth") {
			t.Errorf("shard %d does not say %q, or checked what the merge checks:\n%s", i, want, r)
		}
		var sum struct {
			Transactions int64     `json:"transactions"`
			Clients      int       `json:"clients"`
			StartedAt    time.Time `json:"started_at"`
			Shard        struct {
				Index, Count int
				Part         string
				Rendezvous   string
				StartAt      time.Time `json:"start_at"`
				Offset       float64   `json:"clock_offset_ms"`
				RTT          float64   `json:"round_trip_ms"`
			} `json:"shard"`
		}
		b, err := os.ReadFile(jsons[i])
		if err != nil || json.Unmarshal(b, &sum) != nil {
			t.Fatalf("shard %d summary: %v\n%s", i, err, b)
		}
		if sum.Shard.Index != i || sum.Shard.Count != 3 || !strings.HasPrefix(sum.Shard.Part, want) || sum.Clients != []int{2, 2, 1}[i] {
			t.Errorf("shard %d summary: %+v, clients %d", i, sum.Shard, sum.Clients)
		}
		// The same machine's clock as the server's: an offset within the
		// round trip (which loopback keeps under a few ms).
		if sum.Shard.Rendezvous != "add-up" || sum.Shard.StartAt.IsZero() || sum.Shard.RTT <= 0 || sum.Shard.RTT > 50 ||
			sum.Shard.Offset < -sum.Shard.RTT-1 || sum.Shard.Offset > sum.Shard.RTT+1 {
			t.Errorf("shard %d: rendezvous %+v", i, sum.Shard)
		}
		starts = append(starts, sum.StartedAt)
		committed += sum.Transactions
	}
	// They started together, though the first came 0.5 s before the
	// others: each waits at the database once its clients are connected,
	// so the window each measured is the common one.
	for i, st := range starts {
		if d := st.Sub(starts[0]); d < -25*time.Millisecond || d > 25*time.Millisecond {
			t.Errorf("shard %d started %v after shard 0", i, d)
		}
	}
	// Each of the 5 clients may have had one transaction committed as the
	// run stopped that it could not count.
	if grew := history() - before; committed == 0 || grew < committed || grew > committed+5 {
		t.Errorf("the shards committed %d transactions; the history grew by %d", committed, grew)
	}

	// The merge, into the store the shards wrote (which it also reads):
	// one run whose throughput is the shards' summed, whose percentiles
	// are their histograms' merged, and whose history cross-check passes.
	js := tempPath(t, "merged.json")
	r := h.must(0, "results", "merge", resDB, "--results", resDB, "--json", js)
	if !strings.Contains(r.stdout, "history cross-check: history grew by") || !strings.Contains(r.stdout, "merged from 3 shards (rendezvous \"add-up\")") {
		t.Errorf("merge:\n%s", r)
	}
	var merged struct {
		RunID        int64           `json:"run_id"`
		Status       string          `json:"status"`
		Transactions int64           `json:"transactions"`
		TPS          float64         `json:"tps"`
		Clients      int             `json:"clients"`
		Latency      results.Latency `json:"latency_ms"`
		Merge        results.Merge   `json:"merge"`
	}
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &merged) != nil {
		t.Fatalf("merged summary: %v\n%s", err, b)
	}
	var tps float64
	for _, sh := range merged.Merge.Shards {
		tps += sh.TPS
	}
	if merged.Status != "ok" || merged.Transactions != committed || math.Abs(merged.TPS-tps) > 1e-9 || merged.Clients != 5 || merged.Merge.MinOverlapPct < 99 {
		t.Errorf("merged run: %s", b)
	}
	// Its percentiles are those of the shards' stored histograms merged.
	st, err := store.Open(context.Background(), resDB)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all := metrics.NewHist()
	for _, sh := range merged.Merge.Shards {
		run, err := st.GetRun(context.Background(), sh.RunID)
		if err != nil {
			t.Fatal(err)
		}
		for _, hg := range run.Histograms {
			if hg.Kind == store.KindLatency && (hg.Class == "ok" || hg.Class == "retried_ok") {
				d, err := metrics.Decode(hg.Encoded)
				if err != nil {
					t.Fatal(err)
				}
				all.Merge(d)
			}
		}
		if len(run.Intervals) == 0 {
			t.Errorf("shard run %d kept no interval histograms", sh.RunID)
		}
	}
	if want := results.LatencyOf(all); merged.Latency != want {
		t.Errorf("merged latency %+v, the shards' histograms merged %+v", merged.Latency, want)
	}
	// A merged run is a run: shown, listed, reported; merging again adds none.
	r = h.must(0, "results", "show", strconv.FormatInt(merged.RunID, 10), "--results", resDB)
	if !strings.Contains(r.stdout, "merged from 3 shards") || !strings.Contains(r.stdout, "2/3") {
		t.Errorf("results show of the merged run:\n%s", r)
	}
	r = h.must(0, "results", "merge", resDB, "--results", resDB)
	if !strings.Contains(r.stdout, fmt.Sprintf("already merged: run %d", merged.RunID)) {
		t.Errorf("a second merge:\n%s", r)
	}
	html := tempPath(t, "report.html")
	h.must(0, "report", strconv.FormatInt(merged.RunID, 10), "--results", resDB, "-o", html)
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "Driver shards") || !strings.Contains(string(b), "3, merged") {
		t.Errorf("the report does not say the run was merged from 3 shards (%v)", err)
	}
}

// TestRendezvousTimeout: a shard whose others never come gives up after
// --rendezvous-timeout, naming the shards that are missing.
func TestRendezvousTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)
	r := h.run("run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "-c", "3", "-T", "1s", "--shard", "1/3",
		"--rendezvous", "alone", "--rendezvous-timeout", "1s", "--results", tempPath(t, "results.db"))
	if r.code == 0 || !strings.Contains(r.stderr, "1 of 3 shards joined") || !strings.Contains(r.stderr, "missing [0 2]") ||
		!strings.Contains(r.stderr, "start the missing shards") {
		t.Errorf("a shard left alone:\n%s", r)
	}
	// The key again, later: the row shard 1 left is an earlier run's, not
	// a partner of shard 0 (which would then start alone).
	time.Sleep(1200 * time.Millisecond)
	r = h.run("run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "-c", "2", "-T", "1s", "--shard", "0/2",
		"--rendezvous", "alone", "--rendezvous-timeout", "1s", "--results", tempPath(t, "results.db"))
	if r.code == 0 || !strings.Contains(r.stderr, "missing [1]") {
		t.Errorf("a key used before counted the earlier run's shard:\n%s", r)
	}
	// Ctrl-C while waiting: an interruption (exit 130), nothing stored.
	sig := make(chan os.Signal, 1)
	resDB := tempPath(t, "results.db")
	rn := h.start(sig, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "-c", "2", "-T", "1s", "--shard", "0/2",
		"--rendezvous", "waiting", "--results", resDB)
	rn.waitStderr(t, "1 of 2 shards at the rendezvous", 30*time.Second)
	sig <- os.Interrupt
	r = rn.wait(t, 30*time.Second)
	if r.code != 130 || !strings.Contains(r.stderr, "interrupted while waiting for the other shards") {
		t.Errorf("interrupted at the rendezvous:\n%s", r)
	}
	if runs := listRuns(t, resDB); len(runs) != 0 {
		t.Errorf("stored %d runs after an interrupt at the rendezvous", len(runs))
	}
}

// TestTPCCShards: two tpcc shards (2 virtual users each of 4) meet at the
// database and run together; each leaves the NOPM cross-check to the
// merge with the district counters it read, and the New-Orders both
// committed are what the districts grew by.
func TestTPCCShards(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	h.must(0, "load", "tpcc", "--server-dir", srv.Dir(), "-d", db, "--warehouses", "2")
	resDB := tempPath(t, "results.db")
	var runs []*running
	var jsons []string
	for i := 0; i < 2; i++ {
		js := tempPath(t, "shard.json")
		jsons = append(jsons, js)
		// 8 s: the shards start together within tens of milliseconds on
		// a loaded machine (60 ms seen in a clean-clone make test), which
		// must stay under the merge's 1% of the window (shard_window).
		runs = append(runs, h.start(nil, "run", "tpcc", "--server-dir", srv.Dir(), "-d", db, "--vusers", "4", "--duration", "8s", "--rampup", "0s",
			"--shard", strconv.Itoa(i)+"/2", "--rendezvous", "tpcc", "--json", js, "--results", resDB, "-P", "0"))
	}
	var committed, ambiguous, before, after int64
	for i, rn := range runs {
		r := rn.wait(t, 2*time.Minute)
		if r.code != 0 || !strings.Contains(r.stderr, []string{"vusers 0-1 of 4", "vusers 2-3 of 4"}[i]) {
			t.Fatalf("shard %d: exit %d\n%s", i, r.code, r)
		}
		var sum struct {
			Status string `json:"status"`
			VUsers int    `json:"vusers"`
			Check  struct {
				Committed int64 `json:"driver_committed"`
				Ambiguous int64 `json:"ambiguous"`
				Before    int64 `json:"before"`
				After     int64 `json:"after"`
				NotRun    bool  `json:"not_run"`
				Detail    string
			} `json:"nopm_check"`
		}
		b, err := os.ReadFile(jsons[i])
		if err != nil || json.Unmarshal(b, &sum) != nil {
			t.Fatalf("shard %d summary: %v\n%s", i, err, b)
		}
		if sum.Status != "ok" || sum.VUsers != 2 || !sum.Check.NotRun || !strings.HasPrefix(sum.Check.Detail, "AT THE MERGE") || sum.Check.Committed == 0 {
			t.Errorf("shard %d: %s", i, b)
		}
		committed += sum.Check.Committed
		ambiguous += sum.Check.Ambiguous
		if i == 0 || sum.Check.Before < before {
			before = sum.Check.Before
		}
		after = max(after, sum.Check.After)
	}
	if grew := after - before; grew < committed || grew > committed+ambiguous {
		t.Errorf("the districts grew by %d (%d to %d); the shards committed %d New-Orders (%d ambiguous)", after-before, before, after, committed, ambiguous)
	}
	// The merge makes the cross-check once, over both shards.
	mergedDB := tempPath(t, "merged.db")
	r := h.must(0, "results", "merge", resDB, "--results", mergedDB)
	if !strings.Contains(r.stdout, fmt.Sprintf("NOPM cross-check: sum(d_next_o_id) grew by %d; the 2 shards committed %d New-Orders", after-before, committed)) ||
		!strings.Contains(r.stdout, "vusers 4") && !strings.Contains(r.stdout, "4 virtual users") {
		t.Errorf("merged tpcc:\n%s", r)
	}
	// Its NOPM series is the shards' summed: not zero where they ran.
	var nopm float64
	for _, p := range getRun(t, mergedDB, 1).Series {
		if p.Series == "nopm" && p.T > 0 {
			nopm += p.V
		}
	}
	if nopm == 0 {
		t.Error("the merged run's nopm series is all zero")
	}
}

// TestShardKilled: three shards run as processes, with their index from
// JOB_COMPLETION_INDEX as an Indexed Job's pods; one is killed (SIGKILL)
// mid-run. The others finish, and the merge makes a run of status errors
// that names the missing shard and holds all the others measured.
func TestShardKilled(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)
	dir := t.TempDir()
	var shards []*spawned
	for i := 0; i < 3; i++ {
		hi := newHarness(t)
		hi.env[workload.EnvJobIndex] = strconv.Itoa(i)
		shards = append(shards, hi.spawn("run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "-c", "3", "-T", "4s", "--warmup", "0s",
			"--shard", "3", "--rendezvous", "killed", "--results", filepath.Join(dir, fmt.Sprintf("shard-%d", i), "results.db"), "-P", "0"))
	}
	shards[1].waitStderr(t, "all 3 joined", time.Minute)
	time.Sleep(2 * time.Second) // mid-run
	shards[1].kill()
	for _, i := range []int{0, 2} {
		if code := shards[i].wait(t, time.Minute); code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, code, shards[i].stderr)
		}
	}
	js := tempPath(t, "merged.json")
	r := h.must(4, "results", "merge", dir, "--results", tempPath(t, "merged.db"), "--json", js)
	if !strings.Contains(r.stderr, "shard 1/3 has no result") || !strings.Contains(r.stdout, "MISSING") {
		t.Errorf("merge without shard 1:\n%s", r)
	}
	var merged struct {
		Status       string `json:"status"`
		Transactions int64  `json:"transactions"`
		Merge        results.Merge
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &merged); err != nil {
		t.Fatal(err)
	}
	got := merged.Merge.Shards
	if merged.Status != "errors" || len(got) != 3 || !got[1].Missing || got[0].Transactions == 0 || got[2].Transactions == 0 ||
		merged.Transactions != got[0].Transactions+got[2].Transactions {
		t.Errorf("merged run: %s", b)
	}
}

// TestTPCHShards: the throughput test's streams split over two shards
// (streams 1-2 and the refresh stream on shard 0, stream 3 on shard 1)
// that meet at the database; the merge has every stream's 22 queries,
// the refresh stream's three pairs, and Throughput@Size over the span of
// both. The power test is not sharded.
func TestTPCHShards(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	db := testutil.CreateDB(t, srv)
	h.must(0, "load", "tpch", "--server-dir", srv.Dir(), "-d", db, "--scale", "0.01", "--load-workers", "2")
	resDB := tempPath(t, "results.db")
	r := h.must(2, "run", "tpch", "--server-dir", srv.Dir(), "-d", db, "--test", "power", "--shard", "0/2", "--results", resDB)
	if !strings.Contains(r.stderr, "only tpch's throughput test can be sharded") {
		t.Errorf("a sharded power test:\n%s", r)
	}
	var runs []*running
	for i := 0; i < 2; i++ {
		runs = append(runs, h.start(nil, "run", "tpch", "--server-dir", srv.Dir(), "-d", db, "--test", "throughput", "--streams", "3", "--seed", "5",
			"--shard", strconv.Itoa(i)+"/2", "--rendezvous", "tpch", "--results", resDB))
	}
	for i, rn := range runs {
		r := rn.wait(t, 3*time.Minute)
		want := []string{"shard 0/2: query streams 1-2 of 3, and the refresh stream (3 pairs)", "shard 1/2: query streams 3-3 of 3"}[i]
		if r.code != 0 || !strings.Contains(r.stderr, want) {
			t.Fatalf("shard %d (want %q): exit %d\n%s", i, want, r.code, r)
		}
	}
	js := tempPath(t, "merged.json")
	r = h.must(0, "results", "merge", resDB, "--results", tempPath(t, "merged.db"), "--json", js)
	var merged struct {
		Status     string  `json:"status"`
		Streams    int     `json:"streams"`
		Throughput float64 `json:"throughput"`
		Ts         float64 `json:"throughput_s"`
		Queries    []struct {
			Stream int
			Status string
		} `json:"queries"`
		Refreshes []struct{ Function string } `json:"refreshes"`
		Merge     results.Merge
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &merged); err != nil {
		t.Fatal(err)
	}
	streams := map[int]int{}
	for _, q := range merged.Queries {
		if q.Status == "ok" {
			streams[q.Stream]++
		}
	}
	if merged.Status != "ok" || merged.Streams != 3 || merged.Throughput <= 0 || len(merged.Refreshes) != 6 ||
		streams[1] != 22 || streams[2] != 22 || streams[3] != 22 || merged.Merge.MinOverlapPct < 99 {
		t.Errorf("merged tpch (streams %v):\n%s\n%s", streams, r, b)
	}
	// Throughput@Size is the whole test's: 3 streams x 22 queries x 3600
	// / Ts x SF.
	if want := 3 * 22 * 3600 / merged.Ts * 0.01; math.Abs(merged.Throughput-want) > want*1e-9 {
		t.Errorf("throughput %v, want %v from Ts %v", merged.Throughput, want, merged.Ts)
	}
}

// TestExperimentShards: an experiment file with shards: 2 runs each
// configuration as two shards that meet at the database and stores one
// merged run per plan entry, linked to the plan (the shards' own runs
// under no experiment); a file whose runs cannot be split is refused
// before anything starts.
func TestExperimentShards(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	resDB := tempPath(t, "results.db")
	db := strings.ReplaceAll(testutil.CreateDB(t, srv), "t_", "s_") // a unique name, not created
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
	// seq_page_cost, not random_page_cost: TestExperimentDSN varies that
	// one on the same shared server at the same time.
	// 5 s runs: the shards start together within tens of milliseconds on
	// a loaded machine (23 ms seen), which must stay under the merge's 1%
	// of a run's window (shard_window).
	body := fmt.Sprintf(`name: it-shards
target:
  dsn: %q
  database: %s
workload:
  name: tpcb
  options: {scale: 1, duration: 5s}
matrix:
  settings: {seq_page_cost: ["1.5", "2.5"]}
  clients: [2, 3]
shards: 2
order: sequential
`, srv.DSN(), db)
	r := h.run("experiment", "run", writeExperiment(t, strings.ReplaceAll(body, "[2, 3]", "[1, 3]")), "--results", resDB)
	if r.code != 2 || !strings.Contains(r.stderr, "2 shards need at least one of the 1 clients each") {
		t.Fatalf("a run of 1 client over 2 shards:\n%s", r)
	}
	path := writeExperiment(t, body)
	if r := h.must(0, "experiment", "run", path, "--dry-run", "--results", resDB); !strings.Contains(r.stdout, "each split over 2 shards and merged") {
		t.Errorf("plan:\n%s", r)
	}
	r = h.run("experiment", "run", path, "--results", resDB)
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	_, links := expLinks(t, resDB, "it-shards")
	if len(links) != 4 {
		t.Fatalf("links %+v", links)
	}
	for _, l := range links {
		run := getRun(t, resDB, l.RunID)
		var sum struct {
			Clients      int    `json:"clients"`
			Transactions int64  `json:"transactions"`
			Status       string `json:"status"`
			Check        struct {
				Passed bool
				Detail string
			} `json:"history_check"`
			Driver struct {
				CPU float64 `json:"cpu_s"`
			} `json:"driver"`
			Merge results.Merge
		}
		if err := json.Unmarshal(run.Summary, &sum); err != nil {
			t.Fatal(err)
		}
		if run.Experiment != "it-shards" || l.Status != store.StatusOK || sum.Status != "ok" || sum.Clients != int(l.XValue) ||
			len(sum.Merge.Shards) != 2 || sum.Merge.Shards[0].Transactions+sum.Merge.Shards[1].Transactions != sum.Transactions ||
			!sum.Check.Passed || sum.Merge.MinOverlapPct < 99 {
			t.Errorf("run %d (%s, x %v): %s", l.RunID, l.Config, l.XValue, run.Summary)
		}
		for _, sh := range sum.Merge.Shards {
			part := getRun(t, resDB, sh.RunID)
			if part.Experiment != "" {
				t.Errorf("shard run %d is filed under experiment %q", sh.RunID, part.Experiment)
			}
			// One process: the driver's CPU is shard 0's reading of it.
			var ps struct {
				Driver struct {
					CPU float64 `json:"cpu_s"`
				} `json:"driver"`
			}
			if sh.Index == 0 && (json.Unmarshal(part.Summary, &ps) != nil || ps.Driver.CPU != sum.Driver.CPU) {
				t.Errorf("merged driver cpu_s %v, shard 0's %v", sum.Driver.CPU, ps.Driver.CPU)
			}
		}
	}
	h.must(0, "report", "it-shards", "--results", resDB, "-o", tempPath(t, "report.html"))
}
