package report

import (
	"math"
	"strings"
	"testing"
)

func TestNiceTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		want   string
	}{
		{0, 27000, "0 5k 10k 15k 20k 25k"},
		{0, 12.5, "0 2 4 6 8 10 12"},
		{0, 17, "0 2.5 5 7.5 10 12.5 15"},
		{0, 1, "0 0.2 0.4 0.6 0.8 1"},
		{0.9, 1.4, "0.9 1 1.1 1.2 1.3 1.4"},
		{0, 3.2e9, "0 0.5G 1G 1.5G 2G 2.5G 3G"},
		{0, 95, "0 20 40 60 80"},
	}
	for _, c := range cases {
		var got []string
		for _, tk := range (niceTicks{}).Ticks(c.lo, c.hi) {
			got = append(got, tk.Label)
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("ticks(%v, %v) = %q, want %q", c.lo, c.hi, g, c.want)
		}
	}
}

func TestChartsWithDegenerateData(t *testing.T) {
	nan := math.NaN()
	sm := map[string][]XY{
		"latency_p50_ms":   {{1, 0}, {2, 0}},              // no transactions: zero latency
		"latency_max_ms":   {{1, 0}, {2, 500}, {3, 0.01}}, // wide: log scale, zeros dropped
		"sys.cpu_user_pct": {{5, 10}},                     // a single sample
		"disk.read_iops":   {{1, nan}, {2, nan}},          // nothing finite
		"errors":           {{1, 0}, {2, 0}},              // omitted when all zero
	}
	for _, def := range baseCharts {
		svg, err := seriesChart(def, sm, nil)
		if err != nil {
			t.Fatalf("%s: %v", def.Title, err)
		}
		switch def.Title {
		case "Latency per second", "CPU (whole machine)":
			if svg == "" {
				t.Errorf("%s: no chart", def.Title)
			}
		default:
			if svg != "" {
				t.Errorf("%s: a chart without data", def.Title)
			}
		}
	}
	if svg, err := hbarChart("t", "x", []string{"a"}, []hbar{{Label: "c", Values: []float64{nan}, Lo: []float64{nan}, Hi: []float64{nan}}}, false, nan, ""); err != nil || svg != "" {
		t.Errorf("all-NaN bars: %q %v", svg, err)
	}
	g := &group{Metric: "tps", XName: "clients", Configs: []*configLine{{Config: "only", Points: []*point{{X: 4, Values: []float64{10}, Median: 10, Min: 10, Max: 10}}}}}
	if svg, err := throughputChart(g); err != nil || !strings.Contains(string(svg), "<svg") {
		t.Errorf("single point: %v", err)
	}
	if svg, err := throughputSeriesChart("t", nil, "tps", "tps", nil, nil); err != nil || svg != "" {
		t.Errorf("no throughput series: %q %v", svg, err)
	}
}

// A logarithmic value axis draws points over decades and leaves out what
// it cannot place (zero, negative); with nothing left there is no chart.
func TestLogScaleBars(t *testing.T) {
	nan := math.NaN()
	row := func(label string, v ...float64) hbar {
		lo := make([]float64, len(v))
		for i := range lo {
			lo[i] = nan
		}
		return hbar{Label: label, Values: v, Lo: lo, Hi: lo}
	}
	svg, err := hbarChartScaled("q", "seconds", []string{"a", "b"}, []hbar{row("Q1", 0.002, 5), row("Q2", 0, 120)}, false, true, nan, "")
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("log chart: %v", err)
	}
	// Ticks on decades (0.01, 0.1, 1, 10, 100) rather than a linear scale.
	for _, tick := range []string{">0.01<", ">1<", ">100<"} {
		if !strings.Contains(string(svg), tick) {
			t.Errorf("log chart lacks the tick %s", tick)
		}
	}
	if svg, err := hbarChartScaled("q", "s", []string{"a"}, []hbar{row("Q1", 0), row("Q2", -1)}, false, true, nan, ""); err != nil || svg != "" {
		t.Errorf("only non-positive values on a log axis: %q %v", svg, err)
	}
}
