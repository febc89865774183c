package live

import (
	"encoding/json"
	"math"
	"net/http"
	"sort"
	"strconv"
)

// The page's JSON (GET /api/live?run=KEY&since=SEQ): the run's figures
// and, when the page already has the run KEY up to SEQ, only what came
// since (ticks and host points), so a page polling every second gets a
// few hundred bytes.

type pageJSON struct {
	Now        float64  `json:"now"` // unix seconds
	Seq        int64    `json:"seq"`
	Run        *runJSON `json:"run,omitempty"`
	Experiment *expJSON `json:"experiment,omitempty"`
}

type runJSON struct {
	Key        string    `json:"key"`
	Workload   string    `json:"workload"`
	Shard      string    `json:"shard,omitempty"`
	Experiment string    `json:"experiment,omitempty"`
	PlanRun    int       `json:"plan_run"`
	PlanLabel  string    `json:"plan_label,omitempty"`
	Headline   Headline  `json:"headline"`
	Ticks      bool      `json:"executor"` // the executor drives it (ticks come)
	Started    float64   `json:"started"`  // unix seconds
	Elapsed    float64   `json:"elapsed_s"`
	Done       bool      `json:"done"`
	Final      *finalRec `json:"final,omitempty"`
	// Full: the whole history follows (another run, or the page had
	// nothing); otherwise only what came after the page's since.
	Full      bool                    `json:"full"`
	Last      *tickRec                `json:"last,omitempty"`
	TickList  []tickRec               `json:"ticks"`
	Host      map[string][][2]float64 `json:"host"`
	Latest    map[string]float64      `json:"latest"`
	HeadValue *float64                `json:"headline_value,omitempty"`
	HeadFinal bool                    `json:"headline_final"`
	Totals    totalsJSON              `json:"totals"`
	Ops       []opJSON                `json:"ops"`
}

type totalsJSON struct {
	Committed       int64 `json:"committed"` // measurement phase: the stored count at the end
	CommittedWarmup int64 `json:"committed_warmup"`
	Errors          int64 `json:"errors"` // both phases
}

type opJSON struct {
	Op        string           `json:"op"`
	Committed int64            `json:"committed"` // both phases
	Errors    int64            `json:"errors"`
	Outcomes  map[string]int64 `json:"outcomes"`
}

type expJSON struct {
	Name     string       `json:"name"`
	Workload string       `json:"workload"`
	Status   string       `json:"status"`
	Total    int          `json:"total"`
	Ordinal  int          `json:"ordinal"`
	Done     int          `json:"done"`
	ETA      float64      `json:"eta_s"`
	Elapsed  float64      `json:"elapsed_s"`
	Runs     []expRunJSON `json:"runs"`
	Ended    bool         `json:"ended"`
}

type expRunJSON struct {
	Index  int    `json:"index"`
	Label  string `json:"label"`
	Warmup bool   `json:"warmup,omitempty"`
	State  string `json:"state"`
	Key    string `json:"key,omitempty"`
	RunID  int64  `json:"run_id,omitempty"`
	Status string `json:"status,omitempty"`
	Brief  string `json:"brief,omitempty"`
}

func (h *Hub) serveJSON(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	since, _ := strconv.ParseInt(q.Get("since"), 10, 64)
	b, err := json.Marshal(h.pageState(q.Get("run"), since))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// finite replaces what JSON cannot carry (NaN, ±Inf) with 0.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// pageState is the JSON of the hub for a page that has run key up to seq
// since.
func (h *Hub) pageState(key string, since int64) *pageJSON {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	out := &pageJSON{Now: float64(now.UnixNano()) / 1e9, Seq: h.seq}
	if r := h.run; r != nil {
		full := key != r.info.Key || since <= 0
		if full {
			since = 0
		}
		rj := &runJSON{Key: r.info.Key, Workload: r.info.Workload, Shard: r.info.Shard, Experiment: r.info.Experiment,
			PlanRun: r.info.PlanRun, PlanLabel: r.info.PlanLabel, Headline: r.info.Headline, Ticks: r.info.Ticks,
			Started: float64(r.started.UnixNano()) / 1e9, Elapsed: now.Sub(r.started).Seconds(), Done: r.finished,
			Full: full, TickList: []tickRec{}, Host: map[string][][2]float64{}, Latest: map[string]float64{}}
		if r.finished {
			f := r.final
			rj.Final = &f
		}
		if r.ticked {
			l := r.last
			rj.Last = &l
		}
		for _, t := range r.ticks {
			if t.Seq > since {
				rj.TickList = append(rj.TickList, t)
			}
		}
		for name, pts := range r.history {
			var xs [][2]float64
			for _, p := range pts {
				if p.seq > since {
					xs = append(xs, [2]float64{p.x, finite(p.v)})
				}
			}
			if len(xs) > 0 {
				rj.Host[name] = xs
			}
		}
		for name, s := range r.latest {
			if r.fresh(s, now) {
				rj.Latest[name] = finite(s.v)
			}
		}
		if r.headline.set {
			v := finite(r.headline.v)
			rj.HeadValue, rj.HeadFinal = &v, r.headline.final
		}
		ops := map[string]*opJSON{}
		for _, k := range r.sortedOutcomes() {
			n := r.outcomes[k].count
			op := ops[k.op]
			if op == nil {
				op = &opJSON{Op: k.op, Outcomes: map[string]int64{}}
				ops[k.op] = op
				rj.Ops = append(rj.Ops, *op) // placeholder, replaced below
			}
			op.Outcomes[k.class.String()] += n
			switch {
			case k.class.Committed():
				op.Committed += n
				if k.phase == PhaseMeasure {
					rj.Totals.Committed += n
				} else {
					rj.Totals.CommittedWarmup += n
				}
			case k.class.IsError():
				op.Errors += n
				rj.Totals.Errors += n
			}
		}
		for i := range rj.Ops {
			rj.Ops[i] = *ops[rj.Ops[i].Op]
		}
		sort.Slice(rj.Ops, func(i, j int) bool { return rj.Ops[i].Op < rj.Ops[j].Op })
		out.Run = rj
	}
	if e := h.exp; e != nil {
		ej := &expJSON{Name: e.info.Name, Workload: e.info.Workload, Status: e.status, Total: e.total, Ordinal: e.ordinal,
			Done: e.done, ETA: e.etaLeft(now).Seconds(), Elapsed: now.Sub(e.started).Seconds(), Ended: e.finished}
		for _, pr := range e.runs {
			ej.Runs = append(ej.Runs, expRunJSON{Index: pr.Index, Label: pr.Label, Warmup: pr.Warmup, State: pr.state,
				Key: pr.key, RunID: pr.runID, Status: pr.status, Brief: pr.brief})
		}
		out.Experiment = ej
	}
	return out
}
