package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "sub", "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestDefaultPathFrom(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		name string
		env  func(string) string
		want string
	}{
		{"override", env("TUNEBENCH_RESULTS", "rel/r.db", "XDG_DATA_HOME", "/x", "HOME", "/h"), "rel/r.db"},
		{"xdg", env("XDG_DATA_HOME", "/x", "HOME", "/h"), "/x/tunebench/results.db"},
		{"relative xdg ignored", env("XDG_DATA_HOME", "x", "HOME", "/h"), "/h/.local/share/tunebench/results.db"},
		{"home", env("HOME", "/h"), "/h/.local/share/tunebench/results.db"},
	}
	for _, c := range cases {
		got, err := DefaultPathFrom(c.env)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if _, err := DefaultPathFrom(env()); err == nil {
		t.Error("no HOME: want an error")
	} else if errs.HintOf(err) == "" {
		t.Errorf("no HOME: error without a hint: %v", err)
	}
}

func TestOpenCreatesPrivateFileAndIsIdempotent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "results.db")
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveRun(ctx, sampleRun()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s mode %o, want 600", p, m)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o700 {
		t.Errorf("dir mode %o, want 700", m)
	}
	var mode string
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q, %v; want wal", mode, err)
	}
	var fk int
	if err := s.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys %d, %v; want 1", fk, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Open again (and a third time): no migration is re-applied, data stays.
	for i := 0; i < 2; i++ {
		s2, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		var n, maxv int
		if err := s2.db.QueryRow(`SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &maxv); err != nil {
			t.Fatal(err)
		}
		if n != SchemaVersion() || maxv != SchemaVersion() {
			t.Errorf("schema_migrations has %d rows, max %d; want %d", n, maxv, SchemaVersion())
		}
		runs, err := s2.ListRuns(ctx, ListFilter{})
		if err != nil || len(runs) != 1 {
			t.Errorf("runs after reopen: %d, %v", len(runs), err)
		}
		s2.Close()
	}
}

func TestOpenNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	future := SchemaVersion() + 1
	if _, err := s.db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'x')`, future); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(ctx, path)
	if err == nil {
		t.Fatal("want an error for a newer schema")
	}
	msg := err.Error()
	if !strings.Contains(msg, fmt.Sprintf("schema version %d", future)) || !strings.Contains(msg, path) {
		t.Errorf("unclear error: %v", err)
	}
	if errs.KindOf(err) != errs.KindUsage || errs.HintOf(err) == "" {
		t.Errorf("kind %v hint %q", errs.KindOf(err), errs.HintOf(err))
	}
}

func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, bytes.Repeat([]byte("this is not sqlite\n"), 200), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path)
	if err == nil || errs.KindOf(err) != errs.KindUsage {
		t.Fatalf("got %v, want a usage error", err)
	}
}

// sampleRun is a run with every field set, two series and two histograms.
func sampleRun() *Run {
	start := time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600))
	r := &Run{
		Experiment: "sb-sweep",
		Workload:   "tpcb",
		Variant:    "select-only",
		Status:     StatusOK,
		StartedAt:  start,
		EndedAt:    start.Add(3*time.Second + 7),
		Params:     json.RawMessage(`{"scale": 10, "clients": 8, "dsn": "host=/tmp dbname=bench password=xxxxx"}`),
		Env:        json.RawMessage(`{"host":{"cpus":2}}`),
		Summary:    json.RawMessage(`{"tps": 1234.5678901234567, "errors": 0}`),
		Check:      nil,
		Histograms: []Histogram{
			{Op: "select", Class: "ok", Kind: KindLatency, Encoded: []byte{0x1c, 0x84, 0x93, 0x14, 0, 0, 0xff}},
			{Op: "select", Class: "conn_error", Kind: KindLatency, Encoded: []byte{}},
		},
	}
	for i := 0; i < 3; i++ {
		t := float64(i + 1)
		r.Series = append(r.Series,
			Point{Series: "tps", T: t, V: 1000 + float64(i)*0.25},
			Point{Series: "p95_ms", T: t, V: 1.5 / float64(i+1)},
		)
	}
	r.Series = append(r.Series, Point{Series: "p95_ms", T: 4, V: math.NaN()})
	return r
}

// canonicalSeries orders points the way GetRun returns them: by series name,
// then in saved order.
func canonicalSeries(pts []Point) []Point {
	names, groups := sortedSeries(pts)
	var out []Point
	for _, n := range names {
		for _, i := range groups[n] {
			out = append(out, pts[i])
		}
	}
	return out
}

func equalPoints(a, b []Point) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Series != b[i].Series || a[i].T != b[i].T ||
			a[i].V != b[i].V && !(math.IsNaN(a[i].V) && math.IsNaN(b[i].V)) {
			return false
		}
	}
	return true
}

func TestSaveGetRoundTrip(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	r := sampleRun()
	r.Series = append(r.Series,
		Point{Series: "inf", T: 0, V: math.Inf(1)},
		Point{Series: "inf", T: 0.5, V: math.Inf(-1)},
		Point{Series: "inf", T: 0.25, V: math.Copysign(0, -1)},
		Point{Series: "inf", T: 0.25, V: math.SmallestNonzeroFloat64},
		Point{Series: "inf", T: 1e-9, V: math.MaxFloat64},
	)
	r.Check = json.RawMessage(`{"ok":true}`)
	id, err := s.SaveRun(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if id <= 0 || r.ID != id {
		t.Fatalf("id %d, r.ID %d", id, r.ID)
	}
	got, err := s.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.Experiment != r.Experiment || got.Workload != r.Workload ||
		got.Variant != r.Variant || got.Status != r.Status {
		t.Errorf("row mismatch: %+v", got.Info())
	}
	if !got.StartedAt.Equal(r.StartedAt) || !got.EndedAt.Equal(r.EndedAt) {
		t.Errorf("times %v %v, want %v %v", got.StartedAt, got.EndedAt, r.StartedAt, r.EndedAt)
	}
	if got.StartedAt.Location() != time.UTC {
		t.Errorf("times should come back in UTC, got %v", got.StartedAt.Location())
	}
	for _, c := range []struct {
		name      string
		got, want json.RawMessage
	}{{"params", got.Params, r.Params}, {"env", got.Env, r.Env}, {"summary", got.Summary, r.Summary}, {"check", got.Check, r.Check}} {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s: %s, want %s", c.name, c.got, c.want)
		}
	}
	if want := canonicalSeries(r.Series); !equalPoints(got.Series, want) {
		t.Errorf("series:\n got %v\nwant %v", got.Series, want)
	}
	wantH := sortedHistograms(r.Histograms)
	if !reflect.DeepEqual(got.Histograms, wantH) {
		t.Errorf("histograms:\n got %v\nwant %v", got.Histograms, wantH)
	}

	// A run without optional parts.
	bare := &Run{Workload: "fsblog", Status: StatusFailed}
	id2, err := s.SaveRun(ctx, bare)
	if err != nil {
		t.Fatal(err)
	}
	got2, err := s.GetRun(ctx, id2)
	if err != nil {
		t.Fatal(err)
	}
	if !got2.StartedAt.IsZero() || !got2.EndedAt.IsZero() || got2.Params != nil || got2.Check != nil ||
		got2.Series != nil || got2.Histograms != nil {
		t.Errorf("bare run came back as %+v", got2)
	}
}

func TestSaveRunLargeSeries(t *testing.T) {
	s := openTemp(t)
	r := sampleRun()
	r.Series = nil
	for sec := 0; sec < 3600; sec++ {
		for k := 0; k < 20; k++ {
			r.Series = append(r.Series, Point{Series: fmt.Sprintf("s%02d", k), T: float64(sec), V: float64(sec*k) / 7})
		}
	}
	start := time.Now()
	id, err := s.SaveRun(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %d points in %v", len(r.Series), time.Since(start))
	got, err := s.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !equalPoints(got.Series, canonicalSeries(r.Series)) {
		t.Error("large series did not round-trip")
	}
}

func countRows(t *testing.T, s *Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tbl := range []string{"runs", "series", "series_points", "histograms"} {
		var n int
		if err := s.db.QueryRow(`SELECT count(*) FROM ` + tbl).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[tbl] = n
	}
	return out
}

func TestSaveRunAllOrNothing(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	empty := countRows(t, s)

	// Invalid data found by the database after the run row and all series
	// points were inserted: a duplicate histogram key.
	r := sampleRun()
	r.Histograms = append(r.Histograms, r.Histograms[0])
	if _, err := s.SaveRun(ctx, r); err == nil {
		t.Fatal("duplicate histogram: want an error")
	}
	if r.ID != 0 {
		t.Errorf("failed save set r.ID = %d", r.ID)
	}
	if got := countRows(t, s); !reflect.DeepEqual(got, empty) {
		t.Errorf("after failed save: %v", got)
	}

	// Context cancelled in the middle of the series inserts.
	big := sampleRun()
	big.Series = nil
	for i := 0; i < 5000; i++ {
		big.Series = append(big.Series, Point{Series: "tps", T: float64(i), V: 1})
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := 0
	s.afterPointBatch = func(int) {
		batches++
		if batches == 3 {
			cancel()
		}
	}
	_, err := s.SaveRun(cctx, big)
	s.afterPointBatch = nil
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled save: got %v, want context.Canceled", err)
	}
	if batches != 3 {
		t.Errorf("insert went on for %d batches after cancel", batches)
	}
	if got := countRows(t, s); !reflect.DeepEqual(got, empty) {
		t.Errorf("after cancelled save: %v", got)
	}

	// The store still works afterwards.
	if _, err := s.SaveRun(ctx, sampleRun()); err != nil {
		t.Fatal(err)
	}
}

func TestSaveRunValidation(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	cases := map[string]func(r *Run){
		"no workload":         func(r *Run) { r.Workload = "" },
		"bad status":          func(r *Run) { r.Status = "fine" },
		"bad json":            func(r *Run) { r.Summary = json.RawMessage(`{"tps":`) },
		"bad kind":            func(r *Run) { r.Histograms[0].Kind = "p99" },
		"nan time":            func(r *Run) { r.Series[0].T = math.NaN() },
		"password in params":  func(r *Run) { r.Params = json.RawMessage(`{"dsn":"host=db password=hunter22"}`) },
		"url password in env": func(r *Run) { r.Env = json.RawMessage(`{"dsn":"postgres://bench:hunter22@db/x"}`) },
		"pgpassword in check": func(r *Run) { r.Check = json.RawMessage(`{"env":"PGPASSWORD=hunter22"}`) },
		"password in variant": func(r *Run) { r.Variant = "password=hunter22" },
		"year 3000":           func(r *Run) { r.EndedAt = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) },
	}
	for name, mutate := range cases {
		r := sampleRun()
		mutate(r)
		_, err := s.SaveRun(ctx, r)
		if err == nil {
			t.Errorf("%s: saved, want an error", name)
			continue
		}
		if errs.KindOf(err) != errs.KindInternal {
			t.Errorf("%s: kind %v", name, errs.KindOf(err))
		}
		if strings.Contains(err.Error(), "hunter22") {
			t.Errorf("%s: error leaks the secret: %v", name, err)
		}
	}
	if n := countRows(t, s)["runs"]; n != 0 {
		t.Errorf("%d runs saved", n)
	}
}

func TestGetRunUnknown(t *testing.T) {
	s := openTemp(t)
	_, err := s.GetRun(context.Background(), 42)
	if err == nil {
		t.Fatal("want an error")
	}
	if want := "no run 42 in " + s.Path(); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "tunebench results list") {
		t.Errorf("kind %v hint %q", errs.KindOf(err), errs.HintOf(err))
	}
}

func TestListRuns(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	type spec struct {
		exp, wl string
		start   time.Time
	}
	specs := []spec{
		{"e1", "tpcb", base.Add(2 * time.Hour)},
		{"e1", "tpcc", base.Add(1 * time.Hour)},
		{"", "tpcb", base.Add(3 * time.Hour)},
		{"e2", "tpcb", base.Add(2 * time.Hour)}, // same start as the first: id breaks the tie
	}
	ids := make([]int64, len(specs))
	for i, sp := range specs {
		r := sampleRun()
		r.Experiment, r.Workload, r.StartedAt, r.EndedAt = sp.exp, sp.wl, sp.start, sp.start.Add(time.Minute)
		id, err := s.SaveRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	list := func(f ListFilter) []int64 {
		t.Helper()
		runs, err := s.ListRuns(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	cases := []struct {
		f    ListFilter
		want []int64
	}{
		{ListFilter{}, []int64{ids[2], ids[3], ids[0], ids[1]}},
		{ListFilter{Workload: "tpcb"}, []int64{ids[2], ids[3], ids[0]}},
		{ListFilter{Experiment: "e1"}, []int64{ids[0], ids[1]}},
		{ListFilter{Experiment: "e1", Workload: "tpcc"}, []int64{ids[1]}},
		{ListFilter{Limit: 2}, []int64{ids[2], ids[3]}},
		{ListFilter{Workload: "nope"}, nil},
	}
	for _, c := range cases {
		if got := list(c.f); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: got %v, want %v", c.f, got, c.want)
		}
	}
	runs, err := s.ListRuns(ctx, ListFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := runs[0]; r.Workload != "tpcb" || !r.StartedAt.Equal(specs[2].start) || string(r.Summary) != string(sampleRun().Summary) {
		t.Errorf("row fields: %+v", r)
	}
}

func TestSplitStatements(t *testing.T) {
	got := splitStatements("CREATE TABLE a (x INT); -- one\n\nCREATE TABLE b (\n  y INT -- c; d\n);\n")
	want := []string{"CREATE TABLE a (x INT); -- one", "CREATE TABLE b (\n  y INT -- c; d\n);"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
}

func TestDSNEscapesPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "we?ird #dir% name")
	s, err := Open(context.Background(), filepath.Join(dir, "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(filepath.Join(dir, "r.db")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveRun(context.Background(), sampleRun()); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("stray files next to the store dir: %v", entries)
	}
}

func BenchmarkSaveRun72k(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "r.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := sampleRun()
	r.Series = nil
	for sec := 0; sec < 3600; sec++ {
		for k := 0; k < 20; k++ {
			r.Series = append(r.Series, Point{Series: fmt.Sprintf("s%02d", k), T: float64(sec), V: float64(sec * k)})
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.SaveRun(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}

// Several processes may open a new store at once: each migration is applied
// exactly once and every opener succeeds.
func TestConcurrentOpenAndSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	ctx := context.Background()
	const n = 4
	errc := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			s, err := Open(ctx, path)
			if err != nil {
				errc <- err
				return
			}
			defer s.Close()
			_, err = s.SaveRun(ctx, sampleRun())
			errc <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := countRows(t, s)["runs"]; got != n {
		t.Errorf("%d runs, want %d", got, n)
	}
	var rows int
	if err := s.db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != SchemaVersion() {
		t.Errorf("schema_migrations rows %d, %v", rows, err)
	}
}
