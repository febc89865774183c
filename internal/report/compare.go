package report

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"

	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// Comparison is run B measured against run A, for `tunebench compare`.
type Comparison struct {
	A, B *runData
	// RepsA and RepsB are the counted repetitions of each run's
	// configuration and x value in its experiment (nil outside one).
	RepsA, RepsB []*runData
	// Reps compares the medians of RepsB and RepsA; zero when the runs do
	// not both belong to experiments.
	Reps      RatioCI
	Resamples int
	Seed      uint64
}

// CompareRuns loads runs a and b (and, when they belong to experiments, the
// repetitions of their configurations) and compares them.
func CompareRuns(ctx context.Context, st *store.Store, reg *workload.Registry, a, b int64, resamples int, seed uint64) (*Comparison, error) {
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	if seed == 0 {
		seed = DefaultSeed
	}
	d, err := loadRuns(ctx, st, []int64{a, b}, newViews(reg))
	if err != nil {
		return nil, err
	}
	c := &Comparison{A: d.Runs[0], B: d.Runs[0], Resamples: resamples, Seed: seed}
	if len(d.Runs) > 1 {
		c.B = d.Runs[1]
	}
	if c.RepsA, err = repetitionsOf(ctx, st, c.A); err != nil {
		return nil, err
	}
	if c.RepsB, err = repetitionsOf(ctx, st, c.B); err != nil {
		return nil, err
	}
	if len(c.RepsA) > 0 && len(c.RepsB) > 0 && c.A.Metric == c.B.Metric {
		c.Reps = BootstrapRatio(values(c.RepsA), values(c.RepsB), resamples, 0.95, seed)
	}
	return c, nil
}

func values(rs []*runData) []float64 {
	out := make([]float64, len(rs))
	for i, rd := range rs {
		out[i] = rd.Value
	}
	return out
}

func ids(rs []*runData) []int64 {
	out := make([]int64, len(rs))
	for i, rd := range rs {
		out[i] = rd.Run.ID
	}
	return out
}

// ratioText formats b/a, "-" when undefined.
func ratioText(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || a == 0 {
		return "-"
	}
	return fmtRatio(b / a)
}

// WriteText prints the comparison as terminal tables.
func (c *Comparison) WriteText(w io.Writer) error {
	a, b := c.A, c.B
	fmt.Fprintf(w, "A: %s\nB: %s\n\n", headline(a), headline(b))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// tabwriter aligns every column right; labels are padded to stay left.
	const lw = 16
	fmt.Fprintf(tw, "%-*s\tA\tB\tB/A\t\n", lw, "")
	line := func(name string, va, vb float64, fmtf func(float64) string) {
		if math.IsNaN(va) && math.IsNaN(vb) {
			return
		}
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t\n", lw, name, fmtf(va), fmtf(vb), ratioText(va, vb))
	}
	metrics := []string{a.Metric}
	if b.Metric != a.Metric {
		metrics = append(metrics, b.Metric)
	}
	for _, m := range []string{"tpm", "tps"} {
		if m != a.Metric && m != b.Metric {
			metrics = append(metrics, m)
		}
	}
	for _, m := range metrics {
		line(a.v.label(m), number(a.Raw, m), number(b.Raw, m), fmtNum)
	}
	for _, p := range []string{"avg", "p50", "p90", "p95", "p99", "max"} {
		line("latency "+p+" ms", number(a.Raw, "latency_ms."+p), number(b.Raw, "latency_ms."+p), fmtMs)
	}
	line("errors", number(a.Raw, "errors"), number(b.Raw, "errors"), func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf("%.0f", v)
	})
	line("driver CPU s", number(a.Raw, "driver.cpu_s"), number(b.Raw, "driver.cpu_s"), fmtMs)
	if err := tw.Flush(); err != nil {
		return err
	}

	// Latency per transaction type.
	ops := map[string][2]*opLatency{}
	var names []string
	for side, rd := range []*runData{a, b} {
		for i := range rd.Ops {
			l := &rd.Ops[i]
			pair, ok := ops[l.Op]
			if !ok {
				names = append(names, l.Op)
			}
			pair[side] = l
			ops[l.Op] = pair
		}
	}
	if len(names) > 0 {
		sort.Slice(names, func(i, j int) bool { return a.v.opLess(names[i], names[j]) })
		fmt.Fprintf(w, "\nlatency per transaction type (ms, completed transactions)\n")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		ow := 2
		for _, op := range names {
			ow = max(ow, len(op))
		}
		fmt.Fprintf(tw, "%-*s\t%-5s\tA\tB\tB/A\t\n", ow, "op", "")
		for _, op := range names {
			pair := ops[op]
			first := true
			get := func(l *opLatency, f func(*opLatency) float64) float64 {
				if l == nil {
					return math.NaN()
				}
				return f(l)
			}
			for _, pc := range []struct {
				name string
				f    func(*opLatency) float64
			}{
				{"count", func(l *opLatency) float64 { return float64(l.Count) }},
				{"p50", func(l *opLatency) float64 { return l.P50 }},
				{"p95", func(l *opLatency) float64 { return l.P95 }},
				{"p99", func(l *opLatency) float64 { return l.P99 }},
				{"max", func(l *opLatency) float64 { return l.Max }},
			} {
				va, vb := get(pair[0], pc.f), get(pair[1], pc.f)
				if pc.name == "count" && (va == 0 || math.IsNaN(va)) && (vb == 0 || math.IsNaN(vb)) {
					continue // source without counts
				}
				f := fmtMs
				if pc.name == "count" {
					f = func(v float64) string {
						if math.IsNaN(v) {
							return "-"
						}
						return fmt.Sprintf("%.0f", v)
					}
				}
				label := ""
				if first {
					label, first = op, false
				}
				fmt.Fprintf(tw, "%-*s\t%-5s\t%s\t%s\t%s\t\n", ow, label, pc.name, f(va), f(vb), ratioText(va, vb))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	// Across repetitions.
	fmt.Fprintln(w)
	switch {
	case len(c.RepsA) == 0 || len(c.RepsB) == 0:
		fmt.Fprintf(w, "single runs: no repetitions to give a confidence interval (runs of an experiment with repetitions get one)\n")
	case a.Metric != b.Metric:
		fmt.Fprintf(w, "the runs measure different metrics (%s, %s): no comparison across repetitions\n", a.Metric, b.Metric)
	default:
		m := a.v.label(a.Metric)
		fmt.Fprintf(w, "across repetitions (%s, median of each configuration):\n", m)
		fmt.Fprintf(w, "  A: %q at %s %s: %d runs (%s), median %s\n", a.Config, a.XName, fmtX(a.X), len(c.RepsA), idList(ids(c.RepsA)), fmtNum(Median(values(c.RepsA))))
		fmt.Fprintf(w, "  B: %q at %s %s: %d runs (%s), median %s\n", b.Config, b.XName, fmtX(b.X), len(c.RepsB), idList(ids(c.RepsB)), fmtNum(Median(values(c.RepsB))))
		r := c.Reps
		v, _ := verdictClass(r, true)
		ci := "no 95% CI (needs 2+ repetitions on each side)"
		if r.HasCI {
			ci = fmt.Sprintf("95%% CI [%s, %s] (bootstrap, %d resamples, seed %d)", fmtRatio(r.Lo), fmtRatio(r.Hi), c.Resamples, c.Seed)
		}
		fmt.Fprintf(w, "  median ratio B/A %s, %s: %s\n", fmtRatio(r.Ratio), ci, v)
	}
	return nil
}

// headline describes a run in one line for the comparison's header.
func headline(rd *runData) string {
	s := rd.ref()
	if rd.Link != nil { // the configuration label does not name the workload
		s += ", " + joinNonEmpty(" ", rd.Run.Workload, rd.Run.Variant)
	}
	s += ", status " + rd.Run.Status
	if !rd.Run.StartedAt.IsZero() {
		s += ", started " + rd.Run.StartedAt.Local().Format("2006-01-02 15:04:05")
	}
	return s
}
