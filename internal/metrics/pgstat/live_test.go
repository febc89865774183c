package pgstat

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/testutil"
)

// capture is what TestLive writes to testdata/ when TUNEBENCH_CAPTURE is
// set: the raw results of the samplers' queries on a real server while it
// had work to do, for the parser tests.
type capture struct {
	Version    int                  `json:"server_version_num"`
	Database   string               `json:"database"`
	DBRows     []map[string]any     `json:"pg_stat_database"`
	Checkpoint []map[string]float64 `json:"checkpoint_rows"`
	WAL        []map[string]float64 `json:"wal"`
	Waits      [][]WaitRow          `json:"wait_samples"`
}

// TestLive runs the samplers against a real server with a small load that
// produces known wait events: a backend in pg_sleep (Timeout.PgSleep), one
// blocked on a row lock (Lock.transactionid), one burning CPU, and commits.
func TestLive(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := testutil.Connect(t, srv)
	if _, err := admin.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t SELECT g, 0 FROM generate_series(1, 10) g"); err != nil {
		t.Fatal(err)
	}
	connect := Connector(srv.Connect)

	// The load.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	run := func(f func(c *pgx.Conn) error) {
		c := testutil.Connect(t, srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for loadCtx.Err() == nil {
				if err := f(c); err != nil && loadCtx.Err() == nil {
					t.Errorf("load: %v", err)
					return
				}
			}
		}()
	}
	run(func(c *pgx.Conn) error { _, err := c.Exec(loadCtx, "SELECT pg_sleep(0.2)"); return ignoreCancel(err) })
	run(func(c *pgx.Conn) error {
		_, err := c.Exec(loadCtx, "SELECT count(*) FROM generate_series(1, 3000000)")
		return ignoreCancel(err)
	})
	run(func(c *pgx.Conn) error {
		_, err := c.Exec(loadCtx, "UPDATE t SET v = v + 1 WHERE id = 2")
		return ignoreCancel(err)
	})
	// A holder keeps row 1 locked; a waiter blocks on it.
	holder := testutil.Connect(t, srv)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "UPDATE t SET v = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	waiter := testutil.Connect(t, srv)
	waitDone := make(chan error, 1)
	go func() { _, err := waiter.Exec(loadCtx, "UPDATE t SET v = 2 WHERE id = 1"); waitDone <- err }()

	stats := NewStats(connect, "")
	waits := NewWaits(connect)
	defer stats.Close()
	defer waits.Close()
	var cap capture

	var statPts [][]sampler.Point
	for i := 0; i < 3; i++ {
		if i > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		pts, err := stats.Sample(ctx, time.Now())
		if err != nil {
			t.Fatalf("stats sample %d: %v", i, err)
		}
		statPts = append(statPts, pts)
	}
	var profile []sampler.Point
	for i := 0; i < 10; i++ {
		if _, err := waits.Sample(ctx, time.Now()); err != nil {
			t.Fatalf("wait sample %d: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	profile = waits.Flush(time.Now())

	if os.Getenv("TUNEBENCH_CAPTURE") != "" {
		c, _ := connect(ctx)
		cap.Version = stats.sess.version
		cap.Database = stats.sess.dbname
		rows, _ := c.Query(ctx, DatabaseQuery)
		cap.DBRows, _ = pgx.CollectRows(rows, pgx.RowToMap)
		for _, q := range CheckpointQueries(cap.Version) {
			nums, _, err := rowMaps(ctx, c, q)
			if err != nil {
				t.Fatal(err)
			}
			cap.Checkpoint = append(cap.Checkpoint, nums[0])
		}
		cap.WAL, _, _ = rowMaps(ctx, c, WALQuery)
		for i := 0; i < 5; i++ {
			rows, _ := c.Query(ctx, WaitQuery, AppName)
			wr, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WaitRow])
			if err != nil {
				t.Fatal(err)
			}
			cap.Waits = append(cap.Waits, wr)
			time.Sleep(100 * time.Millisecond)
		}
		c.Close(ctx)
		b, _ := json.MarshalIndent(cap, "", " ")
		name := filepath.Join("testdata", fmt.Sprintf("pg%d.json", cap.Version/10000))
		if err := os.WriteFile(name, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", name)
	}

	stopLoad()
	_ = tx.Rollback(context.Background())
	<-waitDone
	wg.Wait()

	// Stats: the first sample has only cumulative totals; later ones rates.
	first := pointMap(statPts[0])
	if _, ok := first[Commits]; ok {
		t.Errorf("rate from the first reading: %v", first)
	}
	if first[Checkpoints] != 0 || first[Deadlocks] != 0 {
		t.Errorf("cumulative series do not start at 0: %v", first)
	}
	last := pointMap(statPts[2])
	for _, k := range []string{Commits, Rollbacks, BlksHit, BlksRead, TempBytes, Deadlocks, Checkpoints,
		BuffersCheckpoint, BuffersClean, BuffersBackend, WALBytes, AllPrefix + "commits_s"} {
		if _, ok := last[k]; !ok {
			t.Errorf("no %s in %v", k, last)
		}
	}
	if last[Commits] <= 0 || last[WALBytes] <= 0 {
		t.Errorf("commits %v/s, WAL %v B/s: want > 0 under an update load", last[Commits], last[WALBytes])
	}

	// The profile shows what the load does, and not the samplers.
	pm := pointMap(profile)
	for _, k := range []string{CPUEvent, "wait.Timeout.PgSleep", "wait.Lock.transactionid", sampler.ActiveSessions} {
		if pm[k] <= 0 {
			t.Errorf("profile has %s = %v; profile %v", k, pm[k], pm)
		}
	}
	if pm["wait.Lock.transactionid"] != 1 {
		t.Errorf("one blocked backend gives %v active sessions in Lock.transactionid", pm["wait.Lock.transactionid"])
	}
	if pm[sampler.ActiveSessions] > 4.001 {
		t.Errorf("more active sessions (%v) than load connections (4)", pm[sampler.ActiveSessions])
	}
	if pid, err := stats.BackendPID(ctx); err != nil || pid <= 0 {
		t.Errorf("BackendPID = %d, %v", pid, err)
	}
}

func ignoreCancel(err error) error {
	if err != nil && strings.Contains(err.Error(), "context canceled") {
		return nil
	}
	return err
}

func pointMap(pts []sampler.Point) map[string]float64 {
	m := map[string]float64{}
	for _, p := range pts {
		m[p.Series] = p.V
	}
	return m
}
