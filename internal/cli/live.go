package cli

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/tunebench/tunebench/internal/experiment"
	"github.com/tunebench/tunebench/internal/live"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// liveFlags are --listen and --listen-linger (docs/live.md).
type liveFlags struct {
	listen string
	linger time.Duration
}

func (f *liveFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.listen, "listen", "", "serve a live view on `ADDR` while the work goes on: /metrics for Prometheus and a live page at / (PORT or :PORT: 127.0.0.1 only; HOST:PORT, e.g. 0.0.0.0:9100, to serve other machines; docs/live.md)")
	fs.Var(option.DurationFlag{P: &f.linger}, "listen-linger", "with --listen: keep serving the final figures this long after the end (e.g. 2 scrape intervals, so that Prometheus gets them)")
}

// liveView is the live server of one command.
type liveView struct {
	s      *State
	hub    *live.Hub
	srv    *live.Server
	linger time.Duration
}

// startLive starts the live server when --listen is given (nil when not);
// it is up before the work starts.
func (s *State) startLive(f *liveFlags) (*liveView, error) {
	if f.listen == "" {
		return nil, nil
	}
	hub := live.NewHub()
	srv, err := live.Listen(f.listen, hub)
	if err != nil {
		return nil, err
	}
	s.eprintf("live view: %s (Prometheus: %smetrics)\n", srv.URL(), srv.URL())
	return &liveView{s: s, hub: hub, srv: srv, linger: f.linger}, nil
}

// noteTick says how often the live figures change when the runs' tick
// (--progress) is longer than a second: the executor's tick feeds the
// live view and the stored series alike, and --listen changes neither.
func (lv *liveView) noteTick(progress time.Duration) {
	if lv != nil && progress > time.Second {
		lv.s.eprintf("live view: the figures change every %s, the runs' tick (--progress 1s for every second)\n", progress)
	}
}

// newRun starts serving a run; its key labels its series and is stored
// with it (run_key).
func (lv *liveView) newRun(w workload.Workload, experimentName string, planRun int, planLabel string, sh workload.Shard) *live.Run {
	if lv == nil {
		return nil
	}
	info := live.RunInfo{Key: live.NewKey(time.Now()), Workload: w.Meta().Name, Experiment: experimentName,
		PlanRun: planRun, PlanLabel: planLabel}
	if sh.On() {
		info.Shard = sh.String()
	}
	if r, ok := w.(workload.Runner); ok {
		h := r.Headline()
		info.Headline = live.Headline{Metric: h.Metric, Label: h.Label, Unit: h.Unit}
	}
	return lv.hub.NewRun(info)
}

// stop keeps serving for --listen-linger (unless ctx is cancelled: an
// interrupt), then stops the server.
func (lv *liveView) stop(ctx context.Context) {
	if lv == nil {
		return
	}
	if lv.linger > 0 && ctx.Err() == nil {
		lv.s.eprintf("live view: serving the final figures for %s more (--listen-linger)\n", lv.linger)
		t := time.NewTimer(lv.linger)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = lv.srv.Close(cctx)
}

// experimentObserver feeds an experiment's plan and progress to the live
// view: the runs of the plan, which run is going, which are done (kept:
// the plan indexes an earlier attempt completed).
func (lv *liveView) experimentObserver(p *experiment.Plan, kept []int) experiment.Observer {
	if lv == nil {
		return func(experiment.Event) {}
	}
	return func(ev experiment.Event) {
		switch ev.Kind {
		case experiment.EventBegin:
			info := live.ExperimentInfo{Name: p.Name, Workload: p.Workload}
			for i, r := range p.Runs {
				info.Runs = append(info.Runs, live.PlanRun{Index: i, Label: p.DescribeRun(i), Warmup: r.Warmup})
			}
			lv.hub.ExperimentBegin(info, ev.Total, kept, ev.ETA)
		case experiment.EventStep:
			if ev.Step.Kind == experiment.StepRun {
				lv.hub.ExperimentRun(ev.Step.Run, ev.Ordinal, ev.Total, ev.ETA)
			}
		case experiment.EventStepDone:
			if ev.Step.Kind == experiment.StepRun {
				var id int64
				var status, brief string
				if ev.Result != nil {
					id, status, brief = ev.Result.RunID, ev.Result.Status, ev.Result.Brief
				}
				lv.hub.ExperimentRunDone(ev.Step.Run, id, status, brief, ev.Err != nil && id == 0)
			}
		case experiment.EventEnd:
			lv.hub.ExperimentEnd(ev.Status)
		}
	}
}

// keptRuns are the plan indexes an earlier attempt of the experiment
// completed (a resume skips them); none for a new experiment.
func keptRuns(ctx context.Context, st *store.Store, p *experiment.Plan) []int {
	e, err := st.GetExperiment(ctx, p.Name)
	if err != nil {
		return nil
	}
	links, err := st.PlanLinks(ctx, e.ID)
	if err != nil {
		return nil
	}
	left, _, err := p.Remaining(links)
	if err != nil {
		return nil
	}
	var out []int
	for i, l := range left {
		if !l {
			out = append(out, i)
		}
	}
	return out
}
