//go:build linux

package run

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	stp "github.com/tunebench/tunebench/internal/step"
	"golang.org/x/sys/unix"
)

// pinningThread is a stp.PinnedThread that really pins its goroutine's
// thread, so a step can tell from its thread's affinity which executor
// thread drives it.
type pinningThread struct {
	cpu     int
	started bool
	old     unix.CPUSet
	stops   int
}

func (p *pinningThread) Pin(cpu int) bool { p.cpu = cpu; return true }

func (p *pinningThread) Tick() {
	if p.started {
		return
	}
	p.started = true
	runtime.LockOSThread()
	if err := unix.SchedGetaffinity(0, &p.old); err != nil {
		panic(err)
	}
	var set unix.CPUSet
	set.Set(p.cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		panic(err)
	}
}

func (p *pinningThread) Stop() {
	p.stops++
	if p.started {
		_ = unix.SchedSetaffinity(0, &p.old)
		runtime.UnlockOSThread()
	}
}

// threadCPU is the one CPU the calling thread is pinned to, or -1.
func threadCPU() int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil || set.Count() != 1 {
		return -1
	}
	for c := 0; ; c++ {
		if set.IsSet(c) {
			return c
		}
	}
}

// placedWorker is a fakeMuxWorker whose server runs on a given CPU, and
// which records the CPU of the thread its steps begin on.
type placedWorker struct {
	*fakeMuxWorker
	server  atomic.Int32
	beganOn atomic.Int32
}

func (p *placedWorker) ServerCPU() int { return int(p.server.Load()) }

func (p *placedWorker) Begin(ctx context.Context) (stp.Outcome, bool, error) {
	p.beganOn.Store(int32(threadCPU()))
	return p.fakeMuxWorker.Begin(ctx)
}

// pairedServer is the server placement of the tests: connections are
// dealt to the threads in blocks of two; with crossed, the second
// connection of each block has its server on the CPU of the paired block
// (0 with 1, 2 with 3, ...), else every server is on its block's CPU. It
// returns an index into the allowed CPUs.
func pairedServer(k, n int, crossed bool) int {
	g := k / 2
	if crossed && k%2 == 1 && g^1 < n {
		return g ^ 1
	}
	return g
}

// followRun runs 2 workers per allowed CPU, one thread per CPU, each worker
// placed by serverOf (an index into the allowed CPUs) and, if move is not
// nil, moved every 60 ms by move(k, n, i) for i = 1, 2, ...; it returns the
// result and the workers.
func followRun(t *testing.T, cfg Config, serverOf func(k, n int) int, move func(k, n, i int) int) (*Result, []*placedWorker) {
	t.Helper()
	cpus := allowedCPUs()
	if len(cpus) < 2 {
		t.Skip("following the server needs 2 or more CPUs")
	}
	n := len(cpus)
	ff := &fakeFleet{step: sleepStep(time.Millisecond)}
	mf := ff.muxFactory(-1)
	var mu sync.Mutex
	ws := make([]*placedWorker, 2*n)
	made := 0
	var threads []*pinningThread
	cfg.Workers, cfg.Threads, cfg.FollowServer = 2*n, n, true
	if cfg.NewThread == nil {
		cfg.NewThread = func() stp.Thread {
			mu.Lock()
			defer mu.Unlock()
			p := &pinningThread{cpu: -1}
			threads = append(threads, p)
			return p
		}
	}
	stop := make(chan struct{})
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		if move == nil {
			return
		}
		tk := time.NewTicker(60 * time.Millisecond)
		defer tk.Stop()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			mu.Lock()
			if made == len(ws) {
				for k, w := range ws {
					w.server.Store(int32(cpus[move(k, n, i)]))
				}
			}
			mu.Unlock()
		}
	}()
	res, err := Execute(context.Background(), cfg, func(ctx context.Context, id int) (stp.Worker, error) {
		w, err := mf(ctx, id)
		if err != nil {
			return nil, err
		}
		pw := &placedWorker{fakeMuxWorker: w.(*fakeMuxWorker)}
		pw.server.Store(int32(cpus[serverOf(id, n)]))
		pw.beganOn.Store(-1)
		mu.Lock()
		ws[id] = pw
		made++
		mu.Unlock()
		return pw, nil
	})
	close(stop)
	<-moved
	if err != nil {
		t.Fatal(err)
	}
	ff.checkClosed(t)
	if threads == nil {
		return res, ws // the caller's threads
	}
	if res.Threads != n || !res.FollowServer {
		t.Fatalf("threads %d, follow %v; want %d threads following the server", res.Threads, res.FollowServer, n)
	}
	pinned := map[int]bool{}
	for _, p := range threads {
		if p.stops != 1 {
			t.Errorf("thread pinned to %d stopped %d times", p.cpu, p.stops)
		}
		pinned[p.cpu] = true
	}
	for _, c := range cpus {
		if !pinned[c] {
			t.Errorf("no thread pinned to CPU %d (threads on %v)", c, pinned)
		}
	}
	return res, ws
}

// TestFollowServerSwaps: each crossed connection is swapped once with its
// pair, and then every connection is served from its server's CPU.
func TestFollowServerSwaps(t *testing.T) {
	res, ws := followRun(t, Config{Duration: 400 * time.Millisecond, Tick: 100 * time.Millisecond},
		func(k, n int) int { return pairedServer(k, n, true) }, nil)
	n := len(ws) / 2
	if want := int64(2 * (n / 2)); res.Handovers != want {
		t.Errorf("handovers %d, want %d (one per crossed connection, no back and forth)", res.Handovers, want)
	}
	for k, w := range ws {
		if got, srv := w.beganOn.Load(), w.server.Load(); got != srv {
			t.Errorf("worker %d: last step began on CPU %d, its server is on CPU %d", k, got, srv)
		}
	}
	if res.Committed == 0 {
		t.Fatal("nothing committed")
	}
}

// TestFollowServerStaysBalanced: with every server on the first CPU, no
// thread takes more than its share: nothing moves.
func TestFollowServerStaysBalanced(t *testing.T) {
	res, _ := followRun(t, Config{Duration: 300 * time.Millisecond, Tick: 100 * time.Millisecond},
		func(k, n int) int { return 0 }, nil)
	if res.Handovers != 0 {
		t.Errorf("handovers %d, want 0: the first CPU's thread already has its share", res.Handovers)
	}
}

// TestFollowServerExactCounts: handovers lose and repeat no step: with
// --transactions every worker commits exactly its count while the servers
// keep swapping CPUs.
func TestFollowServerExactCounts(t *testing.T) {
	const per = 300
	res, ws := followRun(t, Config{Transactions: per, Tick: 100 * time.Millisecond},
		func(k, n int) int { return pairedServer(k, n, true) },
		func(k, n, i int) int { return pairedServer(k, n, i%2 == 0) })
	if res.Committed != int64(per*len(ws)) {
		t.Errorf("committed %d, want %d", res.Committed, per*len(ws))
	}
	// The crossed start alone gives 2*(n/2); each move of the servers
	// gives as many again.
	if n := len(ws) / 2; res.Handovers <= int64(2*(n/2)) {
		t.Errorf("handovers %d: the moving servers were not followed", res.Handovers)
	}
}

// TestFollowServerNeedsPinnedThreads: threads that cannot be pinned do not
// follow (handing connections to them would gain nothing), and the result
// says so.
func TestFollowServerNeedsPinnedThreads(t *testing.T) {
	res, _ := followRun(t, Config{Duration: 300 * time.Millisecond, Tick: 100 * time.Millisecond,
		NewThread: func() stp.Thread { return &countingThread{} }},
		func(k, n int) int { return pairedServer(k, n, true) }, nil)
	if res.FollowServer || res.Handovers != 0 {
		t.Errorf("follow %v with %d handovers; want no following without pinned threads", res.FollowServer, res.Handovers)
	}
	if res.Committed == 0 {
		t.Error("nothing committed")
	}
}
