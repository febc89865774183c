//go:build linux

package pg

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tunebench/tunebench/internal/netio"
	"github.com/tunebench/tunebench/internal/step"
)

// TestSessionThreadPaced: a session's own thread (one per client, not
// multiplexed) keeps SCHED_NORMAL when the step context is an open loop's
// (step.WithPaced) and takes SCHED_BATCH otherwise; the mark is read each
// time the thread starts, so a session reused after Stop follows its new
// context.
func TestSessionThreadPaced(t *testing.T) {
	noConn := errors.New("no connection in this test")
	reconnect := func(context.Context) error { return noConn }
	// The policy after Ready in an open loop, then (after Stop) in a closed
	// one, then in an open one again, all on one session.
	var policies [3]uint32
	var batchWorks bool
	var err, skip error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		a, e := unix.SchedGetAttr(0, 0)
		if e != nil || a.Policy != unix.SCHED_NORMAL {
			skip = fmt.Errorf("the test's thread does not start with SCHED_NORMAL (%v)", e)
			return
		}
		var probe netio.Thread
		probe.Tick()
		batchWorks = probe.Batch()
		probe.Stop()
		ready := func(i int, s *Session, ctx context.Context) {
			var out step.Outcome
			if s.Ready(ctx, &out, reconnect) || !errors.Is(out.Err, noConn) {
				err = fmt.Errorf("Ready: %v, want the reconnect's error", out.Err)
			}
			a, e := unix.SchedGetAttr(0, 0)
			if e != nil {
				err = e
			}
			policies[i] = a.Policy
			s.Thread.Stop()
		}
		open := step.WithPaced(context.Background())
		s := &Session{Direct: true}
		ready(0, s, open)
		ready(1, s, context.Background())
		ready(2, s, open)
	}()
	<-done
	if skip != nil {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !batchWorks {
		t.Skip("the kernel refused SCHED_BATCH")
	}
	for i, want := range []uint32{unix.SCHED_NORMAL, unix.SCHED_BATCH, unix.SCHED_NORMAL} {
		if policies[i] != want {
			t.Errorf("Ready %d (open, closed, open loop): policy %d, want %d", i+1, policies[i], want)
		}
	}
}
