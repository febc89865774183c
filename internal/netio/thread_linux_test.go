//go:build linux

package netio

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestThreadPolicy: a Thread gives its locked thread SCHED_BATCH on the
// first Tick and the normal policy back on Stop; a paced one (an open
// loop's) leaves the policy alone.
func TestThreadPolicy(t *testing.T) {
	// The steps run on a goroutine locked to a thread of its own, which
	// ends with it: nothing of this test reaches the runtime's other
	// threads. policies: before, after Tick, after Stop, paced after Tick.
	var policies [4]uint32
	var batch, pacedBatch bool
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		policyNow := func(i int) {
			a, e := unix.SchedGetAttr(0, 0)
			if e != nil {
				err = e
				return
			}
			policies[i] = a.Policy
		}
		policyNow(0)
		var th Thread
		th.Tick()
		batch = th.batch
		policyNow(1)
		th.Stop()
		policyNow(2)
		var paced Thread
		paced.Paced()
		paced.Tick()
		pacedBatch = paced.batch
		policyNow(3)
		paced.Stop()
	}()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if policies[0] != unix.SCHED_NORMAL {
		t.Skip("the test's thread does not start with SCHED_NORMAL")
	}
	if !batch {
		t.Skip("the kernel refused SCHED_BATCH")
	}
	if policies[1] != unix.SCHED_BATCH {
		t.Errorf("after the first Tick: policy %d, want SCHED_BATCH", policies[1])
	}
	if policies[2] != unix.SCHED_NORMAL {
		t.Errorf("after Stop: policy %d, want SCHED_NORMAL", policies[2])
	}
	if policies[3] != unix.SCHED_NORMAL || pacedBatch {
		t.Errorf("paced, after the first Tick: policy %d (batch %v), want SCHED_NORMAL", policies[3], pacedBatch)
	}
}
