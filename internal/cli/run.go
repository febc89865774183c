package cli

import (
	"context"
	"encoding/json"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/lifecycle"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// runWorkload is the body of every run command: resolve the target, open
// the store, run through the lifecycle, print the result and write the
// --json summary (also for an interrupted or failed run that was stored).
func (s *State) runWorkload(cmd *cobra.Command, r workload.Runner, v option.Values, rf *runFlags) (retErr error) {
	ctx := cmd.Context()
	if err := rf.hosts.Check(); err != nil {
		return err
	}
	shardSpec := rf.shard
	if shardSpec == "" {
		shardSpec = s.Getenv(workload.EnvShard)
	}
	sh, err := workload.ParseShard(shardSpec, s.Getenv)
	if err != nil {
		return err
	}
	var shard *results.Shard
	unsharded := v
	if sh.On() {
		sv, part, err := workload.ShardOptions(r, sh, v)
		if err != nil {
			return err
		}
		v, shard = sv, &results.Shard{Index: sh.Index, Count: sh.Count, Part: part}
		s.eprintf("%s\n", part)
	}
	lv, err := s.startLive(&rf.live)
	if err != nil {
		return err
	}
	defer lv.stop(ctx)
	out, errOut, flush := s.runOutput()
	req := &lifecycle.Request{Workload: r, Options: v, NoSamplers: rf.noSamplers, Progress: rf.progress,
		Experiment: rf.experiment, Version: Version, Getenv: s.Getenv, LookupEnv: s.LookupEnv, Stdout: out, Stderr: errOut,
		HostMetrics: rf.hosts, Shard: shard, Unsharded: unsharded}
	if lv != nil {
		req.Live = lv.newRun(r, rf.experiment, -1, "", sh)
		s.eprintf("live view: run key %s (the run_key it is stored with)\n", req.Live.Key())
		lv.noteTick(rf.progress)
		// A run refused before the lifecycle (a bad --set, no target) ends
		// in the view too; the lifecycle's own Finish comes first otherwise.
		defer func() { req.Live.Finish(nil, retErr) }()
	}
	if len(r.Meta().Dialects) > 0 {
		t, err := s.openTarget(ctx, r, &rf.conn)
		if err != nil {
			return err
		}
		if rf.hosts.Source == target.HostLocal && t.Remote() {
			return errs.Usage("give --host-metrics sql (the server's /proc read through the database) or --host-metrics http://HOST:9100/metrics (its node_exporter)",
				"--host-metrics local reads this machine's /proc, and the server runs on another machine (%s)", t.Describe())
		}
		req.Target = t
		for _, kv := range rf.settings { // bad --set values fail before any connection
			set, err := t.Settings().Parse(kv)
			if err != nil {
				return err
			}
			if o, ok := r.Options().Phase(option.PhaseRun).Governing(set.Name); ok {
				return usageError(option.GovernedError(o, "--set "+set.Name))
			}
			req.Settings = append(req.Settings, set)
		}
	}
	st, err := openStore(cmd, s, &rf.results)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Check(ctx); err != nil {
		return err
	}
	req.Store = st
	if rf.cpuProfile != "" {
		stop, err := startCPUProfile(rf.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if shard != nil {
		// Once its clients are connected: their set-up stays out of the
		// window the shards share.
		key := rf.rendezvous
		if key == "" {
			key = s.Getenv(envRendezvous)
		}
		meet := lifecycle.Meeting{Shard: sh, Key: key, Timeout: rf.rzTimeout, Note: func(format string, a ...any) { s.eprintf(format+"\n", a...) }}
		req.Barrier = func(ctx context.Context) error { return meet.Meet(ctx, req.Target, shard) }
	}
	obs := s.runObserver(r)
	req.Observe = obs.observe
	sum, runErr := lifecycle.Run(ctx, req)
	flush() // the run's own output, before what is printed of it
	rescue, isRescued := store.RescuedTo(runErr)
	if sum != nil && (sum.RunID != 0 || isRescued || sum.Status != "") {
		s.printf("\n")
		s.printBlocks(showBlocks(r, sum, true))
		switch {
		case isRescued:
			s.printf("NOT stored in %s (saving failed): the result is in %s\n", st.Path(), rescue)
		case sum.RunID != 0:
			s.printf("stored as run %d in %s\n", sum.RunID, st.Path())
		default:
			s.printf("NOT stored in %s, and no rescue file could be written: the figures above (and --json, if given) are all that is left of this run\n", st.Path())
		}
	}
	if sum != nil && rf.json != "" {
		if err := writeJSONFile(rf.json, sum); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}

// showBlocks is a run's terminal view, its host metrics (and, after a
// run, its checks), then why its status is not ok.
func showBlocks(w workload.Workload, sum *results.Summary, checks bool) []results.Block {
	var out []results.Block
	if v, ok := w.(workload.Viewer); ok {
		out = v.Show(sum)
	}
	out = append(out, results.MergeBlocks(sum)...)
	out = append(out, results.HostBlocks(sum)...)
	if cv, ok := w.(workload.CheckViewer); ok && checks {
		out = append(out, cv.CheckView(sum)...)
	}
	return append(out, results.StatusLines(sum)...)
}

// observer prints a run's events on stderr: the header, the progress
// lines (the workload's own format, if it has one), the first few errors,
// warnings and notes.
type observer struct {
	s      *State
	w      workload.Workload
	mu     sync.Mutex
	errors int
}

const errorLines = 5

func (s *State) runObserver(w workload.Workload) *observer {
	return &observer{s: s, w: w}
}

func (o *observer) observe(e lifecycle.Event) {
	s := o.s
	switch e.Kind {
	case lifecycle.EventHeader, lifecycle.EventNote:
		s.eprintf("%s\n", e.Text)
	case lifecycle.EventWarning:
		s.eprintf("warning: %s\n", e.Text)
	case lifecycle.EventTick:
		line := results.TickLine(e.Tick)
		if t, ok := o.w.(workload.Ticker); ok {
			line = t.Tick(e.Tick, e.Span)
		}
		if line != "" {
			s.eprintf("%s\n", line)
		}
	case lifecycle.EventError:
		o.mu.Lock()
		defer o.mu.Unlock()
		o.errors++
		if o.errors > errorLines {
			return
		}
		msg := "<nil>"
		if e.Outcome.Err != nil {
			msg = e.Outcome.Err.Error()
		}
		s.eprintf("client %d: %s %s (SQLSTATE %s): %s\n", e.Worker, e.Outcome.Op, e.Outcome.Class, orDash(e.Outcome.SQLState), msg)
		if o.errors == errorLines {
			s.eprintf("(further errors are counted, not printed)\n")
		}
	case lifecycle.EventRestored:
		s.eprintf("settings restored\n")
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeJSONFile writes v as indented JSON, through a temporary file.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		return errs.Wrap(errs.KindUsage, err, "choose a writable path for --json", "cannot write %s", path)
	}
	return os.Rename(path+".tmp", path)
}
