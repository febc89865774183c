package tpcc

import (
	"testing"

	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/workload"
)

// TestLiveHeadline: NOPM over a tick is its committed New-Orders per
// minute (the final figure's formula over the tick).
func TestLiveHeadline(t *testing.T) {
	var lh workload.LiveHeadliner = Workload{}
	tk := run.Tick{Ops: map[string]run.OpTick{OpNewOrder: {Committed: 10}, OpPayment: {Committed: 12}}}
	if v, ok := lh.LiveHeadline(tk, 2); !ok || v != 300 {
		t.Errorf("NOPM %v %v, want 300", v, ok)
	}
	if _, ok := lh.LiveHeadline(tk, 0); ok {
		t.Error("a tick without a length has a NOPM")
	}
}
