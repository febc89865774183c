package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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
	history := func() int64 {
		var n int64
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pgbench_history").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
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
			"--warmup", "0s", "--shard", "3", "--json", js, "--results", results, "-P", "0"))
	}
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
			Transactions int64 `json:"transactions"`
			Clients      int   `json:"clients"`
			Shard        struct {
				Index, Count int
				Part         string
			} `json:"shard"`
		}
		b, err := os.ReadFile(jsons[i])
		if err != nil || json.Unmarshal(b, &sum) != nil {
			t.Fatalf("shard %d summary: %v\n%s", i, err, b)
		}
		if sum.Shard.Index != i || sum.Shard.Count != 3 || !strings.HasPrefix(sum.Shard.Part, want) || sum.Clients != []int{2, 2, 1}[i] {
			t.Errorf("shard %d summary: %+v, clients %d", i, sum.Shard, sum.Clients)
		}
		committed += sum.Transactions
	}
	// Each of the 5 clients may have had one transaction committed as the
	// run stopped that it could not count.
	if grew := history() - before; committed == 0 || grew < committed || grew > committed+5 {
		t.Errorf("the shards committed %d transactions; the history grew by %d", committed, grew)
	}
}
