package pgstat

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tunebench/tunebench/internal/metrics/sampler"
)

func load(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// pg15 reads the captured PostgreSQL 15 results.
func pg15(t *testing.T) (c capture, rows []DBRow) {
	load(t, "pg15.json", &c)
	for _, m := range c.DBRows {
		num, text := map[string]float64{}, map[string]string{}
		for k, v := range m {
			switch x := v.(type) {
			case float64:
				num[k] = x
			case string:
				text[k] = x
			}
		}
		rows = append(rows, DBRowFromMaps(num, text))
	}
	return c, rows
}

func TestSumDatabases(t *testing.T) {
	c, rows := pg15(t)
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	bench, all, found := SumDatabases(rows, c.Database)
	if !found || bench != (DBCounters{Commits: 3961, BlksHit: 50610, BlksRead: 149, TempBytes: 84000000}) {
		t.Errorf("bench %+v found %v", bench, found)
	}
	// All rows, the shared-objects row (datname NULL) included.
	if all.Commits != 3961+878 || all.BlksHit != 551+50610+83852 || all.BlksRead != 78+149+1029 {
		t.Errorf("all %+v", all)
	}
	if _, _, found := SumDatabases(rows, "nope"); found {
		t.Error("found a missing database")
	}
	if _, _, found := SumDatabases(rows, ""); found {
		t.Error("the empty name matched the shared-objects row")
	}
}

func TestParseCheckpoints(t *testing.T) {
	c, _ := pg15(t)
	bg := c.Checkpoint[0]
	bg["checkpoints_timed"], bg["checkpoints_req"], bg["buffers_checkpoint"], bg["buffers_clean"], bg["buffers_backend"] = 4, 1, 900, 30, 12
	ck, err := ParseCheckpoints(c.Version, bg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ck != (CheckpointCounters{Checkpoints: 5, BuffersCheckpoint: 900, BuffersClean: 30, BuffersBackend: 12}) {
		t.Errorf("pg15: %+v", ck)
	}
	if len(CheckpointQueries(c.Version)) != 1 || len(CheckpointQueries(170000)) != 3 {
		t.Error("query count per version")
	}
	delete(bg, "buffers_backend")
	if _, err := ParseCheckpoints(c.Version, bg, nil, nil); err == nil || !strings.Contains(err.Error(), "buffers_backend") {
		t.Errorf("missing column: %v", err)
	}

	var v17 struct {
		Version int                  `json:"server_version_num"`
		Rows    []map[string]float64 `json:"checkpoint_rows"`
		Rows18  []map[string]float64 `json:"checkpoint_rows_pg18"`
	}
	load(t, "pg17.json", &v17)
	ck, err = ParseCheckpoints(v17.Version, v17.Rows[0], v17.Rows[1], v17.Rows[2])
	if err != nil {
		t.Fatal(err)
	}
	if ck != (CheckpointCounters{Checkpoints: 5, BuffersCheckpoint: 4100, BuffersClean: 120, BuffersBackend: 77}) {
		t.Errorf("pg17: %+v", ck)
	}
	ck, err = ParseCheckpoints(180000, v17.Rows18[0], v17.Rows18[1], v17.Rows18[2])
	if err != nil || ck.Checkpoints != 4 {
		t.Errorf("pg18 (num_done): %+v %v", ck, err)
	}
	// A 17 server read with the 16 query shape fails clearly.
	if _, err := ParseCheckpoints(v17.Version, v17.Rows[0], nil, nil); err == nil {
		t.Error("pg17 without pg_stat_checkpointer: no error")
	}
}

func TestStatsCompute(t *testing.T) {
	c, rows := pg15(t)
	s := &Stats{sess: session{version: c.Version, dbname: c.Database}}
	t0 := time.Unix(1000, 0)
	var ck [3]map[string]float64
	ck[0] = map[string]float64{"checkpoints_timed": 10, "checkpoints_req": 2, "buffers_checkpoint": 1000, "buffers_clean": 50, "buffers_backend": 7}
	wal := []map[string]float64{c.WAL[0]}
	pts, err := s.compute(t0, rows, ck, wal)
	if err != nil {
		t.Fatal(err)
	}
	m := pointMap(pts)
	// First reading: only the cumulative series, at 0.
	if len(m) != 3 || m[Deadlocks] != 0 || m[Checkpoints] != 0 || m[AllPrefix+"deadlocks"] != 0 {
		t.Errorf("first: %v", m)
	}

	// Two seconds later: 400 commits, 10 rollbacks, 2000 hits, 20 reads,
	// 8 MB temp, a deadlock and a checkpoint in the bench database; 1 MB WAL.
	rows2 := append([]DBRow(nil), rows...)
	for i := range rows2 {
		if rows2[i].Datname == c.Database {
			r := &rows2[i]
			r.Commits += 400
			r.Rollbacks += 10
			r.BlksHit += 2000
			r.BlksRead += 20
			r.TempBytes += 8e6
			r.Deadlocks++
		}
		if rows2[i].Datname == "template1" {
			rows2[i].Commits += 100
		}
	}
	ck2 := [3]map[string]float64{{"checkpoints_timed": 10, "checkpoints_req": 3, "buffers_checkpoint": 1600, "buffers_clean": 50, "buffers_backend": 9}}
	wal2 := []map[string]float64{{"wal_bytes": c.WAL[0]["wal_bytes"] + 1<<20}}
	pts, err = s.compute(t0.Add(2*time.Second), rows2, ck2, wal2)
	if err != nil {
		t.Fatal(err)
	}
	m = pointMap(pts)
	want := map[string]float64{
		Commits: 200, Rollbacks: 5, BlksHit: 1000, BlksRead: 10, TempBytes: 4e6, Deadlocks: 1,
		AllPrefix + "commits_s": 250, AllPrefix + "deadlocks": 1,
		Checkpoints: 1, BuffersCheckpoint: 300, BuffersClean: 0, BuffersBackend: 1, WALBytes: 1 << 19,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || math.Abs(got-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}

	// A statistics reset: counters go back; no rates for that interval, the
	// cumulative series keep their value.
	pts, err = s.compute(t0.Add(3*time.Second), rows, ck, wal)
	if err != nil {
		t.Fatal(err)
	}
	m = pointMap(pts)
	if _, ok := m[Commits]; ok {
		t.Errorf("rate across a reset: %v", m)
	}
	if m[Deadlocks] != 1 || m[Checkpoints] != 1 {
		t.Errorf("cumulative after reset: %v", m)
	}

	// A database that is not there is reported once.
	s2 := &Stats{Database: "nope", sess: session{version: c.Version}}
	if _, err := s2.compute(t0, rows, ck, wal); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing database: %v", err)
	}
	if _, err := s2.compute(t0.Add(time.Second), rows, ck, wal); err != nil {
		t.Errorf("missing database reported twice: %v", err)
	}
}

func TestWaitProfile(t *testing.T) {
	c, _ := pg15(t)
	var p WaitProfile
	if pts := p.Flush(); pts != nil {
		t.Errorf("empty profile flushed %v", pts)
	}
	for _, s := range c.Waits {
		p.Add(s)
	}
	p.Add(nil) // a sample with nothing active
	got := pointMap(p.Flush())
	// Five captured samples: CPU 1,2,1,2,1; Lock and PgSleep in each;
	// BufFileRead and BufFileWrite once each; then an empty sample.
	want := map[string]float64{
		CPUEvent: 7.0 / 6, "wait.Lock.transactionid": 5.0 / 6, "wait.Timeout.PgSleep": 5.0 / 6,
		"wait.IO.BufFileRead": 1.0 / 6, "wait.IO.BufFileWrite": 1.0 / 6,
	}
	var total float64
	for k, v := range want {
		total += v
		if math.Abs(got[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if math.Abs(got[sampler.ActiveSessions]-total) > 1e-9 || len(got) != len(want)+1 {
		t.Errorf("profile %v", got)
	}
	if pts := p.Flush(); pts != nil {
		t.Errorf("flush after flush: %v", pts)
	}
	for r, want := range map[WaitRow]string{
		{}:                                  "wait.CPU",
		{Type: "LWLock", Event: "WALWrite"}: "wait.LWLock.WALWrite",
		{Type: "IO"}:                        "wait.IO.Unknown",
	} {
		if got := r.SeriesName(); got != want {
			t.Errorf("%+v -> %q, want %q", r, got, want)
		}
	}
}

func TestCounterAndToFloat(t *testing.T) {
	var c counter
	if _, ok := c.update(10, 1); ok {
		t.Error("rate from one reading")
	}
	if r, ok := c.update(30, 2); !ok || r != 10 || c.total != 20 {
		t.Errorf("rate %v %v total %v", r, ok, c.total)
	}
	if _, ok := c.update(5, 1); ok || c.total != 20 {
		t.Error("reset gave a rate or changed the total")
	}
	if r, ok := c.update(8, 0); ok || r != 0 || c.total != 23 {
		t.Errorf("zero interval: %v %v %v", r, ok, c.total)
	}
	var n pgtype.Numeric
	if err := n.Scan("12345678901.5"); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[any]float64{int64(3): 3, int32(4): 4, int16(5): 5, uint32(6): 6, 1.5: 1.5, float32(2.5): 2.5} {
		if f, ok := toFloat(in); !ok || f != want {
			t.Errorf("toFloat(%T %v) = %v %v", in, in, f, ok)
		}
	}
	if f, ok := toFloat(n); !ok || f != 12345678901.5 {
		t.Errorf("numeric: %v %v", f, ok)
	}
	for _, in := range []any{nil, "x", pgtype.Numeric{}} {
		if _, ok := toFloat(in); ok {
			t.Errorf("toFloat(%#v) ok", in)
		}
	}
}
