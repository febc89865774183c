package fsblog

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/results"
)

// Summary is what an fsblog run adds to the summary (docs/storage.md).
type Summary struct {
	Dir             string             `json:"dir"`
	Tree            string             `json:"tree,omitempty"` // kept with --keep
	Writers         int                `json:"writers"`
	Rewriters       int                `json:"rewriters"`
	Commenters      int                `json:"commenters"`
	Readers         int                `json:"readers"`
	IntervalS       float64            `json:"interval_s"`
	Iterations      int                `json:"iterations"`
	Fsync           bool               `json:"fsync"`
	ReadChunkBytes  int                `json:"read_chunk_bytes"`
	WriteChunkBytes int                `json:"write_chunk_bytes"`
	DurationS       float64            `json:"duration_s"`
	WriteScore      *int64             `json:"write_score"`
	ReadScore       *int64             `json:"read_score"`
	Blogs           int64              `json:"blogs"`
	Totals          Counts             `json:"totals"`
	RatesS          map[string]float64 `json:"rates_s"`
	ReadMBs         float64            `json:"read_mb_s"`
	WriteMBs        float64            `json:"write_mb_s"`
	Intervals       []Interval         `json:"intervals"`
	LatencyMs       map[string]Latency `json:"latency_ms"`
	Errors          int64              `json:"errors"`
	ErrorSamples    []string           `json:"error_samples,omitempty"`
	Seed            int64              `json:"seed"`
}

// Latency is one operation's latency summary in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

func summarize(p params, res *Result) *Summary {
	ws, rs := res.WriteScore, res.ReadScore
	s := &Summary{
		Dir: p.Dir, Writers: p.Writers, Rewriters: p.Rewriters, Commenters: p.Commenters, Readers: p.Readers,
		IntervalS: p.Interval.Seconds(), Iterations: p.Iterations, Fsync: p.Fsync,
		ReadChunkBytes: ReadChunk, WriteChunkBytes: WriteChunk,
		DurationS: res.Elapsed.Seconds(), WriteScore: &ws, ReadScore: &rs, Blogs: res.Blogs,
		Totals: res.Totals, Intervals: res.Intervals, Errors: res.Totals.Errors, ErrorSamples: res.ErrorSamples,
		Seed: p.Seed, LatencyMs: map[string]Latency{},
	}
	if s.Intervals == nil {
		s.Intervals = []Interval{}
	}
	rate := func(n int64) float64 {
		if s.DurationS <= 0 {
			return 0
		}
		return float64(n) / s.DurationS
	}
	t := res.Totals
	s.RatesS = map[string]float64{
		"blog_writes": rate(t.BlogWrites), "blog_reads": rate(t.BlogReads),
		"article_reads": rate(t.ArticleReads), "article_writes": rate(t.ArticleWrites),
		"picture_reads": rate(t.PictureReads), "picture_writes": rate(t.PictureWrites),
		"comment_reads": rate(t.CommentReads), "comment_writes": rate(t.CommentWrites),
	}
	s.ReadMBs, s.WriteMBs = rate(t.BytesRead)/1e6, rate(t.BytesWritten)/1e6
	for _, op := range Ops() {
		h := res.Latency[op]
		if h == nil || h.Count() == 0 {
			continue
		}
		ps := h.PercentilesMs(50, 95, 99, 99.9)
		s.LatencyMs[op] = Latency{Count: h.Count(), Mean: h.MeanMs(), P50: ps[0], P95: ps[1], P99: ps[2], P999: ps[3], Max: h.MaxMs()}
	}
	return s
}

// NewExtra decodes an fsblog summary's own fields.
func (Workload) NewExtra() results.Extra { return &Summary{} }

func extraOf(s *results.Summary) *Summary { return results.ExtraAs[Summary](s) }

func score(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Brief is the scores, the duration and the errors.
func (Workload) Brief(s *results.Summary) string {
	x := extraOf(s)
	return fmt.Sprintf("write score %d, read score %d, %.1f s, errors %d", score(x.WriteScore), score(x.ReadScore), x.DurationS, x.Errors)
}

// Show is blogbench's table, the scores and the latencies.
func (Workload) Show(s *results.Summary) []results.Block {
	x := extraOf(s)
	tb := &results.Table{Columns: []string{"time s", "blogs", "R articles", "W articles", "R pictures", "W pictures", "R comments", "W comments"}}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, iv := range x.Intervals {
		t := fmt.Sprintf("%.1f", iv.EndS)
		if iv.Partial {
			t += "*"
		}
		tb.Row(t, i64(iv.Blogs), i64(iv.ArticleReads), i64(iv.ArticleWrites), i64(iv.PictureReads), i64(iv.PictureWrites), i64(iv.CommentReads), i64(iv.CommentWrites))
	}
	out := []results.Block{results.TableBlock(tb)}
	if len(x.Intervals) > 0 && x.Intervals[len(x.Intervals)-1].Partial {
		out = append(out, results.Line("* partial interval (interrupted)"))
	}
	out = append(out,
		results.Line(""),
		results.Line(fmt.Sprintf("write score (blogs created): %d", score(x.WriteScore))),
		results.Line(fmt.Sprintf("read score (blogs read):     %d", score(x.ReadScore))),
		results.Line(fmt.Sprintf("over %.1f s: %.1f MB/s read, %.1f MB/s written; %d errors", x.DurationS, x.ReadMBs, x.WriteMBs, x.Errors)),
		results.Line(""))
	lt := &results.Table{Columns: []string{"operation", "count", "mean ms", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms", "max ms"}}
	f := results.F3
	for _, op := range Ops() {
		l, ok := x.LatencyMs[op]
		if !ok {
			continue
		}
		lt.Row(op, strconv.FormatInt(l.Count, 10), f(l.Mean), f(l.P50), f(l.P95), f(l.P99), f(l.P999), f(l.Max))
	}
	out = append(out, results.TableBlock(lt))
	for _, e := range x.ErrorSamples {
		out = append(out, results.Line("error: "+e))
	}
	if x.Tree != "" {
		out = append(out, results.Line("tree kept in "+x.Tree))
	}
	return out
}

// Section is the report's fsblog part: scores and rates across runs, and
// each run's latencies and per-interval rates.
func (Workload) Section(runs []*results.Run) (*results.Section, error) {
	v := &results.Section{ID: "fsblog", Title: "Filesystem workload (fsblog)",
		Intro: "blogbench-like scores (blogs written and read over the run: higher is better), throughput and latency per operation, and the rates of each interval."}
	table := results.Table{Left: 1, Columns: []string{"run", "write score", "read score", "blogs", "seconds", "read MB/s", "write MB/s", "errors"}}
	var scoreRows []results.Bar
	for _, rd := range runs {
		s := &Summary{}
		if rd.Summary != nil {
			s = extraOf(rd.Summary)
		}
		scoreText := func(p *int64) (string, float64) {
			if p == nil {
				return "-", math.NaN()
			}
			return strconv.FormatInt(*p, 10), float64(*p)
		}
		ws, wv := scoreText(s.WriteScore)
		rs, rv := scoreText(s.ReadScore)
		label := "run " + strconv.FormatInt(rd.ID, 10)
		table.Row(label, ws, rs, strconv.FormatInt(s.Blogs, 10), results.FmtNum(s.DurationS),
			results.FmtNum(s.ReadMBs), results.FmtNum(s.WriteMBs), strconv.FormatInt(s.Errors, 10))
		if rd.Env != nil && rd.Env.DataDir != nil && rd.Env.DataDir.FSType != "" {
			label += " (" + rd.Env.DataDir.FSType + ")"
		}
		scoreRows = append(scoreRows, results.Bar{Label: label, Values: []float64{wv, rv}})

		r := results.RunView{RunID: rd.ID}
		add := func(k, val string) {
			if val != "" {
				r.Fields = append(r.Fields, results.Field{K: k, V: val})
			}
		}
		add("Directory", s.Dir)
		add("Threads", fmt.Sprintf("%d writers, %d rewriters, %d commenters, %d readers", s.Writers, s.Rewriters, s.Commenters, s.Readers))
		if s.Iterations > 0 {
			add("Iterations", fmt.Sprintf("%d of %s s", s.Iterations, strconv.FormatFloat(s.IntervalS, 'f', -1, 64)))
		}
		add("fsync", strconv.FormatBool(s.Fsync))
		if len(s.LatencyMs) > 0 {
			lt := results.Table{Name: "Latency per operation (ms)", Left: 1, Columns: []string{"operation", "count", "rate /s", "mean", "p50", "p95", "p99", "p99.9", "max"}}
			ops := make([]string, 0, len(s.LatencyMs))
			for op := range s.LatencyMs {
				ops = append(ops, op)
			}
			sort.Strings(ops)
			for _, op := range ops {
				l := s.LatencyMs[op]
				rate := "-"
				if x, ok := s.RatesS[op]; ok {
					rate = results.FmtNum(x)
				}
				lt.Row(op, strconv.FormatInt(l.Count, 10), rate, results.FmtMs(l.Mean), results.FmtMs(l.P50), results.FmtMs(l.P95), results.FmtMs(l.P99), results.FmtMs(l.P999), results.FmtMs(l.Max))
			}
			r.Tables = append(r.Tables, lt)
		}
		r.Charts = chartDefs(rd)
		if len(r.Charts) == 0 {
			r.Note = "No per-interval series stored for this run."
		}
		v.Runs = append(v.Runs, r)
	}
	v.Tables = append(v.Tables, table)
	if len(runs) < 2 {
		return v, nil // the table says it all
	}
	// The read score is typically orders of magnitude above the write
	// score: one chart each.
	for c, title := range []string{"fsblog write score", "fsblog read score"} {
		chart := results.BarChart{Title: title + " (higher is better)", Unit: "blogs", Columns: []string{"score"}, ColorByRow: true}
		for _, sr := range scoreRows {
			chart.Rows = append(chart.Rows, results.Bar{Label: sr.Label, Values: sr.Values[c : c+1]})
		}
		v.Bars = append(v.Bars, chart)
	}
	return v, nil
}

// chartDefs are the per-interval charts of an fsblog run: operation rates
// and bytes (only the series the run stored).
func chartDefs(rd *results.Run) []results.SeriesChart {
	have := map[string]bool{}
	for _, p := range rd.Series {
		have[p.Series] = true
	}
	if len(have) == 0 {
		return nil
	}
	ops := results.SeriesChart{Title: "Operations per second, per interval", YLabel: "operations per second"}
	var names []string
	for n := range have {
		if strings.HasSuffix(n, "_s") && !strings.HasSuffix(n, "_mb_s") && !strings.Contains(n, ".") && n != "tps" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		ops.Series = append(ops.Series, results.SeriesRef{Name: n, Label: strings.ReplaceAll(strings.TrimSuffix(n, "_s"), "_", " ")})
	}
	mbs := results.SeriesChart{Title: "Bytes per interval", YLabel: "MB/s", Series: []results.SeriesRef{{Name: "read_mb_s", Label: "read"}, {Name: "write_mb_s", Label: "write"}}}
	blogs := results.SeriesChart{Title: "Blogs created (cumulative)", YLabel: "blogs", Series: []results.SeriesRef{{Name: "blogs", Label: "blogs"}}}
	return []results.SeriesChart{ops, mbs, blogs}
}
