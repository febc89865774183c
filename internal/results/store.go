package results

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/store"
)

// Record is everything stored for one run.
type Record struct {
	Summary    *Summary
	Experiment string
	Variant    string // e.g. the script or mode ("select-only", "procs")
	Params     json.RawMessage
	Env        *envinfo.Snapshot
	Check      any // the check report (stored as JSON), nil for none
	Series     []store.Point
	Histograms []store.Histogram
	Intervals  []store.IntervalHistogram // a shard's interval histograms (RunIntervals)
	Link       *store.PlanLink           // the experiment plan entry, saved in the same transaction
	// RescueDirs are where the record goes, in this order, when the store
	// fails to save it and its own directory cannot take a rescue file.
	RescueDirs []string
}

// Save stores the record in one transaction and sets the summary's run id
// (the stored summary names its own run). When the store fails to save it,
// the record is written to a rescue file (store.Rescue) with its summary
// naming no run (run_id 0); the error then says where the file is and how
// to import it (store.RescuedTo finds the path).
func Save(ctx context.Context, st *store.Store, rec *Record) (int64, error) {
	sum := rec.Summary
	if sum.SchemaVersion == 0 {
		sum.SchemaVersion = SchemaVersion
	}
	ej, err := json.Marshal(rec.Env)
	if err != nil {
		return 0, err
	}
	r := &store.Run{
		Experiment: rec.Experiment, Workload: sum.Workload, Variant: rec.Variant, Status: sum.Status,
		StartedAt: sum.StartedAt, EndedAt: sum.EndedAt, Params: rec.Params, Env: ej,
		Link: rec.Link, Series: rec.Series, Histograms: rec.Histograms, Intervals: rec.Intervals, SummarySchema: sum.SchemaVersion,
	}
	if rec.Check != nil {
		if r.Check, err = json.Marshal(rec.Check); err != nil {
			return 0, err
		}
	}
	id, err := st.SaveRunWithSummary(ctx, r, func(id int64) (json.RawMessage, error) {
		sum.RunID = id
		return json.Marshal(sum)
	})
	if err != nil {
		sum.RunID = 0
		r.Summary, r.ID = nil, 0
		if raw, merr := json.Marshal(sum); merr == nil {
			r.Summary = raw
		}
		// A run the store refuses whatever its state (a secret, a bad
		// field) is not rescued: Rescue returns the error as it is.
		return 0, st.Rescue(r, err, rec.RescueDirs...)
	}
	return id, nil
}

// Run is a stored run with its summary and environment decoded.
type Run struct {
	*store.Run
	Summary *Summary          // nil when the stored summary cannot be read
	Env     *envinfo.Snapshot // nil when absent or unreadable
	// Raw is the summary as generic JSON (for fields a newer or older
	// version wrote that the types do not know).
	Raw map[string]any
}

// Open decodes a stored run.
func Open(r *store.Run, extras ExtraFunc) *Run {
	out := &Run{Run: r}
	if len(r.Summary) > 0 {
		out.Summary, _ = Decode(r.Summary, extras)
		_ = json.Unmarshal(r.Summary, &out.Raw)
	}
	if len(r.Env) > 0 && string(r.Env) != "null" {
		var env envinfo.Snapshot
		if json.Unmarshal(r.Env, &env) == nil {
			out.Env = &env
		}
	}
	return out
}

// Get loads and decodes run id.
func Get(ctx context.Context, st *store.Store, id int64, extras ExtraFunc) (*Run, error) {
	r, err := st.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	return Open(r, extras), nil
}

// DecodeInfo decodes the summary of a listed run (no series).
func DecodeInfo(ri store.RunInfo, extras ExtraFunc) *Summary {
	if len(ri.Summary) == 0 {
		return nil
	}
	s, err := Decode(ri.Summary, extras)
	if err != nil {
		return nil
	}
	return s
}

// RunSeries flattens the executor's per-tick series for the store.
func RunSeries(res *run.Result) []store.Point {
	out := make([]store.Point, 0, len(res.Series)*8)
	for _, tk := range res.Series {
		add := func(name string, v float64) { out = append(out, store.Point{Series: name, T: tk.T, V: v}) }
		add("tps", tk.TPS)
		add("committed", float64(tk.Committed))
		add("errors", float64(tk.Errors))
		add("latency_p50_ms", tk.P50Ms)
		add("latency_p95_ms", tk.P95Ms)
		add("latency_p99_ms", tk.P99Ms)
		add("latency_max_ms", tk.MaxMs)
		add("active_workers", float64(tk.ActiveWorkers))
		if res.OpenLoop {
			add("queue_depth", float64(tk.QueueDepth))
			add("schedule_lag_p99_ms", tk.Lag99Ms)
		}
	}
	return out
}

// RunHistograms encodes every per-op, per-class histogram so any
// percentile can be recomputed from the store.
func RunHistograms(res *run.Result) ([]store.Histogram, error) {
	var out []store.Histogram
	for _, o := range res.Ops {
		c := o.Class.String()
		for _, h := range []struct {
			kind string
			h    *metrics.Hist
		}{{store.KindLatency, o.Latency}, {store.KindService, o.Service}, {store.KindLag, o.Lag}} {
			enc, err := EncodeHist(o.Op, c, h.kind, h.h)
			if err != nil {
				return nil, err
			}
			if enc != nil {
				out = append(out, *enc)
			}
		}
	}
	return out, nil
}

// RunIntervals are the interval histograms the executor kept
// (run.Config.TickHistograms), at the times of RunSeries' points.
func RunIntervals(res *run.Result) []store.IntervalHistogram {
	var out []store.IntervalHistogram
	for _, tk := range res.Series {
		if tk.LatencyEnc != nil {
			out = append(out, store.IntervalHistogram{T: tk.T, Kind: store.KindLatency, Encoded: tk.LatencyEnc})
		}
		if tk.LagEnc != nil {
			out = append(out, store.IntervalHistogram{T: tk.T, Kind: store.KindLag, Encoded: tk.LagEnc})
		}
	}
	return out
}

// EncodeHist encodes one histogram for the store; nil for an empty one.
func EncodeHist(op, class, kind string, h *metrics.Hist) (*store.Histogram, error) {
	if h == nil || h.Count() == 0 {
		return nil, nil
	}
	b, err := metrics.Encode(h)
	if err != nil {
		return nil, err
	}
	return &store.Histogram{Op: op, Class: class, Kind: kind, Encoded: b}, nil
}

// Import saves the run of a rescue file in st, through the same code as
// Save, in one transaction, with its summary naming the new run id; notes
// say what was left out (a plan entry the store cannot link). A run that is
// already in st is refused (store.ImportRun).
func Import(ctx context.Context, st *store.Store, rescued *store.Rescued) (int64, []string, error) {
	r := rescued.Run
	raw := r.Summary
	return st.ImportRun(ctx, r, func(id int64) (json.RawMessage, error) {
		if len(raw) == 0 {
			return nil, nil
		}
		return withRunID(raw, id)
	})
}

// withRunID sets the "run_id" of a summary's JSON object to id and keeps
// every other byte as it is (fields this build does not know included).
func withRunID(raw json.RawMessage, id int64) (json.RawMessage, error) {
	bad := func(err error) (json.RawMessage, error) {
		return nil, fmt.Errorf("the run's summary is not a JSON object: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return bad(err)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		from := int(dec.InputOffset()) // before the colon
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return bad(err)
		}
		if key != "run_id" {
			continue
		}
		to := int(dec.InputOffset())
		at := from + bytes.Index(raw[from:to], v) // the value itself
		out := append([]byte{}, raw[:at]...)
		out = strconv.AppendInt(out, id, 10)
		return append(out, raw[at+len(v):]...), nil
	}
	// No run_id (not written by this binary): add it.
	i := bytes.IndexByte(raw, '{')
	sep := ","
	if len(bytes.TrimSpace(raw[i+1:])) == 1 { // {}
		sep = ""
	}
	out := append([]byte{}, raw[:i+1]...)
	out = append(out, `"run_id":`...)
	out = strconv.AppendInt(out, id, 10)
	out = append(out, sep...)
	return append(out, raw[i+1:]...), nil
}
