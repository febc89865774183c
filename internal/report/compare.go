package report

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// Comparison is run B measured against run A, for `tunebench compare`.
type Comparison struct {
	A, B *runData
	// RepsA and RepsB are the counted repetitions of each run's
	// configuration and x value in its experiment (nil outside one);
	// LeftA and LeftB the repetitions left out for their status.
	RepsA, RepsB []*runData
	LeftA, LeftB []*runData
	// Reps compares the medians of RepsB and RepsA; zero when the runs do
	// not both belong to experiments.
	Reps          RatioCI
	Resamples     int
	Seed          uint64
	IncludeErrors bool
}

// CompareOptions are the settings of a comparison.
type CompareOptions struct {
	// Resamples and Seed drive the bootstrap (defaults DefaultResamples,
	// DefaultSeed).
	Resamples int
	Seed      uint64
	// IncludeErrors counts the repetitions whose figures are in doubt,
	// like Options.IncludeErrors.
	IncludeErrors bool
}

// CompareRuns loads runs a and b (and, when they belong to experiments, the
// repetitions of their configurations) and compares them.
func CompareRuns(ctx context.Context, st *store.Store, reg *workload.Registry, a, b int64, o CompareOptions) (*Comparison, error) {
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	d, err := loadRuns(ctx, st, []int64{a, b}, newViews(reg), o.IncludeErrors)
	if err != nil {
		return nil, err
	}
	c := &Comparison{A: d.Runs[0], B: d.Runs[0], Resamples: o.Resamples, Seed: o.Seed, IncludeErrors: o.IncludeErrors}
	if len(d.Runs) > 1 {
		c.B = d.Runs[1]
	}
	if c.RepsA, c.LeftA, err = repetitionsOf(ctx, st, c.A, o.IncludeErrors); err != nil {
		return nil, err
	}
	if c.RepsB, c.LeftB, err = repetitionsOf(ctx, st, c.B, o.IncludeErrors); err != nil {
		return nil, err
	}
	if len(c.RepsA) > 0 && len(c.RepsB) > 0 && c.A.Metric == c.B.Metric {
		c.Reps = BootstrapRatio(values(c.RepsA), values(c.RepsB), o.Resamples, 0.95, o.Seed)
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
	fmt.Fprintf(w, "A: %s\nB: %s\n", headline(a), headline(b))
	for _, side := range []struct {
		name string
		rd   *runData
	}{{"A", a}, {"B", b}} {
		for _, l := range outageLines(side.rd, 8) {
			fmt.Fprintf(w, "%s: %s\n", side.name, l)
		}
	}
	for _, l := range kernelDiff(a.Env, b.Env) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)

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
		line(a.v.label(a.Run.Workload, m), number(a.Raw, m), number(b.Raw, m), fmtNum)
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
		m := a.v.label(a.Run.Workload, a.Metric)
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
	if left := leftOut(c.LeftA, c.LeftB); left != "" {
		fmt.Fprintf(w, "  %s\n", left)
	}
	if c.IncludeErrors {
		for _, rs := range [][]*runData{c.RepsA, c.RepsB} {
			var errIDs []int64
			for _, rd := range rs {
				if rd.inDoubt() {
					errIDs = append(errIDs, rd.Run.ID)
				}
			}
			if len(errIDs) > 0 {
				fmt.Fprintf(w, "  counted with status errors (--include-errors): runs %s\n", idList(errIDs))
			}
		}
	}
	return nil
}

// leftOut names the repetitions left out of the comparison for their
// status, "" when there are none.
func leftOut(sides ...[]*runData) string {
	var parts []string
	seen := map[int64]bool{}
	doubt := false
	for _, rs := range sides {
		for _, rd := range rs {
			if seen[rd.Run.ID] {
				continue
			}
			seen[rd.Run.ID] = true
			parts = append(parts, fmt.Sprintf("run %d (%s)", rd.Run.ID, rd.statusText()))
			doubt = doubt || rd.inDoubt()
		}
	}
	if len(parts) == 0 {
		return ""
	}
	s := "left out for their status: " + strings.Join(parts, ", ")
	if doubt {
		s += "; --include-errors counts the runs with status errors"
	}
	return s
}

// headline describes a run in one line for the comparison's header.
func headline(rd *runData) string {
	s := rd.ref()
	if rd.Link != nil { // the configuration label does not name the workload
		s += ", " + joinNonEmpty(" ", rd.Run.Workload, rd.Run.Variant)
	}
	s += ", status " + rd.statusText()
	if !rd.Run.StartedAt.IsZero() {
		s += ", started " + rd.Run.StartedAt.Local().Format("2006-01-02 15:04:05")
	}
	return s
}

// kernelDiff says how the kernel settings the runs were made with differ
// (an experiment's target.kernel and matrix.kernel), and which are the
// same; nothing when neither run set any.
func kernelDiff(a, b *envinfo.Snapshot) []string {
	va, vb := a.KernelValues(), b.KernelValues()
	if len(va) == 0 && len(vb) == 0 {
		return nil
	}
	keys := map[string]bool{}
	for k := range va {
		keys[k] = true
	}
	for k := range vb {
		keys[k] = true
	}
	var differ, same []string
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		x, okA := va[k]
		y, okB := vb[k]
		if okA && okB && x == y {
			same = append(same, k+"="+x)
			continue
		}
		differ = append(differ, fmt.Sprintf("kernel %s: A %s, B %s", strings.Replace(k, "@", " of ", 1), orUnset(x, okA), orUnset(y, okB)))
	}
	if len(same) > 0 {
		differ = append(differ, "kernel, same in both: "+strings.Join(same, " "))
	}
	return differ
}

func orUnset(v string, ok bool) string {
	if !ok {
		return "not set by the experiment"
	}
	return v
}
