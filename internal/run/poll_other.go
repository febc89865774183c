//go:build !linux

package run

import "time"

// pollSupported: multiplexing is implemented with poll(2) on Linux only;
// elsewhere every worker gets its own goroutine.
const pollSupported = false

type poller struct {
	locked time.Time
	slack  time.Duration
}

func newPoller(n int) *poller              { return &poller{} }
func (p *poller) reset()                   {}
func (p *poller) len() int                 { return 0 }
func (p *poller) useTimer()                {}
func (p *poller) close()                   {}
func (p *poller) add(slot, fd int)         {}
func (p *poller) wait(time.Duration) []int { time.Sleep(time.Millisecond); return nil }
func (p *poller) waitFine(d time.Duration, mode pollMode) []int {
	return p.wait(d)
}

// waker: none on this system (multiplexing is Linux-only).
type waker struct{}

func newWaker() *waker              { return nil }
func (w *waker) wake()              {}
func (w *waker) close()             {}
func (p *poller) addWaker(w *waker) {}

// allowedCPUs: threads are not pinned on this system.
func allowedCPUs() []int { return nil }
