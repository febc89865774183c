package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload/fsblog"
)

// fsblogParams are the parameters of one fsblog run; stored with the run.
type fsblogParams struct {
	Dir        string        `json:"dir"`
	Writers    int           `json:"writers"`
	Rewriters  int           `json:"rewriters"`
	Commenters int           `json:"commenters"`
	Readers    int           `json:"readers"`
	Interval   time.Duration `json:"interval_ns"`
	Iterations int           `json:"iterations"`
	Fsync      bool          `json:"fsync"`
	Keep       bool          `json:"keep"`
	Seed       int64         `json:"seed"`
	Experiment string        `json:"experiment,omitempty"`
}

func defaultFsblogParams() fsblogParams {
	return fsblogParams{Writers: fsblog.DefaultWriters, Rewriters: fsblog.DefaultRewriters, Commenters: fsblog.DefaultCommenters,
		Readers: fsblog.DefaultReaders, Interval: fsblog.DefaultInterval, Iterations: fsblog.DefaultIterations}
}

// fsblogSummary is what --json writes and the store keeps (docs/storage.md).
type fsblogSummary struct {
	RunID           int64                    `json:"run_id"`
	Workload        string                   `json:"workload"`
	Status          string                   `json:"status"`
	StartedAt       time.Time                `json:"started_at"`
	EndedAt         time.Time                `json:"ended_at"`
	Dir             string                   `json:"dir"`
	Tree            string                   `json:"tree,omitempty"` // kept with --keep
	Writers         int                      `json:"writers"`
	Rewriters       int                      `json:"rewriters"`
	Commenters      int                      `json:"commenters"`
	Readers         int                      `json:"readers"`
	IntervalS       float64                  `json:"interval_s"`
	Iterations      int                      `json:"iterations"`
	Fsync           bool                     `json:"fsync"`
	ReadChunkBytes  int                      `json:"read_chunk_bytes"`
	WriteChunkBytes int                      `json:"write_chunk_bytes"`
	DurationS       float64                  `json:"duration_s"`
	WriteScore      int64                    `json:"write_score"`
	ReadScore       int64                    `json:"read_score"`
	Blogs           int64                    `json:"blogs"`
	Totals          fsblog.Counts            `json:"totals"`
	RatesS          map[string]float64       `json:"rates_s"`
	ReadMBs         float64                  `json:"read_mb_s"`
	WriteMBs        float64                  `json:"write_mb_s"`
	Intervals       []fsblog.Interval        `json:"intervals"`
	LatencyMs       map[string]fsblogLatency `json:"latency_ms"`
	Errors          int64                    `json:"errors"`
	ErrorSamples    []string                 `json:"error_samples,omitempty"`
	Interrupted     bool                     `json:"interrupted"`
	Seed            int64                    `json:"seed"`
}

// fsblogLatency is one operation's latency summary in milliseconds.
type fsblogLatency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

func newFsblogCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var jsonPath string
	p := defaultFsblogParams()
	cmd := &cobra.Command{
		Use:   "fsblog --dir D [--iterations N] [--writers W --rewriters R --readers N --commenters C] [--interval 10s]",
		Short: "Blogbench-like filesystem workload: writers, rewriters, commenters and readers on a tree of blogs",
		Long: `Runs a blogbench-like workload in a new directory under --dir: writers create blogs
(1-100 articles of 1-32 KiB, 1-100 pictures of 8-64 KiB), rewriters replace random
articles and pictures, commenters write 1-100 comments of 2-10 KiB to random blogs,
readers read random blogs whole. Files are written in 8 KiB chunks to a temporary
file and renamed; reads go in 64 KiB chunks, as blogbench 1.1 did. No fsync unless
--fsync (blogbench never syncs).

Every --interval a row gives the blogs created so far and the article, picture and
comment reads and writes in that interval (blogbench's columns); at the end the write
score (blogs created) and read score (blogs read), and latency percentiles per
operation. The tree is removed at the end unless --keep. See docs/storage.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStored(cmd, s, &rf, jsonPath, func(ctx context.Context, st *store.Store) (any, error) {
				sum, err := runFsblog(ctx, s, st, p, nil)
				if sum == nil {
					return nil, err
				}
				return sum, err
			})
		},
	}
	f := cmd.Flags()
	rf.add(f)
	f.StringVar(&p.Dir, "dir", "", "directory on the filesystem to test (required); the tree goes into a new directory under it")
	f.IntVar(&p.Iterations, "iterations", p.Iterations, "output rows; the run lasts iterations x interval")
	f.DurationVar(&p.Interval, "interval", p.Interval, "time between output rows")
	f.IntVar(&p.Writers, "writers", p.Writers, "writers (create blogs)")
	f.IntVar(&p.Rewriters, "rewriters", p.Rewriters, "rewriters (replace articles and pictures)")
	f.IntVar(&p.Commenters, "commenters", p.Commenters, "commenters (write comments)")
	f.IntVar(&p.Readers, "readers", p.Readers, "readers (read blogs)")
	f.BoolVar(&p.Fsync, "fsync", false, "fsync every file before its rename and its directory after (blogbench never syncs)")
	f.BoolVar(&p.Keep, "keep", false, "keep the tree of blogs (default: removed at the end)")
	f.Int64Var(&p.Seed, "seed", 0, "random seed (0 = from the clock; stored with the run)")
	f.StringVar(&p.Experiment, "experiment", "", "experiment name to file the run under")
	f.StringVar(&jsonPath, "json", "", "write the summary as JSON to this file (see docs/storage.md)")
	return cmd
}

func (p *fsblogParams) config() (fsblog.Config, error) {
	if p.Dir == "" {
		return fsblog.Config{}, errs.Usage("give --dir D: a directory on the filesystem to test", "no --dir")
	}
	abs, err := filepath.Abs(p.Dir)
	if err != nil {
		return fsblog.Config{}, errs.Usage("give a valid --dir", "--dir %s: %v", p.Dir, err)
	}
	p.Dir = abs
	fi, err := os.Stat(abs)
	if err != nil {
		return fsblog.Config{}, errs.Usage("create the directory first, or choose an existing one", "--dir %s: %v", abs, err)
	}
	if !fi.IsDir() {
		return fsblog.Config{}, errs.Usage("give a directory", "--dir %s is not a directory", abs)
	}
	c := fsblog.Config{Writers: p.Writers, Rewriters: p.Rewriters, Commenters: p.Commenters, Readers: p.Readers,
		Interval: p.Interval, Iterations: p.Iterations, Fsync: p.Fsync, Seed: p.Seed}
	if err := c.Validate(); err != nil {
		return c, errs.Usage("see tunebench fsblog --help", "%v", err)
	}
	return c, nil
}

// runFsblog runs the fsblog workload described by p, stores it (with link,
// when the run belongs to an experiment's plan, in the same transaction),
// prints a row per interval on stderr and the result on stdout, and removes
// its tree unless p.Keep. It returns the summary (also when interrupted,
// then with an error that carries the exit code).
func runFsblog(ctx context.Context, s *State, st *store.Store, p fsblogParams, link *store.PlanLink) (*fsblogSummary, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	if p.Seed == 0 {
		p.Seed = time.Now().UnixNano()
		cfg.Seed = p.Seed
	}
	tree, err := os.MkdirTemp(p.Dir, "tunebench-fsblog-")
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "give a --dir you can write to", "cannot create the blog tree under %s", p.Dir)
	}
	removed := false
	removeTree := func() {
		if removed || p.Keep {
			return
		}
		removed = true
		if err := os.RemoveAll(tree); err != nil {
			s.eprintf("warning: removing %s: %v\n", tree, err)
		}
	}
	defer removeTree()

	env := envinfo.Take(ctx, envinfo.Options{DataDir: p.Dir, Version: Version})
	fsDesc := ""
	if env.DataDir != nil {
		fsDesc = fmt.Sprintf(", %s (%s)", env.DataDir.FSType, env.DataDir.Options)
	}
	sync := "no fsync"
	if p.Fsync {
		sync = "fsync"
	}
	s.eprintf("fsblog: %d writers, %d rewriters, %d commenters, %d readers, %d x %s, %s, in %s%s\n",
		p.Writers, p.Rewriters, p.Commenters, p.Readers, p.Iterations, p.Interval, sync, tree, fsDesc)
	s.eprintf("%8s %10s %12s %12s %12s %12s %12s %12s\n", "time", "blogs", "R articles", "W articles", "R pictures", "W pictures", "R comments", "W comments")
	onInterval := func(iv fsblog.Interval) {
		mark := ""
		if iv.Partial {
			mark = " (partial)"
		}
		s.eprintf("%7.1fs %10d %12d %12d %12d %12d %12d %12d%s\n", iv.EndS, iv.Blogs, iv.ArticleReads, iv.ArticleWrites,
			iv.PictureReads, iv.PictureWrites, iv.CommentReads, iv.CommentWrites, mark)
	}
	res, err := fsblog.Run(ctx, cfg, fsblog.NewDisk(tree, p.Fsync, p.Seed), onInterval)
	if err != nil {
		return nil, errs.Wrap(errs.KindInternal, err, "", "fsblog")
	}
	if !p.Keep {
		s.eprintf("fsblog: removing the tree (%d blogs)\n", res.Blogs)
		removeTree()
	}

	sum := fsblogSum(p, res)
	if p.Keep {
		sum.Tree = tree
	}
	switch {
	case res.Interrupted:
		sum.Status = store.StatusInterrupted
	case res.Totals.Errors > 0:
		sum.Status = store.StatusErrors
	default:
		sum.Status = store.StatusOK
	}
	bg, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := saveFsblogRun(bg, st, p, env, sum, res, link)
	if err != nil {
		return sum, err
	}
	s.printf("\n")
	printFsblogResult(s, sum)
	if p.Keep {
		s.printf("tree kept in %s\n", tree)
	}
	s.printf("stored as run %d in %s\n", id, st.Path())
	switch {
	case res.Interrupted:
		return sum, errs.New(errs.KindInterrupted, "", "fsblog interrupted; partial result saved as run %d (status interrupted)", id)
	case res.Totals.Errors > 0:
		first := ""
		if len(res.ErrorSamples) > 0 {
			first = " (first: " + res.ErrorSamples[0] + ")"
		}
		return sum, errs.New(errs.KindRunErrors, "check free space and permissions under --dir", "fsblog run %d had %d failed file operations%s", id, res.Totals.Errors, first)
	}
	return sum, nil
}

func fsblogSum(p fsblogParams, res *fsblog.Result) *fsblogSummary {
	sum := &fsblogSummary{
		Workload: "fsblog", StartedAt: res.StartedAt.UTC(), EndedAt: res.EndedAt.UTC(), Dir: p.Dir,
		Writers: p.Writers, Rewriters: p.Rewriters, Commenters: p.Commenters, Readers: p.Readers,
		IntervalS: p.Interval.Seconds(), Iterations: p.Iterations, Fsync: p.Fsync,
		ReadChunkBytes: fsblog.ReadChunk, WriteChunkBytes: fsblog.WriteChunk,
		DurationS: res.Elapsed.Seconds(), WriteScore: res.WriteScore, ReadScore: res.ReadScore, Blogs: res.Blogs,
		Totals: res.Totals, Intervals: res.Intervals, Errors: res.Totals.Errors, ErrorSamples: res.ErrorSamples,
		Interrupted: res.Interrupted, Seed: p.Seed, LatencyMs: map[string]fsblogLatency{},
	}
	if sum.Intervals == nil {
		sum.Intervals = []fsblog.Interval{}
	}
	rate := func(n int64) float64 {
		if sum.DurationS <= 0 {
			return 0
		}
		return float64(n) / sum.DurationS
	}
	t := res.Totals
	sum.RatesS = map[string]float64{
		"blog_writes": rate(t.BlogWrites), "blog_reads": rate(t.BlogReads),
		"article_reads": rate(t.ArticleReads), "article_writes": rate(t.ArticleWrites),
		"picture_reads": rate(t.PictureReads), "picture_writes": rate(t.PictureWrites),
		"comment_reads": rate(t.CommentReads), "comment_writes": rate(t.CommentWrites),
	}
	sum.ReadMBs, sum.WriteMBs = rate(t.BytesRead)/1e6, rate(t.BytesWritten)/1e6
	for _, op := range fsblog.Ops() {
		h := res.Latency[op]
		if h == nil || h.Count() == 0 {
			continue
		}
		ps := h.PercentilesMs(50, 95, 99, 99.9)
		sum.LatencyMs[op] = fsblogLatency{Count: h.Count(), Mean: h.MeanMs(), P50: ps[0], P95: ps[1], P99: ps[2], P999: ps[3], Max: h.MaxMs()}
	}
	return sum
}

// fsblogSeries are the per-interval rates (per second) and the blog count.
func fsblogSeries(res *fsblog.Result) []store.Point {
	var out []store.Point
	for _, iv := range res.Intervals {
		add := func(name string, v float64) { out = append(out, store.Point{Series: name, T: iv.EndS, V: v}) }
		add("blogs", float64(iv.Blogs))
		add("blog_writes_s", iv.Rate(iv.BlogWrites))
		add("blog_reads_s", iv.Rate(iv.BlogReads))
		add("article_reads_s", iv.Rate(iv.ArticleReads))
		add("article_writes_s", iv.Rate(iv.ArticleWrites))
		add("picture_reads_s", iv.Rate(iv.PictureReads))
		add("picture_writes_s", iv.Rate(iv.PictureWrites))
		add("comment_reads_s", iv.Rate(iv.CommentReads))
		add("comment_writes_s", iv.Rate(iv.CommentWrites))
		add("read_mb_s", iv.Rate(iv.BytesRead)/1e6)
		add("write_mb_s", iv.Rate(iv.BytesWritten)/1e6)
		add("errors", float64(iv.Errors))
	}
	return out
}

func saveFsblogRun(ctx context.Context, st *store.Store, p fsblogParams, env *envinfo.Snapshot, sum *fsblogSummary, res *fsblog.Result, link *store.PlanLink) (int64, error) {
	pj, err := json.Marshal(p)
	if err != nil {
		return 0, err
	}
	ej, err := json.Marshal(env)
	if err != nil {
		return 0, err
	}
	r := &store.Run{Experiment: p.Experiment, Workload: "fsblog", Variant: "default", Status: sum.Status,
		StartedAt: res.StartedAt, EndedAt: res.EndedAt, Params: pj, Env: ej, Link: link, Series: fsblogSeries(res)}
	for _, op := range fsblog.Ops() {
		h := res.Latency[op]
		if h == nil || h.Count() == 0 {
			continue
		}
		b, err := metrics.Encode(h)
		if err != nil {
			return 0, err
		}
		r.Histograms = append(r.Histograms, store.Histogram{Op: op, Class: "ok", Kind: store.KindLatency, Encoded: b})
	}
	return st.SaveRunWithSummary(ctx, r, func(id int64) (json.RawMessage, error) {
		sum.RunID = id
		return json.Marshal(sum)
	})
}

// printFsblogResult prints blogbench's table, the scores and the latencies.
func printFsblogResult(s *State, sum *fsblogSummary) {
	tb := newTable(s)
	tb.row("time s", "blogs", "R articles", "W articles", "R pictures", "W pictures", "R comments", "W comments")
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, iv := range sum.Intervals {
		t := fmt.Sprintf("%.1f", iv.EndS)
		if iv.Partial {
			t += "*"
		}
		tb.row(t, i64(iv.Blogs), i64(iv.ArticleReads), i64(iv.ArticleWrites), i64(iv.PictureReads), i64(iv.PictureWrites), i64(iv.CommentReads), i64(iv.CommentWrites))
	}
	tb.flush()
	if len(sum.Intervals) > 0 && sum.Intervals[len(sum.Intervals)-1].Partial {
		s.printf("* partial interval (interrupted)\n")
	}
	s.printf("\nwrite score (blogs created): %d\nread score (blogs read):     %d\n", sum.WriteScore, sum.ReadScore)
	s.printf("over %.1f s: %.1f MB/s read, %.1f MB/s written; %d errors\n\n", sum.DurationS, sum.ReadMBs, sum.WriteMBs, sum.Errors)
	lt := newTable(s)
	lt.row("operation", "count", "mean ms", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms", "max ms")
	f := func(v float64) string { return fmt.Sprintf("%.3f", v) }
	for _, op := range fsblog.Ops() {
		l, ok := sum.LatencyMs[op]
		if !ok {
			continue
		}
		lt.row(op, strconv.FormatInt(l.Count, 10), f(l.Mean), f(l.P50), f(l.P95), f(l.P99), f(l.P999), f(l.Max))
	}
	lt.flush()
	for _, e := range sum.ErrorSamples {
		s.printf("error: %s\n", e)
	}
}

// storedFsblog decodes a stored fsblog summary; nil when raw is not one.
// With fsblogOneLine and showStoredFsblog it lets `results list/show`
// present fsblog runs (they print tpcb's columns today).
func storedFsblog(raw json.RawMessage) *fsblogSummary {
	var sum fsblogSummary
	if json.Unmarshal(raw, &sum) != nil || sum.Workload != "fsblog" {
		return nil
	}
	return &sum
}

// fsblogOneLine is a stored fsblog run's one-line result, "" when raw is not
// an fsblog summary.
func fsblogOneLine(raw json.RawMessage) string {
	sum := storedFsblog(raw)
	if sum == nil {
		return ""
	}
	return fmt.Sprintf("write score %d, read score %d, %.1f s, errors %d", sum.WriteScore, sum.ReadScore, sum.DurationS, sum.Errors)
}

// showStoredFsblog prints a stored fsblog run's result; false when raw is
// not an fsblog summary.
func showStoredFsblog(s *State, raw json.RawMessage) bool {
	sum := storedFsblog(raw)
	if sum == nil {
		return false
	}
	printFsblogResult(s, sum)
	return true
}
