package workload

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestEvery(t *testing.T) {
	var n atomic.Int64
	stop := Every(5*time.Millisecond, func() { n.Add(1) })
	time.Sleep(60 * time.Millisecond)
	stop()
	got := n.Load()
	if got < 2 {
		t.Fatalf("%d calls in 60 ms at 5 ms", got)
	}
	stop() // a second stop returns at once
	time.Sleep(20 * time.Millisecond)
	if n.Load() != got {
		t.Fatalf("called after stop: %d, then %d", got, n.Load())
	}
}
