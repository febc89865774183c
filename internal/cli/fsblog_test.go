package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/store"
)

// fsblogJSON is the fsblog summary as documented in docs/storage.md.
type fsblogJSON struct {
	RunID      int64   `json:"run_id"`
	Workload   string  `json:"workload"`
	Status     string  `json:"status"`
	Tree       string  `json:"tree"`
	Readers    int     `json:"readers"`
	Iterations int     `json:"iterations"`
	DurationS  float64 `json:"duration_s"`
	WriteScore int64   `json:"write_score"`
	ReadScore  int64   `json:"read_score"`
	Blogs      int64   `json:"blogs"`
	ReadChunk  int     `json:"read_chunk_bytes"`
	Totals     struct {
		BlogWrites    int64 `json:"blog_writes"`
		BlogReads     int64 `json:"blog_reads"`
		ArticleReads  int64 `json:"article_reads"`
		ArticleWrites int64 `json:"article_writes"`
		PictureReads  int64 `json:"picture_reads"`
		PictureWrites int64 `json:"picture_writes"`
		CommentWrites int64 `json:"comment_writes"`
		BytesRead     int64 `json:"bytes_read"`
		BytesWritten  int64 `json:"bytes_written"`
	} `json:"totals"`
	Intervals []struct {
		Index        int     `json:"index"`
		EndS         float64 `json:"end_s"`
		Seconds      float64 `json:"seconds"`
		Blogs        int64   `json:"blogs"`
		ArticleReads int64   `json:"article_reads"`
		Partial      bool    `json:"partial"`
	} `json:"intervals"`
	LatencyMs map[string]struct {
		Count          int64
		Mean, P50, P99 float64
		Max            float64
	} `json:"latency_ms"`
	Errors      int64 `json:"errors"`
	Interrupted bool  `json:"interrupted"`
}

func readFsblogJSON(t *testing.T, path string) fsblogJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("--json file: %v", err)
	}
	var s fsblogJSON
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, b)
	}
	return s
}

// Three 1-s intervals with blogbench's default actors: non-zero rates in the
// summary and the store, latency histograms per operation, tree removed.
func TestFsblogRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	results := tempPath(t, "results.db")
	jsonPath := tempPath(t, "fsblog.json")
	r := h.must(0, "fsblog", "--dir", dir, "--iterations", "3", "--interval", "1s", "--results", results, "--json", jsonPath)
	for _, want := range []string{"R articles", "W pictures", "write score (blogs created)", "read score (blogs read)", "article_read", "stored as run"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout has no %q:\n%s", want, r)
		}
	}
	if !strings.Contains(r.stderr, "100 readers") || strings.Count(r.stderr, "\n") < 5 {
		t.Errorf("no progress rows on stderr:\n%s", r.stderr)
	}
	s := readFsblogJSON(t, jsonPath)
	if s.Workload != "fsblog" || s.Status != "ok" || s.Interrupted || s.Errors != 0 || s.ReadChunk != 65536 || s.Readers != 100 {
		t.Errorf("summary header: %+v", s)
	}
	if len(s.Intervals) != 3 || s.DurationS < 2.9 || s.DurationS > 4 {
		t.Fatalf("intervals %d, duration %v", len(s.Intervals), s.DurationS)
	}
	tot := s.Totals
	// Comment reads can be 0 this early: a commenter writes comment n down
	// to 1 and a reader starts at 1.
	if s.WriteScore == 0 || s.ReadScore == 0 || tot.ArticleReads == 0 || tot.ArticleWrites == 0 || tot.PictureReads == 0 ||
		tot.PictureWrites == 0 || tot.CommentWrites == 0 || tot.BytesRead == 0 || tot.BytesWritten == 0 {
		t.Errorf("zero figures: scores %d/%d totals %+v", s.WriteScore, s.ReadScore, tot)
	}
	if s.WriteScore != tot.BlogWrites || s.ReadScore != tot.BlogReads || s.Intervals[2].Blogs != s.WriteScore {
		t.Errorf("scores %d/%d vs totals %+v, last row blogs %d", s.WriteScore, s.ReadScore, tot, s.Intervals[2].Blogs)
	}
	for _, op := range []string{"blog_write", "blog_read", "article_write", "article_read", "picture_write", "picture_read", "comment_write"} {
		l, ok := s.LatencyMs[op]
		if !ok || l.Count == 0 || l.Mean <= 0 || l.P50 > l.P99 || l.P99 > l.Max {
			t.Errorf("latency of %s: %+v", op, l)
		}
	}
	noLeftovers(t, dir, "tunebench-fsblog-")

	runs := listRuns(t, results)
	if len(runs) != 1 {
		t.Fatalf("want one run, got %d", len(runs))
	}
	run := getRun(t, results, runs[0].ID)
	if run.Workload != "fsblog" || run.Variant != "default" || run.Status != store.StatusOK {
		t.Errorf("stored run %s %s %s", run.Workload, run.Variant, run.Status)
	}
	series := map[string][]store.Point{}
	for _, p := range run.Series {
		series[p.Series] = append(series[p.Series], p)
	}
	for _, name := range []string{"blogs", "article_reads_s", "article_writes_s", "picture_reads_s", "picture_writes_s", "comment_writes_s", "read_mb_s", "write_mb_s"} {
		pts := series[name]
		if len(pts) != 3 {
			t.Errorf("series %s has %d points, want 3", name, len(pts))
			continue
		}
		sum := 0.0
		for _, p := range pts {
			sum += p.V
		}
		if sum <= 0 {
			t.Errorf("series %s is all zero: %+v", name, pts)
		}
	}
	if _, ok := series["comment_reads_s"]; !ok {
		t.Errorf("no comment_reads_s series")
	}
	hists := map[string]int64{}
	for _, hg := range run.Histograms {
		hd, err := metrics.Decode(hg.Encoded)
		if err != nil || hg.Kind != store.KindLatency || hg.Class != "ok" {
			t.Fatalf("histogram %s/%s/%s: %v", hg.Op, hg.Class, hg.Kind, err)
		}
		hists[hg.Op] = hd.Count()
	}
	if hists["article_read"] != s.LatencyMs["article_read"].Count || hists["blog_write"] == 0 {
		t.Errorf("stored histograms %v vs summary", hists)
	}
	var env struct {
		DataDir *struct {
			FSType string `json:"fs_type"`
		} `json:"data_dir"`
	}
	if json.Unmarshal(run.Env, &env); env.DataDir == nil || env.DataDir.FSType == "" {
		t.Errorf("environment lacks the filesystem: %s", run.Env)
	}
}

// --keep leaves the tree in place and names it.
func TestFsblogKeep(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	jsonPath := tempPath(t, "fsblog.json")
	h.must(0, "fsblog", "--dir", dir, "--iterations", "1", "--interval", "500ms", "--readers", "2", "--commenters", "1", "--keep",
		"--results", tempPath(t, "r.db"), "--json", jsonPath)
	s := readFsblogJSON(t, jsonPath)
	if s.Tree == "" || filepath.Dir(s.Tree) != dir {
		t.Fatalf("tree %q, want a directory under %s", s.Tree, dir)
	}
	if _, err := os.Stat(filepath.Join(s.Tree, "blog-0")); err != nil {
		t.Errorf("kept tree has no blog-0: %v", err)
	}
}

func TestFsblogInterrupt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	results := tempPath(t, "results.db")
	jsonPath := tempPath(t, "fsblog.json")
	sig := make(chan os.Signal, 2)
	rn := h.start(sig, "fsblog", "--dir", dir, "--iterations", "30", "--interval", "1s", "--readers", "10", "--results", results, "--json", jsonPath)
	rn.waitStderr(t, "R articles", 30*time.Second)
	time.Sleep(1500 * time.Millisecond)
	sig <- os.Interrupt
	t0 := time.Now()
	r := rn.wait(t, 30*time.Second)
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("took %v to stop", took)
	}
	if r.code != 130 {
		t.Fatalf("want exit 130:\n%s", r)
	}
	s := readFsblogJSON(t, jsonPath)
	n := len(s.Intervals)
	if !s.Interrupted || s.Status != "interrupted" || n < 1 || n > 3 || !s.Intervals[n-1].Partial || s.WriteScore == 0 {
		t.Errorf("interrupted summary: %+v", s)
	}
	if runs := listRuns(t, results); len(runs) != 1 || runs[0].Status != store.StatusInterrupted {
		t.Errorf("stored: %+v", runs)
	}
	noLeftovers(t, dir, "tunebench-fsblog-")
}

func TestFsblogBadUsage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	results := tempPath(t, "results.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fsblog"}, "--dir"},
		{[]string{"fsblog", "--dir", filepath.Join(dir, "nope")}, "create the directory"},
		{[]string{"fsblog", "--dir", dir, "--writers", "0"}, "writers"},
		{[]string{"fsblog", "--dir", dir, "--interval", "1ms"}, "interval"},
		{[]string{"fsblog", "--dir", dir, "--iterations", "0"}, "iterations"},
		{[]string{"fsblog", "--dir", dir, "--readers", "-1"}, "negative"},
	} {
		r := h.must(2, append(c.args, "--results", results)...)
		if !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "fix:") {
			t.Errorf("want %q and a fix:\n%s", c.want, r)
		}
	}
	noLeftovers(t, dir, "tunebench-fsblog-")
	if runs := listRuns(t, results); len(runs) != 0 {
		t.Errorf("runs stored after usage errors: %+v", runs)
	}
}
