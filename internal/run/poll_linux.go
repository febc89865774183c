//go:build linux

package run

import (
	"time"

	"golang.org/x/sys/unix"
)

// pollSupported: multiplexed workers are driven with poll(2).
const pollSupported = true

// poller waits for readability on a set of descriptors, each tagged with
// its slot index. It is reused for every wait (no allocation).
type poller struct {
	fds   []unix.PollFd
	slots []int
	ready []int
}

func newPoller(n int) *poller {
	return &poller{fds: make([]unix.PollFd, 0, n), slots: make([]int, 0, n), ready: make([]int, 0, n)}
}

func (p *poller) reset() { p.fds, p.slots = p.fds[:0], p.slots[:0] }

func (p *poller) len() int { return len(p.fds) }

func (p *poller) add(slot, fd int) {
	p.fds = append(p.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	p.slots = append(p.slots, slot)
}

// wait blocks until at least one descriptor is readable (or in error or
// hung up: the read then reports it), or timeout passes, and returns the
// slots that are ready. With no descriptor it sleeps for timeout. A signal
// (the Go runtime's preemption) restarts the wait with the whole timeout:
// the caller's loop keeps its own time.
func (p *poller) wait(timeout time.Duration) []int {
	p.ready = p.ready[:0]
	ms := int((timeout + time.Millisecond - 1) / time.Millisecond)
	if ms < 0 {
		ms = 0
	}
	for {
		n, err := unix.Poll(p.fds, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return p.ready
		}
		for i := range p.fds {
			if p.fds[i].Revents != 0 {
				p.ready = append(p.ready, p.slots[i])
			}
		}
		return p.ready
	}
}

// allowedCPUs lists the CPUs the process may run on, in order, or nil.
func allowedCPUs() []int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}
