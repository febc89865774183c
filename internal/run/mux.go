package run

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tunebench/tunebench/internal/step"
)

// muxPollMax bounds one poll(2): the loop then looks again at the stop
// signal, at workers waiting out a back-off or think time, and at steps
// whose context was cancelled (a cancelled step's socket is only marked,
// not woken, when no read is in progress; Continue then fails fast).
const muxPollMax = 100 * time.Millisecond

// muxSlot is one worker of a multiplexed group.
type muxSlot struct {
	ws      *workerState
	m       step.Multiplexed
	pending bool // a step is in flight
	st      int32
	// Closed loop, offsets since the run start (one clock reading each).
	start     time.Duration
	notBefore time.Duration // back-off or think time: no step before
	thinkEnd  time.Duration // think deadline (for the overrun), zero if none
	backoff   time.Duration
	gone      bool // exited (workerExit done)

	// Open loop, offsets since the run start.
	tk       time.Duration // intended start of the step in flight
	startOff time.Duration // its actual start
	freeAt   time.Duration // end of the slot's last step
	nbOff    time.Duration // back-off: no step before

	placed    step.Placed // with FollowServer
	owner     int         // thread that owns the slot
	seen      int         // thread whose CPU the server was on at the last look, -1
	want      int         // thread the slot wants to go to (counted in wants), -1
	handovers int
}

// multiplexable reports whether the workers can be driven Threads to a
// goroutine, and switches them to it if so.
func (r *runner) multiplexable() bool {
	t := r.cfg.Threads
	if r.cfg.forceMux && t <= 0 {
		t = 1
	}
	if t <= 0 || (t >= len(r.workers) && !r.cfg.forceMux) || !pollSupported {
		return false
	}
	ms := make([]step.Multiplexed, len(r.workers))
	for i, ws := range r.workers {
		m, ok := ws.w.(step.Multiplexed)
		if !ok {
			return false
		}
		ms[i] = m
	}
	for i, m := range ms {
		if !m.Multiplex(true) {
			for _, a := range ms[:i] {
				a.Multiplex(false)
			}
			r.muxDeclined = fmt.Sprintf("the %d clients ran on a thread each, not on %d: their connections cannot be polled (TLS, or not a plain socket), so --threads did not apply", len(r.workers), t)
			return false
		}
	}
	return true
}

// muxGroups deals the workers to Threads groups in contiguous blocks
// (pgbench: thread i gets clients i*n/j up to (i+1)*n/j).
func (r *runner) muxGroups() [][]*workerState {
	n, t := len(r.workers), min(max(r.cfg.Threads, 1), len(r.workers))
	groups := make([][]*workerState, 0, t)
	for i := 0; i < t; i++ {
		lo, hi := i*n/t, (i+1)*n/t
		if hi > lo {
			groups = append(groups, r.workers[lo:hi])
		}
	}
	return groups
}

// muxFollowEvery is how often a multiplexed thread that follows the server
// (Config.FollowServer) looks at where its connections' server processes
// run; muxIdleWait bounds the wait of a thread that owns no connection
// with a step to run, so that a connection handed to it is picked up soon.
const (
	muxFollowEvery = 10 * time.Millisecond
	muxIdleWait    = 2 * time.Millisecond
)

// muxShared is the state the multiplexed threads of one run share. Each
// slot is owned by one thread at a time; a thread hands a slot to another
// through that thread's inbox (buffered for every slot: never blocks).
type muxShared struct {
	slots   []muxSlot
	inbox   []chan int
	cpuLoop []int // CPU number -> thread following it, -1 none
	follow  bool
	share   int32          // connections per thread, rounded up
	count   []atomic.Int32 // per thread: slots owned or on their way to it
	wants   []atomic.Int32 // [from*threads+to]: slots of from that want to go to
	live    atomic.Int32   // slots not gone
	pinned  atomic.Int32   // threads pinned: connections move once all are
	running atomic.Int32   // threads not finished
	// waker wakes the closed loop's waits without a timeout when the
	// run stops issuing steps (nil: every wait has a timeout); it is
	// closed once every thread is done.
	waker   *waker
	allDone chan struct{} // closed when the last thread is done (with waker)
	raw     bool          // waits may be raw (see muxStart)
	release func()        // gives back the Ps held for an open loop (holdProcs), or nil

	// Open loop, over every thread's schedule: measured starts drawn,
	// measured starts in the queues, the deepest the queues were.
	scheduled, queuedMeasured, maxDepth atomic.Int64
}

// muxStart starts the multiplexed threads. With Config.FollowServer, and
// when the threads are as many as the CPUs the process may run on (the
// driver shares every CPU with the server), thread i is pinned to the i-th
// of those CPUs and a connection whose server process keeps running on
// another thread's CPU is handed to that thread: the client and server
// sides of each connection then wake each other on one CPU, without
// inter-processor interrupts. Otherwise the threads keep their blocks.
func (r *runner) muxStart(groups [][]*workerState) {
	sh := &muxShared{slots: make([]muxSlot, len(r.workers)), inbox: make([]chan int, len(groups))}
	loopCPU := make([]int, len(groups))
	for i := range loopCPU {
		loopCPU[i] = -1
	}
	if cpus := allowedCPUs(); r.cfg.FollowServer && !r.open && len(groups) >= 2 && len(cpus) == len(groups) && r.cfg.NewThread != nil {
		sh.follow = true
		for _, ws := range r.workers {
			if _, ok := ws.w.(step.Placed); !ok {
				sh.follow = false
			}
		}
		if sh.follow {
			copy(loopCPU, cpus)
			sh.cpuLoop = make([]int, cpus[len(cpus)-1]+1)
			for c := range sh.cpuLoop {
				sh.cpuLoop[c] = -1
			}
			for i, c := range cpus {
				sh.cpuLoop[c] = i
			}
		}
	}
	r.mux = sh

	next := 0
	owned := make([][]int, len(groups))
	for g, group := range groups {
		sh.inbox[g] = make(chan int, len(r.workers))
		for _, ws := range group {
			sh.slots[next] = muxSlot{ws: ws, m: ws.w.(step.Multiplexed), owner: g, seen: -1, want: -1}
			if sh.follow {
				sh.slots[next].placed = ws.w.(step.Placed)
			}
			owned[g] = append(owned[g], next)
			next++
		}
	}
	sh.live.Store(int32(len(sh.slots)))
	sh.share = int32((len(sh.slots) + len(groups) - 1) / len(groups))
	sh.count = make([]atomic.Int32, len(groups))
	sh.wants = make([]atomic.Int32, len(groups)*len(groups))
	for g := range groups {
		sh.count[g].Store(int32(len(owned[g])))
	}
	sh.running.Store(int32(len(groups)))
	ths := make([]step.Thread, len(groups))
	kernel := r.cfg.NewThread != nil // every thread is step.KernelBound
	for g := range ths {
		if r.cfg.NewThread == nil {
			break
		}
		ths[g] = r.cfg.NewThread()
		_, ok := ths[g].(step.KernelBound)
		kernel = kernel && ok
	}
	// A raw wait keeps its thread's P: only when another P is left for
	// the collector, the samplers and anything else the process runs
	// (the pg target raises GOMAXPROCS to the clients + 1), except in the
	// open loop below.
	sh.raw = runtime.GOMAXPROCS(0) > len(groups)
	if r.open && sh.raw && kernel {
		// The open loop's threads yield every few milliseconds (their
		// discipline's Tick): with a P idle, each yield woke another OS
		// thread, which took the goroutine or went back to sleep, about
		// 40 µs of CPU a yield, 5% of the driver's CPU in a tpcb-like run
		// at 500 transactions a second. With no P beyond the threads' the
		// yield is a trip through the run queue. The rest of the process
		// (collector, samplers, the garbage collector) then runs at the
		// yields, up to muxOpenWaitMax late, and while a thread is parked
		// (muxIdlePark); what it takes from a thread's turn shows in the
		// dispatch delay. The raw waits stay bounded as before, so no
		// goroutine waits longer than that.
		sh.release = holdProcs(len(groups))
	}
	if !r.open && sh.raw {
		if sh.waker = newWaker(); sh.waker != nil {
			sh.allDone = make(chan struct{})
			go func() {
				select {
				case <-r.stopIssue:
					sh.waker.wake()
					<-sh.allDone
				case <-sh.allDone:
				}
				sh.waker.close()
			}()
		}
	}
	for g := range groups {
		go r.muxLoop(sh, g, owned[g], loopCPU[g], ths[g])
	}
}

// procs is the GOMAXPROCS of the multiplexed open loops in progress
// (holdProcs).
var procs struct {
	sync.Mutex
	held, saved int // their threads together; GOMAXPROCS before the first
}

// holdProcs sets GOMAXPROCS to the threads of the multiplexed open loops
// in progress, n more with this one, and returns what gives them back:
// the last one back restores the GOMAXPROCS from before the first. (More
// than one run at a time happens in tests.)
func holdProcs(n int) func() {
	procs.Lock()
	defer procs.Unlock()
	if procs.held == 0 {
		procs.saved = runtime.GOMAXPROCS(0)
	}
	procs.held += n
	runtime.GOMAXPROCS(procs.held)
	return func() {
		procs.Lock()
		defer procs.Unlock()
		procs.held -= n
		if procs.held == 0 {
			runtime.GOMAXPROCS(procs.saved)
		} else {
			runtime.GOMAXPROCS(procs.held)
		}
	}
}

// muxLoop is multiplexed thread id, which starts owning the slots owned:
// it sets up the thread's discipline, runs the closed loop (muxClosed) or
// the open loop (muxOpen), and closes the workers it ends with. In the
// closed loop every idle worker starts its next step, then the goroutine
// waits in poll(2) until a reply arrives on one of the connections with a
// step in flight, and continues that step. A step's latency runs from just
// before its Begin to just after the Continue that ends it, so time a reply
// spends waiting while the thread serves another connection is counted, as
// in pgbench -j. Phases, states and bookkeeping are those of closedLoop.
// The thread runs until every slot of the run is gone; cpu >= 0 pins it and
// makes it hand over connections whose server runs on another thread's CPU.
func (r *runner) muxLoop(sh *muxShared, id int, owned []int, cpu int, th step.Thread) {
	if th != nil {
		if p, ok := th.(step.PinnedThread); ok && cpu >= 0 && p.Pin(cpu) {
			sh.pinned.Add(1)
		}
		if p, ok := th.(step.PacedThread); ok && r.open {
			p.Paced()
		}
	}
	slots := sh.slots
	// Without following, the thread keeps its block and ends with it.
	block := append([]int(nil), owned...)
	defer func() {
		for _, i := range owned {
			r.muxExit(sh, &slots[i])
		}
		if th != nil {
			th.Stop()
		}
		last := sh.running.Add(-1) == 0
		if last && sh.allDone != nil {
			close(sh.allDone)
		}
		if last && sh.release != nil {
			sh.release()
		}
		if !sh.follow {
			for _, i := range block {
				close(slots[i].ws.exited)
			}
			return
		}
		// Only when the last thread is done the workers count as gone:
		// no goroutine uses them or its thread any more.
		if last {
			for i := range slots {
				close(slots[i].ws.exited)
			}
		}
	}()
	if r.open {
		owned = r.muxOpen(sh, id, owned, th)
	} else {
		owned = r.muxClosed(sh, id, owned, th)
	}
}

// muxClosed is the closed loop of multiplexed thread id (see muxLoop); it
// returns the slots the thread owns at the end.
func (r *runner) muxClosed(sh *muxShared, id int, owned []int, th step.Thread) []int {
	slots := sh.slots
	poller := newPoller(len(slots))
	stopping := false
	var lastFollow time.Duration
	for (sh.follow && sh.live.Load() > 0) || (!sh.follow && len(owned) > 0) {
		if th != nil {
			th.Tick()
		}
		// Take the connections handed over.
	inbox:
		for {
			select {
			case i := <-sh.inbox[id]:
				slots[i].owner = id
				owned = append(owned, i)
			default:
				break inbox
			}
		}
		if !stopping {
			select {
			case <-r.stopIssue:
				stopping = true
			default:
			}
		}
		if sh.follow && !stopping {
			if now := r.since(); now-lastFollow >= muxFollowEvery {
				lastFollow = now
				owned = r.muxFollow(sh, id, owned, now)
			}
		}
		// Start a step on every idle worker that may start one.
		var wake time.Duration // zero: none
		for _, i := range owned {
			sl := &slots[i]
			if sl.gone || sl.pending {
				continue
			}
			if stopping {
				r.muxExit(sh, sl)
				continue
			}
			now := r.since()
			if now < sl.notBefore {
				if wake == 0 || sl.notBefore < wake {
					wake = sl.notBefore
				}
				continue
			}
			if sl.thinkEnd != 0 {
				if over := now - sl.thinkEnd; over > 0 && sl.st == stStepMeasure {
					sl.ws.thinkOverrun += over
				}
				sl.thinkEnd = 0
			}
			st := stStepWarm
			if now >= r.msOff {
				if r.txMode {
					if sl.ws.done >= r.cfg.Transactions {
						r.muxExit(sh, sl)
						continue
					}
				} else if now >= r.meOff {
					r.muxExit(sh, sl)
					continue
				}
				st = stStepMeasure
			}
			if !sl.ws.state.CompareAndSwap(stIdle, st) {
				r.muxExit(sh, sl) // closed at the drain deadline
				continue
			}
			sl.st, sl.start = st, now
			o, pending, err := sl.m.Begin(r.stepCtx)
			if pending {
				sl.pending = true
				continue
			}
			if r.muxDone(sh, sl, o, err) && sl.notBefore > now && (wake == 0 || sl.notBefore < wake) {
				// Backing off (or thinking): the wait below ends in time.
				wake = sl.notBefore
			}
		}
		owned = compactOwned(slots, owned)
		if (sh.follow && sh.live.Load() == 0) || (!sh.follow && len(owned) == 0) {
			break
		}
		// Wait for a reply on one of the connections with a step in flight.
		timeout := muxPollMax
		if sh.follow {
			// Look at the inbox and the connections' servers on time.
			timeout = muxFollowEvery
			if !muxInFlight(slots, owned) {
				// Nothing in flight here: connections may be handed
				// over, or the other threads are finishing.
				timeout = muxIdleWait
			}
		}
		if wake != 0 {
			if d := wake - r.since(); d < timeout {
				timeout = d
			}
		}
		// While replies are awaited the thread keeps its P (a raw
		// wait, as the open loop's; see poller.waitFine): the ordinary
		// system call's entry and exit were a few per cent of the
		// driver's CPU in a tpcb-like run, one wait for every two round
		// trips. With no deadline of its own (no think time or back-off
		// to wait out, steps still issued) it waits without a timeout,
		// woken by the replies or by the waker when the run stops issuing
		// steps; otherwise a raw wait ends by the thread's next yield.
		// A reply that takes long (a long statement) is waited for with
		// the P kept; the runtime's preemption signal ends the wait after
		// 10 ms (unless GODEBUG=asyncpreemptoff=1 turns that signal off).
		mode, wk := pollMs, (*waker)(nil)
		if sh.raw && muxInFlight(slots, owned) {
			mode = pollRawCoarse
			if wake == 0 && !stopping && sh.waker != nil {
				timeout, wk = waitForever, sh.waker
			} else {
				timeout = min(timeout, muxOpenWaitMax)
				if y, ok := th.(step.Yielder); ok {
					timeout = min(timeout, time.Until(y.NextYield()))
				}
			}
		}
		r.muxContinue(slots, r.muxReady(poller, wk, slots, owned, timeout, mode), func(sl *muxSlot, o step.Outcome, err error) {
			r.muxDone(sh, sl, o, err)
		})
	}
	return owned
}

// muxContinue goes on with the steps of the ready slots; done gets each
// step that ended.
func (r *runner) muxContinue(slots []muxSlot, ready []int, done func(*muxSlot, step.Outcome, error)) {
	for _, i := range ready {
		sl := &slots[i]
		o, pending, err := sl.m.Continue(r.stepCtx)
		if pending {
			continue
		}
		sl.pending = false
		done(sl, o, err)
	}
}

// muxInFlight reports whether one of the owned slots has a step in flight.
func muxInFlight(slots []muxSlot, owned []int) bool {
	for _, i := range owned {
		if slots[i].pending {
			return true
		}
	}
	return false
}

// muxReady waits until a reply arrives on one of the owned slots with a
// step in flight, or timeout passes (at once with none in flight and no
// time to wait), and returns the slots whose step may continue: all of
// them once the steps' context is cancelled at the drain deadline
// (Continue on a cancelled step fails fast). mode: how it waits; wk, if
// not nil, ends a wait when woken.
func (r *runner) muxReady(p *poller, wk *waker, slots []muxSlot, owned []int, timeout time.Duration, mode pollMode) []int {
	p.reset()
	for _, i := range owned {
		if slots[i].pending {
			p.add(i, slots[i].m.Fd())
		}
	}
	p.addWaker(wk)
	if p.len() == 0 && timeout <= 0 {
		return nil
	}
	var ready []int
	if mode == pollMs {
		ready = p.wait(timeout)
	} else {
		ready = p.waitFine(timeout, mode)
	}
	if r.stepCtx.Err() != nil {
		ready = ready[:0]
		for _, i := range owned {
			if slots[i].pending {
				ready = append(ready, i)
			}
		}
	}
	return ready
}

// compactOwned drops the slots that are gone.
func compactOwned(slots []muxSlot, owned []int) []int {
	k := 0
	for _, i := range owned {
		if !slots[i].gone {
			owned[k] = i
			k++
		}
	}
	return owned[:k]
}

// muxFollow hands each idle connection of thread me whose server process
// ran on another thread's CPU at the last two looks to that thread, and
// returns the slots me keeps. The threads stay balanced: a thread takes a
// connection only while it owns fewer than its share, or when one of its
// own connections wants to go the other way (that one follows at its
// owner's next look, a swap). Without the bound, writing transactions pile
// every connection onto one thread: the backends it wakes are pulled to its
// CPU, so their replies come from there, which draws the next connection.
func (r *runner) muxFollow(sh *muxShared, me int, owned []int, now time.Duration) []int {
	if int(sh.pinned.Load()) < len(sh.inbox) {
		return owned // a thread could not be pinned (or not yet)
	}
	k := 0
	last := !r.txMode && now >= r.meOff
	for _, i := range owned {
		sl := &sh.slots[i]
		if sl.gone || sl.pending || last || r.txMode && sl.ws.done >= r.cfg.Transactions {
			// Busy, or about to exit: no use moving it.
			owned[k] = i
			k++
			continue
		}
		to := -1
		if c := sl.placed.ServerCPU(); c >= 0 && c < len(sh.cpuLoop) && sh.cpuLoop[c] != me {
			to = sh.cpuLoop[c]
		}
		want := -1
		if to >= 0 && to == sl.seen {
			want = to
		}
		sl.seen = to
		sh.setWant(me, sl, want)
		if want >= 0 && sh.reserve(want, sh.wants[want*len(sh.inbox)+me].Load() > 0) {
			sh.setWant(me, sl, -1)
			sl.seen = -1
			sl.handovers++
			sh.count[me].Add(-1)
			sh.inbox[want] <- i
			continue
		}
		owned[k] = i
		k++
	}
	return owned[:k]
}

// reserve counts one more slot for thread to if it has fewer than its
// share, or in any case with swap (one of its slots wants to come the other
// way; it follows at its owner's next look, unless its server moves again
// first, which leaves the threads one apart until a server moves back).
func (sh *muxShared) reserve(to int, swap bool) bool {
	for {
		c := sh.count[to].Load()
		if c >= sh.share && !swap {
			return false
		}
		if sh.count[to].CompareAndSwap(c, c+1) {
			return true
		}
	}
}

// setWant records that slot sl of thread owner wants to go to thread to
// (-1: nowhere).
func (sh *muxShared) setWant(owner int, sl *muxSlot, to int) {
	if sl.want == to {
		return
	}
	n := len(sh.inbox)
	if sl.want >= 0 {
		sh.wants[owner*n+sl.want].Add(-1)
	}
	if to >= 0 {
		sh.wants[owner*n+to].Add(1)
	}
	sl.want = to
}

// muxDone records the end of slot's step, as closedLoop does after Step,
// and reports whether the worker goes on (false: it exited).
func (r *runner) muxDone(sh *muxShared, sl *muxSlot, o step.Outcome, err error) bool {
	ws := sl.ws
	end := r.since()
	if r.endStep(ws, sl.st, sl.start, end, &o, err) != stepRecorded {
		r.muxExit(sh, sl)
		return false
	}
	if o.Class == step.ClassConnError {
		// The worker reconnects inside its next Begin; space the attempts
		// out.
		sl.backoff = nextBackoff(sl.backoff)
		sl.notBefore = end + jitter(ws.rng, sl.backoff)
		return true
	}
	sl.backoff = 0
	if o.Think > 0 {
		sl.notBefore = end + o.Think
		sl.thinkEnd = sl.notBefore
	}
	return true
}

// muxExit closes the slot's worker once; it counts as gone (exited) when
// the last multiplexed thread ends.
func (r *runner) muxExit(sh *muxShared, sl *muxSlot) {
	if sl.gone {
		return
	}
	sl.gone = true
	_ = sl.ws.w.Close()
	if sh.follow {
		sh.setWant(sl.owner, sl, -1)
		sh.count[sl.owner].Add(-1)
	}
	sh.live.Add(-1)
}

// handovers sums the connections handed between multiplexed threads; call
// it once every worker has exited.
func (r *runner) handovers() int64 {
	if r.mux == nil {
		return 0
	}
	var n int64
	for i := range r.mux.slots {
		n += int64(r.mux.slots[i].handovers)
	}
	return n
}

// followed reports whether the multiplexed threads were pinned one per CPU
// and followed the server; call it once every worker has exited.
func (r *runner) followed() bool {
	return r.mux != nil && r.mux.follow && int(r.mux.pinned.Load()) == len(r.mux.inbox)
}
