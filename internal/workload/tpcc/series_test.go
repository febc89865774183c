package tpcc

import (
	"testing"

	"github.com/tunebench/tunebench/internal/run"
)

// Each NOPM point is a rate over its own interval (issue 16, item 12): the
// first tick after a ramp-up without ticks covers the whole ramp-up, and
// dividing it by one second showed 240,300 NOPM next to 86,000-90,000.
func TestNOPMSeriesUsesEachTicksSpan(t *testing.T) {
	res := &run.Result{Series: []run.Tick{
		{T: 0, Span: 3, Ops: map[string]run.OpTick{OpNewOrder: {Committed: 4500}}}, // the ramp-up's 3 s
		{T: 1, Span: 1, Ops: map[string]run.OpTick{OpNewOrder: {Committed: 1500}}},
		{T: 1.5, Span: 0.5, Ops: map[string]run.OpTick{OpNewOrder: {Committed: 750}}}, // a partial last tick
	}}
	var got []float64
	for _, p := range nopmSeries(res) {
		if p.Series == "nopm" {
			got = append(got, p.V)
		}
	}
	if len(got) != 3 || got[0] != 90_000 || got[1] != 90_000 || got[2] != 90_000 {
		t.Fatalf("nopm points %v, want 90000 each (New-Orders x 60 / the tick's span)", got)
	}
}
