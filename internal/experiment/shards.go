package experiment

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/lifecycle"
	"github.com/tunebench/tunebench/internal/merge"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// shardWait is how long an experiment's shards wait for each other at the
// database (they all start here, so only their connecting can hold one up).
const shardWait = 2 * time.Minute

// runShards does one planned run as n shards (the file's shards: n): each
// runs its part as `run --shard i/n` would, they meet at the database
// under a key of this run's own, each stores its part (under no
// experiment: the merged run is the experiment's), and the merged run is
// stored with the plan link. Shard 0 alone shows its progress and
// measures the server.
func (lt *labTarget) runShards(ctx context.Context, req RunRequest, r workload.Runner, o option.Values, link store.PlanLink, n int) (RunResult, error) {
	key := fmt.Sprintf("%s-run%d-%d", req.Experiment, req.Index+1, time.Now().UnixNano())
	tgt := lt.runTarget()
	hm, named := lt.runFacts(req.Config)
	type outcome struct {
		sum *results.Summary
		err error
	}
	outs := make([]outcome, n)
	reqs := make([]*lifecycle.Request, n)
	for i := range n {
		sh := workload.Shard{Index: i, Count: n}
		v, part, err := workload.ShardOptions(lt.w, sh, o)
		if err != nil {
			return RunResult{}, err
		}
		rec := &results.Shard{Index: i, Count: n, Part: part}
		observe := lt.lab.Observe
		var progress time.Duration
		if i == 0 {
			progress = lt.lab.Progress
		}
		if observe != nil {
			all := observe
			observe = func(e lifecycle.Event) {
				switch {
				case e.Kind == lifecycle.EventSaved: // the merged run is the one stored
				case i == 0 || e.Kind == lifecycle.EventWarning || e.Kind == lifecycle.EventError:
					all(e)
				}
			}
		}
		rq := &lifecycle.Request{
			Workload: r, Target: tgt, Options: v, Unsharded: o, Shard: rec, Progress: progress,
			Store: lt.lab.Store, Version: lt.lab.Version, Getenv: lt.lab.Getenv, LookupEnv: lt.lab.LookupEnv, Observe: observe,
			Layout: layoutRecord(lt.layout), Envelope: envelopeRecord(lt.envelope), Kernel: lt.lab.kernelRecord(), HostMetrics: hm, NamedTarget: named,
		}
		if i == 0 {
			rq.Stdout, rq.Stderr = lt.lab.Stdout, lt.lab.Stderr
		}
		meet := lifecycle.Meeting{Shard: sh, Key: key, Timeout: shardWait, Note: func(string, ...any) {}}
		rq.Barrier = func(ctx context.Context) error { return meet.Meet(ctx, tgt, rec) }
		reqs[i] = rq
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i].sum, outs[i].err = lifecycle.Run(ctx, reqs[i])
		}()
	}
	wg.Wait()

	g := &merge.Group{Key: key, Workload: lt.w.Meta().Name, Count: n, Parts: make([]*merge.Part, n)}
	var interrupted, firstErr error
	for i, out := range outs {
		if out.err != nil {
			if errs.KindOf(out.err) == errs.KindInterrupted && interrupted == nil {
				interrupted = out.err
			} else if firstErr == nil {
				firstErr = fmt.Errorf("shard %d/%d: %w", i, n, out.err)
			}
		}
		if out.sum == nil || out.sum.RunID == 0 {
			continue
		}
		var extras results.ExtraFunc
		if lt.lab.Registry != nil {
			extras = lt.lab.Registry.Extras()
		}
		sr, err := results.Get(context.WithoutCancel(ctx), lt.lab.Store, out.sum.RunID, extras)
		if err != nil {
			return RunResult{}, err
		}
		g.Parts[i] = &merge.Part{Where: fmt.Sprintf("run %d", out.sum.RunID), Path: lt.lab.Store.Path(), RunID: out.sum.RunID, Run: sr}
	}
	if len(g.Missing()) == n {
		// Nothing was measured: the shards' error is the run's.
		if interrupted != nil {
			return RunResult{}, interrupted
		}
		return RunResult{}, firstErr
	}
	mg, err := merge.Merge(g, lt.w)
	if err != nil {
		return RunResult{}, err
	}
	rec := mg.Record
	rec.Experiment, rec.Link = req.Experiment, &link
	if sm, p0 := rec.Summary.Measured, g.Parts[0]; sm != nil && p0 != nil && p0.Run.Summary.Measured != nil {
		// One process ran every shard, and each read the process's own
		// CPU and GC: the driver's figures are one reading, not a sum.
		sm.Driver = p0.Run.Summary.Driver
		if sm.Transactions > 0 {
			sm.Driver.CPUMsPer1000Tx = 1e6 * sm.Driver.CPUSeconds / float64(sm.Transactions)
		}
		rec.Summary.Merge.Notes = append(rec.Summary.Merge.Notes, "the shards ran in one process: driver's cpu_s and GC figures are the process's (shard 0's reading), not a sum")
	}
	id, err := results.Save(context.WithoutCancel(ctx), lt.lab.Store, rec)
	if err != nil {
		return RunResult{}, err
	}
	sum := rec.Summary
	res := RunResult{RunID: id, Status: sum.Status}
	res.Metric, _ = sum.Metric(r.Headline().Metric)
	if v, ok := lt.w.(workload.Viewer); ok {
		res.Brief = v.Brief(sum)
	}
	if interrupted != nil {
		return res, interrupted
	}
	return res, nil
}
