package fsblog

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// Workload is the registry entry.
type Workload struct{}

// New returns the workload for the registry.
func New() workload.Workload { return Workload{} }

// Meta describes the workload; `tunebench fsblog` runs it.
func (Workload) Meta() workload.Meta {
	return workload.Meta{Name: "fsblog", Description: "blogbench-like filesystem workload (writers, rewriters, commenters, readers on a tree of blogs)",
		Version: "1", Command: "fsblog", Layouts: true, Ops: Ops(),
		Platforms: []string{"linux", "darwin"},
		PlatformsWhy: "its writers replace files by renaming over them while readers have them open, as blogbench does on POSIX " +
			"filesystems; Windows refuses that rename (a sharing violation)"}
}

// Options declares the workload's options (all of the run).
func (Workload) Options() option.Set {
	i := strconv.Itoa
	return option.Set{
		{Name: "dir", Kind: option.KindString,
			Doc: "directory on the filesystem to test (required on the command line; in an experiment, default: next to the managed server's data); the tree goes into a new directory under it"},
		{Name: "writers", Kind: option.KindInt, Default: i(DefaultWriters), Min: 1, HasMin: true, Doc: "writers (create blogs)"},
		{Name: "rewriters", Kind: option.KindInt, Default: i(DefaultRewriters), HasMin: true, Doc: "rewriters (replace articles and pictures)"},
		{Name: "commenters", Kind: option.KindInt, Default: i(DefaultCommenters), HasMin: true, Doc: "commenters (write comments)"},
		{Name: "readers", Kind: option.KindInt, Default: i(DefaultReaders), HasMin: true, Doc: "readers (read blogs)"},
		{Name: "interval", Kind: option.KindDuration, Default: DefaultInterval.String(), Doc: "time between output rows"},
		{Name: "iterations", Kind: option.KindInt, Default: i(DefaultIterations), Min: 1, HasMin: true, Doc: "output rows; the run lasts iterations x interval"},
		{Name: "fsync", Kind: option.KindBool, Default: "false", Doc: "fsync every file before its rename and its directory after (blogbench never syncs)"},
		{Name: "keep", Kind: option.KindBool, FlagOnly: true, Doc: "keep the tree of blogs (default: removed at the end)"},
		{Name: "seed", Kind: option.KindInt, FlagOnly: true, Role: option.RoleSeed, Doc: "random seed (0 = from the clock; stored with the run)"},
	}
}

// RunHelp is the help of `tunebench fsblog` and `tunebench run fsblog`.
func (Workload) RunHelp() workload.Help {
	return workload.Help{
		Use:   "--dir D [--iterations N] [--writers W --rewriters R --readers N --commenters C] [--interval 10s]",
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
	}
}

// Headline: the read score against readers.
func (Workload) Headline() workload.Headline {
	return workload.Headline{Metric: "read_score", Label: "read score", Unit: "read score (blogs read)", XAxis: "readers"}
}

// RunTime: iterations x interval.
func (Workload) RunTime(o option.Values) (time.Duration, bool) {
	return time.Duration(o.Int("iterations")) * o.Duration("interval"), true
}

// LoadTime: nothing is loaded.
func (Workload) LoadTime(option.Values) time.Duration { return 0 }

// DataBytes: nothing is loaded.
func (Workload) DataBytes(option.Values) int64 { return 0 }

// params are the parameters of one fsblog run; stored with the run.
type params struct {
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
}

type blogRun struct {
	env *workload.RunEnv
	p   params
	cfg Config
}

// NewRun checks the directory and the configuration.
func (Workload) NewRun(ctx context.Context, env *workload.RunEnv) (workload.Run, error) {
	o := env.Options
	p := params{Dir: o.String("dir"), Writers: int(o.Int("writers")), Rewriters: int(o.Int("rewriters")), Commenters: int(o.Int("commenters")),
		Readers: int(o.Int("readers")), Interval: o.Duration("interval"), Iterations: int(o.Int("iterations")), Fsync: o.Bool("fsync"),
		Keep: o.Bool("keep"), Seed: env.Seed}
	abs, err := workload.Dir(env, p.Dir, "fsblog", "the blog tree")
	if err != nil {
		return nil, err
	}
	p.Dir = abs
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, errs.Usage("create the directory first, or choose an existing one", "--dir %s: %v", abs, err)
	}
	if !fi.IsDir() {
		return nil, errs.Usage("give a directory", "--dir %s is not a directory", abs)
	}
	c := Config{Writers: p.Writers, Rewriters: p.Rewriters, Commenters: p.Commenters, Readers: p.Readers,
		Interval: p.Interval, Iterations: p.Iterations, Fsync: p.Fsync, Seed: p.Seed}
	if err := c.Validate(); err != nil {
		return nil, errs.Usage("see tunebench fsblog --help", "%v", err)
	}
	return &blogRun{env: env, p: p, cfg: c}, nil
}

func (r *blogRun) Describe() string { return "" }
func (r *blogRun) Variant() string  { return "default" }
func (r *blogRun) Params() any      { return r.p }

// Measure runs the actors in a new tree under the directory, a row per
// interval, and removes the tree unless asked to keep it.
func (r *blogRun) Measure(ctx context.Context) (*workload.Measured, error) {
	p, note := r.p, r.env.Note
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
			note("warning: removing %s: %v", tree, err)
		}
	}
	defer removeTree()

	env := envinfo.Take(ctx, envinfo.Options{DataDir: p.Dir, Version: r.env.Version})
	fsDesc := ""
	if env.DataDir != nil {
		fsDesc = fmt.Sprintf(", %s (%s)", env.DataDir.FSType, env.DataDir.Options)
	}
	sync := "no fsync"
	if p.Fsync {
		sync = "fsync"
	}
	note("fsblog: %d writers, %d rewriters, %d commenters, %d readers, %d x %s, %s, in %s%s",
		p.Writers, p.Rewriters, p.Commenters, p.Readers, p.Iterations, p.Interval, sync, tree, fsDesc)
	note("%8s %10s %12s %12s %12s %12s %12s %12s", "time", "blogs", "R articles", "W articles", "R pictures", "W pictures", "R comments", "W comments")
	onInterval := func(iv Interval) {
		mark := ""
		if iv.Partial {
			mark = " (partial)"
		}
		note("%7.1fs %10d %12d %12d %12d %12d %12d %12d%s", iv.EndS, iv.Blogs, iv.ArticleReads, iv.ArticleWrites,
			iv.PictureReads, iv.PictureWrites, iv.CommentReads, iv.CommentWrites, mark)
	}
	res, err := Run(ctx, r.cfg, NewDisk(tree, p.Fsync, p.Seed), onInterval)
	if err != nil {
		return nil, errs.Wrap(errs.KindInternal, err, "", "fsblog")
	}
	if !p.Keep {
		note("fsblog: removing the tree (%d blogs)", res.Blogs)
		removeTree()
	}
	x := summarize(p, res)
	if p.Keep {
		x.Tree = tree
	}
	sum := &results.Summary{SchemaVersion: results.SchemaVersion, StartedAt: res.StartedAt.UTC(), EndedAt: res.EndedAt.UTC(),
		Interrupted: res.Interrupted, Extra: x}
	switch {
	case res.Interrupted:
		sum.Status = store.StatusInterrupted
	case res.Totals.Errors > 0:
		sum.Status = store.StatusErrors
	default:
		sum.Status = store.StatusOK
	}
	m := &workload.Measured{Summary: sum, Env: env, Series: series(res)}
	for _, op := range Ops() {
		h, err := results.EncodeHist(op, "ok", store.KindLatency, res.Latency[op])
		if err != nil {
			return nil, err
		}
		if h != nil {
			m.Histograms = append(m.Histograms, *h)
		}
	}
	m.Exit = func(id int64) error {
		switch {
		case res.Interrupted:
			return errs.New(errs.KindInterrupted, "", "fsblog interrupted; partial result saved as run %d (status interrupted)", id)
		case res.Totals.Errors > 0:
			first := ""
			if len(res.ErrorSamples) > 0 {
				first = " (first: " + res.ErrorSamples[0] + ")"
			}
			return errs.New(errs.KindRunErrors, "check free space and permissions under --dir", "fsblog run %d had %d failed file operations%s", id, res.Totals.Errors, first)
		}
		return nil
	}
	return m, nil
}

// series are the per-interval rates (per second) and the blog count.
func series(res *Result) []store.Point {
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
