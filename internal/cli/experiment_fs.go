package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/experiment"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload/fsblog"
)

// The storage (fio) and fsblog workloads in experiments. They load nothing
// into the database; their directory is the run option `dir`, or, on a
// managed target, a directory next to the server's data directory, so a
// matrix over data_dir compares the filesystems under the servers.

func noLoad(ctx context.Context, s *State, t *pg.Target, o experiment.Options) error { return nil }

// experimentDir picks the run's directory.
func experimentDir(o experiment.Options, srv *server.Server, sub string) (string, error) {
	if d := o.String("dir"); d != "" {
		return d, nil
	}
	if srv == nil {
		return "", errors.New("give the workload option dir (the target is not a managed server)")
	}
	return filepath.Join(srv.Dir(), sub), nil
}

func storageAdapter() *experimentAdapter {
	w := experiment.Workload{
		Name: "storage", Description: "fio baselines: sequential/random read and write, 50/50 mix", XAxis: "jobs", Metric: "iops",
		Options: []experiment.Option{
			{Name: "dir", Kind: experiment.KindString, Doc: "directory for fio's files (default: next to the managed server's data)"},
			{Name: "size", Kind: experiment.KindString, Default: "1G", Doc: "total data set, split between the jobs"},
			{Name: "block_size", Kind: experiment.KindString, Default: "8k"},
			{Name: "jobs", Kind: experiment.KindInt, Default: "4", Min: 1, HasMin: true, Max: 1024, HasMax: true},
			{Name: "iodepth", Kind: experiment.KindInt, Default: "1", Min: 1, HasMin: true},
			{Name: "runtime", Kind: experiment.KindDuration, Default: "60s"},
			{Name: "direct", Kind: experiment.KindBool, Default: "false"},
			{Name: "tests", Kind: experiment.KindString, Default: "seq-read,seq-write,rand-read,rand-write,rw-mix"},
			{Name: "drop_caches", Kind: experiment.KindBool, Default: "false"},
		},
		RunTime: func(o experiment.Options) (time.Duration, bool) {
			n := len(strings.Split(o.String("tests"), ","))
			return time.Duration(n) * (o.Duration("runtime") + 5*time.Second), true
		},
		LoadTime:  func(o experiment.Options) time.Duration { return 0 },
		DataBytes: func(o experiment.Options) int64 { return 0 },
	}
	return &experimentAdapter{
		spec: w,
		load: noLoad,
		run: func(ctx context.Context, s *State, t *pg.Target, srv *server.Server, st *store.Store, req experimentRun) (*summary, error) {
			o := req.Options
			p := defaultStorageParams()
			dir, err := experimentDir(o, srv, "storage")
			if err != nil {
				return nil, err
			}
			p.Dir, p.Size, p.BlockSize, p.Jobs, p.IODepth = dir, o.String("size"), o.String("block_size"), int(o.Int("jobs")), int(o.Int("iodepth"))
			p.Runtime, p.Direct, p.DropCaches, p.Experiment = o.Duration("runtime"), o.Bool("direct"), o.Bool("drop_caches"), req.Experiment
			p.Tests = strings.Split(o.String("tests"), ",")
			quiet := *s
			quiet.Stdout = io.Discard
			ss, err := runStorage(ctx, &quiet, st, p, req.Link)
			if ss == nil {
				return nil, err
			}
			sum := &summary{RunID: ss.RunID, Status: ss.Status, Workload: "storage"}
			var iops float64
			var parts []string
			for _, tst := range ss.Tests {
				var v float64
				if tst.Read != nil {
					v += tst.Read.IOPS
				}
				if tst.Write != nil {
					v += tst.Write.IOPS
				}
				iops += v
				parts = append(parts, fmt.Sprintf("%s %.0f IOPS", tst.Name, v))
			}
			sum.TPS = iops
			sum.Script = strings.Join(parts, ", ")
			return sum, err
		},
		brief: func(sum *summary) (float64, string) { return sum.TPS, sum.Script },
	}
}

func fsblogAdapter() *experimentAdapter {
	w := experiment.Workload{
		Name: "fsblog", Description: "blogbench-like filesystem workload", XAxis: "readers", Metric: "read_score",
		Options: []experiment.Option{
			{Name: "dir", Kind: experiment.KindString, Doc: "directory for the blog tree (default: next to the managed server's data)"},
			{Name: "writers", Kind: experiment.KindInt, Default: fmt.Sprint(fsblog.DefaultWriters), HasMin: true},
			{Name: "rewriters", Kind: experiment.KindInt, Default: fmt.Sprint(fsblog.DefaultRewriters), HasMin: true},
			{Name: "commenters", Kind: experiment.KindInt, Default: fmt.Sprint(fsblog.DefaultCommenters), HasMin: true},
			{Name: "readers", Kind: experiment.KindInt, Default: fmt.Sprint(fsblog.DefaultReaders), HasMin: true},
			{Name: "interval", Kind: experiment.KindDuration, Default: fsblog.DefaultInterval.String()},
			{Name: "iterations", Kind: experiment.KindInt, Default: fmt.Sprint(fsblog.DefaultIterations), Min: 1, HasMin: true},
			{Name: "fsync", Kind: experiment.KindBool, Default: "false"},
		},
		RunTime: func(o experiment.Options) (time.Duration, bool) {
			return time.Duration(o.Int("iterations")) * o.Duration("interval"), true
		},
		LoadTime:  func(o experiment.Options) time.Duration { return 0 },
		DataBytes: func(o experiment.Options) int64 { return 0 },
	}
	return &experimentAdapter{
		spec: w,
		load: noLoad,
		run: func(ctx context.Context, s *State, t *pg.Target, srv *server.Server, st *store.Store, req experimentRun) (*summary, error) {
			o := req.Options
			p := defaultFsblogParams()
			dir, err := experimentDir(o, srv, "fsblog")
			if err != nil {
				return nil, err
			}
			p.Dir, p.Writers, p.Rewriters, p.Commenters, p.Readers = dir, int(o.Int("writers")), int(o.Int("rewriters")), int(o.Int("commenters")), int(o.Int("readers"))
			p.Interval, p.Iterations, p.Fsync, p.Seed, p.Experiment = o.Duration("interval"), int(o.Int("iterations")), o.Bool("fsync"), req.Seed, req.Experiment
			quiet := *s
			quiet.Stdout = io.Discard
			fs, err := runFsblog(ctx, &quiet, st, p, req.Link)
			if fs == nil {
				return nil, err
			}
			sum := &summary{RunID: fs.RunID, Status: fs.Status, Workload: "fsblog", TPS: float64(fs.ReadScore)}
			sum.Script = fmt.Sprintf("read score %d, write score %d", fs.ReadScore, fs.WriteScore)
			return sum, err
		},
		brief: func(sum *summary) (float64, string) { return sum.TPS, sum.Script },
	}
}
