package cli_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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
	results := tempPath(t, "results.db")
	var runs []*running
	var jsons []string
	for i := 0; i < 3; i++ {
		hi := newHarness(t)
		hi.env[workload.EnvJobIndex] = strconv.Itoa(i)
		js := tempPath(t, "shard.json")
		jsons = append(jsons, js)
		runs = append(runs, hi.start(nil, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "-c", "5", "-j", "3", "-T", "2s",
			"--warmup", "0s", "--shard", "3", "--rendezvous", "add-up", "--json", js, "--results", results, "-P", "0"))
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
	results := tempPath(t, "results.db")
	var runs []*running
	var jsons []string
	for i := 0; i < 2; i++ {
		js := tempPath(t, "shard.json")
		jsons = append(jsons, js)
		runs = append(runs, h.start(nil, "run", "tpcc", "--server-dir", srv.Dir(), "-d", db, "--vusers", "4", "--duration", "2s", "--rampup", "0s",
			"--shard", strconv.Itoa(i)+"/2", "--rendezvous", "tpcc", "--json", js, "--results", results, "-P", "0"))
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
}
